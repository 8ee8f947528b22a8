// The linked API: macros side by side, declarations through GNNPROF_LINE, the C ABI, sessions.
#include <algorithm>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>

#include "gnnprof/gnnprof_c.h"
#include "gnnprof/profile_io.h"
#include "test_support.h"

namespace gnnprof {
namespace {

int twice(int x) { return 2 * x; }

void instrumented_function() {
  GNNPROF_FUNCTION();
  testing::spin_ns(1000);
}

/// Makes `cfg` write its profile to `file` (a pattern) in the test's temp dir, stops any session,
/// removes what an earlier run left there and returns the resolved path.
std::string fresh_output(Config& cfg, const char* file) {
  cfg.write_at_stop = true;
  cfg.output = std::string(::testing::TempDir()) + "/" + file;
  (void)stop();
  std::string path = resolved_output_path(cfg);
  std::remove(path.c_str());
  return path;
}

TEST(Api, MacrosInTheSameBlockAndDeclarationsThroughLine) {
  int total = 0;
  Profile p = testing::profile_of(testing::quiet_config(), [&] {
    GNNPROF_STAGE("first");
    GNNPROF_STAGE("second");  // same block: unique names
    GNNPROF_LINE(int y = twice(21));
    GNNPROF_LINE(total += y);  GNNPROF_LINE(total += 1);  // two on one line
    instrumented_function();
  });
  EXPECT_EQ(total, 43);
  ASSERT_NE(testing::find_stage(p, "first"), nullptr);
  const StageStats* second = testing::find_stage(p, "second");
  ASSERT_NE(second, nullptr);
  // "second" opened after "first" in the same scope, so it nests inside it.
  EXPECT_NEAR(static_cast<double>(testing::find_stage(p, "first")->self_ns),
              static_cast<double>(testing::find_stage(p, "first")->total_ns - second->total_ns), 2.0);
  const StageStats* fn = testing::find_stage(p, "instrumented_function");
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn->category, "function");
  // Two GNNPROF_LINEs on one source line share its row, as in line_profiler.
  ASSERT_EQ(p.lines.size(), 2u);
  EXPECT_EQ(p.lines[0].code, "int y = twice(21)");
  EXPECT_EQ(p.lines[0].function, "operator()");
  EXPECT_NE(p.lines[0].file.find("api_test.cpp"), std::string::npos);
  EXPECT_EQ(p.lines[1].hits, 2u);
}

TEST(Api, CAbiRecordsStagesStepsAndCounters) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    gnnprof_site_t fwd = gnnprof_stage_site("forward", nullptr);
    gnnprof_site_t q = gnnprof_counter_site("queue");
    EXPECT_EQ(fwd, gnnprof_stage_site("forward", nullptr));  // interned
    for (int i = 0; i < 4; ++i) {
      gnnprof_step();
      EXPECT_EQ(gnnprof_stage_begin(fwd), 1);
      gnnprof_transfer(100, GNNPROF_H2D, GNNPROF_PINNED, GNNPROF_ASYNC, 0);
      gnnprof_stage_end();
      gnnprof_counter(q, i);
    }
    gnnprof_step_end();
    gnnprof_stage_end();  // unbalanced: ignored
    EXPECT_EQ(gnnprof_stage_begin(0), 1);  // site 0: a transparent range, still balanced
    gnnprof_stage_end();
    gnnprof_set_thread_name("trainer");
  });
  EXPECT_EQ(testing::find_stage(p, "forward")->hits, 4u);
  EXPECT_EQ(p.iterations.size(), 4u);
  ASSERT_EQ(p.transfers.size(), 1u);
  EXPECT_EQ(p.transfers[0].stage, "forward");
  EXPECT_EQ(p.counters.at(0).samples, 4u);
  EXPECT_EQ(p.threads.at(p.main_thread).name, "trainer");
}

// A thread named before it records gets the name when it does; one that only names itself
// takes no row (a Python package names every thread it sees start).
TEST(Api, AThreadNamedBeforeItRecordsKeepsTheNameAndAnIdleOneTakesNoRow) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    std::thread([] {
      gnnprof_set_thread_name("loader");
      gnnprof_stage_begin(gnnprof_stage_site("sample", nullptr));
      gnnprof_stage_end();
    }).join();
    std::thread([] { gnnprof_set_thread_name("idle"); }).join();
  });
  std::vector<std::string> names;
  for (const auto& t : p.threads) names.push_back(t.name);
  EXPECT_NE(std::find(names.begin(), names.end(), "loader"), names.end());
  EXPECT_EQ(std::find(names.begin(), names.end(), "idle"), names.end());
}

// GPU kernels as the CUPTI backend records them: a range per kernel on its stream's lane (the
// stage table's "gpu: <stage>") and the kernel statistics, grouped by kernel, stage and op.
TEST(Api, LaneKernelsBecomeAKernelTableGroupedByKernelStageAndOp) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    const gnnprof_lane_t lane = gnnprof_lane("GPU0 stream 7");
    const gnnprof_site_t sgemm = gnnprof_stage_site("sgemm", "kernel");
    const gnnprof_site_t relu = gnnprof_stage_site("relu_kernel", "kernel");
    const gnnprof_site_t fwd = gnnprof_stage_site("forward", nullptr);
    const gnnprof_site_t bwd = gnnprof_stage_site("backward", nullptr);
    const gnnprof_site_t mm = gnnprof_stage_site("aten::mm", "op");
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const std::int64_t t = static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
    gnnprof_lane_kernel(lane, sgemm, fwd, mm, t, t + 3000);
    gnnprof_lane_kernel(lane, sgemm, fwd, mm, t + 5000, t + 6000);
    gnnprof_lane_kernel(lane, sgemm, bwd, mm, t + 7000, t + 7500);
    gnnprof_lane_kernel(lane, relu, fwd, 0, t + 8000, t + 8100);
    gnnprof_lane_kernel(lane, 0, fwd, mm, t, t + 1);          // no kernel site: ignored
    gnnprof_lane_kernel(lane, relu, fwd, 0, t + 10, t + 5);   // ends before it begins: ignored
  });
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.kernels[0].name, "sgemm");  // heaviest first
  EXPECT_EQ(p.kernels[0].stage, "forward");
  EXPECT_EQ(p.kernels[0].op, "aten::mm");
  EXPECT_EQ(p.kernels[0].count, 2u);
  EXPECT_EQ(p.kernels[0].total_ns, 4000);
  EXPECT_EQ(p.kernels[0].min_ns, 1000);
  EXPECT_EQ(p.kernels[0].max_ns, 3000);
  EXPECT_EQ(p.kernels[1].stage, "backward");
  EXPECT_EQ(p.kernels[1].total_ns, 500);
  EXPECT_EQ(p.kernels[2].name, "relu_kernel");
  EXPECT_EQ(p.kernels[2].op, "");
  // Statistics only: kernels add no stage of their own.
  EXPECT_EQ(testing::find_stage(p, "sgemm"), nullptr);
}

TEST(Api, StopWritesTheProfileToTheConfiguredPathWithPidPattern) {
  Config cfg = testing::quiet_config();
  const std::string path = fresh_output(cfg, "gnnprof_api_%p.json");
  ASSERT_TRUE(start(cfg));
  { GNNPROF_STAGE("written"); }
  ASSERT_TRUE(stop());
  EXPECT_NE(path.find(std::to_string(::getpid())), std::string::npos);
  auto p = read_profile_file(path);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_NE(testing::find_stage(*p, "written"), nullptr);
  EXPECT_EQ(p->run.pid, ::getpid());
}

TEST(Api, UnwritableOutputIsAnErrorNotACrash) {
  Config cfg = testing::quiet_config();
  cfg.write_at_stop = true;
  cfg.output = "/nonexistent-dir/p.json";
  (void)stop();
  ASSERT_TRUE(start(cfg));
  { GNNPROF_STAGE("lost"); }
  ::testing::internal::CaptureStderr();
  Status st = stop();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(st);
  EXPECT_EQ(err, "gnnprof: warning: cannot write /nonexistent-dir/p.json: No such file or directory\n");
}

// The preload's threadless mode: no drainer thread, the recording thread drains and flushes
// through gnnprof_poll() at its quiet points.
TEST(Api, PollDrainsAndFlushesOnTheCallingThreadUntilADrainerRuns) {
  Config cfg = testing::quiet_config();
  cfg.buffer_events = 1024;  // for a thread that records for the first time
  cfg.drain_interval_ms = 10000;  // only the ring's fill or the flush make the polls below drain
  cfg.flush_interval_ms = 300;
  const std::string path = fresh_output(cfg, "gnnprof_poll_%p.json");
  ASSERT_TRUE(start(cfg));
  { GNNPROF_STAGE("polled"); }
  EXPECT_EQ(gnnprof_poll(1), 0) << "nothing due yet: no drain, no flush";
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_EQ(gnnprof_poll(0), 0) << "a flush is due, but this caller allows none";
  EXPECT_EQ(gnnprof_poll(1), 1);
  auto flushed = read_profile_file(path);
  ASSERT_TRUE(flushed) << "the periodic flush, written from the polling thread: " << flushed.status().message();
  EXPECT_NE(testing::find_stage(*flushed, "polled"), nullptr);
  // A filling ring is drained at the next poll, period or not: 10 000 stages, one event each,
  // overflow this thread's ring (1024 or 4096 events) unless the polls drain it.
  for (int i = 0; i < 100; ++i) {
    GNNPROF_STAGE("filler");
  }
  EXPECT_EQ(gnnprof_poll(0), 0) << "a few events and no period due: nothing to do";
  int drains = 0;
  for (int i = 100; i < 10000; ++i) {
    { GNNPROF_STAGE("filler"); }
    if (i % 50 == 0) drains += gnnprof_poll(0);
  }
  EXPECT_GE(drains, 2);
  // Once the drainer thread runs, poll() leaves everything to it.
  EXPECT_EQ(gnnprof_start_drainer(), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_EQ(gnnprof_poll(1), 0);
  ASSERT_TRUE(stop());
  auto p = read_profile_file(path);
  ASSERT_TRUE(p);
  ASSERT_NE(testing::find_stage(*p, "filler"), nullptr);
  EXPECT_EQ(testing::find_stage(*p, "filler")->hits, 10000u);
  EXPECT_EQ(p->dropped_events, 0u) << "the polls drained the ring before it filled";
  // The drain passes' host samples (/proc/self/statm, getrusage) and thread count (/proc/self/stat).
  ASSERT_FALSE(p->host_samples.empty());
  EXPECT_GT(p->host_samples.back().rss_bytes, 0);
  // The binary and its libraries are file-backed pages of every process.
  EXPECT_GT(p->host_samples.back().rss_file_bytes, 0);
  EXPECT_LT(p->host_samples.back().rss_file_bytes, p->host_samples.back().rss_bytes);
  EXPECT_GT(p->host_samples.back().cpu_ns, 0);
  // The CPUs' busy time, every process's (/proc/stat, in clock ticks): at least this one's, within a tick per sample.
  EXPECT_GT(p->host_samples.back().machine_busy_ns, 0);
  EXPECT_GE(p->host_samples.back().machine_busy_ns - p->host_samples.front().machine_busy_ns + 20000000 * static_cast<std::int64_t>(p->environment.cpus),
            p->host_samples.back().cpu_ns - p->host_samples.front().cpu_ns);
  EXPECT_GE(p->environment.max_threads, 1) << "the thread count, from /proc/self/stat";
  EXPECT_EQ(gnnprof_poll(1), 0) << "no session";
  EXPECT_EQ(gnnprof_start_drainer(), -1) << "no session";
}

// With the drainer thread, a thread that fills its ring faster than the drainer's period (a
// traced tight Python loop: tens of millions of line events a second) wakes the drainer, and
// drains its ring itself past half full, instead of dropping events.
TEST(Api, PollHelpsADrainerThatFallsBehind) {
  Config cfg = testing::quiet_config();
  cfg.buffer_events = 1024;
  cfg.drain_interval_ms = 60000;  // the drainer's own period never comes in this test
  cfg.drainer_thread = true;
  const std::string path = fresh_output(cfg, "gnnprof_poll_helps_%p.json");
  ASSERT_TRUE(start(cfg));
  for (int i = 0; i < 20000; ++i) {
    { GNNPROF_STAGE("tight"); }
    if (i % 100 == 99) (void)gnnprof_poll(0);
  }
  ASSERT_TRUE(stop());
  auto p = read_profile_file(path);
  ASSERT_TRUE(p) << p.status().message();
  ASSERT_NE(testing::find_stage(*p, "tight"), nullptr);
  EXPECT_EQ(testing::find_stage(*p, "tight")->hits, 20000u);
  EXPECT_EQ(p->dropped_events, 0u);
}

// A host without quiet points (no iteration marks: an inference loop, an NVTX-only program)
// must still be drained and flushed, or a SIGKILL would leave nothing: after 2 s (twice the
// flush interval, at least 2 s) without a quiet point, its other polls count as quiet.
TEST(Api, PollFlushesAHostThatNeverReachesAQuietPoint) {
  Config cfg = testing::quiet_config();
  cfg.buffer_events = 1024;
  cfg.drain_interval_ms = 10;
  cfg.flush_interval_ms = 300;
  const std::string path = fresh_output(cfg, "gnnprof_markless_%p.json");
  ASSERT_TRUE(start(cfg));
  { GNNPROF_STAGE("no marks"); }
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  EXPECT_EQ(gnnprof_poll(0), 0) << "past the flush interval, but not 2 s without a quiet point";
  EXPECT_FALSE(std::ifstream(path).good()) << "nothing flushed yet";
  std::this_thread::sleep_for(std::chrono::milliseconds(1400));
  EXPECT_EQ(gnnprof_poll(0), 1) << "2.1 s without a quiet point: this poll counts as one";
  auto flushed = read_profile_file(path);
  ASSERT_TRUE(flushed) << flushed.status().message();
  EXPECT_NE(testing::find_stage(*flushed, "no marks"), nullptr);
  EXPECT_EQ(gnnprof_poll(0), 0) << "the next flush is paced as usual";
  // A quiet point resets the clock: the next non-quiet polls are ordinary again.
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  (void)gnnprof_poll(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_EQ(gnnprof_poll(0), 0) << "a flush is due, but a quiet point was seen 350 ms ago";
  ASSERT_TRUE(stop());
}

// The preload's SIGTERM flush in threadless mode: a child made by _Fork() (no atfork handlers,
// as in a signal handler) writes the parent's profile under the parent's pid. Not in the TSan
// job: _Fork bypasses ThreadSanitizer's fork interceptor.
TEST(ForkFlush, ChildOfForkWritesTheParentsProfile) {
  Config cfg = testing::quiet_config();
  const std::string path = fresh_output(cfg, "gnnprof_forkflush_%p.json");
  ASSERT_TRUE(start(cfg));
  { GNNPROF_STAGE("before fork"); }
  const long parent = static_cast<long>(::getpid());
  const pid_t child = _Fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Another process's session is refused; this one's is written.
    const bool ok = gnnprof_flush_in_fork_child(parent + 1) == -1 && gnnprof_flush_in_fork_child(parent) == 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  auto p = read_profile_file(path);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_NE(testing::find_stage(*p, "before fork"), nullptr);
  EXPECT_EQ(p->run.pid, ::getpid());
  EXPECT_EQ(gnnprof_flush_in_fork_child(parent), -1) << "the parent itself is not a forked child";
  (void)stop();
}

// A fork child of a running session (a DataLoader worker, through the preload) starts a session
// of its own with the parent's configuration, written under its own pid; a stage the parent had
// open on the forking thread stays the parent's.
TEST(ForkChild, StartsASessionOfItsOwnWrittenUnderItsPid) {
  Config cfg = testing::quiet_config();
  const std::string path = fresh_output(cfg, "gnnprof_forkchild_%p.json");
  ASSERT_TRUE(start(cfg));
  EXPECT_EQ(gnnprof_start_in_fork_child(0), -1) << "the session's own process";
  const gnnprof_site_t open = gnnprof_stage_site("open at fork", nullptr);
  gnnprof_stage_begin(open);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    bool ok = !is_running() && gnnprof_start_in_fork_child(0) == 0 && is_running();
    ok = ok && gnnprof_start_in_fork_child(0) == -1;  // running already
    { GNNPROF_STAGE("in child"); }
    ok = ok && stop();
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  gnnprof_stage_end();
  ASSERT_TRUE(stop());
  std::string child_path = path;
  const std::string me = std::to_string(::getpid());
  child_path.replace(child_path.rfind(me), me.size(), std::to_string(child));
  auto c = read_profile_file(child_path);
  ASSERT_TRUE(c) << c.status().message();
  EXPECT_EQ(c->run.pid, child);
  EXPECT_EQ(c->run.parent_pid, 0) << "a program of its own, not a worker of its parent";
  const StageStats* in_child = testing::find_stage(*c, "in child");
  ASSERT_NE(in_child, nullptr);
  for (const auto& e : c->stage_edges) EXPECT_NE(e.child, "in child") << "nested in " << e.parent;
  EXPECT_EQ(testing::find_stage(*c, "open at fork"), nullptr);
  auto p = read_profile_file(path);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_NE(testing::find_stage(*p, "open at fork"), nullptr);
  EXPECT_EQ(testing::find_stage(*p, "in child"), nullptr);
  std::remove(child_path.c_str());
  // The child of a stopped session records nothing.
  const pid_t after_stop = ::fork();
  ASSERT_GE(after_stop, 0);
  if (after_stop == 0) _exit(gnnprof_start_in_fork_child(0) == -1 && !is_running() ? 0 : 1);
  ASSERT_EQ(::waitpid(after_stop, &status, 0), after_stop);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// A spawned process becoming a DataLoader worker: its session so far is dropped, the worker's
// starts, naming the loop; a worker past the run's first N drops its session, writing nothing.
TEST(Worker, ASpawnedProcessStartsItsWorkerSessionOverAndNamesTheLoop) {
  for (const bool drainer : {false, true}) {
  SCOPED_TRACE(drainer ? "with the drainer thread" : "threadless");
  Config cfg = testing::quiet_config(drainer);
  cfg.drain_interval_ms = 1;
  const std::string path = fresh_output(cfg, "gnnprof_worker_%p.json");
  EXPECT_EQ(gnnprof_start_worker(4242, 0), -1) << "no session";
  EXPECT_EQ(gnnprof_set_loader("x"), -1) << "no session";
  ASSERT_TRUE(start(cfg));
  { GNNPROF_STAGE("before the worker loop"); }
  const gnnprof_site_t open = gnnprof_stage_site("open at the restart", nullptr);
  gnnprof_stage_begin(open);
  EXPECT_EQ(gnnprof_start_in_fork_child(0), -1) << "not a fork child";
  EXPECT_EQ(gnnprof_set_loader("TensorDataset at 0x10, batch_size 8, 2 workers"), 0);  // the spawned session's
  ASSERT_EQ(gnnprof_start_worker(4242, drainer ? 1 : 0), 0);
  EXPECT_TRUE(is_running());
  EXPECT_EQ(gnnprof_set_loader(nullptr), -1);
  EXPECT_EQ(gnnprof_set_loader("TensorDataset at 0x20, batch_size 8, 2 workers"), 0);
  gnnprof_stage_end();  // opened before: not the worker's
  { GNNPROF_STAGE("batch"); }
  ASSERT_TRUE(stop());
  auto p = read_profile_file(path);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->run.parent_pid, 4242);
  EXPECT_EQ(p->run.loader, "TensorDataset at 0x20, batch_size 8, 2 workers");
  EXPECT_NE(testing::find_stage(*p, "batch"), nullptr);
  EXPECT_EQ(testing::find_stage(*p, "before the worker loop"), nullptr);
  EXPECT_EQ(testing::find_stage(*p, "open at the restart"), nullptr);
  std::remove(path.c_str());

  ASSERT_TRUE(start(cfg));
  { GNNPROF_STAGE("discarded"); }
  ASSERT_EQ(gnnprof_flush(), 0);
  ASSERT_TRUE(std::ifstream(path).good());
  EXPECT_EQ(gnnprof_discard(), 0);
  EXPECT_FALSE(is_running());
  EXPECT_EQ(gnnprof_start_worker(4242, 0), -1) << "nothing to restart";
  EXPECT_TRUE(stop());
  EXPECT_FALSE(std::ifstream(path).good()) << "a discarded session writes nothing";
  }
}

// A rank learned after start (torch.multiprocessing.spawn's ranks have no RANK variable): the
// run block and the file name follow, and the file a periodic flush wrote before moves there.
TEST(Worker, ARankLearnedAfterStartNamesTheProfileAndItsFile) {
  if (std::getenv("RANK") != nullptr || std::getenv("LOCAL_RANK") != nullptr) GTEST_SKIP() << "RANK set";
  Config cfg = testing::quiet_config();
  const std::string rankless = fresh_output(cfg, "gnnprof_setrank_%R%p.json");
  const std::string me = std::to_string(::getpid());
  std::string ranked = rankless;
  ranked.replace(ranked.rfind(me), me.size(), "rank3." + me);
  std::remove(ranked.c_str());
  EXPECT_EQ(gnnprof_set_rank(3, -1, 4), -1) << "no session";
  ASSERT_TRUE(start(cfg));
  { GNNPROF_STAGE("before init_process_group"); }
  ASSERT_EQ(gnnprof_flush(), 0);
  ASSERT_TRUE(std::ifstream(rankless).good());
  ASSERT_EQ(gnnprof_set_rank(3, -1, 4), 0);
  EXPECT_FALSE(std::ifstream(rankless).good()) << "the rankless file is moved";
  EXPECT_TRUE(std::ifstream(ranked).good()) << "a complete profile stays on disk";
  ASSERT_TRUE(stop());
  auto p = read_profile_file(ranked);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->run.rank, 3);
  EXPECT_EQ(p->run.world_size, 4);
  EXPECT_FALSE(p->run.local_rank.has_value());
  EXPECT_NE(testing::find_stage(*p, "before init_process_group"), nullptr) << "the session goes on";
  std::remove(ranked.c_str());
}

TEST(Api, IterationsCountANestedStageOfTheSameCategoryOnce) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    for (int i = 0; i < 3; ++i) {
      GNNPROF_STEP();
      {
        GNNPROF_STAGE_CAT("load", "data");  // a prefetcher's wrapper around the loader's own stage
        GNNPROF_STAGE("sample");            // data too
        testing::spin_ns(200000);
      }
      {
        GNNPROF_STAGE("forward");
        GNNPROF_STAGE_CAT("gather", "data");  // data inside compute counts as data
        testing::spin_ns(100000);
      }
    }
    GNNPROF_STEP_END();
  });
  ASSERT_EQ(p.iterations.size(), 3u);
  for (const auto& it : p.iterations) {
    ASSERT_EQ(it.categories.count("data"), 1u);
    const std::int64_t load = it.stages.at("load"), gather = it.stages.at("gather");
    EXPECT_EQ(it.categories.at("data"), load + gather);  // not load + sample + gather
    EXPECT_EQ(it.categories.at("compute"), it.stages.at("forward"));
    EXPECT_GE(it.stages.at("sample"), 200000);
  }
}

namespace {
void recurse(int depth) {
  GNNPROF_STAGE("walk");  // one site: every level is the same stage
  gnnprof::testing::spin_ns(100000);
  if (depth > 1) recurse(depth - 1);
}
}  // namespace

TEST(Api, AStageInsideOneOfItsOwnCountsOnceInTotalsAndIterations) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    for (int i = 0; i < 3; ++i) {
      GNNPROF_STEP();
      GNNPROF_STAGE("outer");
      recurse(3);  // walk > walk > walk
    }
    GNNPROF_STEP_END();
  });
  const StageStats* walk = testing::find_stage(p, "walk");
  const StageStats* outer = testing::find_stage(p, "outer");
  ASSERT_NE(walk, nullptr);
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(walk->hits, 9u);                   // every level is a hit
  EXPECT_LE(walk->total_ns, outer->total_ns);  // the outermost levels only: not 3 + 2 + 1 spins
  EXPECT_GE(walk->total_ns, 3 * 300000);
  EXPECT_GE(walk->self_ns, 3 * 300000);
  EXPECT_GE(walk->mean_ns, 200000);  // each hit's own duration: (300 + 200 + 100) / 3 us
  std::int64_t by_thread = 0;
  for (const auto& t : walk->by_thread) by_thread += t.total_ns;
  EXPECT_EQ(by_thread, walk->total_ns);
  ASSERT_EQ(p.iterations.size(), 3u);
  std::int64_t iterations = 0;
  for (const auto& it : p.iterations) {
    EXPECT_LE(it.stages.at("walk"), it.stages.at("outer"));
    EXPECT_LE(it.categories.at("user"), it.stages.at("outer"));
    iterations += it.stages.at("walk");
  }
  EXPECT_EQ(iterations, walk->total_ns);
}

TEST(Api, ConfigFromEnvironment) {
  ::setenv("GNNPROF_ENABLED", "0", 1);
  ::setenv("GNNPROF_OUTPUT", "/tmp/x-%p.json", 1);
  ::setenv("GNNPROF_BUFFER_EVENTS", "4096", 1);
  ::setenv("GNNPROF_FLUSH_INTERVAL_MS", "250", 1);
  ::setenv("GNNPROF_DRAIN_INTERVAL_MS", "40", 1);
  Config c = Config::from_env();
  EXPECT_FALSE(c.enabled);
  EXPECT_EQ(c.output, "/tmp/x-%p.json");
  EXPECT_EQ(c.buffer_events, 4096u);
  EXPECT_EQ(c.flush_interval_ms, 250u);
  EXPECT_EQ(c.drain_interval_ms, 40u);
  ::unsetenv("GNNPROF_ENABLED");
  ::unsetenv("GNNPROF_OUTPUT");
  ::unsetenv("GNNPROF_BUFFER_EVENTS");
  ::unsetenv("GNNPROF_FLUSH_INTERVAL_MS");
  ::unsetenv("GNNPROF_DRAIN_INTERVAL_MS");
  const Config d = Config::from_env();
  EXPECT_TRUE(d.enabled);
  EXPECT_EQ(d.drain_interval_ms, Config{}.drain_interval_ms);
}

}  // namespace
}  // namespace gnnprof
