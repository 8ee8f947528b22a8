// Compute, then render: a Report is analysed once and every reporter renders what it holds
// (a reporter that analysed again would not show the planted figures below).
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "gnnprof/profile_io.h"
#include <map>

#include "gnnprof/reports/hierarchy.h"
#include "gnnprof/reports/html_reporter.h"
#include "gnnprof/reports/json_reporter.h"
#include "gnnprof/reports/kernel_table.h"
#include "gnnprof/reports/markdown_reporter.h"
#include "gnnprof/reports/reporter_factory.h"
#include "gnnprof/reports/text_reporter.h"
#include "test_support.h"

namespace gnnprof::reports {
namespace {

const std::string kTests = GNNPROF_TEST_DATA_DIR;

Profile gat() {
  auto p = read_profile_file(kTests + "/data/gat_profile.json");
  EXPECT_TRUE(p) << p.status().message();
  return p ? *p : Profile{};
}

TEST(Report, MakeReportComputesOnce) {
  const Profile p = gat();
  const Report r = make_report(p, {});
  EXPECT_EQ(r.profile, &p);
  EXPECT_EQ(r.analysis.iterations_used, analyze(p, {}).iterations_used);
  EXPECT_EQ(r.diagnostics.size(), diagnose(p, r.analysis).size());
  ASSERT_FALSE(r.hierarchy.phases.empty());
  EXPECT_EQ(r.hierarchy.phases.front().name, "backward");
}

TEST(Report, EveryReporterRendersTheReportItIsGiven) {
  const Profile p = gat();
  Report r = make_report(p, {});
  r.analysis.run_iteration_median_ns = 123456789;  // planted: "123 ms"
  r.diagnostics = {Diagnostic{"planted-rule", Severity::kInfo, "a planted diagnostic", {{"bytes", 4096.0}}}};
  r.hierarchy.phases.front().name = "planted phase";
  for (const char* format : {"text", "html", "markdown"}) {
    auto rep = make_reporter(format, {});
    ASSERT_TRUE(rep) << format;
    std::ostringstream out;
    ASSERT_TRUE((*rep)->render(r, out)) << format;
    const std::string s = out.str();
    EXPECT_NE(s.find("123 ms"), std::string::npos) << format;
    EXPECT_NE(s.find("a planted diagnostic"), std::string::npos) << format;
    EXPECT_NE(s.find("planted phase"), std::string::npos) << format;
  }
  std::ostringstream json;
  ASSERT_TRUE(JsonReporter().render(r, json));
  EXPECT_NE(json.str().find("\"planted-rule\""), std::string::npos);  // the report's diagnostics
}

TEST(Report, RenderingAProfileBuildsItsReport) {
  // The one-view convenience is the same as building the report first.
  const Profile p = gat();
  ReportOptions o;
  o.ops = true;
  std::ostringstream a, b;
  ASSERT_TRUE(TextReporter(o).render(p, a));
  ASSERT_TRUE(TextReporter(o).render(make_report(p, o), b));
  EXPECT_EQ(a.str(), b.str());
  EXPECT_NE(a.str().find("    SoftmaxBackward0"), std::string::npos);
}

// The Iterations section and the Analysis use the same iterations: the detected warm-up is
// listed, not pooled into the median.
TEST(Report, TheIterationsSectionLeavesOutTheWarmUpTheAnalysisLeavesOut) {
  Profile p;
  p.wall_ns = 1'000'000'000;
  for (std::uint64_t i = 0; i < 20; ++i) {
    IterationStats it;
    it.index = i;
    it.wall_ns = i == 0 ? 90'000'000 : i == 1 ? 40'000'000 : 10'000'000 + static_cast<std::int64_t>(i) * 100'000;
    it.stages = {{"forward", it.wall_ns / 2}};
    p.iterations.push_back(it);
  }
  StageStats forward;
  forward.name = "forward";
  forward.category = "compute";
  forward.hits = 20;
  p.stages = {forward};
  std::ostringstream out;
  ASSERT_TRUE(TextReporter({}).render(p, out));
  const std::string s = out.str();
  EXPECT_NE(s.find("2 warm-up iterations left out (detected: over 1.5x the median): 90.0 ms, 40.0 ms\n"
                   "18 iterations after the warm-up: median 11.1 ms"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("18 iterations analyzed (2 warm-up skipped, detected); median 11.1 ms"), std::string::npos) << s;
  EXPECT_NE(s.find("forward                   5.55 ms"), std::string::npos) << s;  // not 5.6 with the warm-up
}

TEST(Report, TheIterationsSectionSaysWhenItsMediansDoNotAddUp) {
  // Two stages that take turns being long: each one's median is the long time, the iteration's
  // is one long plus one short.
  Profile p;
  p.wall_ns = 1'000'000'000;
  for (std::uint64_t i = 0; i < 20; ++i) {
    IterationStats it;
    it.index = i;
    it.wall_ns = 11'000'000;
    const bool even = i % 2 == 0;
    it.stages = {{"sample", even ? 10'000'000 : 1'000'000}, {"forward", even ? 1'000'000 : 10'000'000}};
    p.iterations.push_back(it);
  }
  for (const char* n : {"sample", "forward"}) {
    StageStats st;
    st.name = n;
    st.category = n == std::string("sample") ? "data" : "compute";
    st.hits = 20;
    p.stages.push_back(st);
  }
  std::ostringstream out;
  ASSERT_TRUE(TextReporter({}).render(p, out));
  EXPECT_NE(out.str().find("(the medians of the rows nested in no other add up to 20.0 ms, not these iterations' median 11.0 ms:"),
            std::string::npos)
      << out.str();
  // A stage nested in another is not added: one that adds up with its parent says nothing.
  {
    Profile q = p;
    for (auto& it : q.iterations) it.stages = {{"sample", 11'000'000}, {"forward", 5'000'000}};
    q.stage_edges.push_back(StageEdge{"sample", "forward", 20, 100'000'000, 100'000'000});
    std::ostringstream nested;
    ASSERT_TRUE(TextReporter({}).render(q, nested));
    EXPECT_EQ(nested.str().find("add up to"), std::string::npos) << nested.str();
  }
  // Stages that add up say nothing.
  for (auto& it : p.iterations) it.stages = {{"sample", 1'000'000}, {"forward", 10'000'000}};
  std::ostringstream same;
  ASSERT_TRUE(TextReporter({}).render(p, same));
  EXPECT_EQ(same.str().find("medians add up"), std::string::npos) << same.str();
}

// Three nested phases (epoch > train_step > forward), ops recorded in every other iteration
// (iteration sampling), a data stage on another thread, and an op whose name needs escaping.
Profile nested_profile() {
  Profile p;
  p.wall_ns = 1000;
  auto stage = [](std::string n, std::string c, std::int64_t total, std::int64_t self) {
    StageStats s;
    s.name = std::move(n);
    s.category = std::move(c);
    s.hits = 4;
    s.total_ns = total;
    s.self_ns = self;
    s.mean_ns = total / 4;
    return s;
  };
  const std::string odd = "aten::x'<y";
  p.stages = {stage("epoch", "other", 400, 40),   stage("train_step", "other", 360, 40), stage("forward", "compute", 320, 220),
              stage("aten::mm", "op", 80, 80),    stage(odd, "op", 20, 20),              stage("load", "data", 120, 120)};
  p.stage_edges = {StageEdge{"epoch", "train_step", 4, 360, 40}, StageEdge{"train_step", "forward", 4, 320, 220},
                   StageEdge{"forward", "aten::mm", 2, 80, 80}, StageEdge{"forward", odd, 2, 20, 20}};
  for (std::uint64_t i = 0; i < 4; ++i) {
    IterationStats it;
    it.index = i;
    it.wall_ns = 100;
    it.stages = {{"epoch", 100}, {"train_step", 90}, {"forward", 80}};
    it.ops_observed = i % 2 == 0;
    if (it.ops_observed) {
      it.stages["aten::mm"] = 40;
      it.stages[odd] = 10;
    }
    it.other_threads = {{"load", 30}};
    p.iterations.push_back(it);
  }
  return p;
}

// The stage chart draws a nested phase right under its parent, marked, not as a bar beside it
// that the reader would add up with its parent's.
TEST(Report, TheStageChartPutsANestedPhaseUnderItsParent) {
  const Profile p = nested_profile();
  std::ostringstream out;
  ASSERT_TRUE(HtmlReporter({}).render(p, out));
  const std::string s = out.str();
  const auto chart = s.find("<svg id=stage-chart");
  ASSERT_NE(chart, std::string::npos);
  const auto epoch = s.find(">epoch</text>", chart), step = s.find(">\u21b3 train_step</text>", chart),
             fwd = s.find("\u21b3 forward</text>", chart);
  ASSERT_NE(epoch, std::string::npos) << s.substr(chart, 2000);
  ASSERT_NE(step, std::string::npos) << s.substr(chart, 2000);
  ASSERT_NE(fwd, std::string::npos) << s.substr(chart, 2000);
  EXPECT_LT(epoch, step);
  EXPECT_LT(step, fwd);
  EXPECT_NE(s.find("inside train_step (part of its bar)", chart), std::string::npos);
}

// Iteration sampling: a kernel's launches in unobserved iterations carry no op; the table
// splits them among the stages and ops of its observed launches, by their calls, marked "~".
TEST(KernelTable, UnobservedLaunchesJoinTheirKernelsObservedRows) {
  Profile p;
  p.kernels = {KernelStats{"sgemm", "forward", "aten::linear", 10, 100000, 9000, 11000},
               KernelStats{"sgemm", "backward", "MmBackward0", 30, 300000, 9000, 12000},
               KernelStats{"sgemm", "", "", 40, 400000, 9000, 15000},
               KernelStats{"my_custom_kernel", "", "", 5, 50000, 9000, 11000},
               KernelStats{"adam", "optimizer", "aten::_foreach_add_", 2, 20000, 9000, 11000}};
  const std::vector<KernelRow> plain = kernel_rows(p, false);
  ASSERT_EQ(plain.size(), 5u) << "a run that observed every iteration keeps its rows";
  const std::vector<KernelRow> rows = kernel_rows(p, true);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].op, "MmBackward0");
  EXPECT_EQ(rows[0].count, 60u);
  EXPECT_EQ(rows[0].total_ns, 600000);
  EXPECT_EQ(rows[0].max_ns, 15000);
  EXPECT_TRUE(rows[0].estimated);
  EXPECT_EQ(rows[1].op, "aten::linear");
  EXPECT_EQ(rows[1].count, 20u);
  EXPECT_EQ(rows[1].total_ns, 200000);
  EXPECT_EQ(rows[2].name, "my_custom_kernel") << "never seen with an op: kept";
  EXPECT_FALSE(rows[2].estimated);
  EXPECT_FALSE(rows[3].estimated);
  std::uint64_t calls = 0;
  for (const auto& r : rows) calls += r.count;
  EXPECT_EQ(calls, 87u) << "every launch counted once";
}

TEST(Hierarchy, NestedPhasesSampledOpsAndHiddenStages) {
  const Profile p = nested_profile();
  ReportOptions o;
  o.skip = 0;
  const Report r = make_report(p, o);
  const Hierarchy& h = r.hierarchy;
  std::map<std::string, const PhaseNode*> by;
  for (const auto& ph : h.phases) by[ph.name + (ph.hidden ? " (hidden)" : "")] = &ph;
  ASSERT_TRUE(by.count("epoch") && by.count("train_step") && by.count("forward") && by.count("load (hidden)"));
  EXPECT_EQ(by["train_step"]->parent, "epoch");
  EXPECT_EQ(by["forward"]->parent, "train_step");
  EXPECT_EQ(by["epoch"]->parent, "");
  // Ops were recorded in 2 of 4 iterations: their share is of forward's time in those two
  // (80 of 160), not of forward's time over all four (80 of 320).
  ASSERT_EQ(by["forward"]->ops.size(), 2u);
  EXPECT_EQ(by["forward"]->ops[0].name, "aten::mm");
  EXPECT_DOUBLE_EQ(by["forward"]->ops[0].share, 0.5);
  EXPECT_EQ(h.op_stages, 2u);

  std::ostringstream html, md;
  ASSERT_TRUE(HtmlReporter(o).render(r, html));
  ASSERT_TRUE(MarkdownReporter(o).render(r, md));
  const std::string s = html.str();
  // The icicle nests all three levels once, and the ops under forward by their sampled share.
  const auto a = s.find("id=icicle-data>") + 15;
  const auto tree = nlohmann::json::parse(s.substr(a, s.find("</script>", a) - a));
  ASSERT_EQ(tree["children"].size(), 1u) << tree.dump();
  const auto& epoch = tree["children"][0];
  EXPECT_EQ(epoch["n"], "epoch");
  const auto& step = epoch["children"][0];
  EXPECT_EQ(step["n"], "train_step");
  const auto& fwd = step["children"][0];
  EXPECT_EQ(fwd["n"], "forward");
  EXPECT_DOUBLE_EQ(fwd["children"][0]["v"].get<double>(), 40.0);  // 0.5 of forward's 80 per iteration
  EXPECT_EQ(fwd["children"][1]["n"], "aten::x'<y");
  // No name escapes its markup: the data block holds '<' as \u003c, attributes hold entities.
  EXPECT_EQ(s.find("aten::x'<y"), std::string::npos);
  EXPECT_NE(s.find("aten::x'\\u003cy"), std::string::npos);
  EXPECT_NE(s.find("aten::x&#39;&lt;y"), std::string::npos);
  EXPECT_EQ(md.str().find("<y"), std::string::npos);
  // The timeline's unobserved iterations: their time outside scopes is unknown, not unattributed.
  EXPECT_NE(s.find("iteration 1: wall 100 ns (torch ops not observed: iteration sampling);"), std::string::npos);
  EXPECT_NE(s.find("iteration 0: wall 100 ns;"), std::string::npos);
  EXPECT_NE(s.find("not observed (iteration sampling"), std::string::npos);  // the legend
}

// Set-up before the loop dominates the run's totals; "% iter" is each phase's share of the
// loop's iterations, and the table says how much of the run lies outside them.
TEST(Hierarchy, IterationSharesLeaveSetupOut) {
  Profile p = nested_profile();
  p.wall_ns = 10000;
  for (auto& it : p.iterations) it.begin_ns = 9000 + 100 * static_cast<std::int64_t>(it.index) - 400;
  StageStats setup;
  setup.name = "ops (no grad)";
  setup.category = "data";
  setup.hits = 1;
  setup.total_ns = setup.self_ns = 8000;
  p.stages.push_back(setup);
  for (auto& it : p.iterations) it.unattributed_ns = 10;
  ReportOptions o;
  o.skip = 0;
  const Report r = make_report(p, o);
  const Hierarchy& h = r.hierarchy;
  EXPECT_EQ(h.before_loop_ns, 8600);
  EXPECT_EQ(h.after_loop_ns, 1000);
  std::map<std::string, double> pct;
  for (const auto* ph : phase_rows(h)) pct[ph->name] = iteration_pct(*ph, h);
  EXPECT_DOUBLE_EQ(pct["epoch"], 100.0);
  EXPECT_DOUBLE_EQ(pct["forward"], 80.0);
  EXPECT_LT(pct["ops (no grad)"], 0);  // set-up only: no share of an iteration
  EXPECT_LT(pct["load"], 0);           // another thread's
  EXPECT_DOUBLE_EQ(unattributed_iteration_pct(h), 10.0);
  std::ostringstream text;
  ASSERT_TRUE(TextReporter(o).render(r, text));
  EXPECT_NE(text.str().find("8.60 us before the first iteration, 1.00 us after the last"), std::string::npos) << text.str();
}

// Under iteration sampling a phase that the op observer opens exists only in observed
// iterations: it is marked, its total covers those; an op's share of it is of its time there,
// not its run total (set-up before the first iteration made "1157% of ops (no grad)"). A phase
// that runs mostly before the loop (set-up's ops): its ops' shares are of its run time, as their
// Total is, and order them (argsort at "0.0%" above a 1 us op read as a contradiction).
TEST(Hierarchy, SampledPhasesAreMarkedAndTheirOpsSharesAreOfTheObservedIterations) {
  auto profile = [](std::int64_t phase_total, std::int64_t op_total) {
    Profile p;
    p.wall_ns = 10000;
    auto stage = [](std::string n, std::string c, std::int64_t total) {
      StageStats s;
      s.name = std::move(n);
      s.category = std::move(c);
      s.hits = 2;
      s.total_ns = s.self_ns = total;
      return s;
    };
    p.stages = {stage("DataLoader", "data", 400), stage("ops (no grad)", "data", phase_total),
                stage("aten::randint", "op", op_total)};
    p.stage_edges = {StageEdge{"ops (no grad)", "aten::randint", 1000, op_total, op_total}};
    for (std::uint64_t i = 0; i < 4; ++i) {
      IterationStats it;
      it.index = i;
      it.wall_ns = 1000;
      it.ops_observed = i % 2 == 0;
      it.stages = {{"DataLoader", 100}};
      if (it.ops_observed) it.stages.insert({{"ops (no grad)", 20}, {"aten::randint", 10}});
      p.iterations.push_back(it);
    }
    return p;
  };
  ReportOptions o;
  o.skip = 0;
  o.ops = true;
  const Profile p = profile(60, 30);  // 40 of the phase's 60 in the observed iterations
  const Report r = make_report(p, o);
  std::map<std::string, const PhaseNode*> by;
  for (const auto& ph : r.hierarchy.phases) by[ph.name] = &ph;
  ASSERT_TRUE(by.count("ops (no grad)") && by.count("DataLoader"));
  EXPECT_TRUE(by["ops (no grad)"]->sampled);
  EXPECT_FALSE(by["DataLoader"]->sampled);
  ASSERT_EQ(by["ops (no grad)"]->ops.size(), 1u);
  EXPECT_DOUBLE_EQ(by["ops (no grad)"]->ops[0].share, 0.5);  // 20 of the phase's 40 in the observed two
  std::ostringstream text;
  ASSERT_TRUE(TextReporter(o).render(r, text));
  EXPECT_NE(text.str().find("ops (no grad) *"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("* recorded in the 2 of 4 iterations whose torch ops were observed"), std::string::npos);
  EXPECT_NE(text.str().find("50.0% of ops (no grad)"), std::string::npos) << text.str();

  const Profile setup = profile(1000, 900);  // 960 of the phase's 1000 before the loop
  const Report s = make_report(setup, o);
  for (const auto& ph : s.hierarchy.phases)
    if (ph.name == "ops (no grad)") {
      ASSERT_EQ(ph.ops.size(), 1u);
      EXPECT_DOUBLE_EQ(ph.ops[0].share, 0.9);
    }
}

// An op that runs in several phases (aten::add in forward and in the optimizer) has one metric,
// the sum: its place names the phase holding most of it, and how its time splits when another
// phase holds 10 % or more.
TEST(Hierarchy, AnOpInSeveralPhasesSaysHowItsTimeSplits) {
  Profile p;
  for (const char* s : {"forward", "optimizer", "aten::add", "aten::mm"}) {
    StageStats st;
    st.name = s;
    st.category = std::string(s).rfind("aten::", 0) == 0 ? "op" : "compute";
    p.stages.push_back(st);
  }
  p.stage_edges = {StageEdge{"forward", "aten::add", 10, 620, 620}, StageEdge{"optimizer", "aten::add", 10, 380, 380},
                   StageEdge{"forward", "aten::mm", 10, 950, 950}, StageEdge{"optimizer", "aten::mm", 1, 50, 50}};
  const auto places = stage_places({&p});
  EXPECT_EQ(places.at("aten::add").phase, "forward");
  EXPECT_EQ(places.at("aten::add").phases, "forward 62%, optimizer 38%");
  EXPECT_EQ(places.at("aten::mm").phase, "forward");
  EXPECT_EQ(places.at("aten::mm").phases, "");  // 5 %: one phase's op
}

TEST(Report, TheHtmlPageEmbedsItsAssets) {
  std::ostringstream html;
  ASSERT_TRUE(HtmlReporter({}).render(nested_profile(), html));
  const std::string s = html.str();
  EXPECT_NE(s.find("<style>:root{--fg:"), std::string::npos);                  // reports/assets/report.css
  EXPECT_NE(s.find("<script>// Sortable tables: a click on a header"), std::string::npos);  // reports/assets/report.js
  EXPECT_NE(s.find("function render(r)"), std::string::npos);
}

// With traced lines the page opens with them, as the text report does, and a card names the
// heaviest line; without any, the Lines section (its hint) follows the stages.
TEST(Report, TheHtmlPageOpensWithTheLinesWhenThereAreSome) {
  const Profile with = gat();
  ASSERT_FALSE(with.lines.empty());
  std::ostringstream html;
  ASSERT_TRUE(HtmlReporter({}).render(with, html));
  std::string s = html.str();
  EXPECT_LT(s.find("<h2 id=lines>"), s.find("<h2>Where an iteration goes"));
  EXPECT_NE(s.find("id=top-line href='#lines' title='loss.backward()'><b>gat_train.py:85</b><span>heaviest line: 49.0% of main"),
            std::string::npos);
  Profile without = with;
  without.lines.clear();
  for (auto& it : without.iterations) it.lines.clear();
  std::ostringstream bare;
  ASSERT_TRUE(HtmlReporter({}).render(without, bare));
  s = bare.str();
  EXPECT_GT(s.find("<h2 id=lines>"), s.find("<h2>Stages"));
  EXPECT_EQ(s.find("id=top-line"), std::string::npos);
}

// The summary's heaviest lines leave out a line holding all of its function's time beside other
// traced functions (Lightning's `trainer.fit(...)` around its training_step): the callbacks' lines lead.
TEST(Report, HeaviestLinesLeaveOutALineThatHoldsTheOthers) {
  Profile p;
  auto line = [&](std::uint32_t n, const char* function, std::int64_t ms, const char* code) {
    LineStats l;
    l.file = "/w/train.py";
    l.line = n;
    l.function = function;
    l.code = code;
    l.hits = 1;
    l.total_ns = ms * 1000000;
    p.lines.push_back(l);
  };
  line(40, "<module>", 2000, "trainer.fit(Lit(), loader)");
  line(11, "Lit.training_step", 600, "loss = F.cross_entropy(self.net(x), y)");
  line(12, "Lit.training_step", 300, "self.log(\"loss\", loss)");
  line(30, "Net.forward", 250, "return self.net(x)");  // a one-line function's hot line, run 20 times: kept
  p.lines.back().hits = 20;
  const Report r = make_report(p, {});
  const std::string s = run_summary(r);
  EXPECT_NE(s.find("heaviest lines: train.py:11 `loss = F.cross_entropy(self.net(x), y)` 67% of Lit.training_step(), "
                   "train.py:12 `self.log(\"loss\", loss)` 33% of Lit.training_step(), train.py:30 `return self.net(x)` 100% "
                   "of Net.forward()"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("train.py:40"), std::string::npos) << s;
  // Alone, such a line is all there is to say.
  p.lines.resize(1);
  const Report one = make_report(p, {});
  EXPECT_NE(run_summary(one).find("heaviest lines: train.py:40"), std::string::npos) << run_summary(one);
  // A line that ran on a prefetcher's thread is said to be off the loop's.
  p.lines[0].off_loop_ns = p.lines[0].total_ns;
  EXPECT_NE(run_summary(make_report(p, {})).find("100% of <module>() (off the loop's thread)"), std::string::npos);
}

// A loop's header whose time is mostly its traced batch generator's (nested_ns): the
// generator's lines show that time, in the summary's heaviest lines and the HTML's KPI.
TEST(Report, HeaviestLinesLeaveOutALineMostlyHoldingTracedLinesUnderIt) {
  Profile p;
  auto line = [&](std::uint32_t n, const char* function, std::int64_t ms, const char* code) {
    p.lines.push_back(gnnprof::testing::train_py_line(function, n, code, 40, ms * 1000000));
  };
  line(20, "main", 900, "for x in batches(n):");
  p.lines.back().nested_ns = 850 * 1000000LL;
  line(21, "main", 400, "loss = model(x).sum()");
  line(5, "batches", 800, "ids = sample(n)");
  p.lines.back().caller = 0;
  line(6, "batches", 50, "yield feats[ids]");
  p.lines.back().caller = 0;
  const std::string s = run_summary(make_report(p, {}));
  EXPECT_EQ(s.find("train.py:20"), std::string::npos) << s;
  EXPECT_NE(s.find("heaviest lines: train.py:5 `ids = sample(n)` 94% of batches()"), std::string::npos) << s;
  std::ostringstream html;
  ASSERT_TRUE(HtmlReporter({}).render(p, html));
  EXPECT_NE(html.str().find("<b>train.py:5</b><span>heaviest line: 94.1% of batches</span>"), std::string::npos);
  // Under half of it nested: its own line.
  p.lines[0].nested_ns = 300 * 1000000LL;
  EXPECT_NE(run_summary(make_report(p, {})).find("heaviest lines: train.py:20"), std::string::npos);
}

TEST(Report, UnknownFormatNamesTheKnownOnes) {
  auto r = make_reporter("pdf", {});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().message(), "unknown report format \"pdf\" (known: text, json, trace, html, markdown)");
}

}  // namespace
}  // namespace gnnprof::reports

namespace gnnprof::reports {
namespace {

// torch.utils.checkpoint's recompute runs inside backward, through the op that replays it: its
// row follows backward's, indented, and the table says the indented time is in the row above.
TEST(Hierarchy, APhaseNestedThroughAnOpIsIndentedUnderIt) {
  Profile p;
  p.wall_ns = 1000000;
  auto stage = [](std::string n, std::string c, std::int64_t total, std::uint64_t hits) {
    StageStats s;
    s.name = std::move(n);
    s.category = std::move(c);
    s.hits = hits;
    s.total_ns = s.self_ns = total;
    return s;
  };
  const std::string op = "autograd::engine::evaluate_function: CheckpointFunctionBackward";
  p.stages = {stage("backward", "compute", 400000, 4), stage(op, "op", 200000, 16),
              stage("checkpoint recompute", "user", 150000, 16), stage("forward", "compute", 120000, 4)};
  p.stage_edges = {StageEdge{"backward", op, 16, 200000, 50000}, StageEdge{op, "checkpoint recompute", 16, 150000, 150000}};
  for (std::uint64_t i = 0; i < 4; ++i) {
    IterationStats it;
    it.index = i;
    it.wall_ns = 150000;
    it.stages = {{"backward", 100000}, {"checkpoint recompute", 37500}, {"forward", 30000}};
    p.iterations.push_back(it);
  }
  ReportOptions o;
  o.skip = 0;
  const Report r = make_report(p, o);
  const auto rows = phase_rows(r.hierarchy);
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[0]->name, "backward");
  EXPECT_EQ(rows[1]->name, "checkpoint recompute");
  EXPECT_EQ(rows[1]->parent, "backward");
  EXPECT_EQ(phase_depth(*rows[1], r.hierarchy), 1);
  EXPECT_EQ(rows[2]->name, "forward");
  std::ostringstream text;
  ASSERT_TRUE(TextReporter(o).render(r, text));
  EXPECT_NE(text.str().find("\n  checkpoint recompute  "), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("an indented stage runs inside the one above it"), std::string::npos);
}

}  // namespace
}  // namespace gnnprof::reports
