// The libtorch pipeline: gather, deterministic batches, and training that learns.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "gnnprof/gnn/pipeline.h"

namespace gnnprof::gnn {
namespace {

struct Fixture {
  Dataset ds;
  std::unique_ptr<MappedFeatures> features;
};

Fixture make(std::int64_t nodes, std::int64_t classes) {
  SyntheticSpec s;
  s.nodes = nodes;
  s.avg_degree = 10;
  s.feat_dim = 32;
  s.classes = classes;
  s.seed = 11;
  s.train_fraction = 0.3;
  s.val_fraction = 0.2;
  const std::string dir = std::string(::testing::TempDir()) + "/gnnprof_train_" + std::to_string(::getpid());
  auto ds = prepare_synthetic(dir, s, nullptr);
  EXPECT_TRUE(ds) << ds.status().message();
  auto f = MappedFeatures::open(ds->features_path);
  EXPECT_TRUE(f) << f.status().message();
  return Fixture{std::move(*ds), std::move(*f)};
}

TEST(Pipeline, GatherMatchesTheMappedRows) {
  Fixture fx = make(2000, 4);
  std::vector<std::int64_t> ids{5, 1999, 0, 5, 77};
  torch::Tensor t = gather_features(*fx.features, ids);
  ASSERT_EQ(t.sizes(), (std::vector<std::int64_t>{5, 32}));
  std::vector<float> ref(5 * 32);
  fx.features->gather(ids.data(), 0, 5, ref.data());
  EXPECT_TRUE(torch::equal(t, torch::from_blob(ref.data(), {5, 32}, torch::kFloat32)));
}

TEST(Pipeline, BatchesAreDeterministicInSeedEpochAndIndex) {
  Fixture fx = make(2000, 4);
  NeighborSampler sampler(fx.ds.graph, {5, 5});
  BatchProducer p(fx.ds, *fx.features, sampler, torch::kCPU, 3, 64);
  MiniBatch a = p.produce(1, 2), b = p.produce(1, 2), c = p.produce(1, 3);
  EXPECT_TRUE(torch::equal(a.x, b.x));
  EXPECT_TRUE(torch::equal(a.y, b.y));
  ASSERT_EQ(a.blocks.size(), 2u);
  EXPECT_TRUE(torch::equal(a.blocks[0].src, b.blocks[0].src));
  EXPECT_EQ(a.input_nodes, b.input_nodes);
  EXPECT_NE(a.input_nodes, c.input_nodes);
  EXPECT_EQ(a.x.size(0), a.blocks[0].num_src);
  EXPECT_EQ(a.y.size(0), 64);
  EXPECT_EQ(p.epoch_order(0), p.epoch_order(0));
  EXPECT_NE(p.epoch_order(0), p.epoch_order(1));
}

TEST(Training, AFewEpochsReachTwiceChance) {
  torch::manual_seed(0);
  torch::set_num_threads(2);
  Fixture fx = make(4000, 8);
  NeighborSampler sampler(fx.ds.graph, {10, 5});
  BatchProducer p(fx.ds, *fx.features, sampler, torch::kCPU, 1, 128);
  Sage model(32, 64, 8, 2, 0.2);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.01));
  const auto val = fx.ds.nodes_in(Split::kVal);
  const double before = evaluate(model, p, val, 800, 256);
  for (std::int64_t epoch = 0; epoch < 6; ++epoch) {
    auto order = p.epoch_order(epoch);
    for (std::int64_t i = 0; i < p.batches_per_epoch(); ++i) {
      MiniBatch mb = p.produce(epoch, i, p.batch_seeds(order, i));
      auto loss = torch::nn::functional::cross_entropy(model->forward(mb), mb.y);
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
  }
  const double after = evaluate(model, p, val, 800, 256);
  const double chance = 1.0 / 8;
  EXPECT_GE(after, 2 * chance) << "before " << before << ", after " << after;
  EXPECT_GT(after, before);
}

}  // namespace
}  // namespace gnnprof::gnn
