#include "gnnprof/reports/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <fstream>
#include <stdexcept>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <set>
#include <sstream>

#include "gnnprof/detail/json_number.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

using json = nlohmann::ordered_json;

double mann_whitney_p(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  if (a.empty() || b.empty()) return 1.0;
  std::vector<std::pair<std::int64_t, int>> all;
  all.reserve(a.size() + b.size());
  for (auto x : a) all.emplace_back(x, 0);
  for (auto x : b) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end(), [](const auto& l, const auto& r) { return l.first < r.first; });
  double rank_a = 0, tie_term = 0;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double avg_rank = (static_cast<double>(i) + static_cast<double>(j) + 1.0) / 2.0;  // 1-based ranks i+1..j
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second == 0) rank_a += avg_rank;
    i = j;
  }
  const double n = n1 + n2;
  const double u = rank_a - n1 * (n1 + 1) / 2.0;
  const double mean = n1 * n2 / 2.0;
  const double var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return 1.0;
  const double z = (std::fabs(u - mean) - 0.5) / std::sqrt(var);  // continuity correction
  if (z <= 0) return 1.0;
  return std::min(1.0, std::erfc(z / std::sqrt(2.0)));
}

namespace {

struct Samples {
  std::vector<std::int64_t> loop;
  std::map<std::string, std::vector<std::int64_t>> loop_thread, other;
};

Samples collect(const std::vector<Profile>& profiles, std::uint64_t skip, const std::set<std::string>& loop_names,
                const std::set<std::string>& other_names) {
  Samples s;
  for (const Profile& p : profiles) {
    std::uint64_t seen = 0;
    std::vector<const IterationStats*> used;
    for (const IterationStats& it : p.iterations) {
      if (!it.complete || seen++ < skip) continue;
      s.loop.push_back(it.wall_ns);
      used.push_back(&it);
    }
    // Iteration sampling: stage samples only where the torch observer saw the ops (an
    // unobserved iteration has no forward/backward stages, not zero-time ones).
    for (const IterationStats* it : ops_observed(used)) {
      // A stage that did not run in an iteration took 0 ns there: that is the point of a
      // stage that prefetching moved off the loop thread.
      for (const auto& n : loop_names) {
        auto f = it->stages.find(n);
        s.loop_thread[n].push_back(f == it->stages.end() ? 0 : f->second);
      }
      for (const auto& n : other_names) {
        auto f = it->other_threads.find(n);
        s.other[n].push_back(f == it->other_threads.end() ? 0 : f->second);
      }
    }
  }
  return s;
}

MetricComparison compare_metric(const std::string& name, const std::string& scope, const std::vector<std::int64_t>& a,
                                const std::vector<std::int64_t>& b, const CompareOptions& opt, std::mt19937_64& rng) {
  MetricComparison m;
  m.name = name;
  m.scope = scope;
  m.baseline_n = a.size();
  m.candidate_n = b.size();
  m.baseline_median_ns = median_of(a);
  m.candidate_median_ns = median_of(b);
  m.delta_ns = m.candidate_median_ns - m.baseline_median_ns;
  if (m.baseline_median_ns > 0) m.ratio = static_cast<double>(m.candidate_median_ns) / static_cast<double>(m.baseline_median_ns);
  m.p_value = mann_whitney_p(a, b);
  if (!a.empty() && !b.empty() && opt.bootstrap > 0) {
    std::vector<double> ratios;
    ratios.reserve(opt.bootstrap);
    std::vector<std::int64_t> ra(a.size()), rb(b.size());
    std::uniform_int_distribution<std::size_t> da(0, a.size() - 1), db(0, b.size() - 1);
    for (std::uint32_t r = 0; r < opt.bootstrap; ++r) {
      for (auto& x : ra) x = a[da(rng)];
      for (auto& x : rb) x = b[db(rng)];
      const std::int64_t ma = median_of(ra);
      if (ma > 0) ratios.push_back(static_cast<double>(median_of(rb)) / static_cast<double>(ma));
    }
    if (ratios.size() >= opt.bootstrap / 2) {
      std::sort(ratios.begin(), ratios.end());
      auto at = [&](double q) { return ratios[static_cast<std::size_t>(q * static_cast<double>(ratios.size() - 1))]; };
      m.ci_low = at(0.025);
      m.ci_high = at(0.975);
    }
  }
  const bool differs = m.p_value < opt.alpha && m.delta_ns != 0 &&
                       (!m.ci_low || *m.ci_high < 1.0 || *m.ci_low > 1.0);
  // Time on other threads is off the critical path: more of it is not "slower".
  const bool hidden = scope == "other_threads";
  m.verdict = !differs ? "no significant change"
                       : (m.delta_ns < 0 ? (hidden ? "less" : "faster") : (hidden ? "more" : "slower"));
  return m;
}

}  // namespace

void describe_run(const Profile& profile, std::uint64_t skip, RunRecord& run) {
  std::vector<std::int64_t> walls;
  std::uint64_t seen = 0;
  for (const auto& it : profile.iterations)
    if (it.complete && seen++ >= skip) walls.push_back(it.wall_ns);
  run.iterations = walls.size();
  run.median_iteration_ns = median_of(walls);
}

Comparison compare_profiles(const std::vector<Profile>& baseline, const std::vector<Profile>& candidate,
                            const CompareOptions& options) {
  Comparison c;
  c.tool_version = kVersion;
  c.options = options;
  std::set<std::string> loop_names, other_names;
  for (const auto* side : {&baseline, &candidate})
    for (const Profile& p : *side)
      for (const auto& it : p.iterations) {
        for (const auto& [n, v] : it.stages) loop_names.insert(n);
        for (const auto& [n, v] : it.other_threads) other_names.insert(n);
      }
  Samples a = collect(baseline, options.skip, loop_names, other_names);
  Samples b = collect(candidate, options.skip, loop_names, other_names);
  std::mt19937_64 rng(options.seed);
  c.metrics.push_back(compare_metric("iteration", "loop", a.loop, b.loop, options, rng));
  std::vector<MetricComparison> stages;
  for (const auto& n : loop_names) stages.push_back(compare_metric(n, "loop_thread", a.loop_thread[n], b.loop_thread[n], options, rng));
  for (const auto& n : other_names) stages.push_back(compare_metric(n, "other_threads", a.other[n], b.other[n], options, rng));
  std::stable_sort(stages.begin(), stages.end(), [](const MetricComparison& x, const MetricComparison& y) {
    if (x.scope != y.scope) return x.scope < y.scope;  // loop_thread before other_threads
    return std::max(x.baseline_median_ns, x.candidate_median_ns) > std::max(y.baseline_median_ns, y.candidate_median_ns);
  });
  c.metrics.insert(c.metrics.end(), stages.begin(), stages.end());
  const MetricComparison& it = c.metrics.front();
  if (it.ratio && *it.ratio > 0) {
    c.speedup = 1.0 / *it.ratio;
    if (it.ci_low && it.ci_high && *it.ci_low > 0) {
      c.speedup_ci_low = 1.0 / *it.ci_high;
      c.speedup_ci_high = 1.0 / *it.ci_low;
    }
  }
  c.verdict = it.verdict;
  return c;
}

// ---- JSON ----

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json side_json(const Side& s) {
  json runs = json::array();
  for (const auto& r : s.runs)
    runs.push_back({{"profile", r.profile},
                    {"command", r.command},
                    {"exit_code", r.exit_code},
                    {"error", r.error},
                    {"iterations", r.iterations},
                    {"median_iteration_ns", r.median_iteration_ns},
                    {"wall_ns", r.wall_ns}});
  return {{"label", s.label}, {"env", s.env}, {"command", s.command}, {"runs", runs}};
}

/// A number as T, checked: get<T>() on an out-of-range or fractional number is undefined
/// behaviour for integers (the fuzzer's UBSan found it in the profile reader).
template <typename T>
T checked(const json& v) {
  if (!detail::json_number_fits<T>(v)) throw std::runtime_error(std::string("expected a number in range, got ") + v.dump());
  return v.get<T>();
}

std::optional<double> get_opt(const json& j, const char* key) {
  const json& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  return checked<double>(v);
}

Side side_from(const json& j) {
  Side s;
  s.label = j.at("label").get<std::string>();
  s.env = j.at("env").get<std::vector<std::string>>();
  s.command = j.at("command").get<std::string>();
  for (const auto& r : j.at("runs")) {
    RunRecord rr;
    rr.profile = r.at("profile").get<std::string>();
    rr.command = r.at("command").get<std::string>();
    rr.exit_code = checked<int>(r.at("exit_code"));
    rr.error = r.at("error").get<std::string>();
    rr.iterations = checked<std::uint64_t>(r.at("iterations"));
    rr.median_iteration_ns = checked<std::int64_t>(r.at("median_iteration_ns"));
    rr.wall_ns = checked<std::int64_t>(r.at("wall_ns"));
    s.runs.push_back(std::move(rr));
  }
  return s;
}

}  // namespace

std::string comparison_to_json(const Comparison& c) {
  json j;
  j["schema"] = c.schema;
  j["tool"] = {{"name", "gnnprof"}, {"version", c.tool_version}};
  j["options"] = {{"skip", c.options.skip},
                  {"bootstrap", c.options.bootstrap},
                  {"seed", c.options.seed},
                  {"alpha", c.options.alpha},
                  {"ci", "bootstrap 95% of the ratio of medians"},
                  {"test", "Mann-Whitney U, two-sided, normal approximation with tie correction"}};
  j["baseline"] = side_json(c.baseline);
  j["candidate"] = side_json(c.candidate);
  j["headline"] = {{"metric", "iteration"},
                   {"speedup", opt(c.speedup)},
                   {"speedup_ci_low", opt(c.speedup_ci_low)},
                   {"speedup_ci_high", opt(c.speedup_ci_high)},
                   {"verdict", c.verdict}};
  j["metrics"] = json::array();
  for (const auto& m : c.metrics)
    j["metrics"].push_back({{"name", m.name},
                            {"scope", m.scope},
                            {"baseline_n", m.baseline_n},
                            {"candidate_n", m.candidate_n},
                            {"baseline_median_ns", m.baseline_median_ns},
                            {"candidate_median_ns", m.candidate_median_ns},
                            {"delta_ns", m.delta_ns},
                            {"ratio", opt(m.ratio)},
                            {"ci_low", opt(m.ci_low)},
                            {"ci_high", opt(m.ci_high)},
                            {"p_value", m.p_value},
                            {"verdict", m.verdict}});
  return j.dump(2) + "\n";
}

Result<Comparison> comparison_from_json(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::error(origin + (e.byte >= text.size() ? ": truncated JSON" : ": malformed JSON at byte " + std::to_string(e.byte)));
  } catch (const json::exception& e) {
    return Status::error(origin + ": invalid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string() || j["schema"] != kCompareSchema)
    return Status::error(origin + ": not a gnnprof comparison (expected schema \"" + kCompareSchema + "\")");
  try {
    Comparison c;
    c.tool_version = j.at("tool").at("version").get<std::string>();
    const json& o = j.at("options");
    c.options.skip = checked<std::uint64_t>(o.at("skip"));
    c.options.bootstrap = checked<std::uint32_t>(o.at("bootstrap"));
    c.options.seed = checked<std::uint64_t>(o.at("seed"));
    c.options.alpha = checked<double>(o.at("alpha"));
    c.baseline = side_from(j.at("baseline"));
    c.candidate = side_from(j.at("candidate"));
    const json& h = j.at("headline");
    c.speedup = get_opt(h, "speedup");
    c.speedup_ci_low = get_opt(h, "speedup_ci_low");
    c.speedup_ci_high = get_opt(h, "speedup_ci_high");
    c.verdict = h.at("verdict").get<std::string>();
    for (const auto& m : j.at("metrics")) {
      MetricComparison mc;
      mc.name = m.at("name").get<std::string>();
      mc.scope = m.at("scope").get<std::string>();
      mc.baseline_n = checked<std::uint64_t>(m.at("baseline_n"));
      mc.candidate_n = checked<std::uint64_t>(m.at("candidate_n"));
      mc.baseline_median_ns = checked<std::int64_t>(m.at("baseline_median_ns"));
      mc.candidate_median_ns = checked<std::int64_t>(m.at("candidate_median_ns"));
      mc.delta_ns = checked<std::int64_t>(m.at("delta_ns"));
      mc.ratio = get_opt(m, "ratio");
      mc.ci_low = get_opt(m, "ci_low");
      mc.ci_high = get_opt(m, "ci_high");
      mc.p_value = checked<double>(m.at("p_value"));
      mc.verdict = m.at("verdict").get<std::string>();
      c.metrics.push_back(std::move(mc));
    }
    return c;
  } catch (const std::exception& e) {
    return Status::error(origin + ": bad comparison: " + e.what());
  }
}

Result<Comparison> read_comparison_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return comparison_from_json(ss.str(), path);
}

std::string comparison_text(const Comparison& c) {
  std::string out;
  auto runs_ok = [](const Side& s) {
    std::size_t ok = 0;
    for (const auto& r : s.runs) ok += r.error.empty() ? 1 : 0;
    return ok;
  };
  const MetricComparison& it = c.metrics.front();
  out += fmt::format("baseline:  {} ({} of {} runs usable, {} iterations)\n", c.baseline.command.empty() ? "-" : c.baseline.command,
                     runs_ok(c.baseline), c.baseline.runs.size(), it.baseline_n);
  out += fmt::format("candidate: {} ({} of {} runs usable, {} iterations)\n",
                     c.candidate.command.empty() ? "-" : c.candidate.command, runs_ok(c.candidate), c.candidate.runs.size(),
                     it.candidate_n);
  out += fmt::format("per-iteration medians; first {} iterations of each run skipped; 95% CI: bootstrap of the ratio; p: Mann-Whitney U\n\n",
                     c.options.skip);
  out += fmt::format("{:<18} {:<13} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {}\n", "metric", "scope", "baseline", "candidate",
                     "delta", "ratio", "95% CI", "p", "verdict");
  for (const auto& m : c.metrics) {
    const std::string ratio = m.ratio ? fmt::format("{:.3f}", *m.ratio) : "-";
    const std::string ci = m.ci_low ? fmt::format("[{:.3f}, {:.3f}]", *m.ci_low, *m.ci_high) : "-";
    const std::string p = m.p_value < 1e-6 ? "<1e-6" : fmt::format("{:.2g}", m.p_value);
    // fmt rather than const char* + std::string: GCC 12 misreports that operator+ (-Wrestrict).
    const std::string delta = fmt::format("{}{}", m.delta_ns > 0 ? "+" : "", human_ns(m.delta_ns));
    const char* scope = m.scope == "loop" ? "loop" : m.scope == "loop_thread" ? "loop thread" : "other threads";
    out += fmt::format("{:<18} {:<13} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {}\n", m.name, scope, human_ns(m.baseline_median_ns),
                       human_ns(m.candidate_median_ns), delta, ratio, ci, p, m.verdict);
  }
  out += "\n";
  if (c.speedup) {
    out += fmt::format("Headline: iteration {} -> {}: {:.3f}x speedup", human_ns(it.baseline_median_ns),
                       human_ns(it.candidate_median_ns), *c.speedup);
    if (c.speedup_ci_low) out += fmt::format(" (95% CI {:.3f}x to {:.3f}x)", *c.speedup_ci_low, *c.speedup_ci_high);
    out += fmt::format("; verdict: {}\n", c.verdict);
  } else {
    out += "Headline: no iterations to compare\n";
  }
  return out;
}

}  // namespace gnnprof::reports
