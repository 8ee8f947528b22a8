// linked_forward.h — one core per process. A program linked with libgnnprof and run under
// `gnnprof run` holds two copies of the core: its own and the preload library's, which also
// observes torch ops, CUPTI and NVTX. Each would write the same file, the emptier one last. The
// linked copy therefore starts no session of its own: its sites and events go to the preload's
// session through the preload's C ABI, and the process writes one profile.
#pragma once

#include <atomic>
#include <cstdint>

namespace gnnprof::detail {

/// The preload library's entry points that a linked copy forwards to.
struct ForwardCore {
  std::uint32_t (*site)(int kind, const char* name, const char* category, const char* file, const char* function,
                        const char* code, unsigned line);
  int (*range_begin)(std::uint32_t site, int is_line);
  void (*range_end)();
  void (*step)(unsigned flags);
  void (*step_end)(unsigned flags);
  void (*transfer)(std::uint64_t bytes, int direction, int host_memory, int mode, std::uint64_t duration_ns);
  void (*materialize)(std::uint32_t site, std::uint64_t rows, std::uint64_t bytes);
  void (*counter)(std::uint32_t site, double value);
  void (*set_thread_name)(const char* name);
  int (*start)();
  int (*stop)();
  int (*is_running)();
  int (*flush)();
};

/// The preload's core when this copy is another one in the same process (resolved once, at
/// the first site or session start); nullptr otherwise, and always in the preload itself.
const ForwardCore* forward_core() noexcept;

/// What forward_core() resolved to (nullptr before): for the fallbacks of the hot paths, which
/// take them only when this copy records nothing itself.
extern std::atomic<const ForwardCore*> g_forward;

}  // namespace gnnprof::detail
