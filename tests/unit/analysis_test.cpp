// Analysis and diagnostics: each rule on a profile that triggers it and on one that must not.
#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/loader_fetch.h"

#include "gnnprof/gnnprof_c.h"
#include "gnnprof/profile_io.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/report.h"
#include "gnnprof/reports/text_reporter.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace gnnprof::reports {
namespace {

constexpr std::int64_t kMs = 1000000;

StageStats stage(const std::string& name, const std::string& category) {
  StageStats s;
  s.name = name;
  s.category = category;
  return s;
}

/// 20 iterations of 100 ms: sample 15 + materialize 15 (data), forward 40 + backward 20
/// (compute), sync 1; the first two iterations are 300 ms (warm-up).
Profile loop_profile(bool prefetched) {
  Profile p;
  p.stages = {stage("sample", "data"), stage("materialize", "data"), stage("loader_wait", "data"),
              stage("forward", "compute"), stage("backward", "compute"), stage("sync", "sync")};
  for (int i = 0; i < 20; ++i) {
    IterationStats it;
    it.index = static_cast<std::uint64_t>(i);
    it.wall_ns = (i < 2 ? 300 : 100) * kMs;
    auto& data = prefetched ? it.other_threads : it.stages;
    data["sample"] = 15 * kMs;
    data["materialize"] = 15 * kMs;
    if (prefetched) it.stages["loader_wait"] = kMs / 10;
    it.stages["forward"] = 40 * kMs;
    it.stages["backward"] = 20 * kMs;
    it.stages["sync"] = 1 * kMs;
    p.iterations.push_back(it);
  }
  p.environment.cpus = 2;
  p.environment.blas = "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3";
  p.threads = {ThreadInfo{0, 1, "", 0, 0}};
  return p;
}

bool has(const std::vector<Diagnostic>& ds, const std::string& id) {
  return std::any_of(ds.begin(), ds.end(), [&](const Diagnostic& d) { return d.id == id; });
}
std::vector<Diagnostic> run(const Profile& p) { return diagnose(p, analyze(p, {})); }

TEST(Analysis, WarmupExposedHiddenAndWhatIf) {
  Analysis a = analyze(loop_profile(false), {});
  EXPECT_TRUE(a.skip_detected);
  EXPECT_EQ(a.skipped, 2u);
  EXPECT_EQ(a.iterations_used, 18u);
  EXPECT_EQ(a.iteration_median_ns, 100 * kMs);
  EXPECT_EQ(a.exposed_data_ns, 30 * kMs);
  EXPECT_EQ(a.hidden_data_ns, 0);
  EXPECT_EQ(a.compute_ns, 60 * kMs);
  EXPECT_EQ(a.rest_ns, 10 * kMs);
  EXPECT_DOUBLE_EQ(a.exposed_data_share, 0.3);
  EXPECT_EQ(a.whatif_predicted_ns, 70 * kMs);  // max(30, 60) + 10
  EXPECT_NEAR(a.whatif_speedup, 100.0 / 70.0, 1e-9);
  ASSERT_FALSE(a.loop_stages.empty());
  EXPECT_EQ(a.loop_stages[0].name, "forward");
  EXPECT_DOUBLE_EQ(a.loop_stages[0].share, 0.4);
  EXPECT_FALSE(a.device_note.empty());

  Analysis b = analyze(loop_profile(true), AnalysisOptions{0});
  EXPECT_FALSE(b.skip_detected);
  EXPECT_EQ(b.skipped, 0u);
  EXPECT_EQ(b.exposed_data_ns, kMs / 10);  // only loader_wait
  EXPECT_EQ(b.hidden_data_ns, 30 * kMs);
}

TEST(Analysis, WhatIfWithinTheMachinesLimits) {
  // The loop of loop_profile keeps 97 % of 2 CPUs busy while its iterations run: the same CPU
  // work on 2 CPUs cannot take less than 97 ms, so overlap buys almost nothing.
  Profile p = loop_profile(false);
  std::int64_t t = 0;
  for (auto& it : p.iterations) {
    it.begin_ns = t;
    t += it.wall_ns;
  }
  for (std::int64_t ts = 0; ts <= t; ts += 50 * kMs) p.host_samples.push_back(HostSample{ts, 0, ts * 2 * 97 / 100});
  Analysis a = analyze(p, {});
  EXPECT_EQ(a.whatif_predicted_ns, 70 * kMs);
  ASSERT_TRUE(a.whatif_busy);
  EXPECT_NEAR(*a.whatif_busy, 0.97, 1e-6);
  EXPECT_NEAR(static_cast<double>(a.whatif_expected_ns), 97.0 * kMs, 1.0 * kMs);  // max(30, 60, 97 - 10) + 10
  EXPECT_FALSE(a.whatif_pays);
  const std::string e = whatif_expectation(a);
  EXPECT_EQ(e.rfind("Prefetching will not pay here: expected 97.0 ms (1.03x)", 0), 0u) << e;
  EXPECT_NE(e.find("97% of the 2 CPUs busy"), std::string::npos) << e;

  // Half as busy: the overlap bound holds, and it pays.
  for (auto& hs : p.host_samples) hs.cpu_ns = hs.ts_ns;  // 50 % of 2 CPUs
  Analysis half = analyze(p, {});
  EXPECT_EQ(half.whatif_expected_ns, 70 * kMs);
  EXPECT_TRUE(half.whatif_pays);
  EXPECT_EQ(whatif_expectation(half), "Within this machine's limits: 70.0 ms (1.43x).");

  // Compute-bound: data is 1 % of the iteration.
  Profile cb = loop_profile(false);
  for (auto& it : cb.iterations) {
    it.stages["sample"] = kMs / 2;
    it.stages["materialize"] = kMs / 2;
  }
  Analysis c = analyze(cb, {});
  EXPECT_FALSE(c.whatif_pays);
  EXPECT_NE(whatif_expectation(c).find("compute-bound: exposed data time is 1.0% of the iteration"), std::string::npos);

  // A Python host whose data stages are mostly their own Python (outside torch ops): the GIL.
  Profile py = loop_profile(false);
  py.run.command = {"/usr/bin/python3", "train.py"};
  py.stages.push_back(stage("aten::index", "op"));
  for (auto& s : py.stages)  // no prefetcher: no loader_wait
    if (s.category == "data" && s.name != "loader_wait") s.by_thread = {StageThreadStats{0, 10, 1000, 800}};  // 80 % self
  Analysis g = analyze(py, {});
  ASSERT_TRUE(g.whatif_gil_share);
  EXPECT_NEAR(*g.whatif_gil_share, 0.8, 1e-9);
  // max((1 - 0.8) x 30, 60) + 0.8 x 30 + 10 = 94 ms
  EXPECT_NEAR(static_cast<double>(g.whatif_expected_ns), 94.0 * kMs, 0.01 * kMs);
  EXPECT_NE(whatif_expectation(g).find("80% of the data time is the loader's own Python"), std::string::npos);
  // Its time off the CPU (a time.sleep, blocking reads) holds no GIL: the observer's counter,
  // left out of g; the wait's is not the loader's Python anyway.
  Profile io = py;
  CounterStats off;
  off.name = std::string(GNNPROF_OFF_CPU_COUNTER_PREFIX) + "sample";
  off.samples = 10;
  off.mean = 100;  // 1000 ns off the CPU, of the data stages' 1600 ns self: 600 ns of Python left
  io.counters.push_back(off);
  CounterStats wait = off;
  wait.name = std::string(GNNPROF_OFF_CPU_COUNTER_PREFIX) + "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  io.counters.push_back(wait);
  Analysis gi = analyze(io, {});
  ASSERT_TRUE(gi.whatif_gil_share);
  EXPECT_NEAR(*gi.whatif_gil_share, 0.3, 1e-9);  // (1600 - 1000) / 2000
  EXPECT_EQ(gi.data_off_cpu_ns, 1000);
  EXPECT_NE(whatif_expectation(gi).find("(its 1.00 us off the CPU over the run, sleeping or blocked in I/O, left out)"), std::string::npos)
      << whatif_expectation(gi);

  // A DataLoader with worker processes: the loop's data stage is a wait on them, not its Python.
  Profile mp = py;
  for (auto& s : mp.stages)
    if (s.name == "sample") s.name = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  for (auto& it : mp.iterations) it.stages["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"] = it.stages["sample"];
  for (auto& it : mp.iterations) it.stages.erase("sample");
  Analysis w = analyze(mp, {});
  ASSERT_TRUE(w.whatif_gil_share);
  EXPECT_NEAR(*w.whatif_gil_share, 0.4, 1e-9);  // materialize's 800 of the 2000 ns; the wait's self is not Python
}

/// loop_profile(false) whose 15 ms "sample" stage is the wait `wait` instead, `wait_ms` long.
Profile waiting_loop_profile(const std::string& wait, std::int64_t wait_ms) {
  Profile p = loop_profile(false);
  for (auto& s : p.stages)
    if (s.name == "sample") s.name = wait;
  for (auto& it : p.iterations) {
    it.stages.erase("sample");
    it.stages[wait] = wait_ms * kMs;
    it.wall_ns += (wait_ms - 15) * kMs;
  }
  return p;
}

/// The loop waiting for a DataLoader's worker processes (their shortfall), `wait_ms` a batch.
Profile worker_loop_profile(std::int64_t wait_ms) {
  return waiting_loop_profile("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", wait_ms);
}

TEST(Analysis, AWaitForDataLoaderWorkersStaysOnTheCriticalPath) {
  EXPECT_TRUE(is_worker_wait("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"));
  EXPECT_FALSE(is_worker_wait("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"));
  EXPECT_FALSE(is_worker_wait("loader_wait"));

  // 100 ms: wait 15 + materialize 15 (data), compute 60, rest 10. A prefetcher overlaps the
  // materialize with compute; the wait stays: max(15, 60) + 15 + 10 = 85 ms.
  Analysis a = analyze(worker_loop_profile(15), {});
  EXPECT_EQ(a.exposed_data_ns, 30 * kMs);
  EXPECT_EQ(a.worker_wait_ns, 15 * kMs);
  EXPECT_EQ(a.whatif_predicted_ns, 85 * kMs);
  EXPECT_EQ(whatif_formula(a), "max(data - worker wait, compute) + worker wait 15.0 ms + rest");
  EXPECT_NE(whatif_expectation(a).find("15.0 ms of the data time per iteration is the loop waiting for its DataLoader's "
                                       "worker processes"),
            std::string::npos)
      << whatif_expectation(a);
  // Without workers the formula and prediction are as before.
  Analysis b = analyze(loop_profile(false), {});
  EXPECT_EQ(b.worker_wait_ns, 0);
  EXPECT_EQ(whatif_formula(b), "max(data, compute) + rest");
}

TEST(Diagnostics, LoaderBound) {
  // The wait is 45 of 130 ms (35 %): loader-bound; the rest of the data (15 ms, 12 %) is not
  // exposed-data-time's.
  auto ds = run(worker_loop_profile(45));
  ASSERT_TRUE(has(ds, "loader-bound"));
  EXPECT_FALSE(has(ds, "exposed-data-time"));
  const auto& d = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(d.evidence.at("worker_wait_ns"), 45.0 * kMs);
  EXPECT_DOUBLE_EQ(d.evidence.at("iteration_ns"), 130.0 * kMs);
  EXPECT_NE(d.message.find("Raise num_workers (this machine has 2 CPUs)"), std::string::npos) << d.message;
  EXPECT_DOUBLE_EQ(d.evidence.at("workers"), 0.0);  // not known without the Python package's counter
  // The package's counter gives the worker count.
  Profile counted = worker_loop_profile(45);
  counted.counters.push_back(CounterStats{"DataLoader workers", 2, 2, 2, 2, 2});
  auto cs = run(counted);
  const auto& e = *std::find_if(cs.begin(), cs.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
  EXPECT_NE(e.message.find("from its 2 DataLoader worker processes"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("Make the per-sample work (__getitem__, collate_fn) cheaper: more workers than their 2 would "
                           "share this machine's 2 CPUs"),
            std::string::npos)
      << e.message;
  EXPECT_DOUBLE_EQ(e.evidence.at("workers"), 2.0);
  counted.environment.cpus = 8;
  const auto more = run(counted);
  const auto& f = *std::find_if(more.begin(), more.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
  EXPECT_NE(f.message.find("Raise num_workers (2 now; this machine has 8 CPUs)"), std::string::npos) << f.message;
  // A short wait (15 of 100 ms) is not; nor is a loop without workers.
  EXPECT_FALSE(has(run(worker_loop_profile(15)), "loader-bound"));
  EXPECT_FALSE(has(run(loop_profile(false)), "loader-bound"));
  // The loop's own data beside a wait still fires exposed-data-time when it is over 20 %.
  Profile both = worker_loop_profile(45);
  for (auto& it : both.iterations) {
    it.stages["materialize"] = 40 * kMs;
    it.wall_ns += 25 * kMs;
  }
  EXPECT_TRUE(has(run(both), "exposed-data-time"));
  EXPECT_TRUE(has(run(both), "loader-bound"));
}

/// A line of train.py run 20 times for `ms` each.
LineStats train_line(const char* function, std::uint32_t line, const char* code, std::int64_t ms) {
  LineStats l;
  l.file = "/w/train.py";
  l.function = function;
  l.line = line;
  l.code = code;
  l.hits = 20;
  l.total_ns = 20 * ms * kMs;
  return l;
}

/// The loop waiting for the program's own producer ("producer wait", the Python package's),
/// `wait_ms` a batch; the loop's line that waits, and a producer function traced on a thread
/// pool's thread.
Profile producer_loop_profile(std::int64_t wait_ms) {
  Profile p = waiting_loop_profile(kProducerWaitStage, wait_ms);
  p.run.command = {"/usr/bin/python3", "train.py"};
  LineStats wait = train_line("main", 41, "x, y = futures[step].result()", wait_ms);
  wait.stages[kProducerWaitStage] = wait.total_ns;
  p.lines.push_back(wait);
  for (auto [line, code, ms] : {std::tuple{19u, "time.sleep(0.05)", 50}, std::tuple{20u, "x = feats[nodes]", 30}}) {
    LineStats l = train_line("sample", line, code, ms);
    l.off_loop_ns = l.total_ns;
    p.lines.push_back(l);
  }
  p.threads.push_back(ThreadInfo{1, 2, "ThreadPoolExecutor-0_0", 0, 0});
  return p;
}

TEST(Diagnostics, ProducerBound) {
  // 130 ms: a 45 ms wait for the program's thread pool (35 %) and 15 ms of the loop's own
  // materialize. The wait stays on the critical path: max(15, 60) + 45 + 10 = 115 ms.
  const Profile p = producer_loop_profile(45);
  const Analysis a = analyze(p, {});
  EXPECT_EQ(a.producer_wait_ns, 45 * kMs);
  EXPECT_EQ(a.worker_wait_ns, 0);
  EXPECT_EQ(a.exposed_data_ns, 60 * kMs);
  EXPECT_EQ(a.whatif_predicted_ns, 115 * kMs);
  EXPECT_EQ(whatif_formula(a), "max(data - producer wait, compute) + producer wait 45.0 ms (mean) + rest");
  EXPECT_NE(whatif_expectation(a).find("45.0 ms of the data time per iteration on average (35% of the loop's time) is the "
                                       "loop waiting for batches that the program's own threads or processes make ahead of it"),
            std::string::npos)
      << whatif_expectation(a);
  const auto ds = diagnose(p, a);
  EXPECT_FALSE(has(ds, "exposed-data-time"));  // the loop's own 15 ms is 12 %
  EXPECT_FALSE(has(ds, "loader-bound"));
  const auto d = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "producer-bound"; });
  ASSERT_NE(d, ds.end());
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(d->evidence.at("producer_wait_ns"), 45.0 * kMs);
  EXPECT_DOUBLE_EQ(d->evidence.at("producer_per_iteration_ns"), 80.0 * kMs);  // 20 x 80 ms over 20 iterations
  for (const char* part : {"the loop waits 35% of its time (45.0 ms an iteration of 130 ms, means) at train.py:41 "
                           "`x, y = futures[step].result()` for batches that the program's own threads or processes make "
                           "ahead of it: they cannot keep up, and a prefetcher would not help.",
                           "sample() of train.py ran 80.0 ms per iteration (its time over the run, over the loop's 20 "
                           "iterations), 50.0 ms of it at line 19 `time.sleep(0.05)`, against the loop's 60.0 ms of compute.",
                           "a larger max_workers than its thread pool's 1 thread"})
    EXPECT_NE(d->message.find(part), std::string::npos) << part << "\n" << d->message;
  // A producer of its own process: nothing traced beside the loop.
  Profile process = producer_loop_profile(45);
  process.lines.resize(1);
  process.threads.resize(1);
  const auto ps = run(process);
  const auto e = std::find_if(ps.begin(), ps.end(), [](const Diagnostic& x) { return x.id == "producer-bound"; });
  ASSERT_NE(e, ps.end());
  EXPECT_NE(e->message.find("`gnnprof run --lines auto --lines FILE:FUNCTION` traces the producer's function too"),
            std::string::npos)
      << e->message;
  EXPECT_NE(e->message.find("more producer threads"), std::string::npos) << e->message;
  // With that producer process's own profile read (run.feeds_pid): its traced function.
  Profile fed;
  fed.run.pid = 77;
  fed.run.feeds_pid = p.run.pid;
  fed.lines = {train_line("sampler_process", 30, "for step in range(steps):", 2),
               train_line("sampler_process", 31, "q.put(sample(graph, step))", 70)};
  fed.run.start_unix_ns = process.run.start_unix_ns + 1;
  fed.wall_ns = 1000 * kMs;
  const ProducerProcesses procs = summarize_producer_processes(process, {fed});
  EXPECT_EQ(procs.pids, std::vector<std::int64_t>{77});
  EXPECT_EQ(procs.function, "sampler_process");
  EXPECT_EQ(procs.line, 31u);
  const auto named = producer_bound(process, analyze(process, {}), procs);
  ASSERT_TRUE(named.has_value());
  for (const char* part : {"Beside the loop, 1 producer process (pid 77) ran sampler_process() of train.py: 72.0 ms per "
                           "iteration (its time in that process over the run, over the loop's 20 iterations), 70.0 ms of it "
                           "at line 31 `q.put(sample(graph, step))`, against the loop's 60.0 ms of compute; its line table "
                           "is in its own profile (<output>.77.json).",
                           "more producer processes than 1"})
    EXPECT_NE(named->message.find(part), std::string::npos) << part << "\n" << named->message;
  EXPECT_DOUBLE_EQ(named->evidence.at("producer_per_iteration_ns"), 72.0 * kMs);
  // One that ended before the loop's first iteration (a pool that preprocessed) is left out.
  Profile before = fed;
  before.run.pid = 78;
  before.run.start_unix_ns = process.run.start_unix_ns - 10'000 * kMs;
  before.wall_ns = 5'000 * kMs;
  EXPECT_EQ(summarize_producer_processes(process, {fed, before}).pids, std::vector<std::int64_t>{77});
  // A traced thread producer in the loop's own process comes first.
  EXPECT_EQ(producer_bound(p, a, procs)->message, d->message);
  // A thread of the program's own pulling a DataLoader from its workers: the loader's advice.
  Profile pulled = process;
  StageStats pass = stage("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "data");
  pass.by_thread.push_back(StageThreadStats{1, 40, 800 * kMs, 800 * kMs});
  pulled.stages.push_back(pass);
  const auto ls = run(pulled);
  const auto l = std::find_if(ls.begin(), ls.end(), [](const Diagnostic& x) { return x.id == "producer-bound"; });
  ASSERT_NE(l, ls.end());
  EXPECT_NE(l->message.find("Beside the loop, a thread of the program's own pulls a torch DataLoader from its worker "
                            "processes. Raise the DataLoader's num_workers"),
            std::string::npos)
      << l->message;
  EXPECT_FALSE(has(ls, "loader-bound"));  // the loop itself waits for no worker
  // A short wait (15 of 100 ms) is not; the loop's own data beside a wait is exposed-data-time's.
  EXPECT_FALSE(has(run(producer_loop_profile(15)), "producer-bound"));
  Profile both = producer_loop_profile(45);
  for (auto& it : both.iterations) {
    it.stages["materialize"] = 40 * kMs;
    it.wall_ns += 25 * kMs;
  }
  EXPECT_TRUE(has(run(both), "exposed-data-time"));
  EXPECT_TRUE(has(run(both), "producer-bound"));

  // A pool of 4 with 4 futures in flight: the waits come in bursts, 3 iterations of 4 wait
  // nothing and the 4th 140 ms. Their median is 0; their share of the loop's time is not.
  Profile bursts = producer_loop_profile(45);
  for (std::size_t i = 0; i < bursts.iterations.size(); ++i) {
    auto& it = bursts.iterations[i];
    const std::int64_t wait = i % 4 == 3 ? 140 * kMs : 0;
    it.wall_ns += wait - 45 * kMs;
    it.stages[kProducerWaitStage] = wait;
  }
  for (int n = 1; n < 4; ++n) bursts.threads.push_back(ThreadInfo{static_cast<std::uint32_t>(n + 1), 0, fmt::format("ThreadPoolExecutor-0_{}", n), 0, 0});
  bursts.threads.push_back(ThreadInfo{5, 0, "ThreadPoolExecutor-1_0", 0, 0});  // another pool
  const Analysis ba = analyze(bursts, {});
  EXPECT_EQ(ba.producer_wait_ns, 0);
  EXPECT_GT(ba.producer_wait_share, 0.2);
  const auto bs = diagnose(bursts, ba);
  const auto b = std::find_if(bs.begin(), bs.end(), [](const Diagnostic& x) { return x.id == "producer-bound"; });
  ASSERT_NE(b, bs.end());
  EXPECT_NE(b->message.find("a larger max_workers than its thread pool's 4 threads"), std::string::npos) << b->message;
  EXPECT_EQ(ba.own_data_ns, 15 * kMs);  // each iteration's data less its wait
  EXPECT_FALSE(has(bs, "exposed-data-time"));

  // With the collector's per-category totals: a producer wait on another thread (a main thread
  // waiting for a training thread) hides no data; another thread's data work does, and so does
  // a DataLoader's pass there (a prefetcher's producer waiting for its workers).
  Profile cats = loop_profile(false);
  const std::string workers = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  for (auto& it : cats.iterations) {
    it.categories = {{"data", 30 * kMs}, {"compute", 60 * kMs}};
    it.other_categories = {{"data", 55 * kMs}};
    it.other_threads = {{kProducerWaitStage, 40 * kMs}, {"sample", 10 * kMs}, {workers, 5 * kMs}};
  }
  cats.stages.push_back(stage(kProducerWaitStage, "data"));
  cats.stages.push_back(stage(workers, "data"));
  EXPECT_EQ(analyze(cats, {}).hidden_data_ns, 15 * kMs);
}

TEST(Analysis, WorkerAndProducerWaitsBothStayOnTheCriticalPath) {
  // 145 ms: the workers' wait 15, a producer's 15 and materialize 15 (data), compute 60, rest 10:
  // max(15, 60) + 15 + 15 + 10 = 100 ms.
  Profile p = worker_loop_profile(15);
  p.stages.push_back(stage(kProducerWaitStage, "data"));
  for (auto& it : p.iterations) {
    it.stages[kProducerWaitStage] = 15 * kMs;
    it.wall_ns += 15 * kMs;
  }
  const Analysis a = analyze(p, {});
  EXPECT_EQ(a.worker_wait_ns, 15 * kMs);
  EXPECT_EQ(a.producer_wait_ns, 15 * kMs);
  EXPECT_EQ(a.whatif_predicted_ns, 100 * kMs);
  EXPECT_EQ(whatif_formula(a), "max(data - waits, compute) + worker wait 15.0 ms + producer wait 15.0 ms (mean) + rest");
}

/// A coroutine training loop suspended `wait_ms` an iteration at `x, y = await task` (the
/// stage "await"), `off_share` of it off the CPU (the tracer's counter), 20 iterations.
Profile await_loop_profile(std::int64_t wait_ms, double off_share) {
  Profile p = waiting_loop_profile(kAwaitStage, wait_ms);
  p.run.command = {"/usr/bin/python3", "train.py"};
  for (auto& s : p.stages)
    if (s.name == kAwaitStage) s.total_ns = 20 * wait_ms * kMs, s.hits = 20;
  LineStats at = train_line("main", 35, "x, y = await task", wait_ms);
  at.stages[kAwaitStage] = at.total_ns;
  p.lines.push_back(at);
  const double off = off_share * static_cast<double>(wait_ms * kMs);
  // Measured at some of the awaits (the tracer's first 16, then one in 8): their mean.
  p.counters.push_back(CounterStats{std::string(GNNPROF_OFF_CPU_COUNTER_PREFIX) + kAwaitStage, 5, off, off, off, off});
  return p;
}

TEST(Diagnostics, AwaitBound) {
  // 130 ms: the loop's coroutine suspended 45 ms (35 %) and 15 ms of its own materialize. The
  // await stays on the critical path: max(15, 60) + 45 + 10 = 115 ms.
  const Profile p = await_loop_profile(45, 0.8);
  const Analysis a = analyze(p, {});
  EXPECT_EQ(a.await_mean_ns, 45 * kMs);
  EXPECT_EQ(a.producer_wait_ns, 0);
  EXPECT_EQ(a.exposed_data_ns, 60 * kMs);
  EXPECT_EQ(a.whatif_predicted_ns, 115 * kMs);
  ASSERT_TRUE(a.await_off_cpu_share.has_value());
  EXPECT_NEAR(*a.await_off_cpu_share, 0.8, 1e-9);
  EXPECT_EQ(whatif_formula(a), "max(data - await, compute) + await 45.0 ms (mean) + rest");
  EXPECT_NE(whatif_expectation(a).find("45.0 ms of the data time per iteration on average (35% of the loop's time) is the "
                                       "loop's coroutine suspended at an await, where the event loop runs the awaited work"),
            std::string::npos)
      << whatif_expectation(a);
  const auto ds = diagnose(p, a);
  EXPECT_FALSE(has(ds, "exposed-data-time"));  // the loop's own 15 ms is 12 %
  EXPECT_FALSE(has(ds, "producer-bound"));
  EXPECT_FALSE(has(ds, "low-utilization"));
  const auto d = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "await-bound"; });
  ASSERT_NE(d, ds.end());
  EXPECT_EQ(d->severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(d->evidence.at("await_ns"), 45.0 * kMs);
  EXPECT_DOUBLE_EQ(d->evidence.at("off_cpu_share"), 0.8);
  for (const char* part : {"the training loop is a coroutine and waits 35% of its time (45.0 ms an iteration of 130 ms, "
                           "means) suspended at an await, at train.py:35 `x, y = await task`: 80% of it off the CPU",
                           "20% running other tasks' code on the loop's thread",
                           "the step's own work (60.0 ms of compute) blocks it",
                           "create the next batch's task before the step's work (asyncio.create_task) and `await "
                           "asyncio.sleep(0)` right after"})
    EXPECT_NE(d->message.find(part), std::string::npos) << part << "\n" << d->message;
  EXPECT_EQ(d->message.find("Move the other tasks' code off the event loop"), std::string::npos) << d->message;
  // The other tasks' own code on the loop's thread: move it off; both when the split is even.
  for (auto [share, overlap, move] : {std::tuple{0.1, false, true}, std::tuple{0.5, true, true}}) {
    const auto es = run(await_loop_profile(45, share));
    const auto e = std::find_if(es.begin(), es.end(), [](const Diagnostic& x) { return x.id == "await-bound"; });
    ASSERT_NE(e, es.end());
    EXPECT_EQ(e->message.find("asyncio.sleep(0)") != std::string::npos, overlap) << e->message;
    EXPECT_EQ(e->message.find("Move the other tasks' code off the event loop") != std::string::npos, move) << e->message;
  }
  // No counter: both, and no split. Under 20 % of the loop's time: nothing.
  Profile bare = await_loop_profile(45, 0);
  bare.counters.clear();
  const auto bs = run(bare);
  const auto b = std::find_if(bs.begin(), bs.end(), [](const Diagnostic& x) { return x.id == "await-bound"; });
  ASSERT_NE(b, bs.end());
  EXPECT_EQ(b->evidence.count("off_cpu_share"), 0u);
  EXPECT_EQ(b->message.find("off the CPU"), std::string::npos) << b->message;
  EXPECT_NE(b->message.find("Move the other tasks' code"), std::string::npos) << b->message;
  EXPECT_FALSE(has(run(await_loop_profile(20, 0.8)), "await-bound"));  // 20 of 105 ms
  EXPECT_DOUBLE_EQ(d->evidence.at("producer_per_iteration_ns"), 0.0);
  // The awaited work traced on another thread (loop.run_in_executor): a producer beside the
  // step, whose shortfall the loop waits; at least half the wait an iteration to be named.
  for (auto [ms, named] : {std::tuple{30, true}, std::tuple{20, false}}) {
    Profile executor = await_loop_profile(45, 0.95);
    LineStats work = train_line("make_batch", 16, "time.sleep(0.004)", ms);
    work.off_loop_ns = work.total_ns;
    executor.lines.push_back(work);
    const auto xs = run(executor);
    const auto x = std::find_if(xs.begin(), xs.end(), [](const Diagnostic& y) { return y.id == "await-bound"; });
    ASSERT_NE(x, xs.end());
    EXPECT_EQ(x->message.find("Beside the loop, make_batch() of train.py ran " + std::to_string(ms) + ".0 ms per iteration") !=
                  std::string::npos,
              named)
        << x->message;
    EXPECT_EQ(x->message.find("runs on a thread (loop.run_in_executor, asyncio.to_thread)") != std::string::npos, named)
        << x->message;
    EXPECT_EQ(x->message.find("asyncio.sleep(0)") == std::string::npos, named) << x->message;
    EXPECT_DOUBLE_EQ(x->evidence.at("producer_per_iteration_ns"), named ? ms * 1e6 : 0.0);
  }
}

// Workers that deliver a batch every 20 ms against a 130 ms iteration, idle most of the time:
// the loop's 45 ms at __next__ is not their shortfall, and "Raise num_workers" would not help.
TEST(Diagnostics, LoaderBoundWithWorkersThatKeepUpSaysSo) {
  Profile p = worker_loop_profile(45);
  p.counters.push_back(CounterStats{"DataLoader workers", 2, 2, 2, 2, 2});
  Report r = make_report(p, {});
  LoaderWorkers w;
  w.pids = {11, 12};
  w.concurrent = 2;
  w.batches = 40;
  w.batch_median_ns = 40 * kMs;  // together a batch every 20 ms
  w.batch_ns = 40 * 40 * kMs;
  w.wall_ns = 5 * w.batch_ns;  // busy 20 %
  set_loader_workers(r, w);
  EXPECT_EQ(r.workers.pids.size(), 2u);
  const auto& d = *std::find_if(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
  EXPECT_NE(d.message.find("receiving batches its worker processes have ready (they keep up: together a batch every 20.0 ms "
                           "against an iteration of 130 ms, busy 20%"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("More workers will not help"), std::string::npos);
  EXPECT_NE(d.message.find("unpickling what collate_fn returns"), std::string::npos) << d.message;
  // Batches of 30 tensors shared as file descriptors (Linux's default): the wait per tensor,
  // and the two ways out.
  {
    Report many = make_report(p, {});
    LoaderWorkers t = w;
    t.tensors_per_batch = 30;
    t.sharing = "file_descriptor";
    set_loader_workers(many, t);
    const auto& m = *std::find_if(many.diagnostics.begin(), many.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
    EXPECT_NE(m.message.find("its 30 tensors cross one by one, each as a shared-memory file descriptor passed over a socket "
                             "to the worker (torch.multiprocessing's sharing strategy file_descriptor, Linux's default), "
                             "about 1.50 ms of the wait per tensor here"),
              std::string::npos)
        << m.message;
    EXPECT_NE(m.message.find("set_sharing_strategy(\"file_system\")"), std::string::npos) << m.message;
    EXPECT_NE(m.message.find("Return fewer, larger tensors from collate_fn"), std::string::npos) << m.message;
    EXPECT_DOUBLE_EQ(m.evidence.at("tensors_per_batch"), 30);
    // Two tensors (features, labels): nothing to concatenate, only the strategy.
    {
      Report two = make_report(p, {});
      LoaderWorkers t2 = t;
      t2.tensors_per_batch = 2;
      set_loader_workers(two, t2);
      const auto& m2 = *std::find_if(two.diagnostics.begin(), two.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
      EXPECT_NE(m2.message.find("its 2 tensors cross one by one"), std::string::npos) << m2.message;
      EXPECT_NE(m2.message.find("here. Call torch.multiprocessing.set_sharing_strategy(\"file_system\")"), std::string::npos)
          << m2.message;
      EXPECT_EQ(m2.message.find("fewer, larger tensors"), std::string::npos) << m2.message;
    }
    // Already file_system, or one tensor a batch: the general reasons.
    for (auto [tensors, sharing] : {std::pair{30.0, "file_system"}, std::pair{1.0, "file_descriptor"}}) {
      Report other = make_report(p, {});
      t.tensors_per_batch = tensors;
      t.sharing = sharing;
      set_loader_workers(other, t);
      const auto& o = *std::find_if(other.diagnostics.begin(), other.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
      EXPECT_EQ(o.message.find("cross one by one"), std::string::npos) << o.message;
      EXPECT_NE(o.message.find("unpickling what collate_fn returns"), std::string::npos) << o.message;
    }
    EXPECT_NE(loader_workers_text(t).find("1.0 tensors per batch (their first batches' CPU tensor storages, each sent on its "
                                          "own; sharing strategy file_descriptor)"),
              std::string::npos)
        << loader_workers_text(t);
  }
  // Busy workers that fall behind: the advice stands.
  Report slow = make_report(p, {});
  w.batch_median_ns = 400 * kMs;
  w.wall_ns = w.batch_ns;
  set_loader_workers(slow, w);
  const auto& e = *std::find_if(slow.diagnostics.begin(), slow.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
  EXPECT_NE(e.message.find("Make the per-sample work (__getitem__, collate_fn) cheaper"), std::string::npos) << e.message;
  EXPECT_EQ(e.message.find("memmap"), std::string::npos) << e.message;
  // ... reading features from a memory-mapped file that is not in memory: waits on storage, which
  // more workers overlap even beyond the cores.
  {
    Report disk = make_report(p, {});
    LoaderWorkers d = w;
    d.observed_batches = 10;
    d.memmap_faults = 400;
    d.gather_file = "/w/train.py";
    d.gather_line = 42;
    d.materialize_off_cpu_ns = 2500.0 * kMs;
    set_loader_workers(disk, d);
    const auto& m = *std::find_if(disk.diagnostics.begin(), disk.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
    EXPECT_NE(m.message.find("Their numpy memmap reads wait on storage: 40 major page faults a batch (pages not in memory, read "
                             "from disk, most gathered at train.py:42), their gathers 250 ms a batch off the CPU of a worker's "
                             "400 ms. A worker waiting on the disk holds no core, so more "
                             "workers overlap more of those reads even beyond the cores"),
              std::string::npos)
        << m.message;
    EXPECT_DOUBLE_EQ(m.evidence.at("memmap_faults_per_batch"), 40);
    // A few faults a batch (a file otherwise in memory): nothing said.
    Report few = make_report(p, {});
    d.memmap_faults = 30;
    set_loader_workers(few, d);
    const auto& f = *std::find_if(few.diagnostics.begin(), few.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
    EXPECT_EQ(f.message.find("memmap"), std::string::npos) << f.message;
  }
  // ... fetching each batch item by item from a TensorDataset: the calls and the stacking are
  // most of a worker's batch, which one dataset[indices] removes.
  {
    ItemFetch f;
    f.dataset = "TensorDataset";
    f.collate = "default_collate";
    f.takes_indices = true;
    f.batches = 40;
    f.items = 1024;
    f.mean_items = 1024;
    f.fetch_ns = 200.0 * kMs;
    f.collate_ns = 100.0 * kMs;
    LoaderWorkers i = w;
    i.fetches = {f};
    Report items = make_report(p, {});
    set_loader_workers(items, i);
    const auto& m = *std::find_if(items.diagnostics.begin(), items.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
    EXPECT_NE(m.message.find("Each worker fetches its batches item by item: 1024 dataset[i] calls on its TensorDataset (200 ms, "
                             "195 us an item) and default_collate stacking the 1024 items (100 ms), 75% of a worker's 400 ms "
                             "batch. A TensorDataset takes a list of indices at once: DataLoader(dataset, batch_size=None, "
                             "sampler=BatchSampler(RandomSampler(dataset), batch_size=1024, drop_last=False))"),
              std::string::npos)
        << m.message;
    EXPECT_DOUBLE_EQ(m.evidence.at("item_fetch_share"), 0.75);
    // A small share of the batch: nothing said.
    i.fetches[0].fetch_ns = 40.0 * kMs;
    i.fetches[0].collate_ns = 20.0 * kMs;
    Report small = make_report(p, {});
    set_loader_workers(small, i);
    const auto& n = *std::find_if(small.diagnostics.begin(), small.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-bound"; });
    EXPECT_EQ(n.message.find("item by item"), std::string::npos) << n.message;
  }
}

// exposed-data-time, where the loop's own numpy memmap reads fault pages in from storage (its
// features on disk): the waits hold no core, which a producer thread overlaps.
TEST(Diagnostics, ExposedDataTimeSaysTheLoopsMemmapReadsWaitOnStorage) {
  auto profile = [](double faults_per_read) {
    Profile p = loop_profile(false);  // 20 iterations, every one observed
    CounterStats faults;
    faults.name = kMemmapFaultsCounter;
    faults.samples = 20;  // and a first read of 200 (whole read-ahead windows): left out
    faults.max = 200;
    faults.mean = (19 * faults_per_read + 200) / 20;
    p.counters.push_back(faults);
    CounterStats off;
    off.name = GNNPROF_OFF_CPU_COUNTER_PREFIX "materialize";
    off.samples = 20;
    off.max = 500.0 * kMs;
    off.mean = (19 * 9.0 * kMs + 500.0 * kMs) / 20;
    p.counters.push_back(off);
    return p;
  };
  auto ds = run(profile(40));
  const auto& d = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "exposed-data-time"; });
  EXPECT_NE(d.message.find("Its numpy memmap reads wait on storage: 40 major page faults an iteration (pages not in memory, "
                           "read from disk), the gathers 9.00 ms an iteration off the CPU. A thread waiting on the disk "
                           "holds no core, and numpy's row copy releases the GIL, so a producer thread overlaps those waits"),
            std::string::npos)
      << d.message;
  EXPECT_DOUBLE_EQ(d.evidence.at("memmap_faults_per_iteration"), 40);
  ds = run(profile(3));  // a few first touches of a file otherwise in memory
  const auto& few = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "exposed-data-time"; });
  EXPECT_EQ(few.message.find("memmap"), std::string::npos) << few.message;
  EXPECT_EQ(few.evidence.count("memmap_faults_per_iteration"), 0u);
}

TEST(Diagnostics, ExposedDataTime) {
  EXPECT_TRUE(has(run(loop_profile(false)), "exposed-data-time"));
  EXPECT_FALSE(has(run(loop_profile(true)), "exposed-data-time"));
  auto ds = run(loop_profile(false));
  const auto& d = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "exposed-data-time"; });
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(d.evidence.at("exposed_share"), 0.3);
  EXPECT_DOUBLE_EQ(d.evidence.at("whatif_predicted_ns"), 70.0 * kMs);
  EXPECT_EQ(d.message.find("most of it while"), std::string::npos) << d.message;  // no traced lines
  EXPECT_EQ(d.message.find("gnnprof ab"), std::string::npos) << d.message;  // no Python DataLoader loop

  // A Python script's loop over a torch DataLoader: the command that measures the what-if on it.
  Profile py = loop_profile(false);
  py.run.command = {"/usr/bin/python3", "train.py", "--note", "it's"};
  py.stages.push_back(stage("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "data"));
  auto exposed = [](const std::vector<Diagnostic>& v) {
    return std::find_if(v.begin(), v.end(), [](const Diagnostic& x) { return x.id == "exposed-data-time"; })->message;
  };
  EXPECT_NE(exposed(run(py)).find("To measure it on the unmodified script: gnnprof ab -- /usr/bin/python3 train.py --note "
                                  "'it'\\''s' (each pass"),
            std::string::npos)
      << exposed(run(py));
  py.collectors.push_back(CollectorInfo{"prefetch-loaders", true, "depth 0"});  // ab's baseline: prefetched already
  EXPECT_EQ(exposed(run(py)).find("gnnprof ab"), std::string::npos);

  // With a line table: the line that most data time ran under is named.
  Profile p = loop_profile(false);
  LineStats gather;
  gather.file = "/home/u/train.py";
  gather.line = 103;
  gather.code = "x = feats[input_nodes]";
  gather.stages = {{"materialize", 280 * kMs}, {"forward", 5 * kMs}};
  LineStats model = gather;
  model.line = 105;
  model.code = "out = model(blocks, x)";
  model.stages = {{"sample", 20 * kMs}, {"forward", 800 * kMs}};
  p.lines = {gather, model};
  ds = run(p);
  const auto& named = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "exposed-data-time"; });
  EXPECT_NE(named.message.find("most of it while train.py:103 `x = feats[input_nodes]` ran (93% of the traced lines' data time)"),
            std::string::npos)
      << named.message;
  // The same gather on a prefetcher's thread (all its time off the loop's): its data time is
  // hidden, and the loop's own line is named.
  p.lines[0].total_ns = 300 * kMs;
  p.lines[0].off_loop_ns = 300 * kMs;
  const auto& loop_line = exposed(run(p));
  EXPECT_NE(loop_line.find("most of it while train.py:105 `out = model(blocks, x)` ran (100% of the traced lines' data time)"),
            std::string::npos)
      << loop_line;
  p.lines[0].off_loop_ns = 0;

  // A framework's loop (Lightning's): the data time is under the line that called it, which holds
  // all of its function's time, while its callback's lines are traced too.
  LineStats fit;
  fit.file = "/home/u/train.py";
  fit.function = "<module>";
  fit.line = 40;
  fit.hits = 1;
  fit.code = "trainer.fit(model, loader)";
  fit.total_ns = 2000 * kMs;
  fit.stages = {{"sample", 300 * kMs}};
  LineStats step;
  step.file = fit.file;
  step.function = "Lit.training_step";
  step.line = 12;
  step.hits = 20;
  step.code = "loss = F.cross_entropy(self.net(x), y)";
  step.total_ns = 800 * kMs;
  step.stages = {{"forward", 800 * kMs}};
  p.lines = {fit, step};
  ds = run(p);
  const auto& framework = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "exposed-data-time"; });
  EXPECT_NE(framework.message.find("100% of the traced lines' data time is in the code that train.py:40 `trainer.fit(model, "
                                   "loader)` runs (a framework's own loop"),
            std::string::npos)
      << framework.message;
  // A Python framework's loop over a DataLoader: its fetcher's pass is not prefetched zero-code,
  // so no A/B line.
  py.collectors.clear();
  py.lines = {fit, step};
  EXPECT_EQ(exposed(run(py)).find("gnnprof ab"), std::string::npos) << exposed(run(py));
}

// A loop whose header pulls from the program's own generator: the edit that prefetches it, in
// the exposed-data-time diagnostic.
TEST(Diagnostics, ExposedDataTimeNamesTheEditForALoopPullingFromAGenerator) {
  Profile p = loop_profile(false);
  p.run.command = {"/usr/bin/python3", "train.py"};
  LineStats header;
  header.file = "/home/u/train.py";
  header.function = "train";
  header.line = 15;
  header.code = "for i, (x, y) in enumerate(batches(80, \" in \")):";
  header.hits = 21;
  header.total_ns = 600 * kMs;
  header.nested_ns = 580 * kMs;
  LineStats body = header;
  body.function = "batches";
  body.line = 9;
  body.code = "yield feats[idx], labels[idx]";
  body.nested_ns = 0;
  body.caller = 0;
  p.lines = {header, body};
  const auto g = generator_prefetch(p);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->header, &p.lines[0]);
  EXPECT_EQ(g->function, "batches");
  EXPECT_EQ(g->edit, "for i, (x, y) in gnnprof.prefetch(enumerate(batches(80, \" in \"))):");
  auto exposed = [](const std::vector<Diagnostic>& v) {
    return std::find_if(v.begin(), v.end(), [](const Diagnostic& x) { return x.id == "exposed-data-time"; })->message;
  };
  const std::string m = exposed(run(p));
  EXPECT_NE(m.find("To measure it on the unmodified script: gnnprof ab -- /usr/bin/python3 train.py (the loop pulls its "
                   "batches from batches(): each call of it runs through gnnprof's prefetcher, depth 0 against 2, as "
                   "train.py:15 `for i, (x, y) in gnnprof.prefetch(enumerate(batches(80, \" in \"))):` with `import "
                   "gnnprof` would; on a CPython before 3.11 or after 3.13, make that edit and run the same command)"),
            std::string::npos)
      << m;
  EXPECT_EQ(g->file, "/home/u/train.py");

  // Not such a loop: the header holds less than half its time under it, its callee is its own
  // function's line, it already pulls through a prefetcher, or the run waited on one.
  Profile q = p;
  q.lines[0].nested_ns = 200 * kMs;
  EXPECT_FALSE(generator_prefetch(q).has_value());
  q = p;
  q.lines[1].function = "train";
  EXPECT_FALSE(generator_prefetch(q).has_value());
  q = p;
  q.lines[0].code = "for x in gnnprof.prefetch(batches(80)):";
  EXPECT_FALSE(generator_prefetch(q).has_value());
  EXPECT_EQ(exposed(run(q)).find("the loop pulls its batches"), std::string::npos);
  q = p;
  for (auto& s : q.stages)
    if (s.name == "loader_wait") s.hits = 20;
  EXPECT_FALSE(generator_prefetch(q).has_value());
  q = p;  // gnnprof.prefetch at depth 0: no wait, but the package noted it
  q.collectors.push_back(CollectorInfo{"prefetch", true, "the program pulls batches through gnnprof.prefetch (depth 0)"});
  EXPECT_FALSE(generator_prefetch(q).has_value());
  q = p;
  q.lines[0].code = "while batches:";
  EXPECT_FALSE(generator_prefetch(q).has_value());
}

// A hot Python loop traced line by line: 200 000 line events per 100 ms iteration cost 11 ms
// or more, which the report says; 1000 events (55 us) go unmentioned.
TEST(Analysis, TracingCostIsSaidWhenItIsAShareOfTheIteration) {
  Profile p = loop_profile(false);
  LineStats hot;
  hot.file = "train.py";
  hot.line = 12;
  hot.hits = 200000 * p.iterations.size();
  p.lines = {hot};
  EXPECT_EQ(line_events_per_iteration(p), 200000u);
  const std::string note = tracing_cost_note(p);
  EXPECT_NE(note.find("Tracing: 200000 line events per iteration, 11.0 ms or more of it (11% of the median iteration"),
            std::string::npos)
      << note;
  p.lines[0].hits = 1000 * p.iterations.size();
  EXPECT_EQ(tracing_cost_note(p), "");
  // A C++ program's GNNPROF_LINE sites cost no Python tracing.
  p.lines[0].file = "/src/train.cpp";
  p.lines[0].hits = 200000 * p.iterations.size();
  EXPECT_EQ(tracing_cost_note(p), "");
}

TEST(Diagnostics, ADataLoaderWorkersProfileIsNotALoop) {
  // A worker's iterations are the batches it fetched: all data, short, on a lightly used host.
  Profile p = loop_profile(false);
  for (auto& it : p.iterations) it.wall_ns = 5 * kMs;
  for (int i = 0; i < 10; ++i) p.host_samples.push_back(HostSample{i * 100 * kMs, 0, i * 40 * kMs});  // 20 %
  ASSERT_TRUE(has(run(p), "exposed-data-time"));
  ASSERT_TRUE(has(run(p), "low-utilization"));
  p.collectors.push_back(CollectorInfo{"loader-worker", true, "a data loader's worker process, forked from pid 7"});
  const Analysis a = analyze(p, {});
  EXPECT_TRUE(a.loader_worker);
  const auto ds = diagnose(p, a);
  EXPECT_FALSE(has(ds, "exposed-data-time"));
  EXPECT_FALSE(has(ds, "low-utilization"));
  EXPECT_FALSE(has(ds, "loader-bound"));
  EXPECT_NE(loader_worker_note(a).find("each iteration is one batch it fetched"), std::string::npos);
  EXPECT_NE(loader_worker_note(a).find(human_ns(a.iteration_median_ns) + " a batch"), std::string::npos);
}

TEST(Diagnostics, PageableHostToDevice) {
  Profile p = loop_profile(true);
  p.transfers = {TransferStats{"h2d", "", 0, Direction::kH2D, HostMemory::kPinned, CopyMode::kAsync, 10, 1000, 0}};
  EXPECT_FALSE(has(run(p), "pageable-h2d"));
  p.transfers.push_back(TransferStats{"h2d", "", 0, Direction::kH2D, HostMemory::kPageable, CopyMode::kSync, 5, 3000, 0});
  auto ds = run(p);
  ASSERT_TRUE(has(ds, "pageable-h2d"));
  EXPECT_DOUBLE_EQ(ds[0].evidence.at("pageable_share"), 0.75);
}

TEST(Diagnostics, MaterializeInCompute) {
  Profile p = loop_profile(true);
  p.materializations = {MaterializationStats{"features", "materialize", "", 0, 10, 100, 400}};
  EXPECT_FALSE(has(run(p), "materialize-in-compute"));
  p.materializations.push_back(MaterializationStats{"x", "forward", "train.py", 12, 10, 100, 400});
  EXPECT_TRUE(has(run(p), "materialize-in-compute"));
}

// Zero-code: the torch observer gives a gather a data stage of its own ("materialize"), also
// when it is made inside the model's forward (a block's srcdata['x'] read in forward). The line
// that ran it also ran the forward and built its graph: that is the lazy gather, and the
// exposed-data advice says the read must leave the model before prefetching can hide it.
TEST(Diagnostics, AGatherUnderTheLineThatRunsTheModelIsMaterializeInCompute) {
  Profile p = loop_profile(false);
  LineStats model;
  model.file = "/w/train.py";
  model.line = 114;
  model.code = "out = model(blocks)";
  model.total_ns = 20 * 70 * kMs;
  model.stages = {{"forward", 20 * 40 * kMs}, {"materialize", 20 * 30 * kMs}};
  model.backward_ns = 20 * 20 * kMs;
  p.lines = {model};
  p.materializations = {MaterializationStats{"", "materialize", "/w/train.py", 114, 20, 2000, 1 << 20}};
  std::string mic, exposed;
  for (const Diagnostic& d : run(p)) {
    if (d.id == "materialize-in-compute") mic = d.message;
    if (d.id == "exposed-data-time") exposed = d.message;
  }
  EXPECT_NE(mic.find("train.py:114 `out = model(blocks)` runs the model's forward and gathers 2000 rows (1.0 MiB) as it "
                     "does (43% of that line's time)"),
            std::string::npos)
      << mic;
  EXPECT_NE(exposed.find("Once that line's gather is out of the model's forward (materialize-in-compute), prefetching"),
            std::string::npos)
      << exposed;
  // The gather on a line of its own (x = block.srcdata['x'] in the loop): prefetchable, no warning.
  p.lines[0].code = "x = blocks[0].srcdata['x']";
  p.lines[0].stages = {{"materialize", 20 * 30 * kMs}};
  p.lines[0].backward_ns = 0;
  EXPECT_FALSE(has(run(p), "materialize-in-compute"));
}

TEST(Diagnostics, HostSync) {
  Profile p = loop_profile(true);
  EXPECT_FALSE(has(run(p), "host-sync"));  // 1 % of the iteration
  for (auto& it : p.iterations) it.stages["sync"] = 10 * kMs;
  p.stages.push_back(stage("sync", "sync"));
  p.stages.back().hits = 20 * 300;
  auto message = [](const Profile& q) {
    for (const Diagnostic& d : run(q))
      if (d.id == "host-sync") return d.message;
    return std::string();
  };
  // No device in the run: the reads themselves (300 per iteration), not a wait for the device.
  EXPECT_NE(message(p).find("takes 10% of each iteration (10.0 ms, about 300 reads)"), std::string::npos) << message(p);
  EXPECT_NE(message(p).find("with no device in this run nothing is waited for"), std::string::npos) << message(p);
  // Mostly inside another phase: named.
  p.stages.back().total_ns = 200 * kMs;
  p.stage_edges.push_back(StageEdge{"collate", "sync", 6000, 150 * kMs, 150 * kMs});
  EXPECT_NE(message(p).find("most of them inside \"collate\""), std::string::npos) << message(p);
  // CUPTI on with nothing on the GPU (a CPU loop on a CUDA torch): still no device.
  {
    Profile q = p;
    q.collectors.push_back(CollectorInfo{"cupti", true, "MEMCPY, ..."});
    EXPECT_NE(message(q).find("with no device in this run nothing is waited for"), std::string::npos) << message(q);
  }
  // CUDA tensors read back (data made on the device, CUPTI off): the host waits for it there.
  {
    Profile q = p;
    q.collectors.push_back(CollectorInfo{"cuda-tensors", true, "the loop's ops read back or copied CUDA tensors"});
    EXPECT_NE(message(q).find("the host blocks until queued device work is done"), std::string::npos) << message(q);
  }
  // Copies to a device: the host waits for it there.
  p.transfers.push_back(TransferStats{});
  p.transfers.back().direction = Direction::kH2D;
  EXPECT_NE(message(p).find("the host blocks until queued device work is done"), std::string::npos) << message(p);
}

// Reads element by element (a confusion matrix filled with int(t) per sample): each read is
// cheap, 1 % of the iteration all told, but the line around them takes 30 % of the loop.
TEST(Diagnostics, HostSyncNamesALineThatReadsATensorElementByElement) {
  Profile p = loop_profile(true);
  p.stages.back().hits = 20 * 1000;  // sync: 1000 reads an iteration
  LineStats reader;
  reader.file = "/w/train.py";
  reader.line = 103;
  reader.code = "conf[int(t), int(p)] += 1";
  reader.hits = 20 * 1000;
  reader.total_ns = 20 * 30 * kMs + 2 * 200 * kMs;  // 30 % of every iteration
  reader.stages["sync"] = 20 * kMs;
  p.lines = {reader};
  std::string message;
  for (const Diagnostic& d : run(p))
    if (d.id == "host-sync") message = d.message;
  EXPECT_NE(message.find("about 1000 scalar reads (.item(), int(t), float(t), bool(t)) per iteration, most of them while "
                         "train.py:103 `conf[int(t), int(p)] += 1` ran, a line that takes"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Read values in bulk (t.tolist())"), std::string::npos) << message;
  // A few reads an iteration (loss.item()), or a cheap line: nothing to say.
  p.stages.back().hits = 20 * 10;
  EXPECT_FALSE(has(run(p), "host-sync"));
  p.stages.back().hits = 20 * 1000;
  p.lines[0].total_ns = 20 * kMs;
  EXPECT_FALSE(has(run(p), "host-sync"));
}

TEST(Diagnostics, HostMemoryGrowth) {
  Profile p = loop_profile(true);
  for (int i = 0; i < 40; ++i) p.host_samples.push_back(HostSample{i * 1000 * kMs, 1000 * kMs, i * 1500 * kMs});
  EXPECT_FALSE(has(run(p), "host-memory-growth"));  // flat
  for (int i = 0; i < 40; ++i) p.host_samples[static_cast<std::size_t>(i)].rss_bytes = 1000 * kMs + i * 20 * kMs;
  EXPECT_TRUE(has(run(p), "host-memory-growth"));  // +20 MB per second
  // The same growth in file-backed pages (a memory-mapped feature file read for the first time):
  // page cache, no leak.
  for (int i = 0; i < 40; ++i) p.host_samples[static_cast<std::size_t>(i)].rss_file_bytes = 100 * kMs + i * 20 * kMs;
  EXPECT_FALSE(has(run(p), "host-memory-growth"));
}

// A GPU run: start-up and the first iterations (a CUDA context, kernels loaded at their first
// launch) grow the heap in steps; the loop's own window holds no steady growth.
TEST(Diagnostics, HostMemoryGrowthIsTheLoopsSteadyGrowth) {
  Profile p = loop_profile(true);
  for (std::size_t i = 0; i < p.iterations.size(); ++i)
    p.iterations[i].begin_ns = 10'000 * kMs + static_cast<std::int64_t>(i) * 2'000 * kMs;  // 14 s to 48 s
  auto grow = [&](auto rss_at) {
    p.host_samples.clear();
    for (int i = 0; i < 50; ++i) p.host_samples.push_back(HostSample{i * 1000 * kMs, rss_at(i), i * 1500 * kMs});
  };
  grow([](int i) { return 1000 * kMs + i * 20 * kMs; });  // +20 MB a second throughout
  EXPECT_TRUE(has(run(p), "host-memory-growth"));
  grow([](int i) { return (i < 14 ? 300 : 1000) * kMs; });  // start-up, then flat
  EXPECT_FALSE(has(run(p), "host-memory-growth"));
  grow([](int i) { return (i < 25 ? 800 : 1300) * kMs; });  // one step inside the loop: a cache filled once
  EXPECT_FALSE(has(run(p), "host-memory-growth"));
  // A heap that swings with each iteration (full-graph attention: tests/data/gat_profile.json)
  // and drifts up: its quarters' averages rise, but the last quarter's low is below the first's high.
  grow([](int i) { return (300 + (i % 4) * 150 + 4 * i) * kMs; });
  EXPECT_FALSE(has(run(p), "host-memory-growth"));
  // The loop's 3.5 s, sampled every 100 ms as the drainer does, +100 MB a second: too short to tell.
  for (std::size_t i = 0; i < p.iterations.size(); ++i)
    p.iterations[i].begin_ns = 10'000 * kMs + static_cast<std::int64_t>(i) * 200 * kMs;
  p.host_samples.clear();
  for (int i = 0; i < 500; ++i) p.host_samples.push_back(HostSample{i * 100 * kMs, 1000 * kMs + i * 10 * kMs, i * 150 * kMs});
  EXPECT_FALSE(has(run(p), "host-memory-growth"));
  for (std::size_t i = 0; i < p.iterations.size(); ++i)  // the same growth over a loop of 34 s: a leak
    p.iterations[i].begin_ns = 10'000 * kMs + static_cast<std::int64_t>(i) * 2'000 * kMs;
  EXPECT_TRUE(has(run(p), "host-memory-growth"));
}

// CPU use is the loop's, not the run's: a loop that keeps the CPUs busy and a long idle tail
// after it (a final sleep, an evaluation waiting on I/O) is no batch too small.
TEST(Diagnostics, LowUtilizationJudgesTheLoopsCpuUse) {
  Profile p = loop_profile(true);
  for (std::size_t i = 0; i < p.iterations.size(); ++i) {
    p.iterations[i].begin_ns = static_cast<std::int64_t>(i) * 5 * kMs;
    p.iterations[i].wall_ns = 5 * kMs;
  }
  for (int i = 0; i <= 10; ++i) p.host_samples.push_back(HostSample{i * 10 * kMs, 1000 * kMs, i * 18 * kMs});  // 90 %
  for (int i = 1; i <= 4; ++i) p.host_samples.push_back(HostSample{i * 1000 * kMs, 1000 * kMs, 180 * kMs});  // idle
  const Analysis a = analyze(p, AnalysisOptions{});
  ASSERT_TRUE(a.cpu_utilization.has_value());
  EXPECT_LT(*a.cpu_utilization, 0.05);
  ASSERT_TRUE(a.loop_cpu_utilization.has_value());
  EXPECT_NEAR(*a.loop_cpu_utilization, 0.9, 0.01);
  EXPECT_FALSE(has(run(p), "low-utilization"));
}

// Another tenant on the CPUs (host samples' machine_busy_ns beyond the process's cpu_ns): the
// what-if's CPU bound counts its time, and the Host line says how much it took.
TEST(Analysis, OtherProcessesOnTheCpusBoundTheWhatIf) {
  Profile p = loop_profile(false);  // 30 ms data, 60 ms compute, 10 ms rest: 1.43x with CPUs to spare
  p.environment.omp_num_threads = "1";
  for (std::size_t i = 0; i < p.iterations.size(); ++i) p.iterations[i].begin_ns = static_cast<std::int64_t>(i) * 100 * kMs;
  auto samples = [&](double process, double machine) {  // busy fractions of the 2 CPUs
    p.host_samples.clear();
    for (int i = 0; i <= 20; ++i)
      p.host_samples.push_back(HostSample{i * 100 * kMs, 1000 * kMs, static_cast<std::int64_t>(i * 200 * kMs * process), 0,
                                          static_cast<std::int64_t>(1e15 + i * 200 * kMs * machine)});
  };
  samples(0.5, 0.5);
  const Analysis alone = analyze(p, {});
  ASSERT_TRUE(alone.loop_machine_utilization.has_value());
  EXPECT_GT(alone.whatif_expected_speedup, 1.3);
  EXPECT_EQ(other_processes_text(alone), "");
  samples(0.5, 1.0);  // another process keeps the other CPU busy
  const Analysis shared = analyze(p, {});
  EXPECT_NEAR(*shared.loop_machine_utilization, 1.0, 1e-9);
  EXPECT_LT(shared.whatif_expected_speedup, 1.05);
  EXPECT_FALSE(shared.whatif_pays);
  EXPECT_NE(shared.whatif_note.find("the 2 CPUs were 100% busy, 50% of it other processes' (another tenant)"), std::string::npos)
      << shared.whatif_note;
  EXPECT_EQ(other_processes_text(shared), "; other processes kept 50% of them busy while the loop ran");
  // A profile without the machine's figure (written before it existed): as before.
  for (auto& h : p.host_samples) h.machine_busy_ns = 0;
  EXPECT_FALSE(analyze(p, {}).loop_machine_utilization.has_value());
}

TEST(Diagnostics, LowUtilization) {
  Profile p = loop_profile(true);
  for (auto& it : p.iterations) it.wall_ns = 5 * kMs;
  for (int i = 0; i < 10; ++i) p.host_samples.push_back(HostSample{i * 100 * kMs, 0, i * 180 * kMs});  // 90 % of 2 CPUs
  EXPECT_FALSE(has(run(p), "low-utilization"));
  for (int i = 0; i < 10; ++i) p.host_samples[static_cast<std::size_t>(i)].cpu_ns = i * 40 * kMs;  // 20 %
  EXPECT_TRUE(has(run(p), "low-utilization"));
  // A process of one thread on two CPUs, that thread busy (50 % of the CPUs): not idle for
  // want of work per iteration.
  for (int i = 0; i < 10; ++i) p.host_samples[static_cast<std::size_t>(i)].cpu_ns = i * 96 * kMs;  // 48 %
  p.environment.cpus = 2;
  p.environment.max_threads = 1;
  EXPECT_FALSE(has(run(p), "low-utilization"));
  p.environment.max_threads = 4;
  EXPECT_TRUE(has(run(p), "low-utilization"));
  // gnnprof's own threads and torch's interop pool count in max_threads: torch's compute threads
  // (the package's sample, its last: torch.set_num_threads(1) after set_num_threads(2)) say the same.
  CounterStats threads;
  threads.name = kTorchThreadsCounter;
  threads.samples = 2;
  threads.max = 2;
  threads.last = 1;
  p.counters.push_back(threads);
  EXPECT_FALSE(has(run(p), "low-utilization"));
  p.counters.back().last = 2;
  EXPECT_TRUE(has(run(p), "low-utilization"));
  for (const auto& d : run(p)) {
    if (d.id == "low-utilization") {
      EXPECT_NE(d.message.find("batches too small to keep the CPUs busy"), std::string::npos);
    }
  }
  p.counters.clear();
  for (auto& it : p.iterations) it.wall_ns = 100 * kMs;  // long iterations: not "small batches"
  EXPECT_FALSE(has(run(p), "low-utilization"));
  // With DataLoader worker processes the host samples see this process alone, not its workers.
  Profile plain = loop_profile(false);
  Profile w = worker_loop_profile(15);
  for (Profile* q : {&plain, &w}) {
    for (auto& it : q->iterations) it.wall_ns = 5 * kMs;
    for (int i = 0; i < 10; ++i) q->host_samples.push_back(HostSample{i * 100 * kMs, 0, i * 40 * kMs});  // 20 %
  }
  EXPECT_TRUE(has(run(plain), "low-utilization"));
  EXPECT_FALSE(has(run(w), "low-utilization"));
}

// With CUPTI the device is the GPU: its lanes' time per iteration, whatever the host CPUs do.
TEST(Diagnostics, LowUtilizationOfTheGpu) {
  Profile p = loop_profile(false);
  p.stages.push_back(stage("gpu: forward", "gpu"));
  p.stages.push_back(stage("gpu: memcpy HtoD", "gpu"));
  for (auto& it : p.iterations) {
    it.other_threads["gpu: forward"] = 6 * kMs;
    it.other_threads["gpu: memcpy HtoD"] = 2 * kMs;
  }
  for (int i = 0; i < 10; ++i) p.host_samples.push_back(HostSample{i * 100 * kMs, 0, i * 190 * kMs});  // 95 % of 2 CPUs
  Analysis a = analyze(p, {});
  EXPECT_FALSE(a.gpu_busy) << "no cupti collector: the lanes are not known to be a GPU's";
  p.collectors.push_back(CollectorInfo{"cupti", true, "MEMCPY, ..."});
  a = analyze(p, {});
  ASSERT_TRUE(a.gpu_busy);
  EXPECT_EQ(*a.gpu_ns, 8 * kMs);
  EXPECT_NEAR(*a.gpu_busy, 0.08, 1e-9);  // 8 of 100 ms
  auto ds = diagnose(p, a);
  auto d = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "low-utilization"; });
  ASSERT_NE(d, ds.end()) << "busy host CPUs do not make a busy GPU";
  EXPECT_NE(d->message.find("the GPU is busy 8%"), std::string::npos) << d->message;
  std::ostringstream text;
  ASSERT_TRUE(TextReporter(ReportOptions{}).render(p, text));
  EXPECT_NE(text.str().find("Device: the GPU is busy 8% of an iteration (8.00 ms"), std::string::npos) << text.str();
  for (auto& it : p.iterations) it.other_threads["gpu: forward"] = 70 * kMs;  // 72 %: busy enough
  EXPECT_FALSE(has(run(p), "low-utilization"));
}

// A CPU loop on a GPU machine: a CUDA torch loads the runtime, which starts CUPTI, and nothing
// runs on the GPU. Its device is the host's CPUs, not an idle GPU.
TEST(Diagnostics, ACpuLoopWithCuptiOnIsJudgedByItsCpus) {
  Profile p = loop_profile(false);
  p.collectors.push_back(CollectorInfo{"cupti", true, "MEMCPY, ..."});
  for (auto& it : p.iterations) it.wall_ns = 5 * kMs;
  for (int i = 0; i < 10; ++i) p.host_samples.push_back(HostSample{i * 100 * kMs, 0, i * 40 * kMs});  // 20 %
  const Analysis a = analyze(p, {});
  EXPECT_FALSE(a.gpu_busy);
  EXPECT_NE(a.device_note.find("recorded no kernel or copy"), std::string::npos) << a.device_note;
  auto ds = diagnose(p, a);
  auto d = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "low-utilization"; });
  ASSERT_NE(d, ds.end());
  EXPECT_EQ(d->message.find("GPU"), std::string::npos) << d->message;
}

// The observer's transfer rows carry no GPU time; the GPU's copy ranges give the bandwidth.
TEST(Analysis, GpuCopyRatesFromTheCopyRanges) {
  Profile p = loop_profile(false);
  TransferStats h2d;
  h2d.stage = "h2d";
  h2d.direction = Direction::kH2D;
  h2d.memory = HostMemory::kPinned;
  h2d.count = 10;
  h2d.bytes = 1000000000;  // 1 GB, host side: no duration
  p.transfers.push_back(h2d);
  StageStats copies = stage("gpu: memcpy HtoD", "gpu");
  copies.total_ns = 25 * kMs;
  p.stages.push_back(copies);
  EXPECT_TRUE(analyze(p, {}).gpu_copies.empty()) << "without CUPTI";
  p.collectors.push_back(CollectorInfo{"cupti", true, "MEMCPY, ..."});
  const Analysis a = analyze(p, {});
  ASSERT_EQ(a.gpu_copies.size(), 1u);  // no d2h bytes: no d2h rate
  EXPECT_EQ(a.gpu_copies[0].direction, "h2d");
  EXPECT_EQ(a.gpu_copies[0].bytes, 1000000000u);
  EXPECT_EQ(a.gpu_copies[0].gpu_ns, 25 * kMs);
  std::ostringstream text;
  ASSERT_TRUE(TextReporter(ReportOptions{}).render(p, text));
  EXPECT_NE(text.str().find("GPU copy time (CUPTI): h2d 953.7 MiB in 25.0 ms (40.00 GB/s)"), std::string::npos) << text.str();
}

TEST(Diagnostics, DroppedEvents) {
  Profile p = loop_profile(true);
  EXPECT_FALSE(has(run(p), "dropped-events"));
  p.dropped_events = 5;
  p.recorded_events = 995;
  EXPECT_TRUE(has(run(p), "dropped-events"));
}

TEST(Diagnostics, FailedRun) {
  Profile p = loop_profile(true);
  EXPECT_FALSE(has(run(p), "failed-run"));  // no launcher recorded how it ended
  p.run.exit_code = 0;
  EXPECT_FALSE(has(run(p), "failed-run"));
  p.run.exit_code = 1;
  auto message = [](const std::vector<Diagnostic>& ds) {
    for (const auto& d : ds)
      if (d.id == "failed-run") return d.message;
    return std::string();
  };
  EXPECT_NE(message(run(p)).find("the program exited with code 1:"), std::string::npos) << message(run(p));
  p.run.exit_code = 137;
  p.run.exit_signal = 9;
  EXPECT_NE(message(run(p)).find("the program was killed by signal 9 (SIGKILL):"), std::string::npos) << message(run(p));
}

TEST(Diagnostics, ReferenceBlas) {
  Profile p = loop_profile(true);
  EXPECT_FALSE(has(run(p), "reference-blas"));
  p.environment.blas = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3";
  auto ds = run(p);
  ASSERT_TRUE(has(ds, "reference-blas"));
  EXPECT_EQ(ds.back().severity, Severity::kError);
}

TEST(Diagnostics, ThreadOversubscription) {
  Profile p = loop_profile(true);
  p.threads.push_back(ThreadInfo{1, 2, "prefetch-idle-0", 0, 0});  // background priority: fine
  EXPECT_FALSE(has(run(p), "thread-oversubscription"));
  p.threads.push_back(ThreadInfo{2, 3, "prefetch-1", 0, 0});  // normal priority: 2 + 1 > 2 CPUs
  EXPECT_TRUE(has(run(p), "thread-oversubscription"));
  // A Python producer per pass (each epoch's and a validation loader's prefetch-0): one at a time.
  Profile passes = loop_profile(true);
  passes.environment.omp_num_threads = "1";
  for (std::uint32_t i = 1; i <= 4; ++i) passes.threads.push_back(ThreadInfo{i, 10 + i, "prefetch-0", 0, 0});
  const auto ds = run(passes);
  EXPECT_FALSE(has(ds, "thread-oversubscription")) << "1 compute + 1 producer on 2 CPUs";
  passes.environment.omp_num_threads = "2";
  const auto two = run(passes);
  ASSERT_TRUE(has(two, "thread-oversubscription"));
  const auto& d = *std::find_if(two.begin(), two.end(), [](const Diagnostic& x) { return x.id == "thread-oversubscription"; });
  EXPECT_DOUBLE_EQ(d.evidence.at("producer_threads"), 1.0);
  Profile q = loop_profile(true);
  q.environment.omp_num_threads = "4";
  EXPECT_TRUE(has(run(q), "thread-oversubscription"));
}

// Two of 20 analysed iterations take 10x the median, their DataLoader stage and their `for`
// line grown: 18 % of the loop's time that the median leaves out. One such iteration in 20 at
// 2x is not.
TEST(Diagnostics, SlowIterations) {
  Profile p = loop_profile(false);
  p.stages.push_back(stage("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "data"));
  LineStats l;
  l.file = "/w/train.py";
  l.line = 129;
  l.code = "for x, y in train_loader:";
  p.lines.push_back(l);
  for (auto& it : p.iterations) {
    it.lines[0] = 2 * kMs;
    it.stages["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"] = 2 * kMs;
  }
  for (int i : {8, 16}) {
    p.iterations[i].wall_ns = 1000 * kMs;
    p.iterations[i].stages["enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"] = 850 * kMs;
    p.iterations[i].lines[0] = 880 * kMs;
  }
  auto ds = run(p);
  ASSERT_TRUE(has(ds, "slow-iterations"));
  const auto& d = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "slow-iterations"; });
  EXPECT_EQ(d.severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(d.evidence.at("slow_iterations"), 2.0);
  EXPECT_DOUBLE_EQ(d.evidence.at("excess_ns"), 1800.0 * kMs);
  EXPECT_NE(d.message.find("2 of 18 iterations took over 3x the median (iterations 8 (1.00 s) and 16 (1.00 s) against a "
                           "median of 100 ms)"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__ took 848 ms more"), std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("the line train.py:129 `for x, y in train_loader:` 878 ms more"), std::string::npos) << d.message;
  Profile mild = loop_profile(false);
  mild.iterations[8].wall_ns = 200 * kMs;
  EXPECT_FALSE(has(run(mild), "slow-iterations"));
}

// The loop (pid 10) of the restart tests: iterations 100 ms apart, 8 and 16 taking 500 ms.
Profile restarting_loop() {
  Profile p = loop_profile(false);
  p.run.pid = 10;
  p.run.start_unix_ns = 1000 * kMs;
  for (auto& it : p.iterations) it.begin_ns = static_cast<std::int64_t>(it.index) * 100 * kMs;
  for (int i : {8, 16}) p.iterations[i].wall_ns = 500 * kMs;
  return p;
}

// Three sets of two workers for it, started `after` the iterations 0, 8 and 16 begin.
std::vector<Profile> worker_sets(const Profile& p, std::int64_t after) {
  std::vector<Profile> ws;
  for (int i : {0, 8, 16})
    for (int w = 0; w < 2; ++w) {
      Profile x;
      x.run.pid = 20 + i + w;
      x.run.parent_pid = 10;
      x.run.start_unix_ns = p.run.start_unix_ns + p.iterations[static_cast<std::size_t>(i)].begin_ns + after + w * kMs;
      x.wall_ns = 700 * kMs;
      ws.push_back(x);
    }
  return ws;
}

// The workers' counts of tensor storages per batch: their mean over every counted batch, and
// the sharing strategy named in the counter.
TEST(LoaderWorkersSummary, TensorsPerBatchAndTheSharingStrategy) {
  const Profile p = restarting_loop();
  std::vector<Profile> ws = worker_sets(p, 10 * kMs);
  ws[0].counters.push_back(CounterStats{"tensors per batch (file_descriptor)", 10, 24, 24, 24, 24});
  ws[1].counters.push_back(CounterStats{"tensors per batch (file_descriptor)", 30, 20, 28, 28, 28});
  const LoaderWorkers w = summarize_loader_workers(p, ws);
  EXPECT_DOUBLE_EQ(w.tensors_per_batch, 27.0);
  EXPECT_EQ(w.sharing, "file_descriptor");
  EXPECT_EQ(summarize_loader_workers(p, worker_sets(p, 10 * kMs)).tensors_per_batch, 0.0);  // not counted
}

// Workers started anew each epoch (three sets of two): the iterations the second and third
// sets began in are the restarts' cost; set_loader_workers adds loader-restarts.
TEST(Diagnostics, LoaderRestarts) {
  const Profile p = restarting_loop();
  std::vector<Profile> ws = worker_sets(p, 10 * kMs);
  Report r = make_report(p, {});
  set_loader_workers(r, summarize_loader_workers(p, ws));
  ASSERT_EQ(r.workers.generations.size(), 3u);
  EXPECT_EQ(r.workers.generations[1].workers, 2);
  ASSERT_TRUE(has(r.diagnostics, "loader-restarts"));
  const auto& d = *std::find_if(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-restarts"; });
  EXPECT_DOUBLE_EQ(d.evidence.at("starts"), 3.0);
  EXPECT_DOUBLE_EQ(d.evidence.at("restart_excess_ns"), 800.0 * kMs);
  EXPECT_NE(d.message.find("starts its 2 worker processes anew at each pass over it (3 starts; persistent_workers is off): "
                           "in the iterations the restarted workers began in, 8 (500 ms), 16 (500 ms), their start-up until "
                           "the first batch took 800 ms beyond"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("persistent_workers=True"), std::string::npos);
  // Persistent workers: one set, alive throughout.
  for (std::size_t i = 2; i < ws.size(); ++i) ws[i].run.start_unix_ns = ws[i % 2].run.start_unix_ns;
  for (auto& w : ws) w.wall_ns = 3000 * kMs;
  Report q = make_report(p, {});
  set_loader_workers(q, summarize_loader_workers(p, ws));
  EXPECT_EQ(q.workers.generations.size(), 1u);
  EXPECT_FALSE(has(q.diagnostics, "loader-restarts"));
}

// Spawned sets: each worker's session begins 5 ms before its first batch, after 400 ms of the
// new interpreter's imports. Counted from the sessions, the restarts cost nothing; from the
// processes' start (run.process_start_unix_ns), 400 ms less a batch each.
TEST(Diagnostics, LoaderRestartsOfSpawnedWorkersCountTheirImports) {
  const Profile p = restarting_loop();
  std::vector<Profile> ws = worker_sets(p, 400 * kMs);
  for (Profile& x : ws) {
    x.run.process_start_unix_ns = x.run.start_unix_ns - 400 * kMs;
    IterationStats batch;
    batch.wall_ns = 5 * kMs;
    batch.complete = true;
    x.iterations.push_back(batch);
  }
  Report r = make_report(p, {});
  set_loader_workers(r, summarize_loader_workers(p, ws));
  ASSERT_EQ(r.workers.generations.size(), 3u);
  EXPECT_EQ(r.workers.generations[1].start_ns, p.iterations[8].begin_ns);
  ASSERT_TRUE(has(r.diagnostics, "loader-restarts"));
  const auto& d = *std::find_if(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-restarts"; });
  EXPECT_DOUBLE_EQ(d.evidence.at("restart_excess_ns"), 2 * 400.0 * kMs);
  for (auto& w : ws) w.run.process_start_unix_ns = 0;  // as profiles without it read
  Report q = make_report(p, {});
  set_loader_workers(q, summarize_loader_workers(p, ws));
  EXPECT_FALSE(has(q.diagnostics, "loader-restarts"));
}

// Lightning's shape: a training loader's workers (2, started anew each epoch, the last epoch's
// exiting after the next's start) beside a validation loader's (2 per pass, in the iterations
// the training sets begin in). The training loader's sets are summarized; a restart costs its
// start-up until the first batch, not the validation pass in the same iteration.
TEST(Diagnostics, LoaderRestartsBesideAValidationLoader) {
  Profile p = loop_profile(false);
  p.run.pid = 10;
  p.run.start_unix_ns = 1000 * kMs;
  for (auto& it : p.iterations) it.begin_ns = static_cast<std::int64_t>(it.index) * 100 * kMs;
  for (int i : {8, 16}) p.iterations[i].wall_ns = 500 * kMs;
  auto at = [&](int i) { return p.run.start_unix_ns + p.iterations[i].begin_ns; };
  const std::string train = "TensorDataset at 0x7f00, batch_size 128, 2 workers";
  const std::string val = "TensorDataset at 0x7f80, batch_size 256, 2 workers";
  std::vector<Profile> ws;
  // A worker's batches: the first ready first_ms after its start, then one every step_ms.
  auto add = [&](const std::string& label, std::int64_t start, int batches, std::int64_t first_ms, std::int64_t step_ms) {
    Profile x;
    x.run.pid = 20 + static_cast<std::int64_t>(ws.size());
    x.run.parent_pid = 10;
    x.run.loader = label;
    x.run.start_unix_ns = start;
    x.wall_ns = 1200 * kMs;  // each set outlives the next one's start
    for (int b = 0; b < batches; ++b) {
      IterationStats it;
      it.index = static_cast<std::uint64_t>(b);
      it.begin_ns = (first_ms - 2 + step_ms * b) * kMs;
      it.wall_ns = 2 * kMs;
      x.iterations.push_back(it);
    }
    ws.push_back(x);
  };
  for (int i : {0, 8, 16})
    for (int w = 0; w < 2; ++w) add(train, at(i) + (i == 0 ? 0 : 300 * kMs) + w * kMs, 8, 150, 100);  // 150 ms to a batch
  // The evaluation loader fetches more batches than the training one, all in the two iterations
  // its passes ran in: it is not the loop's loader.
  for (int i : {8, 16})
    for (int w = 0; w < 2; ++w) add(val, at(i) + 10 * kMs + w * kMs, 30, 20, 2);
  Report r = make_report(p, {});
  set_loader_workers(r, summarize_loader_workers(p, ws));
  const LoaderWorkers& w = r.workers;
  EXPECT_EQ(w.loader, train);
  EXPECT_EQ(w.pids.size(), 6u);
  EXPECT_EQ(w.other_loaders, 1u);
  EXPECT_EQ(w.other_profiles, 4u);
  EXPECT_EQ(w.other_batches, 120u);
  EXPECT_EQ(w.batches, 48u);
  EXPECT_EQ(w.concurrent, 2);  // not 4: the last set's workers exiting late are not fetching
  ASSERT_EQ(w.generations.size(), 3u);
  EXPECT_EQ(w.generations[1].workers, 2);
  EXPECT_EQ(w.generations[1].first_batch_ns, p.iterations[8].begin_ns + 450 * kMs);
  ASSERT_TRUE(has(r.diagnostics, "loader-restarts"));
  const auto& d = *std::find_if(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-restarts"; });
  EXPECT_DOUBLE_EQ(d.evidence.at("starts"), 3.0);
  EXPECT_DOUBLE_EQ(d.evidence.at("workers"), 2.0);
  // 150 ms to the first batch less a batch's 2 ms, twice: not the iterations' 800 ms beyond the median
  EXPECT_DOUBLE_EQ(d.evidence.at("restart_excess_ns"), 296.0 * kMs);
  EXPECT_NE(d.message.find("the DataLoader (" + train + ") starts its 2 worker processes"), std::string::npos) << d.message;
  const std::string text = loader_workers_text(w);
  EXPECT_NE(text.find("6 DataLoader worker profiles"), std::string::npos) << text;
  EXPECT_NE(text.find("2 at once"), std::string::npos) << text;
  EXPECT_NE(text.find("of the loader that fed the most iterations, " + train + "; 4 more worker profiles, of 1 other "
                      "loader (120 batches"),
            std::string::npos)
      << text;
}

// loader-copy-on-write: a worker's private memory growing while its RSS stays is pages it
// copied from the loop's process; growth of both is memory of its own (a buffer, a cache).
TEST(Diagnostics, LoaderCopyOnWriteIsPrivateGrowthBeyondRss) {
  Profile p = loop_profile(false);
  p.run.pid = 10;
  p.run.start_unix_ns = 1000 * kMs;
  HostSample loop_host;
  loop_host.rss_bytes = 900LL << 20;
  p.host_samples.push_back(loop_host);
  // Two sets of two workers; each worker's readings: (private MiB, RSS MiB) at start and end.
  // file_mib: file pages read in (a memory-mapped dataset), in RSS and in neither anonymous
  // RSS nor private dirty memory.
  auto workers = [&](std::int64_t copied_mib, std::int64_t own_mib, std::int64_t file_mib = 0, int per_set = 2) {
    std::vector<Profile> ws;
    for (int set = 0; set < 2; ++set)
      for (int k = 0; k < per_set; ++k) {
        Profile x;
        x.run.pid = 20 + static_cast<std::int64_t>(ws.size());
        x.run.parent_pid = 10;
        x.run.start_unix_ns = p.run.start_unix_ns + set * 2000 * kMs + k * kMs;
        x.wall_ns = 1500 * kMs;
        IterationStats it;
        it.begin_ns = 100 * kMs;
        it.wall_ns = 2 * kMs;
        x.iterations.push_back(it);
        for (int r = 0; r < 3; ++r) {
          HostSample h;
          h.ts_ns = r * 600 * kMs;
          h.rss_bytes = (300 + r * own_mib / 2 + r * file_mib / 2) << 20;
          h.rss_file_bytes = (100 + r * file_mib / 2) << 20;
          h.private_dirty_bytes = (12 + r * (copied_mib + own_mib) / 2 + (set == 1 ? r : 0)) << 20;
          x.host_samples.push_back(h);
        }
        HostSample unread;  // a sample without a reading between them
        unread.ts_ns = 700 * kMs;
        unread.rss_bytes = 5000LL << 20;
        x.host_samples.insert(x.host_samples.begin() + 2, unread);
        ws.push_back(x);
      }
    return ws;
  };
  Report r = make_report(p, {});
  set_loader_workers(r, summarize_loader_workers(p, workers(48, 10)));
  ASSERT_EQ(r.workers.generations.size(), 2u);
  EXPECT_EQ(r.workers.most_copied, 1);  // its workers copied 2 MiB more each
  EXPECT_EQ(r.workers.generations[0].copy_measured, 2);
  EXPECT_EQ(r.workers.generations[0].copied_bytes, 96LL << 20);
  ASSERT_TRUE(has(r.diagnostics, "loader-copy-on-write"));
  const auto& d = *std::find_if(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-copy-on-write"; });
  EXPECT_DOUBLE_EQ(d.evidence.at("copied_bytes"), static_cast<double>(100LL << 20));
  EXPECT_DOUBLE_EQ(d.evidence.at("copied_per_worker_bytes"), static_cast<double>(50LL << 20));
  EXPECT_DOUBLE_EQ(d.evidence.at("workers"), 2.0);
  EXPECT_NE(d.message.find("copied 100.0 MiB of the loop process's memory (RSS 900.0 MiB) while they fetched: 2 workers, "
                           "50.0 MiB each, in the one of 2 passes whose workers copied the most"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("numpy arrays or tensors"), std::string::npos) << d.message;
  // Memory of their own (RSS grew as much as private memory), or too little copied: no warning.
  Report own = make_report(p, {});
  set_loader_workers(own, summarize_loader_workers(p, workers(0, 200)));
  EXPECT_FALSE(has(own.diagnostics, "loader-copy-on-write"));
  Report little = make_report(p, {});
  set_loader_workers(little, summarize_loader_workers(p, workers(20, 0)));
  EXPECT_FALSE(has(little.diagnostics, "loader-copy-on-write"));
  // A memory-mapped dataset's pages grow RSS, not what was copied.
  Report mapped = make_report(p, {});
  set_loader_workers(mapped, summarize_loader_workers(p, workers(48, 0, 400)));
  ASSERT_TRUE(has(mapped.diagnostics, "loader-copy-on-write"));
  EXPECT_EQ(mapped.workers.generations[0].copied_bytes, 96LL << 20);
  // Many workers each copying a little (their interpreters' own objects): no warning.
  Report many = make_report(p, {});
  set_loader_workers(many, summarize_loader_workers(p, workers(10, 0, 0, 8)));
  EXPECT_GE(many.workers.generations[0].copied_bytes, 64LL << 20);
  EXPECT_FALSE(has(many.diagnostics, "loader-copy-on-write"));
  // Profiles without readings (spawned workers, older profiles): nothing measured.
  std::vector<Profile> bare = workers(48, 0);
  for (Profile& x : bare)
    for (HostSample& h : x.host_samples) h.private_dirty_bytes = 0;
  EXPECT_EQ(summarize_loader_workers(p, bare).most_copied, -1);
}

// Two workers busy half their time (1 CPU) beside torch's 2 compute threads on 2 CPUs: compute
// waits for cores. With OMP_NUM_THREADS=1 they fit; without torch's thread count, no verdict.
TEST(Diagnostics, LoaderContention) {
  Profile p = loop_profile(false);
  p.run.pid = 10;
  p.counters.push_back(CounterStats{"torch threads", 2, 2, 2, 2, 2});
  std::vector<Profile> ws;
  for (int w = 0; w < 2; ++w) {
    Profile x;
    x.run.pid = 20 + w;
    x.run.parent_pid = 10;
    x.run.start_unix_ns = w * kMs;
    x.wall_ns = 2000 * kMs;
    IterationStats it;
    it.wall_ns = 1000 * kMs;  // busy half its life
    x.iterations.push_back(it);
    ws.push_back(x);
  }
  Report r = make_report(p, {});
  set_loader_workers(r, summarize_loader_workers(p, ws));
  ASSERT_TRUE(has(r.diagnostics, "loader-contention"));
  const auto& d = *std::find_if(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& x) { return x.id == "loader-contention"; });
  EXPECT_DOUBLE_EQ(d.evidence.at("worker_cpus"), 1.0);
  EXPECT_NE(d.message.find("the loop's 2 compute threads and its 2 DataLoader worker processes (busy 50% of their time: 1.0 "
                           "CPUs on average) share 2 CPUs"),
            std::string::npos)
      << d.message;
  EXPECT_NE(d.message.find("torch.set_num_threads(1)"), std::string::npos) << d.message;
  p.counters.clear();
  p.environment.omp_num_threads = "1";
  Report q = make_report(p, {});
  set_loader_workers(q, summarize_loader_workers(p, ws));
  EXPECT_FALSE(has(q.diagnostics, "loader-contention"));
  p.environment.omp_num_threads.clear();
  Report u = make_report(p, {});
  set_loader_workers(u, summarize_loader_workers(p, ws));
  EXPECT_FALSE(has(u.diagnostics, "loader-contention"));
}

// A noisy host: iterations of 25 or 47-90 ms (another tenant), 1.5 ms of data in most, 12 ms
// in a few around the median. The what-if saves the median per-iteration saving (1.5 ms), not
// the gap between the median of the predictions and the median iteration (11 ms).
TEST(Analysis, TheWhatIfSavesWhatTheDataTookOnANoisyHost) {
  Profile p;
  p.stages = {stage("sample", "data"), stage("forward", "compute")};
  const std::int64_t walls[] = {25, 48, 26, 52, 25, 81, 47, 25, 88, 26, 47, 50, 25, 70, 48, 26, 47, 25, 55, 26, 47};
  for (std::size_t i = 0; i < std::size(walls); ++i) {
    IterationStats it;
    it.index = i;
    it.wall_ns = walls[i] * kMs;
    // Around the median, some iterations also took a 12 ms read.
    it.stages["sample"] = walls[i] == 47 || walls[i] == 48 ? 12 * kMs : 3 * kMs / 2;
    it.stages["forward"] = it.wall_ns - it.stages["sample"] - kMs / 2;
    p.iterations.push_back(it);
  }
  AnalysisOptions o;
  o.skip = 0;
  const Analysis a = analyze(p, o);
  EXPECT_EQ(a.iteration_median_ns, 47 * kMs);
  EXPECT_EQ(a.whatif_predicted_ns, 47 * kMs - 3 * kMs / 2);
  EXPECT_LT(a.whatif_speedup, 1.04);
}

// dense-embedding-gradient: an embedding's backward that takes a real share of the iteration
// (a dense gradient of a large table) beside a real optimizer share; a small table's is not.
TEST(Diagnostics, DenseEmbeddingGradient) {
  auto profile = [](std::int64_t embedding_backward_ns) {
    Profile p = loop_profile(true);
    p.stages.push_back(stage("optimizer", "compute"));
    StageStats grad = stage("autograd::engine::evaluate_function: EmbeddingBackward0", "op");
    for (auto& it : p.iterations) {
      it.stages["optimizer"] = 30 * kMs;
      grad.total_ns += embedding_backward_ns;
      ++grad.hits;
    }
    p.stages.push_back(grad);
    return p;
  };
  auto ds = run(profile(10 * kMs));
  ASSERT_TRUE(has(ds, "dense-embedding-gradient"));
  const auto& d = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "dense-embedding-gradient"; });
  EXPECT_DOUBLE_EQ(d.evidence.at("embedding_backward_ns"), 10.0 * kMs);
  EXPECT_NE(d.message.find("takes 10.0 ms per iteration (10%) and the optimizer 30.0 ms (30%)"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("nn.Embedding(..., sparse=True) with torch.optim.SparseAdam"), std::string::npos) << d.message;
  EXPECT_FALSE(has(run(profile(kMs)), "dense-embedding-gradient"));  // a small table's backward
  Profile no_optimizer = profile(10 * kMs);
  for (auto& it : no_optimizer.iterations) it.stages["optimizer"] = kMs;
  EXPECT_FALSE(has(run(no_optimizer), "dense-embedding-gradient"));
  // Sparse gradients in use (sparse=True with SparseAdam): their backward is the rows looked up,
  // whatever its share of a short iteration.
  Profile sparse = profile(10 * kMs);
  sparse.stages.push_back(stage("aten::coalesce", "op"));
  EXPECT_FALSE(has(run(sparse), "dense-embedding-gradient"));
}

// item-by-item-fetch: a DataLoader with a batch_size over a TensorDataset calls dataset[i] per
// item and stacks the items; the counters of the Python package's fetch wrapper say how long.
TEST(Diagnostics, ItemByItemFetch) {
  // 20 batches of 1024 items, one an iteration of 100 ms; `slowest`: one batch's calls that long.
  auto profile = [](std::string label, double fetch_ms, double collate_ms, bool observed = false) {
    Profile p = loop_profile(false);
    const std::string tail = std::string(observed ? kOpsObserved : "") + ": " + label;
    auto counter = [&](std::string name, double min, double mean, double max) {
      CounterStats c;
      c.name = std::move(name);
      c.samples = 20;
      c.min = c.last = min;
      c.mean = mean;
      c.max = max;
      p.counters.push_back(c);
    };
    counter(kFetchItemsCounter + tail, 1000, 1020, 1024);  // the last batch is short
    // 19 batches of fetch_ms and one of 40 ms (the pass's first): the slowest is left out.
    counter(kFetchNsCounter + tail, fetch_ms * kMs, (19 * fetch_ms + 40) / 20 * kMs, 40.0 * kMs);
    counter(kCollateNsCounter + tail, collate_ms * kMs, collate_ms * kMs, collate_ms * kMs);
    return p;
  };
  auto find = [](const std::vector<Diagnostic>& ds) {
    auto it = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "item-by-item-fetch"; });
    return it == ds.end() ? std::optional<Diagnostic>() : std::optional<Diagnostic>(*it);
  };
  const auto d = find(run(profile("TensorDataset with default_collate", 4, 2)));
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(d->evidence.at("items"), 1024);
  EXPECT_NEAR(d->evidence.at("fetch_ns"), 4.0 * kMs, 1);
  EXPECT_NEAR(d->evidence.at("share"), 0.06, 1e-9);  // (4 + 2) ms of 100 ms
  EXPECT_NE(d->message.find("1024 dataset[i] calls on its TensorDataset (4.00 ms, 3.92 us an item) and default_collate "
                            "stacking the 1024 items (2.00 ms), 6.00 ms a batch on average (6% of the iteration)"),
            std::string::npos)
      << d->message;
  EXPECT_NE(d->message.find("A TensorDataset takes a list of indices at once: DataLoader(dataset, batch_size=None, "
                            "sampler=BatchSampler(RandomSampler(dataset), batch_size=1024, drop_last=False))"),
            std::string::npos)
      << d->message;
  EXPECT_NE(d->message.find("one index per tensor, with no stacking."), std::string::npos) << d->message;
  // Fetched by a prefetcher's producer (the DataLoader's passes on another thread): hidden, and
  // said so; other data stages beside the loop are not the fetch.
  Profile other = profile("TensorDataset with default_collate", 4, 2);
  for (auto& it : other.iterations) it.other_threads["sample"] = 6 * kMs;
  ASSERT_TRUE(find(run(other)));
  EXPECT_EQ(find(run(other))->message.find("beside the loop"), std::string::npos);
  Profile beside = profile("TensorDataset with default_collate", 4, 2);
  StageStats scope = stage("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "data");
  scope.by_thread = {StageThreadStats{0, 20, 10 * kMs, 10 * kMs}, StageThreadStats{1, 20, 120 * kMs, 120 * kMs}};
  beside.stages.push_back(scope);
  const auto hidden = find(run(beside));
  ASSERT_TRUE(hidden);
  EXPECT_NE(hidden->message.find("6.00 ms a batch on average (6% of the iteration's length, on a thread beside the loop: "
                                 "hidden, yet it keeps a core busy, and its Python holds the GIL the loop needs)"),
            std::string::npos)
      << hidden->message;
  // Under 5 % of the iteration: nothing to say.
  EXPECT_FALSE(find(run(profile("TensorDataset with default_collate", 2, 1))));
  // A collate function of the program's own stays: only the calls count, and it gets the batch.
  EXPECT_FALSE(find(run(profile("Tensor with sample_blocks", 4, 30))));
  const auto own = find(run(profile("Tensor with sample_blocks", 6, 30)));
  ASSERT_TRUE(own);
  EXPECT_NE(own->message.find("sample_blocks over the list of 1024 items (30.0 ms), 36.0 ms a batch on average, 6.00 ms of "
                              "it the calls (6% of the iteration)"),
            std::string::npos)
      << own->message;
  EXPECT_NE(own->message.find("one index; sample_blocks then receives that batch instead of a list of its items."),
            std::string::npos)
      << own->message;
  // A dataset with its own __getitem__: only where an item costs little more than the call.
  const auto cheap = find(run(profile(std::string("NodeIds") + kOwnGetitem + " with default_collate", 6, 2)));
  ASSERT_TRUE(cheap);
  EXPECT_NE(cheap->message.find("on its NodeIds (6.00 ms"), std::string::npos) << cheap->message;
  EXPECT_NE(cheap->message.find("If NodeIds.__getitem__ can take a list of indices"), std::string::npos) << cheap->message;
  EXPECT_FALSE(find(run(profile(std::string("Graphs") + kOwnGetitem + " with default_collate", 12, 2))));  // 11.7 us an item
  // Two batches only, none observed (a short worker): their figures, rather than none.
  {
    Profile two = profile("TensorDataset with default_collate", 4, 2);
    for (CounterStats& c : two.counters) c.samples = 2;
    EXPECT_EQ(item_fetches(two).size(), 1u);
  }
  // Only batches whose ops were observed: their figures, as they are.
  EXPECT_TRUE(find(run(profile("TensorDataset with default_collate", 4, 2, true))));
  // A DataLoader worker's profile is no loop.
  Profile worker = profile("TensorDataset with default_collate", 4, 2);
  worker.collectors.push_back(CollectorInfo{"loader-worker", true, "a data loader's worker process"});
  EXPECT_FALSE(find(run(worker)));
}

// python-in-forward: a forward whose time is mostly outside its ops (graphsage-simple's
// aggregator sampling over Python sets in the model's call), a real share of the iteration.
TEST(Diagnostics, PythonInForward) {
  auto profile = [](std::int64_t ops_ns) {
    Profile p = loop_profile(false);  // forward 40 ms of a 100 ms iteration
    for (StageStats& s : p.stages)
      if (s.name == "forward") {
        s.total_ns = 20 * 40 * kMs;
        s.self_ns = s.total_ns - 20 * ops_ns;
      }
    p.stages.push_back(stage("aten::linear", "op"));
    p.stage_edges = {StageEdge{"forward", "aten::linear", 20, 20 * ops_ns, 20 * ops_ns}};
    LineStats l;
    l.file = "/w/gs.py";
    l.line = 71;
    l.function = "<module>";
    l.code = "loss = graphsage.loss(nodes, labels)";
    l.hits = 20;
    l.total_ns = 20 * 80 * kMs;
    l.stages = {{"forward", 20 * 40 * kMs}};
    p.lines = {l};
    p.run.command = {"/usr/bin/python3", "gs.py"};
    return p;
  };
  auto ds = run(profile(10 * kMs));
  ASSERT_TRUE(has(ds, "python-in-forward"));
  const auto& d = *std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "python-in-forward"; });
  EXPECT_DOUBLE_EQ(d.evidence.at("own_share"), 0.75);
  EXPECT_DOUBLE_EQ(d.evidence.at("python_ns"), 30.0 * kMs);
  EXPECT_NE(d.message.find("spends 30.0 ms per iteration (30% of the iteration, 75% of the forward) with no torch op "
                           "running; most of it while gs.py:71 `loss = graphsage.loss(nodes, labels)` ran"),
            std::string::npos)
      << d.message;
  EXPECT_FALSE(has(run(profile(30 * kMs)), "python-in-forward"));  // ops hold most of the forward
  Profile short_forward = profile(kMs);
  for (auto& it : short_forward.iterations) it.stages["forward"] = 10 * kMs;  // 9 ms of Python: under a fifth
  EXPECT_FALSE(has(run(short_forward), "python-in-forward"));
  // No op stages recorded (GNNPROF_TORCH_OP_STAGES=0), only gnnprof's own work inside: no verdict.
  Profile no_ops = profile(kMs);
  no_ops.stages.push_back(stage("gnnprof (own work)", "profiler"));
  no_ops.stage_edges = {StageEdge{"forward", "gnnprof (own work)", 20, 20 * kMs, 20 * kMs}};
  EXPECT_FALSE(has(run(no_ops), "python-in-forward"));
  Profile gpu = profile(10 * kMs);  // ops return at launch: not judged on a device yet
  gpu.collectors.push_back(CollectorInfo{"cuda-tensors", true, "the loop's tensors are on cuda:0"});
  EXPECT_FALSE(has(run(gpu), "python-in-forward"));
  Profile native = profile(10 * kMs);  // a C++ program's forward: its own code, not Python
  native.run.command = {"./sage_train"};
  EXPECT_FALSE(has(run(native), "python-in-forward"));
  // The loop's thread off the CPU for most of that time, another thread recording beside it: it
  // waited for the GIL (a background generator's Python), which is no Python of the model's.
  Profile gil = profile(10 * kMs);
  gil.counters.push_back(CounterStats{"off-CPU ns: forward", 20, 0, 0, 0.8 * 30 * kMs, 0});  // 80% of the own 30 ms
  gil.threads = {ThreadInfo{0, 1, "main", 100, 0}, ThreadInfo{1, 2, "", 50, 0}};
  ds = run(gil);
  const auto g = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "python-in-forward"; });
  ASSERT_NE(g, ds.end());
  EXPECT_NEAR(g->evidence.at("off_cpu_share"), 0.8, 1e-9);
  EXPECT_NE(g->message.find("and 80% of that with the loop's thread off the CPU: it waited, most likely for the GIL"),
            std::string::npos)
      << g->message;
  EXPECT_EQ(g->message.find("plain Python inside the model's call"), std::string::npos);
  gil.threads.resize(1);  // no other thread: the same time is the model's Python
  ds = run(gil);
  const auto alone = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& x) { return x.id == "python-in-forward"; });
  ASSERT_NE(alone, ds.end());
  EXPECT_NE(alone->message.find("plain Python inside the model's call"), std::string::npos);
}

TEST(Diagnostics, EveryRuleHasAStableId) {
  EXPECT_EQ(diagnostic_ids().size(), 20u);
  Profile clean = loop_profile(true);
  EXPECT_TRUE(run(clean).empty());
}

}  // namespace
}  // namespace gnnprof::reports

namespace gnnprof::reports {
namespace {

// Iteration sampling: iterations whose torch ops were not observed hold the user scopes only
// (here "optimizer"); the stage figures come from the observed ones, and the others' wall is
// reported beside them. The flag survives the JSON round trip.
// The observer's cost falls on op-dense stages most: a DataLoader scope whose collate reads
// tensor elements one by one takes 30 ms observed, 10 ms not. It is scaled on its own (with
// the op nested in it), the rest of the iteration by the rest's pace; an observed iteration is
// no warm-up and no slow iteration for its cost.
TEST(Analysis, AScopeIsScaledToItsOwnPaceInTheUnobservedIterations) {
  Profile p;
  const std::string loader = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  p.stages = {stage(loader, "data"), stage("aten::item", "op"), stage("forward", "compute"), stage("backward", "compute")};
  p.stage_edges = {StageEdge{loader, "aten::item", 10, 0, 0}};
  for (int i = 0; i < 40; ++i) {
    IterationStats it;
    it.index = static_cast<std::uint64_t>(i);
    it.ops_observed = i < 3 || i % 5 == 0;  // the observer's first iterations, then one in 5
    if (it.ops_observed) {
      it.stages = {{loader, 30 * kMs}, {"aten::item", 12 * kMs}, {"forward", 10 * kMs}, {"backward", 10 * kMs}};
      it.unattributed_ns = kMs;
      it.categories = {{"data", 30 * kMs}, {"compute", 20 * kMs}};
      it.wall_ns = 51 * kMs;
    } else {
      it.stages = {{loader, 10 * kMs}};
      it.unattributed_ns = 14 * kMs;
      it.categories = {{"data", 10 * kMs}};
      it.wall_ns = 24 * kMs;
    }
    p.iterations.push_back(it);
  }
  const Analysis a = analyze(p, {});
  EXPECT_EQ(a.skipped, 0u) << "the observed first iterations are no warm-up";
  EXPECT_EQ(a.exposed_data_ns, 10 * kMs);
  EXPECT_EQ(a.compute_ns, 20 * kMs * 14 / 21);  // the rest: 21 ms observed, 14 ms not
  EXPECT_EQ(a.iteration_median_ns, 24 * kMs);
  for (const auto& s : a.loop_stages) {
    if (s.name == "aten::item") {
      EXPECT_EQ(s.median_ns, 4 * kMs);  // with its scope, by a third
    }
  }
  EXPECT_NEAR(a.whatif_speedup, 24.0 / 14.0, 0.01);  // max(10, 13.3) + 0.7 ms rest
  EXPECT_FALSE(has(run(p), "slow-iterations"));
  const std::string note = sampling_note(a);
  EXPECT_NE(note.find(loader + " 30.0 ms -> 10.0 ms"), std::string::npos) << note;
  EXPECT_NE(note.find("outside those scopes likewise (21.0 ms -> 14.0 ms)"), std::string::npos) << note;

  // A slow unobserved iteration is named by what grew in the unobserved ones: the scope.
  for (int i : {11, 22, 33, 37}) {
    p.iterations[static_cast<std::size_t>(i)].stages[loader] = 110 * kMs;
    p.iterations[static_cast<std::size_t>(i)].wall_ns = 124 * kMs;
  }
  const auto ds = run(p);
  const auto slow = std::find_if(ds.begin(), ds.end(), [](const Diagnostic& d) { return d.id == "slow-iterations"; });
  ASSERT_NE(slow, ds.end());
  EXPECT_NE(slow->message.find("4 of 40 iterations"), std::string::npos) << slow->message;
  EXPECT_NE(slow->message.find("In them, " + loader + " took 100 ms more"), std::string::npos) << slow->message;
}

// A wait for DataLoader workers is longer in the faster unobserved iterations (the slower
// observed loop finds more batches ready): scaled up to it, not capped at its observed time.
TEST(Analysis, AWaitForWorkersIsScaledUpToTheUnobservedPace) {
  Profile p;
  const std::string wait = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
  p.stages = {stage(wait, "data"), stage("forward", "compute")};
  for (int i = 0; i < 30; ++i) {
    IterationStats it;
    it.index = static_cast<std::uint64_t>(i);
    it.ops_observed = i % 3 == 0;
    it.stages = {{wait, (it.ops_observed ? 5 : 10) * kMs}};
    if (it.ops_observed) it.stages["forward"] = 30 * kMs;
    it.wall_ns = it.ops_observed ? 36 * kMs : 30 * kMs;
    p.iterations.push_back(it);
  }
  const Analysis a = analyze(p, AnalysisOptions{0});
  EXPECT_EQ(a.exposed_data_ns, 10 * kMs);
  EXPECT_EQ(a.iteration_median_ns, 30 * kMs);  // 10 ms of wait + the rest (31 -> 20 ms)
}

TEST(Analysis, StageFiguresComeFromTheIterationsWhoseOpsWereObserved) {
  Profile p;
  p.stages = {stage("forward", "compute"), stage("backward", "compute"), stage("optimizer", "compute")};
  for (int i = 0; i < 12; ++i) {
    IterationStats it;
    it.index = static_cast<std::uint64_t>(i);
    it.ops_observed = i % 4 == 0;
    it.wall_ns = (it.ops_observed ? 130 : 100) * kMs;
    if (it.ops_observed) {
      it.stages["forward"] = 70 * kMs;
      it.stages["backward"] = 50 * kMs;
    }
    it.stages["optimizer"] = 5 * kMs;
    p.iterations.push_back(it);
  }
  const Analysis a = analyze(p, AnalysisOptions{0});
  EXPECT_EQ(a.iterations_used, 12u);
  EXPECT_EQ(a.iterations_unobserved, 9u);
  EXPECT_EQ(a.unobserved_iteration_median_ns, 100 * kMs);
  EXPECT_EQ(a.observed_iteration_median_ns, 130 * kMs);
  // The loop as it runs, the headline: every iteration (most without the observer's cost).
  EXPECT_EQ(a.run_iteration_median_ns, 100 * kMs);
  // The observed iterations at the others' pace: the optimizer scope took 5 ms in both, the
  // rest 125 ms observed against 95 ms: forward and backward scaled by 0.76.
  EXPECT_EQ(a.iteration_median_ns, 100 * kMs);
  ASSERT_FALSE(a.loop_stages.empty());
  EXPECT_EQ(a.loop_stages[0].name, "forward");
  EXPECT_EQ(a.loop_stages[0].median_ns, 53'200'000);  // not 0, the median over all 12
  EXPECT_EQ(a.compute_ns, 96'200'000);
  ASSERT_EQ(a.observer_scales.size(), 2u);
  EXPECT_EQ(a.observer_scales[0].scope, "optimizer");
  EXPECT_EQ(a.observer_scales[1].scope, "");
  EXPECT_EQ(a.observer_scales[1].observed_ns, 125 * kMs);
  EXPECT_EQ(a.observer_scales[1].unobserved_ns, 95 * kMs);
  auto analysis_text = [](const Profile& q) {
    std::ostringstream out;
    EXPECT_TRUE(TextReporter({}).render(q, out));
    return out.str();
  };
  EXPECT_NE(analysis_text(p).find("took 100 ms (median): the observer adds +30.0% to an observed iteration"),
            std::string::npos)
      << analysis_text(p);
  // Observed iterations faster than the others: the spread, not a negative cost.
  Profile faster = p;
  for (auto& it : faster.iterations) it.wall_ns = (it.ops_observed ? 90 : 100) * kMs;
  EXPECT_NE(analysis_text(faster).find("observed iterations ran 10.0% faster, so the observer's cost is within"),
            std::string::npos)
      << analysis_text(faster);

  // Under 3 unobserved iterations: the observed ones as recorded.
  Profile few = p;
  for (std::size_t i = 3; i < few.iterations.size(); ++i) few.iterations[i] = p.iterations[0];
  const Analysis f = analyze(few, AnalysisOptions{0});
  EXPECT_EQ(f.iterations_unobserved, 2u);
  EXPECT_TRUE(f.observer_scales.empty());
  EXPECT_EQ(f.compute_ns, 125 * kMs);

  // Every iteration observed (or none flagged): all of them, nothing said about sampling.
  for (auto& it : p.iterations) it.ops_observed = true;
  EXPECT_EQ(analyze(p, AnalysisOptions{0}).iterations_unobserved, 0u);

  p.iterations[1].ops_observed = false;
  auto back = profile_from_json(profile_to_json(p), "mem");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_FALSE(back->iterations[1].ops_observed);
  EXPECT_TRUE(back->iterations[0].ops_observed);
  EXPECT_EQ(profile_to_json(p).find("\"ops_observed\":true"), std::string::npos) << "written only when false";

  // The tables' note says how many iterations the observer's figures cover, and with CUPTI
  // that the GPU's records of the others are there without a stage.
  const std::string note = sampled_ops_note(p);
  EXPECT_NE(note.find(fmt::format("{} of {} iterations", p.iterations.size() - 1, p.iterations.size())), std::string::npos)
      << note;
  EXPECT_EQ(note.find("CUPTI"), std::string::npos);
  p.collectors.push_back(CollectorInfo{"cupti", true, "MEMCPY, ..."});
  EXPECT_EQ(sampled_ops_note(p).find("CUPTI"), std::string::npos) << "not in a table CUPTI has no part in";
  EXPECT_NE(sampled_ops_note(p, true).find("without their op"), std::string::npos);
  for (auto& it : p.iterations) it.ops_observed = true;
  EXPECT_EQ(sampled_ops_note(p), "");
}

}  // namespace
}  // namespace gnnprof::reports
