#include "gnnprof/reports/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

const char* check_status_text(CheckStatus s) {
  switch (s) {
    case CheckStatus::kOk: return "ok";
    case CheckStatus::kFaster: return "ok (faster)";
    case CheckStatus::kSlowerWithinLimit: return "ok (slower, within limit)";
    case CheckStatus::kRegression: return "REGRESSION";
    case CheckStatus::kUndecided: return "undecided";
    case CheckStatus::kNegligible: return "ok (negligible)";
    case CheckStatus::kBaselineOnly: return "ok (baseline only)";
    case CheckStatus::kCandidateOnly: return "ok (candidate only)";
    case CheckStatus::kNotSignificant: return "ok (not significant, Holm)";
  }
  return "ok";
}

namespace {

std::string warmup_words(std::int64_t skip) {
  return skip >= 0 ? fmt::format("skipping {}", skip) : std::string("the warm-up");
}

/// A stage's metric (the time outside every stage included), not the iteration's or an op's.
bool stage_metric(const MetricComparison& m) { return m.scope == Scope::kLoopThread && !m.op(); }

/// Holm's step-down over the op tests (`ops`) or the stage tests: the largest p-value that is
/// still significant at a family-wise `alpha` (-1 when none is).
double holm_threshold(const Comparison& c, double alpha, bool ops) {
  std::vector<double> p;
  for (const auto& m : c.metrics)
    if (m.verdict != Verdict::kBaselineOnly && m.verdict != Verdict::kCandidateOnly &&
        (ops ? m.op() && m.scope != Scope::kOtherThreads && m.scope != Scope::kWorkers : stage_metric(m)))
      p.push_back(m.p_value);
  std::sort(p.begin(), p.end());
  double last = -1;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] > alpha / static_cast<double>(p.size() - i)) break;
    last = p[i];
  }
  return last;
}

double limit_of(const MetricComparison& m, const CheckPolicy& policy) {
  auto lim = policy.limits.find(m.name);
  if (lim == policy.limits.end() && m.op()) lim = policy.limits.find(m.phase);
  return lim != policy.limits.end() ? lim->second : policy.default_limit;
}

}  // namespace

CheckResult apply_check(const Comparison& c, const CheckPolicy& policy) {
  CheckResult r;
  r.policy = policy;
  const double op_p = holm_threshold(c, policy.alpha, true);
  const double stage_p = holm_threshold(c, policy.alpha, false);
  std::int64_t iteration_ns = 0;
  for (const auto& m : c.metrics)
    if (m.scope == Scope::kLoop && m.statistic.empty()) iteration_ns = m.baseline_median_ns;
  for (const auto& m : c.metrics) {
    if (m.scope == Scope::kOtherThreads || m.scope == Scope::kWorkers) continue;  // hidden time does not slow the loop
    CheckRow row;
    row.metric = m;
    row.limit = limit_of(m, policy);
    // Like an op, a stage is one of many tests, and a share of a percent of the iteration is
    // within two runs' drift: it regresses when significant across them all and grown by its floor.
    const bool family = m.scope != Scope::kLoop;
    const double floor = m.op() ? policy.op_floor : policy.stage_floor;
    if (m.baseline_n < policy.min_samples || m.candidate_n < policy.min_samples) {
      row.status = CheckStatus::kUndecided;
      ++r.undecided;
      if (m.scope == Scope::kLoop) r.iteration_undecided = true;
    } else if (m.verdict == Verdict::kCandidateOnly && !m.op() && policy.limits.count(m.name) != 0 && m.candidate_median_ns > 0 &&
               static_cast<double>(m.candidate_median_ns) >= floor * static_cast<double>(iteration_ns)) {
      // A stage the program gates by name (--stage) that only the current run has: new work there
      // over its floor of the iteration regresses (it had none).
      row.status = CheckStatus::kRegression;
      ++r.regressions;
    } else if (m.verdict == Verdict::kBaselineOnly || m.verdict == Verdict::kCandidateOnly) {
      // An op replaced by another, a stage added: the iteration and the phases judge the change.
      row.status = m.verdict == Verdict::kBaselineOnly ? CheckStatus::kBaselineOnly : CheckStatus::kCandidateOnly;
      r.ops_one_side += m.op() ? 1 : 0;
    } else if (m.verdict == Verdict::kSlower && (!m.ratio || *m.ratio - 1.0 > row.limit)) {
      const bool not_significant = family && m.p_value > (m.op() ? op_p : stage_p);
      const bool negligible = family && static_cast<double>(m.delta_ns) < floor * static_cast<double>(iteration_ns);
      if (not_significant) {
        row.status = CheckStatus::kNotSignificant;
        ++(m.op() ? r.ops_not_significant : r.stages_not_significant);
      } else if (negligible) {
        row.status = CheckStatus::kNegligible;
        ++(m.op() ? r.ops_negligible : r.stages_negligible);
      } else {
        row.status = CheckStatus::kRegression;
        ++r.regressions;
      }
    } else if (m.verdict == Verdict::kSlower) {
      row.status = CheckStatus::kSlowerWithinLimit;
    } else if (m.verdict == Verdict::kFaster) {
      row.status = CheckStatus::kFaster;
    }
    r.ops_checked += m.op() ? 1 : 0;
    r.rows.push_back(std::move(row));
  }
  std::vector<const LineComparison*> slower;
  for (const auto& l : c.lines)
    if (l.metric.verdict == Verdict::kSlower && l.metric.delta_ns > 0 && l.candidate_line != 0) slower.push_back(&l);
  std::sort(slower.begin(), slower.end(),
            [](const LineComparison* x, const LineComparison* y) { return x->metric.delta_ns > y->metric.delta_ns; });
  for (std::size_t i = 0; i < slower.size() && i < 3; ++i) {
    const LineComparison& l = *slower[i];
    const std::string& code = l.candidate_code.empty() ? l.code : l.candidate_code;
    r.slower_lines.push_back(fmt::format("{}:{} `{}` +{} per iteration{}", base_name(l.file), l.candidate_line,
                                         code.size() > 48 ? code.substr(0, 45) + "..." : code, human_ns(l.metric.delta_ns),
                                         l.metric.ratio ? fmt::format(" ({:.2f}x)", *l.metric.ratio) : std::string()));
  }
  return r;
}

namespace {

/// An op only when it regressed; a stage unless it is 0 ns in the median iteration of both sides.
bool listed(const CheckRow& r) {
  if (r.metric.op()) return r.status == CheckStatus::kRegression;
  return !zero_on_both_sides(r.metric);
}

/// A row's name: an op's short name, indented under its phase, and the phase it ran in (each
/// one's share when several) (`indent`: the text's two spaces, the Markdown's non-breaking ones).
std::string label(const MetricComparison& m, const char* indent = "  ") {
  if (!m.op()) return m.name;
  const std::string& in = m.phases.empty() ? m.phase : m.phases;
  return indent + short_op_name(m.name) + (in.empty() ? "" : " (in " + in + ")");
}

/// The iteration's row (the median's), or nullptr.
const CheckRow* iteration_row(const CheckResult& r) {
  for (const auto& row : r.rows)
    if (row.metric.scope == Scope::kLoop && row.metric.statistic.empty()) return &row;
  return nullptr;
}

std::int64_t iteration_median(const CheckResult& r) {
  const CheckRow* row = iteration_row(r);
  return row != nullptr ? row->metric.baseline_median_ns : 0;
}

}  // namespace

std::string check_sensitivity(const CheckResult& r) {
  const CheckRow* row = iteration_row(r);
  if (row == nullptr || r.iteration_undecided || r.regressions > 0 || !row->metric.ci_high) return "";
  const double blind = *row->metric.ci_high - 1.0;  // slowdowns the data cannot rule out
  if (!(blind > row->limit)) return "";
  return fmt::format("sensitivity: the iteration's 95% CI reaches {:.3f}x, so a slowdown of up to {:.0f}% (over its {:.3g}% "
                     "limit) could pass unseen; {}",
                     *row->metric.ci_high, 100 * blind, 100 * row->limit,
                     runs_are_samples(row->metric) ? "more runs per side narrow it" : "3 or more runs per side, interleaved, narrow it");
}

std::vector<std::string> check_notes(const CheckResult& r) {
  std::vector<std::string> notes = r.input_notes;
  for (const auto& row : r.rows)
    if (row.metric.name == kUnattributed && row.status == CheckStatus::kRegression)
      notes.push_back("(unattributed) is the loop's time outside every stage: the traced lines show which new or slower one "
                      "it is");
  if (r.regressions > 0 && !r.slower_lines.empty()) {
    std::string list;
    for (const auto& l : r.slower_lines) list += (list.empty() ? "" : "; ") + l;
    notes.push_back("slower lines: " + list);
  }
  if (r.regressions > 0)
    notes.push_back("which lines: `gnnprof compare BASELINE.json CURRENT.json` lists the traced lines side by side, each "
                    "with its delta and verdict, and the ops under each phase (--ops)");
  // New in the current run, inside a phase that regressed: the likely cause, though an op of one
  // side only is not itself checked.
  std::set<std::string> regressed;
  for (const auto& row : r.rows)
    if (row.status == CheckStatus::kRegression && stage_metric(row.metric)) regressed.insert(row.metric.name);
  std::map<std::string, std::vector<const MetricComparison*>> fresh;
  for (const auto& row : r.rows)
    if (row.status == CheckStatus::kCandidateOnly && row.metric.op() && regressed.count(row.metric.phase))
      fresh[row.metric.phase].push_back(&row.metric);
  for (auto& [phase, ops] : fresh) {
    std::sort(ops.begin(), ops.end(), [](const MetricComparison* x, const MetricComparison* y) { return x->delta_ns > y->delta_ns; });
    std::string list;
    for (std::size_t i = 0; i < ops.size() && i < 5; ++i)
      list += fmt::format("{}{} (+{} per iteration)", i ? ", " : "", short_op_name(ops[i]->name), human_ns(ops[i]->delta_ns));
    notes.push_back(fmt::format("new in the current run's {}: {}{}", phase, list, ops.size() > 5 ? ", ..." : ""));
  }
  // A stage of the current run only is not checked on its own (a scope added around old work is
  // no slowdown): named with its time, since new work there shows only through the iteration.
  std::vector<const MetricComparison*> added;
  for (const auto& row : r.rows)
    if (row.status == CheckStatus::kCandidateOnly && stage_metric(row.metric) && row.metric.candidate_median_ns > 0)
      added.push_back(&row.metric);
  if (!added.empty()) {
    std::sort(added.begin(), added.end(),
              [](const MetricComparison* x, const MetricComparison* y) { return x->candidate_median_ns > y->candidate_median_ns; });
    const std::int64_t iteration = iteration_median(r);
    std::string list;
    for (std::size_t i = 0; i < added.size() && i < 5; ++i)
      list += fmt::format("{}{} {} per iteration{}", i ? ", " : "", added[i]->name, human_ns(added[i]->candidate_median_ns),
                          iteration > 0 ? fmt::format(" ({:.1f}% of the baseline's)", 100.0 * static_cast<double>(added[i]->candidate_median_ns) /
                                                                                         static_cast<double>(iteration))
                                        : std::string());
    notes.push_back(fmt::format("stage{} new in the current run, not checked on its own (the iteration judges it; "
                                "--stage NAME=PCT checks it): {}{}",
                                added.size() == 1 ? "" : "s", list, added.size() > 5 ? ", ..." : ""));
  }
  // The iteration regressed and nothing in it explains that: no stage, op or time outside them
  // got slower (even within its limit) and nothing new came in.
  bool iteration_regressed = false, explained = false;
  for (const auto& row : r.rows) {
    const auto& m = row.metric;
    if (row.status == CheckStatus::kRegression && m.scope == Scope::kLoop) iteration_regressed = true;
    if (m.scope == Scope::kLoop) continue;
    if (row.status == CheckStatus::kRegression || row.status == CheckStatus::kSlowerWithinLimit ||
        row.status == CheckStatus::kNegligible || row.status == CheckStatus::kNotSignificant ||
        (row.status == CheckStatus::kCandidateOnly && m.delta_ns > 0))
      explained = true;
  }
  if (iteration_regressed && !explained)
    notes.push_back("the iteration regressed but no stage, op or time outside them got slower and nothing new ran: the same "
                    "work took longer overall, as on a busier host (another tenant, a slower CPU clock); rerun, or compare "
                    "runs interleaved with gnnprof ab --repeat N");
  if (r.stages_negligible > 0)
    notes.push_back(fmt::format("negligible: over its limit and significant, but grown by under {:.3g}% of the iteration "
                                "(--stage-floor)",
                                100 * r.policy.stage_floor));
  if (r.stages_not_significant > 0)
    notes.push_back(fmt::format("not significant, Holm: over its limit, but not significant once corrected for the number "
                                "of stage tests (Holm's step-down at the family-wise {:.3g}%): a larger change or more "
                                "iterations would tell",
                                100 * r.policy.alpha));
  std::size_t zero = 0;
  for (const auto& row : r.rows) zero += !row.metric.op() && !listed(row) ? 1 : 0;
  if (zero > 0)
    notes.push_back(fmt::format("{} stage{} 0 ns in the median iteration of both sides not listed", zero, zero == 1 ? "" : "s"));
  if (r.ops_checked > 0) {
    const std::size_t tested = r.ops_checked - r.ops_one_side;
    std::string left;
    if (r.ops_negligible > 0)
      left += fmt::format("; {} over their limit left out as negligible (under {:.3g}% of the iteration)", r.ops_negligible,
                          100 * r.policy.op_floor);
    if (r.ops_not_significant > 0)
      left += fmt::format("; {} over their limit not significant across the {} op tests (Holm)", r.ops_not_significant, tested);
    if (r.ops_one_side > 0)
      left += fmt::format("; {} of one side only, not checked (the iteration and the phases judge an op replaced by another)",
                          r.ops_one_side);
    notes.push_back(fmt::format("{} torch op metrics checked too; only regressed ones are listed, under their phase{}", tested, left));
  }
  const bool runs = !r.rows.empty() && runs_are_samples(r.rows.front().metric);
  if (!runs && !r.iteration_undecided)
    notes.push_back(std::string(r.regressions > 0 ? "this verdict may be the host's: " : "") +
                    "fewer than 3 runs per side: the tests cover the iterations within each run, not the drift between runs; "
                    "a run slowed as a whole by another tenant fails too: give 3 or more runs per side (--baseline B1.json "
                    "--baseline B2.json --baseline B3.json C1.json C2.json C3.json), whose drift the tests then cover");
  if (runs)
    notes.push_back(fmt::format("{} baseline and {} current runs: the runs are the samples (Welch's t on their medians, "
                                "and its interval), so drift between runs is covered",
                                r.rows.front().metric.baseline_runs, r.rows.front().metric.candidate_runs));
  return notes;
}

std::string check_text(const CheckResult& r) {
  std::size_t w = 18;
  for (const auto& row : r.rows)
    if (listed(row)) w = std::max(w, label(row.metric).size() + 1);
  std::string out = fmt::format("{:<{}} {:>10} {:>10} {:>8} {:>17} {:>9} {:>7}  {}\n", "metric", w, "baseline", "current", "ratio",
                                "95% CI", "p", "limit", "status");
  for (const auto& row : r.rows) {
    if (!listed(row)) continue;
    const auto& m = row.metric;
    out += fmt::format("{:<{}} {:>10} {:>10} {:>8} {:>17} {:>9} {:>6.3g}%  {}\n", label(m), w, human_ns(m.baseline_median_ns),
                       human_ns(m.candidate_median_ns), ratio_text(m.ratio),
                       ci_text(m.ci_low, m.ci_high, CiStyle::kBracket), p_text(m.p_value), 100 * row.limit,
                       check_status_text(row.status));
  }
  for (const auto& n : check_notes(r)) out += "(" + n + ")\n";
  return out;
}

std::string check_summary(const CheckResult& r) {
  if (r.iteration_undecided)
    return fmt::format("UNDECIDED: fewer than {} complete iterations on a side (after {}): nothing is checked; "
                       "profile more iterations or lower --skip",
                       r.policy.min_samples, warmup_words(r.policy.skip));
  const bool one_run = !r.rows.empty() && !runs_are_samples(r.rows.front().metric);
  std::string s = r.regressions > 0 ? fmt::format("FAIL: {} regression(s){}", r.regressions,
                                                  one_run ? " (fewer than 3 runs per side: a slower host fails too)" : "")
                                    : std::string("PASS");
  if (const std::string blind = check_sensitivity(r); !blind.empty()) s += " (" + blind + ")";
  if (r.undecided > 0)
    s += fmt::format("; {} metric(s) undecided: fewer than {} iterations on a side (after {}): run longer", r.undecided,
                     r.policy.min_samples, warmup_words(r.policy.skip));
  return s;
}

std::string check_markdown(const CheckResult& r, const std::string& baseline, const std::string& current) {
  std::string md = fmt::format("### gnnprof check: {}\n\n", r.iteration_undecided ? "undecided" : r.regressions > 0 ? "regression" : "pass");
  md += "Baseline `" + baseline + "`, current `" + current +
        "`; regression = significant (p < " + fmt::format("{:.3g}", r.policy.alpha) + ", CI excludes 1) and slower than the limit; a stage or op also "
        "significant across its family of tests (Holm) and grown by its floor of the iteration; a stage gated by name "
        "(--stage) that only the current run has, from its floor of the iteration on.\n\n"
        "| metric | baseline | current | ratio | 95% CI | p | limit | status |\n|---|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& row : r.rows) {
    if (!listed(row)) continue;
    const auto& m = row.metric;
    const std::string name = label(m, "&nbsp;&nbsp;");
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {:.3g}% | {} |\n", name, human_ns(m.baseline_median_ns),
                      human_ns(m.candidate_median_ns), ratio_text(m.ratio), ci_text(m.ci_low, m.ci_high, CiStyle::kDash),
                      p_text(m.p_value), 100 * row.limit,
                      row.status == CheckStatus::kRegression ? "**REGRESSION**" : check_status_text(row.status));
  }
  md += "\n";
  for (const auto& n : check_notes(r)) md += "- " + n + "\n";
  return md + "\n" + check_summary(r) + "\n";
}

std::string check_junit(const CheckResult& r) {
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  std::size_t one_side = 0;
  for (const auto& row : r.rows)
    one_side += row.status == CheckStatus::kBaselineOnly || row.status == CheckStatus::kCandidateOnly ? 1 : 0;
  x += fmt::format("<testsuites><testsuite name=\"gnnprof.check\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n", r.rows.size(),
                   r.regressions, r.undecided + static_cast<int>(one_side));
  for (const auto& row : r.rows) {
    const auto& m = row.metric;
    const double secs = static_cast<double>(m.candidate_median_ns) / 1e9;
    x += fmt::format("  <testcase classname=\"gnnprof.{}\" name=\"{}\" time=\"{:.6f}\">", to_string(m.scope), escape_markup(m.name), secs);
    const std::string detail =
        fmt::format("{} {} -> {}, ratio {}, p {:.3g}, limit {:.3g}%", m.statistic.empty() ? "median" : m.statistic,
                    human_ns(m.baseline_median_ns), human_ns(m.candidate_median_ns), ratio_text(m.ratio), m.p_value, 100 * row.limit);
    if (row.status == CheckStatus::kRegression)
      x += "<failure message=\"" + escape_markup("regression: " + detail) + "\"/>";
    else if (row.status == CheckStatus::kUndecided)
      x += "<skipped message=\"" + escape_markup("too few iterations to decide: " + detail) + "\"/>";
    else if (row.status == CheckStatus::kBaselineOnly || row.status == CheckStatus::kCandidateOnly)
      x += "<skipped message=\"" +
           escape_markup(std::string(row.status == CheckStatus::kBaselineOnly ? "in the baseline only" : "in the current run only") +
                         ", not checked (the iteration and its phase judge it): " + detail) +
           "\"/>";
    x += "</testcase>\n";
  }
  if (const auto notes = check_notes(r); !notes.empty()) {
    x += "  <system-out>";
    for (const auto& n : notes) x += escape_markup(n) + "\n";
    x += "</system-out>\n";
  }
  return x + "</testsuite></testsuites>\n";
}

}  // namespace gnnprof::reports
