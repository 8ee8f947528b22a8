// The CI gate's policy (reports/check.h): regression = significantly slower and over the
// limit; too few iterations = undecided; hidden time unchecked; ops checked, listed only when
// they regress; the JUnit file names every metric.
#include <gtest/gtest.h>

#include "gnnprof/reports/check.h"

namespace gnnprof::reports {
namespace {

MetricComparison metric(std::string name, std::string verdict, double ratio, std::uint64_t n = 20, std::string scope = "loop_thread",
                        std::string category = "compute", std::string phase = "") {
  MetricComparison m;
  m.name = std::move(name);
  EXPECT_TRUE(from_string(scope, m.scope)) << scope;
  m.baseline_n = m.candidate_n = n;
  m.baseline_median_ns = 10000000;
  m.candidate_median_ns = static_cast<std::int64_t>(1e7 * ratio);
  m.delta_ns = m.candidate_median_ns - m.baseline_median_ns;
  m.ratio = ratio;
  m.ci_low = ratio * 0.98;
  m.ci_high = ratio * 1.02;
  m.p_value = verdict == "no significant change" ? 0.5 : 1e-4;
  EXPECT_TRUE(from_string(verdict, m.verdict)) << verdict;
  m.category = std::move(category);
  m.phase = std::move(phase);
  return m;
}

Comparison comparison() {
  Comparison c;
  c.metrics = {metric("iteration", "slower", 1.03, 20, "loop", ""),
               metric("forward", "slower", 1.20),
               metric("aten::mm", "slower", 1.50, 20, "loop_thread", "op", "forward"),
               metric("aten::add", "slower", 1.02, 20, "loop_thread", "op", "forward"),
               metric("backward", "faster", 0.80),
               metric("sample", "slower", 1.08, 20, "loop_thread", "data"),
               metric("optimizer", "slower", 1.50, 5),
               metric("load", "more", 3.0, 20, "other_threads", "data"),
               metric("h2d", "no significant change", 1.01)};
  return c;
}

CheckStatus status_of(const CheckResult& r, const std::string& name) {
  for (const auto& row : r.rows)
    if (row.metric.name == name) return row.status;
  ADD_FAILURE() << name << " not checked";
  return CheckStatus::kOk;
}

TEST(Check, RegressionIsSignificantAndOverTheLimit) {
  CheckPolicy policy;
  policy.default_limit = 0.05;
  policy.limits = {{"sample", 0.10}};
  const CheckResult r = apply_check(comparison(), policy);
  EXPECT_EQ(status_of(r, "iteration"), CheckStatus::kSlowerWithinLimit);  // +3 % < 5 %
  EXPECT_EQ(status_of(r, "forward"), CheckStatus::kRegression);
  EXPECT_EQ(status_of(r, "aten::mm"), CheckStatus::kRegression);          // ops are checked
  EXPECT_EQ(status_of(r, "aten::add"), CheckStatus::kSlowerWithinLimit);
  EXPECT_EQ(status_of(r, "backward"), CheckStatus::kFaster);
  EXPECT_EQ(status_of(r, "sample"), CheckStatus::kSlowerWithinLimit);     // its own 10 % limit
  EXPECT_EQ(status_of(r, "optimizer"), CheckStatus::kUndecided);          // 5 < 9 iterations
  EXPECT_EQ(status_of(r, "h2d"), CheckStatus::kOk);
  for (const auto& row : r.rows) EXPECT_NE(row.metric.name, "load");     // hidden time is not checked
  EXPECT_EQ(r.regressions, 2);
  EXPECT_EQ(r.undecided, 1);
  EXPECT_EQ(r.ops_checked, 2u);
}

// A failing check names the traced lines that got slower the most, so that a CI log says where
// without a `gnnprof compare` of its artifacts.
TEST(Check, AFailingCheckNamesTheSlowerLines) {
  Comparison c = comparison();
  auto line = [](std::string code, std::uint32_t at, double ratio, std::string verdict) {
    LineComparison l;
    l.file = "/src/train.py";
    l.function = "train";
    l.code = std::move(code);
    l.baseline_line = l.candidate_line = at;
    l.metric = metric("train.py:" + std::to_string(at), std::move(verdict), ratio, 20, "line");
    return l;
  };
  c.lines = {line("x = mfgs[0].srcdata['x']", 12, 1.5, "slower"), line("loss.backward()", 14, 1.1, "slower"),
             line("opt.step()", 15, 0.9, "faster"), line("y = model(x)", 13, 2.0, "no significant change")};
  const CheckResult r = apply_check(c, CheckPolicy{});
  ASSERT_GT(r.regressions, 0);
  ASSERT_EQ(r.slower_lines.size(), 2u);
  EXPECT_EQ(r.slower_lines[0], "train.py:12 `x = mfgs[0].srcdata['x']` +5.00 ms per iteration (1.50x)");
  std::string notes;
  for (const auto& n : check_notes(r)) notes += n + "\n";
  EXPECT_NE(notes.find("slower lines: train.py:12 `x = mfgs[0].srcdata['x']` +5.00 ms per iteration (1.50x); "
                       "train.py:14 `loss.backward()` +1.00 ms per iteration (1.10x)"),
            std::string::npos)
      << notes;
  c.metrics = {metric("iteration", "no significant change", 1.0, 20, "loop", "")};  // a pass names none
  for (const auto& n : check_notes(apply_check(c, CheckPolicy{}))) EXPECT_EQ(n.find("slower lines"), std::string::npos) << n;
}

TEST(Check, TheMeanIterationIsCheckedLikeTheIteration) {
  Comparison c;
  MetricComparison mean = metric(kMeanIteration, "slower", 1.40, 20, "loop", "");
  mean.statistic = "mean";
  c.metrics = {metric("iteration", "faster", 0.93, 20, "loop", ""), mean, metric("forward", "no significant change", 1.0)};
  const CheckResult r = apply_check(c, CheckPolicy{});
  EXPECT_EQ(status_of(r, "iteration"), CheckStatus::kFaster);
  EXPECT_EQ(status_of(r, kMeanIteration), CheckStatus::kRegression);  // an epoch takes 40 % longer
  EXPECT_EQ(r.regressions, 1);
}

TEST(Check, TextListsPhasesAndOnlyRegressedOps) {
  const CheckResult r = apply_check(comparison(), {});  // default 5 %: sample's +8 % regresses too
  const std::string t = check_text(r);
  EXPECT_NE(t.find("\n  aten::mm "), std::string::npos) << t;
  EXPECT_EQ(t.find("aten::add"), std::string::npos) << t;
  EXPECT_NE(t.find("(2 torch op metrics checked too; only regressed ones are listed, under their phase)"), std::string::npos);
  EXPECT_EQ(check_summary(r),
            "FAIL: 3 regression(s) (fewer than 3 runs per side: a slower host fails too); 1 metric(s) undecided: fewer than 9 "
            "iterations on a side (after the warm-up): run longer");
  const std::string md = check_markdown(r, "base.json", "cur.json");
  EXPECT_EQ(md.rfind("### gnnprof check: regression\n", 0), 0u);
  EXPECT_NE(md.find("| &nbsp;&nbsp;aten::mm (in forward) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **REGRESSION** |"), std::string::npos);
}

TEST(Check, JUnitHasEveryMetricWithFailuresAndSkips) {
  const CheckResult r = apply_check(comparison(), {});
  const std::string x = check_junit(r);
  EXPECT_NE(x.find("tests=\"8\" failures=\"3\" skipped=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("name=\"aten::add\""), std::string::npos);
  EXPECT_NE(x.find("<failure message=\"regression: median 10.0 ms -&gt; 15.0 ms"), std::string::npos) << x;
  EXPECT_NE(x.find("<skipped message=\"too few iterations to decide"), std::string::npos);
}

// Two runs of one command differ in a few of dozens of microsecond ops by chance: an op regresses
// only when it is significant across all the op tests (Holm) and grew by at least the floor's
// share of the iteration; under a phase's own limit, its ops take that limit.
TEST(Check, OpsNeedAMaterialAndFamilyWiseSignificantSlowdown) {
  Comparison c;
  c.metrics = {metric("iteration", "no significant change", 1.0, 20, "loop", ""), metric("forward", "slower", 1.04)};
  MetricComparison tiny = metric("aten::ones_like", "slower", 1.12, 20, "loop_thread", "op", "forward");
  tiny.baseline_median_ns = 6350;  // +0.7 us in a 10 ms iteration
  tiny.candidate_median_ns = 7080;
  tiny.delta_ns = 730;
  c.metrics.push_back(tiny);
  MetricComparison chance = metric("aten::mm", "slower", 1.50, 20, "loop_thread", "op", "forward");
  chance.p_value = 0.01;  // one of 20 op tests: not significant at 0.05 family-wise
  c.metrics.push_back(chance);
  for (int i = 0; i < 18; ++i) {
    MetricComparison same = metric("aten::op" + std::to_string(i), "no significant change", 1.0, 20, "loop_thread", "op", "forward");
    c.metrics.push_back(same);
  }
  CheckResult r = apply_check(c, {});
  EXPECT_EQ(status_of(r, "aten::ones_like"), CheckStatus::kNegligible);
  // +5 ms is no small change: it is not significant once the 20 tests are counted, and says so.
  EXPECT_EQ(status_of(r, "aten::mm"), CheckStatus::kNotSignificant);
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(r.ops_negligible, 1u);
  EXPECT_EQ(r.ops_not_significant, 1u);
  EXPECT_NE(check_text(r).find("1 over their limit left out as negligible (under 1% of the iteration); 1 over their limit "
                               "not significant across the 20 op tests (Holm)"),
            std::string::npos)
      << check_text(r);
  EXPECT_EQ(check_summary(r), "PASS");

  // Significant on its own (p = 1e-4 < 0.05 / 20) and 5 ms: a regression, unless its phase's
  // own limit allows it.
  c.metrics[3].p_value = 1e-4;
  r = apply_check(c, {});
  EXPECT_EQ(status_of(r, "aten::mm"), CheckStatus::kRegression);
  CheckPolicy loose;
  loose.limits = {{"forward", 0.60}};
  r = apply_check(c, loose);
  EXPECT_EQ(status_of(r, "aten::mm"), CheckStatus::kSlowerWithinLimit);
  EXPECT_EQ(r.regressions, 0);
}

// Two runs of one script: a small stage (1.3 -> 1.5 ms in a 42 ms iteration) is +15 % and
// significant within each run, yet under 1 % of the iteration: negligible, as such an op is.
// A stage of one side only (an op replaced by another) is listed, not judged; the time outside
// every stage is checked like a stage.
TEST(Check, StagesNeedAMaterialSlowdownAndOneSidedOnesAreListed) {
  Comparison c;
  c.metrics = {metric("iteration", "no significant change", 1.0, 20, "loop", ""), metric("forward", "no significant change", 1.0)};
  c.metrics[0].baseline_median_ns = 42000000;
  MetricComparison small = metric("materialize", "slower", 1.15, 20, "loop_thread", "data");
  small.baseline_median_ns = 1300000;
  small.candidate_median_ns = 1495000;
  small.delta_ns = 195000;
  c.metrics.push_back(small);
  c.metrics.push_back(metric("aten::index", "baseline only", 0.0, 20, "loop_thread", "op", "materialize"));
  c.metrics.push_back(metric("aten::index_select", "candidate only", 1.0, 20, "loop_thread", "op", "materialize"));
  c.metrics.push_back(metric("h2d", "candidate only", 1.0, 20, "loop_thread", "data"));
  MetricComparison outside = metric(kUnattributed, "slower", 1.4, 20, "loop_thread", "");
  outside.baseline_median_ns = 10000000;  // +4 ms: a sleep no stage covers
  outside.candidate_median_ns = 14000000;
  outside.delta_ns = 4000000;
  c.metrics.push_back(outside);
  CheckResult r = apply_check(c, {});
  EXPECT_EQ(status_of(r, "materialize"), CheckStatus::kNegligible);
  EXPECT_EQ(status_of(r, "aten::index"), CheckStatus::kBaselineOnly);
  EXPECT_EQ(status_of(r, "aten::index_select"), CheckStatus::kCandidateOnly);
  EXPECT_EQ(status_of(r, "h2d"), CheckStatus::kCandidateOnly);
  EXPECT_EQ(status_of(r, kUnattributed), CheckStatus::kRegression);
  EXPECT_EQ(r.regressions, 1);
  EXPECT_EQ(r.stages_negligible, 1u);
  EXPECT_EQ(r.ops_one_side, 2u);
  const std::string t = check_text(r);
  EXPECT_NE(t.find("h2d"), std::string::npos) << t;
  EXPECT_NE(t.find("ok (candidate only)"), std::string::npos) << t;
  EXPECT_NE(t.find("2 of one side only, not checked"), std::string::npos) << t;
  EXPECT_NE(t.find("grown by under 1% of the iteration"), std::string::npos) << t;
  EXPECT_NE(t.find("((unattributed) is the loop's time outside every stage"), std::string::npos) << t;

  CheckPolicy strict;
  strict.stage_floor = 0.001;
  EXPECT_EQ(status_of(apply_check(c, strict), "materialize"), CheckStatus::kRegression);
}

// Nothing left to compare (--skip past the run): no PASS.
TEST(Check, TooFewIterationsIsNoVerdict) {
  Comparison c;
  c.metrics = {metric("iteration", "no significant change", 1.0, 0, "loop", ""), metric("forward", "no significant change", 1.0, 0)};
  const CheckResult r = apply_check(c, {});
  EXPECT_TRUE(r.iteration_undecided);
  EXPECT_EQ(check_summary(r).rfind("UNDECIDED: fewer than 9 complete iterations on a side", 0), 0u) << check_summary(r);
  EXPECT_EQ(check_markdown(r, "a", "b").rfind("### gnnprof check: undecided\n", 0), 0u);
}

TEST(Check, PassWhenNothingRegresses) {
  Comparison c;
  c.metrics = {metric("iteration", "faster", 0.9, 20, "loop", "")};
  const CheckResult r = apply_check(c, {});
  EXPECT_EQ(r.regressions, 0);
  EXPECT_EQ(check_summary(r), "PASS");
  EXPECT_EQ(check_markdown(r, "a", "b").rfind("### gnnprof check: pass\n", 0), 0u);
}

// A pass whose iteration CI reaches past its limit says how large a slowdown could have passed
// unseen (3 noisy runs per side: a +25 % slowdown within the interval).
TEST(Check, APassSaysTheSlowdownItCouldNotSee) {
  Comparison c;
  c.metrics = {metric("iteration", "no significant change", 1.02, 20, "loop", "")};
  c.metrics[0].ci_low = 0.80;
  c.metrics[0].ci_high = 1.27;
  c.metrics[0].baseline_runs = c.metrics[0].candidate_runs = 3;
  const CheckResult r = apply_check(c, {});
  EXPECT_EQ(check_summary(r),
            "PASS (sensitivity: the iteration's 95% CI reaches 1.270x, so a slowdown of up to 27% (over its 5% limit) could "
            "pass unseen; more runs per side narrow it)");
  c.metrics[0].ci_high = 1.04;  // within the limit: nothing to say
  EXPECT_EQ(check_summary(apply_check(c, {})), "PASS");
}

// A stage only the current run has (new work in a torch.no_grad() block inside forward): named
// under the table with its share of the iteration, not checked on its own; gated by name
// (--stage), it regresses from its floor of the iteration on.
TEST(Check, ANewStageIsNamedAndRegressesWhereItIsGatedByName) {
  Comparison c;
  c.metrics = {metric("iteration", "no significant change", 1.02, 20, "loop", ""), metric("forward (no grad)", "candidate only", 1.0)};
  c.metrics[1].baseline_median_ns = 0;
  c.metrics[1].candidate_median_ns = 2820000;
  c.metrics[1].delta_ns = 2820000;
  const CheckResult plain = apply_check(c, {});
  EXPECT_EQ(status_of(plain, "forward (no grad)"), CheckStatus::kCandidateOnly);
  EXPECT_NE(check_text(plain).find("(stage new in the current run, not checked on its own (the iteration judges it; --stage "
                                   "NAME=PCT checks it): forward (no grad) 2.82 ms per iteration (28.2% of the baseline's))"),
            std::string::npos)
      << check_text(plain);
  CheckPolicy gated;
  gated.limits["forward (no grad)"] = 0.05;
  EXPECT_EQ(status_of(apply_check(c, gated), "forward (no grad)"), CheckStatus::kRegression);
  c.metrics[1].candidate_median_ns = 50000;  // under 1 % of the 10 ms iteration
  EXPECT_EQ(status_of(apply_check(c, gated), "forward (no grad)"), CheckStatus::kCandidateOnly);
}

}  // namespace
}  // namespace gnnprof::reports

namespace gnnprof::reports {
namespace {

// An op new in the current run inside a regressed phase is named beside it (the likely cause),
// and is a skipped JUnit testcase; an iteration that regresses with no stage says so.
TEST(Check, NewOpsInARegressedPhaseAreNamedAndAnIterationAloneSaysSo) {
  Comparison c;
  c.metrics = {metric("iteration", "slower", 1.40, 20, "loop", ""), metric("forward", "slower", 1.50),
               metric("aten::matmul", "candidate only", 1.0, 20, "loop_thread", "op", "forward")};
  c.metrics[2].baseline_median_ns = 0;
  c.metrics[2].candidate_median_ns = c.metrics[2].delta_ns = 3720000;
  CheckPolicy policy;
  policy.default_limit = 0.05;
  const CheckResult r = apply_check(c, policy);
  const std::string text = check_text(r);
  EXPECT_NE(text.find("(new in the current run's forward: aten::matmul (+3.72 ms per iteration))"), std::string::npos) << text;
  // The Markdown for the PR says the same, with the one-run caveat.
  const std::string md = check_markdown(r, "a.json", "b.json");
  EXPECT_NE(md.find("- new in the current run's forward: aten::matmul (+3.72 ms per iteration)"), std::string::npos) << md;
  EXPECT_NE(md.find("- this verdict may be the host's: fewer than 3 runs per side:"), std::string::npos) << md;
  EXPECT_NE(md.find("- which lines: `gnnprof compare BASELINE.json CURRENT.json`"), std::string::npos) << md;
  EXPECT_EQ(text.find("no stage, op or time outside them"), std::string::npos) << text;
  // A stage new in the current run explains it too.
  Comparison added;
  added.metrics = {metric("iteration", "slower", 1.40, 20, "loop", ""), metric("sample", "candidate only", 1.0)};
  added.metrics[1].delta_ns = 4000000;
  EXPECT_EQ(check_text(apply_check(added, policy)).find("no stage, op or time outside them"), std::string::npos);
  const std::string junit = check_junit(r);
  EXPECT_NE(junit.find("skipped=\"1\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("in the current run only, not checked"), std::string::npos) << junit;

  Comparison alone;
  alone.metrics = {metric("iteration", "slower", 1.40, 20, "loop", ""), metric("forward", "no significant change", 1.01)};
  const std::string t = check_text(apply_check(alone, policy));
  EXPECT_NE(t.find("the iteration regressed but no stage, op or time outside them got slower"), std::string::npos) << t;
  alone.metrics[0].statistic = "mean";
  EXPECT_NE(check_junit(apply_check(alone, policy)).find("regression: mean 10.0 ms -&gt; 14.0 ms"), std::string::npos);
}

}  // namespace
}  // namespace gnnprof::reports
