#include "linked_forward.h"

#include <dlfcn.h>

#include <cstdio>

namespace gnnprof::detail {

std::atomic<const ForwardCore*> g_forward{nullptr};

namespace {

const ForwardCore* resolve() noexcept {
  // Only the preload library exports this one; inside the preload, it is this copy's own.
  void* marker = ::dlsym(RTLD_DEFAULT, "gnnprof_preload_attach");
  if (marker == nullptr) return nullptr;
  Dl_info theirs{}, mine{};
  if (::dladdr(marker, &theirs) == 0 || ::dladdr(reinterpret_cast<void*>(&resolve), &mine) == 0 ||
      theirs.dli_fbase == mine.dli_fbase)
    return nullptr;
  static ForwardCore core;
  bool complete = true;
  auto get = [&](auto& fn, const char* name) {
    *reinterpret_cast<void**>(&fn) = ::dlsym(RTLD_DEFAULT, name);
    complete = complete && fn != nullptr;
  };
  get(core.site, "gnnprof_site_register");
  get(core.range_begin, "gnnprof_range_begin");
  get(core.range_end, "gnnprof_stage_end");
  get(core.step, "gnnprof_step_flags");
  get(core.step_end, "gnnprof_step_end_flags");
  get(core.transfer, "gnnprof_transfer");
  get(core.materialize, "gnnprof_materialize_at");
  get(core.counter, "gnnprof_counter");
  get(core.set_thread_name, "gnnprof_set_thread_name");
  get(core.start, "gnnprof_start");
  get(core.stop, "gnnprof_stop");
  get(core.is_running, "gnnprof_is_running");
  get(core.flush, "gnnprof_flush");
  void (*note)(const char*, int, const char*) = nullptr;
  *reinterpret_cast<void**>(&note) = ::dlsym(RTLD_DEFAULT, "gnnprof_note_collector");
  if (!complete) {
    // A preload of another gnnprof version: two sessions, as before this existed.
    std::fprintf(stderr, "gnnprof: warning: the injected libgnnprof_preload.so lacks the entry points of this "
                         "program's linked libgnnprof (another version?): the two may write one file\n");
    return nullptr;
  }
  if (note != nullptr) note("linked-core", 1, "the program's own libgnnprof records into this session");
  return &core;
}

}  // namespace

const ForwardCore* forward_core() noexcept {
  static const ForwardCore* core = [] {
    const ForwardCore* c = resolve();
    g_forward.store(c, std::memory_order_release);
    return c;
  }();
  return core;
}

}  // namespace gnnprof::detail
