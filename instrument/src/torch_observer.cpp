// torch_observer.cpp — the global at::RecordFunction callback (the only torch TU here).
//
// Per thread: an OpClassifier (op_classifier.h) fed with OpInfo read from the RecordFunction,
// and a sink that turns its decisions into C ABI calls. Everything per-thread is allocated
// once and leaked on purpose: torch may run ops during static destruction, after a
// thread_local with a destructor would be gone. Nothing here throws into torch.
#include <ATen/SequenceNumber.h>
#include <ATen/core/List.h>
#include <ATen/record_function.h>
#include <c10/core/GradMode.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory_resource>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gnnprof/gnnprof_c.h"
#include "gnnprof/torch_observer.h"
#include "mono_clock.h"
#include "op_classifier.h"
#include "op_sampler.h"
#include "external_id.h"
#include "plugin_abi.h"
#include "gnnprof/internal/private_heap.h"

namespace gnnprof::instrument {
namespace {

using CorrPush = void (*)(std::uint64_t);
using CorrPop = void (*)();
std::atomic<CorrPush> g_corr_push{nullptr};
std::atomic<CorrPop> g_corr_pop{nullptr};
// The preload's poll (gnnprof_torch_set_poll): while its host is single-threaded no gnnprof
// thread runs, and the loop thread drains (argument 0) every kPollEveryOps op starts and
// drains and flushes (argument 1) at iteration marks.
using Poll = void (*)(int);
std::atomic<Poll> g_poll{nullptr};
constexpr std::uint32_t kPollEveryOps = 512;
ClassifierOptions g_options;
// A linked program's own options (gnnprof_torch_configure), set while other threads may read them.
std::atomic<bool> g_program_phases{true}, g_program_marks{true};
bool g_nested = false;  // record the ops nested in top-level ops too (GNNPROF_TORCH_NESTED=1)

// The optimizer's own ops (Adam on CPU, without foreach: about ten per parameter) cost the
// observer 2-3 µs each (torch's RecordFunction about 1) and tell nothing its stage does not, so they may be
// folded into the optimizer's stage (RecordFunction off until its step or zero_grad ends). The
// first step (and zero_grad) of the process is watched instead: its scope is folded from then
// on only if everything in it was a plain CPU op outside autograd. A collective, a device tensor,
// a copy between devices, a record_function scope, a closure's forward or backward: never
// folded. Nor once the process has copied between devices or run a collective elsewhere, nor
// while CUPTI correlates launches (kernels are attributed to the ops that launched them).
// A folded scope is watched again at its 4th, 8th, 16th and 32nd folded call and every 64th
// after (in iterations whose ops are observed): a step that starts running a collective later
// (an averaging optimizer past its warm-up) is unfolded for good at the next of those.
bool g_fold_optimizer = true;  // GNNPROF_TORCH_FOLD_OPTIMIZER
std::atomic<bool> g_devices_seen{false};
// A CUDA tensor read back or copied: the profile says so (collector "cuda-tensors"), so that the
// reports know a device was used when CUPTI was not on and no host-device copy ran (data made
// on the device, loss.item() its only readback).
std::atomic<bool> g_cuda_seen{false};
void note_cuda_seen() {
  if (g_cuda_seen.load(std::memory_order_relaxed) || g_cuda_seen.exchange(true)) return;
  gnnprof_note_collector("cuda-tensors", 1, "the loop's ops read back or copied CUDA tensors");
}
enum : std::uint8_t { kFoldUnknown = 0, kFoldYes = 1, kFoldNo = 2 };
std::atomic<std::uint8_t> g_fold_state[2] = {kFoldUnknown, kFoldUnknown};  // step, zero_grad
std::atomic<std::uint64_t> g_fold_calls[2] = {0, 0};  // calls of a folded scope (observed iterations)
std::atomic<std::uint64_t> g_scope_calls[2] = {0, 0};  // every call of the scope, for the note
std::once_flag g_fold_noted;
constexpr std::uint64_t kRewatchEvery = 64;

int fold_slot(OpKind kind) noexcept {
  return kind == OpKind::kOptimizerStep ? 0 : kind == OpKind::kOptimizerZero ? 1 : -1;
}

/// Whether this call of a folded scope is watched again instead (see above).
bool rewatch_due(int slot) noexcept {
  const std::uint64_t c = g_fold_calls[slot].fetch_add(1, std::memory_order_relaxed) + 1;
  return c < kRewatchEvery ? c >= 4 && (c & (c - 1)) == 0 : c % kRewatchEvery == 0;
}

bool fold_allowed() noexcept {
  return g_fold_optimizer && !g_nested && !g_devices_seen.load(std::memory_order_relaxed) &&
         g_corr_push.load(std::memory_order_relaxed) == nullptr && !at::hasThreadLocalCallbacks();
}

void note_folding() {
  std::call_once(g_fold_noted, [] {
    gnnprof_note_collector("torch-optimizer-ops", 1,
                           "the optimizer's own ops are folded into its stage (its first step ran only plain CPU ops); "
                           "GNNPROF_TORCH_FOLD_OPTIMIZER=0 observes them");
  });
}

/// A re-watched call of a folded scope ran something folding would hide: observed from now on.
void note_unfolded(int slot) {
  char why[320];
  std::snprintf(why, sizeof(why),
                "the optimizer's own ops were folded into its stage until its %s call %llu, which ran a collective, a "
                "device tensor or autograd ops when watched again; observed from then on (folded calls before it "
                "may have hidden such ops)",
                slot == 0 ? "step" : "zero_grad",
                static_cast<unsigned long long>(g_scope_calls[slot].load(std::memory_order_relaxed)));
  gnnprof_note_collector("torch-optimizer-ops", 1, why);
}

bool any_requires_grad(c10::ArrayRef<const c10::IValue> inputs);

/// Whether an op seen inside a watched optimizer step keeps that step foldable.
bool foldable_op(const at::RecordFunction& fn, const OpInfo& op) {
  // Adam reads its step count (step_t.item()): a readback of a CPU tensor is a plain CPU op.
  if (op.kind != OpKind::kPlain && op.kind != OpKind::kReadback && !(op.kind == OpKind::kCopy && op.copy_src == op.copy_dst))
    return false;
  if (fn.scope() != at::RecordScope::FUNCTION) return false;
  if (op.grad_enabled && any_requires_grad(fn.inputs())) return false;  // a closure's forward
  for (const auto& iv : fn.inputs()) {
    if (iv.isTensor() && iv.toTensor().defined() && !iv.toTensor().is_cpu()) return false;
    if (iv.isTensorList())
      for (const at::Tensor& t : iv.toTensorList().vec())
        if (t.defined() && !t.is_cpu()) return false;
  }
  return true;
}

// Iteration sampling (op_sampler.h): the FUNCTION-scope callback (ops) is a handle of its own,
// disabled in iterations whose ops are not observed; the USER_SCOPE one (record_function,
// optimizer, ProfilerStep, collectives in flight) always runs. Driven from the loop thread's
// iteration marks only.
at::CallbackHandle g_ops_handle = 0;
std::atomic<std::uint64_t> g_ops{0};  // FUNCTION-scope starts observed since the last mark
OpSampler* g_sampler = nullptr;       // leaked on purpose (see the file comment)
std::atomic<bool> g_ops_enabled{true};  // written at the loop thread's marks only
std::int64_t g_last_mark = 0;
// When the last ProfilerStep#N scope ended (loop thread): an iteration's wall for the sampler
// ends there when that is after its mark. A DataLoader worker's scope is its fetch, so the wait
// for the next batch's indices does not count as the batch's time.
std::atomic<std::int64_t> g_step_scope_end{0};
int g_noted_period = -1;

void note_sampling() {
  gnnprof_note_collector("torch-op-sampling", 1, g_sampler->describe().c_str());
  g_noted_period = g_sampler->period();
}

SamplerOptions g_sampler_options;
std::atomic<bool> g_fork_reset{false};  // set in a worker (forked or spawned); its first mark starts sampling afresh

// A fork child (a DataLoader worker marking its batches, a process forked to train) has its own
// loop: it samples from a fresh warm-up (a worker's decides early, below), and the ops callback
// its parent may have disabled for an unobserved iteration comes back. Done at the first mark,
// not in the atfork handler: enabling a callback takes torch's callback mutex, which another
// parent thread may have held at the fork.
// A DataLoader worker (a fork child, or a spawned process since it became one): between
// batches it waits for the next index, so no phase spans a gap there.
std::atomic<bool> g_worker{false};
// The period a DataLoader worker decided, shared with the workers forked after it (a page
// mapped shared before any fork): a worker lives one epoch, often fewer batches than a
// calibration takes, so the next epoch's workers start from its decision. 0: none yet.
std::atomic<int>* g_worker_period = nullptr;

void reset_sampling_after_fork() {
  g_fork_reset = false;
  SamplerOptions so = g_sampler_options;
  if (so.mode == SamplerOptions::Mode::kAuto && g_worker) {
    // Decide after 2 batches past the first, from the estimated cost: the observer's cost on a
    // collate of element-wise reads is +300 % per batch, and the loop would wait for it.
    so.warmup = 3;
    so.estimate = true;
    so.seed = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint64_t>(mono_ns());
    if (g_worker_period != nullptr) so.inherited_period = g_worker_period->load(std::memory_order_relaxed);
  }
  g_sampler = new OpSampler(so);  // the parent's is leaked, like the first one
  g_last_mark = 0;
  g_step_scope_end.store(0, std::memory_order_relaxed);
  g_ops.store(0, std::memory_order_relaxed);
  g_noted_period = -1;
  if (!g_ops_enabled.load(std::memory_order_relaxed)) {
    at::reenableCallback(g_ops_handle);
    g_ops_enabled.store(true, std::memory_order_relaxed);
  }
}

/// Gather sources seen lately, per thread, most recent first, to tell a table that outlives the
/// iterations (the same storage in a later iteration) from this batch's tensors. A weak
/// reference: the storage's object stays allocated while it is held, so no later storage can
/// take its address and pass for it.
struct SeenSource {
  std::optional<c10::weak_intrusive_ptr<c10::StorageImpl>> storage;
  std::uint64_t iteration = 0;  // g_marks when first seen
  bool written = false;         // written in place as the loop's state (note_state_write)
};
std::atomic<std::uint64_t> g_marks{0};  // iteration marks so far
// The training loop's thread (0: none yet): the main thread at its first iteration mark, or
// another thread at its first optimizer step while the loop's thread has made one mark at most
// (none, or the first forward's of a sanity check or a lazy module's set-up before a
// threading.Thread trains). Its marks so far (2: for good).
std::atomic<long> g_loop_tid{0};
std::atomic<int> g_loop_marks{0};

long this_tid() { return static_cast<long>(::syscall(SYS_gettid)); }

/// Whether the calling thread is the loop's, or the main thread while no thread is.
bool on_loop_thread() {
  const long loop = g_loop_tid.load(std::memory_order_relaxed);
  return loop != 0 ? loop == this_tid() : this_tid() == ::getpid();
}

// An iteration boundary on the loop thread: decide whether the next iteration's ops are
// observed, switch the ops callback accordingly, and mark the boundary with that fact. A thread
// that is not (or no longer) the loop's marks nothing: the sampler is the loop thread's alone.
// The loop's iterations are marked by its own ops (parameter updates by hand): iterations
// whose ops went unobserved would mark none, so every one is observed.
std::atomic<bool> g_marks_from_ops{false};

void mark_iteration(long tid, unsigned flags = 0, bool after_gap = false, bool by_ops = false) {
  long loop = g_loop_tid.load(std::memory_order_relaxed);
  if (loop == 0 && g_loop_tid.compare_exchange_strong(loop, tid, std::memory_order_relaxed)) loop = tid;
  if (loop != tid) return;
  if (g_loop_marks.load(std::memory_order_relaxed) < 2) g_loop_marks.fetch_add(1, std::memory_order_relaxed);
  g_marks.fetch_add(1, std::memory_order_relaxed);
  if (after_gap) g_last_mark = 0;  // the dropped time is no iteration for the sampler either
  if (g_fork_reset && g_sampler != nullptr && g_ops_handle != 0) reset_sampling_after_fork();
  if (by_ops && g_sampler != nullptr && g_ops_handle != 0 && !g_marks_from_ops.exchange(true, std::memory_order_relaxed)) {
    if (!g_ops_enabled.load(std::memory_order_relaxed)) at::reenableCallback(g_ops_handle);
    g_ops_enabled.store(true, std::memory_order_relaxed);
    gnnprof_note_collector("torch-op-sampling", 1,
                           "ops observed in every iteration: the loop's iterations end at its parameter updates by hand, "
                           "which are ops (an unobserved iteration would mark none)");
  }
  if (g_sampler == nullptr || g_ops_handle == 0 || g_marks_from_ops.load(std::memory_order_relaxed)) {
    gnnprof_step_flags(flags);
    if (Poll poll = g_poll.load(std::memory_order_acquire)) poll(1);
    return;
  }
  const std::int64_t now = mono_ns();
  const std::int64_t scope_end = g_step_scope_end.load(std::memory_order_relaxed);
  const std::int64_t end = scope_end > g_last_mark ? scope_end : now;
  const bool observe = g_sampler->on_mark(g_last_mark == 0, end - g_last_mark, g_ops.exchange(0, std::memory_order_relaxed));
  g_last_mark = now;
  if (observe != g_ops_enabled.load(std::memory_order_relaxed)) {
    if (observe) at::reenableCallback(g_ops_handle);
    else at::disableCallback(g_ops_handle);
    g_ops_enabled.store(observe, std::memory_order_relaxed);
  }
  gnnprof_step_flags((observe ? 0u : GNNPROF_STEP_OPS_UNOBSERVED) | flags);
  if (g_sampler->period() != g_noted_period) {
    note_sampling();
    if (g_worker && g_worker_period != nullptr && g_sampler->decided() && g_sampler->period() > 0)
      g_worker_period->store(g_sampler->period(), std::memory_order_relaxed);
  }
  if (Poll poll = g_poll.load(std::memory_order_acquire)) poll(1);
}

void line_watch_fired();

class CApiSink final : public OpSink {
 public:
  // Armed whether or not lines are traced yet: the loop's first step selects them.
  void watch_line() override { gnnprof_watch_next_line(&line_watch_fired); }
  void begin(std::string_view stage, const char* category) override {
    const std::uint32_t site = site_of(stage, category);
    gnnprof_stage_begin(site);
    sites_.push_back(site);
    const bool op = std::strcmp(category, "op") == 0;
    contexts_.push_back(op && !contexts_.empty() ? contexts_.back() : op ? 0 : site);
    if (track_off_cpu_ && !op && off_n_ < kOffFrames && off_cpu_tracked(site, stage)) {
      // A data stage's own time off the CPU: a data stage nested in it (a DataLoader's wait in
      // the program's "data" stage) pauses it and has its own. The forward phase's too: a loop
      // thread waiting for the GIL that another thread's Python holds is off the CPU there.
      const std::int64_t wall = mono_ns(), cpu = thread_cpu_ns();
      if (off_n_ > 0) pause(off_[off_n_ - 1], wall, cpu);
      off_[off_n_++] = OffFrame{sites_.size(), off_counter_, wall, cpu, 0};
    }
  }
  void end() override {
    while (off_n_ > 0 && off_[off_n_ - 1].depth > sites_.size()) --off_n_;  // ended out of order: forget it
    if (off_n_ > 0 && off_[off_n_ - 1].depth == sites_.size()) {
      // The data stage's time off the CPU (a time.sleep, blocking I/O in a generator): it holds
      // no GIL, so a prefetch thread could overlap it whatever the loader's Python is.
      const std::int64_t wall = mono_ns(), cpu = thread_cpu_ns();
      OffFrame& f = off_[--off_n_];
      pause(f, wall, cpu);
      if (f.cpu >= 0) gnnprof_counter(f.counter, static_cast<double>(std::max<std::int64_t>(0, f.off)));
      if (off_n_ > 0) {  // the enclosing data stage resumes
        off_[off_n_ - 1].wall = wall;
        off_[off_n_ - 1].cpu = cpu;
      }
    }
    gnnprof_stage_end();
    if (!sites_.empty()) sites_.pop_back();
    if (!contexts_.empty()) contexts_.pop_back();
  }
  void step() override { mark_iteration(tid_); }
  void loader_step() override { mark_iteration(tid_, GNNPROF_STEP_BY_LOADER); }
  void update_step() override { mark_iteration(tid_, 0, false, true); }
  void set_tid(long tid) noexcept { tid_ = tid; }
  void drop_iteration(bool begin) override {
    if (begin) {
      mark_iteration(tid_, GNNPROF_STEP_DROP_OPEN, true);
    } else {
      gnnprof_step_end_flags(GNNPROF_STEP_DROP_OPEN);
      g_last_mark = 0;
    }
  }
  void materialize(std::uint64_t rows, std::uint64_t bytes) override { gnnprof_materialize(rows, bytes); }
  void transfer(std::uint64_t bytes, int direction, int memory, int mode) override {
    gnnprof_transfer(bytes, direction, memory, mode, 0);
  }
  void comm_bytes(std::uint64_t bytes) override {
    static const gnnprof_site_t site = gnnprof_counter_site("comm bytes");
    gnnprof_counter(site, static_cast<double>(bytes));
  }
  /// The innermost stage that is not an op's own (forward, backward, h2d, a user scope...): the
  /// stage a kernel's GPU time is charged to ("gpu: forward"), its op going in a column.
  std::uint32_t context_site() const noexcept { return contexts_.empty() ? 0 : contexts_.back(); }
  /// A site named after an op, for the per-kernel table's "op" column (CUPTI only).
  std::uint32_t op_site(std::string_view name) { return intern(op_sites_, name, "op"); }
  /// Measure the data stages' time off the CPU (the loop thread's: the GIL what-if's).
  void track_off_cpu(bool on) noexcept { track_off_cpu_ = on; }

 private:
  long tid_ = 0;  // the thread's (mark_iteration: the loop thread's marks only)
  static std::int64_t thread_cpu_ns() noexcept {
    timespec ts{};
    if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return -1;
    return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }
  /// Whether `site` is a data stage or the forward phase; its off-CPU counter in off_counter_
  /// when it is.
  bool off_cpu_tracked(std::uint32_t site, std::string_view name) {
    auto it = data_sites_.find(site);
    if (it == data_sites_.end()) {
      std::uint32_t counter = 0;
      // (not the Python tracer's await scope: it samples that counter itself, a syscall less)
      if ((gnnprof_stage_is_data(site) == 1 && name != GNNPROF_AWAIT_STAGE) || name == "forward") {
        const std::string n = GNNPROF_OFF_CPU_COUNTER_PREFIX + std::string(name);
        counter = gnnprof_counter_site(n.c_str());
      }
      it = data_sites_.emplace(site, counter).first;
    }
    off_counter_ = it->second;
    return it->second != 0;
  }
  /// A data stage being measured: its depth in sites_, counter, clocks at its last resume, and
  /// its time off the CPU so far.
  struct OffFrame {
    std::size_t depth = 0;
    std::uint32_t counter = 0;
    std::int64_t wall = 0, cpu = 0, off = 0;
  };
  static void pause(OffFrame& f, std::int64_t wall, std::int64_t cpu) noexcept {
    if (f.cpu >= 0 && cpu >= 0) f.off += (wall - f.wall) - (cpu - f.cpu);
  }
  static constexpr std::size_t kOffFrames = 8;
  bool track_off_cpu_ = false;
  std::array<OffFrame, kOffFrames> off_{};
  std::size_t off_n_ = 0;
  std::uint32_t off_counter_ = 0;  // off_cpu_tracked()'s answer for the site it was asked about
  std::uint32_t site_of(std::string_view name, const char* category) {
    // A record_function scope takes the category its name implies ("sample" is data, ...).
    return intern(sites_by_name_, name, std::strcmp(category, "user") == 0 ? nullptr : category);
  }
  /// The site named `name` in `by_name`, created once (category nullptr: implied by the name).
  std::uint32_t intern(std::pmr::unordered_map<std::string_view, std::uint32_t>& by_name, std::string_view name,
                       const char* category) {
    auto it = by_name.find(name);
    if (it != by_name.end()) return it->second;
    names_.emplace_back(name);
    const std::uint32_t site = gnnprof_stage_site(names_.back().c_str(), category);
    by_name.emplace(names_.back(), site);
    return site;
  }
  // Names are met during the host's first iterations: their tables live on a private heap,
  // not between the host's own allocations (profiler/src/private_heap.h).
  gnnprof::detail::PrivateHeap heap_;
  std::pmr::deque<std::pmr::string> names_{heap_.resource()};  // stable storage for the map's keys
  std::pmr::unordered_map<std::string_view, std::uint32_t> sites_by_name_{heap_.resource()};
  std::pmr::unordered_map<std::string_view, std::uint32_t> op_sites_{heap_.resource()};
  std::pmr::unordered_map<std::uint32_t, std::uint32_t> data_sites_{heap_.resource()};  // stage site -> off-CPU counter (0: none)
  std::pmr::vector<std::uint32_t> sites_{heap_.resource()};
  std::pmr::vector<std::uint32_t> contexts_{heap_.resource()};
};

// Asynchronous collectives (ProcessGroup works: "gloo:all_reduce", ...): Gloo starts their
// RecordFunction on its worker thread when it begins the work and ends it at completion. Each
// becomes a range on the lane "comm (in flight)"; the count of those in flight tells the loop
// thread's classifier when a gap between ops is a wait.
struct PendingComm {
  std::int64_t t0 = 0;
  std::string name;
};
std::mutex g_comm_mu;
// Leaked, as g_sampler: a collective may end on another thread after static destructors ran.
auto& g_comm = *new std::unordered_map<const void*, PendingComm>;  // keyed by the RecordFunction's address
auto& g_comm_sites = *new std::unordered_map<std::string, std::uint32_t>;
std::atomic<int> g_comm_in_flight{0};

void async_comm_start(const at::RecordFunction& fn) {
  g_devices_seen.store(true, std::memory_order_relaxed);
  PendingComm p;
  p.t0 = mono_ns();
  p.name = fn.name();
  std::lock_guard<std::mutex> lock(g_comm_mu);
  if (g_comm.size() >= 4096) return;  // a backend that never ends its works: stop tracking
  auto [it, inserted] = g_comm.try_emplace(&fn);
  it->second = std::move(p);  // an address reused by a work that never ended: replaced, not counted twice
  if (inserted) g_comm_in_flight.fetch_add(1, std::memory_order_relaxed);
}

void async_comm_end(const at::RecordFunction& fn) {
  const std::int64_t t1 = mono_ns();
  PendingComm p;
  std::uint32_t site = 0;
  {
    std::lock_guard<std::mutex> lock(g_comm_mu);
    auto it = g_comm.find(&fn);
    if (it == g_comm.end()) return;
    p = std::move(it->second);
    g_comm.erase(it);
    g_comm_in_flight.fetch_sub(1, std::memory_order_relaxed);
    auto s = g_comm_sites.find(p.name);
    if (s == g_comm_sites.end()) s = g_comm_sites.emplace(p.name, gnnprof_stage_site(p.name.c_str(), "comm")).first;
    site = s->second;
  }
  static const gnnprof_lane_t lane = gnnprof_lane("comm (in flight)");
  gnnprof_lane_range(lane, site, 0, p.t0, t1);
}

// What a frame did at its start that its end must undo.
constexpr std::uint8_t kPushedCorr = 1;    // pushed an external correlation id (CUPTI)
constexpr std::uint8_t kMutedNested = 2;   // turned RecordFunction off for the ops nested in it
constexpr std::uint8_t kForwardLine = 4;   // a forward op run from a traced line (LineMark)
constexpr std::uint8_t kChargeLine = 8;    // a backward node whose time goes to a line (LineMark)
constexpr std::uint8_t kStepScope = 16;    // a ProfilerStep#N scope (its end: g_step_scope_end)

// Backward time charged to the forward line (docs/architecture.md, "Python lines"): a forward
// op and the autograd nodes it creates share sequence numbers (RecordFunction::seqNr, as
// Kineto links them), per forward thread. At the end of a top-level forward op run while a
// traced line is current, the numbers it used ([seqNr, sequence_number::peek())) are mapped
// to that line; a backward node (the BACKWARD_FUNCTION RecordFunction, carrying its node's
// number and forward thread) looks its line up and is charged to it. A direct-mapped table:
// bounded memory, and a node older than 64 Ki numbers finds its slot reused and is not charged.
struct SeqSlot {
  std::atomic<std::uint64_t> key{0};  // (seq + 1) ^ (forward thread << 40): 0 is empty
  std::atomic<std::uint32_t> line{0};
};
constexpr std::size_t kSeqSlots = 1u << 16;
constexpr std::int64_t kSeqGapMax = 16;  // numbers between two mapped ops that the next one's line takes
SeqSlot* g_seq = nullptr;  // allocated when lines are first traced, leaked (see the file comment)
std::once_flag g_seq_once;

std::uint64_t seq_key(std::int64_t seq, std::uint64_t thread) noexcept {
  return (static_cast<std::uint64_t>(seq) + 1) ^ (thread << 40);
}

void map_seq(std::int64_t first, std::int64_t end, std::uint64_t thread, std::uint32_t line) noexcept {
  if (g_seq == nullptr || first < 0) return;
  for (std::int64_t s = first; s < end && s < first + 256; ++s) {
    SeqSlot& slot = g_seq[static_cast<std::size_t>(s) & (kSeqSlots - 1)];
    slot.line.store(line, std::memory_order_relaxed);
    slot.key.store(seq_key(s, thread), std::memory_order_release);
  }
}

std::uint32_t line_of_seq(std::int64_t seq, std::uint64_t thread) noexcept {
  if (g_seq == nullptr || seq < 0) return 0;
  const SeqSlot& slot = g_seq[static_cast<std::size_t>(seq) & (kSeqSlots - 1)];
  const std::uint64_t key = slot.key.load(std::memory_order_acquire);
  const std::uint32_t line = slot.line.load(std::memory_order_relaxed);
  return key == seq_key(seq, thread) ? line : 0;
}

/// Whether some thread traces lines (the Python package's tracer): only then are forward ops
/// mapped and backward nodes observed. Cached once true.
bool lines_traced() noexcept {
  static std::atomic<bool> seen{false};
  if (seen.load(std::memory_order_relaxed)) return true;
  if (gnnprof_lines_traced() == 0) return false;
  std::call_once(g_seq_once, [] { g_seq = new (std::nothrow) SeqSlot[kSeqSlots]; });
  seen.store(true, std::memory_order_relaxed);
  return true;
}

/// Per frame with kForwardLine or kChargeLine.
struct LineMark {
  std::int64_t seq = -1;   // kForwardLine: the op's first sequence number
  std::uint32_t line = 0;  // the forward line
  std::int64_t t0 = 0;     // kChargeLine: the node's start (mono ns)
};

// A thread's stacks grow while the host's first iterations run (the deepest nesting is met in
// the first backward): as malloc blocks they would sit between the host's freed tensors and
// make its heap grow, as the name tables did (private_heap.h). They live on a private heap, and
// the state itself in its own mapping.
struct ThreadState {
  gnnprof::detail::PrivateHeap heap;
  CApiSink sink;
  OpClassifier classifier;
  std::pmr::vector<std::uint64_t> handles{heap.resource()};  // RecordFunction handles of the frames, LIFO
  std::pmr::vector<std::uint8_t> undo{heap.resource()};      // kPushedCorr | kMutedNested | kForwardLine | kChargeLine, per frame
  std::pmr::vector<LineMark> marks{heap.resource()};         // frames with kForwardLine / kChargeLine, LIFO
  std::uint32_t starts_since_poll = 0;
  bool loop_candidate = false;  // the classifier marks iterations (the main thread; a training thread that took the loop)
  long tid = 0;
  int watch_slot = -1;          // a first optimizer step (or zero_grad) being watched: fold_slot
  std::size_t watch_frame = 0;  // its frame's depth in handles
  bool watch_foldable = true;   // nothing in it so far forbids folding its kind
  std::int64_t forward_seq = 0;  // the autograd sequence number when the last op that opened a forward began
  int module_depth = 0;          // torch.nn.Module calls open (gnnprof_torch_module)
  std::int64_t module_seq = 0;   // the autograd sequence number when the outermost one began
  int backward_depth = 0;        // torch.autograd.backward calls open (gnnprof_torch_backward)
  // Scopes the package marks from Python open (gnnprof.stage, gradient clipping): each one's
  // handle in `handles` (kPythonScope | n), or 0 where the classifier did not take it.
  std::pmr::vector<std::uint64_t> python_scopes{heap.resource()};
  std::uint64_t python_scope_count = 0;
  std::int64_t seq_end = -1;  // the sequence number after the last forward op mapped to a line
  // The top-level backward op (autograd::engine::evaluate_function) open now, while lines are
  // traced: its frame's depth in handles (0: none) and start, for its node to charge.
  std::size_t backward_frame = 0;
  std::int64_t backward_t0 = 0;
  // The traced line that ran the last backward (0: none), and the last answer of whether the
  // current line is below it (after_backward_line).
  gnnprof_site_t backward_site = 0, below_site = 0, below_anchor = 0;
  bool below = false;
  // The same for the training loop's own statements (gnnprof_loop_line): the one the last
  // backward ran under, when a helper ran it (a Trainer's step()), and the last answer.
  gnnprof_site_t backward_loop_line = 0, below_loop = 0, below_loop_anchor = 0;
  bool below_in_loop = false;
  std::array<SeenSource, 8> sources{};  // fill_gather's, most recently used first
  // The parameters' storages: leaves needing grad that forward ops read before the thread's
  // first backward, sorted, each pinned by a weak reference (no later storage takes its
  // address). `p.data += -lr * p.grad` writes one through an alias needing no grad.
  std::pmr::vector<const c10::StorageImpl*> param_storages{heap.resource()};
  std::pmr::vector<c10::weak_intrusive_ptr<c10::StorageImpl>> param_refs{heap.resource()};
  bool params_known = false;  // a backward began: the forward read every parameter it uses
  explicit ThreadState(ClassifierOptions opt) : classifier(sink, opt, heap.resource()) {}
};

thread_local ThreadState* t_state = nullptr;

ThreadState* state() {
  if (t_state == nullptr) {
    ClassifierOptions opt = g_options;
    const long tid = this_tid();
    const bool main_thread = tid == ::getpid();
    opt.phases = opt.phases && g_program_phases.load(std::memory_order_relaxed);
    opt.marks_iterations = main_thread && g_options.marks_iterations && g_program_marks.load(std::memory_order_relaxed);
    opt.phases_span_gaps = main_thread && !g_worker;
    t_state = new (gnnprof::detail::map_pages(sizeof(ThreadState), alignof(ThreadState))) ThreadState(opt);
    t_state->sink.track_off_cpu(main_thread);  // the loop's thread: the GIL what-if's data stages
    t_state->loop_candidate = main_thread;
    t_state->tid = tid;
    t_state->sink.set_tid(tid);
  }
  return t_state;
}

/// A thread other than the main one takes the loop at its first optimizer step when no thread
/// has, or the one that has made one mark at most (training in a threading.Thread); the thread
/// that had it, at its next op or call, stops marking.
void track_loop_thread(ThreadState* ts, bool optimizer_step) {
  long loop = g_loop_tid.load(std::memory_order_relaxed);
  if (ts->loop_candidate) {
    if (loop != 0 && loop != ts->tid) {
      ts->loop_candidate = false;
      ts->sink.track_off_cpu(false);
      ts->classifier.set_loop_thread(false, false, false);
    }
    return;
  }
  if (!optimizer_step || g_worker || (loop != 0 && g_loop_marks.load(std::memory_order_relaxed) >= 2)) return;
  if (!g_loop_tid.compare_exchange_strong(loop, ts->tid, std::memory_order_relaxed)) return;
  g_loop_marks.store(0, std::memory_order_relaxed);
  ts->loop_candidate = true;
  ts->sink.track_off_cpu(true);
  ts->classifier.set_loop_thread(true, g_options.marks_iterations && g_program_marks.load(std::memory_order_relaxed), true);
}

/// The calling thread's state, after the loop thread's check (a thread that lost the loop to a
/// training thread marks nothing from any entry: the package's module, backward, loop and step calls).
ThreadState* checked_state() {
  ThreadState* ts = state();
  track_loop_thread(ts, false);
  return ts;
}

void line_watch_fired() {
  try {
    if (ThreadState* ts = t_state) ts->classifier.on_line();
  } catch (...) {  // never into the host: the phase then ends where it did before
  }
}

Scope scope_of(at::RecordScope s) {
  switch (s) {
    case at::RecordScope::FUNCTION: return Scope::kFunction;
    case at::RecordScope::BACKWARD_FUNCTION: return Scope::kBackward;
    case at::RecordScope::USER_SCOPE: return Scope::kUser;
    default: return Scope::kOther;
  }
}

Device device_of(const at::Tensor& t) {
  if (t.is_cpu()) return Device::kCpu;
  if (t.is_cuda()) return Device::kCuda;
  return Device::kOther;
}

/// torch.autograd.profiler.record_function's handle, torch.zeros(1), made before its scope
/// begins (every optimizer step, DataLoader batch and user scope in torch 1.13).
bool record_function_handle(const char* name, c10::ArrayRef<const c10::IValue> inputs) {
  if (std::strcmp(name, "aten::zeros") != 0 || inputs.empty()) return false;
  const c10::IValue& size = inputs[0];
  if (size.isIntList()) {
    const auto v = size.toIntList();
    if (v.size() != 1 || v.get(0) != 1) return false;
  } else if (size.isList()) {
    const auto v = size.toListRef();
    if (v.size() != 1 || !v[0].isInt() || v[0].toInt() != 1) return false;
  } else {
    return false;
  }
  return inputs.size() < 2 || inputs[1].isNone();  // no dtype (the device, pin_memory: Python's defaults)
}

bool any_requires_grad(c10::ArrayRef<const c10::IValue> inputs) {
  for (const auto& iv : inputs) {
    if (iv.isTensor()) {
      const at::Tensor& t = iv.toTensor();
      if (t.defined() && t.requires_grad()) return true;
    }
  }
  return false;
}

const at::Tensor* tensor_at(c10::ArrayRef<const c10::IValue> inputs, std::size_t i) {
  if (i >= inputs.size() || !inputs[i].isTensor()) return nullptr;
  const at::Tensor& t = inputs[i].toTensor();
  return t.defined() ? &t : nullptr;
}

void fill_gather(const at::RecordFunction& fn, std::string_view name, OpInfo& op, SeenSource* seen, std::size_t n_seen) {
  auto inputs = fn.inputs();
  const at::Tensor* src = tensor_at(inputs, 0);
  // Feature rows: a floating-point table of 2+ dims, gathered along its first. Index lookups
  // (1-D), integer tables (edge_index[:, mask], a neighbour table), columns and sparse tensors
  // are not.
  if (src == nullptr || !src->is_cpu() || src->layout() != c10::kStrided || !src->has_storage() || src->dim() < 2 ||
      !src->is_floating_point())
    return;
  std::int64_t dim = 0;
  std::uint64_t rows = 0, covered = 1;  // covered: the elements of the indexed dims (a row's bytes = all / covered)
  if (name == "aten::index_select") {
    if (inputs.size() < 3 || !inputs[1].isInt()) return;
    dim = inputs[1].toInt();
    if (dim < 0) dim += src->dim();
    if (const at::Tensor* idx = tensor_at(inputs, 2)) rows = static_cast<std::uint64_t>(idx->numel());
    if (dim >= 0 && dim < src->dim()) covered = static_cast<std::uint64_t>(src->size(dim));
  } else if (name == "aten::embedding") {
    if (const at::Tensor* idx = tensor_at(inputs, 1)) rows = static_cast<std::uint64_t>(idx->numel());
    covered = static_cast<std::uint64_t>(src->size(0));
  } else if (inputs.size() >= 2 && inputs[1].isList()) {  // aten::index(self, Tensor?[] indices)
    // x[idx], x[mask], x[:, mask] (None first), x[i, j]: the first index tensor's dim is the
    // gather's; a boolean mask covers as many dims as it has (its true entries are counted only
    // as an upper bound: its length).
    std::int64_t at = 0;
    bool first = true;
    for (const auto& e : inputs[1].toListRef()) {
      if (!e.isTensor() || !e.toTensor().defined()) {
        ++at;
        continue;
      }
      const at::Tensor& idx = e.toTensor();
      const std::int64_t span = idx.scalar_type() == at::kBool ? std::max<std::int64_t>(idx.dim(), 1) : 1;
      if (first) {
        dim = at;
        rows = static_cast<std::uint64_t>(idx.numel());
        first = false;
      }
      for (std::int64_t d = at; d < at + span && d < src->dim(); ++d) covered *= static_cast<std::uint64_t>(src->size(d));
      at += span;
    }
    if (first) return;
  }
  if (dim != 0 || src->size(0) == 0 || covered == 0) return;
  const std::uint64_t src_bytes = src->nbytes();
  op.gather_source_bytes = src_bytes;
  op.gather_rows = rows;
  op.gather_bytes = rows * (src_bytes / covered);
  op.gather_source_rows = static_cast<std::uint64_t>(src->size(0));
  if (src->requires_grad()) return;  // the model's own rows: never a feature table
  // Most recently used first: a table read every iteration stays, whatever else a layer gathers.
  const c10::StorageImpl* impl = src->storage().unsafeGetStorageImpl();
  const std::uint64_t now = g_marks.load(std::memory_order_relaxed);
  std::size_t at = n_seen - 1;  // a miss takes the least recently used slot
  for (std::size_t i = 0; i < n_seen; ++i)
    if (seen[i].storage && !seen[i].storage->expired() && seen[i].storage->_unsafe_get_target() == impl) {
      op.gather_source_persistent = seen[i].iteration < now;
      op.gather_source_state = seen[i].written;
      at = i;
      break;
    }
  SeenSource entry = at < n_seen && seen[at].storage && seen[at].storage->_unsafe_get_target() == impl
                         ? std::move(seen[at])
                         : SeenSource{src->storage().getWeakStorageImpl(), now};
  for (std::size_t i = at; i > 0; --i) seen[i] = std::move(seen[i - 1]);
  seen[0] = std::move(entry);
}

/// An in-place write (index_put_, index_copy_, a copy_ into a slice) into a recent gather source
/// on the loop's lines after its backward, or inside a module: the loop's state (a TGN's
/// memory), which the next iteration's gathers read where it is current.
void note_state_write(const at::RecordFunction& fn, SeenSource* seen, std::size_t n_seen) {
  const at::Tensor* dst = tensor_at(fn.inputs(), 0);
  if (dst == nullptr || !dst->has_storage()) return;
  const c10::StorageImpl* impl = dst->storage().unsafeGetStorageImpl();
  for (std::size_t i = 0; i < n_seen; ++i)
    if (seen[i].storage && !seen[i].storage->expired() && seen[i].storage->_unsafe_get_target() == impl) {
      seen[i].written = true;
      return;
    }
}

constexpr std::size_t kMaxParameters = 1 << 16;

/// Notes the leaves needing grad among a forward op's inputs: the model's parameters.
void note_parameters(c10::ArrayRef<const c10::IValue> inputs, ThreadState& ts) {
  for (const auto& iv : inputs) {
    if (!iv.isTensor()) continue;
    const at::Tensor& t = iv.toTensor();
    if (!t.defined() || !t.requires_grad() || !t.is_leaf() || !t.has_storage()) continue;
    const c10::StorageImpl* impl = t.storage().unsafeGetStorageImpl();
    auto at = std::lower_bound(ts.param_storages.begin(), ts.param_storages.end(), impl);
    if ((at != ts.param_storages.end() && *at == impl) || ts.param_storages.size() >= kMaxParameters) continue;
    ts.param_storages.insert(at, impl);
    ts.param_refs.push_back(t.storage().getWeakStorageImpl());
  }
}

/// An in-place op whose target needs no grad but shares a parameter's storage (p.data).
bool writes_parameter(c10::ArrayRef<const c10::IValue> inputs, const ThreadState& ts) {
  const at::Tensor* dst = tensor_at(inputs, 0);
  if (dst == nullptr || !dst->has_storage()) return false;
  return std::binary_search(ts.param_storages.begin(), ts.param_storages.end(), dst->storage().unsafeGetStorageImpl());
}

void fill_copy(const at::RecordFunction& fn, OpInfo& op) {
  auto inputs = fn.inputs();
  const at::Tensor* dst = tensor_at(inputs, 0);
  const at::Tensor* src = tensor_at(inputs, 1);
  if (dst == nullptr || src == nullptr) return;
  op.copy_dst = device_of(*dst);
  op.copy_src = device_of(*src);
  op.copy_bytes = src->nbytes();
  if (op.copy_src != op.copy_dst) {
    const at::Tensor& host = op.copy_src == Device::kCpu ? *src : *dst;
    op.copy_host_pinned = host.is_cpu() && host.is_pinned();
  }
  if (inputs.size() >= 3 && inputs[2].isBool()) op.copy_non_blocking = inputs[2].toBool();
}

std::uint64_t tensor_bytes(c10::ArrayRef<const c10::IValue> inputs) {
  std::uint64_t bytes = 0;
  for (const auto& iv : inputs) {
    if (iv.isTensor() && iv.toTensor().defined()) bytes += iv.toTensor().nbytes();
    else if (iv.isTensorList())
      for (const at::Tensor& t : iv.toTensorList().vec()) bytes += t.defined() ? t.nbytes() : 0;
  }
  return bytes;
}

bool below_backward_line(ThreadState* ts);

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  try {
    // No session (a fork child that records nothing, or after stop()): nothing to classify.
    if (gnnprof_is_running() == 0) return nullptr;
    if (fn.isAsync()) {
      if (is_async_collective_name(fn.name())) async_comm_start(fn);
      return nullptr;
    }
    ThreadState* ts = state();
    if (++ts->starts_since_poll == kPollEveryOps) {
      ts->starts_since_poll = 0;
      if (Poll poll = g_poll.load(std::memory_order_acquire)) poll(0);
    }
    const char* cname = fn.name();
    const Scope scope = scope_of(fn.scope());
    if (scope == Scope::kFunction) g_ops.fetch_add(1, std::memory_order_relaxed);
    // Not cached by pointer: backward and user-scope names live in per-call strings.
    const OpKind kind = classify_name(cname, scope);
    if (kind == OpKind::kIgnore) return nullptr;
    OpInfo op;
    op.kind = kind;
    op.name = cname;
    op.grad_enabled = c10::GradMode::is_enabled();
    op.ops_observed = g_ops_enabled.load(std::memory_order_relaxed);
    // A step begins outside any module's call: a count left by a forward that raised (torch
    // 1.13 calls no forward hook then) ends here.
    if (kind == OpKind::kOptimizerStep) ts->module_depth = 0;
    track_loop_thread(ts, kind == OpKind::kOptimizerStep);
    op.in_module = ts->module_depth > 0;
    const int depth = ts->classifier.op_depth();  // ops open around this one
    const bool top = depth == 0;
    switch (kind) {
      case OpKind::kGather: fill_gather(fn, op.name, op, ts->sources.data(), ts->sources.size()); break;
      case OpKind::kCopy:
        fill_copy(fn, op);
        if (op.copy_src != op.copy_dst) g_devices_seen.store(true, std::memory_order_relaxed);
        if (op.copy_src == Device::kCuda || op.copy_dst == Device::kCuda) note_cuda_seen();
        break;
      case OpKind::kReadback:
        if (const at::Tensor* t = tensor_at(fn.inputs(), 0); t != nullptr && t->is_cuda()) note_cuda_seen();
        break;
      case OpKind::kComm:
        op.comm_bytes = tensor_bytes(fn.inputs());
        g_devices_seen.store(true, std::memory_order_relaxed);
        break;
      default: break;
    }
    if (top && kind != OpKind::kUserScope && kind != OpKind::kOptimizerStep && kind != OpKind::kOptimizerZero &&
        kind != OpKind::kProfilerStep)
      op.any_input_requires_grad = any_requires_grad(fn.inputs());
    if (kind == OpKind::kBackwardOp) ts->params_known = true;
    // Until its first backward (or the second iteration mark: a linked CUDA program's backward
    // runs on autograd's device thread, with no wrapper to say so).
    if (top && !ts->params_known && op.grad_enabled && op.any_input_requires_grad &&
        g_marks.load(std::memory_order_relaxed) < 2 &&
        (kind == OpKind::kPlain || kind == OpKind::kGather))
      note_parameters(fn.inputs(), *ts);
    if (top && ts->params_known && kind == OpKind::kPlain && !op.any_input_requires_grad && !op.in_module &&
        !ts->param_storages.empty() && op.name.size() > 1 && op.name.back() == '_')
      op.writes_parameter = writes_parameter(fn.inputs(), *ts);
    if (top && kind == OpKind::kPlain) op.bookkeeping = record_function_handle(cname, fn.inputs());
    // The loop's backward call anchors "below the backward": not torch.autograd.grad's nodes (a
    // gradient penalty, MAML's inner step), which the forward work after them goes on from.
    if (top && kind == OpKind::kBackwardOp && lines_traced() &&
        (!ts->classifier.backward_calls_seen() || ts->classifier.in_backward_call()))
      if (const gnnprof_site_t line = gnnprof_current_line(); line != 0) {
        ts->backward_site = line;
        ts->backward_loop_line = gnnprof_loop_line();
      }
    if (top && (kind == OpKind::kPlain || kind == OpKind::kGather || kind == OpKind::kCopy) && ts->backward_site != 0 &&
        !op.in_module)
      op.after_backward_line = below_backward_line(ts);
    if (top && (kind == OpKind::kPlain || kind == OpKind::kCopy) && (op.after_backward_line || op.in_module) && ts->sources[0].storage &&
        !op.name.empty() && op.name.back() == '_')
      note_state_write(fn, ts->sources.data(), ts->sources.size());
    if (kind == OpKind::kOptimizerStep) {
      gnnprof_optimizer_step();  // the Python tracer's auto selection, which sets the line
      op.call_line = gnnprof_current_line();
      // The first step selects the loop for tracing, after its first backward ran untraced:
      // until a backward's line is known, the lines below the step's are the ones after it.
      if (ts->backward_site == 0 && op.call_line != 0 && lines_traced()) ts->backward_site = op.call_line;
      if (ts->backward_loop_line == 0 && lines_traced()) ts->backward_loop_line = gnnprof_loop_line();
    }
    if (ts->watch_slot >= 0 && ts->watch_foldable) ts->watch_foldable = foldable_op(fn, op);
    ts->classifier.on_start(op);
    // A loop with no optimizer marked its iteration at the DataLoader's __next__: the Python
    // tracer's auto selection takes that loop, as it takes a training loop at its step.
    if (kind == OpKind::kUserScope && ts->classifier.take_loader_mark()) gnnprof_loader_step();
    // A loop updating its parameters by hand marked its iteration: selected as at a step.
    if (ts->classifier.take_update_mark()) gnnprof_optimizer_step();
    // Only an op that opened a forward phase is asked, at its end, whether it recorded anything
    // for autograd: the sequence number is read for it alone, before it runs.
    if (ts->classifier.innermost_opened_forward()) ts->forward_seq = at::sequence_number::peek();
    ts->handles.push_back(fn.handle());
    bool fold = false;
    const int slot = top ? fold_slot(kind) : -1;
    if (slot >= 0) g_scope_calls[slot].fetch_add(1, std::memory_order_relaxed);
    if (slot >= 0 && fold_allowed()) {
      const std::uint8_t st = g_fold_state[slot].load(std::memory_order_relaxed);
      // In an unobserved iteration a watch would see no op: only observed ones are counted.
      const bool rewatch = st == kFoldYes && ts->watch_slot < 0 && g_ops_enabled.load(std::memory_order_relaxed) &&
                           rewatch_due(slot);
      if (st == kFoldYes && !rewatch) {
        fold = true;
        note_folding();
      } else if ((st == kFoldUnknown || rewatch) && ts->watch_slot < 0) {
        ts->watch_slot = slot;
        ts->watch_frame = ts->handles.size();
        ts->watch_foldable = true;
      }
    }
    std::uint8_t undo = kind == OpKind::kProfilerStep ? kStepScope : 0;
    // A backward node's own RecordFunction (BACKWARD_FUNCTION, nested in evaluate_function):
    // charge its time to the forward line that built it.
    const bool node = scope == Scope::kBackward;
    std::uint32_t forward_line = 0;
    if (top && kind == OpKind::kBackwardOp && scope != Scope::kBackward && lines_traced()) {
      ts->backward_frame = ts->handles.size();
      ts->backward_t0 = mono_ns();
    }
    if (node) {
      if ((forward_line = line_of_seq(fn.seqNr(), fn.forwardThreadId())) != 0) {
        // The node's evaluate_function is charged whole, not the node's own call alone: the
        // engine's work around it (its gradients' input buffers, freeing what it consumed) is
        // that line's backward too, a fifth of an index or slice node's.
        if (depth == 1 && ts->backward_frame + 1 == ts->handles.size() && !ts->undo.empty() &&
            (ts->undo.back() & (kForwardLine | kChargeLine)) == 0) {
          ts->marks.push_back(LineMark{-1, forward_line, ts->backward_t0});
          ts->undo.back() |= kChargeLine;
        } else {
          ts->marks.push_back(LineMark{-1, forward_line, mono_ns()});
          undo |= kChargeLine;
        }
      }
    }
    // The launch's external correlation id, decoded by the CUPTI backend
    // (instrument/src/cupti_convert.h) into the kernel table's op and stage and the line. A
    // backward node's kernels carry its forward line: on a GPU torch runs them on autograd's
    // device thread, which has no traced line, and the forward line is charged their host
    // time already (pushed inside the top-level op's id: the innermost id is the kernels').
    CorrPush push = top || forward_line != 0 ? g_corr_push.load(std::memory_order_acquire) : nullptr;
    if (push != nullptr && !top) {
      push(pack_external(ts->sink.context_site(), ts->sink.op_site(op.name), forward_line));
      undo |= kPushedCorr;
    }
    if (top) {
      const std::uint32_t line = gnnprof_current_line();
      // A closure step's id would be the innermost one for its forward's and backward's kernels
      // in iterations whose ops are not observed (no op pushes its own): none, so they are
      // "(no op)" there, not the optimizer's.
      const bool closure_unobserved =
          kind == OpKind::kOptimizerStep && !op.ops_observed && ts->classifier.in_closure_step();
      if (push != nullptr && !closure_unobserved) {
        push(pack_external(ts->sink.context_site(), ts->sink.op_site(op.name), forward_line != 0 ? forward_line : line));
        undo |= kPushedCorr;
      }
      if (line != 0 && op.grad_enabled && kind != OpKind::kBackwardOp && lines_traced()) {
        // An op whose outermost kernel is not autograd's (autocast's casting wrapper) has no
        // sequence number of its own: the nodes its inner ops make start at the counter.
        const std::int64_t seq = fn.seqNr() >= 0 ? fn.seqNr() : at::sequence_number::peek();
        // Nodes created between top-level ops (a torch.jit graph's DifferentiableGraphBackward,
        // made by its executor) belong to the line whose op comes next; a few, not the numbers
        // of iterations whose ops were not observed.
        if (ts->seq_end >= 0 && seq > ts->seq_end && seq - ts->seq_end <= kSeqGapMax)
          map_seq(ts->seq_end, seq, at::RecordFunction::currentThreadId(), line);
        ts->marks.push_back(LineMark{seq, line, 0});
        undo |= kForwardLine;
      }
    }
    // While a callback is registered torch builds a RecordFunction for every op, nested ones
    // included: the main cost of observing (docs/architecture.md, "Cost model"). A top-level
    // op's nested ops change nothing in the picture unless may_mute_nested says otherwise, so
    // RecordFunction is off (this thread only) until it ends. Not while another observer uses
    // thread-local callbacks (torch.profiler): it would lose them. While lines are traced, a
    // backward op mutes below its node's own RecordFunction instead, which carries the
    // sequence number that links it to its forward line.
    const bool defer_to_node = top && kind == OpKind::kBackwardOp && lines_traced();
    if ((top && !defer_to_node) || (node && depth == 1)) {
      if (((!g_nested && may_mute_nested(kind, op.name)) || fold) && !at::hasThreadLocalCallbacks()) {
        at::enableRecordFunction(false);
        undo |= kMutedNested;
      }
    }
    ts->undo.push_back(undo);
  } catch (...) {
    // Never throw into torch; this op is simply not classified.
  }
  return nullptr;
}

/// Whether this thread's current line is below the line that ran its last backward, in the same
/// function (a registry lookup once per line, cached).
bool below_backward_line(ThreadState* ts) {
  const gnnprof_site_t line = gnnprof_current_line();
  if (line == 0) return false;
  if (line != ts->below_site || ts->backward_site != ts->below_anchor) {
    ts->below_site = line;
    ts->below_anchor = ts->backward_site;
    ts->below = gnnprof_line_after(line, ts->backward_site) == 1;
  }
  if (ts->below) return true;
  // A helper ran the backward (a Trainer's `loss = self.step(batch)`): the loop function's
  // statement now against the one the backward ran under.
  const gnnprof_site_t loop = gnnprof_loop_line();
  if (loop == 0 || ts->backward_loop_line == 0) return false;
  if (loop != ts->below_loop || ts->backward_loop_line != ts->below_loop_anchor) {
    ts->below_loop = loop;
    ts->below_loop_anchor = ts->backward_loop_line;
    ts->below_in_loop = gnnprof_line_after(loop, ts->backward_loop_line) == 1;
  }
  return ts->below_in_loop;
}

void pop_frame(ThreadState* ts, bool last) {
  if (ts->watch_slot >= 0 && ts->handles.size() == ts->watch_frame) {
    std::uint8_t unknown = kFoldUnknown;
    const bool yes = ts->watch_foldable && !g_devices_seen.load(std::memory_order_relaxed);
    if (yes) g_fold_state[ts->watch_slot].compare_exchange_strong(unknown, kFoldYes);
    else if (g_fold_state[ts->watch_slot].exchange(kFoldNo) == kFoldYes) note_unfolded(ts->watch_slot);
    ts->watch_slot = -1;
  }
  if (!ts->undo.empty()) {
    const std::uint8_t undo = ts->undo.back();
    if (undo & kMutedNested) at::enableRecordFunction(true);
    if (undo & kPushedCorr)
      if (CorrPop pop = g_corr_pop.load(std::memory_order_acquire)) pop();
    if (undo & kStepScope) g_step_scope_end.store(mono_ns(), std::memory_order_relaxed);
    if ((undo & (kForwardLine | kChargeLine)) != 0 && !ts->marks.empty()) {
      const LineMark m = ts->marks.back();
      ts->marks.pop_back();
      if (undo & kForwardLine) {
        ts->seq_end = at::sequence_number::peek();
        map_seq(m.seq, ts->seq_end, at::RecordFunction::currentThreadId(), m.line);
      } else {
        static const gnnprof_site_t backward = gnnprof_stage_site("backward", "compute");
        gnnprof_line_charge(m.line, backward, m.t0, mono_ns());
      }
    }
    ts->undo.pop_back();
  }
  if (ts->handles.size() == ts->backward_frame) ts->backward_frame = 0;
  ts->handles.pop_back();
  const bool built = !ts->classifier.innermost_opened_forward() || at::sequence_number::peek() != ts->forward_seq;
  ts->classifier.on_end(last && g_comm_in_flight.load(std::memory_order_relaxed) > 0, built);
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  try {
    if (fn.isAsync()) {
      if (is_async_collective_name(fn.name())) async_comm_end(fn);
      return;
    }
    ThreadState* ts = t_state;
    if (ts == nullptr || ts->handles.empty()) return;
    const std::uint64_t h = fn.handle();
    if (ts->handles.back() == h) {
      pop_frame(ts, true);
      return;
    }
    // Out of order (a scope that outlived an op begun inside it): close down to it if open.
    for (std::size_t i = ts->handles.size(); i-- > 0;) {
      if (ts->handles[i] == h) {
        while (ts->handles.size() > i) pop_frame(ts, ts->handles.size() == i + 1);
        return;
      }
    }
  } catch (...) {
  }
}

// A scope the package marks from Python: a classifier frame with a handle of its own, so that
// frames and handles stay aligned when a RecordFunction begun before it ends inside it
// (ProfilerStep#N at prof.step() in a gnnprof.stage): it is closed down to then, as any frame.
constexpr std::uint64_t kPythonScope = std::uint64_t{1} << 63;

bool begin_python_scope(std::string_view name, const char* category, bool program_stage) {
  ThreadState* ts = checked_state();
  const bool take = gnnprof_is_running() != 0;
  std::uint64_t handle = 0;
  if (take) {
    handle = kPythonScope | ++ts->python_scope_count;
    ts->classifier.on_named_scope(name, true, category, ts->module_depth > 0, program_stage);
    ts->handles.push_back(handle);
    ts->undo.push_back(0);
  }
  ts->python_scopes.push_back(handle);
  return take;
}

/// Whether the scope's begin was the classifier's (its end then too, if still open).
bool end_python_scope() {
  ThreadState* ts = state();
  if (ts->python_scopes.empty()) return false;  // begun before the observer was installed
  const std::uint64_t handle = ts->python_scopes.back();
  ts->python_scopes.pop_back();
  if (handle == 0) return false;
  for (std::size_t i = ts->handles.size(); i-- > 0;)
    if (ts->handles[i] == handle) {
      while (ts->handles.size() > i) pop_frame(ts, ts->handles.size() == i + 1);
      break;
    }
  return true;
}

std::once_flag g_once;
int g_install_result = -1;

}  // namespace
}  // namespace gnnprof::instrument

namespace gi = gnnprof::instrument;

namespace {
/// The calling thread's state is rebuilt at its next op (the old one leaks, as in a fork
/// child): its options follow a worker's rules or a loop's; sampling starts afresh.
void become(bool worker) {
  gi::t_state = nullptr;
  gi::g_loop_tid.store(0, std::memory_order_relaxed);
  gi::g_loop_marks.store(0, std::memory_order_relaxed);
  if (!worker) gi::g_marks_from_ops.store(false, std::memory_order_relaxed);
  gi::g_worker = worker;
  gi::g_fork_reset = true;
}
}  // namespace

extern "C" {

int gnnprof_torch_observe(int flags, unsigned long long gather_min_bytes,
                                                                 char* reason, unsigned long reason_size) {
  std::call_once(gi::g_once, [&] {
    try {
      gi::g_options.op_stages = (flags & GNNPROF_TORCH_OP_STAGES) != 0;
      gi::g_options.phases = (flags & GNNPROF_TORCH_NO_PHASES) == 0;
      gi::g_options.marks_iterations = (flags & GNNPROF_TORCH_NO_MARKS) == 0;
      gi::g_options.gather_min_bytes = gather_min_bytes;
      gi::g_nested = gnnprof_config_bool("GNNPROF_TORCH_NESTED") != 0;
      gi::g_fold_optimizer = gnnprof_config_bool("GNNPROF_TORCH_FOLD_OPTIMIZER") != 0;
      // FUNCTION scope has the ops and autograd's evaluate_function frames; USER_SCOPE the
      // record_function, optimizer and ProfilerStep scopes and the collectives in flight. Two
      // callbacks, so that iteration sampling can switch the ops off and keep the scopes.
      if (gi::g_options.marks_iterations) {
        gi::SamplerOptions so;
        char sample[64] = {0};
        const bool set = gnnprof_config_string("GNNPROF_TORCH_SAMPLE", sample, sizeof(sample)) != 0;
        if (!so.parse(set ? sample : nullptr))
          gnnprof_config_warn("GNNPROF_TORCH_SAMPLE", sample, "auto, all or a period N >= 1", "auto");
        gi::g_sampler_options = so;
        gi::g_sampler = new gi::OpSampler(so);
        void* page = ::mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (page != MAP_FAILED) gi::g_worker_period = new (page) std::atomic<int>(0);
      }
      // BACKWARD_FUNCTION (a node's own RecordFunction, nested in evaluate_function) is muted
      // by its evaluate_function frame except while lines are traced, when it links backward
      // time to the forward line (see LineMark).
      gi::g_ops_handle = at::addGlobalCallback(at::RecordFunctionCallback(&gi::on_start, &gi::on_end)
                                                   .needsInputs(true)
                                                   .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
      at::addGlobalCallback(
          at::RecordFunctionCallback(&gi::on_start, &gi::on_end).scopes({at::RecordScope::USER_SCOPE}));
      // A fork child (a DataLoader worker) starts from a clean state on the forking thread: the
      // phase or scope its parent had open there never ends in the child (the old state leaks).
      pthread_atfork(nullptr, nullptr, [] {
        gi::t_state = nullptr;
        gi::g_loop_tid.store(0, std::memory_order_relaxed);
        gi::g_loop_marks.store(0, std::memory_order_relaxed);
        gi::g_worker = true;
        gi::g_fork_reset = true;
      });
      gi::g_install_result = 0;
    } catch (const std::exception& e) {
      if (reason != nullptr && reason_size > 0) std::snprintf(reason, reason_size, "addGlobalCallback failed: %s", e.what());
      gi::g_install_result = -1;
    }
  });
  return gi::g_install_result;
}

void gnnprof_torch_become_worker(void) { become(true); }

void gnnprof_torch_become_fork_loop(void) { become(false); }

void gnnprof_torch_close_thread(void) {
  try {
    // The final word on sampling (what was observed, the cost measured over the run), from the
    // loop thread only: the sampler is its, and another thread may close itself while the loop
    // runs.
    if (gi::g_sampler != nullptr && gi::g_sampler->iterations() > 0 && gi::on_loop_thread() &&
        !gi::g_marks_from_ops.load(std::memory_order_relaxed))
      gi::note_sampling();
    if (gi::t_state != nullptr) {
      gi::t_state->classifier.close_all();
      for (std::uint8_t undo : gi::t_state->undo)
        if (undo & gi::kMutedNested) at::enableRecordFunction(true);
      gi::t_state->handles.clear();
      gi::t_state->undo.clear();
      gi::t_state->marks.clear();
    }
  } catch (...) {
  }
}

void gnnprof_torch_set_correlation(void (*push)(unsigned long long), void (*pop)(void)) {
  gi::g_corr_push.store(reinterpret_cast<gi::CorrPush>(push), std::memory_order_release);
  gi::g_corr_pop.store(pop, std::memory_order_release);
}

void gnnprof_torch_set_poll(void (*poll)(int)) {
  gi::g_poll.store(poll, std::memory_order_release);
}

void gnnprof_torch_backward(int enter) {
  try {
    if (gnnprof_is_running() == 0) return;
    gi::ThreadState* ts = gi::checked_state();
    const bool observed = gi::g_ops_enabled.load(std::memory_order_relaxed);
    if (enter != 0) {
      ts->params_known = true;
      if (ts->backward_depth++ == 0 && observed) ts->classifier.on_backward_call(true);
    } else if (ts->backward_depth > 0 && --ts->backward_depth == 0 && observed) {
      ts->classifier.on_backward_call(false);
    }
  } catch (...) {
  }
}

void gnnprof_torch_grad_clip(int enter) {
  try {
    if (enter != 0) (void)gi::begin_python_scope("clip_grad", "user", false);
    else (void)gi::end_python_scope();
  } catch (...) {
  }
}

int gnnprof_torch_user_scope(const char* name, const char* category, int enter) {
  try {
    if (enter == 0) return gi::end_python_scope() ? 1 : 0;
    return name != nullptr && gi::begin_python_scope(name, category != nullptr ? category : "user", true) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int gnnprof_torch_loop(int enter) {
  try {
    if (gnnprof_is_running() == 0) return -1;
    return gi::checked_state()->classifier.on_loop(enter != 0);
  } catch (...) {
    return -1;
  }
}

int gnnprof_torch_user_step(void) {
  try {
    if (gnnprof_is_running() == 0) return 0;
    return gi::checked_state()->classifier.on_user_step() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

int gnnprof_torch_observing(void) {
  if (gnnprof_is_running() == 0) return -1;
  return gi::g_ops_enabled.load(std::memory_order_relaxed) ? 1 : 0;
}

void gnnprof_torch_configure(int flags) {
  gi::g_program_phases.store((flags & GNNPROF_TORCH_NO_PHASES) == 0, std::memory_order_relaxed);
  gi::g_program_marks.store((flags & GNNPROF_TORCH_NO_MARKS) == 0, std::memory_order_relaxed);
  // The calling thread's state is rebuilt at its next op with them (the old one leaks, as in a
  // fork child), unless an op of it is open; a phase it left open (spanning gaps) ends first.
  if (gi::t_state != nullptr && gi::t_state->handles.empty()) {
    try {
      gi::t_state->classifier.close_all();
    } catch (...) {
    }
    gi::t_state = nullptr;
  }
}

void gnnprof_torch_module(int enter) {
  try {
    if (gnnprof_is_running() == 0) return;
    gi::ThreadState* ts = gi::checked_state();
    const bool observed = gi::g_ops_enabled.load(std::memory_order_relaxed);
    if (enter == 0) {
      if (ts->module_depth > 0 && --ts->module_depth == 0 && observed)
        ts->classifier.on_module_exit(at::sequence_number::peek() != ts->module_seq);
      return;
    }
    // The outermost call opens the forward, in iterations whose ops are observed (else nothing
    // would close it before the step: the ops that would are not seen).
    if (ts->module_depth++ == 0 && observed) {
      ts->module_seq = at::sequence_number::peek();
      ts->classifier.on_module_enter(c10::GradMode::is_enabled());
      // The model's call after an update by hand ended an iteration: the loop calls it.
      if (ts->classifier.take_update_mark()) gnnprof_optimizer_step();
    }
  } catch (...) {
  }
}

}  // extern "C"

namespace gnnprof::torch {

Status observe_ops(const ObserveOptions& options) {
  const int flags = (options.op_stages ? GNNPROF_TORCH_OP_STAGES : 0) | (options.phases ? 0 : GNNPROF_TORCH_NO_PHASES) |
                    (options.mark_iterations ? 0 : GNNPROF_TORCH_NO_MARKS);
  // Under `gnnprof run` the preload's own observer records into the session this program's
  // events go to (a second one would count every op twice): it takes these options.
  if (gnnprof_forwarding() == 1) {
    (void)gnnprof_forward_torch_options(flags);
    return Status::ok();
  }
  char reason[256] = {0};
  if (gnnprof_torch_observe(flags, options.gather_min_bytes, reason, sizeof(reason)) != 0) {
    gnnprof_note_collector("torch-ops", 0, reason);
    return Status::error(std::string("gnnprof: torch observer: ") + reason);
  }
  gnnprof_note_collector("torch-ops", 1, "");
  return Status::ok();
}

void close_thread() noexcept { gnnprof_torch_close_thread(); }

}  // namespace gnnprof::torch
