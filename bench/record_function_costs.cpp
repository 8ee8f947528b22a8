// record_function_costs — what torch's RecordFunction machinery costs one op, and what turning
// it off and on for a thread costs (the observer mutes the ops nested in a top-level op that
// way: instrument/src/torch_observer.cpp). Do-nothing callbacks with the observer's scopes and
// needsInputs; a 4-element at::add as the op.
//
//   OMP_NUM_THREADS=1 build/bench/record_function_costs --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <benchmark/benchmark.h>

#include <vector>

namespace {

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction&) { return nullptr; }
void on_end(const at::RecordFunction&, at::ObserverContext*) {}

/// The observer's two global callbacks while alive.
struct Callbacks {
  std::vector<at::CallbackHandle> handles;
  Callbacks() {
    handles.push_back(at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                                .needsInputs(true)
                                                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION})));
    handles.push_back(
        at::addGlobalCallback(at::RecordFunctionCallback(&on_start, &on_end).scopes({at::RecordScope::USER_SCOPE})));
  }
  ~Callbacks() {
    for (auto h : handles) at::removeCallback(h);
  }
};

void BM_OpNoCallback(benchmark::State& state) {
  at::Tensor a = at::ones({4}), b = at::ones({4});
  for (auto _ : state) benchmark::DoNotOptimize(at::add(a, b));
}
BENCHMARK(BM_OpNoCallback);

void BM_OpObserved(benchmark::State& state) {
  Callbacks cb;
  at::Tensor a = at::ones({4}), b = at::ones({4});
  for (auto _ : state) benchmark::DoNotOptimize(at::add(a, b));
}
BENCHMARK(BM_OpObserved);

void BM_OpMuted(benchmark::State& state) {
  Callbacks cb;
  at::Tensor a = at::ones({4}), b = at::ones({4});
  at::enableRecordFunction(false);
  for (auto _ : state) benchmark::DoNotOptimize(at::add(a, b));
  at::enableRecordFunction(true);
}
BENCHMARK(BM_OpMuted);

/// One mute and unmute, as around each top-level op whose nested ops go unobserved.
void BM_MuteUnmutePair(benchmark::State& state) {
  Callbacks cb;
  for (auto _ : state) {
    at::enableRecordFunction(false);
    at::enableRecordFunction(true);
  }
}
BENCHMARK(BM_MuteUnmutePair);

}  // namespace

BENCHMARK_MAIN();
