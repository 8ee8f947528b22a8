// The external correlation ids the torch observer pushes for CUPTI (a CPU stand-in: the push is
// recorded instead of sent to CUPTI). A backward node's ops carry the forward line that built the
// node, not the line current on the thread running backward: on a GPU torch runs backward on
// autograd's device thread, which has no traced line.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <mutex>
#include <string>
#include <vector>

#include "external_id.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/gnnprof_c.h"
#include "gnnprof/torch_observer.h"

extern "C" void gnnprof_torch_set_correlation(void (*push)(unsigned long long), void (*pop)(void));

namespace {

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

TEST(TorchCorrelation, BackwardNodesCarryTheirForwardLine) {
  gnnprof::Config cfg;
  cfg.write_at_stop = false;
  cfg.flush_at_exit = false;
  cfg.quiet = true;
  ASSERT_TRUE(gnnprof::start(cfg));
  ASSERT_TRUE(gnnprof::torch::observe_ops());
  gnnprof_torch_set_correlation(record_push, record_pop);
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

}  // namespace
