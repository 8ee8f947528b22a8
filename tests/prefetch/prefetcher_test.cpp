// The prefetch runtime: order, content, backpressure, errors, early exit, stress, env, profile.
#include "gnnprof/prefetch/prefetcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <stdexcept>
#include <thread>

#include "unit/test_support.h"

namespace gnnprof::prefetch {
namespace {

using Batch = std::vector<std::uint64_t>;

Batch make_batch(std::int64_t i) {
  Batch b(16);
  std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ULL + 1;
  for (auto& v : b) v = (x = x * 6364136223846793005ULL + 1442695040888963407ULL);
  return b;
}

std::vector<Batch> drain(Prefetcher<Batch>& pf) {
  std::vector<Batch> out;
  while (auto b = pf.next()) out.push_back(std::move(*b));
  return out;
}

TEST(Prefetcher, OrderAndContentAreTheSameForEveryDepth) {
  std::vector<Batch> want;
  for (std::int64_t i = 0; i < 200; ++i) want.push_back(make_batch(i));
  for (int k : {0, 1, 4}) {
    for (int workers : {1, 3}) {
      Prefetcher<Batch> pf(make_batch, 200, k, workers);
      EXPECT_EQ(drain(pf), want) << "K=" << k << " workers=" << workers;
      EXPECT_FALSE(pf.next().has_value());
    }
  }
}

TEST(Prefetcher, ProducerNeverRunsMoreThanKAhead) {
  for (int k : {1, 2, 4}) {
    std::atomic<std::int64_t> taken{0};
    std::atomic<bool> violated{false};
    Prefetcher<Batch> pf(
        [&](std::int64_t i) {
          // Batch i may start only while fewer than K batches are in flight: i < taken + K.
          // `taken` is updated just after next() returns, while the prefetcher frees the slot
          // just before, so seen from here the bound can be one batch late: i < taken + K + 1.
          // max_in_flight() below checks the exact bound from the inside.
          if (i >= taken.load() + k + 1) violated = true;
          return make_batch(i);
        },
        300, k, 2);
    for (std::int64_t i = 0; i < 300; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(i % 7 == 0 ? 200 : 0));  // slow consumer
      ASSERT_TRUE(pf.next().has_value());
      taken = i + 1;
    }
    EXPECT_FALSE(violated) << "K=" << k;
    EXPECT_LE(pf.max_in_flight(), k);
    EXPECT_EQ(pf.max_in_flight(), k);  // a slow consumer lets the producer fill all K
  }
}

TEST(Prefetcher, ProducerExceptionIsRaisedAtItsBatch) {
  for (int k : {0, 1, 4}) {
    for (int workers : {1, 2}) {
      if (k == 0 && workers == 2) continue;
      Prefetcher<Batch> pf(
          [](std::int64_t i) {
            if (i == 5) throw std::runtime_error("bad batch 5");
            return make_batch(i);
          },
          20, k, workers);
      for (std::int64_t i = 0; i < 5; ++i) {
        auto b = pf.next();
        ASSERT_TRUE(b.has_value()) << "K=" << k << " batch " << i;
        EXPECT_EQ(*b, make_batch(i));
      }
      try {
        pf.next();
        FAIL() << "no exception at batch 5, K=" << k;
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "bad batch 5");
      }
      EXPECT_FALSE(pf.next().has_value());  // the epoch ends there
    }
  }
}

TEST(Prefetcher, EarlyBreakAndDestructionMidEpochJoinCleanly) {
  using clock = std::chrono::steady_clock;
  for (int k : {1, 4, 16}) {
    std::atomic<int> produced{0};
    auto t0 = clock::now();
    {
      Prefetcher<Batch> pf(
          [&](std::int64_t i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            ++produced;
            return make_batch(i);
          },
          1000000, k, 2);
      for (int i = 0; i < 3; ++i) ASSERT_TRUE(pf.next().has_value());
    }  // break out of a million-batch epoch
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - t0).count();
    EXPECT_LT(ms, 1000) << "K=" << k;
    EXPECT_LE(produced.load(), 3 + k + 2);
  }
  { Prefetcher<Batch> never_consumed(make_batch, 100, 8, 2); }  // destroyed untouched
  {
    Prefetcher<Batch> failed([](std::int64_t) -> Batch { throw std::logic_error("x"); }, 100, 4);
    EXPECT_THROW(failed.next(), std::logic_error);
  }  // destroyed after a producer error
}

TEST(Prefetcher, SuccessiveEpochsRestartCleanly) {
  for (int epoch = 0; epoch < 5; ++epoch) {
    Prefetcher<Batch> pf([&](std::int64_t i) { return make_batch(i + epoch * 1000); }, 50, 3);
    auto out = drain(pf);
    ASSERT_EQ(out.size(), 50u);
    EXPECT_EQ(out.front(), make_batch(epoch * 1000));
  }
}

TEST(Prefetcher, StressWithRandomDelays) {
  std::mt19937 rng(1234);
  std::int64_t total = 0;
  for (int k = 1; k <= 16; ++k) {
    const int workers = 1 + k % 3;
    std::uniform_int_distribution<int> delay(0, 30);
    std::vector<int> producer_delay(400), consumer_delay(400);
    for (auto& d : producer_delay) d = delay(rng);
    for (auto& d : consumer_delay) d = delay(rng);
    Prefetcher<Batch> pf(
        [&](std::int64_t i) {
          std::this_thread::sleep_for(std::chrono::microseconds(producer_delay[static_cast<std::size_t>(i)]));
          return make_batch(i);
        },
        400, k, workers);
    for (std::int64_t i = 0; i < 400; ++i) {
      auto b = pf.next();
      ASSERT_TRUE(b.has_value());
      ASSERT_EQ(*b, make_batch(i));
      std::this_thread::sleep_for(std::chrono::microseconds(consumer_delay[static_cast<std::size_t>(i)]));
      ++total;
    }
    EXPECT_FALSE(pf.next().has_value());
    EXPECT_LE(pf.max_in_flight(), k);
  }
  EXPECT_EQ(total, 16 * 400);
}

TEST(PrefetchDepth, ParsingAndEnvironment) {
  EXPECT_EQ(parse_depth("0"), 0);
  EXPECT_EQ(parse_depth("4"), 4);
  EXPECT_EQ(parse_depth("64"), 64);
  for (const char* bad : {"", "-1", "65", "two", "2x", " 2"}) EXPECT_FALSE(parse_depth(bad).has_value()) << bad;
  ::unsetenv("GNNPROF_PREFETCH");
  EXPECT_EQ(resolve_depth(2), 2);
  ::setenv("GNNPROF_PREFETCH", "5", 1);
  EXPECT_EQ(resolve_depth(2), 5);
  ::setenv("GNNPROF_PREFETCH", "0", 1);
  EXPECT_EQ(resolve_depth(2), 0);  // the environment overrides the code default
  ::setenv("GNNPROF_PREFETCH", "lots", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(resolve_depth(3), 3);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "gnnprof: ignoring GNNPROF_PREFETCH=lots (expected an integer in 0..64); using 3\n");
  ::setenv("GNNPROF_PREFETCH", "", 1);  // empty is unset, as for every GNNPROF_* variable
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(resolve_depth(3), 3);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ::unsetenv("GNNPROF_PREFETCH");
}

TEST(Prefetcher, ProfilesExposedWaitAndHiddenProducerStages) {
  Profile p = gnnprof::testing::profile_of(gnnprof::testing::quiet_config(), [] {
    Prefetcher<Batch> pf(
        [](std::int64_t i) {
          GNNPROF_STAGE("sample");
          gnnprof::testing::spin_ns(50000);
          return make_batch(i);
        },
        20, 2);
    while (auto b = pf.next()) {
      GNNPROF_STEP();
      GNNPROF_STAGE("forward");
      gnnprof::testing::spin_ns(100000);
    }
    GNNPROF_STEP_END();
  });
  const StageStats* wait = gnnprof::testing::find_stage(p, "loader_wait");
  const StageStats* sample = gnnprof::testing::find_stage(p, "sample");
  ASSERT_TRUE(wait && sample);
  EXPECT_EQ(wait->hits, 20u);
  EXPECT_EQ(wait->category, "data");
  ASSERT_EQ(sample->by_thread.size(), 1u);
  EXPECT_NE(sample->by_thread[0].thread, p.main_thread);  // hidden: on the producer thread
  bool named = false;
  for (const auto& t : p.threads) named |= t.name == "prefetch-0";
  EXPECT_TRUE(named);
  ASSERT_EQ(p.counters.size(), 1u);
  EXPECT_EQ(p.counters[0].name, "prefetch_queue_depth");
  EXPECT_LE(p.counters[0].max, 2);
  // How much data time is hidden is a timing figure: bench/ measures it (docs/performance.md).
  EXPECT_EQ(sample->hits, 20u);
}

}  // namespace
}  // namespace gnnprof::prefetch
