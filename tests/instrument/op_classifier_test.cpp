// The op classification rules (docs/zero-code.md) on recorded op sequences: what a Python
// training step, a record_function scope, an optimizer, a copy and a gather look like to the
// RecordFunction observer, and the stages, marks, transfers and materializations that result.
#include "op_classifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gi = gnnprof::instrument;

namespace {

class Recorder final : public gi::OpSink {
 public:
  std::vector<std::string> log;
  int depth = 0;
  void begin(std::string_view stage, const char* category) override {
    log.push_back("+" + std::string(stage) + "[" + category + "]");
    ++depth;
  }
  void end() override {
    log.push_back("-");
    --depth;
  }
  void step() override { log.push_back("STEP"); }
  void materialize(std::uint64_t rows, std::uint64_t bytes) override {
    log.push_back("MAT " + std::to_string(rows) + " " + std::to_string(bytes));
  }
  void transfer(std::uint64_t bytes, int dir, int mem, int mode) override {
    log.push_back("XFER " + std::to_string(bytes) + " d" + std::to_string(dir) + " m" + std::to_string(mem) + " a" +
                  std::to_string(mode));
  }
  void comm_bytes(std::uint64_t bytes) override { log.push_back("COMM " + std::to_string(bytes)); }
  bool watching = false;  // watch_line() armed, as gnnprof_watch_next_line would be
  void watch_line() override { watching = true; }
  void drop_iteration(bool begin) override { log.push_back(begin ? "DROP+STEP" : "DROP"); }
};

// The loop's next traced line begins: what gnnprof_set_line does with an armed watch.
void next_line(Recorder& r, gi::OpClassifier& c) {
  if (!r.watching) return;
  r.watching = false;
  c.on_line();
}

gi::OpInfo op(const char* name, bool requires_grad = false, gi::Scope scope = gi::Scope::kFunction) {
  gi::OpInfo o;
  o.name = name;
  o.kind = gi::classify_name(name, scope);
  o.any_input_requires_grad = requires_grad;
  return o;
}

// A leaf op: start and end at once.
void leaf(gi::OpClassifier& c, const gi::OpInfo& o) {
  c.on_start(o);
  c.on_end();
}

// The same op run under torch.no_grad().
gi::OpInfo no_grad(gi::OpInfo o) {
  o.grad_enabled = false;
  return o;
}

// The same op run inside a torch.nn.Module's call (the package's module hooks said so).
gi::OpInfo in_model(gi::OpInfo o) {
  o.in_module = true;
  return o;
}

// A gather of 10 rows (2560 bytes) from a 1 MiB host tensor: a feature read outside compute.
gi::OpInfo feature_gather(const char* name = "aten::index") {
  gi::OpInfo g = op(name);
  g.gather_source_bytes = 1 << 20;
  g.gather_rows = 10;
  g.gather_bytes = 2560;
  return g;
}

gi::ClassifierOptions no_ops() {
  gi::ClassifierOptions o;
  o.op_stages = false;
  return o;
}

// A thread other than the loop's: it marks no iterations and its phases end with their ops.
gi::ClassifierOptions other_thread() {
  gi::ClassifierOptions o = no_ops();
  o.marks_iterations = false;
  o.phases_span_gaps = false;
  return o;
}

}  // namespace

TEST(OpClassifier, NamesAndScopes) {
  EXPECT_EQ(gi::classify_name("profiler::_record_function_enter_new", gi::Scope::kFunction), gi::OpKind::kIgnore);
  EXPECT_EQ(gi::classify_name("Optimizer.step#Adam.step", gi::Scope::kUser), gi::OpKind::kOptimizerStep);
  EXPECT_EQ(gi::classify_name("Optimizer.zero_grad#Adam.zero_grad", gi::Scope::kUser), gi::OpKind::kOptimizerZero);
  EXPECT_EQ(gi::classify_name("ProfilerStep#3", gi::Scope::kUser), gi::OpKind::kProfilerStep);
  EXPECT_EQ(gi::classify_name("sample", gi::Scope::kUser), gi::OpKind::kUserScope);
  EXPECT_EQ(gi::classify_name("AddmmBackward0", gi::Scope::kBackward), gi::OpKind::kBackwardOp);
  EXPECT_EQ(gi::classify_name("autograd::engine::evaluate_function: AddmmBackward0", gi::Scope::kFunction),
            gi::OpKind::kBackwardOp);
  EXPECT_EQ(gi::classify_name("aten::index_select", gi::Scope::kFunction), gi::OpKind::kGather);
  EXPECT_EQ(gi::classify_name("aten::embedding", gi::Scope::kFunction), gi::OpKind::kGather);
  EXPECT_EQ(gi::classify_name("aten::index", gi::Scope::kFunction), gi::OpKind::kGather);
  EXPECT_EQ(gi::classify_name("aten::copy_", gi::Scope::kFunction), gi::OpKind::kCopy);
  EXPECT_EQ(gi::classify_name("aten::_pin_memory", gi::Scope::kFunction), gi::OpKind::kPinMemory);
  EXPECT_EQ(gi::classify_name("gloo:all_reduce", gi::Scope::kFunction), gi::OpKind::kComm);
  EXPECT_EQ(gi::classify_name("nccl:all_reduce", gi::Scope::kFunction), gi::OpKind::kComm);
  EXPECT_EQ(gi::classify_name("aten::addmm", gi::Scope::kFunction), gi::OpKind::kPlain);
  // A user scope is a user scope whatever it is called.
  EXPECT_EQ(gi::classify_name("aten::index", gi::Scope::kUser), gi::OpKind::kUserScope);
}

// The observer stops observing inside a top-level op unless the rules need its nested ops.
TEST(OpClassifier, NestedOpsAreObservedOnlyWhereTheRulesNeedThem) {
  auto mute = [](const char* name, gi::Scope scope = gi::Scope::kFunction) {
    return gi::may_mute_nested(gi::classify_name(name, scope), name);
  };
  // One stage whatever they call.
  EXPECT_TRUE(mute("aten::linear"));
  EXPECT_TRUE(mute("aten::cross_entropy_loss"));
  EXPECT_TRUE(mute("aten::index"));
  EXPECT_TRUE(mute("aten::copy_"));
  EXPECT_TRUE(mute("autograd::engine::evaluate_function: AddmmBackward0"));
  // Cross-device copies and pinning end in nested ops; DDP's allreduce runs in AccumulateGrad's hooks.
  EXPECT_FALSE(mute("aten::to"));
  EXPECT_FALSE(mute("aten::_to_copy"));
  EXPECT_FALSE(mute("aten::pin_memory"));
  EXPECT_FALSE(mute("aten::cuda"));
  EXPECT_FALSE(mute("c10d::allreduce_"));
  EXPECT_FALSE(mute("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad"));
  // Scopes are not ops: their contents are top-level.
  EXPECT_FALSE(mute("sample", gi::Scope::kUser));
  EXPECT_FALSE(mute("Optimizer.step#SGD.step", gi::Scope::kUser));
  EXPECT_FALSE(mute("ProfilerStep#1", gi::Scope::kUser));
  EXPECT_FALSE(mute("profiler::_record_function_enter_new"));
}

// One training step as torch 1.13 records it for
//   opt.zero_grad(); loss = F.cross_entropy(model(x), y); loss.backward(); opt.step()
TEST(OpClassifier, TrainingStepBecomesForwardBackwardOptimizerAndOneIteration) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  c.on_start(op("Optimizer.zero_grad#Adam.zero_grad", false, gi::Scope::kUser));
  leaf(c, op("aten::zero_"));
  c.on_end();
  c.on_start(op("aten::linear", true));  // weight requires grad
  leaf(c, op("aten::addmm", true));      // nested: no new stage
  c.on_end();
  leaf(c, op("aten::zeros"));            // a helper inside forward stays forward
  leaf(c, op("aten::cross_entropy_loss", true));
  leaf(c, op("aten::ones_like", true));
  leaf(c, op("autograd::engine::evaluate_function: NllLossBackward0"));
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
  leaf(c, op("aten::add_"));
  c.on_end();
  const std::vector<std::string> want = {
      "+optimizer[compute]", "-",                    // zero_grad
      "STEP",                                        // first forward op begins iteration 1
      "+forward[compute]", "-",                      // linear .. ones_like
      "+backward[compute]", "-",                     // closed by the optimizer scope
      "+optimizer[compute]", "-", "STEP",            // step() ends iteration 1
  };
  EXPECT_EQ(r.log, want);
  EXPECT_EQ(r.depth, 0);
}

TEST(OpClassifier, AClosuresForwardAndBackwardInsideTheStepAreForwardAndBackward) {
  // optimizer.step(closure), as LBFGS, skorch and Lightning's automatic optimization call it:
  // the closure's forward and backward run inside the step scope with grad enabled; the update
  // after it runs under no_grad and is the optimizer's own, whatever phase the closure left open.
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  for (int step = 0; step < 2; ++step) {
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_start(op("Optimizer.zero_grad#SGD.zero_grad", false, gi::Scope::kUser));
    leaf(c, no_grad(op("aten::zero_")));
    c.on_end();
    leaf(c, op("aten::linear", true));
    leaf(c, op("aten::zeros"));  // a helper inside the closure's forward stays forward
    leaf(c, op("aten::cross_entropy_loss", true));
    leaf(c, op("aten::item"));  // the closure's float(loss): a sync, after which forward goes on
    leaf(c, op("aten::relu", true));
    leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
    leaf(c, no_grad(op("aten::mul_")));        // a momentum buffer: no input requires grad
    leaf(c, no_grad(op("aten::add_", true)));  // the parameter's update
    c.on_end();
  }
  // The closure's phases are stages beside the optimizer's, not inside it: the optimizer's
  // stage is its own time.
  const std::vector<std::string> one = {
      "+optimizer[compute]",                         // step(), zero_grad() in its closure
      "-", "+forward[compute]", "-",                 // linear .. cross_entropy
      "+sync[sync]", "-",                            // item()
      "+forward[compute]", "-",                      // relu
      "+backward[compute]", "-",                     // closed by the update's first op
      "+optimizer[compute]", "-", "STEP",            // the update; step() ends the iteration
  };
  std::vector<std::string> want = one;
  want.insert(want.begin() + 1, "STEP");  // the first forward op begins iteration 1 (in the step)
  want.insert(want.end(), one.begin(), one.end());
  EXPECT_EQ(r.log, want);
  EXPECT_EQ(r.depth, 0);

  // An iteration whose ops are not observed (iteration sampling): the scopes alone. Such a step
  // would be the closure's forward and backward too: no optimizer stage, only the mark (the
  // zero_grad inside it is the optimizer's). A step seen with no closure keeps its stage. A
  // zero_grad() after the closure's forward began is an optimizer stage beside it.
  r.log.clear();
  auto unobserved = [](const char* name) {
    gi::OpInfo o = op(name, false, gi::Scope::kUser);
    o.ops_observed = false;
    return o;
  };
  c.on_start(unobserved("Optimizer.step#SGD.step"));
  c.on_start(unobserved("Optimizer.zero_grad#SGD.zero_grad"));
  c.on_end();
  c.on_end();
  EXPECT_EQ(r.log, (std::vector<std::string>{"+optimizer[compute]", "-", "STEP"}));
  r.log.clear();
  c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
  leaf(c, op("aten::linear", true));
  c.on_start(op("Optimizer.zero_grad#SGD.zero_grad", false, gi::Scope::kUser));
  leaf(c, no_grad(op("aten::zero_")));
  c.on_end();
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_end();
  EXPECT_EQ(r.log, (std::vector<std::string>{"+optimizer[compute]", "-", "+forward[compute]", "-", "+optimizer[compute]",
                                             "-", "+backward[compute]", "-", "STEP"}));
  Recorder plain;
  gi::OpClassifier p(plain, no_ops());
  p.on_start(unobserved("Optimizer.step#SGD.step"));
  p.on_end();
  EXPECT_EQ(plain.log, (std::vector<std::string>{"+optimizer[compute]", "-", "STEP"}));
}

TEST(OpClassifier, IterationsFollowOptimizerSteps) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  for (int i = 0; i < 3; ++i) {
    leaf(c, op("aten::randint"));  // sampling, before the forward
    leaf(c, op("aten::linear", true));
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_end();
  }
  int steps = 0;
  for (const auto& e : r.log) steps += e == "STEP";
  EXPECT_EQ(steps, 4);  // one to begin the first iteration, one per step()
  EXPECT_EQ(r.log.front(), "+ops (no grad)[data]");
}

// An epoch's end: the loop statement left after its last step (an evaluation) and entered
// again with no mark between: that time was no iteration. With a step between (a second
// optimizer stepped after an inner loop that the tracer took for the loop), nothing is dropped.
TEST(OpClassifier, TheTimeBetweenALoopsPassesIsNoIteration) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  auto train_step = [&] {
    leaf(c, op("aten::linear", true));
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_end();
  };
  train_step();
  train_step();
  c.on_loop(false);
  leaf(c, no_grad(op("aten::linear")));  // the evaluation
  r.log.clear();
  EXPECT_EQ(c.on_loop(true), 1);
  EXPECT_EQ(r.log, (std::vector<std::string>{"-", "DROP+STEP"}));  // its phase ends; the pass begins one
  train_step();
  r.log.clear();
  c.on_loop(false);
  train_step();  // training outside "the loop": a step marks
  EXPECT_EQ(c.on_loop(true), 0);  // the tracer takes the loop around it from then on
  for (const auto& e : r.log) EXPECT_NE(e.rfind("DROP", 0), 0u) << e;
  // A pass of fewer than 3 marks left and entered again with none between (a loop over the
  // optimizers around the step: the batch's data and forward run outside it): nothing dropped.
  r.log.clear();
  c.on_loop(false);
  leaf(c, op("aten::linear", true));
  EXPECT_EQ(c.on_loop(true), 0);
  train_step();
  c.on_loop(false);
  EXPECT_EQ(c.on_loop(true), 0);
  for (const auto& e : r.log) EXPECT_NE(e.rfind("DROP", 0), 0u) << e;
  // A program that marks its own iterations keeps them.
  c.on_user_step();
  r.log.clear();
  c.on_loop(false);
  EXPECT_EQ(c.on_loop(true), -1);
  EXPECT_TRUE(r.log.empty());
}

TEST(OpClassifier, TheUpdatesReadbacksAreTheOptimizersAndAKnownClosuresWorkIsNot) {
  // Adam reads its step count with item() per parameter, under no_grad: the optimizer's own,
  // not a sync. Once a step of this optimizer has run a closure, the grad-enabled work at the
  // closure's start (torch.tensor(batch) before its forward) is the closure's, not the optimizer's.
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  for (int step = 0; step < 2; ++step) {
    c.on_start(op("Optimizer.step#LBFGS.step", false, gi::Scope::kUser));
    c.on_start(op("Optimizer.zero_grad#LBFGS.zero_grad", false, gi::Scope::kUser));
    leaf(c, no_grad(op("aten::zero_")));
    c.on_end();
    leaf(c, op("aten::lift_fresh"));  // grad enabled, needs no grad: the closure's batch
    leaf(c, op("aten::linear", true));
    leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
    leaf(c, no_grad(op("aten::item")));  // LBFGS's float(loss): waits for the backward, a sync
    leaf(c, no_grad(op("aten::add_", true)));
    leaf(c, no_grad(op("aten::item")));  // Adam's step count, in the update: the optimizer's
    c.on_end();
  }
  const std::vector<std::string> want = {
      "+optimizer[compute]", "STEP", "-", "+forward[compute]", "-", "+backward[compute]", "-", "+sync[sync]", "-",
      "+optimizer[compute]", "-", "STEP",            // the first step: lift_fresh still the optimizer's
      "+optimizer[compute]", "-",                    // zero_grad; lift_fresh ends the stage
      "+forward[compute]", "-", "+backward[compute]", "-", "+sync[sync]", "-", "+optimizer[compute]", "-", "STEP"};
  EXPECT_EQ(r.log, want);
  EXPECT_EQ(r.depth, 0);

  // Per optimizer: a step of another one, never seen running a closure, keeps its stage when
  // its ops are not observed.
  r.log.clear();
  leaf(c, op("aten::linear", true));
  gi::OpInfo sgd = op("Optimizer.step#SGD.step", false, gi::Scope::kUser);
  sgd.ops_observed = false;
  c.on_start(sgd);
  c.on_end();
  EXPECT_EQ(r.log, (std::vector<std::string>{"+forward[compute]", "-", "+optimizer[compute]", "-", "STEP"}));
}

TEST(OpClassifier, ACommWaitOpenWhenTheStepEndsGoesOnOutsideIt) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("aten::mm", true));
  c.on_start(op("Optimizer.step#ZeroRedundancyOptimizer.step", false, gi::Scope::kUser));
  gi::OpInfo ar = op("c10d::broadcast_");
  c.on_start(ar);
  c.on_end(/*comm_in_flight=*/true);  // the step's last op: a wait opens after it
  c.on_end();                          // the step ends: the wait first, then the optimizer
  leaf(c, op("aten::mm", true));       // closes the wait
  const std::vector<std::string> want = {"STEP", "+forward[compute]", "-", "+optimizer[compute]", "+comm[comm]", "-",
                                         "+comm wait[comm]", "-", "-", "STEP", "+comm wait[comm]", "-",
                                         "+forward[compute]"};
  EXPECT_EQ(r.log, want);
}

TEST(OpClassifier, SeveralOptimizersSteppedInARowEndOneIteration) {
  // SparseAdam for the embeddings, then Adam for the rest: one iteration per pass of the loop,
  // ended by the last step of the cycle, once a pass has shown the cycle (the first pass still
  // marks at each step). torch 1.13's record_function runs torch.zeros(1) before each step's
  // scope: no work between the steps.
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  int marks_after_first_pass = 0;
  for (int pass = 0; pass < 4; ++pass) {
    if (pass == 1) marks_after_first_pass = static_cast<int>(std::count(r.log.begin(), r.log.end(), "STEP"));
    c.on_start(op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", false, gi::Scope::kUser));
    c.on_end();
    leaf(c, op("aten::embedding", true));
    leaf(c, op("aten::linear", true));
    leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
    for (const char* step : {"Optimizer.step#SparseAdam.step", "Optimizer.step#Adam.step"}) {
      leaf(c, op("aten::zeros"));
      c.on_start(op(step, false, gi::Scope::kUser));
      leaf(c, op("aten::add_"));
      c.on_end();
    }
  }
  const auto marks = std::count(r.log.begin(), r.log.end(), "STEP");
  EXPECT_EQ(marks_after_first_pass, 3);  // the first forward op, then each step
  EXPECT_EQ(marks - marks_after_first_pass, 3);  // one per later pass
  EXPECT_EQ(r.log.back(), "STEP");
  EXPECT_EQ(r.depth, 0);

  // A pass with one step that is not the cycle's last (the second optimizer not stepped this
  // time): every step ends an iteration again, until a pass shows a cycle.
  r.log.clear();
  leaf(c, op("aten::linear", true));
  c.on_start(op("Optimizer.step#SparseAdam.step", false, gi::Scope::kUser));
  c.on_end();
  leaf(c, op("aten::linear", true));
  c.on_start(op("Optimizer.step#SparseAdam.step", false, gi::Scope::kUser));
  c.on_end();
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "STEP"), 1);  // the first one's window showed no cycle yet
  leaf(c, op("aten::linear", true));
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "STEP"), 1);
  c.on_start(op("Optimizer.step#SparseAdam.step", false, gi::Scope::kUser));
  c.on_end();
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "STEP"), 2);  // forgotten at the second pass's work

  // GAN-style: D's step, G's forward, G's step, work between them. A pass runs from a D step
  // to the next: once two in a row have shown [D, G], only G ends an iteration (the first two
  // passes still end at both). Steps are scopes, seen in unobserved iterations too.
  Recorder gan;
  gi::OpClassifier g(gan, no_ops());
  for (int pass = 0; pass < 4; ++pass) {
    const bool observed = pass % 2 == 0;
    for (const char* step : {"Optimizer.step#D.step", "Optimizer.step#G.step"}) {
      if (observed) leaf(g, op("aten::linear", true));
      gi::OpInfo s = op(step, false, gi::Scope::kUser);
      s.ops_observed = observed;
      g.on_start(s);
      g.on_end();
    }
    g.on_start(op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", false, gi::Scope::kUser));
    g.on_end();
  }
  EXPECT_EQ(std::count(gan.log.begin(), gan.log.end(), "STEP"), 1 + 2 + 2 + 1 + 1);  // the first forward's, D and G twice, then G

  // Two optimizers of one class (a GAN's two Adams): one name, told apart by the line that
  // called each step. Without lines every step ends an iteration.
  for (const bool lines : {true, false}) {
    Recorder two;
    gi::OpClassifier t(two, no_ops());
    for (int pass = 0; pass < 4; ++pass)
      for (const std::uint32_t line : {40u, 52u}) {
        leaf(t, op("aten::linear", true));
        gi::OpInfo s = op("Optimizer.step#Adam.step", false, gi::Scope::kUser);
        s.call_line = lines ? line : 0;
        t.on_start(s);
        t.on_end();
      }
    EXPECT_EQ(std::count(two.log.begin(), two.log.end(), "STEP"), lines ? 1 + 2 + 2 + 1 + 1 : 1 + 8) << lines;
  }

  // Steps of one name with work between (a discriminator stepped twice per generator step
  // would be two names; one optimizer is one name): every step ends an iteration. And a pass
  // of the first name alone unlearns the cycle.
  Recorder solo;
  gi::OpClassifier unlearn(solo, no_ops());
  for (const char* step : {"Optimizer.step#D.step", "Optimizer.step#G.step", "Optimizer.step#D.step", "Optimizer.step#G.step",
                           "Optimizer.step#D.step", "Optimizer.step#D.step", "Optimizer.step#D.step"}) {
    leaf(unlearn, op("aten::linear", true));
    unlearn.on_start(op(step, false, gi::Scope::kUser));
    unlearn.on_end();
  }
  // First forward, D G D G (two passes), then D (two like passes: learned, no end), D (pass [D]:
  // unlearned, ends), D.
  EXPECT_EQ(std::count(solo.log.begin(), solo.log.end(), "STEP"), 1 + 4 + 0 + 1 + 1);

  // A second optimizer stepped every third pass (lazy regularisation) teaches nothing: every
  // step ends an iteration, as with one optimizer.
  Recorder lazy;
  gi::OpClassifier lz(lazy, no_ops());
  int steps = 0;
  for (int pass = 0; pass < 9; ++pass)
    for (const char* step : {"Optimizer.step#A.step", pass % 3 == 2 ? "Optimizer.step#R.step" : nullptr}) {
      if (step == nullptr) continue;
      leaf(lz, op("aten::linear", true));
      lz.on_start(op(step, false, gi::Scope::kUser));
      lz.on_end();
      ++steps;
    }
  EXPECT_EQ(std::count(lazy.log.begin(), lazy.log.end(), "STEP"), 1 + steps);

  // A wrapper's step around its inner optimizer's (ZeroRedundancyOptimizer): one mark, at the
  // outer step's end.
  Recorder nested;
  gi::OpClassifier z(nested, no_ops());
  for (int pass = 0; pass < 3; ++pass) {
    leaf(z, op("aten::linear", true));
    z.on_start(op("Optimizer.step#ZeroRedundancyOptimizer.step", false, gi::Scope::kUser));
    z.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
    z.on_end();
    leaf(z, no_grad(op("c10d::broadcast_")));
    z.on_end();
  }
  EXPECT_EQ(std::count(nested.log.begin(), nested.log.end(), "STEP"), 1 + 3);
  // The broadcast after the inner step is in the pass it belongs to: before the pass's mark.
  const auto last_comm = std::find(nested.log.rbegin(), nested.log.rend(), "+comm[comm]");
  const auto last_step = std::find(nested.log.rbegin(), nested.log.rend(), "STEP");
  EXPECT_GT(last_comm - nested.log.rbegin(), last_step - nested.log.rbegin());

  // Two optimizers of one class (Adam for the encoder, Adam for the decoder): the second Adam
  // of each pass ends it. A pass that steps one of them only forgets the cycle (that pass is
  // not ended on its own: it joins the next).
  Recorder twins;
  gi::OpClassifier t(twins, no_ops());
  auto pass_of = [&](int steps) {
    leaf(t, op("aten::linear", true));
    leaf(t, op("autograd::engine::evaluate_function: AddmmBackward0"));
    for (int i = 0; i < steps; ++i) {
      leaf(t, op("aten::zeros"));
      t.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
      leaf(t, op("aten::add_"));
      t.on_end();
    }
  };
  for (int pass = 0; pass < 4; ++pass) pass_of(2);
  EXPECT_EQ(std::count(twins.log.begin(), twins.log.end(), "STEP"), 1 + 2 + 3);  // the first pass split, then one each
  // Sampled iterations: no work is seen between the passes' steps, the count goes on by pairs.
  twins.log.clear();
  for (int i = 0; i < 2 * 6; ++i) {
    gi::OpInfo s = op("Optimizer.step#Adam.step", false, gi::Scope::kUser);
    s.ops_observed = false;
    t.on_start(s);
    t.on_end();
  }
  EXPECT_EQ(std::count(twins.log.begin(), twins.log.end(), "STEP"), 6);
  pass_of(2);  // an observed pass after them
  twins.log.clear();
  pass_of(2);
  EXPECT_EQ(std::count(twins.log.begin(), twins.log.end(), "STEP"), 1);
  twins.log.clear();
  pass_of(1);
  EXPECT_EQ(std::count(twins.log.begin(), twins.log.end(), "STEP"), 0);
  pass_of(1);
  pass_of(1);
  EXPECT_EQ(std::count(twins.log.begin(), twins.log.end(), "STEP"), 2);  // forgotten at the second pass's work

  // One optimizer: every step ends an iteration, as before.
  Recorder one;
  gi::OpClassifier d(one, no_ops());
  for (int pass = 0; pass < 3; ++pass) {
    leaf(d, op("aten::linear", true));
    leaf(d, op("autograd::engine::evaluate_function: AddmmBackward0"));
    d.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
    d.on_end();
  }
  EXPECT_EQ(std::count(one.log.begin(), one.log.end(), "STEP"), 4);
}

// A record_function-free loop that reads its loss after the step: loss.item() is the host's
// sync point (its own stage, category sync, ending with it), and the next batch's ops are
// data, not forward.
TEST(OpClassifier, ReadbacksAreSyncAndTheNextBatchIsData) {
  EXPECT_EQ(gi::classify_name("aten::item", gi::Scope::kFunction), gi::OpKind::kReadback);
  EXPECT_EQ(gi::classify_name("aten::is_nonzero", gi::Scope::kFunction), gi::OpKind::kReadback);
  EXPECT_TRUE(gi::may_mute_nested(gi::OpKind::kReadback, "aten::item"));
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  for (int i = 0; i < 2; ++i) {
    leaf(c, op("aten::randn"));  // the loader
    leaf(c, op("aten::linear", true));
    leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_end();
    leaf(c, op("aten::item", true));  // total += loss.item()
  }
  const std::vector<std::string> want = {
      "+ops (no grad)[data]", "-", "STEP", "+forward[compute]", "-", "+backward[compute]", "-",
      "+optimizer[compute]", "-", "STEP", "+sync[sync]", "-",
      "+ops (no grad)[data]", "-", "+forward[compute]", "-", "+backward[compute]", "-",
      "+optimizer[compute]", "-", "STEP", "+sync[sync]", "-",  // closed with the readback
  };
  EXPECT_EQ(r.log, want);
}

// The loop's data ops ("ops (no grad)") end at its next traced line: plain Python after them
// (logging, bookkeeping) is not data. Inside an op (a custom Function's Python) the watch
// waits for the next line; a forward is not ended by lines.
TEST(OpClassifier, ADataPhaseOpenedByOpsEndsAtTheLoopsNextLine) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("aten::randn"));
  leaf(c, op("aten::randint"));  // the same line
  EXPECT_TRUE(r.watching);
  EXPECT_EQ(r.depth, 1);
  next_line(r, c);  // busy(0.002)
  EXPECT_EQ(r.depth, 0);
  leaf(c, op("aten::randn"));  // the next batch's
  c.on_start(op("aten::mul"));
  next_line(r, c);  // a line inside the op: not the loop's boundary, armed again
  EXPECT_TRUE(r.watching);
  EXPECT_EQ(r.depth, 1);
  c.on_end();
  next_line(r, c);
  EXPECT_EQ(r.depth, 0);
  const std::vector<std::string> want = {"+ops (no grad)[data]", "-", "+ops (no grad)[data]", "-"};
  EXPECT_EQ(r.log, want);

  Recorder f;
  gi::OpClassifier g(f, no_ops());
  leaf(g, op("aten::linear", true));
  EXPECT_FALSE(f.watching);  // forward goes on into the loss, across lines
}

// A readback inside the forward (PyG's num_nodes = int(edge_index.max()) + 1): a sync of its
// own, then the forward goes on, helper ops included.
TEST(OpClassifier, AReadbackInsideTheForwardResumesIt) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("aten::linear", true));
  leaf(c, op("aten::max"));   // on edge_index: a helper, forward
  leaf(c, op("aten::item"));  // int(...)
  leaf(c, op("aten::zeros"));  // still the forward's helper
  leaf(c, op("aten::index_add_", true));
  const std::vector<std::string> want = {"STEP", "+forward[compute]", "-", "+sync[sync]", "-", "+forward[compute]"};
  EXPECT_EQ(r.log, want);
}

// out.argmax(1) after the step reads a tensor that requires grad but records nothing for
// autograd: the forward it opened closes when it ends, and the loader's ops that follow are
// data. An op that did build graph keeps its forward open for the helpers after it.
TEST(OpClassifier, AForwardOpenedByAnOpThatBuiltNoGraphClosesWhenItEnds) {
  for (const bool built : {false, true}) {
    Recorder r;
    gi::OpClassifier c(r, no_ops());
    leaf(c, op("aten::linear", true));
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_end();
    c.on_start(op("aten::argmax", true));
    EXPECT_TRUE(c.innermost_opened_forward());
    c.on_end(false, built);
    leaf(c, op("aten::eq"));
    c.on_start(op("aten::randn"));
    EXPECT_FALSE(c.innermost_opened_forward());  // no forward opened by a helper
    c.on_end(false, false);
    std::vector<std::string> want = {"STEP", "+forward[compute]", "-", "+optimizer[compute]", "-", "STEP",
                                     "+forward[compute]"};
    if (!built) want.insert(want.end(), {"-", "+ops (no grad)[data]"});
    EXPECT_EQ(r.log, want) << built;
  }
}

TEST(OpClassifier, RecordFunctionScopesNestTheirOps) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  c.on_start(op("sample", false, gi::Scope::kUser));
  leaf(c, op("aten::randint"));  // no phase stage inside a user scope
  leaf(c, op("aten::unique"));
  c.on_end();
  c.on_start(op("train_step", false, gi::Scope::kUser));
  leaf(c, op("aten::linear", true));  // forward gets its stage inside the scope
  c.on_end();
  c.on_start(op("forward", false, gi::Scope::kUser));
  leaf(c, op("aten::linear", true));  // a scope named like a phase: no nested "forward"
  c.on_end();
  const std::vector<std::string> want = {"+sample[user]", "-", "+train_step[user]", "STEP", "+forward[compute]", "-", "-",
                                         "+forward[user]", "-"};
  EXPECT_EQ(r.log, want);
}

TEST(OpClassifier, CrossDeviceCopiesAreTransfersWithMemoryKindAndMode) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  gi::OpInfo to = op("aten::to");
  gi::OpInfo cp = op("aten::copy_");
  cp.copy_src = gi::Device::kCpu;
  cp.copy_dst = gi::Device::kCuda;
  cp.copy_bytes = 4096;
  cp.copy_host_pinned = true;
  cp.copy_non_blocking = true;
  c.on_start(to);
  leaf(c, cp);
  c.on_end();
  gi::OpInfo pageable = cp;
  pageable.copy_host_pinned = false;  // non_blocking from pageable memory is a sync copy
  leaf(c, pageable);
  gi::OpInfo d2h = op("aten::copy_");
  d2h.copy_src = gi::Device::kCuda;
  d2h.copy_dst = gi::Device::kCpu;
  d2h.copy_bytes = 8;
  leaf(c, d2h);
  gi::OpInfo same = op("aten::copy_");  // cpu -> cpu: not a transfer
  leaf(c, same);
  // The first copy is nested in aten::to, so the phase stays open around it.
  const std::vector<std::string> nested = {"+ops (no grad)[data]", "+h2d[data]", "XFER 4096 d0 m1 a1", "-"};
  ASSERT_GE(r.log.size(), nested.size());
  EXPECT_EQ(std::vector<std::string>(r.log.begin(), r.log.begin() + 4), nested);
  EXPECT_NE(std::find(r.log.begin(), r.log.end(), "XFER 4096 d0 m0 a0"), r.log.end());
  EXPECT_NE(std::find(r.log.begin(), r.log.end(), "XFER 8 d1 m0 a0"), r.log.end());
  EXPECT_EQ(std::count_if(r.log.begin(), r.log.end(), [](const std::string& s) { return s.rfind("XFER", 0) == 0; }), 3);
}

TEST(OpClassifier, LargeHostGathersAreMaterializationsButNotInsideForward) {
  Recorder r;
  gi::ClassifierOptions o = no_ops();
  o.gather_min_bytes = 1000;
  gi::OpClassifier c(r, o);
  gi::OpInfo g = feature_gather();
  c.on_start(op("gather", false, gi::Scope::kUser));
  c.on_start(g);
  leaf(c, op("aten::index_select"));  // nested in the gather: counted once
  c.on_end();
  c.on_end();
  gi::OpInfo small = g;
  small.gather_source_bytes = 10;  // below the threshold: an ordinary op
  leaf(c, small);
  leaf(c, op("aten::linear", true));
  leaf(c, g);  // a gather of activations during forward is message passing, not a read
  const std::vector<std::string> want = {"+gather[user]", "+materialize[data]", "MAT 10 2560", "-", "-",
                                         "+ops (no grad)[data]", "-", "STEP", "+forward[compute]"};
  EXPECT_EQ(r.log, want);
}

// h = X[idx] of a learnable nn.Parameter X (node embeddings): the model's forward, not a feature
// read a prefetcher could move ahead of the step that updates X.
TEST(OpClassifier, AGatherOfATensorNeedingGradIsForward) {
  Recorder r;
  gi::ClassifierOptions o = no_ops();
  o.gather_min_bytes = 1000;
  gi::OpClassifier c(r, o);
  gi::OpInfo g = feature_gather();
  g.any_input_requires_grad = true;
  leaf(c, g);
  c.close_all();
  const std::vector<std::string> want = {"STEP", "+forward[compute]", "-"};  // the first forward begins the first iteration
  EXPECT_EQ(r.log, want);
}

// A lazy feature read inside the model's forward (DGL's blocks[0].srcdata['feat'] first touched
// there): a gather of fewer rows than a table has that outlives the iterations is a
// materialization even inside a module's call and the forward; this batch's activations, or a
// row per edge of a full graph (more rows than the table's), stay message passing.
TEST(OpClassifier, AFeatureTableReadInsideTheModelIsAMaterialization) {
  Recorder r;
  gi::ClassifierOptions o = no_ops();
  o.gather_min_bytes = 1000;
  gi::OpClassifier c(r, o);
  gi::OpInfo table = feature_gather("aten::index");
  table.gather_source_rows = 4096;
  table.gather_source_persistent = true;
  gi::OpInfo activations = table;
  activations.gather_source_persistent = false;
  gi::OpInfo per_edge = table;
  per_edge.gather_rows = 20000;
  leaf(c, in_model(op("aten::linear", true)));
  leaf(c, in_model(table));
  leaf(c, in_model(activations));
  leaf(c, in_model(per_edge));
  c.close_all();
  const std::vector<std::string> want = {"STEP", "+forward[compute]", "-", "+materialize[data]", "MAT 10 2560", "-",
                                         "+forward[compute]", "-"};
  EXPECT_EQ(r.log, want);
}

// Inside a model's call (the Python package's module hooks say so), ops on tensors needing no
// grad are the forward's: the input's dropout, the first layer's gather of its input features
// and its aggregation before any parameter is used. Under no_grad (validation) they are its
// "forward (no grad)"; outside a module's call they stay the loop's own work.
TEST(OpClassifier, OpsInsideAModulesCallAreItsForwardThoughNoInputNeedsGrad) {
  Recorder r;
  gi::ClassifierOptions o = no_ops();
  o.gather_min_bytes = 1000;
  gi::OpClassifier c(r, o);
  gi::OpInfo gather = feature_gather("aten::index_select");
  leaf(c, op("aten::randperm"));          // the loop's own: sampling
  leaf(c, gather);                         // x = feats[nodes]: the loop's own feature read
  leaf(c, in_model(op("aten::dropout")));  // model(x): F.dropout(x) first
  leaf(c, in_model(gather));               // x[src]: message passing, not a feature read
  leaf(c, in_model(op("aten::index_add_")));
  leaf(c, in_model(op("aten::linear", true)));
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
  c.on_end();
  leaf(c, no_grad(in_model(op("aten::dropout"))));  // validation under no_grad
  leaf(c, no_grad(in_model(op("aten::linear", true))));
  c.close_all();
  const std::vector<std::string> want = {
      "+ops (no grad)[data]", "-", "+materialize[data]", "MAT 10 2560", "-", "STEP", "+forward[compute]", "-",
      "+backward[compute]", "-", "+optimizer[compute]", "-", "STEP", "+forward (no grad)[compute]", "-"};
  EXPECT_EQ(r.log, want);
}

// The model's call opens its forward at once: the Python between `model(x)` and its first op
// is the forward's, not the loader phase's before it. Not inside the optimizer's step.
TEST(OpClassifier, AModelsCallOpensItsForward) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("aten::randperm"));  // the loop's own
  c.on_module_enter(true);        // model(x)
  leaf(c, in_model(op("aten::linear", true)));
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
  c.on_module_enter(true);  // a module inside the step (a closure): the ops decide there
  c.on_end();
  c.on_module_enter(false);  // validation under no_grad
  c.close_all();
  const std::vector<std::string> want = {"+ops (no grad)[data]", "-", "STEP", "+forward[compute]", "-", "+backward[compute]", "-",
                                         "+optimizer[compute]", "-", "STEP", "+forward (no grad)[compute]", "-"};
  EXPECT_EQ(r.log, want);
}

// A Module call that builds no graph (a metric after the step; a transform) ends its forward
// when it returns; one that builds graph (the model) leaves it open for the loss. A Module
// called inside the DataLoader's scope (a torchvision transform) is the loader's data.
TEST(OpClassifier, AModuleCallThatBuildsNoGraphEndsItsForwardAndTransformsAreData) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  c.on_module_enter(true);  // the model: builds graph
  leaf(c, in_model(op("aten::linear", true)));
  c.on_module_exit(true);
  leaf(c, op("aten::cross_entropy_loss", true));  // the loss, forward still
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
  c.on_end();
  c.on_module_enter(true);  // metric(pred.detach(), y): no graph
  leaf(c, in_model(op("aten::eq")));
  c.on_module_exit(false);
  leaf(c, op("aten::randperm"));  // the next batch's sampling: the loop's own again
  c.on_start(op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", false, gi::Scope::kUser));
  c.on_module_enter(true);  // a transform inside the loader
  leaf(c, in_model(op("aten::div")));
  c.on_module_exit(false);
  c.on_end();
  c.close_all();
  const std::vector<std::string> want = {
      "STEP", "+forward[compute]", "-", "+backward[compute]", "-", "+optimizer[compute]", "-", "STEP",
      "+forward[compute]", "-", "+ops (no grad)[data]", "-",
      "+enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__[user]", "-"};
  EXPECT_EQ(r.log, want);
}

// Gradient accumulation: backward ran inside loss.backward(); the next micro-batch's data
// work after it is the loop's own, not backward. An evaluation's model call (no grad) ends its
// forward (no grad) when it returns: the next batch's preparation is data again.
TEST(OpClassifier, WorkAfterBackwardAndAfterAnEvaluationCallIsTheLoops) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  for (int micro = 0; micro < 2; ++micro) {
    leaf(c, op("aten::index"));  // xs = x[idx]: this micro-batch's data
    c.on_module_enter(true);
    leaf(c, in_model(op("aten::linear", true)));
    c.on_module_exit(true);
    leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  }
  c.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
  c.on_end();
  c.on_module_enter(false);  // evaluate(): model(x) under no_grad
  leaf(c, no_grad(in_model(op("aten::linear", true))));
  c.on_module_exit(false);
  leaf(c, no_grad(op("aten::index")));  // the next evaluation batch's preparation
  c.close_all();
  const std::vector<std::string> want = {
      "+ops (no grad)[data]", "-", "STEP", "+forward[compute]", "-", "+backward[compute]", "-",
      "+ops (no grad)[data]", "-", "+forward[compute]", "-", "+backward[compute]", "-",
      "+optimizer[compute]", "-", "STEP", "+forward (no grad)[compute]", "-", "+ops (no grad)[data]", "-"};
  EXPECT_EQ(r.log, want);
}

// The loop's loss.backward() call (the package's wrapper says when it begins and returns):
// backward spans the call, its grad seed (ones_like, needing no grad) included, and ends when
// it returns; inside an optimizer's step (a closure) the ops decide as before.
TEST(OpClassifier, TheBackwardCallIsTheBackwardPhase) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("aten::linear", true));
  c.on_backward_call(true);
  leaf(c, op("aten::ones_like", true));  // the grad seed: ones_like(loss), which needs grad
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_backward_call(false);
  c.on_named_scope("clip_grad", true);  // clip_grad_norm_: its no-grad ops are its own
  leaf(c, no_grad(op("aten::norm")));
  c.on_named_scope("clip_grad", false);
  c.on_start(op("Optimizer.step#LBFGS.step", false, gi::Scope::kUser));
  c.on_backward_call(true);  // a closure's backward: not the loop's level
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_backward_call(false);
  c.on_end();
  c.close_all();
  const std::vector<std::string> want = {"STEP", "+forward[compute]", "-", "+backward[compute]", "-", "+clip_grad[user]", "-",
                                         "+optimizer[compute]", "-", "+backward[compute]", "-", "STEP"};
  EXPECT_EQ(r.log, want);
}

TEST(OpClassifier, OpStagesNestInsideTheirPhase) {
  Recorder r;
  gi::OpClassifier c(r, gi::ClassifierOptions{});
  c.on_start(op("aten::linear", true));
  leaf(c, op("aten::addmm", true));  // only top-level ops get a stage
  c.on_end();
  c.close_all();
  const std::vector<std::string> want = {"STEP", "+forward[compute]", "+aten::linear[op]", "-", "-"};
  EXPECT_EQ(r.log, want);
}

TEST(OpClassifier, OtherThreadsCloseTheirPhaseAfterEachOpAndNeverMark) {
  Recorder r;
  gi::OpClassifier c(r, other_thread());
  leaf(c, op("autograd::engine::evaluate_function: MmBackward0"));
  leaf(c, op("aten::linear", true));
  const std::vector<std::string> want = {"+backward[compute]", "-", "+forward[compute]", "-"};
  EXPECT_EQ(r.log, want);
}

TEST(OpClassifier, ProfilerStepsReplaceOptimizerMarks) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  for (int i = 0; i < 2; ++i) {
    c.on_start(op("ProfilerStep#1", false, gi::Scope::kUser));
    leaf(c, op("aten::linear", true));
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_end();
    c.on_end();
  }
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "STEP"), 2);
}

// A torch.profiler used for a few steps (its schedule, or a `with` around part of the loop):
// its ProfilerStep marks stop with it, and the optimizer's resume.
TEST(OpClassifier, OptimizerMarksResumeWhenTheProfilersStepsStop) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  auto iteration = [&](bool profiled) {
    if (profiled) c.on_start(op("ProfilerStep#1", false, gi::Scope::kUser));
    leaf(c, op("aten::linear", true));
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_end();
    if (profiled) c.on_end();
  };
  for (int i = 0; i < 3; ++i) iteration(false);
  const auto before = std::count(r.log.begin(), r.log.end(), "STEP");
  for (int i = 0; i < 4; ++i) iteration(true);
  const auto profiled = std::count(r.log.begin(), r.log.end(), "STEP") - before;
  EXPECT_GE(profiled, 4);  // one per ProfilerStep (the first also ends the optimizer-marked one)
  EXPECT_LE(profiled, 5);
  for (int i = 0; i < 10; ++i) iteration(false);
  const auto after = std::count(r.log.begin(), r.log.end(), "STEP") - before - profiled;
  EXPECT_GE(after, 8);  // all but the first steps after the profiler's last mark
  EXPECT_LE(after, 10);
}

// gnnprof.step() after opt.step(): the program's marks replace the optimizer's from the first
// one on, which is no second mark right after the optimizer's (no iteration of a few µs).
TEST(OpClassifier, TheProgramsOwnStepsReplaceOptimizerMarks) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  for (int i = 0; i < 3; ++i) {
    leaf(c, op("aten::linear", true));
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_end();
    leaf(c, op("aten::item"));  // loss.item(): a readback is no forward or backward
    EXPECT_TRUE(c.on_user_step());
  }
  // The first forward's mark, the first step's; then the program's second and third.
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "STEP"), 4);
  EXPECT_EQ(r.log.back(), "STEP");
  EXPECT_EQ(r.depth, 0);

  // At the loop's top: every mark is the program's.
  Recorder top;
  gi::OpClassifier t(top, no_ops());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(t.on_user_step());
    leaf(t, op("aten::linear", true));
    t.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    t.on_end();
  }
  EXPECT_EQ(std::count(top.log.begin(), top.log.end(), "STEP"), 3);

  // A thread that marks no iterations leaves the mark to the caller.
  gi::ClassifierOptions o = no_ops();
  o.marks_iterations = false;
  Recorder other;
  gi::OpClassifier w(other, o);
  EXPECT_FALSE(w.on_user_step());
  EXPECT_TRUE(other.log.empty());
}

// gnnprof.stage("gather", "data") as a scope: the gather's materialize nests in it (begun
// straight in the core, the phase's end would have ended the stage instead).
TEST(OpClassifier, AProgramsStageNestsItsGathersAndKeepsItsCategory) {
  Recorder r;
  gi::ClassifierOptions o = no_ops();
  o.gather_min_bytes = 1000;
  gi::OpClassifier c(r, o);
  leaf(c, op("aten::randint"));  // the loop's own no-grad work: a phase open when the stage begins
  gi::OpInfo g = feature_gather();
  c.on_named_scope("load", true, "data");
  leaf(c, g);
  c.on_named_scope("load", false);
  const std::vector<std::string> want = {"+ops (no grad)[data]", "-", "+load[data]", "+materialize[data]", "MAT 10 2560",
                                         "-", "-"};
  EXPECT_EQ(r.log, want);
}

// nn.init in a model's constructor (uniform_ on its weights under no_grad), then the first
// batch: its feature gather is a materialization, not message passing inside a "forward (no
// grad)" that the initialisation opened. A hand-written SGD step is the model's update too.
TEST(OpClassifier, InPlaceUpdatesOfParametersUnderNoGradAreParameterUpdates) {
  Recorder r;
  gi::ClassifierOptions o = no_ops();
  o.gather_min_bytes = 1000;
  gi::OpClassifier c(r, o);
  leaf(c, no_grad(op("aten::uniform_", true)));
  leaf(c, no_grad(op("aten::uniform_", true)));
  leaf(c, op("aten::randint"));  // the first batch's sampling
  gi::OpInfo g = feature_gather();
  leaf(c, g);
  leaf(c, op("aten::linear", true));
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  leaf(c, no_grad(op("aten::mul")));         // lr * p.grad
  leaf(c, no_grad(op("aten::sub_", true)));  // p -= ...
  // The sampling after the initialisation is the loop's own work, not the update's. Before the
  // first iteration each update ends with its op (a thread that then waits for a training
  // thread would keep one open to its end).
  const std::vector<std::string> want = {"+parameter update[compute]", "-", "+parameter update[compute]", "-",
                                         "+ops (no grad)[data]", "-", "+materialize[data]",
                                         "MAT 10 2560", "-", "STEP",
                                         "+forward[compute]", "-", "+backward[compute]", "-", "+ops (no grad)[data]", "-",
                                         "+parameter update[compute]"};
  EXPECT_EQ(r.log, want);
  // Inside a module's call (a weight normalisation in its forward) it stays the forward's.
  Recorder m;
  gi::OpClassifier mc(m, no_ops());
  leaf(mc, in_model(no_grad(op("aten::mul_", true))));
  EXPECT_EQ(m.log.front(), "+forward (no grad)[compute]");
}

// Metrics after the step (pred == y, a confusion matrix): no-grad ops on a loop line below the
// backward call are the loop's own work ("ops after backward", compute), each line anew; the
// next batch's sampling, above the forward, is still data.
TEST(OpClassifier, NoGradOpsBelowTheBackwardLineAreNotData) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("aten::randint"));  // sampling, above the forward
  next_line(r, c);
  leaf(c, op("aten::linear", true));
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  gi::OpInfo metric = op("aten::eq");
  metric.after_backward_line = true;
  leaf(c, metric);
  gi::OpInfo sum = op("aten::sum");
  sum.after_backward_line = true;  // the same line's next op: the observer says so for each
  leaf(c, sum);
  next_line(r, c);
  leaf(c, metric);           // the next metric line
  next_line(r, c);
  leaf(c, op("aten::randint"));  // the next batch's sampling, at the loop's top
  next_line(r, c);
  // A gather on such a line (logits[mask] for a metric) is no feature read.
  gi::OpInfo masked = feature_gather();
  masked.after_backward_line = true;
  leaf(c, masked);
  next_line(r, c);
  // Inside a module's call (a metric module) the module's rules hold.
  leaf(c, in_model(metric));
  const std::vector<std::string> want = {"+ops (no grad)[data]", "-", "STEP", "+forward[compute]", "-", "+backward[compute]", "-",
                                         "+ops after backward[compute]", "-", "+ops after backward[compute]", "-",
                                         "+ops (no grad)[data]", "-", "+ops after backward[compute]", "-", "+forward[compute]"};
  EXPECT_EQ(r.log, want);
}

// Work with grad on the loop's lines below its backward (a parameter's norm for the log, a
// metric on the logits) is the loop's own too, not a forward; but where a forward is open (a
// GAN's generator loss after its modules ran, below the discriminator's backward) it stays in it.
TEST(OpClassifier, GradOpsBelowTheBackwardLineAreTheLoopsUnlessAForwardIsOpen) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("aten::linear", true));
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  next_line(r, c);
  gi::OpInfo norm = op("aten::norm", true);
  norm.after_backward_line = true;
  leaf(c, norm);
  leaf(c, norm);  // the next parameter's: the same phase
  next_line(r, c);
  leaf(c, op("aten::randperm"));  // the next batch's sampling at the loop's top: data, not after backward
  next_line(r, c);
  gi::OpInfo generator = in_model(op("aten::linear", true));
  generator.after_backward_line = true;
  leaf(c, generator);
  gi::OpInfo loss = op("aten::binary_cross_entropy", true);
  loss.after_backward_line = true;
  leaf(c, loss);
  const std::vector<std::string> want = {"STEP", "+forward[compute]", "-", "+backward[compute]", "-", "+ops after backward[compute]",
                                         "-", "+ops (no grad)[data]", "-", "+forward[compute]"};
  EXPECT_EQ(r.log, want);
}

// A TGN reads its memory (a table it writes in place after each step) in a model method
// called directly, not through a module: the model's computation, not a feature read a
// prefetcher could take ahead of the write; a feature table never written stays data.
TEST(OpClassifier, AReadOfTheLoopsStateIsForwardNotAMaterialization) {
  Recorder r;
  gi::ClassifierOptions o = no_ops();
  o.gather_min_bytes = 1000;
  gi::OpClassifier c(r, o);
  gi::OpInfo features = feature_gather();
  features.gather_source_persistent = true;
  features.gather_source_rows = 5000;
  leaf(c, features);
  gi::OpInfo memory = features;
  memory.gather_source_state = true;
  leaf(c, memory);
  leaf(c, op("aten::clamp"));  // the method's next op, needing no grad: in that forward
  leaf(c, op("aten::linear", true));
  const std::vector<std::string> want = {"+materialize[data]", "MAT 10 2560", "-", "STEP", "+forward[compute]"};
  EXPECT_EQ(r.log, want);
}

// An inference loop over a DataLoader has no optimizer step: from its second __next__ on,
// each begins an iteration (and asks the tracer to select the loop). A training loop's
// __next__ never does: its optimizer's steps mark it.
TEST(OpClassifier, ALoopWithoutAnOptimizerIsMarkedAtItsDataLoadersNext) {
  const char* next = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  std::vector<bool> asked;
  for (int i = 0; i < 3; ++i) {
    c.on_start(op(next, false, gi::Scope::kUser));
    asked.push_back(c.take_loader_mark());
    c.on_end();
    leaf(c, no_grad(op("aten::linear", true)));
  }
  EXPECT_EQ(asked, (std::vector<bool>{false, true, true}));
  EXPECT_FALSE(c.take_loader_mark());  // read once
  const std::vector<std::string> want = {"+" + std::string(next) + "[user]", "-", "+forward (no grad)[compute]", "-", "STEP",
                                         "+" + std::string(next) + "[user]", "-", "+forward (no grad)[compute]", "-", "STEP",
                                         "+" + std::string(next) + "[user]", "-", "+forward (no grad)[compute]"};
  EXPECT_EQ(r.log, want);

  Recorder t;
  gi::OpClassifier tc(t, no_ops());
  for (int i = 0; i < 3; ++i) {
    tc.on_start(op(next, false, gi::Scope::kUser));
    EXPECT_FALSE(tc.take_loader_mark());
    tc.on_end();
    leaf(tc, op("aten::linear", true));
    tc.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    tc.on_end();
  }
  EXPECT_EQ(std::count(t.log.begin(), t.log.end(), "STEP"), 4);  // the first forward's, then each step's
}

// A loop with neither an optimizer nor a DataLoader's marks that updates its parameters by hand
// (p -= lr * p.grad after its backward): the update ends the iteration where the next forward
// begins (and asks the tracer to select the loop). The model's initialisation before any
// backward marks nothing, nor do the update's own no-grad ops (lr * p.grad, p.grad.zero_()).
TEST(OpClassifier, ALoopUpdatingItsParametersByHandIsMarkedAtItsNextForward) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  std::vector<int> asked;  // the op index at which the classifier asked, per pass
  leaf(c, no_grad(op("aten::uniform_", true)));  // nn.init
  EXPECT_FALSE(c.take_update_mark());
  for (int pass = 0; pass < 3; ++pass) {
    const gi::OpInfo ops[] = {op("aten::randint"),
                              op("aten::linear", true),
                              op("autograd::engine::evaluate_function: AddmmBackward0"),
                              no_grad(op("aten::mul")),
                              no_grad(op("aten::sub_", true)),
                              no_grad(op("aten::mul")),
                              no_grad(op("aten::sub_", true)),
                              no_grad(op("aten::zero_"))};
    for (int i = 0; i < 8; ++i) {
      c.on_start(ops[i]);
      if (c.take_update_mark()) asked.push_back(pass * 10 + i);
      c.on_end();
    }
  }
  EXPECT_EQ(asked, (std::vector<int>{11, 21}));  // the forward of the second and third pass
  EXPECT_FALSE(c.take_update_mark());            // read once
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "STEP"), 3);  // the first forward's, then two updates'
  // The second pass: its sampling still in the first iteration, the mark before its forward.
  const auto second = std::find(std::find(r.log.begin(), r.log.end(), "STEP") + 1, r.log.end(), "STEP");
  ASSERT_NE(second, r.log.end());
  EXPECT_EQ(*(second - 2), "+ops (no grad)[data]");
  EXPECT_EQ(*(second + 1), "+forward[compute]");

  // With an optimizer its steps mark, and an update by hand after them (an EMA of the weights)
  // marks nothing more.
  Recorder t;
  gi::OpClassifier tc(t, no_ops());
  for (int pass = 0; pass < 3; ++pass) {
    leaf(tc, op("aten::linear", true));
    EXPECT_FALSE(tc.take_update_mark());
    leaf(tc, op("autograd::engine::evaluate_function: AddmmBackward0"));
    tc.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    tc.on_end();
    leaf(tc, no_grad(op("aten::mul_", true)));
  }
  EXPECT_EQ(std::count(t.log.begin(), t.log.end(), "STEP"), 4);

  // A DataLoader's __next__ marks the loop it feeds: its updates by hand then add none.
  const char* next = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
  Recorder d;
  gi::OpClassifier dc(d, no_ops());
  for (int pass = 0; pass < 4; ++pass) {
    dc.on_start(op(next, false, gi::Scope::kUser));
    dc.on_end();
    leaf(dc, op("aten::linear", true));
    EXPECT_FALSE(dc.take_update_mark());
    leaf(dc, op("autograd::engine::evaluate_function: AddmmBackward0"));
    leaf(dc, no_grad(op("aten::sub_", true)));
  }
  EXPECT_EQ(std::count(d.log.begin(), d.log.end(), "STEP"), 4);  // the first forward's, then three __next__'s
}

// makemore's `p.data += -lr * p.grad` with grad enabled: the add_ writes a parameter through an
// alias needing no grad, and `p.data = ...` (torch 1.13 records its shallow-copy check, whose
// input needs grad) is no forward: the iteration ends at the next forward, not at the update.
TEST(OpClassifier, AnUpdateThroughDotDataIsAParameterUpdate) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  std::vector<int> asked;
  for (int pass = 0; pass < 3; ++pass) {
    gi::OpInfo write = op("aten::add_");
    write.writes_parameter = true;
    const gi::OpInfo ops[] = {op("aten::randint"),
                              op("aten::matmul", true),
                              op("autograd::engine::evaluate_function: MmBackward0"),
                              op("aten::mul"),
                              write,
                              op("aten::_has_compatible_shallow_copy_type", true),
                              op("aten::mul"),
                              op("aten::set_data", true)};
    for (int i = 0; i < 8; ++i) {
      c.on_start(ops[i]);
      if (c.take_update_mark()) asked.push_back(pass * 10 + i);
      c.on_end();
    }
  }
  EXPECT_EQ(asked, (std::vector<int>{11, 21}));  // the forward of the second and third pass
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "+forward[compute]"), 3);  // one per pass
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "+parameter update[compute]"), 6);
  // Without writes_parameter the add_ on an alias is any no-grad op.
  Recorder plain;
  gi::OpClassifier pc(plain, no_ops());
  leaf(pc, op("aten::add_"));
  EXPECT_EQ(std::count(plain.log.begin(), plain.log.end(), "+parameter update[compute]"), 0);
}

// The program's own stages (gnnprof.stage): one around the whole loop leaves the loop's rules in
// force inside it (the backward call's grad seed, no-grad work as the loop's own); one inside a
// model's call is part of its forward, which goes on around it (no second forward stage).
TEST(OpClassifier, TheProgramsStagesKeepTheLoopsRulesAndNestInTheForward) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  c.on_named_scope("train", true, "user", false, true);
  for (int i = 0; i < 2; ++i) {
    leaf(c, op("aten::randint"));  // the batch's sampling: ops (no grad), as at the loop's level
    c.on_module_enter(true);
    leaf(c, in_model(op("aten::linear", true)));
    c.on_named_scope("attention", true, "user", true, true);
    leaf(c, in_model(op("aten::softmax", true)));
    c.on_named_scope("attention", false);
    leaf(c, in_model(op("aten::linear", true)));
    c.on_module_exit(true);
    c.on_backward_call(true);
    leaf(c, op("aten::ones_like", true));  // the grad seed: backward's
    leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
    c.on_backward_call(false);
    c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
    c.on_end();
  }
  c.on_named_scope("train", false);
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "+forward[compute]"), 2);
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "+backward[compute]"), 2);
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "+ops (no grad)[data]"), 2);
  // attention opens right inside forward and closes before it.
  const auto fwd = std::find(r.log.begin(), r.log.end(), "+forward[compute]");
  ASSERT_NE(fwd, r.log.end());
  EXPECT_EQ(*(fwd + 1), "+attention[user]");
  EXPECT_EQ(*(fwd + 2), "-");
  EXPECT_EQ(r.depth, 0);
}

TEST(OpClassifier, CollectivesAreCommAndUnbalancedEndsAreHarmless) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  c.on_start(op("gloo:all_reduce"));
  leaf(c, op("c10d::allreduce_"));  // nested collective: one comm stage
  c.on_end();
  c.on_end();  // an end whose start came before the observer: ignored
  c.on_end();
  c.close_all();
  const std::vector<std::string> want = {"+comm[comm]", "-", "+comm wait[comm]", "-"};
  EXPECT_EQ(r.log, want);
  EXPECT_EQ(r.depth, 0);
}

// DDP's backward as torch 1.13 records it on the loop thread: the gradient allreduce is launched
// (c10d::allreduce_) inside AccumulateGrad and completes on a Gloo thread while later backward
// nodes run; after the last node the engine waits for it. Gaps between ops while a collective
// is in flight are "comm wait" (exposed); the overlapped part is not.
TEST(OpClassifier, GapsWhileACollectiveIsInFlightAreCommWait) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  auto ag = op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad");
  auto allreduce = op("c10d::allreduce_");
  allreduce.comm_bytes = 4096;
  leaf(c, op("aten::mm", true));
  c.on_start(op("autograd::engine::evaluate_function: MmBackward0"));
  c.on_end(false);
  c.on_start(ag);
  leaf(c, allreduce);
  c.on_end(/*comm_in_flight=*/true);   // the bucket's allreduce is in flight: gap is a wait
  c.on_start(op("autograd::engine::evaluate_function: TBackward0"));  // closes the wait
  c.on_end(true);                      // the engine's final wait for the allreduce
  c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
  c.on_end(false);
  const std::vector<std::string> want = {
      "STEP", "+forward[compute]", "-", "+backward[compute]",
      "+comm[comm]", "COMM 4096", "-",          // the launch, nested in AccumulateGrad
      "-", "+comm wait[comm]", "-",             // between AccumulateGrad and TBackward0,
      "+backward[compute]",                     // beside backward, not inside it
      "-", "+comm wait[comm]", "-",             // after the last node, until the optimizer
      "+optimizer[compute]", "-", "STEP"};
  EXPECT_EQ(r.log, want);
  EXPECT_EQ(r.depth, 0);
  EXPECT_TRUE(gi::is_async_collective_name("gloo:all_reduce"));
  EXPECT_TRUE(gi::is_async_collective_name("nccl:all_reduce"));
  EXPECT_FALSE(gi::is_async_collective_name("c10d::allreduce_"));
}

// dist.all_reduce(t): the c10d op launches the work and returns; Python then waits on it, and
// Gloo reports the work as started only on its own thread. The gap after a top-level
// collective is a wait whatever the in-flight count says.
TEST(OpClassifier, TheGapAfterATopLevelCollectiveIsCommWait) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("c10d::allreduce_"));
  leaf(c, op("aten::add"));
  const std::vector<std::string> want = {"+comm[comm]", "-", "+comm wait[comm]", "-", "+ops (no grad)[data]"};
  EXPECT_EQ(r.log, want);
  // Closing everything (thread or session end) while inside a collective leaves nothing open.
  Recorder r2;
  gi::OpClassifier c2(r2, no_ops());
  c2.on_start(op("sample", false, gi::Scope::kUser));
  c2.on_start(op("c10d::broadcast_"));
  c2.close_all();
  const std::vector<std::string> want2 = {"+sample[user]", "+comm[comm]", "-", "+comm wait[comm]", "-", "-"};
  EXPECT_EQ(r2.log, want2);
  EXPECT_EQ(r2.depth, 0);
}

// DDP launches a bucket's allreduce from AccumulateGrad's post hook, nested in the backward op,
// and Gloo may report the work started only after that op has ended (its worker thread starts
// the RecordFunction): the gap after the launching op is a wait even with nothing in flight yet.
TEST(OpClassifier, TheGapAfterAnOpThatLaunchedACollectiveIsCommWait) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  c.on_start(op("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", true));
  leaf(c, op("c10d::allreduce_"));
  c.on_end(false);  // the backend has not started the work yet
  leaf(c, op("aten::as_strided"));  // DDP copies the bucket back after its wait
  const std::vector<std::string> want = {"+backward[compute]", "+comm[comm]", "-", "-", "+comm wait[comm]"};
  ASSERT_GE(r.log.size(), want.size());
  EXPECT_EQ(std::vector<std::string>(r.log.begin(), r.log.begin() + 5), want);
  // Only the op that launched it: the next one ends without opening a wait.
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "+comm wait[comm]"), 1);
}

// A wait interrupts the phase's stage, not the phase: after it, message passing's gather of
// activations (a large host tensor, inside forward) is still forward, not a materialization,
// and a no-grad helper op is still forward's.
TEST(OpClassifier, AfterACommWaitTheInterruptedPhaseGoesOn) {
  Recorder r;
  gi::OpClassifier c(r, no_ops());
  leaf(c, op("aten::linear", true));
  c.on_start(op("aten::relu", true));
  c.on_end(/*comm_in_flight=*/true);
  auto gather = op("aten::index", true);
  gather.gather_source_bytes = 64u << 20;
  leaf(c, gather);
  leaf(c, op("aten::bincount"));
  const std::vector<std::string> want = {"STEP", "+forward[compute]", "-", "+comm wait[comm]", "-",
                                         "+forward[compute]"};
  EXPECT_EQ(r.log, want);
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "+materialize[data]"), 0);
}

// Other threads never record waits (their gaps are not the loop's critical path).
TEST(OpClassifier, OnlyTheLoopThreadRecordsCommWait) {
  Recorder r;
  gi::OpClassifier c(r, other_thread());
  c.on_start(op("aten::add"));
  c.on_end(true);
  c.close_all();
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "+comm wait[comm]"), 0);
}

// Linked use beside the program's own GNNPROF_STAGE / GNNPROF_STEP macros: no phase stages and
// no iteration marks from the observer, only the ops (which nest in the macros' stages).
TEST(OpClassifier, WithoutPhasesOnlyOpsAreStages) {
  Recorder r;
  gi::ClassifierOptions o;
  o.phases = false;
  o.marks_iterations = false;
  gi::OpClassifier c(r, o);
  leaf(c, op("aten::linear", true));
  auto gather = op("aten::index_select");
  gather.gather_source_bytes = 64u << 20;
  gather.gather_rows = 10;
  gather.gather_bytes = 5120;
  leaf(c, gather);  // message passing or a feature read: the program's stages say which
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_start(op("Optimizer.step#Adam.step", false, gi::Scope::kUser));
  leaf(c, op("aten::add_"));
  c.on_end();
  c.close_all();
  const std::vector<std::string> want = {"+aten::linear[op]", "-", "+aten::index_select[op]", "-",
                                         "+autograd::engine::evaluate_function: AddmmBackward0[op]",
                                         "-", "+aten::add_[op]", "-"};
  EXPECT_EQ(r.log, want);
  EXPECT_EQ(r.depth, 0);
}

namespace {

// One pass: forward, backward, an optimizer step.
void train_pass(gi::OpClassifier& c) {
  leaf(c, op("aten::linear", true));
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
  c.on_end();
}

}  // namespace

// Training in a thread of its own: its classifier starts as another thread's (no marks, phases
// end with their ops) and becomes the loop's at its first step (the observer decides); the main
// thread's, once another thread has the loop, stops marking, and a phase it held open ends.
TEST(OpClassifier, ATrainingThreadBecomesTheLoopAndTheMainThreadLetsGo) {
  Recorder r;
  gi::OpClassifier c(r, other_thread());
  leaf(c, op("aten::linear", true));
  leaf(c, op("autograd::engine::evaluate_function: AddmmBackward0"));
  EXPECT_EQ(r.depth, 0);  // each phase ended with its op
  c.set_loop_thread(true, true, true);  // at the step's start, as the observer does
  c.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
  c.on_end();
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "STEP"), 1);
  train_pass(c);
  EXPECT_EQ(std::count(r.log.begin(), r.log.end(), "STEP"), 2);

  Recorder m;
  gi::OpClassifier main(m, no_ops());
  leaf(main, op("aten::linear", true));  // a forward, spanning the gap after it
  EXPECT_EQ(m.depth, 1);                 // the first forward began iteration 1: its phase is open
  main.set_loop_thread(false, true, true);
  EXPECT_EQ(m.depth, 0);
  leaf(main, op("aten::linear", true));
  main.on_start(op("Optimizer.step#SGD.step", false, gi::Scope::kUser));
  main.on_end();
  EXPECT_EQ(std::count(m.log.begin(), m.log.end(), "STEP"), 1);  // the first forward's only
  EXPECT_EQ(m.depth, 0);
}
