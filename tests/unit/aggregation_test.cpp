// Aggregation: nesting and self time, unattributed time, iterations, lines, transfers.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "aggregator.h"  // internal: deterministic synthetic events
#include "batch_prep.h"
#include "gnnprof/reports/analysis.h"
#include "gnnprof/gnnprof_c.h"
#include "histogram.h"
#include "gnnprof/internal/private_heap.h"
#include "site_registry.h"
#include "thread_buffer.h"
#include "test_support.h"

namespace gnnprof {
namespace {

using testing::find_stage;
using testing::profile_of;
using testing::quiet_config;
using testing::spin_ns;

TEST(Aggregation, NestedStagesSelfTimeExcludesChildren) {
  Profile p = profile_of(quiet_config(), [] {
    for (int i = 0; i < 20; ++i) {
      GNNPROF_STAGE("outer");
      spin_ns(20000);
      {
        GNNPROF_STAGE("inner");
        spin_ns(50000);
        {
          GNNPROF_STAGE("innermost");
          spin_ns(10000);
        }
      }
    }
  });
  const StageStats* outer = find_stage(p, "outer");
  const StageStats* inner = find_stage(p, "inner");
  const StageStats* innermost = find_stage(p, "innermost");
  ASSERT_TRUE(outer && inner && innermost);
  EXPECT_EQ(outer->hits, 20u);
  // self = total - directly nested stages, to conversion rounding (<= 2 ns per hit).
  EXPECT_NEAR(static_cast<double>(outer->self_ns), static_cast<double>(outer->total_ns - inner->total_ns), 40.0);
  EXPECT_NEAR(static_cast<double>(inner->self_ns), static_cast<double>(inner->total_ns - innermost->total_ns), 40.0);
  EXPECT_EQ(innermost->self_ns, innermost->total_ns);
  EXPECT_GT(outer->self_ns, 20 * 15000);
  EXPECT_LE(innermost->p50_ns, innermost->max_ns);
  EXPECT_LE(innermost->p50_ns, innermost->p90_ns);
}

TEST(Aggregation, UnattributedIsWallMinusTopLevelStagesOfMainThread) {
  Profile p = profile_of(quiet_config(), [] {
    { GNNPROF_STAGE("a"); spin_ns(200000); }
    spin_ns(300000);  // outside every stage
    { GNNPROF_STAGE("b"); spin_ns(200000); }
  });
  const StageStats* a = find_stage(p, "a");
  const StageStats* b = find_stage(p, "b");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(p.unattributed_ns, p.wall_ns - a->total_ns - b->total_ns);
  EXPECT_GE(p.unattributed_ns, 290000);  // 300 us spun; slack for TSC calibration
}

TEST(Aggregation, PerIterationSumsEqualTotals) {
  Profile p = profile_of(quiet_config(), [] {
    for (int i = 0; i < 10; ++i) {
      GNNPROF_STEP();
      { GNNPROF_STAGE("sample"); spin_ns(10000 + 1000 * i); }
      { GNNPROF_STAGE("forward"); spin_ns(30000); { GNNPROF_STAGE("matmul"); spin_ns(5000); } }
    }
    GNNPROF_STEP_END();
    { GNNPROF_STAGE("eval"); spin_ns(50000); }  // outside every iteration
  });
  ASSERT_EQ(p.iterations.size(), 10u);
  for (const char* name : {"sample", "forward", "matmul"}) {
    std::int64_t sum = 0;
    for (const auto& it : p.iterations) sum += it.stages.at(name);
    EXPECT_EQ(sum, find_stage(p, name)->total_ns) << name;
  }
  for (const auto& it : p.iterations) {
    EXPECT_TRUE(it.complete);
    EXPECT_EQ(it.stages.count("eval"), 0u);
    // unattributed per iteration: wall minus top-level stages (matmul is nested in forward).
    EXPECT_EQ(it.unattributed_ns, it.wall_ns - it.stages.at("sample") - it.stages.at("forward"));
  }
  // Each iteration holds its own sample time: iteration i spun 10 + i us. A lower bound only
  // (5 % slack for TSC calibration): a preempted iteration takes longer, never shorter, so
  // comparing iterations with each other flaked on a busy machine under TSan.
  for (std::size_t i = 0; i < p.iterations.size(); ++i)
    EXPECT_GE(p.iterations[i].stages.at("sample"), static_cast<std::int64_t>((10000 + 1000 * i) * 95 / 100)) << i;
}

TEST(Aggregation, OtherThreadsGoToOtherThreadsOfTheirIteration) {
  Profile p = profile_of(quiet_config(), [] {
    for (int i = 0; i < 3; ++i) {
      GNNPROF_STEP();
      std::thread producer([] { GNNPROF_STAGE("sample"); spin_ns(20000); });
      producer.join();
      { GNNPROF_STAGE("forward"); spin_ns(20000); }
    }
    GNNPROF_STEP_END();
  });
  ASSERT_EQ(p.iterations.size(), 3u);
  for (const auto& it : p.iterations) {
    EXPECT_EQ(it.stages.count("sample"), 0u);
    EXPECT_GT(it.other_threads.at("sample"), 0);
    EXPECT_GT(it.stages.at("forward"), 0);
  }
}

// One mark on the main thread (a sanity forward's, before a threading.Thread trains), then a
// thread that marks: the iterations and the loop thread are that thread's. Two marks on the
// main thread first: the loop stays the main thread's.
TEST(Aggregation, AThreadThatMarksAfterTheMainThreadsOneMarkIsTheLoop) {
  Profile p = profile_of(quiet_config(), [] {
    GNNPROF_STEP();
    { GNNPROF_STAGE("forward"); spin_ns(20000); }
    std::thread trainer([] {
      for (int i = 0; i < 3; ++i) {
        GNNPROF_STEP();
        { GNNPROF_STAGE("forward"); spin_ns(20000); }
      }
      GNNPROF_STEP_END();
    });
    trainer.join();
  });
  ASSERT_EQ(p.iterations.size(), 3u);
  for (const auto& it : p.iterations) EXPECT_GT(it.stages.at("forward"), 0);
  EXPECT_NE(p.main_thread, 0u);
  Profile q = profile_of(quiet_config(), [] {
    GNNPROF_STEP();
    spin_ns(20000);
    GNNPROF_STEP();
    spin_ns(20000);
    std::thread([] { GNNPROF_STEP(); }).join();
    spin_ns(20000);
    GNNPROF_STEP_END();
  });
  EXPECT_EQ(q.main_thread, 0u);
  EXPECT_GE(q.iterations.size(), 2u);
}

TEST(Aggregation, EventsDrainedBeforeTheirMarkAreStillAssigned) {
  // Thread 1's stage (begins at 150) is drained before thread 0's mark at 200 arrives: it must
  // wait and land in iteration 0 = [100, 200), not be lost or put in iteration 1.
  detail::Aggregator agg(detail::AggregatorOptions{});
  auto ev = [](detail::EventKind k, std::uint64_t t0, std::uint64_t t1, std::uint32_t site) {
    detail::RawEvent e{};
    e.kind = k;
    e.t0 = t0;
    e.t1 = t1;
    e.site = site;
    return e;
  };
  using K = detail::EventKind;
  agg.consume(0, ev(K::kStep, 100, 0, 0));
  agg.consume(1, ev(K::kStage, 150, 180, 1));  // other thread, iteration 0
  agg.consume(1, ev(K::kStage, 250, 260, 1));  // other thread, iteration 1
  agg.consume(0, ev(K::kStage, 110, 190, 2));  // loop thread, iteration 0
  agg.advance(300);  // a drain pass well within the mark horizon: nothing placed early
  EXPECT_EQ(agg.pending(), 2u);  // thread 1's two events; the loop thread's never wait
  agg.consume(0, ev(K::kStep, 200, 0, 0));
  agg.consume(0, ev(K::kStepEnd, 300, 0, 0));
  std::vector<detail::SiteInfo> sites(3);
  sites[1].name = "sample";
  sites[2].name = "forward";
  Profile p = agg.build(sites, 400);
  ASSERT_EQ(p.iterations.size(), 2u);
  EXPECT_EQ(p.iterations[0].other_threads.at("sample"), 30);
  EXPECT_EQ(p.iterations[0].stages.at("forward"), 80);
  EXPECT_EQ(p.iterations[0].unattributed_ns, 100 - 80);
  EXPECT_EQ(p.iterations[1].other_threads.at("sample"), 10);
  EXPECT_EQ(p.iterations[1].wall_ns, 100);
  EXPECT_EQ(p.main_thread, 0u);
}

TEST(Aggregation, OtherThreadsEventsWaitOnlyWithinTheMarkHorizon) {
  // Thread 0 marks iterations; thread 1's events after the latest mark wait for the next mark
  // only until they are older than the horizon, so waiting memory stays bounded.
  detail::Aggregator agg(detail::AggregatorOptions{});
  detail::RawEvent m{};
  m.kind = detail::EventKind::kStep;
  m.t0 = 1000;
  agg.consume(0, m);
  detail::RawEvent e{};
  e.kind = detail::EventKind::kStage;
  e.site = 1;
  const std::uint64_t n = 50000;
  for (std::uint64_t i = 0; i < n; ++i) {
    e.t0 = 2000 + i * 1000;
    e.t1 = e.t0 + 500;
    agg.consume(1, e);
  }
  EXPECT_EQ(agg.pending(), n);
  const auto now = static_cast<std::int64_t>(2000 + n * 1000);
  agg.advance(now);
  EXPECT_EQ(agg.pending(), static_cast<std::size_t>(detail::Aggregator::kMarkHorizonNs / 1000));
  agg.advance(now + detail::Aggregator::kMarkHorizonNs);
  EXPECT_EQ(agg.pending(), 0u);
  // The loop thread's own events never wait.
  e.t0 = static_cast<std::uint64_t>(now);
  e.t1 = e.t0 + 100;
  agg.consume(0, e);
  EXPECT_EQ(agg.pending(), 0u);
  std::vector<detail::SiteInfo> sites(2);
  sites[1].name = "sample";
  Profile p = agg.build(sites, now + 1000);
  ASSERT_EQ(p.iterations.size(), 1u);
  EXPECT_EQ(p.iterations[0].other_threads.at("sample"), static_cast<std::int64_t>(n * 500));
  EXPECT_EQ(p.iterations[0].stages.at("sample"), 100);
  EXPECT_FALSE(p.iterations[0].complete);
}

TEST(Aggregation, OpenIterationAtStopIsMarkedIncomplete) {
  Profile p = profile_of(quiet_config(), [] {
    for (int i = 0; i < 3; ++i) {
      GNNPROF_STEP();
      GNNPROF_STAGE("forward");
      spin_ns(10000);
    }
  });
  ASSERT_EQ(p.iterations.size(), 3u);
  EXPECT_TRUE(p.iterations[1].complete);
  EXPECT_FALSE(p.iterations[2].complete);
}

TEST(Aggregation, AnIterationEndedWithDropOpenIsLeftOut) {
  Profile p = profile_of(quiet_config(), [] {
    for (int i = 0; i < 3; ++i) {
      gnnprof_step_flags(i == 2 ? GNNPROF_STEP_DROP_OPEN : 0u);  // the third mark ends an epoch's gap
      if (i == 1) {
        GNNPROF_STAGE("eval");
        spin_ns(10000);
      } else {
        GNNPROF_STAGE("forward");
        spin_ns(10000);
      }
    }
    gnnprof_step_flags(0);
    gnnprof_step_end_flags(GNNPROF_STEP_DROP_OPEN);
  });
  ASSERT_EQ(p.iterations.size(), 2u);  // of 4 begun: the second (eval) and the fourth dropped
  EXPECT_EQ(p.iterations[0].index, 0u);
  EXPECT_EQ(p.iterations[1].index, 1u);
  for (const auto& it : p.iterations) {
    EXPECT_TRUE(it.complete);
    EXPECT_EQ(it.stages.count("eval"), 0u);
  }
  const StageStats* eval = find_stage(p, "eval");
  ASSERT_NE(eval, nullptr);  // still in the stage table
  EXPECT_EQ(eval->hits, 1u);
}

TEST(Aggregation, LinesDoNotReduceStageSelfTime) {
  Profile p = profile_of(quiet_config(), [] {
    for (int i = 0; i < 5; ++i) {
      GNNPROF_STAGE("materialize");
      GNNPROF_LINE(spin_ns(20000));
    }
  });
  const StageStats* s = find_stage(p, "materialize");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->self_ns, s->total_ns);
  ASSERT_EQ(p.lines.size(), 1u);
  EXPECT_EQ(p.lines[0].hits, 5u);
  EXPECT_EQ(p.lines[0].stage, "materialize");
  EXPECT_EQ(p.lines[0].code, "spin_ns(20000)");
  EXPECT_LE(p.lines[0].total_ns, s->total_ns);
}

TEST(Aggregation, NestedLineScopesNameNoCaller) {
  // A GNNPROF_LINE inside another's statement (a lambda run there) is the enclosing line's
  // context, not a traced caller: `caller` is the Python tracer's alone.
  Profile p = profile_of(quiet_config(), [] {
    auto inner = [] {
      GNNPROF_LINE(spin_ns(5000));
    };
    for (int i = 0; i < 3; ++i) {
      GNNPROF_LINE(inner());
    }
  });
  ASSERT_EQ(p.lines.size(), 2u);
  for (const LineStats& l : p.lines) {
    EXPECT_EQ(l.caller, -1) << l.code;
    EXPECT_EQ(l.nested_ns, 0) << l.code;
  }
}

TEST(Aggregation, TransfersAndMaterializationsCarryStageAndLine) {
  Profile p = profile_of(quiet_config(), [] {
    for (int i = 0; i < 4; ++i) {
      GNNPROF_STAGE("h2d");
      GNNPROF_LINE(record_transfer(1000, Direction::kH2D, HostMemory::kPinned, CopyMode::kAsync, 50));
      record_transfer(10, Direction::kD2H, HostMemory::kPageable, CopyMode::kSync);
      GNNPROF_MATERIALIZE("features", 512, 512 * 256);
    }
  });
  ASSERT_EQ(p.transfers.size(), 2u);
  const TransferStats* h2d = nullptr;
  const TransferStats* d2h = nullptr;
  for (const auto& t : p.transfers) (t.direction == Direction::kH2D ? h2d : d2h) = &t;
  ASSERT_TRUE(h2d && d2h);
  EXPECT_EQ(h2d->stage, "h2d");
  EXPECT_EQ(h2d->memory, HostMemory::kPinned);
  EXPECT_EQ(h2d->mode, CopyMode::kAsync);
  EXPECT_EQ(h2d->count, 4u);
  EXPECT_EQ(h2d->bytes, 4000u);
  EXPECT_EQ(h2d->total_ns, 200);
  EXPECT_NE(h2d->line, 0u);  // inside the GNNPROF_LINE
  EXPECT_EQ(d2h->memory, HostMemory::kPageable);
  EXPECT_EQ(d2h->mode, CopyMode::kSync);
  EXPECT_EQ(d2h->line, 0u);
  ASSERT_EQ(p.materializations.size(), 1u);
  EXPECT_EQ(p.materializations[0].name, "features");
  EXPECT_EQ(p.materializations[0].rows, 4u * 512);
  EXPECT_EQ(p.materializations[0].bytes, 4u * 512 * 256);
}

TEST(Aggregation, CountersKeepMinMaxMeanLast) {
  Profile p = profile_of(quiet_config(), [] {
    for (int v : {3, 1, 4, 1, 5}) GNNPROF_COUNTER("queue_depth", v);
  });
  ASSERT_EQ(p.counters.size(), 1u);
  EXPECT_EQ(p.counters[0].samples, 5u);
  EXPECT_EQ(p.counters[0].min, 1);
  EXPECT_EQ(p.counters[0].max, 5);
  EXPECT_DOUBLE_EQ(p.counters[0].mean, 14.0 / 5);
  EXPECT_EQ(p.counters[0].last, 5);
}

TEST(Aggregation, DeepNestingBeyondTheStackIsDroppedAndStaysBalanced) {
  Profile p = profile_of(quiet_config(), [] {
    gnnprof_site_t site = gnnprof_stage_site("deep", nullptr);
    for (int i = 0; i < 70; ++i) gnnprof_stage_begin(site);
    for (int i = 0; i < 70; ++i) gnnprof_stage_end();
    { GNNPROF_STAGE("after"); }
  });
  EXPECT_EQ(find_stage(p, "deep")->hits, 64u);
  EXPECT_EQ(p.dropped_events, 6u);
  const StageStats* after = find_stage(p, "after");
  ASSERT_NE(after, nullptr);
  EXPECT_EQ(after->by_thread.size(), 1u);
  EXPECT_EQ(after->self_ns, after->total_ns);
}

TEST(Aggregation, ExceptionThroughAStageClosesIt) {
  Profile p = profile_of(quiet_config(), [] {
    try {
      GNNPROF_STAGE("throws");
      GNNPROF_LINE(throw std::runtime_error("boom"));
    } catch (const std::runtime_error&) {
    }
    { GNNPROF_STAGE("next"); }
  });
  EXPECT_EQ(find_stage(p, "throws")->hits, 1u);
  ASSERT_EQ(p.lines.size(), 1u);
  EXPECT_EQ(p.lines[0].hits, 1u);
  // "next" is top level again, so it is not nested under "throws".
  EXPECT_EQ(find_stage(p, "throws")->self_ns, find_stage(p, "throws")->total_ns);
}

TEST(Aggregation, CategoriesComeFromWellKnownNames) {
  Profile p = profile_of(quiet_config(), [] {
    { GNNPROF_STAGE("sample"); }
    { GNNPROF_STAGE("backward"); }
    { GNNPROF_STAGE("my_stage"); }
    { GNNPROF_STAGE_CAT("custom", "io"); }
    { GNNPROF_STAGE("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"); }  // torch's DataLoader
    { GNNPROF_STAGE("enumerate"); }
  });
  EXPECT_EQ(find_stage(p, "sample")->category, "data");
  EXPECT_EQ(find_stage(p, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")->category, "data");
  EXPECT_EQ(find_stage(p, "enumerate")->category, "user");
  EXPECT_EQ(find_stage(p, "backward")->category, "compute");
  EXPECT_EQ(find_stage(p, "my_stage")->category, "user");
  EXPECT_EQ(find_stage(p, "custom")->category, "io");
}

TEST(Histogram, QuantilesWithinOnePercent) {
  detail::LogHistogram h;
  for (int v = 1; v <= 100000; ++v) h.add(v);
  EXPECT_NEAR(static_cast<double>(h.quantile(0.5)), 50000.0, 50000.0 * 0.01);
  EXPECT_NEAR(static_cast<double>(h.quantile(0.9)), 90000.0, 90000.0 * 0.01);
  detail::LogHistogram small;
  for (int v : {5, 7, 9}) small.add(v);
  EXPECT_EQ(small.quantile(0.5), 7);  // exact below 128 ns
  EXPECT_EQ(detail::LogHistogram().quantile(0.5), 0);
}

TEST(Histogram, KeepsTheSpanOfItsValuesInAnyOrder) {
  // Hits of 8-15 us, added largest first: 64 counters (one octave), not the ~600 from zero.
  detail::LogHistogram narrow;
  for (int v = 15999; v >= 8000; v -= 7) narrow.add(v);
  EXPECT_LE(narrow.buckets(), 64u);
  // Any order gives the quantiles of the sorted order.
  std::vector<std::int64_t> values;
  std::uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 5000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    values.push_back(static_cast<std::int64_t>(x % 50000000));
  }
  detail::LogHistogram shuffled, ascending;
  for (std::int64_t v : values) shuffled.add(v);
  std::sort(values.begin(), values.end());
  for (std::int64_t v : values) ascending.add(v);
  for (double q : {0.01, 0.5, 0.9, 0.99, 1.0}) {
    EXPECT_EQ(shuffled.quantile(q), ascending.quantile(q)) << q;
    const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));  // as quantile()
    const auto exact = static_cast<double>(values[rank - 1]);
    EXPECT_NEAR(static_cast<double>(shuffled.quantile(q)), exact, exact * 0.01 + 1) << q;
  }
  EXPECT_EQ(shuffled.buckets(), ascending.buckets());
}

// Bytes in use from malloc, in every arena and in malloc's own mappings.
std::size_t malloc_in_use() {
  const struct mallinfo2 m = ::mallinfo2();
  return m.uordblks + m.hblkhd;
}

TEST(PrivateHeap, AllocationsAreAlignedAndComeFromOutsideMalloc) {
  detail::PrivateHeap heap;
  const std::size_t before = malloc_in_use();
  {
    // A pool aligns its larger chunks to their block size, beyond a page.
    void* p = heap.resource()->allocate(40000, 16384);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 16384, 0u);
    std::memset(p, 0xab, 40000);
    heap.resource()->deallocate(p, 40000, 16384);
    std::pmr::map<std::uint32_t, std::uint64_t> m(heap.resource());
    for (std::uint32_t i = 0; i < 20000; ++i) m[i] = i;
    std::pmr::vector<double> v(heap.resource());
    v.resize(1 << 20);
    EXPECT_EQ(m.at(19999), 19999u);
  }
  if (detail::kPrivateHeapOnMalloc) GTEST_SKIP() << "ASan build: the private heap is malloc on purpose, for ASan to check";
  EXPECT_EQ(malloc_in_use(), before);
}

// Pages of this process's mapping at p that are resident now (mincore).
std::size_t resident_pages(const void* p, std::size_t bytes) {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const auto base = reinterpret_cast<std::uintptr_t>(p) & ~(page - 1);
  const std::size_t n = (reinterpret_cast<std::uintptr_t>(p) + bytes - base + page - 1) / page;
  std::vector<unsigned char> v(n);
  if (::mincore(reinterpret_cast<void*>(base), n * page, v.data()) != 0) return 0;
  std::size_t r = 0;
  for (unsigned char c : v) r += c & 1;
  return r;
}

TEST(PrivateHeap, ItsFirstChunksComeFromOneSlabFaultedInAtFirstUse) {
  // Tables created during the host's first iterations must not page-fault there: a heap's
  // first chunks (up to 256 KiB) come from one slab that is resident from its first use.
  if (detail::kPrivateHeapOnMalloc) GTEST_SKIP() << "ASan build: the private heap is malloc on purpose, for ASan to check";
  detail::MappedResource upstream;
  void* a = upstream.allocate(4096, 64);
  void* b = upstream.allocate(16384, 16384);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 16384, 0u);
  EXPECT_LT(static_cast<char*>(b) - static_cast<char*>(a), 64 * 1024);  // the same slab
  EXPECT_EQ(resident_pages(a, detail::MappedResource::kSlab), detail::MappedResource::kSlab / 4096);
  void* big = upstream.allocate(1 << 20, 64);  // larger than a slab chunk: its own mapping, lazy
  EXPECT_EQ(resident_pages(big, 1 << 20), 0u);
  std::memset(a, 1, 4096);
  upstream.deallocate(a, 4096, 64);  // a slab chunk stays: still mapped, still writable
  std::memset(b, 2, 16384);
  upstream.deallocate(b, 16384, 16384);
  upstream.deallocate(big, 1 << 20, 64);
  // Past the slab, chunks are mappings of their own again.
  std::vector<void*> chunks;
  for (int i = 0; i < 8; ++i) chunks.push_back(upstream.allocate(64 * 1024, 64));
  for (void* p : chunks) {
    std::memset(p, 3, 64 * 1024);
    upstream.deallocate(p, 64 * 1024, 64);
  }
}

TEST(ThreadBuffer, ItsFirstSlotsAreResidentWhenMade) {
  if (detail::kPrivateHeapOnMalloc) GTEST_SKIP() << "ASan build: rings are malloc blocks";
  detail::ThreadBuffer ring(1 << 16);  // 3 MiB of 48-byte slots
  const std::size_t bytes = ring.capacity() * sizeof(detail::RawEvent);
  const std::size_t first = resident_pages(&ring.at(0), detail::kPopulateAheadBytes);
  EXPECT_EQ(first, detail::kPopulateAheadBytes / 4096);
  EXPECT_EQ(resident_pages(&ring.at(0), bytes), first);  // the rest: on first write
}

TEST(Aggregation, ItsTablesNeverGrowTheHostsMallocHeap) {
  // In threadless mode the aggregator runs on the host's loop thread, and the registry and
  // the observer's names grow during the host's first iterations: their nodes must not land
  // between the host's own chunks (private_heap.h). Many stages, lines, transfers,
  // materializations, counters, threads and iterations leave malloc's bytes where they were.
  if (detail::kPrivateHeapOnMalloc) GTEST_SKIP() << "ASan build: the private heap is malloc on purpose, for ASan to check";
  detail::Aggregator agg(detail::AggregatorOptions{});
  detail::RawEvent e{};
  const std::size_t before = malloc_in_use();
  std::uint64_t t = 1000;
  for (std::uint32_t iter = 0; iter < 2000; ++iter) {
    e = detail::RawEvent{};
    e.kind = detail::EventKind::kStep;
    e.t0 = t;
    agg.consume(0, e);
    for (std::uint32_t site = 1; site <= 40; ++site) {
      for (std::uint32_t thread = 0; thread < 3; ++thread) {
        e = detail::RawEvent{};
        e.kind = detail::EventKind::kStage;
        e.site = site;
        e.t0 = t + 10;
        e.t1 = t + 10 + (site * 977 + iter * 131) % 100000;  // spreads the histograms' buckets
        agg.consume(thread, e);
      }
      e.kind = site % 2 == 0 ? detail::EventKind::kTransfer : detail::EventKind::kMaterialize;
      e.ctx = site;
      e.a = 4096;
      agg.consume(0, e);
      e = detail::RawEvent{};
      e.kind = detail::EventKind::kCounter;
      e.site = 100 + site % 4;
      e.t0 = t;
      agg.consume(0, e);
    }
    t += 200000;
    agg.advance(static_cast<std::int64_t>(t));
  }
  EXPECT_EQ(malloc_in_use(), before);
  EXPECT_EQ(agg.recorded(), 2000u * (1 + 40 * 5));

  detail::SiteRegistry reg;
  std::vector<detail::SiteInfo> infos(500);
  for (std::size_t i = 0; i < infos.size(); ++i) {
    infos[i].kind = i % 2 == 0 ? SiteKind::kStage : SiteKind::kLine;
    infos[i].name = "a stage name longer than the small-string buffer " + std::to_string(i);
    infos[i].category = "user";
    infos[i].file = "/some/rather/long/path/to/a/training/script.py";
    infos[i].function = "train_one_epoch";
    infos[i].line = static_cast<std::uint32_t>(i);
  }
  const std::size_t before_registry = malloc_in_use();
  for (const auto& info : infos) reg.intern(info);
  for (const auto& info : infos) reg.intern(info);  // known: the same ids, nothing new
  EXPECT_EQ(malloc_in_use(), before_registry);
  const std::vector<detail::SiteInfo> snap = reg.snapshot();
  ASSERT_EQ(snap.size(), infos.size() + 1);  // id 0 is the placeholder
  EXPECT_EQ(snap[1].name, infos[0].name);
  EXPECT_EQ(snap[500].file, infos[499].file);
  EXPECT_EQ(reg.name_of(2), infos[1].name);
  EXPECT_EQ(reg.intern(infos[7]), 8u);
}

}  // namespace
}  // namespace gnnprof

namespace gnnprof {
namespace {

using testing::train_py_line;

const CollectorInfo* batch_prep_note(const Profile& p) {
  for (const auto& c : p.collectors)
    if (c.name == "batch-prep") return &c;
  return nullptr;
}

/// A traced Python loop: a numpy sampler (lines 11-12) between the loop's header (10) and its
/// forward line (13); line 12 also gathers with torch (half its time a data stage).
Profile numpy_sampler_loop() {
  Profile p;
  p.wall_ns = 100'000'000;
  p.unattributed_ns = 40'000'000;
  p.stages.push_back(StageStats{"forward", "compute", 10, 20'000'000, 20'000'000, 0, 0, 0, 0, 0, {}});
  p.stages.push_back(StageStats{"materialize", "data", 10, 5'000'000, 5'000'000, 0, 0, 0, 0, 0, {}});
  auto line = [&](std::uint32_t n, const char* code, std::uint64_t hits, std::int64_t ns) {
    p.lines.push_back(train_py_line("main", n, code, hits, ns));
    return p.lines.size() - 1;
  };
  line(9, "model.train()", 1, 1000);
  const auto header = line(10, "for step in range(10):", 11, 1'000'000);
  const auto sample = line(11, "nbrs = sample(seeds)", 10, 10'000'000);
  const auto gather = line(12, "x = feats[nbrs]", 10, 10'000'000);
  p.lines[gather].stages["materialize"] = 5'000'000;
  const auto fwd = line(13, "loss = model(x).sum()", 10, 20'000'000);
  p.lines[fwd].stages["forward"] = 20'000'000;
  p.lines[fwd].backward_ns = 20'000'000;
  for (std::uint64_t i = 0; i < 10; ++i) {
    IterationStats it;
    it.index = i;
    it.wall_ns = 6'000'000;
    it.unattributed_ns = 2'500'000;
    it.stages = {{"forward", 2'000'000}, {"materialize", 500'000}};
    it.categories = {{"compute", 2'000'000}, {"data", 500'000}};
    it.lines = {{static_cast<std::uint32_t>(header), 100'000},
                {static_cast<std::uint32_t>(sample), 1'000'000},
                {static_cast<std::uint32_t>(gather), 1'000'000},
                {static_cast<std::uint32_t>(fwd), 2'000'000}};
    p.iterations.push_back(it);
  }
  return p;
}

TEST(BatchPrep, ThePythonBeforeTheForwardLineInNoStageIsADataStage) {
  Profile p = numpy_sampler_loop();
  detail::attribute_batch_prep(p);
  const StageStats* prep = find_stage(p, kBatchPrepStage);
  ASSERT_NE(prep, nullptr);
  EXPECT_EQ(prep->category, "data");
  // The header's 1 ms, the sampler's 10 ms and the gather's unstaged 5 ms; model.train(),
  // before the loop, is not the loop's.
  EXPECT_EQ(prep->total_ns, 16'000'000);
  EXPECT_EQ(prep->hits, 10u);
  EXPECT_EQ(prep->p50_ns, 1'600'000);
  EXPECT_EQ(p.unattributed_ns, 24'000'000);
  EXPECT_EQ(p.lines[1].stages.at(kBatchPrepStage), 1'000'000);
  EXPECT_EQ(p.lines[2].stages.at(kBatchPrepStage), 10'000'000);
  EXPECT_EQ(p.lines[3].stages.at(kBatchPrepStage), 5'000'000);
  EXPECT_EQ(p.lines[3].stages.at("materialize"), 5'000'000);
  EXPECT_EQ(p.lines[0].stages.count(kBatchPrepStage), 0u);
  EXPECT_EQ(p.lines[4].stages.count(kBatchPrepStage), 0u);
  for (const auto& it : p.iterations) {
    EXPECT_EQ(it.stages.at(kBatchPrepStage), 1'600'000);
    EXPECT_EQ(it.categories.at("data"), 2'100'000);
    EXPECT_EQ(it.unattributed_ns, 900'000);
  }
  const CollectorInfo* c = batch_prep_note(p);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->reason.find("lines 10, 11, 12 of train.py:main"), std::string::npos) << c->reason;
  // The analysis counts it as the loop's exposed data time: materialize's 0.5 ms and 1.6 ms.
  const reports::Analysis a = reports::analyze(p, reports::AnalysisOptions{0});
  EXPECT_EQ(a.exposed_data_ns, 2'100'000);
  // Once: a profile read back and built again is not attributed twice.
  const Profile once = p;
  detail::attribute_batch_prep(p);
  EXPECT_EQ(p.stages.size(), once.stages.size());
  EXPECT_EQ(p.iterations[0].stages.at(kBatchPrepStage), 1'600'000);
}

TEST(BatchPrep, BookkeepingAboveTheForwardIsNotData) {
  // A statement binding nothing the forward reads (a timer, a log call) is the loop's own.
  for (const char* code : {"busy(0.002)", "t0 = time.perf_counter()", "log(step, x=nbrs)"}) {
    Profile p = numpy_sampler_loop();
    p.lines[2].code = code;
    detail::attribute_batch_prep(p);
    const StageStats* prep = find_stage(p, kBatchPrepStage);
    ASSERT_NE(prep, nullptr) << code;
    EXPECT_EQ(prep->total_ns, 6'000'000) << code;  // the header's 1 ms and the gather's 5 ms
    EXPECT_EQ(p.lines[2].stages.count(kBatchPrepStage), 0u) << code;
  }
  // A timer read by the logging after the step (a line whose readback opened a forward phase)
  // is not what the forward reads.
  {
    Profile p = numpy_sampler_loop();
    p.lines[2].code = "t0 = time.perf_counter()";
    LineStats log = train_py_line("main", 15, "print(loss.item(), time.perf_counter() - t0)", 10, 100'000);
    log.stages["forward"] = 50'000;
    p.lines.push_back(log);
    detail::attribute_batch_prep(p);
    EXPECT_EQ(p.lines[2].stages.count(kBatchPrepStage), 0u);
  }
  // Bound through a tuple, an item or an attribute, read through a keyword argument: needed.
  for (const char* code : {"nbrs, _ = sample(seeds)", "nbrs[0] = sample(seeds)", "nbrs.data = sample(seeds)",
                           "nbrs += sample(seeds)"}) {
    Profile p = numpy_sampler_loop();
    p.lines[2].code = code;
    p.lines[3].code = "x = feats.index_select(0, index=nbrs)";
    detail::attribute_batch_prep(p);
    EXPECT_EQ(p.lines[2].stages.count(kBatchPrepStage), 1u) << code;
  }
}

TEST(BatchPrep, NothingWhenATracedFunctionRunsUnderTheLoopEveryIteration) {
  // A traced batch generator runs under the header: its time is in the header's, its stages on
  // its own lines.
  Profile p = numpy_sampler_loop();
  p.lines.push_back(train_py_line("batches", 3, "ids = rng.integers(0, n, 1024)", 10, 900'000));
  for (auto& it : p.iterations) it.lines[static_cast<std::uint32_t>(p.lines.size() - 1)] = 90'000;
  detail::attribute_batch_prep(p);
  EXPECT_EQ(find_stage(p, kBatchPrepStage), nullptr);
  // The profile says why.
  const CollectorInfo* c = batch_prep_note(p);
  ASSERT_NE(c, nullptr);
  EXPECT_FALSE(c->enabled);
  EXPECT_NE(c->reason.find("the traced batches runs on the loop's thread"), std::string::npos) << c->reason;
  detail::attribute_batch_prep(p);
  EXPECT_EQ(std::count_if(p.collectors.begin(), p.collectors.end(), [](const CollectorInfo& x) { return x.name == "batch-prep"; }), 1);
}

TEST(BatchPrep, TracedCodeUnderThoseStatementsCountsOnItsOwnLinesOnce) {
  // The tracer reports each statement's time in traced lines under it (nested_ns) and each
  // line's calling statement (caller): a batch generator the header resumes (lines 3-4 of
  // batches: 3 ms and 6 ms, 2 ms of them a gather), and a model function traced with --lines
  // under the forward line.
  Profile p = numpy_sampler_loop();
  const auto header = 1u, fwd = 4u;
  p.lines[header].total_ns = 10'000'000;
  p.lines[header].nested_ns = 9'000'000;
  auto traced = [&](const char* fn, std::uint32_t n, const char* code, std::int64_t ns, std::int64_t caller) {
    p.lines.push_back(train_py_line(fn, n, code, 10, ns));
    p.lines.back().caller = caller;
    return static_cast<std::uint32_t>(p.lines.size() - 1);
  };
  const auto ids = traced("batches", 3, "ids = rng.integers(0, n, 1024)", 3'000'000, header);
  const auto yield = traced("batches", 4, "yield sample(ids)", 6'000'000, header);
  p.lines[yield].stages["materialize"] = 2'000'000;
  const auto layer = traced("Sage.forward", 30, "h = self.norm(h)", 1'000'000, fwd);
  for (auto& it : p.iterations) {
    it.lines[header] = 1'000'000;
    it.lines[ids] = 300'000;
    it.lines[yield] = 600'000;
    it.lines[layer] = 100'000;
  }
  detail::attribute_batch_prep(p);
  const StageStats* prep = find_stage(p, kBatchPrepStage);
  ASSERT_NE(prep, nullptr);
  // The header's own 1 ms (its 9 ms under it are the generator's), the generator's 3 ms and
  // its unstaged 4 ms, the sampler's 10 ms, the gather's 5 ms; not the model's line.
  EXPECT_EQ(p.lines[header].stages.at(kBatchPrepStage), 1'000'000);
  EXPECT_EQ(p.lines[ids].stages.at(kBatchPrepStage), 3'000'000);
  EXPECT_EQ(p.lines[yield].stages.at(kBatchPrepStage), 4'000'000);
  EXPECT_EQ(p.lines[layer].stages.count(kBatchPrepStage), 0u);
  EXPECT_EQ(prep->total_ns, 23'000'000);
  for (const auto& it : p.iterations) EXPECT_EQ(it.stages.at(kBatchPrepStage), 2'300'000);
  const CollectorInfo* c = batch_prep_note(p);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->enabled);
  EXPECT_NE(c->reason.find("lines 10, 11, 12 of train.py:main (the loop's header and the statements above its forward "
                           "line (13) that bind what it reads) and lines 3, 4 of train.py:batches (traced code run under them)"),
            std::string::npos)
      << c->reason;

  // Called from a line that is not one of them (the forward line), directly or through traced
  // code it runs (the model's line): not batch preparation.
  Profile q = p;
  q.collectors.clear();
  q.stages.erase(std::remove_if(q.stages.begin(), q.stages.end(), [](const StageStats& s) { return s.name == kBatchPrepStage; }), q.stages.end());
  for (auto& l : q.lines) l.stages.erase(kBatchPrepStage);
  for (auto& it : q.iterations) it.stages.erase(kBatchPrepStage);
  q.lines[ids].caller = fwd;
  q.lines[yield].caller = layer;
  detail::attribute_batch_prep(q);
  EXPECT_EQ(q.lines[ids].stages.count(kBatchPrepStage), 0u);
  EXPECT_EQ(q.lines[yield].stages.count(kBatchPrepStage), 0u);
  EXPECT_EQ(q.lines[header].stages.at(kBatchPrepStage), 1'000'000);
}

TEST(BatchPrep, NothingWithoutALoopHeaderAboveTheForwardLineOrUnderOnePercent) {
  Profile p = numpy_sampler_loop();
  p.lines[1].code = "batch = next(it)";  // no header: a step function's body
  detail::attribute_batch_prep(p);
  EXPECT_EQ(find_stage(p, kBatchPrepStage), nullptr);

  Profile inner = numpy_sampler_loop();
  inner.lines[1].hits = 40;  // an inner loop's header (`for t in ntypes:`), run more than once a pass
  detail::attribute_batch_prep(inner);
  EXPECT_EQ(find_stage(inner, kBatchPrepStage), nullptr);

  Profile small = numpy_sampler_loop();
  small.lines[1].total_ns = small.lines[2].total_ns = 10'000;
  small.lines[3].total_ns = 5'010'000;  // 10 us unstaged a hit
  for (auto& it : small.iterations) it.lines = {{1u, 1'000}, {2u, 1'000}, {3u, 501'000}};
  detail::attribute_batch_prep(small);
  EXPECT_EQ(find_stage(small, kBatchPrepStage), nullptr);
}

}  // namespace
}  // namespace gnnprof
