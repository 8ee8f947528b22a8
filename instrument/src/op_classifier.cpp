// op_classifier.cpp — the rules of docs/zero-code.md, "How ops become stages".
#include "op_classifier.h"

#include <functional>

namespace gnnprof::instrument {

namespace {
bool starts_with(std::string_view s, std::string_view p) noexcept { return s.substr(0, p.size()) == p; }

// GNNPROF_H2D... from gnnprof_c.h, repeated so that this file needs no C header.
constexpr int kH2D = 0, kD2H = 1, kD2D = 2, kH2H = 3;
constexpr int kPageable = 0, kPinned = 1, kNoHost = 2;
constexpr int kSync = 0, kAsync = 1;
}  // namespace

OpKind classify_name(std::string_view name, Scope scope) noexcept {
  if (starts_with(name, "profiler::")) return OpKind::kIgnore;
  if (scope == Scope::kUser) {
    if (starts_with(name, "Optimizer.step#")) return OpKind::kOptimizerStep;
    if (starts_with(name, "Optimizer.zero_grad#")) return OpKind::kOptimizerZero;
    if (starts_with(name, "ProfilerStep#")) return OpKind::kProfilerStep;
    return OpKind::kUserScope;
  }
  if (scope == Scope::kBackward || starts_with(name, "autograd::engine::evaluate_function:")) return OpKind::kBackwardOp;
  if (name == "aten::index_select" || name == "aten::embedding" || name == "aten::index") return OpKind::kGather;
  if (name == "aten::copy_") return OpKind::kCopy;
  if (name == "aten::_pin_memory") return OpKind::kPinMemory;
  if (name == "aten::item" || name == "aten::_local_scalar_dense" || name == "aten::is_nonzero" || name == "aten::equal")
    return OpKind::kReadback;
  if (starts_with(name, "c10d::") || starts_with(name, "gloo:") || starts_with(name, "nccl:") || starts_with(name, "mpi:"))
    return OpKind::kComm;
  return OpKind::kPlain;
}

bool may_mute_nested(OpKind kind, std::string_view name) noexcept {
  switch (kind) {
    case OpKind::kBackwardOp: return name.find("AccumulateGrad") == std::string_view::npos;
    case OpKind::kPlain:
      return !(name == "aten::to" || name == "aten::_to_copy" || name == "aten::pin_memory" || name == "aten::cuda" ||
               name == "aten::cpu");
    case OpKind::kGather:
    case OpKind::kCopy:
    case OpKind::kPinMemory:
    case OpKind::kReadback: return true;
    case OpKind::kComm: return false;  // the backend's work (gloo:all_reduce ...) starts inside it
    default: return false;
  }
}

bool is_async_collective_name(std::string_view name) noexcept {
  return starts_with(name, "gloo:") || starts_with(name, "nccl:") || starts_with(name, "mpi:");
}

const char* OpClassifier::phase_name(Phase p) noexcept {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kForwardNoGrad: return "forward (no grad)";
    case Phase::kBackward: return "backward";
    case Phase::kOther: return "ops (no grad)";
    case Phase::kSync: return "sync";
    case Phase::kUpdate: return "parameter update";
    case Phase::kAfterBackward: return "ops after backward";
    case Phase::kNone: break;
  }
  return "";
}

OpClassifier::Phase OpClassifier::phase_for(const OpInfo& op, const Level& level) noexcept {
  // Inside the optimizer's step, a closure runs with grad enabled; the update runs under
  // no_grad and is the optimizer's own, whatever phase the closure left open.
  if (level.optimizer && !op.grad_enabled) return Phase::kOther;
  // Inside torch.autograd.backward (the package's wrapper says so) every op is the backward's:
  // its grad seed (ones_like of the loss) is no forward between two backward stages.
  if (level.backward_call) return Phase::kBackward;
  // An in-place op on a tensor needing grad under no_grad, outside any module's call, updates
  // the model (nn.init in its constructor, p -= lr * p.grad, an EMA of the weights): not an
  // evaluation's forward, which would hold the next batch's sampling and its feature gather.
  // So does one through an alias needing no grad (p.data), with grad enabled or not, and
  // `p.data = ...` (`p.data += d` ends in it too), which is no forward: torch 1.13 records
  // only set_data's check, _has_compatible_shallow_copy_type; later ones, set_data.
  if (!op.in_module && (op.writes_parameter || op.name == "aten::set_data" ||
                        op.name == "aten::_has_compatible_shallow_copy_type" ||
                        (!op.grad_enabled && op.any_input_requires_grad && op.name.size() > 1 && op.name.back() == '_')))
    return Phase::kUpdate;
  // A read of the loop's state (a TGN's memory, written in place after each step) is the
  // model's computation, wherever it runs (a model method called directly, not through a module).
  const bool forward = op.any_input_requires_grad || op.gather_source_state || (op.in_module && !level.data_scope);
  Phase p = !forward ? Phase::kOther : (op.grad_enabled ? Phase::kForward : Phase::kForwardNoGrad);
  // Inside a forward phase, helper ops on tensors that need no grad (torch.zeros, bincount,
  // x[idx] of the input features, ...) belong to that phase; only a new phase, a scope, a
  // materializing gather, a copy or the iteration's end ends it. A readback's sync does not
  // carry on: what follows it is not waiting; nor the work after a backward: the next batch's
  // sampling at the loop's top follows it. Nor does a backward on the loop's level: its
  // work ran inside `loss.backward()` (its engine frames are ops), so a top-level op after it
  // is the loop's (gradient accumulation's next micro-batch, the scheduler).
  const Phase cur = current_phase(level);
  const bool after_backward = cur == Phase::kBackward && level.loop && !level.backward_call;
  if (p == Phase::kOther && cur != Phase::kNone && cur != Phase::kOther && cur != Phase::kSync && cur != Phase::kUpdate &&
      cur != Phase::kAfterBackward && !after_backward)
    p = cur;
  // The loop's work on a line below its backward call (pred == y, a confusion matrix after the
  // step, a parameter's norm for the log, with grad or not): its own, not data a prefetcher
  // could take, nor a forward, unless a forward is open there (a second model's loss after its
  // modules ran: a GAN's generator step below the discriminator's backward).
  const bool forward_open = cur == Phase::kForward || cur == Phase::kForwardNoGrad;
  if ((p == Phase::kOther || ((p == Phase::kForward || p == Phase::kForwardNoGrad) && !forward_open)) &&
      op.after_backward_line && level.loop && !op.in_module)
    p = Phase::kAfterBackward;
  return p;
}

void OpClassifier::close_phase(Level& l) {
  if (l.phase_open) sink_.end();
  l.phase_open = false;
  l.phase = Phase::kNone;
  l.suspended = Phase::kNone;
}

void OpClassifier::suspend_phase(Level& l) {
  const Phase p = l.phase_open ? l.phase : l.suspended;
  close_phase(l);
  l.suspended = p;
}

void OpClassifier::open_phase(Level& l, Phase p) {
  if (!opt_.phases) return;
  if (l.pinned != Phase::kNone) return;  // inside record_function("forward") etc.
  if (l.optimizer) {  // the optimizer's own op, or a closure's phase beside its stage
    if (p == Phase::kOther) {
      close_phase(l);
      if (!closure_work_ && !l.optimizer_open) {
        sink_.begin("optimizer", "compute");
        l.optimizer_open = true;
      }
      return;
    }
    if ((p == Phase::kForward || p == Phase::kBackward) && !closure_step(l.step_name) && l.step_name != 0) {
      for (std::uint64_t& h : closure_steps_)
        if (h == 0) {
          h = l.step_name;
          break;
        }
    }
    if (l.optimizer_open && !(l.phase_open && l.phase == p)) {
      sink_.end();
      l.optimizer_open = false;
    }
  }
  // Inside a user scope ("sample", "train_step"), ops needing no grad are simply the scope's;
  // only forward/backward get a stage of their own there.
  if (p == Phase::kOther && !l.loop) {
    close_phase(l);
    return;
  }
  if (p == Phase::kForward || p == Phase::kBackward) {
    note_work();
    work_since_mark_ = true;
  }
  // A loop that updates its parameters by hand (no optimizer, no DataLoader's marks): an update
  // after a backward ends the iteration where the next forward (or backward) begins. Not at the
  // next op: the update's own ops between (lr * p.grad, p.grad.zero_()) need no grad either.
  if (l.loop && p == Phase::kUpdate && backward_since_mark_ && iteration_open_) update_pending_ = true;
  if (l.loop && (p == Phase::kForward || p == Phase::kBackward) && mark_update(l)) update_marked_ = true;
  if (p == Phase::kBackward) backward_since_mark_ = true;  // after the mark: the next iteration's
  if (l.phase_open && l.phase == p) return;
  close_phase(l);
  const char* cat = p == Phase::kBackward || p == Phase::kForward || p == Phase::kForwardNoGrad || p == Phase::kUpdate ||
                            p == Phase::kAfterBackward
                        ? "compute"
                    : p == Phase::kSync                                                        ? "sync"
                                                                                               : "data";
  sink_.begin(phase_name(p), cat);
  l.phase = p;
  l.phase_open = true;
  if (ends_at_line(l)) sink_.watch_line();
}

bool OpClassifier::ends_at_line(const Level& l) const noexcept {
  return l.loop && l.phase_open && (l.phase == Phase::kOther || l.phase == Phase::kUpdate || l.phase == Phase::kAfterBackward) &&
         opt_.phases_span_gaps;
}

void OpClassifier::on_line() {
  Level& l = levels_.back();
  if (!ends_at_line(l)) return;
  if (op_depth_ != 0) {  // Python run inside an op (a custom Function's forward): the next line
    sink_.watch_line();
    return;
  }
  close_phase(l);
}

void OpClassifier::open_op_phase(Level& l, Phase p, Frame& f) {
  f.opened_forward = p == Phase::kForward && current_phase(l) != p && l.pinned == Phase::kNone;
  open_phase(l, p);
}

bool OpClassifier::closure_step(std::uint64_t name_hash) const noexcept {
  for (std::uint64_t h : closure_steps_)
    if (h == name_hash) return name_hash != 0;
  return false;
}

void OpClassifier::leave_optimizer_for_closure(Level& l, const OpInfo& op) {
  closure_work_ = l.optimizer && l.closure_known && op.grad_enabled && op_depth_ == 0;
  if (!closure_work_ || !l.optimizer_open) return;
  sink_.end();
  l.optimizer_open = false;
}

void OpClassifier::unlearn_pass() {
  if (!cycle_interleaved_) return;
  cycle_last_ = 0;
  cycle_interleaved_ = false;
  cycle_last_seen_ = 0;
}

void OpClassifier::learn_pass(std::uint64_t name_hash) {
  if (first_step_ == 0) first_step_ = name_hash;
  if (name_hash == first_step_ && n_pass_ > 0) {
    bool others = false, same = n_pass_ == n_prev_pass_;
    for (int i = 0; i < n_pass_; ++i) {
      others = others || pass_[i] != first_step_;
      same = same && pass_[i] == prev_pass_[i];
    }
    std::copy(pass_, pass_ + n_pass_, prev_pass_);
    n_prev_pass_ = n_pass_;
    if (others && same) {
      cycle_last_ = pass_[n_pass_ - 1];
      cycle_last_count_ = 0;
      for (int i = 0; i < n_pass_; ++i) cycle_last_count_ += pass_[i] == cycle_last_ ? 1 : 0;
      cycle_interleaved_ = true;
      cycle_last_seen_ = 0;
    } else {
      unlearn_pass();  // a pass of the first step alone, or unlike the last: every step ends one again
    }
    n_pass_ = 0;
  }
  if (n_pass_ == kMaxCycle) {  // the first step's name no longer comes (its optimizer stopped): start over
    unlearn_pass();
    first_step_ = name_hash;
    n_pass_ = n_prev_pass_ = 0;
  }
  pass_[n_pass_++] = name_hash;
}

std::uint64_t OpClassifier::step_key(const OpInfo& op) noexcept {
  std::uint64_t h = std::hash<std::string_view>{}(op.name);
  if (op.call_line != 0) h ^= (op.call_line + 0x9e3779b97f4a7c15ULL) * 0xff51afd7ed558ccdULL;
  return h | 1;  // never 0
}

bool OpClassifier::note_step(std::uint64_t name_hash, bool observed) {
  learn_pass(name_hash);
  // A step whose iteration's ops are not observed: the work before it was not seen either, so
  // the window says nothing about the cycle.
  window_blind_ = window_blind_ || !observed;
  if (n_steps_since_work_ < kMaxCycle) steps_since_work_[n_steps_since_work_++] = name_hash;
  else window_blind_ = true;
  if (cycle_last_ == 0) return true;
  if (name_hash != cycle_last_ || ++cycle_last_seen_ < cycle_last_count_) return false;
  cycle_last_seen_ = 0;
  return true;
}

int OpClassifier::occurrences_since_work(std::uint64_t name_hash) const noexcept {
  int n = 0;
  for (int i = 0; i < n_steps_since_work_; ++i) n += steps_since_work_[i] == name_hash ? 1 : 0;
  return n;
}

void OpClassifier::note_work() {
  const int n = n_steps_since_work_;
  if (cycle_interleaved_) {  // learned from passes (learn_pass), which the work between steps is part of
    n_steps_since_work_ = 0;
    window_blind_ = false;
    return;
  }
  if (n >= 2 && !window_blind_) {
    // Learned, or learned again (the optimizers changed).
    cycle_last_ = steps_since_work_[n - 1];
    cycle_last_count_ = occurrences_since_work(cycle_last_);
  } else if (n >= 1 && !window_blind_ && cycle_last_ != 0 && occurrences_since_work(cycle_last_) != cycle_last_count_) {
    cycle_last_ = 0;  // a pass with one step, not the cycle's last: every step ends one again
  }
  n_steps_since_work_ = 0;
  window_blind_ = false;
  cycle_last_seen_ = 0;
}

void OpClassifier::begin_first_iteration(Level& level, Phase p) {
  if (p != Phase::kForward || !opt_.marks_iterations || iteration_open_ || profiler_steps_) return;
  close_phase(level);
  mark(true);
}

void OpClassifier::on_loader_next() {
  if (!opt_.marks_iterations || profiler_steps_ || optimizer_seen_ || ++loader_nexts_ < 2) return;
  close_phase(levels_.back());
  mark(true, true);
  loader_marked_ = true;
  loader_marks_ = true;
  update_pending_ = false;
}

void OpClassifier::mark(bool automatic, bool by_loader, bool by_update) {
  ++marks_;
  if (by_loader) sink_.loader_step();
  else if (by_update) sink_.update_step();
  else sink_.step();
  iteration_open_ = true;
  auto_marked_ = automatic;
  work_since_mark_ = false;
  backward_since_mark_ = false;
}

bool OpClassifier::mark_update(Level& l) {
  if (!update_pending_) return false;
  update_pending_ = false;
  if (!opt_.marks_iterations || optimizer_seen_ || profiler_steps_ || loader_marks_) return false;
  close_phase(l);
  mark(true, false, true);
  return true;
}

int OpClassifier::on_loop(bool enter) {
  // Leaving the loop statement after an update by hand: that pass ends here, not at the next
  // epoch's first forward (the time between is no iteration).
  if (!enter && op_depth_ == 0) mark_update(levels_.back());
  if (!enter) {
    left_at_ = marks_ + 1;
    pass_marks_ = marks_ - entered_at_;
    return -1;
  }
  entered_at_ = marks_;
  if (left_at_ == 0 || !opt_.marks_iterations || profiler_steps_) return -1;
  const bool between = left_at_ == marks_ + 1;  // no mark since the loop was left
  left_at_ = 0;
  // A mark between leaving and coming back, or a pass of fewer than 3 marks (a loop over the
  // optimizers, or over a batch's parts, around the step): a loop inside the training loop's pass.
  if (!between || pass_marks_ < 3) return 0;
  if (!iteration_open_ || op_depth_ != 0) return -1;
  close_wait();
  close_phase(levels_.back());
  // A DataLoader-marked loop begins its iteration at the __next__ that comes next.
  ++marks_;
  entered_at_ = marks_;
  const bool by_loader = !optimizer_seen_ && loader_nexts_ >= 2;  // the next __next__ marks
  sink_.drop_iteration(!by_loader);
  iteration_open_ = !by_loader;
  auto_marked_ = true;
  work_since_mark_ = false;
  return 1;
}

bool OpClassifier::on_user_step() {
  if (!opt_.marks_iterations || op_depth_ != 0) return false;
  close_wait();
  const bool first = !profiler_steps_;
  profiler_steps_ = true;
  user_steps_ = true;
  if (first && auto_marked_ && !work_since_mark_) {
    auto_marked_ = false;
    return true;
  }
  close_phase(levels_.back());
  mark(false);
  return true;
}

void OpClassifier::on_module_enter(bool grad_enabled) {
  module_level_ = -1;
  Level& level = levels_.back();
  if (!opt_.phases || !opt_.phases_span_gaps || op_depth_ != 0 || level.optimizer || level.pinned != Phase::kNone ||
      level.data_scope)
    return;
  close_wait();
  OpInfo op;
  op.in_module = true;
  op.grad_enabled = grad_enabled;
  const Phase p = phase_for(op, level);
  begin_first_iteration(level, p);
  const bool opens = (p == Phase::kForward || p == Phase::kForwardNoGrad) && current_phase(level) != p;
  open_phase(level, p);
  if (opens) module_level_ = static_cast<int>(levels_.size()) - 1;
}

void OpClassifier::on_module_exit(bool built_graph) {
  const int at = module_level_;
  module_level_ = -1;
  if (at < 0 || at != static_cast<int>(levels_.size()) - 1 || op_depth_ != 0) return;
  Level& l = levels_.back();
  // A training forward that built graph goes on into the loss; an evaluation's (no grad) and
  // a call that built nothing end with the call.
  if (l.phase_open && ((l.phase == Phase::kForward && !built_graph) || l.phase == Phase::kForwardNoGrad)) close_phase(l);
}

void OpClassifier::on_named_scope(std::string_view name, bool begins, const char* category, bool in_module,
                                  bool program_stage) {
  if (!begins) {
    on_end();
    return;
  }
  OpInfo op;
  op.kind = OpKind::kUserScope;
  op.name = name;
  op.category = category;
  op.in_module = in_module;
  op.program_stage = program_stage;
  on_start(op);
}

void OpClassifier::on_backward_call(bool begins) {
  backward_calls_seen_ = true;
  backward_call_depth_ = std::max(0, backward_call_depth_ + (begins ? 1 : -1));
  Level& level = levels_.back();
  if (!opt_.phases || !opt_.phases_span_gaps || op_depth_ != 0 || !level.loop) return;
  level.backward_call = begins;
  if (begins) {
    close_wait();
    open_phase(level, Phase::kBackward);
  } else if (level.phase_open && level.phase == Phase::kBackward) {
    close_phase(level);
  }
}

void OpClassifier::close_wait() {
  if (wait_open_) sink_.end();
  wait_open_ = false;
}

void OpClassifier::on_start(const OpInfo& op) {
  close_wait();
  Frame f;
  Level& level = levels_.back();
  // The loop's work between steps: a scope of its own (record_function, the DataLoader's), or a
  // forward or backward phase (open_phase; a closure's too). Not any op: torch 1.13's
  // record_function runs torch.zeros(1) before each step's scope.
  if (op.kind == OpKind::kUserScope && optimizer_depth_ == 0) note_work();
  closure_work_ = false;
  if (op.kind != OpKind::kIgnore && op.kind != OpKind::kOptimizerZero) leave_optimizer_for_closure(level, op);
  switch (op.kind) {
    case OpKind::kIgnore:
      break;
    case OpKind::kProfilerStep:
      // torch.profiler's step scopes are the loop's own iteration marks when present.
      profiler_steps_ = true;
      steps_per_profiler_step_ = std::max(steps_per_profiler_step_, steps_since_profiler_step_);
      steps_since_profiler_step_ = 0;
      if (opt_.marks_iterations) {
        close_phase(level);
        mark(false);
      }
      break;
    case OpKind::kOptimizerStep:
    case OpKind::kOptimizerZero:
    case OpKind::kUserScope: {
      if (op.kind == OpKind::kOptimizerStep) optimizer_seen_ = true;
      Level inner;
      // The program's stage inside a model's call (an attention block's): the forward goes on
      // around it, its ops are that forward's.
      const Phase cur = current_phase(level);
      const bool in_forward = op.program_stage && op.in_module && op_depth_ == 0 &&
                              (cur == Phase::kForward || cur == Phase::kForwardNoGrad) && level.phase_open;
      if (op_depth_ == 0) {
        if (!in_forward) close_phase(level);
      } else {
        inner.pinned = Phase::kOther;  // a scope inside an op: its ops are that op's
      }
      if (op.kind == OpKind::kUserScope) {
        inner.data_scope = op.name.rfind("enumerate(DataLoader)", 0) == 0;
        if (inner.data_scope && op_depth_ == 0 && level.loop) on_loader_next();
        sink_.begin(op.name, op.category);
        if (op.name == "forward") inner.pinned = Phase::kForward;
        else if (op.name == "backward") inner.pinned = Phase::kBackward;
        if (in_forward) inner.pinned = cur;
        // The program's stage around the loop (or part of it): the loop's rules go on inside.
        inner.loop = op.program_stage && level.loop && op_depth_ == 0;
        inner.backward_call = inner.loop && level.backward_call;
        f.ends = 1;
      } else if (level.optimizer && level.optimizer_open) {
        inner.pinned = Phase::kOther;  // zero_grad() in a closure, before its forward: the same stage
      } else if (opt_.phases) {
        // Ops inside step()/zero_grad() are the optimizer's, but for a closure's forward and
        // backward (LBFGS; skorch's and Lightning's automatic optimization call step(closure)).
        inner.optimizer = true;
        if (op.kind == OpKind::kOptimizerStep) inner.step_name = std::hash<std::string_view>{}(op.name) | 1;  // never 0
        inner.closure_known = closure_step(inner.step_name);
        inner.optimizer_open = op.ops_observed || !inner.closure_known;
        if (inner.optimizer_open) sink_.begin("optimizer", "compute");
      } else {
        inner.pinned = Phase::kOther;
      }
      levels_.push_back(inner);
      f.pops_level = true;
      // Only the outermost step counts: a wrapper's step around its inner optimizer's
      // (ZeroRedundancyOptimizer, Lookahead) ends the iteration once, at its end.
      // A torch.profiler that stopped (its schedule's last step, its `with` left): its marks
      // stopped too, and the optimizer's mark the iterations again.
      if (op.kind == OpKind::kOptimizerStep && optimizer_depth_ == 0 && profiler_steps_ && !user_steps_ &&
          ++steps_since_profiler_step_ > std::max(2, 2 * steps_per_profiler_step_)) {
        profiler_steps_ = false;
        steps_per_profiler_step_ = 0;
      }
      if (op.kind == OpKind::kOptimizerStep && opt_.marks_iterations && !profiler_steps_ && optimizer_depth_ == 0) {
        f.steps_after = note_step(step_key(op), op.ops_observed);
      }
      if (op.kind != OpKind::kUserScope) {
        f.optimizer_scope = true;
        ++optimizer_depth_;
      }
      break;
    }
    case OpKind::kComm:
      f.is_op = true;
      if (!in_comm_) {
        if (op_depth_ == 0) close_phase(level);
        sink_.begin("comm", "comm");
        if (op.comm_bytes > 0) sink_.comm_bytes(op.comm_bytes);
        f.ends = 1;
        in_comm_ = f.clears_comm = true;
      }
      launched_comm_ = true;
      break;
    case OpKind::kGather: {
      f.is_op = true;
      // Message passing inside forward/backward gathers activations: compute, not a read of
      // stored features.
      const Phase here = level.pinned != Phase::kNone ? level.pinned : current_phase(level);
      // Rows of a tensor that needs grad (a learnable embedding's nn.Parameter) are the model's:
      // forward, not a read a prefetcher could move ahead of the step that updates them.
      // But fewer rows than a table has that outlives the iterations and needs no grad is a
      // feature read wherever it runs (a lazy srcdata['feat'] inside the model's forward): message
      // passing gathers this batch's activations, or (full graph) a row per edge, more than nodes.
      const bool feature_read = op.gather_source_persistent && !op.gather_source_state && !op.any_input_requires_grad &&
                                here != Phase::kBackward && op.gather_rows < op.gather_source_rows;
      // A gather on the loop's line below its backward call (logits[mask] for a metric) is that
      // line's work, as its other ops are: not a read a prefetcher could take.
      const bool in_compute = !feature_read && (here == Phase::kForward || here == Phase::kForwardNoGrad ||
                                                here == Phase::kBackward || op.in_module || op.any_input_requires_grad ||
                                                op.after_backward_line || op.gather_source_state);
      // Without phases (a linked program whose macros name its stages) the observer cannot
      // tell a feature read from message passing: gathers stay op stages.
      if (opt_.phases && !in_gather_ && !in_compute && op.gather_source_bytes >= opt_.gather_min_bytes) {
        if (op_depth_ == 0) close_phase(level);
        sink_.begin("materialize", "data");
        sink_.materialize(op.gather_rows, op.gather_bytes);
        f.ends = 1;
        in_gather_ = f.clears_gather = true;
      } else if (op_depth_ == 0) {
        const Phase p = phase_for(op, level);
        begin_first_iteration(level, p);  // a model that starts by reading its state
        open_op_phase(level, p, f);
        // A read of the loop's state records nothing for autograd, yet its forward goes on.
        if (op.gather_source_state) f.opened_forward = false;
      }
      break;
    }
    case OpKind::kCopy:
    case OpKind::kPinMemory:
      f.is_op = true;
      if (op.kind == OpKind::kPinMemory && !in_copy_) {
        if (op_depth_ == 0) close_phase(level);
        sink_.begin("pin_memory", "data");
        f.ends = 1;
        in_copy_ = f.clears_copy = true;
      } else if (op.kind == OpKind::kCopy && !in_copy_ && op.copy_src != op.copy_dst) {
        int dir = kD2D, mem = kNoHost;
        if (op.copy_src == Device::kCpu) {
          dir = kH2D;
          mem = op.copy_host_pinned ? kPinned : kPageable;
        } else if (op.copy_dst == Device::kCpu) {
          dir = kD2H;
          mem = op.copy_host_pinned ? kPinned : kPageable;
        }
        if (op_depth_ == 0) close_phase(level);
        sink_.begin(dir == kH2D ? "h2d" : dir == kD2H ? "d2h" : "d2d", dir == kD2H ? "sync" : "data");
        // A non_blocking copy from pageable memory is synchronous anyway (CUDA stages it).
        const bool async = op.copy_non_blocking && (mem == kPinned || mem == kNoHost);
        sink_.transfer(op.copy_bytes, dir, mem, async ? kAsync : kSync);
        f.ends = 1;
        in_copy_ = f.clears_copy = true;
      } else if (op_depth_ == 0) {
        open_op_phase(level, phase_for(op, level), f);
      }
      break;
    case OpKind::kBackwardOp:
      f.is_op = true;
      if (op_depth_ == 0) open_phase(level, Phase::kBackward);
      break;
    case OpKind::kReadback:
      // loss.item(), bool(t): the host waits for the value, and on a device for the work queued
      // before it. Its own phase "sync" (category sync: the host-sync rule, the line table's
      // wait column), also inside a user scope. Not in the optimizer's update (Adam reads its
      // step count with item() per parameter, under no_grad): the optimizer's own; but right
      // after a closure's phase (LBFGS's float(closure()), which waits for its backward) a sync.
      f.is_op = true;
      if (op_depth_ == 0 && level.optimizer && !op.grad_enabled && current_phase(level) != Phase::kForward &&
          current_phase(level) != Phase::kBackward) {
        open_op_phase(level, Phase::kOther, f);
      } else if (op_depth_ == 0) {
        // The wait is the op's, not the Python's after it: the sync ends with the op, and the
        // phase it interrupted (forward: PyG's int(edge_index.max()) + 1) goes on after it.
        f.resume = current_phase(level);
        open_phase(level, Phase::kSync);
        f.closes_phase = true;
      }
      break;
    case OpKind::kPlain:
      f.is_op = true;
      if (op_depth_ == 0 && !op.bookkeeping) {
        const Phase p = phase_for(op, level);
        begin_first_iteration(level, p);
        open_op_phase(level, p, f);
      }
      break;
  }
  if (f.is_op) {
    if (op_depth_ == 0 && opt_.op_stages && op.kind != OpKind::kIgnore && !op.bookkeeping) {
      sink_.begin(op.name, "op");
      ++f.ends;
    }
    ++op_depth_;
  }
  frames_.push_back(f);
}

void OpClassifier::on_end(bool comm_in_flight, bool built_graph) {
  if (frames_.empty()) return;  // unbalanced: a start before the observer was installed
  Frame f = frames_.back();
  frames_.pop_back();
  if (f.is_op && op_depth_ > 0) --op_depth_;
  if (f.optimizer_scope && optimizer_depth_ > 0) --optimizer_depth_;
  // A comm wait opened after the scope's last op is innermost: it ends first, and goes on
  // outside the scope (the collective is still in flight).
  const bool rewait = wait_open_ && (f.pops_level || f.ends > 0);
  if (rewait) close_wait();
  if (f.pops_level && levels_.size() > 1) {
    close_phase(levels_.back());
    if (levels_.back().optimizer_open) sink_.end();
    levels_.pop_back();
  }
  for (int i = 0; i < f.ends; ++i) sink_.end();
  // Before the first iteration an update is the parameters' initialisation: it spans no gap
  // (a thread that then only waits for a training thread would hold it open to its end).
  if (f.is_op && op_depth_ == 0 &&
      (!opt_.phases_span_gaps || (marks_ == 0 && levels_.back().phase_open && levels_.back().phase == Phase::kUpdate)))
    close_phase(levels_.back());
  if (f.closes_phase && op_depth_ == 0) {
    close_phase(levels_.back());
    levels_.back().suspended = f.resume;  // reopened by the interrupted phase's next op
  }
  if (f.opened_forward && !built_graph && op_depth_ == 0) close_phase(levels_.back());
  if (f.clears_gather) in_gather_ = false;
  if (f.clears_copy) in_copy_ = false;
  if (f.clears_comm) in_comm_ = false;
  if (f.steps_after) mark(true);
  if (rewait && opt_.phases_span_gaps && !wait_open_) {
    sink_.begin("comm wait", "comm");
    wait_open_ = true;
  }
  // After a top-level op that launched a collective, itself or nested (DDP's bucket allreduce
  // runs in AccumulateGrad's post hook), the wait is usually the program's: dist.all_reduce
  // waits on its work after the c10d op returns, DDP waits for its buckets after the last
  // backward op, and the backend may report the work as started only later, on its own thread
  // (Gloo does), so comm_in_flight alone would miss that gap.
  if (f.is_op && op_depth_ == 0) {
    const bool launched = launched_comm_;
    launched_comm_ = false;
    if ((comm_in_flight || launched) && opt_.phases_span_gaps && !wait_open_) {
      // Not inside the phase: "backward" is then the backward ops' time, and DDP's wait for
      // its last buckets is comm wait beside it. The next op of that phase reopens it (until
      // then the phase still decides what a gather or a no-grad helper op is).
      suspend_phase(levels_.back());
      sink_.begin("comm wait", "comm");
      wait_open_ = true;
    }
  }
}

void OpClassifier::set_loop_thread(bool loop, bool marks_iterations, bool span_gaps) {
  if (!loop && opt_.phases_span_gaps && op_depth_ == 0) {
    close_wait();
    close_phase(levels_.back());
  }
  opt_.marks_iterations = loop && marks_iterations;
  opt_.phases_span_gaps = loop && span_gaps;
}

void OpClassifier::close_all() {
  close_wait();
  while (!frames_.empty()) {
    on_end();
    close_wait();  // one that closing a collective's frame opened: innermost, so closed at once
  }
  close_phase(levels_.back());
}

}  // namespace gnnprof::instrument
