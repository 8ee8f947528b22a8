// linked_forward.h — one session per process. A program linked with libgnnprof and run under
// `gnnprof run` holds two copies of the core: its own and the preload library's, which also
// observes torch ops, CUPTI and NVTX. When the program's session would write the very file the
// preload's writes (its output comes from GNNPROF_OUTPUT: a lazy start, or start() with the
// environment's config), the linked copy starts no session of its own: its events go to the
// preload's session through the preload's C ABI, its sites interned there on first use. A
// program that names its own output keeps its own session and file.
#pragma once

#include <atomic>
#include <cstdint>

#include "collector.h"
#include "gnnprof/session.h"

namespace gnnprof::detail {

/// The preload library's entry points that a linked copy forwards to (looked up in that
/// library itself, never in the program).
struct ForwardCore {
  std::uint32_t (*site)(int kind, const char* name, const char* category, const char* file, const char* function,
                        const char* code, unsigned line);
  int (*range_begin)(std::uint32_t site, int is_line);
  void (*range_end)();
  void (*step)(unsigned flags);
  void (*step_end)(unsigned flags);
  int (*user_step)();  ///< the preload's torch observer marks the iteration itself (nonzero); may be null
  /// The preload's torch observer takes a stage as its own scope (nonzero: then no range); may be null.
  int (*user_scope)(const char* name, const char* category, int enter);
  void (*transfer)(std::uint64_t bytes, int direction, int host_memory, int mode, std::uint64_t duration_ns);
  void (*materialize)(std::uint32_t site, std::uint64_t rows, std::uint64_t bytes);
  void (*counter)(std::uint32_t site, double value);
  void (*set_thread_name)(const char* name);
  void (*note_collector)(const char* name, int enabled, const char* reason);
  int (*is_running)();
  int (*flush)();
  int (*torch_configure)(int flags);  ///< the program's observe_ops options; may be null
};

/// Called by start with the session's config: the preload's core when this copy is another one
/// and `cfg` writes where the preload's session writes; nullptr otherwise (and always in the
/// preload itself). Sets g_forward.
const ForwardCore* forward_core_for(const Config& cfg) noexcept;

/// Set once this copy forwards (kept after a stop, so that ranges begun before it end there).
extern std::atomic<const ForwardCore*> g_forward;

/// The preload's core while this copy forwards (kForwarding), else nullptr.
inline const ForwardCore* forwarding() noexcept {
  return g_state.load(std::memory_order_relaxed) == kForwarding ? g_forward.load(std::memory_order_acquire) : nullptr;
}

/// One of this copy's sites in the preload: its id there (interned on first use; 0 if none),
/// and its name and category (a stage's: for the preload's torch observer).
struct ForwardedSite {
  std::uint32_t id = 0;
  const char* name = nullptr;
  const char* category = nullptr;
};
ForwardedSite forward_site_info(const ForwardCore& f, std::uint32_t local) noexcept;
inline std::uint32_t forward_site(const ForwardCore& f, std::uint32_t local) noexcept { return forward_site_info(f, local).id; }

}  // namespace gnnprof::detail
