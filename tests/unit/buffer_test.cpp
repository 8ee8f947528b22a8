// Per-thread buffers: exact accounting under load, overflow counted, thread cap, thread reuse.
#include <atomic>
#include <thread>
#include <vector>

#include "collector.h"  // internal: ring count
#include "test_support.h"

namespace gnnprof {
namespace {

using testing::profile_of;
using testing::quiet_config;

void emit(gnnprof_site_t site, int n) {
  for (int i = 0; i < n; ++i) {
    gnnprof_stage_begin(site);
    gnnprof_stage_end();
  }
}

TEST(Buffers, FourThreadsMillionEventsEachExactTotals) {
  constexpr int kThreads = 4, kEvents = 1000000;
  Config cfg = quiet_config(/*drainer=*/true);
  cfg.drain_interval_ms = 1;
  Profile p = profile_of(cfg, [&] {
    gnnprof_site_t site = gnnprof_stage_site("buffer_load", nullptr);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) ts.emplace_back(emit, site, kEvents);
    for (auto& t : ts) t.join();
  });
  // Every event is either recorded or counted as dropped: never lost silently.
  EXPECT_EQ(p.recorded_events + p.dropped_events, static_cast<std::uint64_t>(kThreads) * kEvents);
  const StageStats* s = testing::find_stage(p, "buffer_load");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->hits, p.recorded_events);
  std::uint64_t per_thread_sum = 0;
  for (const auto& t : p.threads) per_thread_sum += t.recorded_events + t.dropped_events;
  EXPECT_EQ(per_thread_sum, static_cast<std::uint64_t>(kThreads) * kEvents);
}

TEST(Buffers, OverflowDropsAndCountsExactly) {
  Config cfg = quiet_config(/*drainer=*/false);
  cfg.buffer_events = 1024;  // nothing drains until stop: the ring fills after 1024 events
  Profile p = profile_of(cfg, [&] {
    std::thread t(emit, gnnprof_stage_site("overflow", nullptr), 10000);
    t.join();
  });
  EXPECT_EQ(p.recorded_events, 1024u);
  EXPECT_EQ(p.dropped_events, 10000u - 1024u);
  const StageStats* s = testing::find_stage(p, "overflow");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->hits, 1024u);
}

TEST(Buffers, DropsBelongToTheSessionAndTheThreadThatHadThem) {
  // Session 1 overflows a ring; session 2 on the same rings drops nothing and must say 0
  // (found by the stress soak: a ring's drop counter carried over between sessions).
  Config cfg = quiet_config(/*drainer=*/false);
  cfg.buffer_events = 64;
  // Fresh threads: the rings they get have this test's capacity whatever ran before.
  Profile first = profile_of(cfg, [] { std::thread(emit, gnnprof_stage_site("overflowing", nullptr), 1000).join(); });
  EXPECT_EQ(first.dropped_events, 1000u - 64u);
  Profile second = profile_of(cfg, [] { std::thread(emit, gnnprof_stage_site("calm", nullptr), 10).join(); });
  EXPECT_EQ(second.recorded_events, 10u);
  EXPECT_EQ(second.dropped_events, 0u);
  // A thread that takes over a ring whose owner dropped events starts from 0 too.
  Profile third = profile_of(cfg, [] {
    std::thread a(emit, gnnprof_stage_site("a", nullptr), 100);
    a.join();
    ASSERT_TRUE(snapshot());
    std::thread b(emit, gnnprof_stage_site("b", nullptr), 10);
    b.join();
  });
  EXPECT_EQ(third.dropped_events, 100u - 64u);
  for (const auto& t : third.threads) {
    if (t.recorded_events == 10) {
      EXPECT_EQ(t.dropped_events, 0u);
    }
  }
}

TEST(Buffers, ThreadsOverTheCapAreDroppedAndCounted) {
  Config cfg = quiet_config(/*drainer=*/false);
  cfg.max_threads = 0;  // no thread gets a ring
  Profile p = profile_of(cfg, [&] {
    std::thread t(emit, gnnprof_stage_site("capped", nullptr), 100);
    t.join();
  });
  EXPECT_EQ(p.recorded_events, 0u);
  EXPECT_EQ(p.dropped_events, 100u);
}

TEST(Buffers, ExitedThreadsBuffersAreReused) {
  Config cfg = quiet_config(/*drainer=*/false);
  std::size_t rings_before = 0;
  {
    std::lock_guard<std::mutex> lock(detail::buffer_registry().mutex());
    rings_before = detail::buffer_registry().buffers().size();
  }
  Profile p = profile_of(cfg, [&] {
    gnnprof_site_t site = gnnprof_stage_site("churn", nullptr);
    for (int i = 0; i < 200; ++i) {
      std::thread t(emit, site, 10);
      t.join();
      // Drain now (a joined thread's TLS destructors have retired its ring): the next thread
      // takes the emptied ring over.
      ASSERT_TRUE(snapshot());
    }
  });
  EXPECT_EQ(p.recorded_events + p.dropped_events, 2000u);
  EXPECT_EQ(testing::find_stage(p, "churn")->hits, p.recorded_events);
  // 200 threads came and went: each has its own index in the profile, but rings were reused,
  // so ring memory did not grow with thread churn.
  EXPECT_GE(p.threads.size(), 200u);
  std::lock_guard<std::mutex> lock(detail::buffer_registry().mutex());
  // At most two new rings: the main thread's (attached by start()) and one that every worker
  // thread in turn takes over.
  EXPECT_LE(detail::buffer_registry().buffers().size(), rings_before + 2);
}

TEST(Buffers, DisabledSessionRecordsNothing) {
  Config cfg = quiet_config();
  cfg.enabled = false;
  (void)stop();
  ASSERT_TRUE(start(cfg));
  EXPECT_FALSE(is_running());
  emit(gnnprof_stage_site("disabled", nullptr), 1000);
  EXPECT_TRUE(stop());
}

}  // namespace
}  // namespace gnnprof
