#include "gnnprof/gnn/sampler.h"

#include <algorithm>
#include <stdexcept>

#include "random.h"

namespace gnnprof::gnn {

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t epoch, std::uint64_t batch) noexcept {
  SplitMix64 a(seed ^ (epoch * 0xd1b54a32d192ed03ULL));
  SplitMix64 b(a.next() ^ (batch * 0x8cb92ba72f3d8dd7ULL));
  return b.next();
}

NeighborSampler::NeighborSampler(const CscGraph& graph, std::vector<int> fanouts)
    : graph_(&graph), fanouts_(std::move(fanouts)) {
  if (fanouts_.empty()) throw std::invalid_argument("NeighborSampler: no fanouts");
  for (int f : fanouts_)
    if (f <= 0 || f > 1024) throw std::invalid_argument("NeighborSampler: fanout must be in 1..1024");
}

std::vector<Block> NeighborSampler::sample(const std::vector<std::int64_t>& seeds, std::uint64_t batch_seed) const {
  const CscGraph& g = *graph_;
  // global id -> local index within the current block; -1 = absent. One per thread, sized to
  // the graph once, reset through the touched list: O(block size) per block, not O(nodes).
  thread_local std::vector<std::int64_t> local;
  if (local.size() != static_cast<std::size_t>(g.num_nodes())) local.assign(static_cast<std::size_t>(g.num_nodes()), -1);

  std::vector<Block> blocks(fanouts_.size());
  std::vector<std::int64_t> frontier = seeds;
  std::vector<std::int64_t> chosen;
  for (std::size_t l = fanouts_.size(); l-- > 0;) {
    SplitMix64 rng(batch_seed ^ (0x9e3779b97f4a7c15ULL * (l + 1)));
    const auto fanout = static_cast<std::int64_t>(fanouts_[l]);
    Block& b = blocks[l];
    b.src_nodes = frontier;
    b.num_dst = static_cast<std::int64_t>(frontier.size());
    b.indptr.assign(1, 0);
    b.indices.reserve(static_cast<std::size_t>(b.num_dst * fanout));
    for (std::int64_t i = 0; i < b.num_dst; ++i) {
      std::int64_t& slot = local[static_cast<std::size_t>(frontier[static_cast<std::size_t>(i)])];
      if (slot < 0) slot = i;  // a seed listed twice keeps its first position
    }
    auto local_of = [&](std::int64_t u) {
      std::int64_t& slot = local[static_cast<std::size_t>(u)];
      if (slot < 0) {
        slot = static_cast<std::int64_t>(b.src_nodes.size());
        b.src_nodes.push_back(u);
      }
      return slot;
    };
    for (std::int64_t i = 0; i < b.num_dst; ++i) {
      const std::int64_t v = frontier[static_cast<std::size_t>(i)];
      const std::int64_t start = g.indptr()[static_cast<std::size_t>(v)], deg = g.in_degree(v);
      if (deg <= fanout) {
        for (std::int64_t e = 0; e < deg; ++e) b.indices.push_back(local_of(g.neighbor(start + e)));
      } else {
        // Floyd's algorithm: `fanout` distinct offsets in [0, deg), uniformly.
        chosen.clear();
        for (std::int64_t j = deg - fanout; j < deg; ++j) {
          auto t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(j + 1)));
          chosen.push_back(std::find(chosen.begin(), chosen.end(), t) == chosen.end() ? t : j);
        }
        for (std::int64_t off : chosen) b.indices.push_back(local_of(g.neighbor(start + off)));
      }
      b.indptr.push_back(static_cast<std::int64_t>(b.indices.size()));
    }
    for (std::int64_t u : b.src_nodes) local[static_cast<std::size_t>(u)] = -1;
    frontier = b.src_nodes;
  }
  return blocks;
}

}  // namespace gnnprof::gnn
