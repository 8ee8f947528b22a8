#include "compare.h"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "gnnprof/profile_io.h"
#include "gnnprof/reports/compare.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/html_reporter.h"

namespace gnnprof::cli {

namespace {

constexpr int kOk = 0, kFail = 1, kBad = 2;

/// Reads a profile that has complete iterations, or prints one line and returns false.
bool load(const std::string& path, Profile& out, const char* tool) {
  auto p = read_profile_file(path);
  if (!p) {
    std::cerr << tool << ": " << p.status().message() << "\n";
    return false;
  }
  std::size_t complete = 0;
  for (const auto& it : p->iterations) complete += it.complete ? 1 : 0;
  if (complete == 0) {
    std::cerr << tool << ": " << path << ": no complete iterations to compare (mark them with GNNPROF_STEP())\n";
    return false;
  }
  out = std::move(*p);
  return true;
}

std::set<std::string> stage_names(const Profile& p) {
  std::set<std::string> s;
  for (const auto& it : p.iterations) {
    for (const auto& [n, v] : it.stages) s.insert(n);
    for (const auto& [n, v] : it.other_threads) s.insert(n);
  }
  return s;
}

std::string join(const std::set<std::string>& s) {
  std::string o;
  for (const auto& x : s) o += (o.empty() ? "" : ", ") + x;
  return o;
}

bool write_text(const std::string& path, const std::string& text, const char* tool) {
  if (Status st = write_file_atomic(path, text); !st) {
    std::cerr << tool << ": " << st.message() << "\n";
    return false;
  }
  std::cerr << tool << ": wrote " << path << "\n";
  return true;
}

std::string xml(const std::string& s) { return reports::escape_markup(s); }

}  // namespace

bool parse_pct(std::string s, double& out) {
  if (!s.empty() && s.back() == '%') s.pop_back();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !(v >= 0)) return false;
  out = v / 100.0;
  return true;
}

int run_compare(const CompareArgs& a) {
  const char* tool = "gnnprof compare";
  reports::Comparison c;
  Profile base, cand;
  bool have_profiles = false;
  if (a.inputs.size() == 1) {
    auto r = reports::read_comparison_file(a.inputs[0]);
    if (!r) {
      std::cerr << tool << ": " << r.status().message() << "\n";
      return kBad;
    }
    c = std::move(*r);
    // The first usable profile of each side, for the side-by-side charts.
    auto first = [](const reports::Side& s) {
      for (const auto& run : s.runs)
        if (run.error.empty() && !run.profile.empty()) return run.profile;
      return std::string();
    };
    const std::string bp = first(c.baseline), cp = first(c.candidate);
    if (!bp.empty() && !cp.empty()) {
      auto b = read_profile_file(bp), d = read_profile_file(cp);
      if (b && d) {
        base = std::move(*b);
        cand = std::move(*d);
        have_profiles = true;
      }
    }
  } else if (a.inputs.size() == 2) {
    if (!load(a.inputs[0], base, tool) || !load(a.inputs[1], cand, tool)) return kBad;
    const auto sb = stage_names(base), sc = stage_names(cand);
    std::set<std::string> common;
    for (const auto& n : sb)
      if (sc.count(n) != 0) common.insert(n);
    if (common.empty()) {
      std::cerr << tool << ": " << a.inputs[0] << " and " << a.inputs[1] << " share no stage (" << join(sb) << " vs " << join(sc)
                << "): nothing to compare\n";
      return kBad;
    }
    reports::CompareOptions opt;
    opt.skip = a.skip;
    c = reports::compare_profiles({base}, {cand}, opt);
    c.baseline.label = "baseline";
    c.candidate.label = "candidate";
    c.baseline.command = a.inputs[0];
    c.candidate.command = a.inputs[1];
    for (auto* side : {&c.baseline, &c.candidate}) {
      reports::RunRecord r;
      r.profile = side->command;
      reports::describe_run(side == &c.baseline ? base : cand, a.skip, r);
      side->runs.push_back(r);
    }
    have_profiles = true;
  } else {
    std::cerr << tool << ": expected BASE.json CAND.json, or one comparison.json from gnnprof ab\n";
    return kBad;
  }
  std::cout << reports::comparison_text(c, a.ops);
  int rc = kOk;
  if (!a.json_out.empty() && !write_text(a.json_out, reports::comparison_to_json(c), tool)) rc = kFail;
  if (!a.html_out.empty()) {
    std::ostringstream html;
    (void)reports::render_comparison_html(c, have_profiles ? &base : nullptr, have_profiles ? &cand : nullptr, html);
    if (!write_text(a.html_out, html.str(), tool)) rc = kFail;
  }
  return rc;
}

int run_check(const CheckArgs& a) {
  const char* tool = "gnnprof check";
  double default_limit = 0;
  if (!parse_pct(a.max_slowdown, default_limit)) {
    std::cerr << tool << ": --max-slowdown: expected a percentage like 5%, got \"" << a.max_slowdown << "\"\n";
    return kBad;
  }
  std::map<std::string, double> limits;
  for (const auto& kv : a.stage_limits) {
    const auto eq = kv.find('=');
    double v = 0;
    if (eq == std::string::npos || eq == 0 || !parse_pct(kv.substr(eq + 1), v)) {
      std::cerr << tool << ": --stage: expected NAME=PCT (e.g. forward=10%), got \"" << kv << "\"\n";
      return kBad;
    }
    limits[kv.substr(0, eq)] = v;
  }
  Profile base, cur;
  if (!load(a.baseline, base, tool) || !load(a.current, cur, tool)) return kBad;
  const auto sb = stage_names(base), sc = stage_names(cur);
  if (sb != sc) {
    std::set<std::string> only_b, only_c;
    for (const auto& n : sb)
      if (sc.count(n) == 0) only_b.insert(n);
    for (const auto& n : sc)
      if (sb.count(n) == 0) only_c.insert(n);
    std::cerr << tool << ": " << a.baseline << " and " << a.current << " have different stages (only in baseline: "
              << (only_b.empty() ? "-" : join(only_b)) << "; only in current: " << (only_c.empty() ? "-" : join(only_c))
              << "): update the stored baseline\n";
    return kBad;
  }
  for (const auto& [name, v] : limits)
    if (sb.count(name) == 0) {
      std::cerr << tool << ": --stage " << name << ": no such stage in " << a.baseline << " (stages: " << join(sb) << ")\n";
      return kBad;
    }
  reports::CompareOptions opt;
  opt.skip = a.skip;
  const reports::Comparison c = reports::compare_profiles({base}, {cur}, opt);

  // Google Benchmark's compare.py asks for >= 9 repetitions before trusting its U-test.
  constexpr std::uint64_t kMinSamples = 9;
  struct Row {
    const reports::MetricComparison* m;
    double limit;
    std::string status;
  };
  std::vector<Row> rows;
  int regressions = 0, undecided = 0;
  for (const auto& m : c.metrics) {
    if (m.scope == "other_threads") continue;  // hidden time does not slow the loop
    const double limit = limits.count(m.name) != 0 ? limits[m.name] : default_limit;
    std::string status;
    if (m.baseline_n < kMinSamples || m.candidate_n < kMinSamples) {
      status = "undecided";
      ++undecided;
    } else if (m.verdict == "slower" && (!m.ratio || *m.ratio - 1.0 > limit)) {
      status = "REGRESSION";
      ++regressions;
    } else if (m.verdict == "slower") {
      status = "ok (slower, within limit)";
    } else if (m.verdict == "faster") {
      status = "ok (faster)";
    } else {
      status = "ok";
    }
    rows.push_back(Row{&m, limit, status});
  }

  // Phases are listed; a torch op only when it regressed (under its phase). Every op is checked
  // and in the JUnit file.
  auto listed = [](const Row& r) { return !r.m->op() || r.status == "REGRESSION"; };
  auto label = [](const reports::MetricComparison& m) { return m.op() ? "  " + reports::short_op_name(m.name) : m.name; };
  std::size_t w = 18, ops_checked = 0;
  for (const auto& r : rows) {
    if (listed(r)) w = std::max(w, label(*r.m).size() + 1);
    ops_checked += r.m->op() ? 1 : 0;
  }
  std::ostringstream text;
  text << fmt::format("{:<{}} {:>10} {:>10} {:>8} {:>17} {:>9} {:>7}  {}\n", "metric", w, "baseline", "current", "ratio", "95% CI",
                      "p", "limit", "status");
  for (const auto& r : rows) {
    if (!listed(r)) continue;
    const auto& m = *r.m;
    text << fmt::format("{:<{}} {:>10} {:>10} {:>8} {:>17} {:>9} {:>6.1f}%  {}\n", label(m), w, reports::human_ns(m.baseline_median_ns),
                        reports::human_ns(m.candidate_median_ns), m.ratio ? fmt::format("{:.3f}", *m.ratio) : "-",
                        m.ci_low ? fmt::format("[{:.3f}, {:.3f}]", *m.ci_low, *m.ci_high) : "-",
                        m.p_value < 1e-6 ? "<1e-6" : fmt::format("{:.2g}", m.p_value), 100 * r.limit, r.status);
  }
  if (ops_checked > 0) text << fmt::format("({} torch op metrics checked too; only regressed ones are listed, under their phase)\n", ops_checked);
  std::string summary = regressions > 0 ? fmt::format("FAIL: {} regression(s)", regressions) : std::string("PASS");
  if (undecided > 0)
    summary += fmt::format("; {} metric(s) undecided: fewer than {} iterations on a side (after skipping {}): run longer", undecided,
                           kMinSamples, a.skip);
  std::cout << text.str() << "\n" << summary << "\n";

  int rc = regressions > 0 ? kFail : kOk;
  if (!a.markdown_out.empty()) {
    std::ostringstream md;
    md << "### gnnprof check: " << (regressions > 0 ? "regression" : "pass") << "\n\n";
    md << "Baseline `" << a.baseline << "`, current `" << a.current << "`; regression = significant (p < 0.05, CI excludes 1) "
       << "and slower than the limit.\n\n| metric | baseline | current | ratio | 95% CI | p | limit | status |\n"
       << "|---|---:|---:|---:|---:|---:|---:|---|\n";
    for (const auto& r : rows) {
      if (!listed(r)) continue;
      const auto& m = *r.m;
      md << fmt::format("| {} | {} | {} | {} | {} | {} | {:.1f}% | {} |\n", m.op() ? "&nbsp;&nbsp;" + reports::short_op_name(m.name) + (m.phase.empty() ? "" : " (in " + m.phase + ")") : m.name, reports::human_ns(m.baseline_median_ns),
                        reports::human_ns(m.candidate_median_ns), m.ratio ? fmt::format("{:.3f}", *m.ratio) : "-",
                        m.ci_low ? fmt::format("{:.3f}–{:.3f}", *m.ci_low, *m.ci_high) : "-",
                        m.p_value < 1e-6 ? "<1e-6" : fmt::format("{:.2g}", m.p_value), 100 * r.limit,
                        r.status == "REGRESSION" ? "**REGRESSION**" : r.status);
    }
    md << "\n" << summary << "\n";
    if (!write_text(a.markdown_out, md.str(), tool)) rc = kFail;
  }
  if (!a.junit_out.empty()) {
    std::ostringstream x;
    x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    x << fmt::format("<testsuites><testsuite name=\"gnnprof.check\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n", rows.size(),
                     regressions, undecided);
    for (const auto& r : rows) {
      const auto& m = *r.m;
      const double secs = static_cast<double>(m.candidate_median_ns) / 1e9;
      x << fmt::format("  <testcase classname=\"gnnprof.{}\" name=\"{}\" time=\"{:.6f}\">", m.scope, xml(m.name), secs);
      const std::string detail = fmt::format("median {} -> {}, ratio {}, p {:.3g}, limit {:.1f}%", reports::human_ns(m.baseline_median_ns),
                                             reports::human_ns(m.candidate_median_ns), m.ratio ? fmt::format("{:.3f}", *m.ratio) : "-",
                                             m.p_value, 100 * r.limit);
      if (r.status == "REGRESSION")
        x << "<failure message=\"" << xml("regression: " + detail) << "\"/>";
      else if (r.status == "undecided")
        x << "<skipped message=\"" << xml("too few iterations to decide: " + detail) << "\"/>";
      x << "</testcase>\n";
    }
    x << "</testsuite></testsuites>\n";
    if (!write_text(a.junit_out, x.str(), tool)) rc = kFail;
  }
  return rc;
}

}  // namespace gnnprof::cli
