#include "gnnprof/reports/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

#include "gnnprof/internal/json_number.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/hierarchy.h"

namespace gnnprof::reports {

const char* to_string(Scope s) noexcept {
  switch (s) {
    case Scope::kLoop: return "loop";
    case Scope::kLoopThread: return "loop_thread";
    case Scope::kOtherThreads: return "other_threads";
    case Scope::kLine: return "line";
  }
  return "loop";
}

const char* to_string(Verdict v) noexcept {
  switch (v) {
    case Verdict::kNoChange: return "no significant change";
    case Verdict::kFaster: return "faster";
    case Verdict::kSlower: return "slower";
    case Verdict::kLess: return "less";
    case Verdict::kMore: return "more";
    case Verdict::kBaselineOnly: return "baseline only";
    case Verdict::kCandidateOnly: return "candidate only";
  }
  return "no significant change";
}

bool from_string(std::string_view text, Scope& out) noexcept {
  for (Scope s : {Scope::kLoop, Scope::kLoopThread, Scope::kOtherThreads, Scope::kLine})
    if (text == to_string(s)) return out = s, true;
  return false;
}

bool from_string(std::string_view text, Verdict& out) noexcept {
  for (Verdict v : {Verdict::kNoChange, Verdict::kFaster, Verdict::kSlower, Verdict::kLess, Verdict::kMore, Verdict::kBaselineOnly,
                    Verdict::kCandidateOnly})
    if (text == to_string(v)) return out = v, true;
  return false;
}

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

MetricComparison compare_metric(const std::string& name, Scope scope, const std::vector<std::int64_t>& a,
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
  const bool hidden = scope == Scope::kOtherThreads;
  m.verdict = !differs ? Verdict::kNoChange
                       : (m.delta_ns < 0 ? (hidden ? Verdict::kLess : Verdict::kFaster) : (hidden ? Verdict::kMore : Verdict::kSlower));
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
  c.metrics.push_back(compare_metric("iteration", Scope::kLoop, a.loop, b.loop, options, rng));
  std::vector<MetricComparison> stages;
  for (const auto& n : loop_names) stages.push_back(compare_metric(n, Scope::kLoopThread, a.loop_thread[n], b.loop_thread[n], options, rng));
  for (const auto& n : other_names) stages.push_back(compare_metric(n, Scope::kOtherThreads, a.other[n], b.other[n], options, rng));
  std::stable_sort(stages.begin(), stages.end(), [](const MetricComparison& x, const MetricComparison& y) {
    if (x.scope != y.scope) return x.scope < y.scope;  // loop_thread before other_threads
    return std::max(x.baseline_median_ns, x.candidate_median_ns) > std::max(y.baseline_median_ns, y.candidate_median_ns);
  });
  std::vector<const Profile*> all;
  for (const auto* side : {&baseline, &candidate})
    for (const Profile& p : *side) all.push_back(&p);
  const auto places = stage_places(all);
  for (auto& m : stages)
    if (auto f = places.find(m.name); f != places.end()) {
      m.category = f->second.category;
      m.phase = f->second.phase;
    }
  for (Scope scope : {Scope::kLoopThread, Scope::kOtherThreads}) {
    std::vector<MetricComparison> rows;
    for (const auto& m : stages)
      if (m.scope == scope) rows.push_back(m);
    rows = phase_first(std::move(rows), places, [](const MetricComparison& m) { return m.name; });
    c.metrics.insert(c.metrics.end(), rows.begin(), rows.end());
  }
  const MetricComparison& it = c.metrics.front();
  if (it.ratio && *it.ratio > 0) {
    c.speedup = 1.0 / *it.ratio;
    if (it.ci_low && it.ci_high && *it.ci_low > 0) {
      c.speedup_ci_low = 1.0 / *it.ci_high;
      c.speedup_ci_high = 1.0 / *it.ci_low;
    }
  }
  c.verdict = it.verdict;
  c.lines = compare_lines(baseline, candidate, options);
  return c;
}

namespace {

/// What a statement is about: an assignment's target, else the callee or first word
/// ("y_hat" for `y_hat = model(x)`, "opt.step" for `opt.step()`, "for" for a loop).
std::string statement_head(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '[' || c == ' ' || c == ':') {
      // An assignment's target may be followed by spaces: look on for its '='.
      std::size_t j = i;
      while (j < s.size() && s[j] == ' ') ++j;
      if (j < s.size() && s[j] == '=' && (j + 1 >= s.size() || s[j + 1] != '=')) return s.substr(0, i);
      if (j + 1 < s.size() && std::strchr("+-*/%&|^", s[j]) != nullptr && s[j + 1] == '=') return s.substr(0, i);
      return s.substr(0, i);
    }
    if (c == '=' && (i + 1 >= s.size() || s[i + 1] != '=') && (i == 0 || std::strchr("=!<>", s[i - 1]) == nullptr))
      return s.substr(0, i);
  }
  return s;
}

}  // namespace

double statement_similarity(const std::string& a, const std::string& b) {
  if (a.empty() && b.empty()) return 1.0;
  if (a.empty() || b.empty()) return 0.0;
  const double chars = character_similarity(a, b);
  // The same target or callee makes an edit of the same statement more likely than a
  // neighbour that happens to share text.
  return statement_head(a) == statement_head(b) ? 0.5 + chars / 2 : chars;
}

double character_similarity(const std::string& a, const std::string& b) {
  if (a.empty() && b.empty()) return 1.0;
  if (a.empty() || b.empty()) return 0.0;
  // Longest common subsequence of characters, two rows.
  std::vector<std::size_t> prev(b.size() + 1, 0), cur(b.size() + 1, 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = a[i - 1] == b[j - 1] ? prev[j - 1] + 1 : std::max(prev[j], cur[j - 1]);
    std::swap(prev, cur);
  }
  return 2.0 * static_cast<double>(prev[b.size()]) / static_cast<double>(a.size() + b.size());
}

namespace {

/// A line of one side: its samples pooled over that side's runs.
struct SideLine {
  std::string file, function, code;
  std::uint32_t line = 0;
  std::uint64_t hits = 0;
  std::vector<std::int64_t> samples;
};

using LineKey = std::tuple<std::string, std::string, std::string>;  // base name, function, code

std::map<LineKey, SideLine> side_lines(const std::vector<Profile>& profiles, std::uint64_t skip) {
  std::map<LineKey, SideLine> out;
  for (const Profile& p : profiles) {
    std::vector<const LineKey*> key_of(p.lines.size());
    std::set<LineKey> here;
    for (std::size_t i = 0; i < p.lines.size(); ++i) {
      const LineStats& l = p.lines[i];
      auto [it, fresh] = out.try_emplace(LineKey{base_name(l.file), l.function, l.code});
      if (fresh) {
        it->second.file = l.file;
        it->second.function = l.function;
        it->second.code = l.code;
        it->second.line = l.line;
      }
      it->second.hits += l.hits;
      key_of[i] = &it->first;
      here.insert(it->first);
    }
    std::uint64_t seen = 0;
    for (const IterationStats& it : p.iterations) {
      if (!it.complete || seen++ < skip) continue;
      std::map<LineKey, std::int64_t> sum;
      for (const LineKey& k : here) sum[k] = 0;  // not run in this iteration: 0 ns
      for (const auto& [idx, ns] : it.lines)
        if (idx < key_of.size()) sum[*key_of[idx]] += ns;
      for (const auto& [k, ns] : sum) out[k].samples.push_back(ns);
    }
  }
  return out;
}

}  // namespace

std::vector<LineComparison> compare_lines(const std::vector<Profile>& baseline, const std::vector<Profile>& candidate,
                                          const CompareOptions& options) {
  // Profiles without per-iteration line times (written before they existed) have nothing to
  // compare per iteration.
  bool timed = false;
  for (const auto* side : {&baseline, &candidate})
    for (const Profile& p : *side)
      for (const IterationStats& it : p.iterations) timed = timed || !it.lines.empty();
  if (!timed) return {};
  std::map<LineKey, SideLine> a = side_lines(baseline, options.skip), b = side_lines(candidate, options.skip);
  // Per function (base name of its file, name): both sides' statements in source order.
  std::map<std::pair<std::string, std::string>, std::vector<const SideLine*>> fa, fb;
  for (const auto& [k, l] : a) fa[{std::get<0>(k), std::get<1>(k)}].push_back(&l);
  for (const auto& [k, l] : b) fb[{std::get<0>(k), std::get<1>(k)}].push_back(&l);
  std::set<std::pair<std::string, std::string>> functions;
  for (const auto& [f, v] : fa) functions.insert(f);
  for (const auto& [f, v] : fb) functions.insert(f);
  std::mt19937_64 rng(options.seed + 1);
  std::vector<LineComparison> out;
  auto by_line = [](const SideLine* x, const SideLine* y) { return x->line < y->line; };
  for (const auto& fn : functions) {
    std::vector<const SideLine*> x = fa[fn], y = fb[fn];
    std::sort(x.begin(), x.end(), by_line);
    std::sort(y.begin(), y.end(), by_line);
    // Longest common subsequence of statement texts: the lines that stayed.
    const std::size_t n = x.size(), m = y.size();
    std::vector<std::vector<std::uint32_t>> L(n + 1, std::vector<std::uint32_t>(m + 1, 0));
    for (std::size_t i = n; i-- > 0;)
      for (std::size_t j = m; j-- > 0;)
        L[i][j] = x[i]->code == y[j]->code ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
    std::vector<std::pair<const SideLine*, const SideLine*>> pairs;
    std::vector<const SideLine*> gap_a, gap_b;
    auto flush_gap = [&] {
      // Between two kept lines: pair changed statements, in order, so that the pairs' total
      // similarity is largest (a pair needs at least 0.5); the rest are one side's only.
      const std::size_t p = gap_a.size(), q = gap_b.size(), w = q + 1;
      std::vector<double> best((p + 1) * w, 0.0);  // best[u * w + v]: the most from gap_a[u..], gap_b[v..]
      std::vector<double> sim(p * w, 0.0);
      for (std::size_t u = p; u-- > 0;)
        for (std::size_t v = q; v-- > 0;) {
          const double s = sim[u * w + v] = statement_similarity(gap_a[u]->code, gap_b[v]->code);
          double most = std::max(best[(u + 1) * w + v], best[u * w + v + 1]);
          if (s >= 0.5) most = std::max(most, s + best[(u + 1) * w + v + 1]);
          best[u * w + v] = most;
        }
      std::size_t u = 0, v = 0;
      while (u < p || v < q) {
        if (u < p && v < q && sim[u * w + v] >= 0.5 && best[u * w + v] == sim[u * w + v] + best[(u + 1) * w + v + 1]) {
          pairs.emplace_back(gap_a[u++], gap_b[v++]);
        } else if (v >= q || (u < p && best[u * w + v] == best[(u + 1) * w + v])) {
          pairs.emplace_back(gap_a[u++], nullptr);
        } else {
          pairs.emplace_back(nullptr, gap_b[v++]);
        }
      }
      gap_a.clear();
      gap_b.clear();
    };
    std::size_t i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i]->code == y[j]->code) {
        flush_gap();
        pairs.emplace_back(x[i++], y[j++]);
      } else if (j >= m || (i < n && L[i + 1][j] >= L[i][j + 1])) {
        gap_a.push_back(x[i++]);
      } else {
        gap_b.push_back(y[j++]);
      }
    }
    flush_gap();
    auto ran = [](const SideLine* l) {
      return l != nullptr && std::any_of(l->samples.begin(), l->samples.end(), [](std::int64_t ns) { return ns > 0; });
    };
    for (const auto& [u, v] : pairs) {
      if (!ran(u) && !ran(v)) continue;  // in no analyzed iteration on either side (set-up, evaluation)
      LineComparison lc;
      const SideLine* any = v != nullptr ? v : u;
      lc.file = any->file;
      lc.function = any->function;
      lc.code = u != nullptr ? u->code : v->code;
      if (u != nullptr && v != nullptr && u->code != v->code) lc.candidate_code = v->code;
      lc.baseline_line = u != nullptr ? u->line : 0;
      lc.candidate_line = v != nullptr ? v->line : 0;
      lc.baseline_hits = u != nullptr ? u->hits : 0;
      lc.candidate_hits = v != nullptr ? v->hits : 0;
      lc.match = u == nullptr ? "candidate only" : v == nullptr ? "baseline only" : lc.candidate_code.empty() ? "same" : "edited";
      static const std::vector<std::int64_t> kNone;
      lc.metric = compare_metric(fmt::format("{}:{}", base_name(any->file), any->line), Scope::kLine,
                                 u != nullptr ? u->samples : kNone, v != nullptr ? v->samples : kNone, options, rng);
      if (u == nullptr || v == nullptr) lc.metric.verdict = u == nullptr ? Verdict::kCandidateOnly : Verdict::kBaselineOnly;
      out.push_back(std::move(lc));
    }
  }
  return out;
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

template <typename E>
E enum_at(const json& j, const char* key) {
  const auto text = j.at(key).get<std::string>();
  E e{};
  if (!from_string(text, e)) throw std::runtime_error(std::string(key) + ": unknown value \"" + text + "\"");
  return e;
}

std::optional<double> get_opt(const json& j, const char* key) {
  const json& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  return checked<double>(v);
}

MetricComparison metric_from(const json& m) {
  MetricComparison mc;
  mc.name = m.at("name").get<std::string>();
  mc.scope = enum_at<Scope>(m, "scope");
  mc.baseline_n = checked<std::uint64_t>(m.at("baseline_n"));
  mc.candidate_n = checked<std::uint64_t>(m.at("candidate_n"));
  mc.baseline_median_ns = checked<std::int64_t>(m.at("baseline_median_ns"));
  mc.candidate_median_ns = checked<std::int64_t>(m.at("candidate_median_ns"));
  mc.delta_ns = checked<std::int64_t>(m.at("delta_ns"));
  mc.ratio = get_opt(m, "ratio");
  mc.ci_low = get_opt(m, "ci_low");
  mc.ci_high = get_opt(m, "ci_high");
  mc.p_value = checked<double>(m.at("p_value"));
  mc.verdict = enum_at<Verdict>(m, "verdict");
  if (m.contains("category")) mc.category = m.at("category").get<std::string>();  // absent before 0.1 reports
  if (m.contains("phase")) mc.phase = m.at("phase").get<std::string>();
  return mc;
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

namespace {
json metric_json(const MetricComparison& m) {
  json j = {{"name", m.name},
          {"scope", to_string(m.scope)},
          {"baseline_n", m.baseline_n},
          {"candidate_n", m.candidate_n},
          {"baseline_median_ns", m.baseline_median_ns},
          {"candidate_median_ns", m.candidate_median_ns},
          {"delta_ns", m.delta_ns},
          {"ratio", opt(m.ratio)},
          {"ci_low", opt(m.ci_low)},
          {"ci_high", opt(m.ci_high)},
          {"p_value", m.p_value},
          {"verdict", to_string(m.verdict)}};
  if (!m.category.empty()) j["category"] = m.category;
  if (!m.phase.empty()) j["phase"] = m.phase;
  return j;
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
                   {"verdict", to_string(c.verdict)}};
  j["metrics"] = json::array();
  for (const auto& m : c.metrics) j["metrics"].push_back(metric_json(m));
  if (!c.lines.empty()) {  // written only when the profiles have line tables
    j["lines"] = json::array();
    for (const auto& l : c.lines)
      j["lines"].push_back({{"file", l.file},
                            {"function", l.function},
                            {"code", l.code},
                            {"candidate_code", l.candidate_code},
                            {"baseline_line", l.baseline_line},
                            {"candidate_line", l.candidate_line},
                            {"match", l.match},
                            {"baseline_hits", l.baseline_hits},
                            {"candidate_hits", l.candidate_hits},
                            {"metric", metric_json(l.metric)}});
  }
  return j.dump(2) + "\n";
}


Result<Comparison> comparison_from_json(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::error(origin + (e.byte >= text.size() ? ": truncated JSON"
                                                         : ": not a JSON file (malformed at byte " + std::to_string(e.byte) + ")"));
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
    c.verdict = enum_at<Verdict>(h, "verdict");
    for (const auto& m : j.at("metrics")) c.metrics.push_back(metric_from(m));
    if (j.contains("lines")) {  // absent when neither side had line tables
      for (const auto& l : j.at("lines")) {
        LineComparison lc;
        lc.file = l.at("file").get<std::string>();
        lc.function = l.at("function").get<std::string>();
        lc.code = l.at("code").get<std::string>();
        lc.candidate_code = l.at("candidate_code").get<std::string>();
        lc.baseline_line = checked<std::uint32_t>(l.at("baseline_line"));
        lc.candidate_line = checked<std::uint32_t>(l.at("candidate_line"));
        lc.match = l.at("match").get<std::string>();
        lc.baseline_hits = checked<std::uint64_t>(l.at("baseline_hits"));
        lc.candidate_hits = checked<std::uint64_t>(l.at("candidate_hits"));
        lc.metric = metric_from(l.at("metric"));
        c.lines.push_back(std::move(lc));
      }
    }
    return c;
  } catch (const std::exception& e) {
    return Status::error(origin + ": bad comparison: " + e.what());
  }
}

Result<Comparison> read_comparison_file(const std::string& path) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    return Status::error(path + ": is a directory, not a comparison file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return comparison_from_json(ss.str(), path);
}

std::string slower_summary(const Comparison& c) {
  if (c.metrics.empty() || c.metrics.front().verdict != Verdict::kSlower) return "";
  const MetricComparison& it = c.metrics.front();
  const MetricComparison* worst = nullptr;
  for (const auto& m : c.metrics)
    if (m.scope == Scope::kLoopThread && !m.op() && m.verdict == Verdict::kSlower && (worst == nullptr || m.delta_ns > worst->delta_ns)) worst = &m;
  const MetricComparison* worst_op = nullptr;  // inside that phase
  for (const auto& m : c.metrics)
    if (worst != nullptr && m.scope == Scope::kLoopThread && m.op() && m.phase == worst->name && m.verdict == Verdict::kSlower &&
        (worst_op == nullptr || m.delta_ns > worst_op->delta_ns))
      worst_op = &m;
  std::string out = fmt::format("The candidate is SLOWER: iteration {} -> {} (+{}, x{:.2f})", human_ns(it.baseline_median_ns),
                                human_ns(it.candidate_median_ns), human_ns(it.delta_ns), it.ratio ? *it.ratio : 0.0);
  if (worst != nullptr)
    out += fmt::format("; the stage that got slower most: {} ({} -> {}, +{} per iteration)", worst->name,
                       human_ns(worst->baseline_median_ns), human_ns(worst->candidate_median_ns), human_ns(worst->delta_ns));
  if (worst_op != nullptr)
    out += fmt::format("; inside it, most: {} (+{})", short_op_name(worst_op->name), human_ns(worst_op->delta_ns));
  if (worst == nullptr)
    out += "; no single loop-thread stage is significantly slower";
  return out + ".";
}

std::string comparison_lines_text(const Comparison& c) {
  if (c.lines.empty()) return "";
  std::string out = "\nLines (per-iteration medians; matched by file, function and statement text):\n";
  std::string fn;
  for (const auto& l : c.lines) {
    const std::string here = base_name(l.file) + ": " + l.function;
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
    if (l.match == "edited") {
      std::string cand = l.candidate_code.size() > 60 ? l.candidate_code.substr(0, 57) + "..." : l.candidate_code;
      code = fmt::format("{}  ->  {}", code, cand);
    }
    out += fmt::format("{:>5} {:>5} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {:<22} {}\n", num(l.baseline_line),
                       num(l.candidate_line), l.baseline_line ? human_ns(m.baseline_median_ns) : "-",
                       l.candidate_line ? human_ns(m.candidate_median_ns) : "-", delta, ratio, ci, p,
                       l.match == "edited" ? std::string("edited, ") + to_string(m.verdict) : to_string(m.verdict), code);
  }
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
  out += fmt::format("baseline:  {} ({} of {} runs usable, {} iterations)\n", c.baseline.command.empty() ? "-" : c.baseline.command,
                     runs_ok(c.baseline), c.baseline.runs.size(), it.baseline_n);
  out += fmt::format("candidate: {} ({} of {} runs usable, {} iterations)\n",
                     c.candidate.command.empty() ? "-" : c.candidate.command, runs_ok(c.candidate), c.candidate.runs.size(),
                     it.candidate_n);
  out += fmt::format("per-iteration medians; first {} iterations of each run skipped; 95% CI: bootstrap of the ratio; p: Mann-Whitney U\n\n",
                     c.options.skip);
  std::size_t w = 18;  // no name cut
  for (const auto& m : c.metrics)
    if (ops || !m.op()) w = std::max(w, (m.op() ? short_op_name(m.name).size() + 2 : m.name.size()) + 1);
  out += fmt::format("{:<{}} {:<13} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {}\n", "metric", w, "scope", "baseline", "candidate",
                     "delta", "ratio", "95% CI", "p", "verdict");
  std::size_t op_rows = 0, ops_slower = 0, ops_faster = 0;
  std::vector<const MetricComparison*> slower_ops;
  for (const auto& m : c.metrics) {
    if (m.op()) {
      ++op_rows;
      ops_slower += m.verdict == Verdict::kSlower ? 1 : 0;
      ops_faster += m.verdict == Verdict::kFaster ? 1 : 0;
      if (m.verdict == Verdict::kSlower) slower_ops.push_back(&m);
      if (!ops) continue;
    }
    const std::string ratio = ratio_text(m.ratio);
    const std::string ci = ci_text(m.ci_low, m.ci_high, CiStyle::kBracket);
    const std::string p = p_text(m.p_value);
    // fmt rather than const char* + std::string: GCC 12 misreports that operator+ (-Wrestrict).
    const std::string delta = fmt::format("{}{}", m.delta_ns > 0 ? "+" : "", human_ns(m.delta_ns));
    const char* scope = m.scope == Scope::kLoop ? "loop" : m.scope == Scope::kLoopThread ? "loop thread" : "other threads";
    out += fmt::format("{:<{}} {:<13} {:>10} {:>10} {:>10} {:>7} {:>17} {:>9}  {}\n", m.op() ? "  " + short_op_name(m.name) : m.name,
                       w, scope, human_ns(m.baseline_median_ns), human_ns(m.candidate_median_ns), delta, ratio, ci, p, to_string(m.verdict));
  }
  if (op_rows > 0 && !ops) {
    out += fmt::format("{} torch op metrics ({} slower, {} faster); `--ops` lists them under their phase.", op_rows, ops_slower,
                       ops_faster);
    std::stable_sort(slower_ops.begin(), slower_ops.end(),
                     [](const MetricComparison* x, const MetricComparison* y) { return x->delta_ns > y->delta_ns; });
    for (std::size_t i = 0; i < slower_ops.size() && i < 3; ++i)
      out += fmt::format("{} {}{} +{}", i == 0 ? " Slower most:" : ",", short_op_name(slower_ops[i]->name),
                         slower_ops[i]->phase.empty() ? "" : " in " + slower_ops[i]->phase, human_ns(slower_ops[i]->delta_ns));
    out += "\n";
  }
  if (!c.lines.empty()) out += comparison_lines_text(c);
  out += "\n";
  if (c.speedup) {
    out += fmt::format("Headline: iteration {} -> {}: {:.3f}x speedup", human_ns(it.baseline_median_ns),
                       human_ns(it.candidate_median_ns), *c.speedup);
    if (c.speedup_ci_low) out += fmt::format(" (95% CI {:.3f}x to {:.3f}x)", *c.speedup_ci_low, *c.speedup_ci_high);
    out += fmt::format("; verdict: {}\n", to_string(c.verdict));
    if (const std::string slow = slower_summary(c); !slow.empty()) out += slow + "\n";
  } else {
    out += "Headline: no iterations to compare\n";
  }
  return out;
}

}  // namespace gnnprof::reports
