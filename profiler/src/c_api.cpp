// c_api.cpp — the C ABI over the collector. Nothing here throws: every entry point either
// cannot throw or catches at the boundary.
#include <atomic>
#include <string>

#include "clock.h"
#include "collector.h"
#include "linked_forward.h"
#include "raw_event.h"
#include "gnnprof/block_trial.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/gnnprof_c.h"
#include "site_registry.h"

namespace gnnprof::detail {
void transfer(std::uint64_t bytes, int dir, int mem, int mode, std::uint64_t duration_ns) noexcept;
std::uint32_t lane(const char* name) noexcept;
void lane_event(std::uint32_t lane_id, const RawEvent& ev) noexcept;
void note_collector(const char* name, bool enabled, const char* reason) noexcept;
int flush_now() noexcept;
void lazy_start() noexcept;
int poll(bool allow_flush) noexcept;
int start_drainer() noexcept;
int flush_in_forked_child(long parent_pid) noexcept;
int start_in_fork_child(bool drainer_thread) noexcept;
int start_worker(long parent_pid, bool drainer_thread) noexcept;
int discard() noexcept;
int set_rank(int rank, int local_rank, int world_size) noexcept;
int set_loader(const char* loader) noexcept;
int set_feeds(long pid) noexcept;
std::uint64_t set_line(std::uint32_t site) noexcept;
void watch_next_line(void (*fn)()) noexcept;
void line_event(std::uint32_t site, std::uint64_t t0, std::uint64_t t1, bool hit, bool began, std::uint64_t nested = 0,
                std::uint32_t caller = 0) noexcept;
void line_charge(std::uint32_t line, std::uint32_t stage, std::int64_t begin_mono_ns, std::int64_t end_mono_ns) noexcept;
std::uint32_t current_line() noexcept;
bool ext_lines_seen() noexcept;
}

namespace {

/// A [begin, end] event of `kind` on a lane (ranges and kernels): dropped when `site` is 0 or
/// the interval is not one.
void lane_interval(gnnprof_lane_t lane, gnnprof::detail::EventKind kind, gnnprof_site_t site, gnnprof_site_t ctx,
                   std::uint64_t a, int64_t begin_mono_ns, int64_t end_mono_ns, gnnprof_site_t line = 0) {
  if (site == 0 || begin_mono_ns < 0 || end_mono_ns < begin_mono_ns) return;
  gnnprof::detail::RawEvent e{};
  e.kind = kind;
  e.t0 = static_cast<std::uint64_t>(begin_mono_ns);
  e.t1 = static_cast<std::uint64_t>(end_mono_ns);
  e.site = site;
  e.ctx = ctx;
  e.line_ctx = line;
  e.a = a;
  gnnprof::detail::lane_event(lane, e);
}

std::atomic<void (*)(void)> g_optimizer_step_hook{nullptr};
std::atomic<void (*)(void)> g_loader_step_hook{nullptr};
std::atomic<void (*)(void)> g_data_hook{nullptr};

/// A gather or copy: the Python tracer may look for the user code doing it (a producer
/// thread's; its own checks, thread-local reads, come first).
void data_op() {
  if (auto hook = g_data_hook.load(std::memory_order_acquire)) hook();
}

const char* or_empty(const char* s) { return s != nullptr ? s : ""; }

// Interns a site of this kind that fill() describes; 0 when it throws.
template <class Fill>
gnnprof_site_t intern_site(gnnprof::SiteKind kind, Fill&& fill) {
  try {
    gnnprof::detail::SiteInfo info;
    info.kind = kind;
    fill(info);
    return gnnprof::detail::site_registry().intern(info);
  } catch (...) {
    return 0;
  }
}

}  // namespace

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
  return intern_site(gnnprof::SiteKind::kStage, [&](gnnprof::detail::SiteInfo& info) {
    info.name = name;
    info.category = category != nullptr ? category : gnnprof::detail::default_category(info.name);
  });
}

gnnprof_site_t gnnprof_counter_site(const char* name) {
  if (name == nullptr) return 0;
  return intern_site(gnnprof::SiteKind::kCounter, [&](gnnprof::detail::SiteInfo& info) { info.name = name; });
}

gnnprof_site_t gnnprof_site_register(int kind, const char* name, const char* category, const char* file,
                                     const char* function, const char* code, unsigned line) {
  if (kind < static_cast<int>(gnnprof::SiteKind::kStage) || kind > static_cast<int>(gnnprof::SiteKind::kMaterialize)) return 0;
  return intern_site(static_cast<gnnprof::SiteKind>(kind), [&](gnnprof::detail::SiteInfo& info) {
    info.name = or_empty(name);
    info.category = or_empty(category);
    info.file = or_empty(file);
    info.function = or_empty(function);
    info.code = or_empty(code);
    info.line = line;
  });
}

int gnnprof_forwarding(void) {
  if (gnnprof::detail::g_state.load() == gnnprof::detail::kUninit) gnnprof::detail::lazy_start();
  return gnnprof::detail::g_state.load() == gnnprof::detail::kForwarding ? 1 : 0;
}

int gnnprof_forward_torch_options(int flags) {
  const gnnprof::detail::ForwardCore* f = gnnprof::detail::forwarding();
  return f != nullptr && f->torch_configure != nullptr ? f->torch_configure(flags) : 0;
}

int gnnprof_range_begin(gnnprof_site_t site, int is_line) {
  return (is_line != 0 ? gnnprof::detail::line_begin(site) : gnnprof::detail::stage_begin(site)) ? 1 : 0;
}

void gnnprof_materialize_at(gnnprof_site_t site, uint64_t rows, uint64_t bytes) {
  gnnprof::detail::materialize(site, rows, bytes);
  data_op();
}

int gnnprof_stage_begin(gnnprof_site_t site) { return gnnprof::detail::stage_begin(site) ? 1 : 0; }
void gnnprof_stage_end(void) { gnnprof::detail::stage_end(); }
void gnnprof_step(void) { gnnprof::detail::step(true); }
void gnnprof_step_end(void) { gnnprof::detail::step(false); }
void gnnprof_step_flags(unsigned flags) { gnnprof::detail::step(true, static_cast<std::uint8_t>(flags & 0xffu)); }
void gnnprof_step_end_flags(unsigned flags) { gnnprof::detail::step(false, static_cast<std::uint8_t>(flags & 0xffu)); }

void gnnprof_transfer(uint64_t bytes, int direction, int host_memory, int mode, uint64_t duration_ns) {
  gnnprof::detail::transfer(bytes, direction, host_memory, mode, duration_ns);
  if (direction == GNNPROF_H2D) data_op();
}

void gnnprof_materialize(uint64_t rows, uint64_t bytes) {
  gnnprof::detail::materialize(0, rows, bytes);
  data_op();
}

void gnnprof_counter(gnnprof_site_t site, double value) { gnnprof::detail::counter(site, value); }

void gnnprof_set_thread_name(const char* name) { gnnprof::set_thread_name(name); }

int gnnprof_flush(void) { return gnnprof::detail::flush_now(); }

int gnnprof_poll(int allow_flush) { return gnnprof::detail::poll(allow_flush != 0); }

int gnnprof_start_drainer(void) { return gnnprof::detail::start_drainer(); }

int gnnprof_flush_in_fork_child(long parent_pid) { return gnnprof::detail::flush_in_forked_child(parent_pid); }

int gnnprof_start_in_fork_child(int drainer_thread) {
  return gnnprof::detail::start_in_fork_child(drainer_thread != 0);
}

int gnnprof_start_worker(long parent_pid, int drainer_thread) {
  return gnnprof::detail::start_worker(parent_pid, drainer_thread != 0);
}

int gnnprof_discard(void) { return gnnprof::detail::discard(); }

int gnnprof_set_rank(int rank, int local_rank, int world_size) {
  return gnnprof::detail::set_rank(rank, local_rank, world_size);
}

int gnnprof_set_loader(const char* loader) { return gnnprof::detail::set_loader(loader); }
int gnnprof_set_feeds(long pid) { return gnnprof::detail::set_feeds(pid); }

void gnnprof_note_collector(const char* name, int enabled, const char* reason) {
  gnnprof::detail::note_collector(name, enabled != 0, reason);
}

int gnnprof_site_name(gnnprof_site_t site, char* buf, unsigned long n) {
  try {
    const std::string name = gnnprof::detail::site_registry().name_of(site);
    if (name.empty()) return -1;
    if (buf != nullptr && n > 0) {
      const std::size_t len = name.size() < n - 1 ? name.size() : n - 1;
      name.copy(buf, len);
      buf[len] = '\0';
    }
    return static_cast<int>(name.size());
  } catch (...) {
    return -1;
  }
}

gnnprof_site_t gnnprof_line_site(const char* file, unsigned line, const char* function, const char* code) {
  if (file == nullptr) return 0;
  return intern_site(gnnprof::SiteKind::kLine, [&](gnnprof::detail::SiteInfo& info) {
    info.file = file;
    info.line = line;
    info.function = or_empty(function);
    info.code = or_empty(code);
  });
}

uint64_t gnnprof_now(void) { return gnnprof::detail::raw_now(); }

uint64_t gnnprof_set_line(gnnprof_site_t site) { return gnnprof::detail::set_line(site); }
void gnnprof_watch_next_line(void (*fn)(void)) { gnnprof::detail::watch_next_line(fn); }

void gnnprof_line_event(gnnprof_site_t site, uint64_t begin, uint64_t end, int hit) {
  gnnprof::detail::line_event(site, begin, end, (hit & ~GNNPROF_LINE_BEGAN) != 0, (hit & GNNPROF_LINE_BEGAN) != 0);
}

void gnnprof_line_event_nested(gnnprof_site_t site, uint64_t begin, uint64_t end, int hit, uint64_t nested,
                               gnnprof_site_t caller) {
  gnnprof::detail::line_event(site, begin, end, (hit & ~GNNPROF_LINE_BEGAN) != 0, (hit & GNNPROF_LINE_BEGAN) != 0, nested,
                              caller & ~GNNPROF_DATA_LINE);
}

gnnprof_site_t gnnprof_current_line(void) { return gnnprof::detail::current_line(); }

int gnnprof_stage_is_data(gnnprof_site_t stage) {
  try {
    return gnnprof::detail::site_registry().category_of(stage) == "data" ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

void gnnprof_set_loop_extent(const char* file, const char* function, unsigned first, unsigned last) {
  if (file == nullptr || function == nullptr) return;
  try {
    gnnprof::detail::site_registry().set_loop_extent(file, function, first, last);
  } catch (...) {
  }
}

void gnnprof_line_callee(gnnprof_site_t line, const char* file, const char* function) {
  if (file == nullptr || *file == '\0') return;
  try {
    gnnprof::detail::site_registry().set_line_callee(line & ~GNNPROF_DATA_LINE, file, function != nullptr ? function : "");
  } catch (...) {
  }
}

namespace {
thread_local gnnprof_site_t t_loop_line = 0;
}
void gnnprof_set_loop_line(gnnprof_site_t site) { t_loop_line = site; }
gnnprof_site_t gnnprof_loop_line(void) { return t_loop_line; }

int gnnprof_line_after(gnnprof_site_t line, gnnprof_site_t anchor) {
  try {
    return gnnprof::detail::site_registry().line_after(line & ~GNNPROF_DATA_LINE, anchor & ~GNNPROF_DATA_LINE) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int gnnprof_lines_traced(void) { return gnnprof::detail::ext_lines_seen() ? 1 : 0; }

void gnnprof_line_charge(gnnprof_site_t line, gnnprof_site_t stage, int64_t begin_mono_ns, int64_t end_mono_ns) {
  gnnprof::detail::line_charge(line, stage, begin_mono_ns, end_mono_ns);
}

void gnnprof_set_optimizer_step_hook(void (*hook)(void)) { g_optimizer_step_hook.store(hook, std::memory_order_release); }

void gnnprof_set_data_hook(void (*hook)(void)) { g_data_hook.store(hook, std::memory_order_release); }

void gnnprof_optimizer_step(void) {
  if (auto hook = g_optimizer_step_hook.load(std::memory_order_acquire)) hook();
}

void gnnprof_set_loader_step_hook(void (*hook)(void)) { g_loader_step_hook.store(hook, std::memory_order_release); }

void gnnprof_loader_step(void) {
  if (auto hook = g_loader_step_hook.load(std::memory_order_acquire)) hook();
}

gnnprof_lane_t gnnprof_lane(const char* name) { return gnnprof::detail::lane(name); }

void gnnprof_lane_range(gnnprof_lane_t lane, gnnprof_site_t site, gnnprof_site_t ctx, int64_t begin_mono_ns,
                        int64_t end_mono_ns) {
  lane_interval(lane, gnnprof::detail::EventKind::kStage, site, ctx, 0, begin_mono_ns, end_mono_ns);
}

void gnnprof_lane_kernel(gnnprof_lane_t lane, gnnprof_site_t kernel, gnnprof_site_t stage, gnnprof_site_t op,
                         int64_t begin_mono_ns, int64_t end_mono_ns) {
  lane_interval(lane, gnnprof::detail::EventKind::kKernel, kernel, stage, op, begin_mono_ns, end_mono_ns);
}

void gnnprof_lane_kernel_at(gnnprof_lane_t lane, gnnprof_site_t kernel, gnnprof_site_t stage, gnnprof_site_t op,
                            gnnprof_site_t line, int64_t begin_mono_ns, int64_t end_mono_ns) {
  lane_interval(lane, gnnprof::detail::EventKind::kKernel, kernel, stage, op, begin_mono_ns, end_mono_ns, line);
}

void gnnprof_lane_transfer(gnnprof_lane_t lane, gnnprof_site_t ctx, uint64_t bytes, int direction, int host_memory,
                           int mode, int64_t begin_mono_ns, int64_t end_mono_ns) {
  if (begin_mono_ns < 0 || end_mono_ns < begin_mono_ns) return;
  gnnprof::detail::RawEvent e{};
  e.kind = gnnprof::detail::EventKind::kTransfer;
  e.t0 = static_cast<std::uint64_t>(begin_mono_ns);
  e.t1 = static_cast<std::uint64_t>(end_mono_ns - begin_mono_ns);
  e.a = bytes;
  e.ctx = ctx;
  e.flags = gnnprof::detail::pack_transfer_flags(direction, host_memory, mode);
  gnnprof::detail::lane_event(lane, e);
}

}  // extern "C"

struct gnnprof_trial {
  gnnprof::BlockTrial trial;
};

gnnprof_trial* gnnprof_trial_new(int arms, int warmup, int block, int rounds, double min_gain) {
  try {
    return new gnnprof_trial{gnnprof::BlockTrial({arms, warmup, block, rounds, min_gain})};
  } catch (...) {
    return nullptr;
  }
}

int gnnprof_trial_iteration(gnnprof_trial* t, uint64_t now_ns) {
  try {
    return t == nullptr ? -1 : t->trial.on_iteration(now_ns);
  } catch (...) {
    return -1;
  }
}

void gnnprof_trial_restart(gnnprof_trial* t) {
  if (t != nullptr) t->trial.restart();  // noexcept: a flag
}

int gnnprof_trial_chosen(const gnnprof_trial* t) { return t != nullptr && t->trial.decided() ? t->trial.current() : -1; }

uint64_t gnnprof_trial_median_ns(const gnnprof_trial* t, int arm) {
  try {
    return t == nullptr || arm < 0 || arm >= t->trial.arms() ? 0 : t->trial.median_ns(arm);
  } catch (...) {
    return 0;
  }
}

int gnnprof_trial_measured(const gnnprof_trial* t, int arm) {
  return t == nullptr || arm < 0 || arm >= t->trial.arms() ? 0 : static_cast<int>(t->trial.measured(arm));
}

void gnnprof_trial_free(gnnprof_trial* t) { delete t; }
