#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>

#include "gnnprof/prefetch/prefetcher.h"

#include "gnnprof/config.h"

namespace gnnprof::prefetch {

std::optional<int> parse_depth(const char* text) noexcept {
  if (text == nullptr || *text < '0' || *text > '9') return std::nullopt;  // no sign, no blanks
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < 0 || v > kMaxDepth) return std::nullopt;
  return static_cast<int>(v);
}

int resolve_depth(int code_default) noexcept {
  const char* env = std::getenv("GNNPROF_PREFETCH");
  if (env == nullptr) return code_default;
  if (auto k = parse_depth(env)) return *k;
  // Its own grammar (the code's default when bad), the table's warning.
  try {
    config::warn_bad_value("GNNPROF_PREFETCH", env, "an integer in 0.." + std::to_string(kMaxDepth), std::to_string(code_default));
  } catch (...) {
  }
  return code_default;
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
