#include <pthread.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>

#include "gnnprof/prefetch/prefetcher.h"

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
  std::fprintf(stderr, "gnnprof: ignoring GNNPROF_PREFETCH=%s (expected an integer in 0..%d); using %d\n", env,
               kMaxDepth, code_default);
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
