// collector.cpp — the hot path: stage/line ranges and instant events into per-thread rings.
#include "collector.h"
#include "linked_forward.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "clock.h"
#include "gnnprof/internal/private_heap.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/gnnprof_c.h"

namespace gnnprof::detail {

std::atomic<int> g_state{kUninit};

namespace {

// initial-exec: the buffer pointer is one %fs-relative load, also when the core is linked
// into a shared object (the preload library), instead of a __tls_get_addr call.
__attribute__((tls_model("initial-exec"))) thread_local ThreadBuffer* t_buffer = nullptr;
// Set once the thread's TLS destructors ran; later events of that thread are not recorded.
__attribute__((tls_model("initial-exec"))) thread_local bool t_exiting = false;
// A name given before the thread had a buffer, for the one it attaches.
thread_local char t_pending_name[sizeof(ThreadBuffer::name)] = {0};

void copy_name(ThreadBuffer* b, const char* name) {
  std::lock_guard<std::mutex> lock(buffer_registry().mutex());  // the drainer reads it
  std::strncpy(b->name, name, sizeof(b->name) - 1);
  b->name[sizeof(b->name) - 1] = '\0';
}

struct RetireGuard {
  ThreadBuffer* buffer = nullptr;
  ~RetireGuard() {
    t_exiting = true;
    t_buffer = nullptr;
    if (buffer != nullptr && !buffer->is_sink()) buffer->retired.store(true, std::memory_order_release);
  }
};

void arm_retire_guard(ThreadBuffer* b) {
  static thread_local RetireGuard guard;
  guard.buffer = b;
}

ThreadBuffer* acquire_slow() noexcept {
  if (t_exiting) return nullptr;
  int s = g_state.load(std::memory_order_acquire);
  if (s == kUninit) {
    lazy_start();
    s = g_state.load(std::memory_order_acquire);
  }
  if (s != kRunning) return nullptr;
  ThreadBuffer* b = buffer_registry().attach_current_thread();
  if (b == nullptr) return nullptr;
  try {
    arm_retire_guard(b);
  } catch (...) {
  }
  if (t_pending_name[0] != '\0' && !b->is_sink()) {
    try {
      copy_name(b, t_pending_name);
    } catch (...) {
    }
  }
  t_buffer = b;
  return b;
}

inline ThreadBuffer* buffer_for_begin() noexcept {
  ThreadBuffer* b = t_buffer;
  return __builtin_expect(b != nullptr, 1) ? b : acquire_slow();
}

inline bool recording() noexcept { return g_state.load(std::memory_order_relaxed) == kRunning; }

// Every begin on a real buffer pushes exactly one entry, so begin/end stay balanced for C
// callers that ignore return values: past kMaxDepth the entry is only counted (depth goes on
// rising, nothing is stored), and a site id of 0 -- or a begin while no session records --
// pushes a transparent entry that takes no timestamp, records nothing and leaves the
// stage/line context unchanged.
inline bool push_range(std::uint32_t site, bool is_line) noexcept {
  ThreadBuffer* b = buffer_for_begin();
  if (b == nullptr) return false;
  if (__builtin_expect(b->is_sink(), 0)) {
    b->count_drop();  // the range's one event will not be recorded
    return false;
  }
  int d = b->depth++;
  if (__builtin_expect(d >= kMaxDepth, 0)) {
    b->count_drop();
    return true;
  }
  OpenRange& r = b->stack[d];
  r.prev_stage = static_cast<std::int16_t>(b->cur_stage);
  r.prev_line = static_cast<std::int16_t>(b->cur_line);
  if (__builtin_expect(site == 0 || !recording(), 0)) {
    r.site = 0;
    return true;
  }
  r.site = site;
  r.is_line = is_line;
  r.child_ticks = 0;
  if (is_line) {
    b->cur_line = d;
  } else {
    bool repeated = false;
    for (int i = r.prev_stage; i >= 0 && !repeated; i = b->stack[i].prev_stage) repeated = b->stack[i].site == site;
    r.repeated = repeated;
    r.stage_depth = static_cast<std::uint16_t>(b->stage_depth++);
    b->cur_stage = d;
    if (r.stage_depth == 0) b->top_stage = d;
  }
  r.begin = raw_now();  // last: the range excludes its own bookkeeping
  return true;
}

inline void pop_range() noexcept {
  ThreadBuffer* b = t_buffer;
  if (b == nullptr || b->depth == 0) return;  // unbalanced end: ignore
  int d = --b->depth;
  if (__builtin_expect(d >= kMaxDepth, 0)) return;  // counted as dropped at begin
  OpenRange& r = b->stack[d];
  b->cur_stage = r.prev_stage;
  b->cur_line = r.prev_line;
  if (__builtin_expect(r.site == 0, 0)) return;  // transparent: no timestamp at all
  // The range includes the few loads above (~1 ns) so that a disabled session reads no clock.
  std::uint64_t now = b->end_at >= r.begin && b->end_at != 0 ? b->end_at : raw_now();
  std::uint64_t dur = now - r.begin;
  bool split = false;  // an outermost stage that ends while an outside tracer's line is current
  if (!r.is_line) {
    --b->stage_depth;
    if (r.prev_stage >= 0) b->stack[r.prev_stage].child_ticks += dur;
    if (r.stage_depth == 0) {
      b->top_stage = -1;
      // (none where it ended at the line change: a phase the next line closes)
      split = b->ext_line != 0 && b->cur_line < 0 && now > b->ext_line_since;
    }
  }
  if (__builtin_expect(!recording(), 0)) return;
  RawEvent* e = b->reserve();
  if (e == nullptr) return;
  e->t0 = r.begin;
  e->t1 = now;
  e->a = r.is_line ? 0 : dur - (r.child_ticks < dur ? r.child_ticks : dur);
  e->b = 0;
  e->site = r.site;
  e->ctx = r.prev_stage >= 0 ? b->stack[r.prev_stage].site : 0;
  e->line_ctx = r.prev_line >= 0 ? b->stack[r.prev_line].site : 0;
  e->kind = r.is_line ? EventKind::kLine : EventKind::kStage;
  e->flags = !r.is_line && r.repeated ? kFlagRepeated : 0;
  e->depth = r.stage_depth;
  if (__builtin_expect(split, 0)) {
    // The stage's time since the current line began belongs to that line (the earlier parts
    // went to earlier lines as kLineStage events at each line change).
    e->line_ctx = b->ext_line;
    e->b = now - (r.begin > b->ext_line_since ? r.begin : b->ext_line_since);
    e->flags |= kFlagExtLine;
  }
  b->commit();
}

/// Instant events: a slot stamped with the thread's current stage and line context.
inline RawEvent* begin_instant(ThreadBuffer*& out) noexcept {
  ThreadBuffer* b = buffer_for_begin();
  if (b == nullptr || !recording()) return nullptr;
  RawEvent* e = b->reserve();
  if (e == nullptr) return nullptr;
  e->t0 = raw_now();
  e->t1 = 0;
  e->a = 0;
  e->b = 0;
  e->site = 0;
  e->ctx = b->cur_stage >= 0 ? b->stack[b->cur_stage].site : 0;
  e->line_ctx = b->cur_line >= 0 ? b->stack[b->cur_line].site : b->ext_line;
  e->flags = 0;
  e->depth = 0;
  out = b;
  return e;
}

}  // namespace

ThreadBuffer::ThreadBuffer(std::size_t capacity) : capacity_(capacity), mask_(0) {
  if (capacity_ > 0) {
    std::size_t c = 1;
    while (c < capacity_) c <<= 1;
    capacity_ = c;
    mask_ = c - 1;
    const std::size_t bytes = c * sizeof(RawEvent);
    // Slots are written before they are read (reserve/commit), so the zero pages need no
    // construction; RawEvent is trivial.
    ring_ = std::unique_ptr<RawEvent[], RingUnmap>(static_cast<RawEvent*>(map_pages(bytes)), RingUnmap{bytes});
    // Slots are written in order from the first: fault in the first ones now, not in the loop.
    populate_pages(ring_.get(), std::min<std::size_t>(bytes, kPopulateAheadBytes));
  }
}

void RingUnmap::operator()(RawEvent* p) const noexcept { unmap_pages(p, bytes); }

void BufferRegistry::configure(std::size_t buffer_events, std::size_t max_threads) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  buffer_events_ = buffer_events < 16 ? 16 : buffer_events;
  max_threads_ = max_threads;
}

ThreadBuffer* BufferRegistry::attach_current_thread() noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    ThreadBuffer* b = nullptr;
    std::size_t capacity = 1, live = 0;
    while (capacity < buffer_events_) capacity <<= 1;
    for (auto& candidate : buffers_) live += candidate->retired.load(std::memory_order_acquire) ? 0 : 1;
    // The cap counts threads that own a ring now, reused rings included.
    if (live >= max_threads_) return &sink_;
    for (auto& candidate : buffers_) {
      // Reusable: its thread exited, its events and drops are accounted for, and it has the
      // capacity the current session asked for.
      if (candidate->retired.load(std::memory_order_acquire) && candidate->consumed() == candidate->published() &&
          candidate->noted_dropped == candidate->dropped() && candidate->capacity() == capacity) {
        b = candidate.get();
        break;
      }
    }
    if (b == nullptr) {
      buffers_.push_back(std::make_unique<ThreadBuffer>(buffer_events_));
      b = buffers_.back().get();
    }
    b->depth = 0;
    b->cur_stage = -1;
    b->cur_line = -1;
    b->stage_depth = 0;
    b->top_stage = -1;
    b->ext_line = 0;
    b->ext_line_since = 0;
    b->line_watch = nullptr;
    b->dropped_base = b->noted_dropped = b->dropped();
    b->index = next_index_++;
    b->tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
    std::memset(b->name, 0, sizeof(b->name));
    b->retired.store(false, std::memory_order_release);
    return b;
  } catch (...) {
    return &sink_;  // out of memory: this thread's events are dropped and counted
  }
}

ThreadBuffer* BufferRegistry::add_lane(const char* name) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    buffers_.push_back(std::make_unique<ThreadBuffer>(buffer_events_));
    ThreadBuffer* b = buffers_.back().get();
    b->dropped_base = b->noted_dropped = b->dropped();
    b->index = next_index_++;
    b->tid = 0;
    std::memset(b->name, 0, sizeof(b->name));
    std::strncpy(b->name, name, sizeof(b->name) - 1);
    b->retired.store(false, std::memory_order_release);
    return b;
  } catch (...) {
    return nullptr;
  }
}

BufferRegistry& buffer_registry() {
  static auto* registry = new BufferRegistry();  // leaked on purpose, see class comment
  return *registry;
}

ThreadBuffer* current_buffer() noexcept { return buffer_for_begin(); }

void name_current_thread(const char* name) noexcept {
  ThreadBuffer* b = t_buffer;
  if (b == nullptr) {
    std::strncpy(t_pending_name, name, sizeof(t_pending_name) - 1);
    t_pending_name[sizeof(t_pending_name) - 1] = '\0';
    return;
  }
  if (b->is_sink()) return;
  try {
    copy_name(b, name);
  } catch (...) {
  }
}

void forget_open_ranges() noexcept {
  ThreadBuffer* b = t_buffer;
  if (b == nullptr) return;
  b->depth = 0;
  b->cur_stage = b->cur_line = b->top_stage = -1;
  b->stage_depth = 0;
  b->ext_line = 0;
  b->ext_line_since = 0;
  b->line_watch = nullptr;
}

int current_thread_index() noexcept {
  ThreadBuffer* b = buffer_for_begin();
  return (b == nullptr || b->is_sink()) ? -1 : static_cast<int>(b->index);
}

// A linked copy under the preload (kForwarding) has no buffers: each entry finds none and hands
// its event on, so the common path pays nothing for forwarding. Ends go on after a stop, so
// that ranges begun before it end in the preload's session too.

// A stage goes to the preload's torch observer first, as the Python package's stages do: a
// "forward" the observer also finds is then one scope, not a stage with a phase inside.
bool forward_begin(std::uint32_t site, bool is_line) noexcept {
  const ForwardCore* f = forwarding();
  if (f == nullptr) return false;
  const ForwardedSite s = forward_site_info(*f, site);
  if (!is_line && s.name != nullptr && f->user_scope != nullptr && f->user_scope(s.name, s.category, 1) != 0) return true;
  return f->range_begin(s.id, is_line ? 1 : 0) != 0;
}

bool stage_begin(std::uint32_t site) noexcept { return push_range(site, false) || forward_begin(site, false); }
void stage_end() noexcept {
  if (t_buffer != nullptr) return pop_range();
  if (const ForwardCore* f = g_forward.load(std::memory_order_acquire)) {
    if (f->user_scope != nullptr && f->user_scope(nullptr, nullptr, 0) != 0) return;
    f->range_end();
  }
}
bool line_begin(std::uint32_t site) noexcept { return push_range(site, true) || forward_begin(site, true); }
void line_end() noexcept { stage_end(); }

void step(bool begin_next, std::uint8_t flags) noexcept {
  ThreadBuffer* b = nullptr;
  RawEvent* e = begin_instant(b);
  if (e == nullptr) {
    if (const ForwardCore* f = forwarding()) {
      // The preload's torch observer marks the iteration itself where it watches the loop (as
      // the Python package's step does); otherwise the mark is this one.
      if (begin_next && flags == 0 && f->user_step != nullptr && f->user_step() != 0) return;
      (begin_next ? f->step : f->step_end)(flags);
    }
    return;
  }
  e->kind = begin_next ? EventKind::kStep : EventKind::kStepEnd;
  e->a = flags;
  b->commit();
}

void counter(std::uint32_t site, double value) noexcept {
  if (site == 0) return;
  ThreadBuffer* b = nullptr;
  RawEvent* e = begin_instant(b);
  if (e == nullptr) {
    if (const ForwardCore* f = forwarding()) f->counter(forward_site(*f, site), value);
    return;
  }
  e->kind = EventKind::kCounter;
  e->site = site;
  std::memcpy(&e->a, &value, sizeof(double));
  b->commit();
}

void materialize(std::uint32_t site, std::uint64_t rows, std::uint64_t bytes) noexcept {
  ThreadBuffer* b = nullptr;
  RawEvent* e = begin_instant(b);
  if (e == nullptr) {
    if (const ForwardCore* f = forwarding()) f->materialize(forward_site(*f, site), rows, bytes);
    return;
  }
  e->kind = EventKind::kMaterialize;
  e->site = site;
  e->a = rows;
  e->b = bytes;
  b->commit();
}

void transfer(std::uint64_t bytes, int dir, int mem, int mode, std::uint64_t duration_ns) noexcept {
  ThreadBuffer* b = nullptr;
  RawEvent* e = begin_instant(b);
  if (e == nullptr) {
    if (const ForwardCore* f = forwarding()) f->transfer(bytes, dir, mem, mode, duration_ns);
    return;
  }
  e->kind = EventKind::kTransfer;
  e->a = bytes;
  e->t1 = duration_ns;
  e->flags = pack_transfer_flags(dir, mem, mode);
  b->commit();
}

std::atomic<bool> g_ext_lines{false};

std::uint64_t set_line(std::uint32_t site) noexcept {
  const bool data_line = (site & GNNPROF_DATA_LINE) != 0;
  site &= ~GNNPROF_DATA_LINE;
  const std::uint64_t now = raw_now();
  ThreadBuffer* b = buffer_for_begin();
  if (b == nullptr || b->is_sink()) return now;
  if (site != 0 && !g_ext_lines.load(std::memory_order_relaxed)) g_ext_lines.store(true, std::memory_order_relaxed);
  if (b->ext_line != 0 && b->top_stage >= 0 && b->top_stage < kMaxDepth && recording()) {
    const OpenRange& top = b->stack[b->top_stage];
    if (top.site != 0) {
      if (RawEvent* e = b->reserve()) {
        e->t0 = top.begin > b->ext_line_since ? top.begin : b->ext_line_since;
        e->t1 = now;
        e->a = 0;
        e->b = 0;
        e->site = b->ext_line;
        e->ctx = top.site;
        e->line_ctx = 0;
        e->kind = EventKind::kLineStage;
        e->flags = 0;
        e->depth = 0;
        b->commit();
      }
    }
  }
  b->ext_line = site;
  b->ext_line_since = now;
  if (!data_line && b->line_watch != nullptr && recording()) {
    void (*fn)() = b->line_watch;
    b->line_watch = nullptr;
    b->end_at = now;
    fn();
    b->end_at = 0;
  }
  return now;
}

void watch_next_line(void (*fn)()) noexcept {
  ThreadBuffer* b = buffer_for_begin();
  if (b != nullptr && !b->is_sink()) b->line_watch = fn;
}

void line_event(std::uint32_t site, std::uint64_t t0, std::uint64_t t1, bool hit, bool began, std::uint64_t nested,
                std::uint32_t caller) noexcept {
  if (site == 0 || t1 < t0) return;
  ThreadBuffer* b = nullptr;
  RawEvent* e = begin_instant(b);
  if (e == nullptr) return;
  e->t0 = t0;
  e->t1 = t1;
  e->a = nested < t1 - t0 ? nested : t1 - t0;
  e->site = site;
  e->line_ctx = caller;
  e->kind = EventKind::kLine;
  e->flags = static_cast<std::uint8_t>((hit ? 0 : kFlagNoHit) | (began ? kFlagBegan : 0) | (caller != 0 ? kFlagCaller : 0));
  b->commit();
}

void line_charge(std::uint32_t line, std::uint32_t stage, std::int64_t begin_mono_ns, std::int64_t end_mono_ns) noexcept {
  if (line == 0 || begin_mono_ns < 0 || end_mono_ns < begin_mono_ns) return;
  ThreadBuffer* b = nullptr;
  RawEvent* e = begin_instant(b);
  if (e == nullptr) return;
  e->t0 = static_cast<std::uint64_t>(begin_mono_ns);
  e->t1 = static_cast<std::uint64_t>(end_mono_ns);
  e->site = line;
  e->ctx = stage;
  e->line_ctx = 0;
  e->kind = EventKind::kLineCharge;
  e->flags = kFlagMonoNs;
  b->commit();
}

std::uint32_t current_line() noexcept {
  ThreadBuffer* b = t_buffer;
  if (b == nullptr || b->is_sink()) return 0;
  return b->cur_line >= 0 && b->cur_line < kMaxDepth ? b->stack[b->cur_line].site : b->ext_line;
}

bool ext_lines_seen() noexcept { return g_ext_lines.load(std::memory_order_relaxed); }

namespace {
// Lanes are few (a GPU stream each) and written from collector callbacks, not the hot path:
// one mutex serializes their producers so that each ring keeps a single writer at a time.
struct LaneTable {
  std::mutex mu;
  std::vector<std::pair<std::string, ThreadBuffer*>> lanes;
};
LaneTable& lane_table() {
  static auto* t = new LaneTable();  // leaked on purpose, like the buffer registry
  return *t;
}
}  // namespace

std::uint32_t lane(const char* name) noexcept {
  if (name == nullptr) return 0;
  try {
    LaneTable& t = lane_table();
    std::lock_guard<std::mutex> lock(t.mu);
    for (std::size_t i = 0; i < t.lanes.size(); ++i)
      if (t.lanes[i].first == name) return static_cast<std::uint32_t>(i + 1);
    ThreadBuffer* b = buffer_registry().add_lane(name);
    if (b == nullptr) return 0;
    t.lanes.emplace_back(name, b);
    return static_cast<std::uint32_t>(t.lanes.size());
  } catch (...) {
    return 0;
  }
}

void lane_event(std::uint32_t lane_id, const RawEvent& ev) noexcept {
  if (lane_id == 0 || !recording()) return;
  LaneTable& t = lane_table();
  std::lock_guard<std::mutex> lock(t.mu);
  if (lane_id > t.lanes.size()) return;
  ThreadBuffer* b = t.lanes[lane_id - 1].second;
  RawEvent* e = b->reserve();
  if (e == nullptr) return;
  *e = ev;
  e->flags = static_cast<std::uint8_t>(e->flags | kFlagMonoNs);
  b->commit();
}

}  // namespace gnnprof::detail
