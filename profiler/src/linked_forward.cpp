#include "linked_forward.h"

#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <new>

#include "host_info.h"
#include "site_registry.h"

namespace gnnprof::detail {

std::atomic<const ForwardCore*> g_forward{nullptr};

namespace {

constexpr std::uint32_t kMapped = 1u << 16;  // sites translated through a table; later ones each time
struct Mapped {
  std::atomic<std::uint32_t> id{0};  // published last (release): name and category are set before
  const char* name = nullptr;        // copies, never freed (as the registries' sites)
  const char* category = nullptr;
};
Mapped* g_map = nullptr;

const char* copy_of(const std::string& s) {
  char* c = new char[s.size() + 1];
  std::memcpy(c, s.c_str(), s.size() + 1);
  return c;
}

/// The preload's entry points, or nullptr. `own_file`: the program keeps a session of its own
/// (no forwarding), so an incomplete preload is no risk to warn of.
const ForwardCore* resolve(bool own_file) noexcept {
  // Only the preload library exports this one; inside the preload, it is this copy's own.
  void* marker = ::dlsym(RTLD_DEFAULT, "gnnprof_preload_attach");
  if (marker == nullptr) return nullptr;
  Dl_info theirs{}, mine{};
  if (::dladdr(marker, &theirs) == 0 || ::dladdr(reinterpret_cast<void*>(&resolve), &mine) == 0 ||
      theirs.dli_fbase == mine.dli_fbase || theirs.dli_fname == nullptr)
    return nullptr;
  // Each entry from the preload itself: a program that exports its own gnnprof_* symbols
  // (-rdynamic) would otherwise be found first, and call itself.
  void* h = ::dlopen(theirs.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (h == nullptr) return nullptr;
  static ForwardCore core;
  bool complete = true;
  auto get = [&](auto& fn, const char* name, bool required) {
    void* p = ::dlsym(h, name);
    Dl_info at{};
    if (p == nullptr || ::dladdr(p, &at) == 0 || at.dli_fbase != theirs.dli_fbase) p = nullptr;
    *reinterpret_cast<void**>(&fn) = p;
    complete = complete && (p != nullptr || !required);
  };
  get(core.site, "gnnprof_site_register", true);
  get(core.range_begin, "gnnprof_range_begin", true);
  get(core.range_end, "gnnprof_stage_end", true);
  get(core.step, "gnnprof_step_flags", true);
  get(core.step_end, "gnnprof_step_end_flags", true);
  get(core.user_step, "gnnprof_preload_torch_user_step", false);
  get(core.user_scope, "gnnprof_preload_torch_user_scope", false);
  get(core.transfer, "gnnprof_transfer", true);
  get(core.materialize, "gnnprof_materialize_at", true);
  get(core.counter, "gnnprof_counter", true);
  get(core.set_thread_name, "gnnprof_set_thread_name", true);
  get(core.note_collector, "gnnprof_note_collector", true);
  get(core.is_running, "gnnprof_is_running", true);
  get(core.flush, "gnnprof_flush", true);
  get(core.torch_configure, "gnnprof_preload_torch_configure", false);
  if (!complete) {
    // A preload of another gnnprof version: two sessions, as before this existed.
    if (!own_file)
      std::fprintf(stderr, "gnnprof: warning: the injected libgnnprof_preload.so lacks the entry points this program's "
                           "linked libgnnprof forwards to (another version?): the two may write one file\n");
    return nullptr;
  }
  return &core;
}

/// Where the program's own session writes, absolute (the launcher's working directory may differ).
std::string own_output(const Config& cfg) {
  std::string path = output_path_for(cfg, ::getpid());
  char cwd[PATH_MAX];
  if (!path.empty() && path[0] != '/' && ::getcwd(cwd, sizeof(cwd)) != nullptr) path = std::string(cwd) + "/" + path;
  return path;
}

}  // namespace

const ForwardCore* forward_core_for(const Config& cfg) noexcept {
  try {
    // Only a session that would write the preload's file (GNNPROF_OUTPUT) has nothing of its own
    // to keep; one that names its own file keeps it, and the preload's profile says where.
    const bool own_file = cfg.output != Config::from_env().output;
    static const ForwardCore* core = resolve(own_file);  // the caller holds the session's lock
    if (core == nullptr) return nullptr;
    if (own_file) {
      if (cfg.write_at_stop) {
        const std::string why = "the program runs a gnnprof session of its own, writing " + own_output(cfg) +
                                ": its stages, steps and lines are there, not in this profile";
        core->note_collector("linked-core", 0, why.c_str());
      }
      return nullptr;
    }
    if (g_map == nullptr && (g_map = new (std::nothrow) Mapped[kMapped]) == nullptr) return nullptr;
    core->note_collector("linked-core", 1, "the program's own libgnnprof records into this session");
    g_forward.store(core, std::memory_order_release);
    return core;
  } catch (...) {
    return nullptr;
  }
}

ForwardedSite forward_site_info(const ForwardCore& f, std::uint32_t local) noexcept {
  if (local == 0) return {};
  if (local < kMapped)
    if (const std::uint32_t id = g_map[local].id.load(std::memory_order_acquire); id != 0)
      return {id, g_map[local].name, g_map[local].category};
  try {
    SiteInfo info;
    if (!site_registry().info_of(local, info)) return {};
    const std::uint32_t id = f.site(static_cast<int>(info.kind), info.name.c_str(), info.category.c_str(), info.file.c_str(),
                                    info.function.c_str(), info.code.c_str(), info.line);
    if (local >= kMapped || id == 0) return {id, nullptr, nullptr};
    // Two threads may both get here: each publishes the same id; one copy of the names leaks.
    Mapped& m = g_map[local];
    if (info.kind == SiteKind::kStage && m.id.load(std::memory_order_acquire) == 0) {
      m.name = copy_of(info.name);
      m.category = copy_of(info.category);
    }
    m.id.store(id, std::memory_order_release);
    return {id, m.name, m.category};
  } catch (...) {
    return {};
  }
}

}  // namespace gnnprof::detail
