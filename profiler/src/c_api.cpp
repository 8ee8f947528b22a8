// c_api.cpp — the C ABI over the collector. Nothing here throws: every entry point either
// cannot throw or catches at the boundary.
#include <string>

#include "collector.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/gnnprof_c.h"
#include "site_registry.h"

namespace gnnprof::detail {
void transfer(std::uint64_t bytes, int dir, int mem, int mode, std::uint64_t duration_ns) noexcept;
}

extern "C" {

int gnnprof_start(void) {
  try {
    gnnprof::Config cfg = gnnprof::Config::from_env();
    if (!cfg.enabled) {
      (void)gnnprof::start(cfg);
      return 1;
    }
    return gnnprof::start(cfg) ? 0 : -1;
  } catch (...) {
    return -1;
  }
}

int gnnprof_stop(void) { return gnnprof::stop() ? 0 : -1; }

int gnnprof_is_running(void) { return gnnprof::is_running() ? 1 : 0; }

gnnprof_site_t gnnprof_stage_site(const char* name, const char* category) {
  if (name == nullptr) return 0;
  try {
    gnnprof::detail::SiteInfo info;
    info.kind = gnnprof::SiteKind::kStage;
    info.name = name;
    info.category = category != nullptr ? category : gnnprof::detail::default_category(info.name);
    return gnnprof::detail::site_registry().intern(info);
  } catch (...) {
    return 0;
  }
}

gnnprof_site_t gnnprof_counter_site(const char* name) {
  if (name == nullptr) return 0;
  try {
    gnnprof::detail::SiteInfo info;
    info.kind = gnnprof::SiteKind::kCounter;
    info.name = name;
    return gnnprof::detail::site_registry().intern(info);
  } catch (...) {
    return 0;
  }
}

int gnnprof_stage_begin(gnnprof_site_t site) { return gnnprof::detail::stage_begin(site) ? 1 : 0; }
void gnnprof_stage_end(void) { gnnprof::detail::stage_end(); }
void gnnprof_step(void) { gnnprof::detail::step(true); }
void gnnprof_step_end(void) { gnnprof::detail::step(false); }

void gnnprof_transfer(uint64_t bytes, int direction, int host_memory, int mode, uint64_t duration_ns) {
  gnnprof::detail::transfer(bytes, direction, host_memory, mode, duration_ns);
}

void gnnprof_materialize(uint64_t rows, uint64_t bytes) { gnnprof::detail::materialize(0, rows, bytes); }

void gnnprof_counter(gnnprof_site_t site, double value) { gnnprof::detail::counter(site, value); }

void gnnprof_set_thread_name(const char* name) { gnnprof::set_thread_name(name); }

}  // extern "C"
