// clock.h — the raw hot-path timestamp and its conversion to nanoseconds.
//
// Why TSC: on x86-64 with an invariant TSC (CPUID 0x80000007 EDX bit 8; Linux shows
// constant_tsc + nonstop_tsc) `rdtsc` is a ~10 ns userspace instruction that never enters the
// kernel, ticks at a constant rate on every core and keeps ticking in idle states. The vDSO
// clock_gettime is about 2x slower and, with a non-TSC clocksource, a real syscall. Without
// an invariant TSC (or with GNNPROF_CLOCK=monotonic) we read CLOCK_MONOTONIC in ns directly.
//
// Calibration: the session takes an origin pair (tsc0, mono0). Every drain pass takes a new
// pair (tsc1, mono1) *after* it has read the ring heads, so every event it converts lies
// between the two pairs, and interpolation bounds the error by the pairing error of one pair
// (a pair is the tightest of 3 tries of tsc-mono-tsc, typically < 100 ns apart).
#pragma once

#include <cstdint>

namespace gnnprof::detail {

/// Which raw clock the hot path reads. Set once at the first session start.
extern bool g_use_tsc;

std::uint64_t raw_now_slow() noexcept;

inline std::uint64_t raw_now() noexcept {
#if defined(__x86_64__)
  if (__builtin_expect(g_use_tsc, 1)) return __builtin_ia32_rdtsc();
#endif
  return raw_now_slow();
}

/// CLOCK_MONOTONIC in ns.
std::int64_t monotonic_ns() noexcept;
/// CLOCK_REALTIME in ns.
std::int64_t realtime_ns() noexcept;

/// A (raw, monotonic ns) pair read as close together as possible.
struct ClockPair {
  std::uint64_t raw = 0;
  std::int64_t mono_ns = 0;
};
ClockPair sample_clock_pair() noexcept;

/// Chooses the raw clock (TSC if invariant and not overridden by GNNPROF_CLOCK).
void select_clock() noexcept;

/// Maps raw ticks to ns relative to the origin pair.
class ClockConverter {
 public:
  void set_origin(ClockPair origin) noexcept;
  /// Refines the rate with a later pair; ignored until 100 us have passed since the origin.
  void update(ClockPair later) noexcept;
  std::int64_t to_ns(std::uint64_t raw) const noexcept {
    return static_cast<std::int64_t>(static_cast<double>(static_cast<std::int64_t>(raw - origin_.raw)) * ns_per_tick_);
  }
  std::int64_t ticks_to_ns(std::uint64_t ticks) const noexcept {
    return static_cast<std::int64_t>(static_cast<double>(ticks) * ns_per_tick_);
  }
  double ticks_per_ns() const noexcept { return 1.0 / ns_per_tick_; }
  std::int64_t calibration_ns() const noexcept { return calibration_ns_; }
  ClockPair origin() const noexcept { return origin_; }

 private:
  ClockPair origin_;
  double ns_per_tick_ = 1.0;
  std::int64_t calibration_ns_ = 0;
};

}  // namespace gnnprof::detail
