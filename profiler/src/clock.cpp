#include "clock.h"

#include "gnnprof/config.h"

#include <time.h>

#include <cstdlib>
#include <cstring>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gnnprof::detail {

bool g_use_tsc = false;

std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::int64_t realtime_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

std::uint64_t raw_now_slow() noexcept { return static_cast<std::uint64_t>(monotonic_ns()); }

static bool invariant_tsc() noexcept {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) == 0 || eax < 0x80000007u) return false;
  if (__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

void select_clock() noexcept {
  bool want_mono = false;
  try {
    want_mono = config::get_string("GNNPROF_CLOCK") == "monotonic";
  } catch (...) {
  }
  g_use_tsc = !want_mono && invariant_tsc();
}

ClockPair sample_clock_pair() noexcept {
  ClockPair best;
  std::uint64_t best_gap = ~0ULL;
  for (int i = 0; i < 3; ++i) {
    std::uint64_t a = raw_now();
    std::int64_t m = monotonic_ns();
    std::uint64_t b = raw_now();
    if (b - a < best_gap) {
      best_gap = b - a;
      best.raw = a + (b - a) / 2;
      best.mono_ns = m;
    }
  }
  return best;
}

void ClockConverter::set_origin(ClockPair origin) noexcept {
  origin_ = origin;
  calibration_ns_ = 0;
  if (!g_use_tsc) {
    ns_per_tick_ = 1.0;
    return;
  }
  // Initial rate from a 200 us spin so that the first drain pass already converts well;
  // every later pass refines it over a longer interval.
  ClockPair p;
  do {
    p = sample_clock_pair();
  } while (p.mono_ns - origin.mono_ns < 200000);
  update(p);
}

void ClockConverter::update(ClockPair later) noexcept {
  if (!g_use_tsc) return;
  std::int64_t dns = later.mono_ns - origin_.mono_ns;
  if (dns < 100000 || later.raw <= origin_.raw) return;
  ns_per_tick_ = static_cast<double>(dns) / static_cast<double>(later.raw - origin_.raw);
  calibration_ns_ = dns;
}

}  // namespace gnnprof::detail
