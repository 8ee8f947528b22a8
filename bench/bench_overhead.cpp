// bench_overhead — what instrumentation costs on the hot path.
//
//   BM_EmptyLoop             the loop itself
//   BM_RawRdtsc              one rdtsc, the clock read of the hot path (x86-64)
//   BM_StageEnterExit        GNNPROF_STAGE enter + exit (one 48-byte event)
//   BM_LineHit               GNNPROF_LINE around a trivial statement
//   BM_StageDisabled         GNNPROF_STAGE with GNNPROF_ENABLED=0 semantics (no session)
//   BM_NvtxPushPop           nvtxRangePushA/Pop with no tool attached (CUDA headers only)
//   BM_Overhead5usABBA       5 us of real work per iteration, bare (A) and inside one
//                            GNNPROF_STAGE (B), interleaved ABBA in ~1 ms blocks; reports
//                            the added ns per iteration and the overhead ratio.
//
// The session runs with its default configuration and drainer thread, as in a real program.
// The default ring (4096 x 48 B = 192 KiB) stays in L2; a 768 KiB ring measured ~10 ns more
// per event on the 5 us loop (GNNPROF_BUFFER_EVENTS=16384 reproduces it). Tight loops
// outrun the drainer, so the benchmark also drains (timing paused) every 2^11 events:
// the recorded path is measured, never the cheaper "ring full, drop" path, and the
// `dropped` counter proves it stays 0.
#include <benchmark/benchmark.h>
#include <gnnprof/gnnprof.h>

#include <chrono>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#ifdef GNNPROF_BENCH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace {

// Half the default ring (4096 events): drained before it can fill.
constexpr std::uint64_t kDrainEvery = 1u << 11;

void ensure_session(bool enabled) {
  static int current = -1;
  if (current == static_cast<int>(enabled)) return;
  gnnprof::stop();
  gnnprof::Config cfg;
  cfg.enabled = enabled;
  cfg.write_at_stop = false;
  cfg.flush_at_exit = false;
  cfg.timeline_events = 0;
  if (const char* e = std::getenv("GNNPROF_BUFFER_EVENTS")) cfg.buffer_events = std::strtoull(e, nullptr, 10);
  gnnprof::start(cfg);
  current = enabled;
}

void drain_paused(benchmark::State& state) {
  state.PauseTiming();
  (void)gnnprof::snapshot();
  state.ResumeTiming();
}

void report_dropped(benchmark::State& state) {
  auto p = gnnprof::snapshot();
  state.counters["dropped"] = p ? static_cast<double>(p->dropped_events) : -1;
}

void BM_EmptyLoop(benchmark::State& state) {
  std::uint64_t n = 0;
  for (auto _ : state) benchmark::DoNotOptimize(++n);
}
BENCHMARK(BM_EmptyLoop);

#if defined(__x86_64__)
// The floor: a stage reads the clock twice.
void BM_RawRdtsc(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(__builtin_ia32_rdtsc());
}
BENCHMARK(BM_RawRdtsc);
#endif

void BM_StageEnterExit(benchmark::State& state) {
  ensure_session(true);
  std::uint64_t n = 0;
  for (auto _ : state) {
    { GNNPROF_STAGE("bench_stage"); }
    if ((++n & (kDrainEvery - 1)) == 0) drain_paused(state);
  }
  report_dropped(state);
}
BENCHMARK(BM_StageEnterExit);

void BM_LineHit(benchmark::State& state) {
  ensure_session(true);
  std::uint64_t n = 0, x = 0;
  for (auto _ : state) {
    GNNPROF_LINE(benchmark::DoNotOptimize(++x));
    if ((++n & (kDrainEvery - 1)) == 0) drain_paused(state);
  }
  report_dropped(state);
}
BENCHMARK(BM_LineHit);

void BM_StageDisabled(benchmark::State& state) {
  ensure_session(false);
  for (auto _ : state) {
    GNNPROF_STAGE("bench_disabled");
  }
  ensure_session(true);
}
BENCHMARK(BM_StageDisabled);

#ifdef GNNPROF_BENCH_NVTX
void BM_NvtxPushPop(benchmark::State& state) {
  for (auto _ : state) {
    nvtxRangePushA("bench");
    nvtxRangePop();
  }
}
BENCHMARK(BM_NvtxPushPop);
#endif

// ~5 us of dependent floating-point work (no memory traffic beyond L1), calibrated once.
std::size_t g_work_iters = 0;
volatile double g_seed = 1.0;  // volatile: work() is not hoisted out of loops as a pure call
// noinline: every caller runs the same machine code (inlined copies differed 2x in speed).
__attribute__((noinline)) double work(std::size_t iters) {
  double x = g_seed;
  for (std::size_t i = 0; i < iters; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}
// Calibrated the way the benchmarks call it (back-to-back calls in a loop), so "5 us" is
// the body time the benchmarks actually see (reported as body_ns).
void calibrate_work() {
  if (g_work_iters != 0) return;
  g_work_iters = 1000;
  for (int round = 0; round < 4; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < 200; ++r) benchmark::DoNotOptimize(work(g_work_iters));
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / 200;
    g_work_iters = static_cast<std::size_t>(static_cast<double>(g_work_iters) * 5000.0 / ns);
  }
}

// The 0.5 % target, measured as a ratio inside one run: each benchmark iteration is one ABBA
// round of 4 blocks x 200 loop iterations (~1 ms per block), A = bare 5 us body, B = the same
// body inside one GNNPROF_STAGE. Interleaving at 1 ms cancels clock-frequency drift and
// background noise that separate 0.2 s repetitions do not; the median of per-round ratios is
// robust to the rounds a context switch hits.
void BM_Overhead5usABBA(benchmark::State& state) {
  ensure_session(true);
  calibrate_work();
  constexpr int kBlock = 200;
  auto block = [](bool instrumented) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBlock; ++i) {
      if (instrumented) {
        GNNPROF_STAGE("work");
        benchmark::DoNotOptimize(work(g_work_iters));
      } else {
        benchmark::DoNotOptimize(work(g_work_iters));
      }
    }
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> ratios;
  double base_sum = 0, inst_sum = 0;
  for (auto _ : state) {
    double a1 = block(false), b1 = block(true), b2 = block(true), a2 = block(false);
    base_sum += a1 + a2;
    inst_sum += b1 + b2;
    ratios.push_back((b1 + b2) / (a1 + a2));
  }
  std::sort(ratios.begin(), ratios.end());
  double med = ratios.empty() ? 1.0 : ratios[ratios.size() / 2];
  state.counters["overhead_pct"] = 100.0 * (med - 1.0);
  state.counters["added_ns_per_iter"] = (inst_sum - base_sum) / static_cast<double>(2 * kBlock * ratios.size());
  state.counters["body_ns"] = base_sum / static_cast<double>(2 * kBlock * ratios.size());
  report_dropped(state);
}
BENCHMARK(BM_Overhead5usABBA)->MinTime(2.0)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
