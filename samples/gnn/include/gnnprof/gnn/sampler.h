// gnnprof/gnn/sampler.h — multi-layer uniform neighbour sampling into message-flow blocks.
//
// As DGL's MultiLayerNeighborSampler: fanouts are listed from the input layer to the output
// layer ({15, 10}: 10 neighbours per seed, then 15 per node of that frontier). Sampling runs
// from the seeds outwards and returns blocks from input to output; block l's destination
// nodes are block l+1's source nodes, and every block lists its destination nodes first among
// its sources (DGL's block convention), so h_dst = h_src[:num_dst].
//
// Determinism: the result depends only on (graph, fanouts, seeds, batch_seed), never on the
// thread or on earlier calls, so a prefetcher running batches ahead reproduces the baseline
// exactly.
//
//   NeighborSampler s(ds.graph, {15, 10});
//   std::vector<Block> blocks = s.sample(seeds, mix_seed(seed, epoch, batch));
#pragma once

#include <cstdint>
#include <vector>

#include "gnnprof/gnn/graph.h"

namespace gnnprof::gnn {

struct Block {
  std::vector<std::int64_t> src_nodes;  ///< global ids; the first num_dst are the dst nodes
  std::int64_t num_dst = 0;
  std::vector<std::int64_t> indptr;     ///< num_dst + 1 offsets into `indices`
  std::vector<std::int64_t> indices;    ///< local source index of each sampled edge
  std::int64_t num_src() const noexcept { return static_cast<std::int64_t>(src_nodes.size()); }
  std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(indices.size()); }
};

/// splitmix64-style mixing of (seed, epoch, batch) into one batch seed.
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t epoch, std::uint64_t batch) noexcept;

class NeighborSampler {
 public:
  NeighborSampler(const CscGraph& graph, std::vector<int> fanouts);

  /// Blocks from input to output. A node with in-degree <= fanout keeps all its in-edges;
  /// otherwise `fanout` distinct in-edges are drawn uniformly without replacement.
  std::vector<Block> sample(const std::vector<std::int64_t>& seeds, std::uint64_t batch_seed) const;

  const std::vector<int>& fanouts() const noexcept { return fanouts_; }

 private:
  const CscGraph* graph_;
  std::vector<int> fanouts_;
};

}  // namespace gnnprof::gnn
