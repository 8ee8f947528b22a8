// Golden files: the text report (line table + stage table) and the JSON profile of a fixed
// Profile, and the JSON parsed back. GNNPROF_UPDATE_GOLDEN=1 rewrites the golden files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <tuple>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gnnprof/profile_io.h"
#include "gnnprof/reports/compare.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/html_reporter.h"
#include "gnnprof/reports/markdown_reporter.h"
#include "gnnprof/reports/merge.h"
#include "gnnprof/reports/text_reporter.h"
#include "gnnprof/reports/trace_reporter.h"

#ifndef GNNPROF_TEST_DATA_DIR
#error "GNNPROF_TEST_DATA_DIR must point at tests/"
#endif

namespace gnnprof {
namespace {

const std::string kTests = GNNPROF_TEST_DATA_DIR;

Profile fixed_profile() {
  Profile p;
  p.tool.version = "0.1.0";
  p.run.command = {"./train", "--epochs", "1"};
  p.run.pid = 4242;
  p.run.host = "golden-host";
  p.run.cwd = "/nonexistent-cwd";
  p.run.start_time = "2026-11-21T00:00:00Z";
  p.run.start_unix_ns = 1795219200000000000;
  p.run.start_monotonic_ns = 123456789;
  p.run.rank = 0;
  p.run.world_size = 2;
  p.clock = ClockInfo{"tsc", 2.5, 1000000000};
  p.collectors = {{"host", true, ""}, {"cupti", false, "no CUDA driver (cudaGetDeviceCount returned 35)"}};
  p.wall_ns = 2000000000;
  p.recorded_events = 4100;
  p.dropped_events = 3;
  p.threads = {{0, 100, "main", 4000, 3}, {1, 101, "prefetch", 100, 0}};
  auto stage = [](std::string n, std::string c, std::uint64_t hits, std::int64_t total, std::int64_t self) {
    StageStats s;
    s.name = std::move(n);
    s.category = std::move(c);
    s.hits = hits;
    s.total_ns = total;
    s.self_ns = self;
    s.mean_ns = total / static_cast<std::int64_t>(hits);
    s.p50_ns = s.mean_ns - 1000;
    s.p90_ns = s.mean_ns + 2000;
    s.max_ns = s.mean_ns * 2;
    s.pct_wall = 100.0 * static_cast<double>(total) / 2e9;
    s.by_thread = {{0, hits, total, self}};
    return s;
  };
  p.stages = {stage("forward", "compute", 100, 542000000, 542000000),
              stage("backward", "compute", 100, 436000000, 436000000),
              stage("materialize", "data", 100, 390000000, 390000000),
              stage("sample", "data", 100, 176000000, 176000000)};
  p.unattributed_ns = 2000000000 - 542000000 - 436000000 - 390000000 - 176000000;
  for (std::uint64_t i = 0; i < 3; ++i) {
    IterationStats it;
    it.index = i;
    it.begin_ns = 1000 + static_cast<std::int64_t>(i) * 20000000;
    it.wall_ns = 20000000;
    it.stages = {{"forward", 5420000}, {"backward", 4360000}, {"materialize", 3900000}, {"sample", 1760000}};
    it.other_threads = {{"sample", 100}};
    it.unattributed_ns = 20000000 - 5420000 - 4360000 - 3900000 - 1760000;
    p.iterations.push_back(it);
  }
  const std::string file = kTests + "/data/train_fixture.cpp";
  auto line = [&](std::uint32_t n, std::string code, std::string stage_name, std::uint64_t hits, std::int64_t total) {
    return LineStats{file, n, "train", std::move(code), std::move(stage_name), hits, total, total / 50, {}, 0, 0};
  };
  p.lines = {line(5, "auto blocks = sampler.sample(batch)", "", 100, 176000000),
             line(6, "auto x = features.gather(blocks.input_nodes())", "", 100, 390000000),
             line(8, "auto y_hat = model.forward(blocks, x)", "", 100, 542000000),
             line(9, "auto loss = criterion(y_hat, batch.labels)", "", 100, 12000000),
             line(10, "loss.backward()", "", 100, 436000000),
             line(11, "opt.step()", "", 100, 44000000),
             LineStats{"/missing/dir/loop.cpp", 42, "run", "x.copy_(y)", "h2d", 10, 5000000, 600000, {}, 0, 0}};
  p.transfers = {TransferStats{"h2d", file, 6, Direction::kH2D, HostMemory::kPinned, CopyMode::kAsync, 100, 3276800000, 130000000}};
  p.kernels = {KernelStats{"void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, 2, -2, true>"
                           "(at::cuda::detail::TensorInfo<float, unsigned int>, long)",
                           "forward", "aten::index_select", 200, 310000000, 1400000, 1700000},
               KernelStats{"ampere_sgemm_128x64_tn", "backward", "autograd::engine::evaluate_function: MmBackward0", 400,
                           120000000, 250000, 400000}};
  p.materializations = {MaterializationStats{"features", "materialize", file, 6, 100, 1126400, 3276800000}};
  p.counters = {CounterStats{"queue_depth", 100, 0, 2, 1.5, 2}};
  p.timeline_names = {"forward", "queue_depth"};
  p.timeline = {TimelineEvent{0, TimelineKind::kStage, 0, 1000, 5420000, 0}, TimelineEvent{1, TimelineKind::kCounter, 1, 2000, 0, 2}};
  p.timeline_dropped = 7;
  p.environment = EnvironmentInfo{2, "/usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3", "", 5};
  p.host_samples = {HostSample{0, 500000000, 1000000}, HostSample{1000000000, 520000000, 1900000000}};
  p.diagnostics = {Diagnostic{"pageable-h2d", Severity::kWarning, "example", {{"bytes", 1024.0}}}};
  return p;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The page's embedded CSS and JS (reports/assets) as placeholders: golden files hold the
/// page's own markup; the assets are checked in the browser (app.html_browser).
std::string without_assets(std::string html) {
  for (const auto& [open, close, mark] : {std::tuple<std::string, std::string, std::string>{"<style>", "</style>", "@CSS@"},
                                          {"<script>", "</script>", "@JS@"}})
    for (std::size_t a = 0; (a = html.find(open, a)) != std::string::npos;) {
      const std::size_t b = html.find(close, a);
      if (b == std::string::npos) break;
      html.replace(a + open.size(), b - a - open.size(), mark);
      a += open.size() + mark.size();
    }
  return html;
}

void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = kTests + "/golden/" + name;
  // The fixture path depends on the checkout; the golden file says @TESTS@.
  std::string normalized = name.size() > 5 && name.compare(name.size() - 5, 5, ".html") == 0 ? without_assets(actual) : actual;
  for (std::size_t pos; (pos = normalized.find(kTests)) != std::string::npos;)
    normalized.replace(pos, kTests.size(), "@TESTS@");
  if (const char* u = std::getenv("GNNPROF_UPDATE_GOLDEN"); u != nullptr && std::string(u) == "1") {
    std::ofstream(path) << normalized;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::string expected = read_all(path);
  ASSERT_FALSE(expected.empty()) << "missing golden file " << path;
  EXPECT_EQ(normalized, expected) << "golden mismatch: " << path << " (GNNPROF_UPDATE_GOLDEN=1 to accept)";
}

TEST(Golden, TextReport) {
  std::ostringstream out;
  ASSERT_TRUE(reports::TextReporter({}).render(fixed_profile(), out));
  expect_golden("report.txt", out.str());
}

TEST(Golden, LineTableHasLineProfilerLayout) {
  // Without copies or gathers at any line, the table is line_profiler's to the character.
  Profile plain = fixed_profile();
  plain.transfers.clear();
  plain.materializations.clear();
  std::ostringstream out;
  reports::TextReporter({}).render_line_table(plain, out);
  const std::string t = out.str();
  EXPECT_EQ(t.rfind("Timer unit: 1e-06 s\n\nTotal time: 1.6 s\n", 0), 0u) << t;
  EXPECT_NE(t.find("Function: train at line 5"), std::string::npos);
  EXPECT_NE(t.find("Line #      Hits         Time  Per Hit   % Time  Line Contents\n=============="), std::string::npos);
  // Line 7 is blank in the source and shown without numbers, as line_profiler does.
  EXPECT_NE(t.find("     7                                           \n"), std::string::npos);
  EXPECT_NE(t.find("(source missing: /missing/dir/loop.cpp"), std::string::npos);
  // gnnprof's columns go between % Time and Line Contents, only those with data.
  std::ostringstream with;
  reports::TextReporter({}).render_line_table(fixed_profile(), with);
  const std::string w = with.str();
  EXPECT_NE(w.find("Line #      Hits         Time  Per Hit   % Time             Copied   Gathered  Line Contents"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("     3.1 GiB pinned    3.1 GiB      GNNPROF_LINE(auto x = features.gather(blocks.input_nodes()));"),
            std::string::npos)
      << w;
  EXPECT_EQ(w.find("GPU"), std::string::npos);
}

TEST(Golden, JsonProfile) {
  const std::string json = profile_to_json(fixed_profile());
  expect_golden("profile.json", json);
  // Parsed back, it renders to the same document.
  auto back = profile_from_json(json, "golden");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(profile_to_json(*back), json);
}

TEST(Golden, ChromeTrace) {
  std::ostringstream out;
  ASSERT_TRUE(reports::TraceReporter().render(fixed_profile(), out));
  expect_golden("trace.json", out.str());
  // Parsed back: thread tracks named, the loop thread marked, a transfers track, events typed.
  auto j = nlohmann::json::parse(out.str());
  ASSERT_TRUE(j["traceEvents"].is_array());
  bool loop_track = false, transfers_track = false, complete = false, counter = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      const std::string n = e["args"]["name"];
      loop_track |= n.find("main (loop)") != std::string::npos;
      transfers_track |= n == "transfers";
    }
    complete |= e["ph"] == "X" && e["name"] == "forward" && e["cat"] == "compute" && e["dur"] == 5420.0;
    counter |= e["ph"] == "C" && e["name"] == "queue_depth";
  }
  EXPECT_TRUE(loop_track && transfers_track && complete && counter);
}

TEST(Golden, Markdown) {
  std::ostringstream out;
  ASSERT_TRUE(reports::MarkdownReporter({}).render(fixed_profile(), out));
  expect_golden("report.md", out.str());
}

TEST(Golden, Html) {
  std::ostringstream out;
  ASSERT_TRUE(reports::HtmlReporter({}).render(fixed_profile(), out));
  const std::string html = out.str();
  expect_golden("report.html", html);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // offline: nothing fetched
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("<div class=kpi id=total-time><b>2.00 s</b>"), std::string::npos);
  EXPECT_NE(html.find("<div class=kpi id=top-stage><b>forward</b><span>top stage: 27.1% of an iteration (median)</span>"), std::string::npos);
  EXPECT_NE(html.find("<code>dropped-events</code>"), std::string::npos);
}

TEST(Golden, ComparisonTextAndJson) {
  Profile a = fixed_profile(), b = fixed_profile();
  for (auto& it : b.iterations) it.wall_ns /= 2;
  reports::CompareOptions opt;
  opt.skip = 0;
  reports::Comparison c = reports::compare_profiles({a}, {b}, opt);
  c.baseline.label = "baseline";
  c.candidate.label = "candidate";
  expect_golden("comparison.txt", reports::comparison_text(c));
  expect_golden("comparison.json", reports::comparison_to_json(c));
  std::ostringstream html;
  ASSERT_TRUE(reports::render_comparison_html(c, &a, &b, html));
  EXPECT_NE(html.str().find("Side by side"), std::string::npos);
}

}  // namespace
}  // namespace gnnprof

namespace gnnprof {
namespace {

// Two ranks of one run: rank 1 samples 3x longer and rank 0 waits for it in "comm wait".
std::vector<Profile> merge_fixture() {
  std::vector<Profile> ranks;
  for (std::int64_t r = 0; r < 2; ++r) {
    Profile p = fixed_profile();
    p.run.rank = r;
    p.run.local_rank = r;
    p.run.pid = 4242 + r;
    p.run.run_id = "golden-run";
    p.run.start_monotonic_ns += r * 1500000;
    StageStats wait;
    wait.name = "comm wait";
    wait.category = "comm";
    p.stages.push_back(wait);
    for (IterationStats& it : p.iterations) {
      it.stages["sample"] = r == 1 ? 5280000 : 1760000;
      it.stages["comm wait"] = r == 1 ? 100000 : 3620000;
      it.other_threads["gloo:all_reduce"] = 4000000;
    }
    StageStats ar;
    ar.name = "gloo:all_reduce";
    ar.category = "comm";
    p.stages.push_back(ar);
    // GPU time per iteration below the 20 ms iteration (the report fixture's kernels span
    // more than its iterations).
    for (KernelStats& k : p.kernels) {
      k.total_ns /= 20;
      k.min_ns /= 20;
      k.max_ns /= 20;
    }
    ranks.push_back(p);
  }
  return ranks;
}

TEST(Golden, MergeTextJsonAndHtml) {
  reports::MergeOptions opt;
  opt.skip = 1;
  auto m = reports::merge_profiles(merge_fixture(), {"rank0.json", "rank1.json"}, opt);
  ASSERT_TRUE(m) << m.status().message();
  ASSERT_EQ(m->stragglers.size(), 1u);
  EXPECT_EQ(m->stragglers[0].rank, 1);
  EXPECT_EQ(m->stragglers[0].stage, "sample");
  // Kernel time per iteration: the fixture's kernel table over its complete iterations.
  const std::vector<Profile> ranks = merge_fixture();
  std::int64_t kernel_ns = 0;
  for (const KernelStats& k : ranks[0].kernels) kernel_ns += k.total_ns;
  std::size_t complete = 0;
  for (const IterationStats& it : ranks[0].iterations) complete += it.complete ? 1 : 0;
  ASSERT_GT(kernel_ns, 0);
  ASSERT_GT(complete, 0u);
  for (const auto& r : m->ranks) EXPECT_EQ(r.gpu_kernel_ns, kernel_ns / static_cast<std::int64_t>(complete));
  expect_golden("merge.txt", reports::merged_text(*m));
  expect_golden("merge.json", reports::merged_to_json(*m));
  std::ostringstream html;
  ASSERT_TRUE(reports::render_merged_html(*m, html));
  expect_golden("merge.html", html.str());
}

TEST(Golden, MergeShowsGpuKernelTimeOnlyWhenSomeRankHasKernels) {
  auto ranks = merge_fixture();
  for (Profile& p : ranks) p.kernels.clear();  // CPU-only run: no CUPTI kernel table
  auto cpu = reports::merge_profiles(ranks, {"rank0.json", "rank1.json"});
  ASSERT_TRUE(cpu) << cpu.status().message();
  EXPECT_EQ(reports::merged_text(*cpu).find("GPU kernels"), std::string::npos);
  EXPECT_EQ(cpu->ranks[0].gpu_kernel_ns, 0);
  ranks[1].kernels = merge_fixture()[1].kernels;  // only rank 1 saw its GPU
  auto gpu = reports::merge_profiles(ranks, {"rank0.json", "rank1.json"});
  ASSERT_TRUE(gpu) << gpu.status().message();
  EXPECT_NE(reports::merged_text(*gpu).find("GPU kernels, ms"), std::string::npos);
  EXPECT_EQ(gpu->ranks[0].gpu_kernel_ns, 0);
  EXPECT_GT(gpu->ranks[1].gpu_kernel_ns, 0);
}

TEST(Golden, MergeRefusesProfilesOfDifferentRunsOrDuplicateRanks) {
  auto ranks = merge_fixture();
  ranks[1].run.rank = 0;
  auto dup = reports::merge_profiles(ranks, {"a.json", "b.json"});
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.status().message(), "a.json and b.json are both rank 0: profiles of one run have distinct ranks");
  ranks = merge_fixture();
  ranks[1].run.run_id = "other";
  auto runs = reports::merge_profiles(ranks, {"a.json", "b.json"});
  ASSERT_FALSE(runs);
  EXPECT_EQ(runs.status().message(), "a.json (run golden-run) and b.json (run other) are from different runs");
  ranks = merge_fixture();
  ranks[0].run.rank.reset();
  EXPECT_FALSE(reports::merge_profiles(ranks, {"a.json", "b.json"}));
}

TEST(Golden, KernelNamesAreShortenedForTables) {
  using reports::short_kernel_name;
  EXPECT_EQ(short_kernel_name("void at::native::f<float, 2>(at::TensorInfo<float>, long)"), "f<float, 2>");
  EXPECT_EQ(short_kernel_name("void at::native::(anonymous namespace)::g<float>(int)"), "g<float>");
  EXPECT_EQ(short_kernel_name("void at::native::h<at::native::Op<float>>(int)"), "h<at::native::Op<float>>");
  EXPECT_EQ(short_kernel_name("ampere_sgemm_128x64_tn"), "ampere_sgemm_128x64_tn");
  EXPECT_EQ(short_kernel_name("sgemm(float const*, float*, int)"), "sgemm");
  EXPECT_EQ(short_kernel_name("a_very_long_kernel_name_indeed", 12), "a_very_lo...");
  EXPECT_EQ(short_kernel_name("(weird)"), "(weird)");  // nothing before the parenthesis: kept
  EXPECT_EQ(reports::short_op_name("autograd::engine::evaluate_function: MmBackward0"), "MmBackward0");
  EXPECT_EQ(reports::short_op_name("aten::mm"), "aten::mm");
}

}  // namespace
}  // namespace gnnprof

// The readable-reports layout on a recorded profile of an op-heavy script as users write it:
// samples/python/gat_train.py (--nodes 2000 --epochs 20) under `gnnprof run`, its timeline
// dropped and its paths made relative (tests/data/gat_profile.json). The line table reads the
// sample's source, so an edit to the sample shows here.
namespace gnnprof {
namespace {

Profile gat_profile() {
  auto p = read_profile_file(kTests + "/data/gat_profile.json");
  EXPECT_TRUE(p) << p.status().message();
  return p ? *p : Profile{};
}

reports::ReportOptions gat_options(bool ops) {
  reports::ReportOptions o;
  o.source_roots = {kTests + "/.."};
  o.ops = ops;
  return o;
}

std::string section(const std::string& text, const std::string& title) {
  const auto a = text.find("== " + title + " ==");
  if (a == std::string::npos) return "";
  const auto b = text.find("\n== ", a + 1);
  return text.substr(a, b == std::string::npos ? std::string::npos : b - a);
}

TEST(GoldenGat, TextShowsPhasesOnly) {
  std::ostringstream out;
  ASSERT_TRUE(reports::TextReporter(gat_options(false)).render(gat_profile(), out));
  const std::string t = out.str();
  expect_golden("gat_report.txt", t);
  const std::string stages = section(t, "Stages"), iters = section(t, "Iterations");
  for (const char* phase : {"forward ", "backward ", "optimizer ", "forward (no grad) "}) {
    EXPECT_NE(stages.find(std::string("\n") + phase), std::string::npos) << phase;
    EXPECT_NE(iters.find(std::string("\n") + phase), std::string::npos) << phase;
  }
  for (const std::string& s : {stages, iters}) {
    EXPECT_EQ(s.find("aten::"), std::string::npos) << s;
    EXPECT_EQ(s.find("Backward0"), std::string::npos) << s;
  }
  EXPECT_NE(stages.find("64 torch op stages run inside these; `gnnprof report --ops`"), std::string::npos);
  // Empty sections say why and what to do.
  EXPECT_NE(section(t, "GPU kernels").find("needs CUPTI"), std::string::npos);
  EXPECT_NE(section(t, "Transfers").find("none of this run's tensors moved"), std::string::npos);
  // The line table: the loop, with backward charged to the forward line.
  EXPECT_NE(t.find("Function: main at line 65"), std::string::npos);
  EXPECT_NE(t.find("out = model(x, adj)"), std::string::npos);
}

TEST(GoldenGat, OpsDrillDownUnderTheirPhase) {
  std::ostringstream out;
  ASSERT_TRUE(reports::TextReporter(gat_options(true)).render(gat_profile(), out));
  const std::string t = out.str();
  expect_golden("gat_report_ops.txt", t);
  // Under each phase, at most N ops and one "other ops" row, with the phase's name.
  std::istringstream in(section(t, "Stages"));
  std::string line, phase;
  std::map<std::string, int> op_rows;
  std::map<std::string, std::string> phase_of;
  while (std::getline(in, line)) {
    if (line.rfind("    ", 0) == 0) {
      ++op_rows[phase];
      const auto name_end = line.find(' ', 4);
      const std::string name = line.substr(4, name_end - 4);
      phase_of.emplace(name, phase);
      EXPECT_NE(line.find("% of " + phase), std::string::npos) << line;
    } else if (line.find(" compute ") != std::string::npos || line.find(" data ") != std::string::npos) {
      phase = line.substr(0, line.find("  "));
    }
  }
  for (const auto& [ph, n] : op_rows) EXPECT_LE(n, 11) << ph;
  EXPECT_EQ(phase_of["SoftmaxBackward0"], "backward");
  EXPECT_EQ(phase_of["aten::dropout"], "forward");
  EXPECT_EQ(phase_of["aten::add_"], "optimizer");
  EXPECT_EQ(t.find("autograd::engine::evaluate_function"), std::string::npos);
}

TEST(GoldenGat, HtmlAndMarkdown) {
  const Profile p = gat_profile();
  std::ostringstream html, md;
  ASSERT_TRUE(reports::HtmlReporter(gat_options(false)).render(p, html));
  ASSERT_TRUE(reports::MarkdownReporter(gat_options(false)).render(p, md));
  expect_golden("gat_report.html", html.str());
  expect_golden("gat_report.md", md.str());
  const std::string h = html.str();
  // Legends and charts list phases; ops sit folded in the stage table and in the icicle.
  const std::string legend = h.substr(h.find("<div class=legend>"), h.find("</div>", h.find("<div class=legend>")) - h.find("<div class=legend>"));
  EXPECT_EQ(legend.find("aten::"), std::string::npos) << legend;
  EXPECT_NE(legend.find("backward"), std::string::npos);
  const std::string chart = h.substr(h.find("<svg id=stage-chart"), h.find("</svg>", h.find("<svg id=stage-chart")) - h.find("<svg id=stage-chart"));
  EXPECT_EQ(chart.find("aten::"), std::string::npos);
  EXPECT_NE(h.find("<tr class='op' hidden><td class=l title=\"autograd::engine::evaluate_function: SoftmaxBackward0\">SoftmaxBackward0"),
            std::string::npos);
  EXPECT_NE(h.find("id=icicle-data>"), std::string::npos);
  EXPECT_NE(h.find("id=no-kernels>No GPU kernels: CUPTI was off"), std::string::npos);
  EXPECT_EQ(h.find("http://"), std::string::npos);
  EXPECT_EQ(h.find("https://"), std::string::npos);
  const std::string m = md.str();
  EXPECT_NE(m.find("<details><summary>backward: top 10 of 21 ops by self time</summary>"), std::string::npos) << m;
}

// A candidate whose softmax backward takes twice as long in every iteration (its phase, its
// line `loss.backward()` and the iteration grow by as much).
Profile gat_slower_softmax_backward() {
  Profile p = gat_profile();
  std::uint32_t backward_line = static_cast<std::uint32_t>(p.lines.size());
  for (std::uint32_t i = 0; i < p.lines.size(); ++i)
    if (p.lines[i].code == "loss.backward()") backward_line = i;
  EXPECT_LT(backward_line, p.lines.size()) << "the recorded profile has no loss.backward() line";
  for (auto& it : p.iterations) {
    auto f = it.stages.find("autograd::engine::evaluate_function: SoftmaxBackward0");
    if (f == it.stages.end()) continue;
    const std::int64_t extra = f->second;
    f->second += extra;
    it.stages["backward"] += extra;
    it.lines[backward_line] += extra;
    it.wall_ns += extra;
  }
  return p;
}

TEST(GoldenGat, CompareIsPhaseFirst) {
  reports::CompareOptions opt;
  opt.skip = 2;
  const reports::Comparison c = reports::compare_profiles({gat_profile()}, {gat_slower_softmax_backward()}, opt);
  const std::string phases = reports::comparison_text(c), ops = reports::comparison_text(c, true);
  expect_golden("gat_comparison.txt", phases);
  expect_golden("gat_comparison_ops.txt", ops);
  EXPECT_EQ(phases.find("aten::"), std::string::npos);
  EXPECT_NE(phases.find("torch op metrics (1 slower, 0 faster); `--ops` lists them under their phase. Slower most: "
                        "SoftmaxBackward0 in backward"),
            std::string::npos)
      << phases;
  EXPECT_NE(phases.find("the stage that got slower most: backward"), std::string::npos) << phases;
  EXPECT_NE(phases.find("inside it, most: SoftmaxBackward0"), std::string::npos) << phases;
  // With --ops, each op follows its phase.
  const auto backward = ops.find("\nbackward "), softmax = ops.find("\n  SoftmaxBackward0 "), forward = ops.find("\nforward ");
  ASSERT_NE(softmax, std::string::npos) << ops;
  ASSERT_NE(backward, std::string::npos) << ops;
  ASSERT_NE(forward, std::string::npos) << ops;
  EXPECT_LT(backward, softmax);
  EXPECT_TRUE(forward > softmax || forward < backward) << ops;
  std::ostringstream html;
  ASSERT_TRUE(reports::render_comparison_html(c, nullptr, nullptr, html));
  EXPECT_NE(html.str().find("1 slower</button>"), std::string::npos);
}

TEST(GoldenGat, MergeNamesTheOpInsideTheStragglersPhase) {
  std::vector<Profile> ranks{gat_profile(), gat_slower_softmax_backward()};
  for (std::int64_t r = 0; r < 2; ++r) {
    ranks[r].run.rank = r;
    ranks[r].run.world_size = 2;
    ranks[r].run.run_id = "gat";
  }
  auto m = reports::merge_profiles(ranks, {"rank0.json", "rank1.json"});
  ASSERT_TRUE(m) << m.status().message();
  ASSERT_EQ(m->stragglers.size(), 1u);
  EXPECT_EQ(m->stragglers[0].stage, "backward");
  EXPECT_EQ(m->stragglers[0].op, "autograd::engine::evaluate_function: SoftmaxBackward0");
  const std::string t = reports::merged_text(*m);
  EXPECT_NE(t.find("most of the difference is in stage \"backward\""), std::string::npos) << t;
  EXPECT_NE(t.find("inside it in SoftmaxBackward0"), std::string::npos) << t;
  for (const auto& s : m->stages) EXPECT_NE(s.rfind("aten::", 0), 0u) << s;
}

}  // namespace
}  // namespace gnnprof
