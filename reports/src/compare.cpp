// compare.cpp — the comparison model: per-metric statistics (medians, bootstrap CI of the ratio,
// Mann-Whitney p, verdict) over two sets of profiles, and the line tables matched across sides.
// Its JSON is compare_json.cpp, its text compare_text.cpp, its HTML compare_html.cpp.
#include "gnnprof/reports/compare.h"

#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <tuple>

#include "gnnprof/gnnprof.h"
#include "gnnprof/internal/enum_names.h"
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
    case Scope::kWorkers: return "workers";
  }
  return "loop";
}

const char* to_string(Match m) noexcept {
  switch (m) {
    case Match::kSame: return "same";
    case Match::kEdited: return "edited";
    case Match::kBaselineOnly: return "baseline only";
    case Match::kCandidateOnly: return "candidate only";
  }
  return "same";
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
    case Verdict::kMovedToWorkers: return "moved to workers";
    case Verdict::kMovedToLoop: return "moved to the loop";
    case Verdict::kMovedOffLoopThread: return "moved off the loop thread";
    case Verdict::kMovedToLoopThread: return "moved to the loop thread";
  }
  return "no significant change";
}

bool from_string(std::string_view text, Scope& out) noexcept {
  return detail::enum_from_name(text, {Scope::kLoop, Scope::kLoopThread, Scope::kOtherThreads, Scope::kLine, Scope::kWorkers}, out);
}

bool from_string(std::string_view text, Match& out) noexcept {
  return detail::enum_from_name(text, {Match::kSame, Match::kEdited, Match::kBaselineOnly, Match::kCandidateOnly}, out);
}

bool from_string(std::string_view text, Verdict& out) noexcept {
  return detail::enum_from_name(text,
                                {Verdict::kNoChange, Verdict::kFaster, Verdict::kSlower, Verdict::kLess, Verdict::kMore,
                                 Verdict::kBaselineOnly, Verdict::kCandidateOnly, Verdict::kMovedToWorkers, Verdict::kMovedToLoop,
                                 Verdict::kMovedOffLoopThread, Verdict::kMovedToLoopThread},
                                out);
}

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
  std::vector<std::uint32_t> loop_run;  // the run (profile) each loop sample came from
  std::vector<std::int64_t> unattributed;  // the loop thread's time outside every stage
  std::map<std::string, std::vector<std::int64_t>> loop_thread, other;
  std::vector<std::uint32_t> observed_run;  // the run of each unattributed / loop_thread / other sample
  std::set<std::string> present;  // stages that ran in some iteration of this side
};

Samples collect(const std::vector<Profile>& profiles, std::int64_t skip_option, const std::set<std::string>& loop_names,
                const std::set<std::string>& other_names) {
  Samples s;
  std::uint32_t run = 0;
  for (const Profile& p : profiles) {
    for (const IterationStats& it : p.iterations) {
      for (const auto& [n, v] : it.stages) s.present.insert(n);
      for (const auto& [n, v] : it.other_threads) s.present.insert(n);
    }
    const std::vector<const IterationStats*> used = complete_past(p, warmup_of(p, skip_option));
    for (const IterationStats* it : used) {
      s.loop.push_back(it->wall_ns);
      s.loop_run.push_back(run);
    }
    // Iteration sampling: stage samples only where the torch observer saw the ops (an
    // unobserved iteration has no forward/backward stages, not zero-time ones).
    for (const IterationStats* it : ops_observed(used)) {
      s.unattributed.push_back(it->unattributed_ns);
      s.observed_run.push_back(run);
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
    ++run;
  }
  return s;
}

/// A DataLoader worker's batches: its complete iterations, less the first when it has more (a
/// worker's first batch pays its imports and first touches, as a loop's warm-up does).
std::vector<const IterationStats*> worker_batches(const Profile& worker) {
  std::vector<const IterationStats*> out;
  for (const IterationStats& it : worker.iterations)
    if (it.complete) out.push_back(&it);
  if (out.size() > 1) out.erase(out.begin());
  return out;
}

/// The workers' per-batch samples: wall time and stages (0 ns where a stage did not run).
struct WorkerSamples {
  std::vector<std::int64_t> batch;
  std::map<std::string, std::vector<std::int64_t>> stages;
  std::set<std::string> present;
};

WorkerSamples collect_workers(const std::vector<Profile>& workers, const std::set<std::string>& names) {
  WorkerSamples s;
  for (const Profile& p : workers) {
    for (const IterationStats& it : p.iterations)
      for (const auto& [n, v] : it.stages) s.present.insert(n);
    const std::vector<const IterationStats*> used = worker_batches(p);
    for (const IterationStats* it : used) s.batch.push_back(it->wall_ns);
    for (const IterationStats* it : ops_observed(used))
      for (const auto& n : names) {
        auto f = it->stages.find(n);
        s.stages[n].push_back(f == it->stages.end() ? 0 : f->second);
      }
  }
  return s;
}

/// A stage that ran in no iteration of one side (an op replaced by another, a stage added): not
/// slower or faster, but that side's only.
void mark_one_side(MetricComparison& m, const std::set<std::string>& baseline, const std::set<std::string>& candidate) {
  if (baseline.count(m.name) == 0) m.verdict = Verdict::kCandidateOnly;
  else if (candidate.count(m.name) == 0) m.verdict = Verdict::kBaselineOnly;
}

/// One scope's stage rows as the comparison lists them: each with its category and phase, by
/// larger median, then phase-first (each phase followed by its ops).
std::vector<MetricComparison> phase_ordered(std::vector<MetricComparison> rows, const std::map<std::string, StagePlace>& places) {
  for (auto& m : rows)
    if (auto f = places.find(m.name); f != places.end()) {
      m.category = f->second.category;
      m.phase = f->second.phase;
      m.phases = f->second.phases;
    }
  std::stable_sort(rows.begin(), rows.end(), [](const MetricComparison& x, const MetricComparison& y) {
    return std::max(x.baseline_median_ns, x.candidate_median_ns) > std::max(y.baseline_median_ns, y.candidate_median_ns);
  });
  return phase_first(std::move(rows), places, [](const MetricComparison& m) { return m.name; });
}

// The percentile bootstrap (95 %) of stat(candidate) / stat(baseline) into m.ci_low/ci_high.
template <class Stat>
void bootstrap_ratio_ci(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b, const CompareOptions& opt,
                        std::mt19937_64& rng, Stat stat, MetricComparison& m) {
  if (a.empty() || b.empty() || opt.bootstrap == 0) return;
  std::vector<double> ratios;
  ratios.reserve(opt.bootstrap);
  std::vector<std::int64_t> ra(a.size()), rb(b.size());
  std::uniform_int_distribution<std::size_t> da(0, a.size() - 1), db(0, b.size() - 1);
  for (std::uint32_t r = 0; r < opt.bootstrap; ++r) {
    for (auto& x : ra) x = a[da(rng)];
    for (auto& x : rb) x = b[db(rng)];
    const double ma = stat(ra);
    if (ma > 0) ratios.push_back(stat(rb) / ma);
  }
  if (ratios.size() < opt.bootstrap / 2) return;
  std::sort(ratios.begin(), ratios.end());
  auto at = [&](double q) { return ratios[static_cast<std::size_t>(q * static_cast<double>(ratios.size() - 1))]; };
  m.ci_low = at(0.025);
  m.ci_high = at(0.975);
}

/// A side's samples grouped by run (empty without run indices).
using Runs = std::vector<std::vector<std::int64_t>>;
Runs by_run(const std::vector<std::int64_t>& v, const std::vector<std::uint32_t>* run) {
  if (run == nullptr || run->size() != v.size()) return {};
  std::map<std::uint32_t, std::vector<std::int64_t>> m;
  for (std::size_t i = 0; i < v.size(); ++i) m[(*run)[i]].push_back(v[i]);
  Runs out;
  for (auto& [k, x] : m) out.push_back(std::move(x));
  return out;
}

/// Welch's t-test on two samples (two-sided p), and the 1 - alpha interval of the difference of
/// their means (b - a) from the same t: an interval and a p that cannot disagree.
struct Welch {
  double p = 1.0;
  std::optional<double> diff_low, diff_high;
  double mean_a = 0, mean_b = 0;
};
Welch welch(const std::vector<double>& a, const std::vector<double>& b, double alpha);

/// kMinRuns or more runs on each side: the runs are the samples (each run's statistic), since the
/// iterations of one run share its drift (another tenant, the CPU's clock, a run that lands in
/// a slower mode). p is Welch's t on the runs' statistics, the interval the same t's, as a ratio
/// to the baseline runs' mean: a bootstrap of 3 runs would be far too narrow.
template <class Stat>
bool compare_runs(const Runs& a, const Runs& b, const CompareOptions& opt, Stat stat, MetricComparison& m) {
  if (a.size() < kMinRuns || b.size() < kMinRuns) return false;
  std::vector<double> sa, sb;
  for (const auto& r : a) sa.push_back(stat(r));
  for (const auto& r : b) sb.push_back(stat(r));
  m.baseline_runs = static_cast<std::uint32_t>(a.size());
  m.candidate_runs = static_cast<std::uint32_t>(b.size());
  const Welch w = welch(sa, sb, opt.alpha);
  m.p_value = w.p;
  // The row's figures are the same statistic's (the mean of the runs' medians, or means), so
  // that its ratio, delta and verdict agree with its p and interval.
  m.baseline_median_ns = std::llround(w.mean_a);
  m.candidate_median_ns = std::llround(w.mean_b);
  m.delta_ns = m.candidate_median_ns - m.baseline_median_ns;
  m.ratio = w.mean_a > 0 ? std::optional<double>(w.mean_b / w.mean_a) : std::nullopt;
  if (w.mean_a > 0 && w.diff_low && w.diff_high) {
    m.ci_low = std::max(0.0, 1.0 + *w.diff_low / w.mean_a);
    m.ci_high = 1.0 + *w.diff_high / w.mean_a;
  }
  return true;
}

MetricComparison compare_metric(const std::string& name, Scope scope, const std::vector<std::int64_t>& a,
                                const std::vector<std::int64_t>& b, const CompareOptions& opt, std::mt19937_64& rng,
                                bool hidden_time = false, const std::vector<std::uint32_t>* a_run = nullptr,
                                const std::vector<std::uint32_t>* b_run = nullptr) {
  MetricComparison m;
  m.name = name;
  m.scope = scope;
  m.baseline_n = a.size();
  m.candidate_n = b.size();
  m.baseline_median_ns = median_of(a);
  m.candidate_median_ns = median_of(b);
  m.delta_ns = m.candidate_median_ns - m.baseline_median_ns;
  if (m.baseline_median_ns > 0) m.ratio = static_cast<double>(m.candidate_median_ns) / static_cast<double>(m.baseline_median_ns);
  auto med = [](const std::vector<std::int64_t>& v) { return static_cast<double>(median_of(v)); };
  if (!compare_runs(by_run(a, a_run), by_run(b, b_run), opt, med, m)) {
    m.p_value = mann_whitney_p(a, b);
    bootstrap_ratio_ci(a, b, opt, rng, med, m);
  }
  const bool differs = m.p_value < opt.alpha && m.delta_ns != 0 &&
                       (!m.ci_low || *m.ci_high < 1.0 || *m.ci_low > 1.0);
  // Time on other threads or in worker processes is off the critical path: more of it is not "slower".
  const bool hidden = hidden_time || scope == Scope::kOtherThreads || scope == Scope::kWorkers;
  m.verdict = !differs ? Verdict::kNoChange
                       : (m.delta_ns < 0 ? (hidden ? Verdict::kLess : Verdict::kFaster) : (hidden ? Verdict::kMore : Verdict::kSlower));
  return m;
}

double mean_value(const std::vector<std::int64_t>& v) {
  if (v.empty()) return 0;
  long double sum = 0;
  for (auto x : v) sum += static_cast<long double>(x);
  return static_cast<double>(sum / static_cast<long double>(v.size()));
}

// Welch's t-test, two-sided, Student's t with the Welch-Satterthwaite degrees of freedom
// (right for few iterations, or few runs, too, where a normal approximation would be
// anti-conservative).
Welch welch(const std::vector<double>& a, const std::vector<double>& b, double alpha) {
  Welch w;
  if (a.size() < 2 || b.size() < 2) return w;
  auto mean_of = [](const std::vector<double>& v) {
    long double sum = 0;
    for (double x : v) sum += x;
    return static_cast<double>(sum / static_cast<long double>(v.size()));
  };
  const double ma = mean_of(a), mb = mean_of(b);
  w.mean_a = ma;
  w.mean_b = mb;
  const double na = static_cast<double>(a.size()), nb = static_cast<double>(b.size());
  double va = 0, vb = 0;
  for (double x : a) va += (x - ma) * (x - ma);
  for (double x : b) vb += (x - mb) * (x - mb);
  const double sa = va / (na - 1) / na, sb = vb / (nb - 1) / nb;  // squared standard errors
  const double se = std::sqrt(sa + sb);
  if (se <= 0) {
    w.p = ma == mb ? 1.0 : 0.0;
    w.diff_low = w.diff_high = mb - ma;
    return w;
  }
  const double df = (sa + sb) * (sa + sb) / (sa * sa / (na - 1) + sb * sb / (nb - 1));
  try {
    const boost::math::students_t t(df);
    w.p = std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(t, std::fabs(mb - ma) / se)));
    const double q = boost::math::quantile(boost::math::complement(t, alpha / 2));
    w.diff_low = (mb - ma) - q * se;
    w.diff_high = (mb - ma) + q * se;
  } catch (...) {  // a degenerate df: no verdict
    w.p = 1.0;
  }
  return w;
}

double welch_p(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  return welch(std::vector<double>(a.begin(), a.end()), std::vector<double>(b.begin(), b.end()), 0.05).p;
}

// The loop's mean iteration: what an epoch takes per iteration, tails included.
MetricComparison compare_mean(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b, const CompareOptions& opt,
                              std::mt19937_64& rng, const std::vector<std::uint32_t>* a_run = nullptr,
                              const std::vector<std::uint32_t>* b_run = nullptr) {
  MetricComparison m;
  m.name = kMeanIteration;
  m.scope = Scope::kLoop;
  m.statistic = "mean";
  m.baseline_n = a.size();
  m.candidate_n = b.size();
  m.baseline_median_ns = std::llround(mean_value(a));
  m.candidate_median_ns = std::llround(mean_value(b));
  m.delta_ns = m.candidate_median_ns - m.baseline_median_ns;
  if (m.baseline_median_ns > 0) m.ratio = mean_value(b) / mean_value(a);
  auto mean = [](const std::vector<std::int64_t>& v) { return mean_value(v); };
  if (!compare_runs(by_run(a, a_run), by_run(b, b_run), opt, mean, m)) {
    m.p_value = welch_p(a, b);
    bootstrap_ratio_ci(a, b, opt, rng, mean, m);
  }
  const bool differs = m.p_value < opt.alpha && m.delta_ns != 0 && (!m.ci_low || *m.ci_high < 1.0 || *m.ci_low > 1.0);
  m.verdict = !differs ? Verdict::kNoChange : (m.delta_ns < 0 ? Verdict::kFaster : Verdict::kSlower);
  return m;
}

}  // namespace

/// How the warm-up was left out of each run, for the statistics' sentence.
std::string skip_text(std::int64_t skip) {
  return skip >= 0 ? fmt::format("first {} iterations of each run skipped", skip)
                   : std::string("each run's warm-up left out as `gnnprof report` detects it (leading iterations over 1.5x the "
                                 "median)");
}

std::string statistics_note(const Comparison& c) {
  const MetricComparison* it = c.metrics.empty() ? nullptr : &c.metrics.front();
  std::string s;
  if (it != nullptr && runs_are_samples(*it)) {
    s = fmt::format(
        "per-iteration medians pooled over {} and {} runs; {}; the runs are the "
        "samples: p: Welch's t on the runs' medians (iteration (mean): on their means), CI: the same t's interval as a "
        "ratio to the baseline runs' mean",
        it->baseline_runs, it->candidate_runs, skip_text(c.options.skip));
    const auto fewer = std::count_if(c.metrics.begin(), c.metrics.end(), [](const MetricComparison& m) {
      return (m.scope == Scope::kLoopThread || m.scope == Scope::kOtherThreads) && m.baseline_runs == 0;
    });
    if (fewer > 0)
      s += fmt::format(" ({} stage or op rows with samples in fewer than {} runs of a side, under iteration sampling: over "
                       "their iterations)",
                       fewer, kMinRuns);
  } else {
    s = fmt::format(
        "per-iteration medians; {}; 95% CI: bootstrap of the ratio; p: Mann-Whitney U "
        "(iteration (mean): means, Welch's t)",
        skip_text(c.options.skip));
  }
  s += fmt::format("; a verdict needs p < {:.2g} and the CI clear of 1", c.options.alpha);
  if (it != nullptr && (it->baseline_n < 9 || it->candidate_n < 9))
    s += fmt::format("\nfew iterations ({} and {}): the intervals and p-values are rough; profile more iterations",
                     it->baseline_n, it->candidate_n);
  if (it != nullptr && !runs_are_samples(*it))
    s += "\nfewer than 3 runs per side: the intervals cover the iterations within each run, not the drift between runs (another "
         "tenant, the CPU's clock, a run in a slower mode), which can make a difference of several percent look significant; "
         "give 3 or more runs per side (gnnprof check --baseline B1.json --baseline B2.json --baseline B3.json C1.json C2.json "
         "C3.json, `gnnprof ab "
         "--repeat N`) and the runs are the samples";
  return s;
}

void describe_run(const Profile& profile, std::int64_t skip_option, RunRecord& run) {
  std::vector<std::int64_t> walls;
  for (const IterationStats* it : complete_past(profile, warmup_of(profile, skip_option))) walls.push_back(it->wall_ns);
  run.iterations = walls.size();
  run.median_iteration_ns = median_of(walls);
  run.line_events = line_events_per_iteration(profile);
  if (profile.run.exit_code) run.exit_code = static_cast<int>(*profile.run.exit_code);  // a runner's own stays otherwise
}

namespace {

// A DataLoader's batches come from "enumerate(DataLoader)#<its iterator class>.__next__": a
// side with workers has _MultiProcessingDataLoaderIter's, one without _SingleProcessDataLoaderIter's.
// When the sides' sets differ, each side's become kLoaderNext: one stage, compared.
std::set<std::string> loader_next_names(const std::vector<Profile>& side) {
  std::set<std::string> out;
  for (const Profile& p : side)
    for (const auto& s : p.stages)
      if (is_loader_scope(s.name) && s.name.size() > 9 && s.name.compare(s.name.size() - 9, 9, ".__next__") == 0)
        out.insert(s.name);
  return out;
}

void rename_stage(Profile& p, const std::string& from, const std::string& to) {
  // Into `to`'s row when there is one already (a side with both iterator classes): one row.
  StageStats* into = nullptr;
  for (auto& s : p.stages)
    if (s.name == to) into = &s;
  for (auto it = p.stages.begin(); it != p.stages.end();) {
    if (it->name != from) {
      ++it;
      continue;
    }
    if (into == nullptr) {
      it->name = to;
      into = &*it;
      ++it;
      continue;
    }
    into->hits += it->hits;
    into->total_ns += it->total_ns;
    into->self_ns += it->self_ns;
    into->max_ns = std::max(into->max_ns, it->max_ns);
    const std::ptrdiff_t at = into - p.stages.data();
    const std::ptrdiff_t here = it - p.stages.begin();
    it = p.stages.erase(it);
    if (here < at) --into;  // the row moved up by one
  }
  for (auto& e : p.stage_edges) {
    if (e.parent == from) e.parent = to;
    if (e.child == from) e.child = to;
  }
  auto rekey = [&](std::map<std::string, std::int64_t>& m) {
    if (auto f = m.find(from); f != m.end()) {
      m[to] += f->second;
      m.erase(from);
    }
  };
  for (auto& it : p.iterations) {
    rekey(it.stages);
    rekey(it.other_threads);
  }
  for (auto& l : p.lines) rekey(l.stages);
}

}  // namespace

Comparison compare_profiles(const std::vector<Profile>& baseline_in, const std::vector<Profile>& candidate_in,
                            const CompareOptions& options, const std::vector<Profile>& baseline_workers,
                            const std::vector<Profile>& candidate_workers) {
  const std::set<std::string> la = loader_next_names(baseline_in), lb = loader_next_names(candidate_in);
  std::vector<Profile> renamed[2];
  if (!la.empty() && !lb.empty() && la != lb) {
    renamed[0] = baseline_in;
    renamed[1] = candidate_in;
    for (Profile& p : renamed[0])
      for (const auto& n : la) rename_stage(p, n, kLoaderNext);
    for (Profile& p : renamed[1])
      for (const auto& n : lb) rename_stage(p, n, kLoaderNext);
  }
  const std::vector<Profile>& baseline = renamed[0].empty() ? baseline_in : renamed[0];
  const std::vector<Profile>& candidate = renamed[1].empty() ? candidate_in : renamed[1];
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
  c.metrics.push_back(compare_metric("iteration", Scope::kLoop, a.loop, b.loop, options, rng, false, &a.loop_run, &b.loop_run));
  std::mt19937_64 mean_rng(options.seed ^ 0x6d65616eULL);  // its own draws: the other rows' CIs stay as they were
  c.metrics.push_back(compare_mean(a.loop, b.loop, options, mean_rng, &a.loop_run, &b.loop_run));
  std::vector<MetricComparison> stages;
  for (const auto& n : loop_names)
    stages.push_back(compare_metric(n, Scope::kLoopThread, a.loop_thread[n], b.loop_thread[n], options, rng, false, &a.observed_run,
                                    &b.observed_run));
  for (const auto& n : other_names)
    stages.push_back(
        compare_metric(n, Scope::kOtherThreads, a.other[n], b.other[n], options, rng, false, &a.observed_run, &b.observed_run));
  for (auto& m : stages) mark_one_side(m, a.present, b.present);
  std::vector<const Profile*> all;
  for (const auto* side : {&baseline, &candidate})
    for (const Profile& p : *side) all.push_back(&p);
  const auto places = stage_places(all);
  for (Scope scope : {Scope::kLoopThread, Scope::kOtherThreads}) {
    std::vector<MetricComparison> rows;
    for (const auto& m : stages)
      if (m.scope == scope) rows.push_back(m);
    rows = phase_ordered(std::move(rows), places);
    c.metrics.insert(c.metrics.end(), rows.begin(), rows.end());
    // After the loop thread's stages, its time outside every stage (a sleep, Python no stage covers).
    if (scope == Scope::kLoopThread)
      c.metrics.push_back(compare_metric(kUnattributed, Scope::kLoopThread, a.unattributed, b.unattributed, options, rng, false,
                                         &a.observed_run, &b.observed_run));
  }
  // DataLoader workers (either side): per batch, hidden unless the loop waits for them (its
  // DataLoader __next__ row says how long it did).
  if (!baseline_workers.empty() || !candidate_workers.empty()) {
    std::set<std::string> names;
    std::vector<const Profile*> ws;
    for (const auto* side : {&baseline_workers, &candidate_workers})
      for (const Profile& p : *side) {
        ws.push_back(&p);
        for (const IterationStats& it : p.iterations)
          for (const auto& [n, v] : it.stages) names.insert(n);
      }
    const WorkerSamples wa = collect_workers(baseline_workers, names), wb = collect_workers(candidate_workers, names);
    MetricComparison batch = compare_metric(kWorkerBatch, Scope::kWorkers, wa.batch, wb.batch, options, rng);
    if (baseline_workers.empty() || candidate_workers.empty())
      batch.verdict = baseline_workers.empty() ? Verdict::kCandidateOnly : Verdict::kBaselineOnly;
    c.metrics.push_back(batch);
    const auto worker_places = stage_places(ws);
    std::vector<MetricComparison> rows;
    for (const auto& n : names) {
      auto fa = wa.stages.find(n), fb = wb.stages.find(n);
      static const std::vector<std::int64_t> kNone;
      MetricComparison m = compare_metric(n, Scope::kWorkers, fa == wa.stages.end() ? kNone : fa->second,
                                          fb == wb.stages.end() ? kNone : fb->second, options, rng);
      mark_one_side(m, wa.present, wb.present);
      rows.push_back(std::move(m));
    }
    rows = phase_ordered(std::move(rows), worker_places);
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
  auto passes = [](const std::vector<Profile>& side) -> std::optional<double> {
    double sum = 0;
    int n = 0;
    for (const Profile& p : side)
      if (auto v = backward_passes_per_iteration(p)) {
        sum += *v;
        ++n;
      }
    return n > 0 ? std::optional<double>(sum / n) : std::nullopt;
  };
  c.baseline_passes = passes(baseline);
  c.candidate_passes = passes(candidate);
  c.lines = compare_lines(baseline, candidate, options, baseline_workers, candidate_workers);
  // A line's or an op's change too small to matter (t0 = time.perf_counter() +50 ns, an op +5 us
  // in a 66 ms iteration) is no change, however significant: under 1 us or under 0.1 % of the
  // iteration, whichever is larger.
  const std::int64_t floor = std::max<std::int64_t>(1000, it.baseline_median_ns / 1000);
  auto below_floor = [floor](MetricComparison& m) {
    if ((m.verdict == Verdict::kSlower || m.verdict == Verdict::kFaster || m.verdict == Verdict::kMore ||
         m.verdict == Verdict::kLess) &&
        std::abs(m.delta_ns) < floor)
      m.verdict = Verdict::kNoChange;
  };
  for (auto& l : c.lines) below_floor(l.metric);
  for (auto& m : c.metrics)
    if (m.op()) below_floor(m);
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
  std::vector<std::uint32_t> runs;  ///< the profile (run) of each sample: with 3+ runs a side, the runs are the samples
  bool workers = false;  ///< from DataLoader workers' profiles: samples per batch
  std::int64_t total_ns = 0, off_loop_ns = 0;  ///< over the side's profiles (LineStats)
};

// File key, function, code and line: a statement written twice in one function is two lines.
// Within a side the source is one (its runs and ranks), so the line pools each statement's
// samples exactly; across sides lines are paired by text (compare_lines).
using LineKey = std::tuple<std::string, std::string, std::string, std::uint32_t>;

/// Which file a line is in, for matching: its base name, except that every notebook cell is one
/// file (terminal IPython's <ipython-input-N-HASH>, a Jupyter kernel's ipykernel_PID/HASH.py:
/// names that change with each edit and run), so a function redefined in a new cell meets its
/// old self.
std::string file_key(const std::string& file) {
  static const std::string kCell = "<notebook cell>";
  if (file.rfind("<ipython-input-", 0) == 0) return kCell;
  const std::size_t slash = file.rfind('/');
  if (slash != std::string::npos && file.size() > 3 && file.compare(file.size() - 3, 3, ".py") == 0) {
    const std::size_t dir = file.rfind('/', slash == 0 ? 0 : slash - 1);
    const std::size_t from = dir == std::string::npos ? 0 : dir + 1;
    if (file.compare(from, 10, "ipykernel_") == 0) return kCell;
  }
  return base_name(file);
}

/// `workers`: the profiles are DataLoader workers', whose iterations are batches (worker_batches()).
std::map<LineKey, SideLine> side_lines(const std::vector<Profile>& profiles, std::int64_t skip_option, bool workers) {
  std::map<LineKey, SideLine> out;
  for (std::uint32_t run = 0; run < profiles.size(); ++run) {
    const Profile& p = profiles[run];
    std::vector<const LineKey*> key_of(p.lines.size());
    std::set<LineKey> here;
    for (std::size_t i = 0; i < p.lines.size(); ++i) {
      const LineStats& l = p.lines[i];
      auto [it, fresh] = out.try_emplace(LineKey{file_key(l.file), l.function, l.code, l.line});
      if (fresh) {
        it->second.file = l.file;
        it->second.function = l.function;
        it->second.code = l.code;
        it->second.line = l.line;
        it->second.workers = workers;
      }
      it->second.hits += l.hits;
      it->second.total_ns += l.total_ns;
      it->second.off_loop_ns += std::min(l.off_loop_ns, l.total_ns);
      key_of[i] = &it->first;
      here.insert(it->first);
    }
    std::vector<const IterationStats*> used;
    if (workers) used = worker_batches(p);
    else used = complete_past(p, warmup_of(p, skip_option));
    for (const IterationStats* it : used) {
      std::map<LineKey, std::int64_t> sum;
      for (const LineKey& k : here) sum[k] = 0;  // not run in this iteration: 0 ns
      for (const auto& [idx, ns] : it->lines)
        if (idx < key_of.size()) sum[*key_of[idx]] += ns;
      for (const auto& [k, ns] : sum) {
        out[k].samples.push_back(ns);
        out[k].runs.push_back(run);
      }
    }
  }
  return out;
}

}  // namespace

std::vector<LineComparison> compare_lines(const std::vector<Profile>& baseline, const std::vector<Profile>& candidate,
                                          const CompareOptions& options, const std::vector<Profile>& baseline_workers,
                                          const std::vector<Profile>& candidate_workers) {
  // Profiles without per-iteration line times (written before they existed) have nothing to
  // compare per iteration.
  bool timed = false;
  for (const auto* side : {&baseline, &candidate, &baseline_workers, &candidate_workers})
    for (const Profile& p : *side)
      for (const IterationStats& it : p.iterations) timed = timed || !it.lines.empty();
  if (!timed) return {};
  const std::map<LineKey, SideLine> a = side_lines(baseline, options.skip, false), b = side_lines(candidate, options.skip, false);
  const std::map<LineKey, SideLine> wa = side_lines(baseline_workers, 0, true), wb = side_lines(candidate_workers, 0, true);
  // Per function (base name of its file, name, whether in workers): both sides' statements in
  // source order. A function that ran in the loop's process on one side and in workers on the
  // other (collate_fn under num_workers 0 -> 2) is one table, its lines "moved".
  using FnKey = std::tuple<std::string, std::string, bool>;
  std::map<FnKey, std::vector<const SideLine*>> fa, fb;
  for (const auto* side : {&a, &wa})
    for (const auto& [k, l] : *side) fa[{std::get<0>(k), std::get<1>(k), l.workers}].push_back(&l);
  for (const auto* side : {&b, &wb})
    for (const auto& [k, l] : *side) fb[{std::get<0>(k), std::get<1>(k), l.workers}].push_back(&l);
  std::set<FnKey> crossed;  // the candidate's lines of these ran on the other side of the fork
  for (const auto& [k, v] : std::map<FnKey, std::vector<const SideLine*>>(fa)) {
    const FnKey other{std::get<0>(k), std::get<1>(k), !std::get<2>(k)};
    if (fb.count(k) != 0 || fa.count(other) != 0 || fb.count(other) == 0) continue;
    auto moved = fb.extract(other);
    moved.key() = k;
    fb.insert(std::move(moved));
    crossed.insert(k);
  }
  // A renamed script (train.py -> train_v2.py): a function of a file that only the candidate
  // has meets the baseline's function of that name in a file that only the baseline has, when
  // that pairing is the only one.
  {
    std::set<std::string> files_a, files_b;
    for (const auto& [f, v] : fa) files_a.insert(std::get<0>(f));
    for (const auto& [f, v] : fb) files_b.insert(std::get<0>(f));
    std::map<std::pair<std::string, bool>, std::vector<FnKey>> renamed_a, renamed_b;  // (function, in workers) -> keys
    for (const auto& [f, v] : fa)
      if (files_b.count(std::get<0>(f)) == 0) renamed_a[{std::get<1>(f), std::get<2>(f)}].push_back(f);
    for (const auto& [f, v] : fb)
      if (files_a.count(std::get<0>(f)) == 0) renamed_b[{std::get<1>(f), std::get<2>(f)}].push_back(f);
    for (const auto& [name, ka] : renamed_a) {
      auto kb = renamed_b.find(name);
      if (ka.size() != 1 || kb == renamed_b.end() || kb->second.size() != 1) continue;
      auto moved = fb.extract(kb->second.front());
      moved.key() = ka.front();
      fb.insert(std::move(moved));
    }
  }
  std::set<FnKey> functions;
  for (const auto& [f, v] : fa) functions.insert(f);
  for (const auto& [f, v] : fb) functions.insert(f);
  std::mt19937_64 rng(options.seed + 1);
  std::vector<LineComparison> out;
  auto by_line = [](const SideLine* x, const SideLine* y) { return x->line < y->line; };
  for (const auto& fn : functions) {
    std::vector<const SideLine*> x = fa[fn], y = fb[fn];
    // Whether a side's lines of the function ran mostly off the loop's thread (a prefetcher's).
    auto off_loop = [](const std::vector<const SideLine*>& v) {
      std::int64_t off = 0, all = 0;
      for (const SideLine* l : v) {
        off += l->off_loop_ns;
        all += l->total_ns;
      }
      return all > 0 && 2 * off >= all;
    };
    const bool off_a = off_loop(x), off_b = off_loop(y);
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
    // A statement moved past others (zero_grad() below backward()): one side's only on each
    // side with the same text, once each, is one line, at the candidate's place.
    {
      std::map<std::string, std::pair<int, int>> once;  // code -> counts of unpaired (baseline, candidate)
      for (const auto& [u, v] : pairs) {
        if (v == nullptr) ++once[u->code].first;
        if (u == nullptr) ++once[v->code].second;
      }
      std::map<std::string, const SideLine*> moved;
      for (const auto& [u, v] : pairs)
        if (v == nullptr && once[u->code] == std::make_pair(1, 1)) moved[u->code] = u;
      std::vector<std::pair<const SideLine*, const SideLine*>> kept;
      for (const auto& [u, v] : pairs) {
        if (v == nullptr && moved.count(u->code)) continue;
        if (u == nullptr && moved.count(v->code)) kept.emplace_back(moved[v->code], v);
        else kept.emplace_back(u, v);
      }
      pairs = std::move(kept);
    }
    auto ran = [](const SideLine* l) {
      return l != nullptr && std::any_of(l->samples.begin(), l->samples.end(), [](std::int64_t ns) { return ns > 0; });
    };
    // One file per function, the candidate's: a renamed script's function is one table.
    const std::string& file = !y.empty() ? y.front()->file : x.front()->file;
    for (const auto& [u, v] : pairs) {
      if (!ran(u) && !ran(v)) continue;  // in no analyzed iteration on either side (set-up, evaluation)
      LineComparison lc;
      const SideLine* any = v != nullptr ? v : u;
      lc.file = file;
      lc.function = any->function;
      lc.code = u != nullptr ? u->code : v->code;
      if (u != nullptr && v != nullptr && u->code != v->code) lc.candidate_code = v->code;
      lc.baseline_line = u != nullptr ? u->line : 0;
      lc.candidate_line = v != nullptr ? v->line : 0;
      lc.baseline_hits = u != nullptr ? u->hits : 0;
      lc.candidate_hits = v != nullptr ? v->hits : 0;
      lc.baseline_in_workers = std::get<2>(fn);  // the table's, on both sides
      lc.candidate_in_workers = crossed.count(fn) != 0 ? !std::get<2>(fn) : std::get<2>(fn);
      lc.baseline_off_loop = !lc.baseline_in_workers && off_a;
      lc.candidate_off_loop = !lc.candidate_in_workers && off_b;
      lc.match = u == nullptr                  ? Match::kCandidateOnly
                 : v == nullptr                ? Match::kBaselineOnly
                 : lc.candidate_code.empty()   ? Match::kSame
                                               : Match::kEdited;
      static const SideLine kNone;
      const SideLine& la = u != nullptr ? *u : kNone;
      const SideLine& lb = v != nullptr ? *v : kNone;
      // A line run in fewer than half the iterations on both sides (validation once an epoch):
      // its median over all of them is 0 on both; compare the iterations it ran in.
      auto ran_in = [](const SideLine& l, std::vector<std::int64_t>& s, std::vector<std::uint32_t>& r) {
        for (std::size_t i = 0; i < l.samples.size(); ++i)
          if (l.samples[i] > 0) {
            s.push_back(l.samples[i]);
            r.push_back(l.runs[i]);
          }
      };
      std::vector<std::int64_t> sa, sb;
      std::vector<std::uint32_t> qa, qb;
      ran_in(la, sa, qa);
      ran_in(lb, sb, qb);
      lc.sparse = 2 * sa.size() < la.samples.size() && 2 * sb.size() < lb.samples.size();
      // As a stage's: 3+ runs a side make the runs the samples (a workers' line: its profiles are
      // processes of one run, and its samples batches).
      const bool workers = la.workers || lb.workers;
      lc.metric = compare_metric(fmt::format("{}:{}", base_name(any->file), any->line), Scope::kLine, lc.sparse ? sa : la.samples,
                                 lc.sparse ? sb : lb.samples, options, rng, lc.baseline_in_workers && lc.candidate_in_workers,
                                 workers ? nullptr : lc.sparse ? &qa : &la.runs, workers ? nullptr : lc.sparse ? &qb : &lb.runs);
      if (u == nullptr || v == nullptr) lc.metric.verdict = u == nullptr ? Verdict::kCandidateOnly : Verdict::kBaselineOnly;
      else if (lc.baseline_in_workers != lc.candidate_in_workers)
        lc.metric.verdict = lc.candidate_in_workers ? Verdict::kMovedToWorkers : Verdict::kMovedToLoop;
      else if (!lc.baseline_in_workers && lc.baseline_off_loop != lc.candidate_off_loop)
        lc.metric.verdict = lc.candidate_off_loop ? Verdict::kMovedOffLoopThread : Verdict::kMovedToLoopThread;
      out.push_back(std::move(lc));
    }
  }
  return out;
}

}  // namespace gnnprof::reports
