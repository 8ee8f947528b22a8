// The external correlation ids the torch observer pushes for CUPTI (a CPU stand-in: the push is
// recorded instead of sent to CUPTI). A backward node's ops carry the forward line that built the
// node, not the line current on the thread running backward: on a GPU torch runs backward on
// autograd's device thread, which has no traced line. A closure step's own id covers no forward
// or backward in the iterations whose ops are not observed.
#include <gtest/gtest.h>
#include <ATen/record_function.h>
#include <torch/torch.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "external_id.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/gnnprof_c.h"
#include "gnnprof/torch_observer.h"

extern "C" void gnnprof_torch_set_correlation(void (*push)(unsigned long long), void (*pop)(void));

namespace {

// One iteration in 4 observed, from the first (the marks come from optimizer steps only).
const bool g_sampled = setenv("GNNPROF_TORCH_SAMPLE", "4", 1) == 0;

// Pushes and pops in order (0: a pop): a push followed directly by its pop is the innermost id,
// the one CUPTI gives the kernels launched inside.
std::mutex g_mu;
std::vector<unsigned long long> g_events;
int g_open = 0;

void record_push(unsigned long long id) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_events.push_back(id);
  ++g_open;
}

void record_pop() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_events.push_back(0);
  --g_open;
}

std::string site_name(std::uint32_t site) {
  char buf[256];
  return gnnprof_site_name(site, buf, sizeof(buf)) > 0 ? buf : "";
}

/// A session that writes nothing, the op observer on, its pushes and pops recorded afresh.
bool start_recording() {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_events.clear();
    g_open = 0;
  }
  gnnprof::Config cfg;
  cfg.write_at_stop = false;
  cfg.flush_at_exit = false;
  cfg.quiet = true;
  if (!gnnprof::start(cfg) || !gnnprof::torch::observe_ops()) return false;
  gnnprof_torch_set_correlation(record_push, record_pop);
  return true;
}

TEST(TorchCorrelation, BackwardNodesCarryTheirForwardLine) {
  ASSERT_TRUE(start_recording());
  const gnnprof_site_t fwd = gnnprof_line_site("train.py", 10, "train", "y = model(x)");
  const gnnprof_site_t bwd = gnnprof_line_site("train.py", 11, "train", "loss.backward()");
  torch::manual_seed(0);
  auto w = torch::randn({32, 16}, torch::requires_grad());
  for (int i = 0; i < 3; ++i) {
    auto x = torch::randn({64, 32});
    gnnprof_set_line(fwd);
    auto loss = torch::relu(torch::mm(x, w)).sum();
    gnnprof_set_line(bwd);
    loss.backward();
    gnnprof_set_line(0);
  }
  gnnprof_torch_set_correlation(nullptr, nullptr);
  (void)gnnprof::stop();

  std::lock_guard<std::mutex> lock(g_mu);
  EXPECT_EQ(g_open, 0) << "every push popped";
  int forward_ops = 0, backward_on_fwd = 0, backward_on_bwd = 0;
  for (std::size_t i = 0; i + 1 < g_events.size(); ++i) {
    const unsigned long long id = g_events[i];
    if (id == 0 || g_events[i + 1] != 0) continue;  // a pop, or not the innermost id
    const std::string op = site_name(gnnprof::instrument::external_op(id));
    const std::uint32_t line = gnnprof::instrument::external_line(id);
    const bool backward = op.find("Backward") != std::string::npos;
    if (!backward && op == "aten::mm" && line == fwd) ++forward_ops;
    if (backward && line == fwd) ++backward_on_fwd;
    if (backward && line == bwd) ++backward_on_bwd;
  }
  EXPECT_GE(forward_ops, 3) << "the forward ops carry their line";
  EXPECT_GE(backward_on_fwd, 3) << "the backward nodes carry the forward line";
  EXPECT_EQ(backward_on_bwd, 0) << "no backward node's kernels carry the line that ran backward";
}

// An optimizer step that runs a closure (LBFGS, Lightning's automatic optimization): in an
// iteration whose ops are not observed no op pushes an id of its own, so the step's id would be
// the innermost one for every kernel of the closure's forward and backward.
TEST(TorchCorrelation, AClosureStepsIdCoversNoUnobservedForward) {
  ASSERT_TRUE(g_sampled);
  ASSERT_TRUE(start_recording());
  torch::manual_seed(0);
  auto w = torch::randn({32, 16}, torch::requires_grad());
  constexpr int kSteps = 16;
  for (int i = 0; i < kSteps; ++i) {
    at::RecordFunction step(at::RecordScope::USER_SCOPE);
    step.before("Optimizer.step#SGD.step");
    auto loss = torch::relu(torch::mm(torch::randn({64, 32}), w)).sum();  // the closure
    loss.backward();
    torch::NoGradGuard no_grad;
    w.sub_(w.grad() * 0.01);
    w.grad().zero_();
  }
  gnnprof_torch_set_correlation(nullptr, nullptr);
  (void)gnnprof::stop();

  std::lock_guard<std::mutex> lock(g_mu);
  EXPECT_EQ(g_open, 0) << "every push popped";
  int step_ids = 0, forward_ids = 0;
  for (const unsigned long long id : g_events) {
    if (id == 0) continue;
    const std::string op = site_name(gnnprof::instrument::external_op(id));
    step_ids += op == "Optimizer.step#SGD.step";
    forward_ids += op == "aten::mm";
  }
  EXPECT_GE(forward_ids, 3) << "the observed iterations' forward ops push their own ids";
  EXPECT_LE(step_ids, kSteps / 4 + 2) << "the step pushes its id only where its closure's ops push theirs";
}

}  // namespace
