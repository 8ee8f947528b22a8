// mono_clock.h — CLOCK_MONOTONIC in nanoseconds: the time base of lane events
// (gnnprof_lane_range / gnnprof_lane_transfer) for the plugins that stamp their own events.
#pragma once

#include <time.h>

#include <cstdint>

namespace gnnprof::instrument {

inline std::int64_t mono_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace gnnprof::instrument
