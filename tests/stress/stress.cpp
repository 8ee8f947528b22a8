// stress — load tests too long for the unit suite (`make stress`, figures in docs/reliability.md):
//   events   16 threads x 10M stage events: recorded + dropped accounts for every one
//   prefetch Prefetcher at K = 1..16, random producer/consumer delays, 100k batches in all:
//            order kept, backpressure kept, no deadlock
//   soak     many short "epochs" of a profiled loop with thread churn: RSS sampled, growth
//            after warm-up must stay under 16 MiB
// Prints one line per check and exits 1 if any fails.
#include <gnnprof/gnnprof.h>
#include <gnnprof/prefetch/prefetcher.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

int failures = 0;
void report(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok:" : "FAIL:", what.c_str());
  std::fflush(stdout);
  if (!ok) ++failures;
}

gnnprof::Config quiet() {
  gnnprof::Config c;
  c.write_at_stop = false;
  c.flush_at_exit = false;
  c.quiet = true;
  c.timeline_events = 0;
  return c;
}

long rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

void events(long per_thread, int threads) {
  gnnprof::start(quiet());
  const gnnprof_site_t site = gnnprof_stage_site("stress", nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      for (long i = 0; i < per_thread; ++i) {
        gnnprof_stage_begin(site);
        gnnprof_stage_end();
      }
    });
  for (auto& t : ts) t.join();
  gnnprof::stop();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  auto p = gnnprof::snapshot();
  const unsigned long long want = static_cast<unsigned long long>(per_thread) * static_cast<unsigned long long>(threads);
  const unsigned long long got = p ? p->recorded_events + p->dropped_events : 0;
  report(p && got == want,
         "events: " + std::to_string(threads) + " threads x " + std::to_string(per_thread) + " = " + std::to_string(want) +
             "; recorded " + std::to_string(p ? p->recorded_events : 0) + " + dropped " + std::to_string(p ? p->dropped_events : 0) +
             " (" + std::to_string(static_cast<long>(secs * 1000)) + " ms)");
}

void prefetch(long total) {
  std::mt19937 rng(42);
  long delivered = 0;
  bool ordered = true, bounded = true;
  const auto t0 = std::chrono::steady_clock::now();
  for (int k = 1; k <= 16; ++k) {
    const long n = total / 16;
    std::uniform_int_distribution<int> d(0, 40);
    std::vector<int> pd(static_cast<std::size_t>(n)), cd(static_cast<std::size_t>(n));
    for (auto& x : pd) x = d(rng) < 4 ? d(rng) : 0;  // ~10 % of batches wait up to 40 us
    for (auto& x : cd) x = d(rng) < 4 ? d(rng) : 0;
    gnnprof::prefetch::Prefetcher<long> pf(
        [&](std::int64_t i) {
          if (pd[static_cast<std::size_t>(i)] > 0) std::this_thread::sleep_for(std::chrono::microseconds(pd[static_cast<std::size_t>(i)]));
          return static_cast<long>(i) * 3;
        },
        n, k, 1 + k % 3);
    for (long i = 0; i < n; ++i) {
      auto b = pf.next();
      if (!b || *b != i * 3) ordered = false;
      if (cd[static_cast<std::size_t>(i)] > 0) std::this_thread::sleep_for(std::chrono::microseconds(cd[static_cast<std::size_t>(i)]));
      ++delivered;
    }
    if (pf.next() || pf.max_in_flight() > k) bounded = false;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report(ordered && bounded && delivered == (total / 16) * 16,
         "prefetch: K=1..16, " + std::to_string(delivered) + " batches in order, <= K in flight, no deadlock (" +
             std::to_string(static_cast<long>(secs * 1000)) + " ms)");
}

void soak(int epochs) {
  gnnprof::Config c = quiet();
  c.drain_interval_ms = 5;
  // Per-iteration statistics are the profile itself and grow by design (~300 B each up to
  // max_iterations); cap them so that any other growth shows.
  c.max_iterations = 10000;
  gnnprof::start(c);
  long warm = 0, peak = 0;
  for (int e = 0; e < epochs; ++e) {
    // An epoch: 2000 iterations of 4 stages, and a worker thread that comes and goes (as
    // DataLoader workers do) recording its own stages.
    std::thread worker([] {
      for (int i = 0; i < 2000; ++i) {
        GNNPROF_STAGE("sample");
      }
    });
    for (int i = 0; i < 2000; ++i) {
      GNNPROF_STEP();
      { GNNPROF_STAGE("materialize"); }
      {
        GNNPROF_STAGE("forward");
        // ~10 us of "compute": a loop with some work per iteration, as training has, so the
        // drainer keeps up and the soak measures memory, not drops.
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(10);
        while (std::chrono::steady_clock::now() < until) {
        }
      }
      { GNNPROF_STAGE("backward"); }
    }
    GNNPROF_STEP_END();
    worker.join();
    if (e == epochs / 10) warm = rss_kib();
    if (e > epochs / 10) peak = std::max(peak, rss_kib());
  }
  auto p = gnnprof::snapshot();
  gnnprof::stop();
  const long growth = peak - warm;
  // Every event accounted for: per epoch 2000 worker stages + 2000 x (mark + 3 stages) + 1 end.
  const std::uint64_t events = static_cast<std::uint64_t>(epochs) * 10001;
  // Iterations are exact only when no mark was dropped (a starved drainer can drop events
  // under load; they are counted, which is what must hold).
  const bool all_kept = p && p->recorded_events + p->dropped_events == events &&
                        (p->dropped_events > 0 || (p->iterations.size() == std::min<std::size_t>(10000, epochs * 2000) &&
                                                   p->iterations.size() + p->iterations_dropped ==
                                                       static_cast<std::uint64_t>(epochs) * 2000));
  report(growth < 16 * 1024 && all_kept,
         "soak: " + std::to_string(epochs) + " epochs x 2000 iterations, " + std::to_string(p ? p->iterations.size() : 0) +
             " iterations kept (cap) + " + std::to_string(p ? p->iterations_dropped : 0) + " counted, " +
             std::to_string(p ? p->dropped_events : 0) + " events dropped, " +
             std::to_string(p ? p->threads.size() : 0) + " threads seen; RSS after warm-up " +
             std::to_string(warm / 1024) + " MiB, peak " + std::to_string(peak / 1024) + " MiB, growth " + std::to_string(growth) +
             " KiB (bound 16 MiB)");
}

}  // namespace

int main(int argc, char** argv) {
  const long scale = argc > 1 ? std::atol(argv[1]) : 1;  // 1 = the documented sizes
  events(10000000 / scale, 16);
  prefetch(100000 / scale);
  soak(static_cast<int>(500 / scale));
  return failures == 0 ? 0 : 1;
}
