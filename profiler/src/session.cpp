// session.cpp — session lifecycle: start and stop, the drainer thread, poll, exit and fork.
// Host facts are host_info.*, the configuration session_config.cpp.
//
// Locks, outermost first: g.mu (start/stop/snapshot) -> g.drain_mu (aggregator) ->
// BufferRegistry::mutex() (buffer list) ; SiteRegistry's mutex is a leaf. The hot path takes
// none of them.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "aggregator.h"
#include "clock.h"
#include "collector.h"
#include "linked_forward.h"
#include "gnnprof/config.h"
#include "gnnprof/internal/load_counts.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/profile_io.h"
#include "batch_prep.h"
#include "host_info.h"
#include "site_registry.h"

namespace gnnprof {
namespace detail {
namespace {

struct Global {
  std::mutex mu;
  Config cfg;
  pid_t owner_pid = 0;
  bool running_at_fork = false;  // in a fork child: the parent's session ran (start_in_fork_child)
  bool atexit_registered = false;
  bool atfork_registered = false;
  std::mutex drain_mu;
  std::unique_ptr<Aggregator> agg;
  ClockConverter clock;
  RunInfo run;
  std::vector<CollectorInfo> collectors;
  std::thread drainer;
  std::atomic<bool> drainer_running{false};  // read lock-free by poll()
  std::mutex wake_mu;
  std::condition_variable wake_cv;
  bool stop_drainer = false;
  std::optional<Profile> last_profile;
  std::int64_t last_host_ns = -1;
  std::int64_t max_threads = 0;
  /// A session in a child forked from the profiled loop (a DataLoader worker): host samples also
  /// read its private memory, every private_interval_ns (0.5 s, or 100x a reading's cost) and at
  /// stop where a reading cost at most 50 ms (the least seen: drain_pass_locked).
  bool fork_child = false;
  std::int64_t last_private_ns = -1;
  std::int64_t private_interval_ns = 500000000;
  std::int64_t private_cost_ns = 0;
  /// The drain pass's scratch list of (ring, published head), kept between passes so that the
  /// pass's bookkeeping allocates nothing in steady state (threadless mode runs it on the
  /// host's thread, in the host's malloc arena).
  std::vector<std::pair<ThreadBuffer*, std::uint64_t>> drain_heads;
  std::uint64_t sink_dropped_base = 0;
  std::vector<CollectorInfo> noted;  // gnnprof_note_collector(), kept across sessions
  bool flush_warned = false;
  std::string written_path;  // where the last periodic flush wrote the profile (set_rank moves it)
  // poll(): the host thread's own drain and flush schedule when no drainer thread runs.
  std::atomic<std::int64_t> poll_next_drain_ns{0};
  std::atomic<std::int64_t> poll_next_flush_ns{0};
  /// The last quiet point (an iteration mark): a host with none for a while (an inference
  /// loop, an NVTX-only program) gets its drains and flushes at its other polls instead.
  std::atomic<std::int64_t> poll_last_quiet_ns{0};
};

thread_local bool t_drainer_thread = false;

Global& g() {
  static auto* s = new Global();  // leaked on purpose: used from atexit and late threads
  return *s;
}

std::int64_t thread_cpu_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

/// One pass: read every ring's published events into the aggregator. Caller holds drain_mu.
/// Returns the fullest ring's fill fraction before the pass (the drainer's pacing signal).
/// `sample_host`: also take a host sample (CPU time, RSS) when one is due; `last`: the
/// session's last pass (a fork child's final private-memory reading is taken then).
double drain_pass_locked(Global& s, bool sample_host = true, bool last = false) {
  BufferRegistry& reg = buffer_registry();
  std::lock_guard<std::mutex> lock(reg.mutex());
  // Heads are read before the clock pair, so every converted event predates the pair and
  // the interpolation bound of clock.h holds.
  auto& heads = s.drain_heads;
  heads.clear();
  for (const auto& b : reg.buffers()) heads.emplace_back(b.get(), b->published());
  const ClockPair pair = sample_clock_pair();
  s.clock.update(pair);
  if (!s.agg) return 0.0;
  s.agg->set_clock(s.clock);
  double fullest = 0.0;
  for (auto& [b, head] : heads) {
    std::uint64_t tail = b->consumed();
    fullest = std::max(fullest, static_cast<double>(head - tail) / static_cast<double>(b->capacity()));
    for (std::uint64_t i = tail; i < head; ++i) s.agg->consume(b->index, b->at(i));
    b->release_to(head);
    b->noted_dropped = b->dropped();
    s.agg->note_thread(b->index, b->tid, b->name, b->noted_dropped - b->dropped_base);
  }
  s.agg->note_sink_drops(reg.sink().dropped() - s.sink_dropped_base);
  const std::int64_t now_ns = s.clock.to_ns(pair.raw);
  s.agg->advance(now_ns);
  // A fork child's private memory: its first reading wherever it comes (the drainer takes it
  // at once); then the drainer's, or with no drainer the host thread's at 10x the spacing, never
  // a host thread's pass beside a drainer (a ring filling); at the last pass (the worker's exit,
  // which its parent may be waiting for) only where a reading is cheap.
  const bool periodic = t_drainer_thread || !s.drainer_running.load(std::memory_order_relaxed);
  const std::int64_t spacing = t_drainer_thread ? s.private_interval_ns : 10 * s.private_interval_ns;
  const bool private_due = s.fork_child && ((last && s.private_cost_ns <= 50000000) || s.last_private_ns < 0 ||
                                            (periodic && now_ns - s.last_private_ns >= spacing));
  if (sample_host && (now_ns - s.last_host_ns >= 50000000 || s.last_host_ns < 0 || (last && private_due))) {
    HostSample h = host_sample(now_ns);
    if (private_due) {
      const std::int64_t before = thread_cpu_ns();  // CPU time: what the walk costs, not a preemption's wait
      h.private_dirty_bytes = private_dirty_bytes();
      const std::int64_t cost = thread_cpu_ns() - before;
      if (s.last_private_ns < 0 && h.private_dirty_bytes == 0) s.fork_child = false;  // no smaps_rollup (Linux < 4.14)
      s.last_private_ns = now_ns;
      s.private_cost_ns = s.private_cost_ns > 0 ? std::min(s.private_cost_ns, cost) : cost;  // its least: not a busy moment's
      s.private_interval_ns = std::max<std::int64_t>(500000000, 100 * cost);
    }
    s.agg->note_host(h);
    s.max_threads = std::max(s.max_threads, process_threads());
    s.last_host_ns = now_ns;
  }
  return fullest;
}

/// Discards whatever the rings hold (events of an earlier session) and starts drop counts
/// from zero. Caller holds drain_mu.
void discard_pending_locked(Global& s) {
  BufferRegistry& reg = buffer_registry();
  std::lock_guard<std::mutex> lock(reg.mutex());
  for (const auto& b : reg.buffers()) {
    b->release_to(b->published());
    b->dropped_base = b->noted_dropped = b->dropped();
  }
  s.sink_dropped_base = reg.sink().dropped();
}

/// The profile so far. Caller holds drain_mu. `in_fork_child`: built in a child of _Fork
/// (gnnprof_flush_in_fork_child), which must not ask the loader.
Profile build_locked(Global& s, bool in_fork_child = false);

// A periodic flush builds and writes the whole profile so far, a cost that grows with the
// run (about 5 ms of CPU after the Python sample's 40 steps, docs/performance.md). The next one waits
// at least this many times the last one's cost: <= 0.2 % of the drainer's core, and <= 0.1 %
// of the loop when the host's thread writes it (poll()).
constexpr std::int64_t kDrainerFlushPacing = 500;
constexpr std::int64_t kPollFlushPacing = 1000;

/// Writes the profile so far. Caller holds mu (not drain_mu). A periodic write skips the
/// fsync (FileSync::kRenameOnly: it must survive the process, not the machine) and warns once
/// per session on failure; the final write at stop() warns on its own.
int flush_locked(Global& s, bool periodic) noexcept {
  try {
    Profile p;
    {
      std::lock_guard<std::mutex> d(s.drain_mu);
      drain_pass_locked(s);
      p = build_locked(s);
    }
    if (!s.cfg.write_empty && p.recorded_events == 0) return 0;
    const std::string path = output_path_for(s.cfg, ::getpid(), s.run.rank);
    Status st = write_profile_file(p, path, periodic ? FileSync::kRenameOnly : FileSync::kDurable);
    if (st) s.written_path = path;
    if (!st && !s.flush_warned) {  // once per session: the final flush fails as the periodic ones did
      s.flush_warned = true;
      std::fprintf(stderr, "gnnprof: warning: %s\n", st.message().c_str());
    }
    return st ? 0 : -1;
  } catch (...) {
    return -1;
  }
}

void drainer_main() {
  // Host signal handlers must run on host threads, never on ours.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  // Named for top, perf and py-spy (the kernel's 15-character limit).
  pthread_setname_np(pthread_self(), "gnnprof-drainer");
  t_drainer_thread = true;
  Global& s = g();
  const auto slow = std::chrono::milliseconds(s.cfg.drain_interval_ms == 0 ? 1 : s.cfg.drain_interval_ms);
  const auto fast = std::chrono::milliseconds(1);
  auto period = slow;
  const auto flush_every = std::chrono::milliseconds(s.cfg.flush_interval_ms);
  auto flush_gap = std::chrono::steady_clock::duration(flush_every);
  auto last_flush = std::chrono::steady_clock::now();
  bool at_once = false;  // a fork child's first private-memory reading, before it fetches
  {
    std::lock_guard<std::mutex> d(s.drain_mu);
    at_once = s.fork_child;
  }
  std::unique_lock<std::mutex> lock(s.wake_mu);
  while (!s.stop_drainer) {
    if (!at_once) s.wake_cv.wait_for(lock, period);
    at_once = false;
    if (s.stop_drainer) break;
    lock.unlock();
    {
      std::lock_guard<std::mutex> d(s.drain_mu);
      try {
        // A ring over a quarter full at the slow period would fill before the next pass at
        // 4x the rate: drain every 1 ms until the burst is over.
        period = drain_pass_locked(s) > 0.25 ? fast : slow;
      } catch (...) {
        // Out of memory while aggregating: keep the program alive; events stay in the rings
        // and are counted as dropped when the rings fill.
      }
    }
    if (flush_every.count() > 0 && std::chrono::steady_clock::now() - last_flush >= flush_gap) {
      last_flush = std::chrono::steady_clock::now();
      // try_lock: stop() holds mu while it joins this thread; skip a beat rather than wait.
      std::unique_lock<std::mutex> m(s.mu, std::try_to_lock);
      if (m.owns_lock() && g_state.load() == kRunning) {
        const std::int64_t cpu0 = thread_cpu_ns();
        (void)flush_locked(s, /*periodic=*/true);
        flush_gap = std::max<std::chrono::steady_clock::duration>(
            flush_every, std::chrono::nanoseconds(kDrainerFlushPacing * (thread_cpu_ns() - cpu0)));
      }
    }
    lock.lock();
  }
}

void stop_drainer(Global& s) {
  s.drainer_running.store(false);
  if (!s.drainer.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(s.wake_mu);
    s.stop_drainer = true;
  }
  s.wake_cv.notify_all();
  s.drainer.join();
}

void flush_at_exit() {
  Global& s = g();
  if (s.owner_pid != ::getpid()) return;  // a forked child never writes the parent's profile
  if (g_state.load() != kRunning) return;
  (void)gnnprof::stop();
}

// fork(): hold every collector lock across the fork so that the child never inherits one
// held by a thread that does not exist there. The child records nothing (its ring memory is a
// copy of the parent's) until it starts its own session.
void atfork_prepare() {
  Global& s = g();
  s.mu.lock();
  s.drain_mu.lock();
  buffer_registry().mutex().lock();
  // site_registry()'s lock has its own handlers (site_registry.cpp), taken after these.
}
void atfork_parent() {
  Global& s = g();
  buffer_registry().mutex().unlock();
  s.drain_mu.unlock();
  s.mu.unlock();
}
void atfork_child() {
  Global& s = g();
  buffer_registry().mutex().unlock();
  s.drain_mu.unlock();
  s.mu.unlock();
  s.running_at_fork = g_state.load() == kRunning;
  if (s.running_at_fork) g_state.store(kStopped);
  // The std::thread names a thread that does not exist in the child; joining or detaching it
  // there is undefined, so forget the handle without touching it.
  new (&s.drainer) std::thread();
  s.drainer_running.store(false);
  // The parent's drainer may have held the wake lock at the fork: a fresh one for the child's.
  new (&s.wake_mu) std::mutex();
  new (&s.wake_cv) std::condition_variable();
}

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Caller holds mu; the session runs.
bool start_drainer_locked(Global& s) {
  if (s.drainer.joinable()) return true;
  s.stop_drainer = false;
  try {
    s.drainer = std::thread(drainer_main);
    s.drainer_running.store(true);
    return true;
  } catch (...) {
    // No thread: events are drained at snapshot()/stop() or poll(); rings may fill and drop (counted).
    std::fprintf(stderr, "gnnprof: cannot start the drainer thread; draining at stop only\n");
    return false;
  }
}

/// Set while this thread starts the session: an event it records then is not a lazy start's.
thread_local bool t_starting = false;

Status start_locked(Global& s, const Config& cfg) {
  struct Starting {
    Starting() { t_starting = true; }
    ~Starting() { t_starting = false; }
  } starting;
  int state = g_state.load();
  if (state == kRunning || state == kForwarding) return Status::ok();
  s.cfg = cfg;
  if (!cfg.enabled) {
    g_state.store(kDisabled);
    return Status::ok();
  }
  // A program linked with libgnnprof under the preload, writing where it writes: that session
  // records this copy's events (linked_forward.h).
  if (forward_core_for(cfg) != nullptr) {
    g_state.store(kForwarding);
    return Status::ok();
  }
  select_clock();
  buffer_registry().configure(cfg.buffer_events, cfg.max_threads);
  {
    std::lock_guard<std::mutex> d(s.drain_mu);
    discard_pending_locked(s);
    AggregatorOptions ao;
    ao.timeline_events = cfg.timeline_events;
    ao.max_iterations = cfg.max_iterations;
    s.agg = std::make_unique<Aggregator>(ao);
    s.agg->set_category_resolver([](std::uint32_t site) { return site_registry().category_of(site); });
    s.clock.set_origin(sample_clock_pair());
    s.agg->set_clock(s.clock);
    s.run = make_run_info();
    s.run.start_monotonic_ns = s.clock.origin().mono_ns;
    s.collectors = {CollectorInfo{"host", true, ""}};
    s.last_host_ns = -1;
    s.max_threads = 0;
    s.flush_warned = false;
    s.written_path.clear();
    // Room for every ring now, not grown at the first drain (threadless: on the host's thread,
    // in its first iteration; see drain_heads).
    s.drain_heads.reserve(cfg.max_threads);
  }
  s.owner_pid = ::getpid();
  s.last_profile.reset();
  if (cfg.flush_at_exit && !s.atexit_registered) {
    s.atexit_registered = std::atexit(flush_at_exit) == 0;
  }
  if (!s.atfork_registered) {
    (void)site_registry();  // its fork handlers first: at fork they then run after these
    s.atfork_registered = pthread_atfork(atfork_prepare, atfork_parent, atfork_child) == 0;
  }
  const std::int64_t now = steady_ns();
  s.poll_next_drain_ns.store(now + static_cast<std::int64_t>(cfg.drain_interval_ms) * 1000000);
  s.poll_next_flush_ns.store(now + static_cast<std::int64_t>(cfg.flush_interval_ms) * 1000000);
  s.poll_last_quiet_ns.store(now);
  g_state.store(kRunning, std::memory_order_release);
  if (cfg.drainer_thread) start_drainer_locked(s);
  return Status::ok();
}

Profile build_locked(Global& s, bool in_fork_child) {
  std::int64_t end_ns = s.clock.to_ns(raw_now());
  Profile p = s.agg->build(site_registry().snapshot(), end_ns);
  p.tool.version = kVersion;
  p.run = s.run;
  p.clock.source = g_use_tsc ? "tsc" : "clock_monotonic";
  p.clock.ticks_per_ns = s.clock.ticks_per_ns();
  p.clock.calibration_ns = s.clock.calibration_ns();
  p.collectors = s.collectors;
  for (const auto& n : s.noted) {
    auto it = std::find_if(p.collectors.begin(), p.collectors.end(), [&](const CollectorInfo& c) { return c.name == n.name; });
    if (it != p.collectors.end()) *it = n;
    else p.collectors.push_back(n);
  }
  p.environment = environment_info(std::max(s.max_threads, process_threads()), !in_fork_child);
  attribute_batch_prep(p);
  return p;
}

}  // namespace

bool lock_within(std::unique_lock<std::mutex>& lock, int ms);

void lazy_start() noexcept {
  if (t_starting) return;  // the starting thread's own event
  Global& s = g();
  try {
    // Another thread starting the session holds the lock: wait for it (once per thread, at the
    // start), or this thread's first events would be lost, uncounted, with no buffer to count
    // them in. Bounded, as every wait on the host's thread is.
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    if (!lock_within(lock, 2000)) return;
    if (g_state.load() != kUninit) return;
    (void)start_locked(s, Config::from_env());
  } catch (...) {
    g_state.store(kDisabled);
  }
}

void note_collector(const char* name, bool enabled, const char* reason) noexcept {
  if (name == nullptr) return;
  if (const ForwardCore* f = forwarding())  // the linked torch observer's notes, in the profile written
    return f->note_collector(name, enabled ? 1 : 0, reason != nullptr ? reason : "");
  try {
    Global& s = g();
    std::lock_guard<std::mutex> lock(s.mu);
    CollectorInfo c{name, enabled, reason != nullptr ? reason : ""};
    auto it = std::find_if(s.noted.begin(), s.noted.end(), [&](const CollectorInfo& x) { return x.name == c.name; });
    if (it != s.noted.end()) *it = c;
    else s.noted.push_back(c);
  } catch (...) {
  }
}

/// Takes `lock` (deferred) within about `ms` milliseconds, polling try_lock every 1 ms: a
/// call from atexit or from the host's thread must never wait forever on a wedged thread.
bool lock_within(std::unique_lock<std::mutex>& lock, int ms) {
  for (int i = 0; !lock.try_lock(); ++i) {
    if (i == ms) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

int flush_now() noexcept {
  Global& s = g();
  try {
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    if (!lock_within(lock, 2000)) return -1;
    if (const ForwardCore* f = forwarding()) return f->flush();
    if (g_state.load() != kRunning || s.owner_pid != ::getpid() || !s.cfg.write_at_stop) return -1;
    return flush_locked(s, false);
  } catch (...) {
    return -1;
  }
}

bool stage_begin(std::uint32_t site) noexcept;
void stage_end() noexcept;

namespace {
/// gnnprof's own work on the host's thread (threadless mode's drains and periodic flushes, a
/// drain of a filling ring): a stage of its own, "gnnprof (own work)", so that the iteration,
/// the stage table and the line it ran under (the optimizer step's, at an iteration mark) say
/// which time was gnnprof's.
class OwnWork {
 public:
  OwnWork() noexcept {
    static const std::uint32_t site = [] {
      try {
        SiteInfo info;
        info.kind = SiteKind::kStage;
        info.name = kOwnWorkStage;
        info.category = "profiler";
        return site_registry().intern(info);
      } catch (...) {
        return std::uint32_t{0};
      }
    }();
    on_ = site != 0 && stage_begin(site);
  }
  ~OwnWork() {
    if (on_) stage_end();
  }
  OwnWork(const OwnWork&) = delete;
  OwnWork& operator=(const OwnWork&) = delete;

 private:
  bool on_ = false;
};
}  // namespace

int poll(bool allow_flush) noexcept {
  if (g_state.load(std::memory_order_relaxed) != kRunning) return 0;
  Global& s = g();
  if (s.drainer_running.load(std::memory_order_relaxed)) {
    // The drainer does it, unless the caller fills its ring faster than the drainer's period (a
    // traced tight Python loop: tens of millions of line events a second). Over a quarter full:
    // wake it; over half: drain here (as the threadless mode does) when the drainer is not at
    // it; over three quarters: wait for the drainer's pass (bounded work) rather than drop.
    ThreadBuffer* b = current_buffer();
    if (b == nullptr || b->is_sink()) return 0;
    const std::uint64_t used = b->published() - b->consumed();
    if (used * 4 <= b->capacity()) return 0;
    if (s.owner_pid != ::getpid()) return 0;  // a child forked without atfork handlers (_Fork)
    if (used * 2 <= b->capacity()) {
      s.wake_cv.notify_one();
      return 0;
    }
    // No asynchronous signal while this thread holds the drain lock: the SIGTERM handler's
    // final flush needs the drainer, which needs the lock, and a handler's own NVTX call would
    // poll into it again.
    sigset_t all, old;
    sigfillset(&all);
    for (int sync : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP}) sigdelset(&all, sync);  // crash handlers stay
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int drained = 0;
    try {
      std::unique_lock<std::mutex> d(s.drain_mu, std::defer_lock);
      // Past three quarters, wait for the drainer's pass (bounded work; 100 ms at most).
      const bool got = used * 4 > b->capacity() * 3 ? lock_within(d, 100) : d.try_lock();
      if (got && g_state.load() == kRunning) {  // else stopped meanwhile: stop() drained
        OwnWork own;
        drain_pass_locked(s);
        drained = 1;
      }
    } catch (...) {
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    return drained;
  }
  try {
    const std::int64_t now = steady_ns();
    // The period applies at quiet points only (allow_flush: an iteration mark); elsewhere only
    // a filling ring drains, so a loop thread does not stop mid-iteration for a routine pass.
    // A host with no quiet point for twice the flush interval (and at least 2 s) has none to
    // offer (an inference loop, an NVTX-only program): its other polls count as quiet then.
    if (allow_flush) s.poll_last_quiet_ns.store(now, std::memory_order_relaxed);
    const std::int64_t markless_ns = 2 * std::max<std::int64_t>(s.cfg.flush_interval_ms, 1000) * 1000000;
    const bool quiet = allow_flush || now - s.poll_last_quiet_ns.load(std::memory_order_relaxed) >= markless_ns;
    bool drain = quiet && now >= s.poll_next_drain_ns.load(std::memory_order_relaxed);
    if (!drain) {
      // The caller's ring over a quarter full: drain before it can fill (the drainer's rule).
      ThreadBuffer* b = current_buffer();
      drain = b != nullptr && !b->is_sink() && (b->published() - b->consumed()) * 4 > b->capacity();
    }
    const bool flush = quiet && s.cfg.flush_interval_ms > 0 && s.cfg.write_at_stop &&
                       now >= s.poll_next_flush_ns.load(std::memory_order_relaxed);
    if (!drain && !flush) return 0;
    if (s.owner_pid != ::getpid()) return 0;
    // Each pass has fixed costs (clock pair, host sample): on the host's thread, at most every
    // 100 ms unless a ring fills.
    const std::int64_t drain_ns = std::max<std::int64_t>(s.cfg.drain_interval_ms, 100) * 1000000;
    if (flush) {
      // try_lock throughout: the host's thread never waits on gnnprof.
      std::unique_lock<std::mutex> m(s.mu, std::try_to_lock);
      if (!m.owns_lock() || g_state.load() != kRunning) return 0;
      OwnWork own;
      (void)flush_locked(s, /*periodic=*/true);
      const std::int64_t end = steady_ns();
      // The flush runs on the host's critical path here: its wall time is what the loop lost.
      s.poll_next_flush_ns.store(end + std::max<std::int64_t>(static_cast<std::int64_t>(s.cfg.flush_interval_ms) * 1000000,
                                                              kPollFlushPacing * (end - now)));
      s.poll_next_drain_ns.store(end + drain_ns);
      return 1;
    }
    std::unique_lock<std::mutex> d(s.drain_mu, std::try_to_lock);
    if (!d.owns_lock()) return 0;
    {
      OwnWork own;
      drain_pass_locked(s);
    }
    s.poll_next_drain_ns.store(steady_ns() + drain_ns);
    return 1;
  } catch (...) {
    return 0;  // out of memory while aggregating: events stay in the rings (drops counted)
  }
}

int start_drainer() noexcept {
  Global& s = g();
  try {
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    if (!lock_within(lock, 2000)) return -1;
    if (g_state.load() != kRunning || s.owner_pid != ::getpid()) return -1;
    return start_drainer_locked(s) ? 0 : -1;
  } catch (...) {
    return -1;
  }
}

namespace {
/// A fork child's (or a spawned worker's) session: `worker` names parent_pid as the loop it
/// works for; else the child is a program of its own (a multiprocessing.Process that trains).
int start_child(long parent_pid, bool drainer_thread, bool worker) noexcept {
  Global& s = g();
  try {
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    if (!lock_within(lock, 2000)) return -1;
    const pid_t me = ::getpid();
    const bool spawned = g_state.load() == kRunning && s.owner_pid == me;
    if (spawned) {
      // A spawned process becoming a worker: its session so far (interpreter start, imports)
      // is dropped; the worker's begins now.
      g_state.store(kStopped);
      stop_drainer(s);
    } else if (!s.running_at_fork || g_state.load() != kStopped || s.owner_pid == me) {
      return -1;  // only where the parent's session was running at the fork (atfork_child stopped it)
    }
    s.running_at_fork = false;
    Config cfg = s.cfg;
    cfg.drainer_thread = drainer_thread;
    forget_open_ranges();
    // Shares the loop's pages until one of them writes them (not a forkserver's child: its
    // parent is the server, parent_pid the loop).
    s.fork_child = worker && !spawned && (parent_pid <= 0 || parent_pid == static_cast<long>(::getppid()));
    s.last_private_ns = -1;
    s.private_cost_ns = 0;
    if (!start_locked(s, cfg) || g_state.load() != kRunning) return -1;
    s.run.parent_pid = !worker ? 0 : parent_pid > 0 ? parent_pid : ::getppid();
    std::lock_guard<std::mutex> d(s.drain_mu);
    s.agg->set_main_thread_hint(current_thread_index());
    return 0;
  } catch (...) {
    return -1;
  }
}

}  // namespace

int start_worker(long parent_pid, bool drainer_thread) noexcept { return start_child(parent_pid, drainer_thread, true); }

int start_in_fork_child(bool drainer_thread) noexcept {
  if (g_state.load() == kRunning) return -1;  // a fork child's session only, never a restart
  return start_child(0, drainer_thread, false);
}

int discard() noexcept {
  Global& s = g();
  try {
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    if (!lock_within(lock, 2000)) return -1;
    s.running_at_fork = false;
    if (g_state.load() != kRunning || s.owner_pid != ::getpid()) return 0;
    g_state.store(kStopped);
    stop_drainer(s);
    // A periodic flush of this session's may be on disk already: it goes too.
    if (!s.written_path.empty()) (void)std::remove(s.written_path.c_str());
    s.written_path.clear();
    std::lock_guard<std::mutex> d(s.drain_mu);
    discard_pending_locked(s);
    return 0;
  } catch (...) {
    return -1;
  }
}

int set_rank(int rank, int local_rank, int world_size) noexcept {
  Global& s = g();
  try {
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    if (!lock_within(lock, 2000)) return -1;
    if (g_state.load() != kRunning || s.owner_pid != ::getpid()) return -1;
    if (rank >= 0) s.run.rank = rank;
    if (local_rank >= 0) s.run.local_rank = local_rank;
    if (world_size > 0) s.run.world_size = world_size;
    // A periodic flush wrote the profile under its rankless name: it moves to the rank's name
    // (a complete profile stays on disk; the next write replaces it there).
    const std::string after = output_path_for(s.cfg, ::getpid(), s.run.rank);
    if (!s.written_path.empty() && s.written_path != after && ::rename(s.written_path.c_str(), after.c_str()) == 0)
      s.written_path = after;
    return 0;
  } catch (...) {
    return -1;
  }
}

int set_loader(const char* loader) noexcept {
  Global& s = g();
  try {
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    if (!lock_within(lock, 2000)) return -1;
    if (g_state.load() != kRunning || s.owner_pid != ::getpid() || loader == nullptr) return -1;
    s.run.loader = loader;
    return 0;
  } catch (...) {
    return -1;
  }
}

int set_feeds(long pid) noexcept {
  Global& s = g();
  try {
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    if (!lock_within(lock, 2000)) return -1;
    if (g_state.load() != kRunning || s.owner_pid != ::getpid() || pid <= 0) return -1;
    s.run.feeds_pid = pid;
    return 0;
  } catch (...) {
    return -1;
  }
}

int flush_in_forked_child(long parent_pid) noexcept {
  Global& s = g();
  try {
    // A child made by _Fork() from a signal handler: no atfork handler ran, so the session
    // still reads as running, and a lock the interrupted thread held stays held. Never wait.
    if (g_state.load() != kRunning || s.owner_pid != static_cast<pid_t>(parent_pid) || ::getpid() == s.owner_pid ||
        !s.cfg.write_at_stop)
      return -1;
    std::unique_lock<std::mutex> m(s.mu, std::try_to_lock);
    if (!m.owns_lock()) return -1;
    Profile p;
    {
      std::unique_lock<std::mutex> d(s.drain_mu, std::try_to_lock);
      if (!d.owns_lock()) return -1;
      std::unique_lock<std::mutex> r(buffer_registry().mutex(), std::try_to_lock);
      std::unique_lock<std::mutex> sr(site_registry().mutex(), std::try_to_lock);
      if (!r.owns_lock() || !sr.owns_lock()) return -1;
      r.unlock();
      sr.unlock();
      drain_pass_locked(s, /*sample_host=*/false);  // this child's CPU time and RSS are not the parent's
      p = build_locked(s, /*in_fork_child=*/true);
    }
    if (!s.cfg.write_empty && p.recorded_events == 0) return 0;
    return write_profile_file(p, output_path_for(s.cfg, static_cast<pid_t>(parent_pid), s.run.rank)) ? 0 : -1;
  } catch (...) {
    return -1;
  }
}

}  // namespace detail


Status start(const Config& cfg) {
  auto& s = detail::g();
  try {
    std::lock_guard<std::mutex> lock(s.mu);
    if (detail::g_state.load() == detail::kRunning) return Status::ok();
    Status st = detail::start_locked(s, cfg);
    if (st && detail::g_state.load() == detail::kRunning) {
      // The explicit starter is the main-thread fallback (a lazy start has none).
      std::lock_guard<std::mutex> d(s.drain_mu);
      s.agg->set_main_thread_hint(detail::current_thread_index());
    }
    return st;
  } catch (const std::exception& e) {
    return Status::error(std::string("gnnprof: cannot start session: ") + e.what());
  }
}

Status stop() {
  auto& s = detail::g();
  // A termination signal from here until the profile is written waits until it is (a pool's
  // worker ending on its own while the pool terminates it): then it kills as it would have.
  // Blocked before the lock: the SIGTERM handler's flush takes that lock in a copy of this
  // process, where a lock held here stays held.
  sigset_t term, old;
  sigemptyset(&term);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&term, sig);
  pthread_sigmask(SIG_BLOCK, &term, &old);
  struct RestoreMask {
    sigset_t mask;
    ~RestoreMask() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{old};
  try {
    std::unique_lock<std::mutex> lock(s.mu, std::defer_lock);
    // Bounded wait: stop() also runs from atexit, where waiting forever on a lock held by a
    // thread that is itself blocked would hang the host's exit. Polled try_lock rather than
    // timed_mutex::try_lock_for, whose pthread_mutex_clocklock ThreadSanitizer cannot see.
    if (!detail::lock_within(lock, 5000)) return Status::error("gnnprof: session busy; profile not written");
    // The preload's session goes on (torch, CUPTI, its exit flush): this copy stops forwarding
    // and has the profile so far written, as a stop would.
    if (const detail::ForwardCore* f = detail::forwarding()) {
      detail::g_state.store(detail::kStopped);
      return f->flush() == 0 ? Status::ok() : Status::error("gnnprof: profile not written");
    }
    if (detail::g_state.load() != detail::kRunning) return Status::ok();
    detail::g_state.store(detail::kStopped);
    detail::stop_drainer(s);
    Profile p;
    {
      std::lock_guard<std::mutex> d(s.drain_mu);
      detail::drain_pass_locked(s, /*sample_host=*/true, /*last=*/true);
      p = detail::build_locked(s);
    }
    s.last_profile = p;
    if (!s.cfg.write_at_stop) return Status::ok();
    if (!s.cfg.write_empty && p.recorded_events == 0) return Status::ok();
    std::string path = detail::output_path_for(s.cfg, ::getpid(), s.run.rank);
    Status st = write_profile_file(p, path);
    if (!st) {
      if (!s.flush_warned) std::fprintf(stderr, "gnnprof: warning: %s\n", st.message().c_str());
      s.flush_warned = true;
      return st;
    }
    if (!s.cfg.quiet) std::fprintf(stderr, "gnnprof: profile written to %s\n", path.c_str());
    return Status::ok();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gnnprof: warning: profile not written: %s\n", e.what());
    return Status::error(std::string("gnnprof: profile not written: ") + e.what());
  }
}

Result<Profile> snapshot() {
  auto& s = detail::g();
  try {
    std::lock_guard<std::mutex> lock(s.mu);
    if (detail::g_forward.load(std::memory_order_acquire) != nullptr)
      return Status::error("gnnprof: this process records into the session of gnnprof's preload library (gnnprof run), "
                           "which writes the profile");
    if (detail::g_state.load() != detail::kRunning) {
      if (s.last_profile) return *s.last_profile;
      return Status::error("gnnprof: no session has run");
    }
    std::lock_guard<std::mutex> d(s.drain_mu);
    detail::drain_pass_locked(s);
    return detail::build_locked(s);
  } catch (const std::exception& e) {
    return Status::error(std::string("gnnprof: snapshot failed: ") + e.what());
  }
}

bool is_running() noexcept {
  if (const detail::ForwardCore* f = detail::forwarding()) return f->is_running() != 0;
  return detail::g_state.load(std::memory_order_relaxed) == detail::kRunning;
}

void set_thread_name(const char* name) noexcept {
  if (name == nullptr) return;
  if (detail::g_state.load() == detail::kUninit) detail::lazy_start();
  if (const detail::ForwardCore* f = detail::forwarding(); f != nullptr) return f->set_thread_name(name);
  detail::name_current_thread(name);
}

}  // namespace gnnprof
