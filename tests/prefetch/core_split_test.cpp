// The block trial and compute's threads while a producer prefetches (core_split.h).
#include "gnnprof/prefetch/core_split.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "gnnprof/block_trial.h"
#include "gnnprof/prefetch/prefetcher.h"
#include "unit/test_support.h"

namespace gnnprof::prefetch {
namespace {

constexpr std::uint64_t kMs = 1000000;

TEST(BlockTrial, AlternatesBlocksSkipsEachFirstIterationAndKeepsTheFastest) {
  BlockTrial t({2, 2, 4, 2, 0.02});
  EXPECT_EQ(t.length(), 2 + 2 * 2 * 4);
  std::vector<int> arm_of;  // the arm each iteration ran
  std::uint64_t now = 0;
  int arm = 0;
  for (int i = 0; i < t.length() + 3; ++i) {
    const int a = t.on_iteration(now);
    if (a >= 0) arm = a;
    EXPECT_EQ(arm, t.current());
    arm_of.push_back(arm);
    now += arm == 1 ? 10 * kMs : 14 * kMs;  // arm 1 is faster
  }
  const std::vector<int> want_schedule = {0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
  EXPECT_EQ(std::vector<int>(arm_of.begin(), arm_of.begin() + 18), want_schedule);
  EXPECT_TRUE(t.decided());
  EXPECT_EQ(t.current(), 1);
  EXPECT_EQ(arm_of.back(), 1);
  EXPECT_EQ(t.measured(0), 6u);  // 3 of each 4-iteration block
  EXPECT_EQ(t.measured(1), 6u);
  EXPECT_EQ(t.median_ns(0), 14 * kMs);
  EXPECT_EQ(t.median_ns(1), 10 * kMs);
}

TEST(BlockTrial, TheDefaultStaysUnlessAnotherArmIsClearlyFaster) {
  for (const auto& [other_ms, want] : std::vector<std::pair<double, int>>{{9.9, 0}, {9.7, 1}, {12.0, 0}}) {
    BlockTrial t({2, 0, 3, 1, 0.02});
    std::uint64_t now = 0;
    while (!t.decided()) {
      t.on_iteration(now);
      now += static_cast<std::uint64_t>((t.current() == 1 ? other_ms : 10.0) * kMs);
    }
    EXPECT_EQ(t.current(), want) << other_ms;
  }
}

TEST(BlockTrial, RestartLeavesTheGapAndTheColdFirstBatchUnmeasured) {
  BlockTrial t({2, 0, 4, 1, 0.0});
  std::uint64_t now = 0;
  t.on_iteration(now);  // arm 0, first of block: not measured
  t.on_iteration(now += 10 * kMs);
  t.on_iteration(now += 10 * kMs);  // 10 ms measured
  t.restart();                      // an epoch's end: 1 s that is no iteration
  t.on_iteration(now += 1000 * kMs);
  t.on_iteration(now += 50 * kMs);  // the new epoch's first batch, a cold pipeline: not measured
  EXPECT_EQ(t.measured(0), 1u);
  EXPECT_EQ(t.median_ns(0), 10 * kMs);
}

TEST(BlockTrial, OneArmIsDecidedAtOnce) {
  BlockTrial t({1, 2, 4, 2, 0.02});
  EXPECT_TRUE(t.decided());
  EXPECT_EQ(t.on_iteration(5), -1);
  EXPECT_EQ(t.current(), 0);
}

// A fake machine: an iteration takes `all_ms` with every core for compute, `split_ms` with one fewer.
struct Machine {
  double all_ms, split_ms;
  std::vector<int> calls;
  int threads = 2;
  std::uint64_t now = 0;
  CoreSplit::SetThreads setter() {
    return [this](int n) {
      calls.push_back(n);
      threads = n;
    };
  }
  void run(CoreSplit& s, int iterations) {
    for (int i = 0; i < iterations; ++i) {
      s.on_iteration(now);
      now += static_cast<std::uint64_t>((threads == 2 ? all_ms : split_ms) * kMs);
    }
  }
};

TEST(CoreSplit, AutoKeepsTheSplitWhenTheMachineRunsItFaster) {
  Profile p = gnnprof::testing::profile_of(gnnprof::testing::quiet_config(), [] {
    Machine m{39.0, 28.6, {}};
    CoreSplit s(2, 1, m.setter(), CoreSplit::Mode::kAuto);
    m.run(s, 40);
    EXPECT_TRUE(s.decided());
    EXPECT_EQ(s.threads(), 1);
    EXPECT_EQ(m.threads, 1);
    EXPECT_EQ(m.calls, (std::vector<int>{1, 2, 1}));  // split, all, split (two rounds), then the choice stays
    EXPECT_NE(s.describe().find("1 compute thread, the producer on a core of its own: median iteration 28.6 ms against 39.0 ms with 2 compute threads"),
              std::string::npos)
        << s.describe();
  });
  bool noted = false;
  for (const auto& c : p.collectors)
    if (c.name == "prefetch-threads") noted = c.enabled && c.reason.find("28.6 ms") != std::string::npos;
  EXPECT_TRUE(noted);
  bool counter = false;
  for (const auto& c : p.counters) counter |= c.name == "compute_threads" && c.min == 1 && c.max == 2;
  EXPECT_TRUE(counter);
}

TEST(CoreSplit, AutoKeepsEveryCoreWhenComputeScales) {
  Machine m{30.0, 36.0, {}};
  CoreSplit s(2, 1, m.setter(), CoreSplit::Mode::kAuto);
  m.run(s, 40);
  EXPECT_TRUE(s.decided());
  EXPECT_EQ(s.threads(), 2);
  EXPECT_EQ(m.threads, 2);
  EXPECT_NE(s.describe().find("2 compute threads, the producer at background priority in their gaps: median iteration 30.0 ms against 36.0 ms"),
            std::string::npos)
      << s.describe();
}

TEST(CoreSplit, FixedModesAndNothingToSplit) {
  Machine a{30, 20, {}};
  CoreSplit all(2, 1, a.setter(), CoreSplit::Mode::kAll);
  a.run(all, 30);
  EXPECT_TRUE(a.calls.empty());
  Machine b{30, 40, {}};
  CoreSplit split(2, 1, b.setter(), CoreSplit::Mode::kSplit);
  b.run(split, 30);
  EXPECT_EQ(b.calls, std::vector<int>{1});
  EXPECT_NE(split.describe().find("GNNPROF_PREFETCH_THREADS=split"), std::string::npos);
  Machine c{30, 20, {}};
  CoreSplit one(1, 1, c.setter(), CoreSplit::Mode::kAuto);  // one core: nothing to give a producer
  c.threads = 1;
  c.run(one, 30);
  EXPECT_TRUE(c.calls.empty());
  EXPECT_NE(one.describe().find("no core to spare"), std::string::npos);
}

TEST(CoreSplit, ModeFromTheEnvironment) {
  ::setenv("GNNPROF_PREFETCH_THREADS", "split", 1);
  Machine m{30, 40, {}};
  CoreSplit s(4, 2, m.setter());
  m.run(s, 3);
  EXPECT_EQ(s.threads(), 2);
  EXPECT_EQ(s.split_threads(), 2);
  ::unsetenv("GNNPROF_PREFETCH_THREADS");
  EXPECT_EQ(CoreSplit::parse_mode("sometimes"), std::nullopt);
}

TEST(CoreSplit, ThePrefetcherDrivesItAndGivesEveryCoreBackAtTheEpochsEnd) {
  std::vector<int> calls;
  CoreSplit s(2, 1, [&](int n) { calls.push_back(n); }, CoreSplit::Mode::kSplit);
  {
    Prefetcher<int> baseline([](std::int64_t i) { return static_cast<int>(i); }, 5, 0);
    baseline.set_core_split(&s);
    while (baseline.next()) {
    }
    EXPECT_TRUE(calls.empty());  // K = 0: compute keeps its threads
  }
  for (int epoch = 0; epoch < 2; ++epoch) {
    Prefetcher<int> pf([](std::int64_t i) { return static_cast<int>(i); }, 5, 2);
    pf.set_core_split(&s);
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(pf.next().has_value());
      EXPECT_EQ(s.threads(), i < 4 ? 1 : 2) << i;  // the last batch handed out: no producer runs
    }
  }
  EXPECT_EQ(calls, (std::vector<int>{1, 2, 1, 2}));
  {
    Prefetcher<int> pf([](std::int64_t i) { return static_cast<int>(i); }, 5, 2);
    pf.set_core_split(&s);
    ASSERT_TRUE(pf.next().has_value());
    EXPECT_EQ(s.threads(), 1);
  }  // left after one batch
  EXPECT_EQ(s.threads(), 2);
}

}  // namespace
}  // namespace gnnprof::prefetch
