// torch_observer_overhead — what the torch op observer costs per training step, measured in
// one process with the modes interleaved (blocks of steps, many rounds), so that machine noise
// hits every mode alike:
//
//   none   RecordFunction off on this thread (at::enableRecordFunction(false)): plain torch
//   empty  an empty global callback with the observer's scopes and needsInputs: what torch's
//          RecordFunction machinery alone costs (the floor for any op observer)
//   empty-noin  the same without needsInputs (what copying the inputs adds)
//   user-only   an empty callback on USER_SCOPE alone (record_function / optimizer scopes):
//          what an observer costs while it does not observe ops
//   gnnprof  the observer (gnnprof::torch::observe_ops()) in a running session
//
// The observer cannot be removed once installed, so it is installed after the empty rounds;
// its baseline is "none" again, interleaved with it. Two workloads: a tiny MLP (ops of a few
// microseconds, the worst case) and a wider one (ops of tens of microseconds).
//
//   build/bench/torch_observer_overhead [rounds=30]
#include <ATen/record_function.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gnnprof/gnnprof.h"
#include "gnnprof/torch_observer.h"

namespace {

struct Workload {
  const char* name;
  int batch, in, hidden, classes;
};

struct Model {
  torch::nn::Sequential net;
  torch::optim::SGD opt;
  torch::Tensor x, y;
  explicit Model(const Workload& w)
      : net(torch::nn::Linear(w.in, w.hidden), torch::nn::ReLU(), torch::nn::Linear(w.hidden, w.hidden),
            torch::nn::ReLU(), torch::nn::Linear(w.hidden, w.classes)),
        opt(net->parameters(), torch::optim::SGDOptions(0.01)),
        x(torch::randn({w.batch, w.in})),
        y(torch::randint(0, w.classes, {w.batch})) {}
  void step() {
    opt.zero_grad();
    torch::nn::functional::cross_entropy(net->forward(x), y).backward();
    opt.step();
  }
};

std::unique_ptr<at::ObserverContext> empty_start(const at::RecordFunction&) { return nullptr; }
void empty_end(const at::RecordFunction&, at::ObserverContext*) {}

double block_us(Model& m, int steps) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) m.step();
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Interleaves "none" with `on` (set up / torn down around each block); per-round ratios.
template <class On, class Off>
std::vector<double> ratios(Model& m, int rounds, int steps, double& base_us, On on, Off off) {
  std::vector<double> r, base;
  for (int i = 0; i < rounds; ++i) {
    at::enableRecordFunction(false);
    const double b = block_us(m, steps);
    at::enableRecordFunction(true);
    on();
    const double c = block_us(m, steps);
    off();
    r.push_back(c / b);
    base.push_back(b / steps);
  }
  base_us = median(base);
  return r;
}

void report(const char* workload, const char* mode, double base_us, const std::vector<double>& r) {
  const double med = median(r);
  std::printf("%-34s %-10s plain %8.1f us/step   median ratio %.3f (%+.1f %%, +%.1f us/step)   p25..p75 %.3f..%.3f\n",
              workload, mode, base_us, med, 100 * (med - 1), base_us * (med - 1),
              [&] { auto v = r; std::sort(v.begin(), v.end()); return v[v.size() / 4]; }(),
              [&] { auto v = r; std::sort(v.begin(), v.end()); return v[3 * v.size() / 4]; }());
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(3, std::atoi(argv[1])) : 30;
  torch::manual_seed(0);
  at::set_num_threads(1);
  const Workload loads[] = {{"tiny MLP 64x32-64-64-4 (~us ops)", 64, 32, 64, 4},
                            {"wider MLP 1024x128-256-256-16", 1024, 128, 256, 16}};
  std::vector<Model> models;
  std::vector<int> steps;
  for (const Workload& w : loads) {
    models.emplace_back(w);
    // Blocks of ~20 ms.
    block_us(models.back(), 50);
    const double us = block_us(models.back(), 50) / 50;
    steps.push_back(std::max(5, static_cast<int>(20000 / us)));
  }
  using S = at::RecordScope;
  // Empty callbacks: with the observer's scopes and inputs; without inputs; user scopes only
  // (what an observer that sees only record_function / optimizer scopes would cost).
  struct Empty {
    const char* mode;
    bool inputs;
    bool function_scope;
  };
  const Empty empties[] = {{"empty", true, true}, {"empty-noin", false, true}, {"user-only", true, false}};
  constexpr int kEmpties = 3;
  std::vector<std::vector<double>> empty(2 * kEmpties), ours(2);
  std::vector<double> base_empty(2 * kEmpties), base_ours(2);
  for (int i = 0; i < 2; ++i) {
    for (int e = 0; e < kEmpties; ++e) {
      at::CallbackHandle h = 0;
      empty[i * kEmpties + e] = ratios(
          models[i], rounds, steps[i], base_empty[i * kEmpties + e],
          [&] {
            auto cb = at::RecordFunctionCallback(&empty_start, &empty_end).needsInputs(empties[e].inputs);
            h = at::addGlobalCallback(empties[e].function_scope ? cb.scopes({S::FUNCTION, S::USER_SCOPE})
                                                                : cb.scopes({S::USER_SCOPE}));
          },
          [&] { at::removeCallback(h); });
    }
  }
  gnnprof::Config cfg;
  cfg.output = "";
  cfg.write_at_stop = false;
  if (!gnnprof::start(cfg).is_ok() || !gnnprof::torch::observe_ops().is_ok()) {
    std::fprintf(stderr, "torch_observer_overhead: cannot start the session or the observer\n");
    return 1;
  }
  for (int i = 0; i < 2; ++i) ours[i] = ratios(models[i], rounds, steps[i], base_ours[i], [] {}, [] {});
  gnnprof::torch::close_thread();
  gnnprof::stop();
  std::printf("%d interleaved rounds of ~20 ms blocks per mode (torch %d.%d, 1 intra-op thread)\n", rounds, TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR);
  for (int i = 0; i < 2; ++i) {
    for (int e = 0; e < kEmpties; ++e) report(loads[i].name, empties[e].mode, base_empty[i * kEmpties + e], empty[i * kEmpties + e]);
    report(loads[i].name, "gnnprof", base_ours[i], ours[i]);
  }
  return 0;
}
