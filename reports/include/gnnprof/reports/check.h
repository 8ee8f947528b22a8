// gnnprof/reports/check.h — the CI gate's policy over a comparison, and its outputs.
//
// A metric regresses only when it is significantly slower (the comparison's verdict: p below
// alpha and the ratio's CI excluding 1) *and* over its limit; with fewer than min_samples
// iterations on a side it is undecided rather than guessed (Google Benchmark's compare.py asks
// for 9 repetitions before trusting its U-test). Time on other threads is not checked: hidden
// time does not slow the loop. Every op is checked, under its phase's limit, but an op is one of
// dozens tested at once and of a few microseconds: it regresses only when its slowdown is also
// significant across the whole family of op tests (Holm's step-down at the comparison's alpha)
// and grew by at least op_floor of the baseline iteration. The text and Markdown list an op only
// when it regressed, under its phase; the JUnit file lists every metric.
//
//   CheckPolicy policy{0.05, {{"forward", 0.10}}};
//   const CheckResult r = apply_check(compare_profiles({base}, {cur}, {}), policy);
//   std::cout << check_text(r) << "\n" << check_summary(r) << "\n";
//   return r.regressions > 0 ? 1 : 0;
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gnnprof/reports/compare.h"

namespace gnnprof::reports {

struct CheckPolicy {
  double default_limit = 0.05;           ///< allowed slowdown (0.05 = 5 %) of every metric
  std::map<std::string, double> limits;  ///< per stage, over the default (an op: its phase's)
  double op_floor = 0.01;                ///< an op's median must grow by this share of the iteration
  double stage_floor = 0.01;             ///< a stage's too (and the time outside every stage)
  double alpha = 0.05;                   ///< the family-wise level of the op tests, and of the stage tests
  std::uint64_t min_samples = 9;         ///< iterations needed on each side to decide
  std::int64_t skip = -1;                ///< warm-up iterations the comparison left out (for the message; -1 detected)
};

/// kNegligible: over its limit and significant, but grown by under its floor of the iteration;
/// kNotSignificant: over its limit, but not significant across its family of tests (Holm).
enum class CheckStatus {
  kOk,
  kFaster,
  kSlowerWithinLimit,
  kRegression,
  kUndecided,
  kNegligible,
  kBaselineOnly,
  kCandidateOnly,
  kNotSignificant
};

/// "ok", "ok (faster)", "ok (slower, within limit)", "REGRESSION", "undecided", "ok (negligible)",
/// "ok (baseline only)", "ok (candidate only)", "ok (not significant, Holm)".
const char* check_status_text(CheckStatus s);

struct CheckRow {
  MetricComparison metric;
  double limit = 0;
  CheckStatus status = CheckStatus::kOk;
};

struct CheckResult {
  CheckPolicy policy;
  std::vector<CheckRow> rows;  ///< the comparison's loop metrics, in its (phase-first) order
  int regressions = 0, undecided = 0;
  std::size_t ops_checked = 0;
  std::size_t ops_negligible = 0;     ///< over their limit, but under the floor (kNegligible)
  std::size_t stages_negligible = 0;  ///< the same, for stages
  std::size_t ops_not_significant = 0;     ///< over their limit, but not significant as a family (kNotSignificant)
  std::size_t stages_not_significant = 0;  ///< the same, for stages
  std::size_t ops_one_side = 0;       ///< ops of one side only (not checked: an op replaced by another)
  bool iteration_undecided = false;   ///< too few iterations to decide even the iteration: no verdict
  /// About the inputs, from the caller (different programs, a failed run judged all the same):
  /// first among check_notes(), so in the Markdown and the JUnit's system-out too.
  std::vector<std::string> input_notes;
  /// The traced lines that got slower the most (verdict slower, by their growth per iteration),
  /// up to three, "file:line `code` +time per iteration (ratio)": named by a failing check.
  std::vector<std::string> slower_lines;
};

CheckResult apply_check(const Comparison& c, const CheckPolicy& policy);

/// The table (phases; an op only when it regressed) and its notes, without the summary line.
std::string check_text(const CheckResult& r);
/// What the table alone does not say, one sentence each: ops new in a regressed phase, a
/// regression nothing in the iteration explains, what "negligible" and "not significant"
/// left out, the one-profile-per-side caveat. The text and the Markdown both give them.
std::vector<std::string> check_notes(const CheckResult& r);
/// When the iteration passed but its ratio's 95% CI reaches past its limit: the slowdown this
/// check could not have seen, and what narrows it; "" otherwise.
std::string check_sensitivity(const CheckResult& r);
/// "PASS", "FAIL: 2 regression(s)", with the undecided count and what to do.
std::string check_summary(const CheckResult& r);
/// For $GITHUB_STEP_SUMMARY or a PR comment.
std::string check_markdown(const CheckResult& r, const std::string& baseline, const std::string& current);
/// JUnit XML for CI test-report viewers: one testcase per metric.
std::string check_junit(const CheckResult& r);

}  // namespace gnnprof::reports
