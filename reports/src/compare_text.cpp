// compare_text.cpp — the comparison as text: phases and one line on their ops (--ops: each op
// under its phase), the line tables side by side, and the one-line summary of what got slower.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/compare.h"
#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

std::string mean_summary(const Comparison& c) {
  if (c.metrics.size() < 2 || c.metrics[1].statistic != "mean") return "";
  const MetricComparison& med = c.metrics.front();
  const MetricComparison& mean = c.metrics[1];
  // The mean's "no significant change" against a significant median is the mean's lesser power,
  // not slow iterations.
  if (mean.verdict == med.verdict || (mean.verdict != Verdict::kFaster && mean.verdict != Verdict::kSlower)) return "";
  const char* side = mean.delta_ns > med.delta_ns ? "the candidate" : "the baseline";
  return fmt::format("The mean iteration (an epoch's time per iteration, slow iterations included) says {}: {} -> {} (x{:.3f}), "
                     "where the median says {}: {} has slow iterations that the median leaves out",
                     to_string(mean.verdict), human_ns(mean.baseline_median_ns), human_ns(mean.candidate_median_ns),
                     mean.ratio ? *mean.ratio : 0.0, to_string(med.verdict), side);
}

std::string passes_summary(const Comparison& c) {
  if (!c.baseline_passes || !c.candidate_passes || c.metrics.empty()) return "";
  const double a = *c.baseline_passes, b = *c.candidate_passes;
  if (a <= 0 || b <= 0 || (a < 1.5 * b && b < 1.5 * a)) return "";
  // Per pass from the means: the median of 4-pass iterations is ~4 mean passes, slow ones
  // included, where a 1-pass median leaves them out.
  const MetricComparison& it = c.metrics.size() > 1 && c.metrics[1].statistic == "mean" ? c.metrics[1] : c.metrics.front();
  const double pa = static_cast<double>(it.baseline_median_ns) / a, pb = static_cast<double>(it.candidate_median_ns) / b;
  return fmt::format("The sides' iterations hold different work: {:.1f} backward passes each in the baseline, {:.1f} in the "
                     "candidate (gradient accumulation: an iteration is one optimizer step). Per backward pass the {} "
                     "iteration is {} -> {} (x{:.3f}); the per-iteration rows compare unlike iterations.",
                     a, b, it.statistic == "mean" ? "mean" : "median", human_ns(static_cast<std::int64_t>(pa)),
                     human_ns(static_cast<std::int64_t>(pb)), pa > 0 ? pb / pa : 0.0);
}

std::string slower_summary(const Comparison& c) {
  if (c.metrics.empty() || c.metrics.front().verdict != Verdict::kSlower) return "";
  if (!passes_summary(c).empty()) return "";  // unlike iterations: passes_summary speaks
  const MetricComparison& it = c.metrics.front();
  const MetricComparison* worst = nullptr;
  for (const auto& m : c.metrics)
    // A stage whose rise is significant by its test though its interval touches 1 (few
    // iterations, a heavy tail) still explains more than a smaller significant one.
    if (m.scope == Scope::kLoopThread && !m.op() &&
        (m.verdict == Verdict::kSlower || m.verdict == Verdict::kCandidateOnly || m.p_value < c.options.alpha) &&
        m.delta_ns > 0 && (worst == nullptr || m.delta_ns > worst->delta_ns))
      worst = &m;
  const MetricComparison* worst_op = nullptr;  // inside that phase
  for (const auto& m : c.metrics)
    // An op new in that phase (a Python-list gather's aten::select) explains as much as one that grew.
    if (worst != nullptr && m.scope == Scope::kLoopThread && m.op() && m.phase == worst->name &&
        (m.verdict == Verdict::kSlower || (m.verdict == Verdict::kCandidateOnly && m.delta_ns > 0)) &&
        (worst_op == nullptr || m.delta_ns > worst_op->delta_ns))
      worst_op = &m;
  std::string out = fmt::format("The candidate is SLOWER: iteration {} -> {} (+{}, x{:.2f})", human_ns(it.baseline_median_ns),
                                human_ns(it.candidate_median_ns), human_ns(it.delta_ns), it.ratio ? *it.ratio : 0.0);
  if (worst != nullptr && worst->name == kUnattributed)
    out += fmt::format("; what got slower most is time outside every stage ({} -> {}, +{} per iteration): the line "
                       "tables name its lines (`gnnprof run` traces the loop's)",
                       human_ns(worst->baseline_median_ns), human_ns(worst->candidate_median_ns), human_ns(worst->delta_ns));
  else if (worst != nullptr)
    out += fmt::format("; the stage that got slower most: {} ({} -> {}, +{} per iteration{})", worst->name,
                       human_ns(worst->baseline_median_ns), human_ns(worst->candidate_median_ns), human_ns(worst->delta_ns),
                       worst->verdict == Verdict::kCandidateOnly ? ", a stage the baseline does not have" : "");
  // The phase's growth its ops do not hold (medians do not add up exactly, so only when it is
  // most of it): Python between the ops, a sleep, a wait; the line tables name its lines.
  std::int64_t ops_delta = 0;
  bool has_ops = false;
  if (worst != nullptr)
    for (const auto& m : c.metrics)
      if (m.scope == Scope::kLoopThread && m.op() && m.phase == worst->name) {
        ops_delta += m.delta_ns;
        has_ops = true;
      }
  const std::int64_t outside = worst != nullptr ? worst->delta_ns - ops_delta : 0;
  if (has_ops && worst->name != kUnattributed && 2 * outside > worst->delta_ns &&
      (worst_op == nullptr || outside > 2 * worst_op->delta_ns))
    out += fmt::format("; inside it, most is outside its torch ops (+{} of +{}: Python between them, a sleep or a wait; the "
                       "line tables name its lines){}",
                       human_ns(outside), human_ns(worst->delta_ns),
                       worst_op != nullptr ? fmt::format(", the op that grew most: {} (+{})", short_op_name(worst_op->name),
                                                         human_ns(worst_op->delta_ns))
                                           : "");
  else if (worst_op != nullptr)
    out += fmt::format("; inside it, most: {} (+{}{}{})", short_op_name(worst_op->name), human_ns(worst_op->delta_ns),
                       worst_op->verdict == Verdict::kCandidateOnly ? ", new in the candidate" : "",
                       worst_op->phases.empty() ? "" : ", summed over " + worst_op->phases);
  if (worst == nullptr)
    out += "; no single loop-thread stage is significantly slower";
  return out + ".";
}

std::string line_where(const LineComparison& l) {
  if (l.baseline_in_workers && l.candidate_in_workers) return "in DataLoader workers: per-batch medians, off the loop thread";
  if (l.candidate_in_workers) return "moved to DataLoader workers: the baseline per iteration, the candidate per batch";
  if (l.baseline_in_workers) return "moved from DataLoader workers: the baseline per batch, the candidate per iteration";
  if (l.baseline_off_loop && l.candidate_off_loop) return "off the loop thread on both sides: hidden behind the loop";
  if (l.candidate_off_loop) return "moved off the loop thread (a prefetcher's producer): the candidate's time is hidden behind the loop";
  if (l.baseline_off_loop) return "moved to the loop thread: the baseline's time was hidden behind the loop, the candidate's is not";
  return "";
}

namespace {

// A function whose lines changed sides: its lines' summed medians on each.
struct Moved {
  std::string file, function;
  bool away = true;  ///< off the loop's thread (into workers, or onto another thread); else back
  std::size_t lines = 0;
  std::int64_t loop_ns = 0, away_ns = 0;
};

/// The functions whose lines have the verdict `away` or `back`, in the lines' order.
std::vector<Moved> moved_functions(const Comparison& c, Verdict away, Verdict back) {
  std::vector<Moved> moved;
  for (const auto& l : c.lines) {
    if (l.metric.verdict != away && l.metric.verdict != back) continue;
    const bool to = l.metric.verdict == away;
    if (moved.empty() || moved.back().file != l.file || moved.back().function != l.function || moved.back().away != to)
      moved.push_back({l.file, l.function, to});
    Moved& m = moved.back();
    ++m.lines;
    m.loop_ns += to ? l.metric.baseline_median_ns : l.metric.candidate_median_ns;
    m.away_ns += to ? l.metric.candidate_median_ns : l.metric.baseline_median_ns;
  }
  return moved;
}

}  // namespace

std::string moved_summary(const Comparison& c) {
  std::string out;
  for (const Moved& m : moved_functions(c, Verdict::kMovedToWorkers, Verdict::kMovedToLoop))
    out += fmt::format("{}{}() {} DataLoader workers ({} line{}): {} per iteration on the {}'s loop thread, {} per batch in "
                       "the {}'s workers (summed line medians)",
                       out.empty() ? "" : "; ", m.function, m.away ? "moved into" : "moved out of", m.lines,
                       m.lines == 1 ? "" : "s", human_ns(m.loop_ns), m.away ? "baseline" : "candidate", human_ns(m.away_ns),
                       m.away ? "candidate" : "baseline");
  if (!out.empty())
    out += ". Worker time is hidden while the workers keep ahead; the loop's wait for batches is its DataLoader __next__ row.";
  // Functions whose lines moved to another thread of the process (a prefetcher's producer).
  std::string threads;
  for (const Moved& m : moved_functions(c, Verdict::kMovedOffLoopThread, Verdict::kMovedToLoopThread))
    threads += fmt::format("{}{}() {} the loop's thread ({} line{}): {} per iteration on the {}'s loop thread, {} on the {}'s "
                           "other thread (summed line medians)",
                           threads.empty() ? "" : "; ", m.function, m.away ? "moved off" : "moved to", m.lines,
                           m.lines == 1 ? "" : "s", human_ns(m.loop_ns), m.away ? "baseline" : "candidate",
                           human_ns(m.away_ns), m.away ? "candidate" : "baseline");
  if (!threads.empty())
    out += (out.empty() ? "" : " ") + threads +
           ". Off the loop's thread its time is hidden while that thread keeps ahead (the loop's wait for it is the "
           "loader_wait row); in Python it still holds the GIL while it runs, which the loop's lines feel.";
  return out;
}

std::string comparison_lines_text(const Comparison& c) {
  if (c.lines.empty()) return "";
  std::string out = "\nLines (per-iteration medians; matched by file, function and statement text):\n";
  bool any_sparse = false;
  std::string fn;
  for (const auto& l : c.lines) {
    const std::string where = line_where(l);
    const std::string here = base_name(l.file) + ": " + l.function + (where.empty() ? "" : " (" + where + ")");
    if (here != fn) {
      fn = here;
      out += fmt::format("\n{}\n{:>5} {:>5} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {:<22} {}\n", fn, "base", "cand",
                         "baseline", "candidate", "delta", "ratio", "95% CI", "p", "verdict", "statement");
    }
    const MetricComparison& m = l.metric;
    const bool both = l.baseline_line != 0 && l.candidate_line != 0;
    auto num = [](std::uint32_t n) { return n != 0 ? std::to_string(n) : std::string("-"); };
    const std::string ratio = both ? ratio_text(m.ratio) : "-";
    const std::string ci = both ? ci_text(m.ci_low, m.ci_high, CiStyle::kBracket) : "-";
    const std::string p = both ? p_text(m.p_value) : "-";
    const std::string delta = both ? fmt::format("{}{}", m.delta_ns > 0 ? "+" : "", human_ns(m.delta_ns)) : "-";
    std::string code = l.code.size() > 60 ? l.code.substr(0, 57) + "..." : l.code;
    if (l.sparse) {
      code = "* " + code;
      any_sparse = true;
    }
    if (l.match == Match::kEdited) {
      std::string cand = l.candidate_code.size() > 60 ? l.candidate_code.substr(0, 57) + "..." : l.candidate_code;
      code = fmt::format("{}  ->  {}", code, cand);
    }
    out += fmt::format("{:>5} {:>5} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {:<22} {}\n", num(l.baseline_line),
                       num(l.candidate_line), l.baseline_line ? human_ns(m.baseline_median_ns) : "-",
                       l.candidate_line ? human_ns(m.candidate_median_ns) : "-", delta, ratio, ci, p,
                       l.match == Match::kEdited ? std::string("edited, ") + to_string(m.verdict) : to_string(m.verdict), code);
  }
  if (any_sparse)
    out += "\n* ran in fewer than half the iterations (e.g. validation once an epoch): medians over the iterations it ran "
           "in\n";
  return out;
}

std::string comparison_text(const Comparison& c, bool ops) {
  std::string out;
  auto runs_ok = [](const Side& s) {
    std::size_t ok = 0;
    for (const auto& r : s.runs) ok += r.error.empty() ? 1 : 0;
    return ok;
  };
  const MetricComparison& it = c.metrics.front();
  auto side = [&](const Side& s, std::uint64_t n) {
    // Two profiles compared directly have no run records: one run each.
    return s.runs.empty() ? fmt::format("one profile, {} iterations", n)
                          : fmt::format("{} of {} runs usable, {} iterations", runs_ok(s), s.runs.size(), n);
  };
  out += fmt::format("baseline:  {} ({})\n", c.baseline.command.empty() ? "-" : c.baseline.command, side(c.baseline, it.baseline_n));
  out += fmt::format("candidate: {} ({})\n", c.candidate.command.empty() ? "-" : c.candidate.command,
                     side(c.candidate, it.candidate_n));
  out += statistics_note(c) + "\n";
  for (const Side* s : {&c.baseline, &c.candidate})
    for (const auto& r : s->runs)
      if (r.error.empty() && r.exit_code != 0)
        out += fmt::format("the {}'s run {} exited with code {}: a failed run's figures, not its loop's\n",
                           s == &c.baseline ? "baseline" : "candidate", r.profile, r.exit_code);
  if (std::any_of(c.metrics.begin(), c.metrics.end(), [](const MetricComparison& m) { return m.scope == Scope::kWorkers; }))
    out += "scope workers: DataLoader worker processes, per-batch medians (each worker's first batch skipped), hidden "
           "from the loop unless it waits for them\n";

  // A side that traced a hot Python loop line by line is slower by its tracing.
  for (const Side* s : {&c.baseline, &c.candidate}) {
    const RunRecord* worst = nullptr;
    for (const auto& r : s->runs)
      if (r.error.empty() && (worst == nullptr || r.line_events > worst->line_events)) worst = &r;
    if (worst == nullptr || worst->median_iteration_ns <= 0) continue;
    const std::int64_t cost = static_cast<std::int64_t>(worst->line_events) * kLineEventCostNs;
    if (cost * 20 < worst->median_iteration_ns) continue;  // under 5 %
    out += fmt::format("the {} traced {} Python line events per iteration: {} or more of tracing ({:.0f}% of its {} "
                       "iteration) inflate its traced functions; compare runs traced alike, or leave the hot function "
                       "untraced\n",
                       s == &c.baseline ? "baseline" : "candidate", worst->line_events, human_ns(cost),
                       100.0 * static_cast<double>(cost) / static_cast<double>(worst->median_iteration_ns),
                       human_ns(worst->median_iteration_ns));
  }
  out += "\n";
  std::size_t w = 18;  // no name cut
  for (const auto& m : c.metrics)
    if (ops || !m.op()) w = std::max(w, (m.op() ? short_op_name(m.name).size() + 2 : m.name.size()) + 1);
  out += fmt::format("{:<{}} {:<13} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {}\n", "metric", w, "scope", "baseline", "candidate",
                     "delta", "ratio", "95% CI", "p", "verdict");
  std::size_t op_rows = 0, ops_slower = 0, ops_faster = 0, ops_gone = 0, ops_new = 0, zero_rows = 0;
  std::vector<const MetricComparison*> slower_ops;
  for (const auto& m : c.metrics) {
    if (m.op() && m.scope == Scope::kWorkers) {  // the workers' ops: hidden, listed with --ops only
      if (!ops) continue;
    } else if (m.op()) {
      ++op_rows;
      ops_slower += m.verdict == Verdict::kSlower ? 1 : 0;
      ops_faster += m.verdict == Verdict::kFaster ? 1 : 0;
      ops_gone += m.verdict == Verdict::kBaselineOnly ? 1 : 0;
      ops_new += m.verdict == Verdict::kCandidateOnly ? 1 : 0;
      if (m.verdict == Verdict::kSlower) slower_ops.push_back(&m);
      if (!ops) continue;
    }
    if (zero_on_both_sides(m)) {
      ++zero_rows;
      continue;
    }
    const std::string ratio = ratio_text(m.ratio);
    const std::string ci = ci_text(m.ci_low, m.ci_high, CiStyle::kBracket);
    const std::string p = p_text(m.p_value);
    // fmt rather than const char* + std::string: GCC 12 misreports that operator+ (-Wrestrict).
    const std::string delta = fmt::format("{}{}", m.delta_ns > 0 ? "+" : "", human_ns(m.delta_ns));
    const char* scope = m.scope == Scope::kLoop         ? "loop"
                        : m.scope == Scope::kLoopThread ? "loop thread"
                        : m.scope == Scope::kWorkers    ? "workers"
                                                        : "other threads";
    out += fmt::format("{:<{}} {:<13} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {}\n", m.op() ? "  " + short_op_name(m.name) : m.name,
                       w, scope, human_ns(m.baseline_median_ns), human_ns(m.candidate_median_ns), delta, ratio, ci, p, to_string(m.verdict));
  }
  if (op_rows > 0 && !ops) {
    out += fmt::format("{} torch op metrics ({} slower, {} faster{}); `--ops` lists them under their phase.", op_rows, ops_slower,
                       ops_faster,
                       ops_gone + ops_new == 0 ? std::string()
                                               : fmt::format(", {} only in the baseline, {} only in the candidate", ops_gone, ops_new));
    std::stable_sort(slower_ops.begin(), slower_ops.end(),
                     [](const MetricComparison* x, const MetricComparison* y) { return x->delta_ns > y->delta_ns; });
    for (std::size_t i = 0; i < slower_ops.size() && i < 3; ++i)
      out += fmt::format("{} {}{} +{}", i == 0 ? " Slower most:" : ",", short_op_name(slower_ops[i]->name),
                         slower_ops[i]->phase.empty() ? ""
                         : slower_ops[i]->phases.empty() ? " in " + slower_ops[i]->phase
                                                          : " (in " + slower_ops[i]->phases + ")",
                         human_ns(slower_ops[i]->delta_ns));
    out += "\n";
  }
  if (zero_rows > 0)
    out += fmt::format("({} row{} 0 ns in the median iteration of both sides not shown; the JSON has {})\n", zero_rows,
                       zero_rows == 1 ? "" : "s", zero_rows == 1 ? "it" : "them");
  if (!c.lines.empty()) out += comparison_lines_text(c);
  out += "\n";
  if (c.speedup) {
    out += fmt::format("Headline: iteration {} -> {}: ", human_ns(it.baseline_median_ns), human_ns(it.candidate_median_ns));
    const std::string ci =
        c.speedup_ci_low ? fmt::format("95% CI {:.3f}x to {:.3f}x", *c.speedup_ci_low, *c.speedup_ci_high) : std::string();
    if (*c.speedup >= 1)
      out += fmt::format("{:.3f}x speedup{}", *c.speedup, ci.empty() ? "" : " (" + ci + ")");
    else  // a slowdown said as one: 1.161x slower, not "0.861x speedup"
      out += fmt::format("{:.3f}x slower (speedup {:.3f}x{})", 1.0 / *c.speedup, *c.speedup, ci.empty() ? "" : ", " + ci);
    out += fmt::format("; verdict: {}\n", to_string(c.verdict));
    if (const std::string slow = slower_summary(c); !slow.empty()) out += slow + "\n";
    if (const std::string mean = mean_summary(c); !mean.empty()) out += mean + "\n";
    if (const std::string passes = passes_summary(c); !passes.empty()) out += passes + "\n";
    if (const std::string moved = moved_summary(c); !moved.empty()) out += moved + "\n";
  } else {
    out += "Headline: no iterations to compare\n";
  }
  return out;
}

}  // namespace gnnprof::reports
