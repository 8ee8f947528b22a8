// profile_write — what writing a profile costs (a periodic flush writes it on the host's thread
// in threadless mode), by timeline size.
//
//   BM_ProfileToJson/N        profile_to_json of a profile with N timeline events (and a
//                             sample-like stage table): what a flush serializes
//   BM_TimelineAsJsonTree/N   the same N events as a json node per number, dumped with
//                             indent 2: how the timeline was written before stop 32, the anchor
#include <benchmark/benchmark.h>
#include <gnnprof/profile_io.h>

#include <nlohmann/json.hpp>
#include <string>

namespace {

gnnprof::Profile profile_with(std::size_t events) {
  gnnprof::Profile p;
  for (int i = 0; i < 100; ++i) p.timeline_names.push_back("aten::op_" + std::to_string(i));
  for (int i = 0; i < 60; ++i) {
    gnnprof::StageStats s;
    s.name = "stage_" + std::to_string(i);
    s.category = "compute";
    s.hits = 40;
    s.total_ns = 1000000 + i;
    p.stages.push_back(s);
  }
  p.timeline.reserve(events);
  std::int64_t t = 1000000000;
  for (std::size_t k = 0; k < events; ++k) {
    t += 4731 + static_cast<std::int64_t>(k % 97) * 13;
    p.timeline.push_back({static_cast<std::uint32_t>(k % 3), gnnprof::TimelineKind::kStage,
                          static_cast<std::uint32_t>(k % 100), t, 2000 + static_cast<std::int64_t>(k % 1013) * 7,
                          static_cast<double>(k % 4)});
  }
  return p;
}

void BM_ProfileToJson(benchmark::State& state) {
  const gnnprof::Profile p = profile_with(static_cast<std::size_t>(state.range(0)));
  std::size_t bytes = 0;
  for (auto _ : state) {
    std::string s = gnnprof::profile_to_json(p);
    bytes = s.size();
    benchmark::DoNotOptimize(s.data());
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ProfileToJson)->Arg(0)->Arg(7000)->Arg(100000)->Unit(benchmark::kMicrosecond);

void BM_TimelineAsJsonTree(benchmark::State& state) {
  const gnnprof::Profile p = profile_with(static_cast<std::size_t>(state.range(0)));
  using json = nlohmann::ordered_json;
  for (auto _ : state) {
    json thread = json::array(), kind = json::array(), name = json::array(), ts = json::array(), dur = json::array(),
         value = json::array();
    for (const auto& e : p.timeline) {
      thread.push_back(e.thread);
      kind.push_back(static_cast<int>(e.kind));
      name.push_back(e.name);
      ts.push_back(e.ts_ns);
      dur.push_back(e.dur_ns);
      value.push_back(e.value);
    }
    json tl = {{"names", p.timeline_names}, {"thread", std::move(thread)}, {"kind", std::move(kind)},
               {"name", std::move(name)},   {"ts_ns", std::move(ts)},       {"dur_ns", std::move(dur)},
               {"value", std::move(value)}};
    std::string s = tl.dump(2);
    benchmark::DoNotOptimize(s.data());
  }
}
BENCHMARK(BM_TimelineAsJsonTree)->Arg(0)->Arg(7000)->Arg(100000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
