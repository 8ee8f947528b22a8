// NeighborSampler: block shapes, true in-neighbours, fanout caps, determinism.
#include <gtest/gtest.h>

#include <set>

#include "gnnprof/gnn/sampler.h"

namespace gnnprof::gnn {
namespace {

Dataset graph() {
  SyntheticSpec s;
  s.nodes = 3000;
  s.avg_degree = 12;
  s.feat_dim = 4;
  s.classes = 3;
  s.seed = 3;
  return generate_synthetic(s, nullptr);
}

std::vector<std::int64_t> seeds() {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < 64; ++i) v.push_back(i * 37 % 3000);
  return v;
}

TEST(Sampler, BlocksHaveTheRightShapes) {
  Dataset ds = graph();
  NeighborSampler s(ds.graph, {15, 10});
  auto blocks = s.sample(seeds(), 42);
  ASSERT_EQ(blocks.size(), 2u);
  // Output block: its destinations are the seeds.
  EXPECT_EQ(blocks[1].num_dst, 64);
  EXPECT_EQ(std::vector<std::int64_t>(blocks[1].src_nodes.begin(), blocks[1].src_nodes.begin() + 64), seeds());
  // Block l's destinations are block l+1's sources, listed first among block l's sources.
  EXPECT_EQ(blocks[0].num_dst, blocks[1].num_src());
  EXPECT_EQ(std::vector<std::int64_t>(blocks[0].src_nodes.begin(), blocks[0].src_nodes.begin() + blocks[0].num_dst),
            blocks[1].src_nodes);
  for (const Block& b : blocks) {
    EXPECT_EQ(b.indptr.size(), static_cast<std::size_t>(b.num_dst) + 1);
    EXPECT_EQ(b.indptr.back(), b.num_edges());
    std::set<std::int64_t> unique(b.src_nodes.begin(), b.src_nodes.end());
    EXPECT_EQ(unique.size(), b.src_nodes.size());  // each source once
    for (auto i : b.indices) EXPECT_TRUE(i >= 0 && i < b.num_src());
  }
}

TEST(Sampler, SampledNeighboursAreTrueInNeighboursWithinTheFanout) {
  Dataset ds = graph();
  const std::vector<int> fanouts{15, 10};
  NeighborSampler s(ds.graph, fanouts);
  auto blocks = s.sample(seeds(), 9);
  for (std::size_t l = 0; l < blocks.size(); ++l) {
    const Block& b = blocks[l];
    for (std::int64_t i = 0; i < b.num_dst; ++i) {
      const std::int64_t v = b.src_nodes[static_cast<std::size_t>(i)];
      std::multiset<std::int64_t> in;
      for (auto e = ds.graph.indptr()[v]; e < ds.graph.indptr()[v + 1]; ++e) in.insert(ds.graph.neighbor(e));
      const auto lo = b.indptr[static_cast<std::size_t>(i)], hi = b.indptr[static_cast<std::size_t>(i) + 1];
      EXPECT_EQ(hi - lo, std::min<std::int64_t>(fanouts[l], ds.graph.in_degree(v))) << "layer " << l << " node " << v;
      for (auto e = lo; e < hi; ++e) {
        auto it = in.find(b.src_nodes[static_cast<std::size_t>(b.indices[static_cast<std::size_t>(e)])]);
        ASSERT_NE(it, in.end()) << "not an in-neighbour";
        in.erase(it);  // without replacement: each in-edge at most once
      }
    }
  }
}

TEST(Sampler, SameSeedSameBlocksDifferentSeedDifferentBlocks) {
  Dataset ds = graph();
  NeighborSampler s(ds.graph, {10, 10, 10});
  auto a = s.sample(seeds(), 5), b = s.sample(seeds(), 5), c = s.sample(seeds(), 6);
  ASSERT_EQ(a.size(), 3u);
  for (std::size_t l = 0; l < 3; ++l) {
    EXPECT_EQ(a[l].src_nodes, b[l].src_nodes);
    EXPECT_EQ(a[l].indices, b[l].indices);
  }
  EXPECT_NE(a[0].src_nodes, c[0].src_nodes);
  EXPECT_NE(mix_seed(1, 0, 1), mix_seed(1, 1, 0));
}

TEST(Sampler, RejectsBadFanouts) {
  Dataset ds = graph();
  EXPECT_THROW(NeighborSampler(ds.graph, {}), std::invalid_argument);
  EXPECT_THROW(NeighborSampler(ds.graph, {10, 0}), std::invalid_argument);
}

}  // namespace
}  // namespace gnnprof::gnn
