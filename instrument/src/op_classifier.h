// op_classifier.h — sorts a thread's torch RecordFunction starts/ends into gnnprof stages.
//
// No torch here: the torch TU (torch_observer.cpp) reads the RecordFunction and fills an
// OpInfo; this class decides which stages open and close, and what transfers, materializations
// and iteration marks to record, through an OpSink. Tests drive it with recorded op sequences
// (tests/instrument/op_classifier_test.cpp). The rules are in docs/zero-code.md.
#pragma once

#include <cstdint>
#include <memory_resource>
#include <string>
#include <string_view>
#include <vector>

namespace gnnprof::instrument {

/// Mirrors the RecordScope values that matter.
enum class Scope : std::uint8_t { kFunction, kBackward, kUser, kOther };

/// What an op or scope is, from its name and scope alone (cached per name by the caller).
enum class OpKind : std::uint8_t {
  kIgnore,         // profiler::* bookkeeping ops
  kPlain,          // any other op
  kBackwardOp,     // BACKWARD_FUNCTION scope or autograd::engine::evaluate_function:*
  kGather,         // aten::index_select / aten::embedding / aten::index
  kCopy,           // aten::copy_ (the op every cross-device to()/_to_copy ends in)
  kPinMemory,      // aten::_pin_memory
  kOptimizerStep,  // user scope Optimizer.step#...
  kOptimizerZero,  // user scope Optimizer.zero_grad#...
  kProfilerStep,   // user scope ProfilerStep#N
  kUserScope,      // record_function("name")
  kComm,           // c10d / gloo / nccl collectives (allreduce, broadcast, ...)
  kReadback,       // aten::item / _local_scalar_dense / is_nonzero / equal: a value to the host
};

OpKind classify_name(std::string_view name, Scope scope) noexcept;

/// Whether the ops nested in a top-level op of this kind and name may go unobserved (the
/// observer then turns RecordFunction off on its thread until the op ends). They change
/// nothing in the picture, the op being one stage whatever it calls, except where the rules
/// need them: a cross-device copy ends in a nested aten::copy_ (aten::to -> _to_copy -> copy_),
/// pinning in a nested _pin_memory, a c10d collective starts its backend work (gloo:all_reduce,
/// the span in flight) inside it, and DDP's gradient allreduce runs in AccumulateGrad's post
/// hooks. Scopes (record_function, optimizer, ProfilerStep) are not ops: never.
bool may_mute_nested(OpKind kind, std::string_view name) noexcept;

/// gloo:* / nccl:* / mpi:* — the names ProcessGroup works give the asynchronous RecordFunction
/// that spans a collective from its launch to its completion (on another thread).
bool is_async_collective_name(std::string_view name) noexcept;

enum class Device : std::uint8_t { kCpu, kCuda, kOther };

/// The facts about one RecordFunction start that the rules use; the torch TU fills only the
/// fields its kind needs.
struct OpInfo {
  OpKind kind = OpKind::kPlain;
  std::string_view name;
  bool grad_enabled = true;
  // Scopes: whether the ops inside it are observed (iteration sampling may leave them out).
  bool ops_observed = true;
  bool any_input_requires_grad = false;  // kPlain / kBackwardOp
  // Inside a torch.nn.Module's call (the Python package's module hooks): the model's forward,
  // its ops on tensors needing no grad (dropout of the input, the first layer's aggregation) too.
  bool in_module = false;
  // kUserScope: the stage's category ("user": the one its name implies), and whether it is the
  // program's own stage (gnnprof.stage): transparent to the loop's rules, which go on inside
  // it as outside (a stage around the whole loop), and part of a forward it starts in.
  const char* category = "user";
  bool program_stage = false;
  // kGather: the source's bytes (0 unless a host tensor of 2+ dims) and the gathered rows/bytes.
  std::uint64_t gather_source_bytes = 0;
  std::uint64_t gather_rows = 0;
  std::uint64_t gather_bytes = 0;
  // kGather: the source's rows (its first dim), and whether the source outlives the iterations
  // (the same storage as a gather of an earlier iteration: a feature table, not this batch's
  // activations).
  std::uint64_t gather_source_rows = 0;
  bool gather_source_persistent = false;
  // The source was written in place on the loop's lines after its backward, or inside a
  // module (a TGN's memory updated after each step): the loop's state, read where it is
  // current, not features a prefetcher could read ahead.
  bool gather_source_state = false;
  // kCopy: devices, bytes, whether the host side is pinned, non_blocking.
  Device copy_src = Device::kCpu, copy_dst = Device::kCpu;
  std::uint64_t copy_bytes = 0;
  bool copy_host_pinned = false;
  bool copy_non_blocking = false;
  // kComm: bytes of the tensors it communicates, when known.
  std::uint64_t comm_bytes = 0;
  // kOptimizerStep: the program's line it was called from (a traced Python line, a
  // GNNPROF_LINE site), 0 when unknown. Two optimizers of one class (a GAN's two Adams) are
  // told apart by it.
  std::uint32_t call_line = 0;
  // kPlain: torch's own bookkeeping (record_function's torch.zeros(1) handle, made before its
  // scope begins): a frame for its nested ops, no phase, no op stage.
  bool bookkeeping = false;
  // Run from a traced line below the one that called backward, in the same function (or, when
  // a helper called it, under a statement of the training loop's function below the one the
  // helper ran under): the loop's work after its backward (metrics, logging after the step),
  // not the next batch's data, which a loop prepares above its forward.
  bool after_backward_line = false;
  // kPlain: an in-place write, by a tensor that needs no grad, into a parameter's storage
  // (`p.data += -lr * p.grad`, `p.data.clamp_(-c, c)`): an update of the model.
  bool writes_parameter = false;
};

/// Where decisions go: the C ABI in the injected library, a recorder in tests.
class OpSink {
 public:
  virtual ~OpSink() = default;
  virtual void begin(std::string_view stage, const char* category) = 0;
  virtual void end() = 0;
  virtual void step() = 0;  // iteration boundary
  /// An iteration boundary at a DataLoader's __next__ (a loop with no optimizer so far).
  virtual void loader_step() { step(); }
  /// An iteration boundary after a parameter update by hand (a loop with no optimizer).
  virtual void update_step() { step(); }
  virtual void materialize(std::uint64_t rows, std::uint64_t bytes) = 0;
  /// direction/memory/mode as in gnnprof_c.h (GNNPROF_H2D, GNNPROF_PINNED, GNNPROF_ASYNC...).
  virtual void transfer(std::uint64_t bytes, int direction, int memory, int mode) = 0;
  /// Bytes a collective communicates (its tensors' sizes).
  virtual void comm_bytes(std::uint64_t bytes) = 0;
  /// Call on_line() at this thread's next traced line of the loop (gnnprof_watch_next_line).
  virtual void watch_line() {}
  /// The open iteration was none (a loop's last step to its next pass): drop it, and begin
  /// one now when `begin` (else the next mark does).
  virtual void drop_iteration(bool begin) { if (begin) step(); }
};

struct ClassifierOptions {
  /// A gather of rows from a 2-D (or wider) host tensor at least this large is a
  /// materialization; 1-D gathers are index lookups (sampling), not feature reads.
  std::uint64_t gather_min_bytes = 1u << 20;
  /// Record every top-level op as a stage of category "op" inside its phase.
  bool op_stages = true;
  /// Open phase stages (forward, backward, ops (no grad), optimizer). Off for a linked program
  /// whose own GNNPROF_STAGE macros already name its phases: ops then nest in those, and
  /// gathers are not materializations (without phases a feature read and message passing look
  /// alike; such a program records its materializations itself).
  bool phases = true;
  /// This thread may mark iterations (the process's main thread, or a thread that took the loop:
  /// set_loop_thread).
  bool marks_iterations = true;
  /// A phase stage (forward, backward, ...) stays open across the gaps between its ops, so that
  /// the Python between two ops counts in the phase: right for the training loop's thread. On
  /// other threads (autograd device threads, loader threads) a phase closes after each op.
  bool phases_span_gaps = true;
};

/// One per thread. Not thread-safe; every call comes from its thread's RecordFunctions.
class OpClassifier {
 public:
  /// `memory`: where its stacks live (the torch observer passes a private heap, so that they
  /// never sit between the host's tensors in its malloc heap).
  OpClassifier(OpSink& sink, ClassifierOptions opt, std::pmr::memory_resource* memory = std::pmr::get_default_resource())
      : sink_(sink), opt_(opt), levels_(memory), frames_(memory) {
    Level loop;
    loop.loop = true;
    levels_.push_back(loop);
  }

  /// Every on_start is matched by one on_end, in LIFO order, on this thread.
  /// `comm_in_flight`: a collective launched by the process has not completed yet. When a
  /// top-level op of the loop thread ends with one in flight, or launched one (is a collective
  /// or ran one nested, as AccumulateGrad does DDP's bucket allreduce), the thread is waiting
  /// for it or running Python until its next op: a stage "comm wait" (category comm) spans
  /// that gap, closed by the next start. That is the communication time exposed on the
  /// critical path.
  /// `built_graph`: whether the op recorded anything for autograd (the thread's sequence
  /// number moved while it ran). A forward phase that a top-level op opened without doing so
  /// (out.argmax(1) after the optimizer step) closes when it ends, so that the next batch's
  /// helper ops are not taken for forward.
  void on_start(const OpInfo& op);
  void on_end(bool comm_in_flight = false, bool built_graph = true);

  /// The thread enters its outermost torch.nn.Module call (the package's module hooks): the
  /// forward (or forward (no grad)) begins there, not at its first op, so the Python between
  /// the call and that op is not the phase before it. Outside the optimizer, an op and a
  /// pinned scope; only where phases span the gaps between ops (the loop thread).
  void on_module_enter(bool grad_enabled);
  /// The outermost Module call ends; `built_graph`: whether it recorded anything for autograd.
  /// A forward it opened without doing so (a metric after the step), or a forward (no grad)
  /// (an evaluation), closes here, as one an op opened does at that op's end.
  void on_module_exit(bool built_graph);
  /// The loop's torch.autograd.backward call begins (true) or returns (false), as the package's
  /// wrapper says: its backward phase spans the call (the grad seed's ones_like included) and
  /// ends with it, so the Python after it (a scheduler's step) is not backward.
  void on_backward_call(bool begins);
  /// The loop's next traced line began (watch_line): a data phase that ops opened ("ops (no
  /// grad)", "parameter update") ends there, so the plain Python after them is not its time.
  void on_line();
  /// A scope the package marks from Python (gradient clipping, a gnnprof.stage): as a
  /// record_function of that name, begun (true) and ended (false) in pairs.
  void on_named_scope(std::string_view name, bool begins, const char* category = "user", bool in_module = false,
                      bool program_stage = false);
  /// The program's own iteration mark (gnnprof.step()): from then on its marks are the
  /// iterations, as torch.profiler's step scopes are, and an optimizer step ends none. The
  /// first is not a second mark where an optimizer step's ended the iteration just before
  /// (no forward or backward since). False where this thread marks no iterations (not the
  /// loop's thread, or inside an op): the caller marks it then.
  bool on_user_step();
  /// The traced training loop's frame left the loop statement (enter = false: an evaluation
  /// after the epoch, the end) or came back to it (true: the next epoch's first pass). When no
  /// iteration mark came between the two, the time between the last mark and the return was
  /// no iteration: it is dropped, and an iteration begins at the return.
  /// Returns, at a return: 1 dropped, 0 a mark came between, -1 neither (left, user marks).
  int on_loop(bool enter);
  /// Whether the last on_start marked an iteration at a DataLoader's __next__ (a loop with no
  /// optimizer: an inference or evaluation loop); reading it clears it. The observer then
  /// lets the Python tracer select the loop, as at an optimizer step.
  bool take_loader_mark() noexcept {
    const bool m = loader_marked_;
    loader_marked_ = false;
    return m;
  }
  /// Whether the last on_start marked an iteration after a parameter update by hand (a loop
  /// with no optimizer: `p -= lr * p.grad` after its backward); reading it clears it. The
  /// observer then observes every iteration (its marks come from ops) and lets the Python
  /// tracer select the loop, as at an optimizer step.
  bool take_update_mark() noexcept {
    const bool m = update_marked_;
    update_marked_ = false;
    return m;
  }

  /// The thread becomes the training loop's (`loop`: it marks iterations, as marks_iterations
  /// allows, and its phases span gaps, as `span_gaps`) or stops being it (an open phase that
  /// spanned gaps ends now). Training on a thread other than the main one: it takes the loop
  /// at its first optimizer step, when the main thread had marked none.
  void set_loop_thread(bool loop, bool marks_iterations, bool span_gaps);

  /// Closes whatever is open (thread or session end).
  void close_all();

  int op_depth() const noexcept { return op_depth_; }
  /// Whether the innermost open frame (the one the next on_end closes) is a top-level op that
  /// opened a forward phase (the caller then tells on_end whether it built graph).
  bool innermost_opened_forward() const noexcept { return !frames_.empty() && frames_.back().opened_forward; }
  /// Whether the loop's torch.autograd.backward is running (the package's wrapper said so), and
  /// whether the wrapper has said anything yet: without it every backward counts.
  bool in_backward_call() const noexcept { return backward_call_depth_ > 0; }
  /// Whether the innermost open scope is an optimizer step seen running a closure before (a
  /// forward and backward inside it: LBFGS, Lightning's automatic optimization).
  bool in_closure_step() const noexcept {
    return !levels_.empty() && levels_.back().optimizer && levels_.back().closure_known;
  }
  bool backward_calls_seen() const noexcept { return backward_calls_seen_; }

 private:
  // kUpdate: an in-place update of tensors needing grad under no_grad outside the optimizer's
  // scope (parameter initialisation, a hand-written SGD step, an EMA of the weights).
  enum class Phase : std::uint8_t { kNone, kForward, kForwardNoGrad, kBackward, kOther, kSync, kUpdate, kAfterBackward };
  struct Level {
    Phase phase = Phase::kNone;
    bool phase_open = false;
    Phase pinned = Phase::kNone;  // a user scope named like a phase: no nested phase stage
    Phase suspended = Phase::kNone;  // the phase a comm wait interrupted (its stage closed)
    // Inside step()/zero_grad(): the "optimizer" stage is open but while a phase of a closure
    // (its forward, backward, a sync) runs, which is a stage beside it, not inside it.
    bool optimizer = false;
    bool optimizer_open = false;
    bool closure_known = false;  // a step of an optimizer seen running a closure before
    bool data_scope = false;     // torch's DataLoader scope: a Module called there (a transform) is data
    bool loop = false;           // the thread's own level, or a program's stage on it (gnnprof.stage): the loop's rules apply
    bool backward_call = false;  // inside torch.autograd.backward (the package's wrapper says so)
    std::uint64_t step_name = 0;  // the step's name hash (0: zero_grad)
  };
  struct Frame {
    std::uint8_t ends = 0;       // stage_end() calls due at on_end
    bool pops_level = false;
    bool optimizer_scope = false;  // the level it pops is a step()'s or zero_grad()'s
    bool is_op = false;
    bool clears_gather = false;
    bool clears_copy = false;
    bool clears_comm = false;
    bool steps_after = false;
    bool opened_forward = false;  // a top-level op that opened a forward phase
    bool closes_phase = false;    // a top-level readback: its sync phase ends with it...
    Phase resume = Phase::kNone;  // ...and the phase it interrupted goes on
  };
  static Phase phase_for(const OpInfo& op, const Level& level) noexcept;
  void close_phase(Level& l);
  void suspend_phase(Level& l);
  static Phase current_phase(const Level& l) noexcept { return l.phase_open ? l.phase : l.suspended; }
  void open_phase(Level& l, Phase p);
  bool ends_at_line(const Level& l) const noexcept;  // a data phase that on_line ends
  /// open_phase for a top-level op's phase, noting in `f` whether it opened a forward.
  /// The loop's first forward (an op's or a Module call's) begins the first iteration (later
  /// ones begin at the previous optimizer step's end).
  void begin_first_iteration(Level& level, Phase p);
  /// An iteration mark: an optimizer step's or the first forward's (`automatic`), or the program's.
  void mark(bool automatic, bool by_loader = false, bool by_update = false);
  /// A pending update by hand (update_pending_) ends the iteration now, where it may; true if marked.
  bool mark_update(Level& l);
  void open_op_phase(Level& l, Phase p, Frame& f);
  static const char* phase_name(Phase p) noexcept;
  void close_wait();

  OpSink& sink_;
  ClassifierOptions opt_;
  std::pmr::vector<Level> levels_;
  std::pmr::vector<Frame> frames_;
  int op_depth_ = 0;
  bool in_gather_ = false;
  bool in_copy_ = false;
  bool in_comm_ = false;
  bool iteration_open_ = false;
  bool profiler_steps_ = false;   // the program marks its iterations (ProfilerStep#N, gnnprof.step())
  bool user_steps_ = false;       // ... by gnnprof.step(): for good
  // torch.profiler's marks last while its ProfilerStep scopes come: optimizer steps since the
  // last one, and the most seen between two (several optimizers per iteration).
  int steps_since_profiler_step_ = 0, steps_per_profiler_step_ = 0;
  bool auto_marked_ = false;      // the last mark was an optimizer step's (or the first forward's)
  bool work_since_mark_ = false;  // a forward or backward phase opened since the last mark
  // A loop without an optimizer (inference, evaluation): from the second DataLoader __next__
  // on the loop's level with no optimizer step ever, each __next__ begins an iteration.
  bool optimizer_seen_ = false;
  int loader_nexts_ = 0;
  bool loader_marked_ = false;
  bool loader_marks_ = false;  // a DataLoader's __next__ marked: they mark this loop
  // A loop updating its parameters by hand, with neither: an update after a backward marks at
  // the loop's next phase.
  bool backward_since_mark_ = false;
  bool update_pending_ = false;
  bool update_marked_ = false;
  std::uint64_t marks_ = 0;       // iteration marks so far
  std::uint64_t left_at_ = 0;     // marks_ when the loop statement was left, + 1 (0: not left)
  std::uint64_t entered_at_ = 0;  // marks_ when it was last entered
  std::uint64_t pass_marks_ = 0;  // marks in the pass that was left
  void on_loader_next();
  bool wait_open_ = false;
  bool launched_comm_ = false;  // a collective started since the last top-level op began
  // Steps (name hashes) that ran a closure's forward or backward: such a step whose ops are not
  // observed gets no "optimizer" stage (its time would be the closure's too), and its
  // grad-enabled work before the closure's forward is the closure's.
  static constexpr int kMaxClosureSteps = 4;
  std::uint64_t closure_steps_[kMaxClosureSteps] = {};
  bool closure_step(std::uint64_t name_hash) const noexcept;
  /// Inside a step whose closure is known, grad-enabled work at its top (a copy, a gather, a
  /// readback, a scope, an op) is the closure's: the optimizer's stage stops before it.
  void leave_optimizer_for_closure(Level& l, const OpInfo& op);
  bool backward_calls_seen_ = false;  // on_backward_call came: the package wraps torch.autograd.backward
  int backward_call_depth_ = 0;       // open torch.autograd.backward calls, at any level
  bool closure_work_ = false;  // the op being started is such work (on_start only)
  int module_level_ = -1;  // index of the level whose forward the outermost Module call opened
  // Several optimizers stepped one after the other (SparseAdam for embeddings, then Adam; or
  // two Adams): the steps since the loop's last work (an op or scope outside the optimizer's),
  // by step_key. Once a pass has shown a cycle of steps, only its last step ends an iteration:
  // the step of that name whose occurrence since the work (or the last such end: unobserved
  // iterations show no work) is the cycle's count of it.
  static constexpr int kMaxCycle = 8;
  int optimizer_depth_ = 0;  // step()/zero_grad() scopes open
  std::uint64_t steps_since_work_[kMaxCycle] = {};
  int n_steps_since_work_ = 0;
  bool window_blind_ = false;     // an unobserved step or an overflow since the work: learn nothing
  std::uint64_t cycle_last_ = 0;  // the name hash of the cycle's last step; 0: every step ends one
  int cycle_last_count_ = 0;      // how often that name occurs in the cycle
  int cycle_last_seen_ = 0;       // its occurrences since the work or the last end
  /// A step's key in the cycles below: its name and, when known, the line that called it.
  static std::uint64_t step_key(const OpInfo& op) noexcept;
  /// Notes a step; true when it ends an iteration.
  bool note_step(std::uint64_t name_hash, bool observed);
  // Optimizers stepped at different points of one pass, with work between (a GAN's
  // discriminator and generator, an encoder's Adam and a decoder's SGD; two of one class differ
  // by their calling line): a pass runs from one step of the first step's key to the next; when
  // it holds other keys, its last step ends the iteration (learned from two like passes in a
  // row, so that a second optimizer stepped every K passes teaches nothing; a pass of the first
  // key alone unlearns it, and a pass that outgrows kMaxCycle starts over from the step at hand).
  std::uint64_t first_step_ = 0;
  std::uint64_t pass_[kMaxCycle] = {};
  int n_pass_ = 0;
  std::uint64_t prev_pass_[kMaxCycle] = {};
  int n_prev_pass_ = 0;
  bool cycle_interleaved_ = false;  // cycle_last_ was learned from a pass, not from adjacent steps
  void learn_pass(std::uint64_t name_hash);
  void unlearn_pass();
  int occurrences_since_work(std::uint64_t name_hash) const noexcept;
  void note_work();
};

}  // namespace gnnprof::instrument
