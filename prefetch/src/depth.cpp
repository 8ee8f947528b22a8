#include <pthread.h>
#include <sched.h>

#include <cstdint>
#include <cstdlib>

#include "gnnprof/prefetch/prefetcher.h"

#include "gnnprof/config.h"

namespace gnnprof::prefetch {

std::optional<int> parse_depth(const char* text) noexcept {
  try {
    const config::Option* o = config::find("GNNPROF_PREFETCH");
    if (text == nullptr || o == nullptr || !config::valid(*o, text)) return std::nullopt;
    return static_cast<int>(std::strtol(text, nullptr, 10));
  } catch (...) {
    return std::nullopt;
  }
}

int resolve_depth(int code_default) noexcept {
  // The table's count reader: an integer in 0..kMaxDepth, else one warning and the code's default.
  static_assert(kMaxDepth == 64, "GNNPROF_PREFETCH's maximum in profiler/src/config.cpp");
  try {
    return static_cast<int>(config::get_count("GNNPROF_PREFETCH", static_cast<std::uint64_t>(code_default)));
  } catch (...) {
    return code_default;
  }
}

bool set_background_priority() noexcept {
#if defined(__linux__)
  sched_param param{};
  param.sched_priority = 0;
  return pthread_setschedparam(pthread_self(), SCHED_IDLE, &param) == 0;
#else
  return false;
#endif
}

}  // namespace gnnprof::prefetch
