#include "gnnprof/reports/analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "gnnprof/gnnprof_c.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/line_table.h"
#include "gnnprof/reports/loader_fetch.h"
#include "gnnprof/reports/loader_workers.h"
#include "gnnprof/order_stats.h"

namespace gnnprof::reports {

namespace {

// The upper middle sample (not median_of, which averages the two middle ones for an even
// count): the analysis reports values that some iteration actually had.
std::int64_t median(std::vector<std::int64_t> v) { return upper_median(std::move(v)); }
std::int64_t mean(const std::vector<std::int64_t>& v) {
  if (v.empty()) return 0;
  long double s = 0;
  for (auto x : v) s += static_cast<long double>(x);
  return static_cast<std::int64_t>(s / static_cast<long double>(v.size()));
}

std::vector<IterationStage> stage_rows(const std::vector<const IterationStats*>& its,
                                       const std::map<std::string, std::string>& category, bool loop, std::int64_t iter_median) {
  std::map<std::string, std::vector<std::int64_t>> per;
  for (const auto* it : its)
    for (const auto& [n, v] : loop ? it->stages : it->other_threads) per[n];
  for (const auto* it : its) {
    const auto& m = loop ? it->stages : it->other_threads;
    for (auto& [n, v] : per) {
      auto f = m.find(n);
      v.push_back(f == m.end() ? 0 : f->second);
    }
  }
  std::vector<IterationStage> rows;
  for (auto& [n, v] : per) {
    IterationStage s;
    s.name = n;
    auto c = category.find(n);
    s.category = c == category.end() ? "" : c->second;
    s.median_ns = median(v);
    s.p90_ns = quantile_of(v, 0.9);
    s.mean_ns = mean(v);
    s.share = iter_median > 0 ? static_cast<double>(s.median_ns) / static_cast<double>(iter_median) : 0;
    rows.push_back(s);
  }
  std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.median_ns > b.median_ns; });
  return rows;
}

/// The loop waiting for other workers: a prefetcher's queue, a DataLoader's worker processes,
/// the program's own producers. Data time, but not the loop's own Python.
bool is_data_wait(std::string_view stage) {
  return stage == "loader_wait" || stage == kProducerWaitStage || stage == kAwaitStage || is_worker_wait(stage);
}

/// Whether torch computes on fewer threads than CPUs (the Python package's last "torch threads"
/// sample) and the process keeps about that many busy: short iterations then are not CPUs idle
/// for want of work per iteration.
bool torch_threads_busy(const Profile& p, double cpu_utilization) {
  double threads = 0;
  for (const auto& c : p.counters)
    if (c.name == kTorchThreadsCounter) threads = c.last;
  return threads > 0 && p.environment.cpus > 0 && threads < static_cast<double>(p.environment.cpus) &&
         cpu_utilization * static_cast<double>(p.environment.cpus) >= 0.8 * threads;
}

/// The median wall of the iterations whose ops were observed and of those whose ops were not
/// (iteration sampling): an iteration is slow against its own kind. A kind of fewer than 3
/// iterations uses the median of all.
struct ClassMedians {
  std::int64_t all = 0, observed = 0, unobserved = 0;
  explicit ClassMedians(const std::vector<const IterationStats*>& its) {
    std::vector<std::int64_t> w, o, u;
    for (const auto* it : its) {
      w.push_back(it->wall_ns);
      (it->ops_observed ? o : u).push_back(it->wall_ns);
    }
    all = median(w);
    observed = o.size() >= 3 && !u.empty() ? median(o) : all;
    unobserved = u.size() >= 3 && !o.empty() ? median(u) : all;
  }
  std::int64_t of(const IterationStats& it) const { return it.ops_observed ? observed : unobserved; }
};

/// Iteration sampling: an observed iteration carries the observer's cost (torch calls it around
/// every op), and op-dense stages most. The scopes that every iteration records (a
/// record_function, the DataLoader's next, the optimizer step) are timed without that cost in
/// the unobserved iterations, so each observed one is scaled: a scope, and what nests in it, to
/// the scope's median in the unobserved iterations over its median in the observed ones (at most
/// 1; up to 4 for a wait for other workers); the rest of the loop thread's time likewise. Empty
/// under 3 unobserved iterations, or without stage edges when scopes could nest.
std::vector<IterationStats> observer_correction(const Profile& p, const std::vector<const IterationStats*>& observed,
                                                const std::vector<const IterationStats*>& unobserved,
                                                const std::map<std::string, std::string>& category,
                                                std::vector<Analysis::ObserverScale>& scales) {
  if (unobserved.size() < 3 || observed.empty()) return {};
  std::map<std::string, std::size_t> seen;
  for (const auto* it : unobserved)
    for (const auto& [n, v] : it->stages)
      if (v > 0 && n != kOwnWorkStage) ++seen[n];
  std::set<std::string> scopes;
  for (const auto& [n, k] : seen)
    if (2 * k >= unobserved.size()) scopes.insert(n);
  // Without stage edges (profiles before 2026-11-24) which scope nests in which is unknown:
  // two would both count as the iteration's, and the rest come out short.
  if (p.stage_edges.empty() && scopes.size() > 1) return {};
  // What nests in each scope (the stage edges, parent to child, transitively).
  std::map<std::string, std::vector<std::string>> children;
  for (const auto& e : p.stage_edges) children[e.parent].push_back(e.child);
  std::map<std::string, std::set<std::string>> inside;
  for (const auto& sc : scopes) {
    std::set<std::string>& in = inside[sc];
    std::vector<std::string> todo{sc};
    while (!todo.empty()) {
      const std::string n = std::move(todo.back());
      todo.pop_back();
      for (const auto& c : children[n])
        if (in.insert(c).second) todo.push_back(c);
    }
  }
  std::vector<std::string> tops;  // scopes in no other scope (or in one that is also in them)
  for (const auto& sc : scopes)
    if (std::none_of(scopes.begin(), scopes.end(),
                     [&](const std::string& o) { return o != sc && inside[o].count(sc) && !inside[sc].count(o); }))
      tops.push_back(sc);
  auto at = [](const IterationStats& it, const std::string& n) {
    auto f = it.stages.find(n);
    return f == it.stages.end() ? std::int64_t{0} : f->second;
  };
  auto rest = [&](const IterationStats& it) {
    std::int64_t r = it.wall_ns;
    for (const auto& t : tops) r -= at(it, t);
    return std::max<std::int64_t>(0, r);
  };
  auto medians = [&](auto get) {
    std::vector<std::int64_t> o, u;
    for (const auto* it : observed) o.push_back(get(*it));
    for (const auto* it : unobserved) u.push_back(get(*it));
    return std::pair{median(o), median(u)};
  };
  // At most 1: the observer adds time. Except a wait for other workers (a DataLoader's worker
  // processes, a prefetcher's queue): the slower observed loop finds more batches ready, so the
  // faster unobserved one waits longer (at most 4x).
  auto factor_of = [](std::pair<std::int64_t, std::int64_t> m, double most) {
    return m.first > 0 ? std::clamp(static_cast<double>(m.second) / static_cast<double>(m.first), 0.0, most) : 1.0;
  };
  std::map<std::string, double> factor;
  for (const auto& sc : scopes) {
    const auto m = medians([&](const IterationStats& it) { return at(it, sc); });
    factor[sc] = factor_of(m, is_data_wait(sc) ? 4.0 : 1.0);
    if (std::find(tops.begin(), tops.end(), sc) != tops.end()) scales.push_back({sc, m.first, m.second});
  }
  const auto rm = medians(rest);
  const double f_rest = factor_of(rm, 1.0);
  std::stable_sort(scales.begin(), scales.end(), [](const auto& x, const auto& y) { return x.observed_ns > y.observed_ns; });
  scales.push_back({"", rm.first, rm.second});
  auto factor_for = [&](const std::string& n) {
    if (auto f = factor.find(n); f != factor.end()) return f->second;
    for (const auto& t : tops)
      if (inside[t].count(n)) return factor[t];
    return f_rest;
  };
  auto scaled = [](std::int64_t v, double f) { return static_cast<std::int64_t>(std::llround(static_cast<double>(v) * f)); };
  std::vector<IterationStats> out;
  out.reserve(observed.size());
  for (const auto* src : observed) {
    IterationStats it = *src;
    std::map<std::string, std::pair<double, double>> by_category;  // time, scaled time
    for (auto& [n, v] : it.stages) {
      const double f = factor_for(n);
      if (auto c = category.find(n); c != category.end()) {
        by_category[c->second].first += static_cast<double>(v);
        by_category[c->second].second += static_cast<double>(v) * f;
      }
      v = scaled(v, f);
    }
    for (auto& [c, v] : it.categories) {
      const auto w = by_category.find(c);
      v = scaled(v, w != by_category.end() && w->second.first > 0 ? w->second.second / w->second.first : f_rest);
    }
    std::int64_t wall = scaled(rest(*src), f_rest);
    for (const auto& t : tops) wall += at(it, t);
    it.wall_ns = wall;
    it.unattributed_ns = scaled(it.unattributed_ns, f_rest);
    out.push_back(std::move(it));
  }
  return out;
}

/// Whether a GPU ran anything this profile recorded: CUPTI on and a GPU range (kernel, copy). A
/// CPU loop on a GPU machine (a CUDA torch loads the runtime, which starts CUPTI) has none.
bool gpu_recorded(const Profile& p) {
  bool cupti = false, gpu = false;
  for (const auto& c : p.collectors) cupti |= c.name == "cupti" && c.enabled;
  for (const auto& st : p.stages) gpu |= st.category == "gpu";
  return cupti && gpu;
}

}  // namespace

bool is_loader_scope(std::string_view stage) noexcept {
  constexpr std::string_view kPrefix = "enumerate(DataLoader)#";
  return stage.rfind(kPrefix, 0) == 0;
}

bool is_worker_wait(std::string_view stage) noexcept {
  return stage.rfind("enumerate(DataLoader)#_MultiProcessing", 0) == 0;
}

/// The complete iterations whose torch ops were observed (op stages' totals cover these).
std::uint64_t observed_complete_iterations(const Profile& p) {
  return static_cast<std::uint64_t>(std::count_if(p.iterations.begin(), p.iterations.end(),
                                                  [](const IterationStats& it) { return it.complete && it.ops_observed; }));
}

std::vector<const IterationStats*> ops_observed(const std::vector<const IterationStats*>& its) {
  std::vector<const IterationStats*> observed;
  for (const auto* it : its)
    if (it->ops_observed) observed.push_back(it);
  return observed.empty() ? its : observed;
}

std::optional<double> backward_passes_per_iteration(const Profile& p) {
  // The torch observer's (or torch's Python hooks') backward: one per loss.backward(). A linked
  // program's own "backward" stages may be per layer.
  if (std::none_of(p.collectors.begin(), p.collectors.end(), [](const CollectorInfo& c) {
        return c.enabled && (c.name == "torch-ops" || c.name == "torch-python");
      }))
    return std::nullopt;
  std::uint64_t hits = 0, observed = 0;
  bool found = false;
  // The loop thread's: autograd's device threads run a pass's ops as backward phases of their own.
  for (const auto& s : p.stages)
    if (s.name == "backward") {
      found = true;
      if (s.by_thread.empty()) hits += s.hits;
      for (const auto& t : s.by_thread) hits += t.thread == p.main_thread ? t.hits : 0;
    }
  observed = observed_complete_iterations(p);
  // Warm-up and the open last iteration's passes are in the hits: too few iterations to tell.
  if (!found || observed < 5) return std::nullopt;
  return static_cast<double>(hits) / static_cast<double>(observed);
}

std::string passes_text(const std::optional<double>& passes) {
  if (!passes || *passes < 1.5) return "";
  return fmt::format("; each holds {:.1f} backward passes (an iteration runs from one optimizer step, or cycle of "
                     "steps, to the next: gradient accumulation, several losses, or several models)",
                     *passes);
}

std::string sampled_ops_note(const Profile& p, bool gpu_records) {
  std::size_t observed = 0, complete = 0;  // complete iterations, as the stage table counts them
  for (const auto& it : p.iterations)
    if (it.complete) {
      ++complete;
      observed += it.ops_observed ? 1 : 0;
    }
  if (observed == complete) return "";
  std::string note = fmt::format(
      "Iteration sampling: the torch observer's figures here (copies, gathers, kernels' ops) are from the "
      "{} of {} iterations whose ops it observed, not scaled; the line table scales them per line (~).",
      observed, complete);
  const bool cupti = std::any_of(p.collectors.begin(), p.collectors.end(),
                                 [](const CollectorInfo& c) { return c.name == "cupti" && c.enabled; });
  if (cupti && gpu_records)
    note += " CUPTI's records of the other iterations' copies and kernels are here too, without their op (and "
            "without a stage unless a record_function scope was open).";
  return note;
}

std::string sampling_note(const Analysis& a) {
  if (a.iterations_unobserved == 0) return "";
  const std::int64_t observed = a.observed_iteration_median_ns > 0 ? a.observed_iteration_median_ns : a.iteration_median_ns;
  const double added =
      a.unobserved_iteration_median_ns > 0
          ? 100.0 * (static_cast<double>(observed) / static_cast<double>(a.unobserved_iteration_median_ns) - 1)
          : 0.0;
  std::string note = fmt::format(
      "Iteration sampling: torch ops observed in {} of {} iterations (median {}); the other {} took {} (median): {}. ",
      a.iterations_used - a.iterations_unobserved, a.iterations_used, human_ns(observed), a.iterations_unobserved,
      human_ns(a.unobserved_iteration_median_ns),
      added > -0.05 ? fmt::format("the observer adds {:+.1f}% to an observed iteration", std::max(added, 0.0))
                    : fmt::format("observed iterations ran {:.1f}% faster, so the observer's cost is within the "
                                  "iterations' spread here",
                                  -added));
  if (a.observer_scales.empty()) return note + "The stage figures are from the observed ones.";
  std::string parts, rest;
  std::size_t listed = 0;
  for (const auto& s : a.observer_scales) {
    const std::string change = fmt::format("{} -> {}", human_ns(s.observed_ns), human_ns(s.unobserved_ns));
    if (s.scope.empty()) {
      rest = change;
    } else if (listed < 3) {
      parts += fmt::format("{}{} {}", listed++ == 0 ? "" : ", ", s.scope, change);
    }
  }
  return note + fmt::format(
                    "The stage figures are the observed iterations' at the others' pace: each scope that every "
                    "iteration records, with what nests in it, scaled to its median there{}; the time outside those "
                    "scopes likewise ({}).",
                    parts.empty() ? "" : " (" + parts + ")", rest);
}

std::size_t detected_warmup(const Profile& p) {
  std::vector<const IterationStats*> complete;
  for (const auto& it : p.iterations)
    if (it.complete) complete.push_back(&it);
  if (complete.empty()) return 0;
  // Against the median of its kind: under iteration sampling the observer's first iterations
  // (it measures its cost in them) are slower for its cost, not for warming up.
  const ClassMedians m(complete);
  const std::size_t n = complete.size();
  const std::size_t limit = std::min<std::size_t>({10, std::max<std::size_t>(2, n / 10), n / 3});
  std::size_t skip = 0;
  while (skip < limit && static_cast<double>(complete[skip]->wall_ns) > 1.5 * static_cast<double>(m.of(*complete[skip]))) ++skip;
  return skip;
}

std::size_t warmup_of(const Profile& p, std::int64_t skip) {
  return skip >= 0 ? static_cast<std::size_t>(skip) : detected_warmup(p);
}

std::vector<const IterationStats*> complete_past(const Profile& p, std::size_t skip) {
  std::vector<const IterationStats*> out;
  std::size_t seen = 0;
  for (const IterationStats& it : p.iterations)
    if (it.complete && seen++ >= skip) out.push_back(&it);
  return out;
}

bool python_host(const Profile& p) {
  for (const auto& col : p.collectors)
    if (col.name == "python-lines") return true;
  if (p.run.command.empty()) return false;
  const std::string& exe = p.run.command.front();
  return exe.substr(exe.rfind('/') + 1).rfind("python", 0) == 0;
}

bool holds_traced_functions(const Profile& p, const LineStats& l) {
  if (l.hits > 1) return false;
  std::map<std::pair<std::string, std::string>, std::int64_t> function_ns;
  for (const LineStats& x : p.lines) function_ns[{x.file, x.function}] += x.total_ns;
  if (function_ns.size() < 2) return false;
  const std::int64_t own = function_ns[{l.file, l.function}];
  if (200 * l.total_ns < 199 * std::max<std::int64_t>(1, own)) return false;
  for (const auto& [key, ns] : function_ns)
    if (key != std::make_pair(l.file, l.function) && ns > l.total_ns) return false;
  return true;
}

std::vector<const IterationStats*> analysed_iterations(const Profile& p, const Analysis& a) { return complete_past(p, a.skipped); }

std::optional<GeneratorPrefetch> generator_prefetch(const Profile& p) {
  for (const StageStats& s : p.stages)
    if (s.name == "loader_wait" && s.hits > 0) return std::nullopt;  // already prefetched
  for (const CollectorInfo& c : p.collectors)
    if (c.name == "prefetch" && c.enabled) return std::nullopt;  // through gnnprof.prefetch, at depth 0 too
  std::optional<GeneratorPrefetch> best;
  std::int64_t best_ns = 0;
  for (std::size_t i = 0; i < p.lines.size(); ++i) {
    const LineStats& h = p.lines[i];
    const std::string& code = h.code;  // the statement's text, as the tracer trims it
    if (code.rfind("for ", 0) != 0 || code.back() != ':' || h.hits < 2 || 2 * h.nested_ns < h.total_ns ||
        h.nested_ns <= best_ns || code.find("prefetch(") != std::string::npos)
      continue;
    // ` in ` outside brackets and strings: the iterable's start.
    std::size_t in = std::string::npos;
    int depth = 0;
    char quote = 0;
    for (std::size_t k = 4; k + 4 <= code.size() && in == std::string::npos; ++k) {
      const char c = code[k];
      if (quote != 0) {
        if (c == quote) quote = 0;
      } else if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '(' || c == '[' || c == '{') {
        ++depth;
      } else if (c == ')' || c == ']' || c == '}') {
        --depth;
      } else if (depth == 0 && code.compare(k, 4, " in ") == 0) {
        in = k;
      }
    }
    if (in == std::string::npos) continue;
    const auto under = std::find_if(p.lines.begin(), p.lines.end(), [&](const LineStats& l) {
      return l.caller == static_cast<std::int64_t>(i) && !(l.file == h.file && l.function == h.function);
    });
    if (under == p.lines.end()) continue;
    std::string iterable = code.substr(in + 4, code.size() - 1 - (in + 4));
    while (!iterable.empty() && iterable.back() == ' ') iterable.pop_back();
    best = GeneratorPrefetch{&h, under->function, under->file, code.substr(0, in + 4) + "gnnprof.prefetch(" + iterable + "):"};
    best_ns = h.nested_ns;
  }
  return best;
}

Analysis analyze(const Profile& p, const AnalysisOptions& options) {
  Analysis a;
  for (const auto& c : p.collectors) a.loader_worker = a.loader_worker || (c.name == "loader-worker" && c.enabled);
  std::map<std::string, std::string> category;
  for (const auto& s : p.stages) category.emplace(s.name, s.category);

  std::vector<const IterationStats*> complete;
  for (const auto& it : p.iterations)
    if (it.complete) complete.push_back(&it);
  a.iterations_total = complete.size();
  std::size_t skip = 0;
  if (options.skip >= 0) {
    skip = std::min<std::size_t>(complete.size(), static_cast<std::size_t>(options.skip));
  } else if (!complete.empty()) {
    skip = detected_warmup(p);
    a.skip_detected = true;
  }
  a.skipped = skip;
  std::vector<const IterationStats*> its = analysed_iterations(p, a);
  a.iterations_used = its.size();
  // Iteration sampling (zero-code observer): iterations whose ops were not observed hold the
  // user scopes alone. The stage figures come from the observed ones; the others give the
  // iteration time without the observer's per-op cost.
  {
    std::vector<std::int64_t> all_walls;
    for (const auto* it : its) all_walls.push_back(it->wall_ns);
    a.run_iteration_median_ns = median(all_walls);
    a.run_iteration_p90_ns = quantile_of(all_walls, 0.9);
  }
  std::vector<IterationStats> scaled;  // the observed iterations at the unobserved pace
  if (std::vector<const IterationStats*> observed = ops_observed(its); observed.size() < its.size()) {
    std::vector<std::int64_t> unobserved_walls, observed_walls;
    std::vector<const IterationStats*> unobserved;
    for (const auto* it : its)
      if (!it->ops_observed) {
        unobserved_walls.push_back(it->wall_ns);
        unobserved.push_back(it);
      }
    for (const auto* it : observed) observed_walls.push_back(it->wall_ns);
    a.iterations_unobserved = unobserved_walls.size();
    a.unobserved_iteration_median_ns = median(unobserved_walls);
    a.observed_iteration_median_ns = median(observed_walls);
    its = std::move(observed);
    scaled = observer_correction(p, its, unobserved, category, a.observer_scales);
    if (!scaled.empty()) {
      its.clear();
      for (const auto& it : scaled) its.push_back(&it);
    }
  }

  // The machine's limits for the what-if: P CPUs, and how busy the process kept them while
  // these iterations ran (host samples: CPU time / (wall x P)); else compute on k threads
  // (OMP_NUM_THREADS, or torch's default: every CPU). In a Python host, the GIL share g.
  const int cpus = static_cast<int>(std::max<std::int64_t>(0, p.environment.cpus));
  int threads = cpus;
  if (const std::string& omp = p.environment.omp_num_threads; !omp.empty() && omp.find_first_not_of("0123456789") == std::string::npos)
    threads = std::min(cpus, std::max(1, std::atoi(omp.c_str())));
  std::optional<double> busy;  // busy fraction of the P CPUs over the analyzed iterations
  if (!its.empty() && cpus > 0) {
    const std::int64_t from = its.front()->begin_ns, to = its.back()->begin_ns + its.back()->wall_ns;
    const HostSample* first = nullptr;
    const HostSample* last = nullptr;
    for (const auto& hs : p.host_samples) {
      if (hs.ts_ns < from || hs.ts_ns > to) continue;
      if (first == nullptr) first = &hs;
      last = &hs;
    }
    if (first != nullptr && last != first && last->ts_ns - first->ts_ns >= (to - from) / 2) {
      const double capacity = static_cast<double>(last->ts_ns - first->ts_ns) * cpus;
      busy = std::min(1.0, static_cast<double>(last->cpu_ns - first->cpu_ns) / capacity);
      // The machine's CPUs (every process's): clock ticks, so over half a second at least.
      if (first->machine_busy_ns > 0 && last->machine_busy_ns > first->machine_busy_ns && last->ts_ns - first->ts_ns >= 500000000)
        a.loop_machine_utilization =
            std::clamp(static_cast<double>(last->machine_busy_ns - first->machine_busy_ns) / capacity, *busy, 1.0);
    }
  }
  a.loop_cpu_utilization = busy;
  // Other processes on these CPUs (another tenant, the run's DataLoader workers) take CPU time
  // a producer would need: the same work fits in the CPUs left. Ignored under 10 % of them.
  const std::optional<double> others =
      busy && a.loop_machine_utilization ? std::optional<double>(*a.loop_machine_utilization - *busy) : std::nullopt;
  if (others && *others >= 0.10) busy = a.loop_machine_utilization;
  std::optional<double> gil;
  {
    const bool python = python_host(p);
    bool ops = false;
    std::int64_t self = 0, total = 0;
    for (const auto& s : p.stages) {
      ops |= s.category == "op";
      if (s.category != "data") continue;
      const bool waits = is_data_wait(s.name);
      for (const auto& t : s.by_thread)
        if (t.thread == p.main_thread) {
          self += waits ? 0 : t.self_ns;
          total += t.total_ns;
        }
    }
    // Less their time off the CPU (the observer's counters): a time.sleep or blocking read in
    // the loader holds no GIL, and a prefetch thread overlaps it whatever the Python around it.
    const std::string_view prefix = GNNPROF_OFF_CPU_COUNTER_PREFIX;
    std::int64_t off = 0;
    for (const auto& ctr : p.counters)
      if (ctr.name.rfind(prefix, 0) == 0) {
        const std::string stage = ctr.name.substr(prefix.size());
        // (the forward phase's is python-in-forward's: a loop thread waiting for the GIL there)
        if (!is_data_wait(stage) && stage != "forward") off += static_cast<std::int64_t>(ctr.mean * static_cast<double>(ctr.samples));
      }
    a.data_off_cpu_ns = off;
    // The data stages' time outside torch ops (and outside waits) is their own Python: it holds
    // the GIL. Only known when the observer recorded op stages (nested in the data stages).
    if (python && ops && total > 0) gil = static_cast<double>(std::max<std::int64_t>(0, self - off)) / static_cast<double>(total);
  }

  std::vector<std::int64_t> walls, d, h, c, r, worker_waits, producer_waits, awaits, own, predicted, expected;
  for (const auto* it : its) {
    std::int64_t di = 0, hi = 0, ci = 0, wi = 0, pi = 0, ai = 0;
    // The loop's wait for a DataLoader's worker processes, or for the program's own producers:
    // data time, but the batches already load ahead on other threads or processes; what the
    // loop still waits is their shortfall, which a prefetcher does not hide.
    for (const auto& [n, v] : it->stages) {
      if (is_worker_wait(n)) wi += v;
      if (n == kProducerWaitStage) pi += v;
      if (n == kAwaitStage) ai += v;  // the loop's coroutine at an await: the same, on its own thread
    }
    if (!it->categories.empty() || !it->other_categories.empty()) {
      // Nested stages of one category counted once (the collector's per-category totals).
      auto at = [](const std::map<std::string, std::int64_t>& m, const char* k) {
        auto f = m.find(k);
        return f == m.end() ? std::int64_t{0} : f->second;
      };
      di = at(it->categories, "data");
      ci = at(it->categories, "compute");
      hi = at(it->other_categories, "data");
      // A producer wait on another thread hides no data (a main thread waiting for a training
      // thread, where the package could not tell the loop's thread).
      for (const auto& [n, v] : it->other_threads)
        if (n == kProducerWaitStage || n == kAwaitStage) hi -= v;
      hi = std::max<std::int64_t>(0, hi);
    } else {
      for (const auto& [n, v] : it->stages) {
        auto cat = category.find(n);
        if (cat == category.end()) continue;
        if (cat->second == "data") di += v;
        if (cat->second == "compute") ci += v;
      }
      for (const auto& [n, v] : it->other_threads) {
        auto cat = category.find(n);
        if (cat != category.end() && cat->second == "data" && n != kProducerWaitStage && n != kAwaitStage) hi += v;
      }
    }
    const std::int64_t ri = std::max<std::int64_t>(0, it->wall_ns - di - ci);
    wi = std::min(wi, di);
    pi = std::min(pi, di - wi);
    ai = std::min(ai, di - wi - pi);
    producer_waits.push_back(pi);
    awaits.push_back(ai);
    wi += pi + ai;
    const std::int64_t oi = di - wi;  // the data a prefetcher could overlap with compute
    own.push_back(oi);
    walls.push_back(it->wall_ns);
    d.push_back(di);
    h.push_back(hi);
    c.push_back(ci);
    r.push_back(ri);
    worker_waits.push_back(wi - pi - ai);
    predicted.push_back(std::max(oi, ci) + ri + wi);
    double e = static_cast<double>(std::max(oi, ci));
    // The same CPU work on P CPUs cannot take less than work / P.
    if (busy) e = std::max(e, *busy * static_cast<double>(it->wall_ns) - static_cast<double>(ri + wi));
    else if (cpus > 0) e = std::max(e, (static_cast<double>(oi) + threads * static_cast<double>(ci)) / cpus);
    if (gil) e = std::max(e, std::max((1 - *gil) * static_cast<double>(oi), static_cast<double>(ci)) + *gil * static_cast<double>(oi));
    expected.push_back(std::min(it->wall_ns, static_cast<std::int64_t>(e) + ri + wi));
  }
  std::vector<std::int64_t> un;
  for (const auto* it : its) un.push_back(it->unattributed_ns);
  a.unattributed_median_ns = median(un);
  a.unattributed_p90_ns = quantile_of(un, 0.9);
  a.unattributed_mean_ns = mean(un);
  a.iteration_median_ns = median(walls);
  a.iteration_p90_ns = quantile_of(walls, 0.9);
  a.iteration_mean_ns = mean(walls);
  a.loop_stages = stage_rows(its, category, true, a.iteration_median_ns);
  a.other_stages = stage_rows(its, category, false, a.iteration_median_ns);
  a.exposed_data_ns = median(d);
  a.hidden_data_ns = median(h);
  a.compute_ns = median(c);
  a.rest_ns = median(r);
  a.worker_wait_ns = median(worker_waits);
  a.producer_wait_ns = median(producer_waits);
  a.producer_wait_mean_ns = mean(producer_waits);
  a.own_data_ns = median(own);
  a.await_mean_ns = mean(awaits);
  {
    std::int64_t waited = 0, awaited = 0, wall = 0;
    for (std::size_t i = 0; i < walls.size(); ++i) waited += producer_waits[i], awaited += awaits[i], wall += walls[i];
    a.producer_wait_share = wall > 0 ? static_cast<double>(waited) / static_cast<double>(wall) : 0;
    a.await_share = wall > 0 ? static_cast<double>(awaited) / static_cast<double>(wall) : 0;
  }
  {
    // The tracer measures some of the awaits (the first 16, then one in 8 drawn at random): their
    // mean off the CPU over the stage's mean.
    const StageStats* stage = nullptr;
    for (const auto& s : p.stages)
      if (s.name == kAwaitStage && s.hits > 0 && s.total_ns > 0) stage = &s;
    for (const auto& ctr : p.counters)
      if (ctr.name == std::string(GNNPROF_OFF_CPU_COUNTER_PREFIX) + kAwaitStage && stage != nullptr && ctr.samples > 0)
        a.await_off_cpu_share = std::clamp(
            ctr.mean * static_cast<double>(stage->hits) / static_cast<double>(stage->total_ns), 0.0, 1.0);
  }
  a.exposed_data_share = a.iteration_median_ns > 0 ? static_cast<double>(a.exposed_data_ns) / static_cast<double>(a.iteration_median_ns) : 0;
  // The median iteration less the median per-iteration saving: on a noisy host (another
  // tenant, bimodal iterations) the median of the predictions can sit far from the median
  // iteration, crediting prefetching with time no data stage took.
  auto saved = [&](const std::vector<std::int64_t>& after) {
    std::vector<std::int64_t> s(walls.size());
    for (std::size_t i = 0; i < walls.size(); ++i) s[i] = std::max<std::int64_t>(0, walls[i] - after[i]);
    return std::max<std::int64_t>(0, a.iteration_median_ns - median(s));
  };
  a.whatif_predicted_ns = saved(predicted);
  a.whatif_speedup = a.whatif_predicted_ns > 0 ? static_cast<double>(a.iteration_median_ns) / static_cast<double>(a.whatif_predicted_ns) : 1.0;
  a.whatif_expected_ns = std::max(saved(expected), a.whatif_predicted_ns);
  a.whatif_expected_speedup =
      a.whatif_expected_ns > 0 ? static_cast<double>(a.iteration_median_ns) / static_cast<double>(a.whatif_expected_ns) : 1.0;
  a.whatif_cpus = cpus;
  a.whatif_compute_threads = threads;
  a.whatif_busy = busy;
  a.whatif_gil_share = gil;
  a.whatif_pays = a.iterations_used > 0 && a.whatif_expected_speedup >= 1.05;
  a.backward_passes = backward_passes_per_iteration(p);
  if (a.iterations_used > 0) {
    std::string why;
    auto add = [&](const std::string& w) { why += (why.empty() ? "" : "; ") + w; };
    if (a.hidden_data_ns > a.exposed_data_ns)
      add(fmt::format("the data is already overlapped: {} of it per iteration runs on other threads, {} is still exposed",
                      human_ns(a.hidden_data_ns), human_ns(a.exposed_data_ns)));
    else if (a.exposed_data_share < 0.05)
      add(fmt::format("compute-bound: exposed data time is {:.1f}% of the iteration", 100 * a.exposed_data_share));
    const double overlap = static_cast<double>(a.whatif_predicted_ns);
    if (busy && *busy * static_cast<double>(a.iteration_median_ns) > overlap * 1.02)
      add(others && *others >= 0.10
              ? fmt::format("while these iterations ran the {} were {:.0f}% busy, {:.0f}% of it other processes' (another "
                            "tenant{}), so a producer takes CPU time from compute or from them",
                            cpus_text(cpus), 100 * *busy, 100 * *others,
                            a.worker_wait_ns > 0 ? ", or this run's DataLoader workers" : "")
              : fmt::format("while these iterations ran the process kept {:.0f}% of the {} busy, so a producer takes CPU "
                            "time from compute",
                            100 * *busy, cpus_text(cpus)));
    else if (!busy && cpus > 0 && threads >= cpus && a.exposed_data_ns > 0)
      add(fmt::format("a producer shares the {} with compute on {} thread{}", cpus_text(cpus), threads, threads == 1 ? "" : "s"));
    // Only where there is data time to speak of (a loop without a loader has a few
    // microseconds of helper ops, mostly Python).
    if (gil && *gil > 0.2 && a.exposed_data_share >= 0.05)
      add(fmt::format("in Python, {:.0f}% of the data time is the loader's own Python, which holds the GIL{}{}", 100 * *gil,
                      a.data_off_cpu_ns > 0 ? fmt::format(" (its {} off the CPU over the run, sleeping or blocked in I/O, left out)",
                                                          human_ns(a.data_off_cpu_ns))
                                            : std::string(),
                      // What does overlap it: other processes, or less Python.
                      a.worker_wait_ns > 0 ? ": cheaper per-sample Python (tensor ops instead of per-element loops) shortens it"
                                           : ": DataLoader worker processes (num_workers > 0) run it beside the loop, and tensor "
                                             "ops instead of per-element Python loops shorten it"));
    if (a.worker_wait_ns > 0 && 20 * a.worker_wait_ns >= a.iteration_median_ns)
      add(fmt::format("{} of the data time per iteration is the loop waiting for its DataLoader's worker processes, "
                      "which already load ahead: their shortfall, which a prefetcher does not hide",
                      human_ns(a.worker_wait_ns)));
    if (a.producer_wait_share >= 0.05)
      add(fmt::format("{} of the data time per iteration on average ({:.0f}% of the loop's time) is the loop waiting for "
                      "batches that the program's own threads or processes make ahead of it: their shortfall, which a "
                      "prefetcher does not hide (producer-bound)",
                      human_ns(a.producer_wait_mean_ns), 100 * a.producer_wait_share));
    if (a.await_share >= 0.05)
      add(fmt::format("{} of the data time per iteration on average ({:.0f}% of the loop's time) is the loop's coroutine "
                      "suspended at an await, where the event loop runs the awaited work: a prefetcher of the loop's batches does "
                      "not reach it (await-bound)",
                      human_ns(a.await_mean_ns), 100 * a.await_share));
    a.whatif_note = why;
  }

  for (const auto& t : p.transfers) {
    a.transfers.count += t.count;
    a.transfers.bytes += t.bytes;
    if (t.memory == HostMemory::kPinned) a.transfers.pinned_bytes += t.bytes;
    if (t.memory == HostMemory::kPageable) a.transfers.pageable_bytes += t.bytes;
    (t.mode == CopyMode::kAsync ? a.transfers.async_count : a.transfers.sync_count) += t.count;
    a.transfers.total_ns += t.total_ns;
  }

  if (p.host_samples.size() >= 2) {
    const auto& f = p.host_samples.front();
    const auto& l = p.host_samples.back();
    const std::int64_t wall = l.ts_ns - f.ts_ns;
    if (wall > 0 && p.environment.cpus > 0)
      a.cpu_utilization = static_cast<double>(l.cpu_ns - f.cpu_ns) / (static_cast<double>(wall) * static_cast<double>(p.environment.cpus));
  }
  if (!p.host_samples.empty()) {
    a.rss_first = p.host_samples.front().rss_bytes;
    a.rss_last = p.host_samples.back().rss_bytes;
    for (const auto& s : p.host_samples) a.rss_peak = std::max(a.rss_peak, s.rss_bytes);
  }
  // A device: CUPTI on and something ran there; a CPU loop on a GPU machine's CPUs are its device.
  bool cupti = false;
  for (const auto& col : p.collectors) cupti |= col.name == "cupti" && col.enabled;
  const bool device = gpu_recorded(p);
  if (device) {
    for (const auto& [dir, range] : {std::pair{Direction::kH2D, "gpu: memcpy HtoD"}, std::pair{Direction::kD2H, "gpu: memcpy DtoH"}}) {
      GpuCopyRate rate{to_string(dir), 0, 0};
      for (const auto& t : p.transfers)
        if (t.direction == dir) rate.bytes += t.bytes;
      for (const auto& st : p.stages)
        if (st.name == range) rate.gpu_ns += st.total_ns;
      if (rate.bytes > 0 && rate.gpu_ns > 0) a.gpu_copies.push_back(rate);
    }
  }
  a.device_note = device ? ""
                 : cupti ? "CUPTI was on and recorded no kernel or copy: a loop on the host's CPUs (or CUPTI's records were lost)"
                         : "no device activity recorded (no CUPTI collector in this profile): GPU busy/idle not available";
  if (device && !its.empty()) {
    std::vector<std::int64_t> gpu, share_permille;
    for (const auto* it : its) {
      std::int64_t g = 0;
      for (const auto& [n, v] : it->other_threads) {
        auto cat = category.find(n);
        if (cat != category.end() && cat->second == "gpu") g += v;
      }
      gpu.push_back(g);
      share_permille.push_back(it->wall_ns > 0 ? std::min<std::int64_t>(1000000, g * 1000000 / it->wall_ns) : 0);
    }
    a.gpu_ns = median(gpu);
    a.gpu_busy = static_cast<double>(median(share_permille)) / 1e6;
  }
  return a;
}

std::uint64_t line_events_per_iteration(const Profile& p) {
  std::uint64_t hits = 0, complete = 0;
  for (const auto& l : p.lines) hits += is_python_file(l.file) ? l.hits : 0;  // not C++'s GNNPROF_LINE
  for (const auto& it : p.iterations) complete += it.complete ? 1 : 0;
  return complete > 0 ? hits / complete : 0;
}

std::string tracing_cost_note(const Profile& p) {
  const std::uint64_t events = line_events_per_iteration(p);
  std::vector<std::int64_t> walls;
  for (const auto& it : p.iterations)
    if (it.complete) walls.push_back(it.wall_ns);
  const std::int64_t median = median_of(walls);
  const std::int64_t cost = static_cast<std::int64_t>(events) * kLineEventCostNs;
  if (median <= 0 || cost * 20 < median) return "";
  return fmt::format("Tracing: {} line events per iteration, {} or more of it ({:.0f}% of the median iteration, {}): the "
                     "traced functions' times include it. Trace a hot function only to see inside it.",
                     events, human_ns(cost), 100.0 * static_cast<double>(cost) / static_cast<double>(median), human_ns(median));
}

std::string own_work_note(const Profile& p) {
  std::int64_t total = 0;
  std::string where;
  std::int64_t most = 0;
  for (const auto& l : p.lines) {
    auto f = l.stages.find(kOwnWorkStage);
    if (f == l.stages.end() || f->second <= 0) continue;
    total += f->second;
    if (f->second > most) {
      most = f->second;
      where = fmt::format("{}:{}", base_name(l.file), l.line);
    }
  }
  if (total <= 0) return "";
  return fmt::format("gnnprof's own work on the loop thread at iteration marks (its drains and periodic flushes): {}, "
                     "left out of the time of the line it ran under (most under {}; a drain inside a phase stays in that "
                     "phase and line); the stage \"{}\" has all of it.",
                     human_ns(total), where, kOwnWorkStage);
}

std::string whatif_expectation(const Analysis& a) {
  if (a.iterations_used == 0) return "";
  const std::string at = fmt::format("{} ({:.2f}x)", human_ns(a.whatif_expected_ns), a.whatif_expected_speedup);
  if (!a.whatif_pays)
    return "Prefetching will not pay here: expected " + at + (a.whatif_note.empty() ? "" : ": " + a.whatif_note) + ".";
  return "Within this machine's limits: " + at + (a.whatif_note.empty() ? "" : ": " + a.whatif_note) + ".";
}

std::string gpu_busy_sentence(const Analysis& a) {
  if (!a.gpu_busy) return "";
  return fmt::format("the GPU is busy {:.0f}% of an iteration ({} of kernels and copies per iteration, medians)",
                     100 * *a.gpu_busy, human_ns(*a.gpu_ns));
}

std::string gpu_copy_rates(const Analysis& a) {
  std::string rates;
  for (const GpuCopyRate& g : a.gpu_copies)
    rates += fmt::format("{}{} {} in {} ({:.2f} GB/s)", rates.empty() ? "" : "; ", g.direction, human_bytes(g.bytes),
                         human_ns(g.gpu_ns), static_cast<double>(g.bytes) / static_cast<double>(g.gpu_ns));
  return rates;
}

std::string loader_worker_note(const Analysis& a) {
  if (a.iterations_used == 0)
    return "A DataLoader worker process: no batches were marked as iterations (not torch's fetcher, or no torch "
           "observer); its line table and stages are its totals.";
  return fmt::format("A DataLoader worker process: each iteration is one batch it fetched (__getitem__ per sample, then "
                     "collate_fn), median {} a batch. Whether the loop waits for its workers, and what prefetching "
                     "would save, is in the loop's own profile (exposed data, loader-bound, the what-if).",
                     human_ns(a.iteration_median_ns));
}

std::string other_processes_text(const Analysis& a) {
  if (!a.loop_cpu_utilization || !a.loop_machine_utilization) return "";
  const double others = *a.loop_machine_utilization - *a.loop_cpu_utilization;
  return others >= 0.10 ? fmt::format("; other processes kept {:.0f}% of them busy while the loop ran", 100 * others) : "";
}

std::string whatif_formula(const Analysis& a) {
  std::vector<std::pair<std::string, std::string>> waits;  // name, figure
  if (a.worker_wait_ns > 0) waits.emplace_back("worker wait", human_ns(a.worker_wait_ns));
  if (a.producer_wait_mean_ns > 0) waits.emplace_back("producer wait", human_ns(a.producer_wait_mean_ns) + " (mean)");
  if (a.await_mean_ns > 0) waits.emplace_back("await", human_ns(a.await_mean_ns) + " (mean)");
  if (waits.empty()) return "max(data, compute) + rest";
  std::string out = fmt::format("max(data - {}, compute)", waits.size() == 1 ? waits[0].first : "waits");
  for (const auto& [name, figure] : waits) out += fmt::format(" + {} {}", name, figure);
  return out + " + rest";
}

// ---- diagnostics ----

namespace {

/// The traced line that stages of `cat` ran under most (the line table's Data column for data):
/// "; most of it while train.py:103 `x = feats[idx]` ran (62% of the traced lines' data time)", or "".
/// A statement as a diagnostic quotes it: at most 60 characters.
std::string quoted_code(const std::string& code) { return code.size() > 60 ? code.substr(0, 57) + "..." : code; }

/// The traced line with the most of `cat`'s stage time when it has at least half of the lines'
/// (its time and all lines' in top_ns, all_ns), else nullptr.
const LineStats* top_line(const Profile& p, const std::map<std::string, std::string>& category, const std::string& cat,
                          std::int64_t& top_ns, std::int64_t& all_ns) {
  const LineStats* top = nullptr;
  top_ns = all_ns = 0;
  for (const LineStats& l : p.lines) {
    std::int64_t ns = 0;
    for (const auto& [stage, t] : l.stages)
      if (auto c = category.find(stage); c != category.end() && c->second == cat) ns += t;
    // Its share on the loop's thread: a producer thread's line (a prefetched collate_fn) hides its time.
    if (l.off_loop_ns > 0 && l.total_ns > 0)
      ns = static_cast<std::int64_t>(static_cast<double>(ns) *
                                     (1.0 - std::min(1.0, static_cast<double>(l.off_loop_ns) / static_cast<double>(l.total_ns))));
    all_ns += ns;
    if (ns > top_ns) {
      top = &l;
      top_ns = ns;
    }
  }
  return top != nullptr && 2 * top_ns >= all_ns ? top : nullptr;
}

std::string line_sentence(const Profile& p, const std::map<std::string, std::string>& category, const std::string& cat) {
  std::int64_t top_ns = 0, all_ns = 0;
  const LineStats* top = top_line(p, category, cat, top_ns, all_ns);
  if (top == nullptr) return "";
  const std::string code = quoted_code(top->code);
  // A line holding other traced functions is the call into a framework that runs the loop
  // (Lightning's trainer.fit): the time is in its own code.
  if (holds_traced_functions(p, *top))
    return fmt::format("; {:.0f}% of the traced lines' {} time is in the code that {}:{} `{}` runs (a framework's own "
                       "loop, as Lightning's), outside the functions it calls back",
                       100.0 * static_cast<double>(top_ns) / static_cast<double>(all_ns), cat, base_name(top->file), top->line,
                       code);
  return fmt::format("; most of it while {}:{} `{}` ran ({:.0f}% of the traced lines' {} time)", base_name(top->file),
                     top->line, code, 100.0 * static_cast<double>(top_ns) / static_cast<double>(all_ns), cat);
}

/// The traced line a gather recorded at (file, line) ran under, when that line also ran the
/// model's forward (forward time, and autograd graph built for its backward): the gather was
/// made inside the model's call or beside it on that line, where no prefetcher of the batches
/// reaches it. Else nullptr.
const LineStats* forward_line_of(const Profile& p, const std::string& file, std::uint32_t line) {
  if (file.empty()) return nullptr;
  for (const LineStats& l : p.lines) {
    if (l.line != line || l.file != file || l.backward_ns <= 0) continue;
    if (const auto f = l.stages.find("forward"); f != l.stages.end() && f->second > 0) return &l;
  }
  return nullptr;
}

/// Whether the run used a device: GPU work recorded by CUPTI, CUDA tensors read back or copied
/// (the torch observer's "cuda-tensors"), or copies between host and device.
bool used_device(const Profile& p) {
  if (gpu_recorded(p)) return true;
  for (const auto& c : p.collectors)
    if (c.name == "cuda-tensors" && c.enabled) return true;
  return std::any_of(p.transfers.begin(), p.transfers.end(),
                     [](const TransferStats& t) { return t.direction == Direction::kH2D || t.direction == Direction::kD2H; });
}

/// slow-iterations: iterations over 3x the median that hold at least a tenth of the analysed
/// loop's time, which the median (and every figure built on it) leaves out. Names them, the
/// stage and the traced line whose time grew most in them. nullopt: the rule does not fire.
std::optional<Diagnostic> slow_iterations(const Profile& p, const Analysis& a) {
  constexpr const char* kOutside = "(unattributed)";
  const std::int64_t med = a.run_iteration_median_ns;
  if (a.loader_worker || a.iterations_used < 8 || med <= 0) return std::nullopt;
  const std::vector<const IterationStats*> used = analysed_iterations(p, a);
  std::vector<const IterationStats*> slow;
  std::int64_t total = 0, excess = 0;
  // Under iteration sampling an observed iteration is slow against the observed ones' median
  // (the observer's cost is not a slow iteration), an unobserved one against theirs.
  const ClassMedians kind(used);
  auto is_slow = [&](const IterationStats& it) { return it.wall_ns > 3 * kind.of(it); };
  for (const IterationStats* it : used) {
    total += it->wall_ns;
    if (is_slow(*it)) {
      slow.push_back(it);
      excess += it->wall_ns - kind.of(*it);
    }
  }
  if (slow.empty() || total <= 0 || 10 * excess < total) return std::nullopt;
  // Which stage and which line grew: their mean in the slow iterations over their median in the
  // iterations of the same kind (observed ones when some slow one was: they hold every stage).
  const bool observed_kind = std::any_of(slow.begin(), slow.end(), [](const IterationStats* it) { return it->ops_observed; });
  auto grown = [&](auto get) {
    std::map<std::string, std::vector<std::int64_t>> all;
    std::map<std::string, std::int64_t> in_slow;
    std::size_t kind_slow = 0, kind_all = 0;
    for (const IterationStats* it : used) {
      if (it->ops_observed != observed_kind) continue;
      ++kind_all;
      const bool slow_one = is_slow(*it);
      kind_slow += slow_one;
      for (const auto& [k, v] : get(*it)) {
        all[k].push_back(v);
        if (slow_one) in_slow[k] += v;
      }
    }
    std::pair<std::string, std::int64_t> best{"", 0};
    if (kind_slow == 0) return best;
    for (auto& [k, v] : all) {
      v.resize(kind_all, 0);  // an iteration without it: 0
      const std::int64_t more = in_slow[k] / static_cast<std::int64_t>(kind_slow) - median(v);
      if (more > best.second) best = {k, more};
    }
    return best;
  };
  const auto stage = grown([](const IterationStats& it) {
    std::map<std::string, std::int64_t> m;
    for (const auto& [name, ns] : it.stages)
      if (name != kOwnWorkStage) m[name] = ns;
    m[kOutside] = it.unattributed_ns;
    return m;
  });
  const auto line = grown([&](const IterationStats& it) {
    std::map<std::string, std::int64_t> m;
    for (const auto& [index, ns] : it.lines)
      if (index < p.lines.size()) m[std::to_string(index)] += ns;
    return m;
  });
  std::string which;
  for (std::size_t i = 0; i < slow.size() && i < 4; ++i)
    which += fmt::format("{}{} ({})", i == 0 ? "" : (i + 1 == slow.size() ? " and " : ", "), slow[i]->index,
                         human_ns(slow[i]->wall_ns));
  if (slow.size() > 4) which += ", ...";
  const double share = static_cast<double>(excess) / static_cast<double>(total);
  std::string msg = fmt::format(
      "{} of {} iterations took over 3x the median (iteration{} {} against a median of {}): {} beyond the median, {:.0f}% "
      "of the analysed loop's time, which the median, the stage medians and the what-if leave out",
      slow.size(), used.size(), slow.size() == 1 ? "" : "s", which,
      kind.observed != kind.unobserved
          ? fmt::format("{} for iterations whose ops were observed, {} for the others", human_ns(kind.observed),
                        human_ns(kind.unobserved))
          : human_ns(med),
      human_ns(excess), 100 * share);
  const bool named = !stage.first.empty() && 2 * stage.second >= (excess / static_cast<std::int64_t>(slow.size())) / 5;
  if (named)
    msg += fmt::format(". In them, {} took {} more than in a median iteration", stage.first == kOutside ? "time outside every stage" : stage.first,
                       human_ns(stage.second));
  if (!line.first.empty()) {
    const LineStats& l = p.lines[static_cast<std::size_t>(std::strtoul(line.first.c_str(), nullptr, 10))];
    const std::string code = quoted_code(l.code);
    msg += fmt::format("{} the line {}:{} `{}` {} more", named ? ", and" : ". In them,", base_name(l.file), l.line, code,
                       human_ns(line.second));
  }
  msg += " (gnnprof compare's \"iteration (mean)\" row weighs them).";
  return Diagnostic{"slow-iterations", Severity::kWarning, msg,
                    {{"slow_iterations", static_cast<double>(slow.size())},
                     {"iterations", static_cast<double>(used.size())},
                     {"excess_ns", static_cast<double>(excess)},
                     {"excess_share", share},
                     {"iteration_ns", static_cast<double>(med)},
                     {"stage_growth_ns", named ? static_cast<double>(stage.second) : 0.0}}};
}

}  // namespace

bool loader_beside_loop(const Profile& p) {
  std::int64_t on_loop = 0, beside = 0;
  for (const StageStats& s : p.stages)
    if (is_loader_scope(s.name))
      for (const StageThreadStats& t : s.by_thread) (t.thread == p.main_thread ? on_loop : beside) += t.total_ns;
  return beside > on_loop;
}

namespace {

/// A Python program whose loop pulls a torch DataLoader (its __next__ is a stage) and ran without
/// gnnprof's prefetcher around it: `gnnprof ab -- CMD` prefetches it without code changes.
bool unprefetched_python_loader_loop(const Profile& p) {
  if (p.run.command.empty() || base_name(p.run.command.front()).rfind("python", 0) != 0) return false;
  for (const CollectorInfo& c : p.collectors)
    if (c.enabled && (c.name == "prefetch-loaders" || c.name == "prefetch-threads")) return false;
  return std::any_of(p.stages.begin(), p.stages.end(),
                     [](const StageStats& s) { return is_loader_scope(s.name); });
}

}  // namespace

const std::vector<std::string>& diagnostic_ids() {
  static const std::vector<std::string> ids{"pageable-h2d",     "exposed-data-time",  "materialize-in-compute",
                                            "host-sync",        "host-memory-growth", "low-utilization",
                                            "dropped-events",   "reference-blas",     "thread-oversubscription",
                                            "loader-bound",     "slow-iterations",    "loader-restarts",
                                            "loader-contention", "loader-copy-on-write", "dense-embedding-gradient",
                                            "python-in-forward", "item-by-item-fetch", "producer-bound",
                                            "await-bound",      "failed-run"};
  return ids;
}

namespace {
/// The analysed iterations' span (from the first's start to the last's end), where they carry
/// times; nullopt for a profile without them (the whole run is then the window).
std::optional<std::pair<std::int64_t, std::int64_t>> loop_window(const Profile& p, const Analysis& a) {
  const auto its = analysed_iterations(p, a);
  if (its.empty() || (its.front()->begin_ns == 0 && its.back()->begin_ns == 0)) return std::nullopt;
  return std::pair{its.front()->begin_ns, its.back()->begin_ns + its.back()->wall_ns};
}
}  // namespace

namespace {
}  // namespace

ProducerProcesses summarize_producer_processes(const Profile& loop, const std::vector<Profile>& all) {
  ProducerProcesses out;
  // The loop's complete iterations' span, in ns since its session began.
  std::int64_t first = -1, last = -1;
  for (const IterationStats& it : loop.iterations)
    if (it.complete) {
      if (first < 0) first = it.begin_ns;
      last = std::max(last, it.begin_ns + it.wall_ns);
    }
  std::vector<const Profile*> producers;
  for (const Profile& q : all) {
    const std::int64_t from = q.run.start_unix_ns - loop.run.start_unix_ns, to = from + q.wall_ns;
    if (first < 0 || (to > first && from < last)) producers.push_back(&q);
  }
  std::map<std::pair<std::string, std::string>, std::int64_t> own;
  for (const Profile* pq : producers) {
    const Profile& q = *pq;
    out.pids.push_back(q.run.pid);
    for (const LineStats& l : q.lines) own[{l.file, l.function}] += std::max<std::int64_t>(0, l.total_ns - l.nested_ns);
  }
  std::sort(out.pids.begin(), out.pids.end());
  for (const auto& [key, ns] : own)
    if (ns > out.own_ns) out.file = key.first, out.function = key.second, out.own_ns = ns;
  std::map<std::uint32_t, std::int64_t> by_line;
  for (const Profile* q : producers)
    for (const LineStats& l : q->lines)
      if (l.file == out.file && l.function == out.function) {
        by_line[l.line] += l.total_ns;
        if (by_line[l.line] > out.line_ns) out.line = l.line, out.line_ns = by_line[l.line], out.code = l.code;
      }
  return out;
}

namespace {

/// The traced function with the most own time (traced callees apart) on other threads than the
/// loop's, over the run, with its heaviest line: a producer thread's, a pool's.
struct OffLoopProducer {
  std::string file, function;
  std::int64_t ns = 0;
  const LineStats* heaviest = nullptr;
};

std::optional<OffLoopProducer> off_loop_producer(const Profile& p) {
  std::map<std::pair<std::string, std::string>, std::int64_t> off_loop;
  for (const LineStats& l : p.lines)
    if (2 * l.off_loop_ns > l.total_ns) off_loop[{l.file, l.function}] += std::max<std::int64_t>(0, l.total_ns - l.nested_ns);
  std::optional<OffLoopProducer> out;
  for (const auto& [key, ns] : off_loop)
    if (ns > 0 && (!out || ns > out->ns)) out = OffLoopProducer{key.first, key.second, ns, nullptr};
  if (out)
    for (const LineStats& l : p.lines)
      if (l.file == out->file && l.function == out->function && (out->heaviest == nullptr || l.total_ns > out->heaviest->total_ns))
        out->heaviest = &l;
  return out;
}

/// The traced line with the most time in stage `stage` (the waiting line), or nullptr.
const LineStats* line_most_in(const Profile& p, std::string_view stage) {
  const std::string key(stage);
  const LineStats* out = nullptr;
  std::int64_t most = 0;
  for (const LineStats& l : p.lines)
    if (auto f = l.stages.find(key); f != l.stages.end() && f->second > most) {
      most = f->second;
      out = &l;
    }
  return out;
}

double complete_iterations(const Profile& p) {
  return static_cast<double>(std::max<std::ptrdiff_t>(
      1, std::count_if(p.iterations.begin(), p.iterations.end(), [](const IterationStats& it) { return it.complete; })));
}

/// " Beside the loop, f() of file ran X per iteration (...)[, Y of it at line N `code`]".
std::string producer_sentence(const OffLoopProducer& producer, double complete) {
  const auto per_iteration = [&](std::int64_t ns) { return human_ns(std::llround(static_cast<double>(ns) / complete)); };
  std::string what = fmt::format(" Beside the loop, {}() of {} ran {} per iteration (its time over the run, over the loop's {:.0f} "
                                 "iterations)",
                                 producer.function, base_name(producer.file), per_iteration(producer.ns), complete);
  if (producer.heaviest != nullptr && 4 * producer.heaviest->total_ns >= producer.ns)
    what += fmt::format(", {} of it at line {} `{}`", per_iteration(producer.heaviest->total_ns), producer.heaviest->line,
                        quoted_code(producer.heaviest->code));
  return what;
}

}  // namespace

/// producer-bound: the loop waits for batches the program's own threads or processes make ahead
/// of it (the stage "producer wait"), which cannot keep up: where it waits, and the traced
/// function with the most own time off the loop's thread (the producer), with its heaviest line;
/// else, where its producer processes' profiles were read, theirs.
std::optional<Diagnostic> producer_bound(const Profile& p, const Analysis& a, const ProducerProcesses& processes) {
  if (a.loader_worker || a.iterations_used == 0 || a.iteration_mean_ns <= 0) return std::nullopt;
  const double share = a.producer_wait_share;  // sum over sum: a pool's waits come in bursts
  if (share <= 0.20) return std::nullopt;
  const LineStats* waits = line_most_in(p, kProducerWaitStage);
  const std::optional<OffLoopProducer> producer = off_loop_producer(p);
  const std::int64_t producer_ns = producer ? producer->ns : 0;
  const double complete = complete_iterations(p);
  // A thread of the program's own pulling a torch DataLoader: with worker processes or without.
  const bool loader = loader_beside_loop(p);
  bool workers = false;
  for (const StageStats& s : p.stages)
    if (is_worker_wait(s.name))
      for (const StageThreadStats& t : s.by_thread) workers |= t.thread != p.main_thread && t.total_ns > 0;
  const auto per_iteration = [&](std::int64_t ns) { return human_ns(std::llround(static_cast<double>(ns) / complete)); };
  const bool in_processes = !producer && !loader && !processes.empty() && processes.own_ns > 0;
  std::string what;
  if (loader) {  // the loader behind the thread is what cannot keep up, whatever thread function is traced
    what = fmt::format(" Beside the loop, a thread of the program's own pulls a torch DataLoader{}.",
                       workers ? " from its worker processes" : " that loads in that thread (num_workers=0)");
    if (producer)
      what += fmt::format(" Off the loop's thread, {}() of {} ran {} per iteration (its own time over the run, over the "
                          "loop's {:.0f} iterations).",
                          producer->function, base_name(producer->file),
                          per_iteration(producer_ns), complete);
  } else if (producer) {
    what = producer_sentence(*producer, complete) + fmt::format(", against the loop's {} of compute.", human_ns(a.compute_ns));
  } else if (in_processes) {
    const std::size_t n = processes.pids.size();
    what = fmt::format(" Beside the loop, {} producer process{} (pid{} {}) ran {}() of {}: {} per iteration (its time in "
                       "{} over the run, over the loop's {:.0f} iterations)",
                       n, n == 1 ? "" : "es", n == 1 ? "" : "s", fmt::join(processes.pids, ", "), processes.function,
                       base_name(processes.file), per_iteration(processes.own_ns),
                       n == 1 ? "that process" : "those processes", complete);
    if (4 * processes.line_ns >= processes.own_ns)
      what += fmt::format(", {} of it at line {} `{}`", per_iteration(processes.line_ns),
                          processes.line, quoted_code(processes.code));
    what += fmt::format(", against the loop's {} of compute; {} (<output>.{}.json).", human_ns(a.compute_ns),
                        n == 1 ? "its line table is in its own profile" : "their line tables are in their own profiles",
                        n == 1 ? std::to_string(processes.pids[0]) : std::string("<pid>"));
  } else {
    what = " No traced function ran beside the loop: `gnnprof run --lines auto --lines FILE:FUNCTION` traces the "
           "producer's function too, on a thread or in a producer process, which writes its own profile "
           "(<output>.<pid>.json).";
  }
  // A ThreadPoolExecutor's threads are named "<prefix>-<pool>_<n>": the largest pool's count
  // (one made per epoch, or a library's, is another pool).
  std::map<std::string, int> pools;
  for (const ThreadInfo& t : p.threads)
    if (t.name.rfind("ThreadPoolExecutor-", 0) == 0) ++pools[t.name.substr(0, t.name.rfind('_'))];
  int pool = 0;
  for (const auto& [name, n] : pools) pool = std::max(pool, n);
  const std::string more =
      in_processes ? fmt::format("Make more batches at once: more producer processes than {} (a larger process pool, or "
                                 "more processes with room in the queue for as many batches), or shorten the producer's work",
                                 processes.pids.size())
      : loader && workers ? "Raise the DataLoader's num_workers or make its per-sample work (__getitem__, collate_fn) cheaper: "
                          "another thread would pull the same workers' batches"
      : loader          ? "Give the DataLoader worker processes (num_workers > 0: its __getitem__ and collate_fn then run in "
                          "processes of their own) or make its per-sample work cheaper"
      : pool == 0 ? "Make more batches at once: more producer threads (their sleeps, I/O and torch ops release the GIL) "
                  "or processes for Python-heavy work (DataLoader worker processes), or shorten the producer's work"
                : fmt::format("Make more batches at once: a larger max_workers than its thread pool's {} thread{}, with as "
                              "many futures in flight (their sleeps, I/O and torch ops release the GIL; Python-heavy work "
                              "needs processes: DataLoader worker processes), or shorten the producer's work",
                              pool, pool == 1 ? "" : "s");
  return Diagnostic{
      "producer-bound", Severity::kWarning,
      fmt::format("the loop waits {:.0f}% of its time ({} an iteration of {}, means){} for batches that the program's own "
                  "threads or processes make ahead of it: they cannot keep up, and a prefetcher would not help.{} {}.",
                  100 * share, human_ns(a.producer_wait_mean_ns), human_ns(a.iteration_mean_ns),
                  waits != nullptr ? fmt::format(" at {}:{} `{}`", base_name(waits->file), waits->line, quoted_code(waits->code))
                                   : std::string(),
                  what, more),
      {{"producer_wait_ns", static_cast<double>(a.producer_wait_mean_ns)},
       {"iteration_ns", static_cast<double>(a.iteration_mean_ns)},
       {"wait_share", share},
       {"compute_ns", static_cast<double>(a.compute_ns)},
       {"producer_per_iteration_ns",
        producer ? static_cast<double>(producer_ns) / complete
        : in_processes      ? static_cast<double>(processes.own_ns) / complete
                            : 0.0}}};
}

namespace {

/// await-bound: the training loop is a coroutine that waits at an await (the stage "await")
/// for a large share of its time: the event loop, blocked while the step computes, runs the
/// task the loop awaits (its I/O, its own code) only then. Where it waits, how much of it the
/// loop's thread was off the CPU, and what lets the two overlap.
std::optional<Diagnostic> await_bound(const Profile& p, const Analysis& a) {
  if (a.loader_worker || a.iterations_used == 0 || a.iteration_mean_ns <= 0 || a.await_share <= 0.20) return std::nullopt;
  const LineStats* at = line_most_in(p, kAwaitStage);
  const std::optional<double> off = a.await_off_cpu_share;
  // The awaited work on a thread (loop.run_in_executor, asyncio.to_thread): it runs beside the
  // step already, and what the loop waits is its shortfall, as a producer thread's.
  const double complete = complete_iterations(p);
  std::optional<OffLoopProducer> producer = off_loop_producer(p);
  if (producer && static_cast<double>(producer->ns) / complete < 0.5 * static_cast<double>(a.await_mean_ns)) producer.reset();
  std::string split, advice;
  if (off && producer)
    split = fmt::format(": {:.0f}% of it off the CPU", 100 * *off);
  else if (off)
    split = fmt::format(": {:.0f}% of it off the CPU (the event loop idle until I/O or a timer), {:.0f}% running other "
                        "tasks' code on the loop's thread",
                        100 * *off, 100 * (1 - *off));
  // Idle: the awaited I/O not done yet. Busy: the other tasks' own code, on this thread.
  const std::string overlap =
      "Overlap its waits with the step: create the next batch's task before the step's work (asyncio.create_task) and "
      "`await asyncio.sleep(0)` right after, which runs it up to its first await, so that its I/O starts before the step; "
      "where that I/O takes longer than a step, keep more batches in flight (tasks for the next few batches, or fetching "
      "tasks that fill an asyncio.Queue)";
  const std::string move_off =
      "Move the other tasks' code off the event loop, where it runs one task at a time with the step (asyncio.to_thread "
      "or loop.run_in_executor: numpy and torch ops release the GIL; a ProcessPoolExecutor for Python-heavy work)";
  if (producer) {
    advice = producer_sentence(*producer, complete).substr(1) +
             fmt::format(": the awaited work runs on a thread (loop.run_in_executor, asyncio.to_thread), beside the step, "
                         "and cannot keep up with the loop's {} of compute. Keep more batches in flight (futures for the next "
                         "few batches, with as many executor threads; processes for Python-heavy work), or shorten that work",
                         human_ns(a.compute_ns));
  } else {
    if (!off || *off >= 0.25) advice = overlap;
    if (!off || *off <= 0.75) advice += (advice.empty() ? "" : ". ") + move_off;
  }
  std::map<std::string, double> evidence{{"await_ns", static_cast<double>(a.await_mean_ns)},
                                         {"iteration_ns", static_cast<double>(a.iteration_mean_ns)},
                                         {"wait_share", a.await_share},
                                         {"compute_ns", static_cast<double>(a.compute_ns)}};
  if (off) evidence["off_cpu_share"] = *off;
  evidence["producer_per_iteration_ns"] = producer ? static_cast<double>(producer->ns) / complete : 0.0;
  const std::string why =
      producer ? std::string()
               : fmt::format(" The event loop runs other tasks only while the loop awaits: the step's own work ({} of compute) "
                             "blocks it, so a task created ahead (asyncio.create_task) makes no progress until then, and a "
                             "prefetcher of the loop's batches would not reach it.",
                             human_ns(a.compute_ns));
  return Diagnostic{
      "await-bound", Severity::kWarning,
      fmt::format("the training loop is a coroutine and waits {:.0f}% of its time ({} an iteration of {}, means) suspended "
                  "at an await{}{}.{} {}.",
                  100 * a.await_share, human_ns(a.await_mean_ns), human_ns(a.iteration_mean_ns),
                  at != nullptr ? fmt::format(", at {}:{} `{}`", base_name(at->file), at->line, quoted_code(at->code))
                                : std::string(),
                  split, why, advice),
      std::move(evidence)};
}

}  // namespace

std::vector<Diagnostic> diagnose(const Profile& p, const Analysis& a) {
  std::vector<Diagnostic> out;
  auto add = [&](std::string id, Severity severity, std::string message, std::map<std::string, double> evidence) {
    out.push_back(Diagnostic{std::move(id), severity, std::move(message), std::move(evidence)});
  };
  std::map<std::string, std::string> category;
  for (const auto& s : p.stages) category.emplace(s.name, s.category);

  // pageable-h2d: host-to-device bytes from pageable memory are staged synchronously.
  std::uint64_t h2d = 0, pageable = 0, pageable_count = 0;
  for (const auto& t : p.transfers)
    if (t.direction == Direction::kH2D) {
      h2d += t.bytes;
      if (t.memory == HostMemory::kPageable) {
        pageable += t.bytes;
        pageable_count += t.count;
      }
    }
  if (pageable > 0)
    add("pageable-h2d", Severity::kWarning,
        fmt::format("{} of {} host-to-device bytes ({} copies) come from pageable memory: the driver stages them "
                    "synchronously. Pin the source (pin_memory=True / tensor.pin_memory()) and copy non_blocking.",
                    human_bytes(pageable), human_bytes(h2d), pageable_count),
        {{"pageable_bytes", static_cast<double>(pageable)},
         {"pageable_copies", static_cast<double>(pageable_count)},
         {"pageable_share", static_cast<double>(pageable) / static_cast<double>(h2d)}});

  // exposed-data-time: data stages on the critical path, nothing overlapped (a wait for a
  // DataLoader's worker processes is loader-bound's, below; one for the program's own
  // producers producer-bound's).
  const double own_data_share =
      a.iteration_median_ns > 0 ? static_cast<double>(a.own_data_ns) / static_cast<double>(a.iteration_median_ns) : 0;
  if (!a.loader_worker && a.iterations_used > 0 && own_data_share > 0.20 && a.hidden_data_ns == 0) {
    // The same expectation as the Analysis' (the ideal overlap and what this machine allows).
    const bool limited = a.whatif_expected_ns > a.whatif_predicted_ns * 102 / 100;
    std::string expect = fmt::format("Prefetching could bring the iteration to about {} ({:.2f}x), if compute keeps its speed",
                                     human_ns(a.whatif_predicted_ns), a.whatif_speedup);
    if (!a.whatif_pays)
      expect = fmt::format("Prefetching will not pay here: expected {} ({:.2f}x){}", human_ns(a.whatif_expected_ns),
                           a.whatif_expected_speedup, a.whatif_note.empty() ? "" : ": " + a.whatif_note);
    else if (limited)
      expect += fmt::format("; within this machine's limits about {} ({:.2f}x){}", human_ns(a.whatif_expected_ns),
                            a.whatif_expected_speedup, a.whatif_note.empty() ? "" : ": " + a.whatif_note);
    // Most of the data time under the line that runs the model (a gather inside its forward): a
    // prefetcher reaches it only once the read is out of the model's call.
    std::int64_t top_ns = 0, all_ns = 0;
    const LineStats* top = top_line(p, category, "data", top_ns, all_ns);
    const bool in_forward = top != nullptr && forward_line_of(p, top->file, top->line) != nullptr;
    if (a.whatif_pays && in_forward)
      expect = "Once that line's gather is out of the model's forward (materialize-in-compute), p" + expect.substr(1);
    // The A/B line where zero-code prefetch reaches the data time: not inside the model's call,
    // nor in a framework's own loop (its fetcher's pass is left as it is).
    if (a.whatif_pays && !in_forward && !(top != nullptr && holds_traced_functions(p, *top)) &&
        unprefetched_python_loader_loop(p))
      expect += fmt::format(". To measure it on the unmodified script: gnnprof ab -- {} (each pass the script's own code makes "
                            "over a torch DataLoader runs through gnnprof's prefetcher, depth 0 against 2)",
                            shell_command(p.run.command));
    else if (const auto g = generator_prefetch(p); a.whatif_pays && !in_forward && g)
        expect += fmt::format(". To measure it on the unmodified script: gnnprof ab -- {} (the loop pulls its batches "
                              "from {}(): each call of it runs through gnnprof's prefetcher, depth 0 against 2, as {}:{} `{}` "
                              "with `import gnnprof` would; on a CPython before 3.11 or after 3.13, make that edit and run the same "
                              "command)",
                              shell_command(p.run.command), g->function, base_name(g->header->file), g->header->line, g->edit);
    // The loop's own numpy memmap reads waiting on storage (the features of the seed's MAG240M
    // run, on disk): the waits hold no core, so a producer thread overlaps them.
    // Over the run, the slowest read left out: a file's first read brings in whole read-ahead
    // windows, and a small file is then all in memory.
    const std::uint64_t observed = observed_complete_iterations(p);
    auto per_iteration = [&](const std::string& name) {
      for (const CounterStats& c : p.counters)
        if (c.name == name && observed > 0)
          return mean_without_max(c) * static_cast<double>(c.samples) / static_cast<double>(observed);
      return 0.0;
    };
    const double faults = per_iteration(kMemmapFaultsCounter);
    const double materialize_off_cpu = per_iteration(GNNPROF_OFF_CPU_COUNTER_PREFIX "materialize");
    std::string storage;
    if (faults >= kMemmapFaultsWorthSaying)
      storage = fmt::format(
          " Its numpy memmap reads wait on storage: {:.0f} major page faults an iteration (pages not in memory, read from "
          "disk){}. A thread waiting on the disk holds no core, and numpy's row copy releases the GIL, so a producer "
          "thread overlaps those waits with compute; features that fit in memory read faster loaded (np.load without "
          "mmap_mode, or a copy to RAM at start), else from faster storage.",
          faults,
          materialize_off_cpu > 0 ? fmt::format(", the gathers {} an iteration off the CPU", human_ns(std::llround(materialize_off_cpu)))
              : std::string());
    add("exposed-data-time", Severity::kWarning,
        fmt::format("data stages take {:.0f}% of each iteration ({} of {}) on the loop thread and nothing overlaps them{}. "
                    "{}.{}",
                    100 * a.exposed_data_share, human_ns(a.exposed_data_ns), human_ns(a.iteration_median_ns),
                    line_sentence(p, category, "data"), expect, storage),
        {{"exposed_data_ns", static_cast<double>(a.exposed_data_ns)},
         {"compute_ns", static_cast<double>(a.compute_ns)},
         {"iteration_ns", static_cast<double>(a.iteration_median_ns)},
         {"exposed_share", a.exposed_data_share},
         {"whatif_predicted_ns", static_cast<double>(a.whatif_predicted_ns)},
         {"whatif_expected_ns", static_cast<double>(a.whatif_expected_ns)}});
    if (!storage.empty()) out.back().evidence["memmap_faults_per_iteration"] = faults;
  }

  // item-by-item-fetch: a DataLoader with a batch_size calls dataset[i] once per item, then collates
  // the items; a dataset that takes a list of indices fetches the batch in one call instead.
  if (!a.loader_worker && a.iteration_median_ns > 0 && !p.iterations.empty()) {
    const std::vector<ItemFetch> fetches = item_fetches(p);
    if (!fetches.empty()) {
      const ItemFetch& f = fetches.front();
      const double per_iteration = f.removable_ns() * static_cast<double>(f.batches) / static_cast<double>(p.iterations.size());
      const double share = per_iteration / static_cast<double>(a.iteration_median_ns);
      if (f.items >= 16 && share >= 0.05 && (f.takes_indices || f.per_item_ns() <= kCheapItemNs)) {
        add("item-by-item-fetch", Severity::kWarning,
            fmt::format("the DataLoader fetches each batch item by item: {}, {} a batch on average{} ({}). {}",
                        describe_fetch(f), human_ns(static_cast<std::int64_t>(f.fetch_ns + f.collate_ns)),
                        f.default_collate() ? "" : fmt::format(", {} of it the calls", human_ns(static_cast<std::int64_t>(f.fetch_ns))),
                        // The DataLoader's passes on another thread (a prefetcher's producer):
                        // off the critical path, yet on a core and holding the GIL.
                        loader_beside_loop(p)
                            ? fmt::format("{:.0f}% of the iteration's length, on a thread beside the loop: {}, and its Python "
                                          "holds the GIL the loop needs",
                                          100 * share,
                                          share < 1 ? "hidden, yet it keeps a core busy" : "longer than the loop's iteration")
                            : fmt::format("{:.0f}% of the iteration", 100 * share),
                        batch_in_one_call(f)),
            {{"items", static_cast<double>(f.items)},
             {"fetch_ns", f.fetch_ns},
             {"collate_ns", f.collate_ns},
             {"batches", static_cast<double>(f.batches)},
             {"share", share}});
      }
    }
  }

  // materialize-in-compute: a gather recorded inside a compute stage (lazy features), or, where
  // the torch observer gave it a data stage of its own, made under the line that runs the model.
  for (const auto& m : p.materializations) {
    auto c = category.find(m.stage);
    if (c != category.end() && c->second == "data") {
      const LineStats* l = forward_line_of(p, m.file, m.line);
      if (l == nullptr) continue;
      const auto mat = l->stages.find(m.stage);
      const std::int64_t in_line = mat != l->stages.end() ? mat->second : 0;
      add("materialize-in-compute", Severity::kWarning,
          fmt::format("{}:{} `{}` runs the model's forward and gathers {} rows ({}) as it does{}: a lazy gather inside the "
                      "model's call (a block's srcdata['x'] read in forward) or beside it in that statement, on the critical "
                      "path, where no prefetcher of the batches reaches it. Read the features before the forward (x = block.srcdata['x'] in the loop, "
                      "or in the data pipeline), where they can be prefetched.",
                      base_name(l->file), l->line, quoted_code(l->code), m.rows,
                      human_bytes(m.bytes),
                      l->total_ns > 0 && in_line > 0
                          ? fmt::format(" ({:.0f}% of that line's time)", 100.0 * static_cast<double>(in_line) / static_cast<double>(l->total_ns))
                          : std::string()),
          {{"rows", static_cast<double>(m.rows)}, {"bytes", static_cast<double>(m.bytes)}, {"hits", static_cast<double>(m.hits)}});
      continue;
    }
    if (c == category.end() || c->second != "compute") continue;
    add("materialize-in-compute", Severity::kWarning,
        fmt::format("\"{}\" is materialized inside the compute stage \"{}\"{} ({} rows, {}): a lazy gather on the "
                    "critical path, like DGL's first access to srcdata['x']. Gather it in the data pipeline, where it "
                    "can be prefetched.",
                    m.name.empty() ? std::string("data") : m.name, m.stage,
                    m.file.empty() ? "" : fmt::format(" at {}:{}", m.file, m.line), m.rows, human_bytes(m.bytes)),
        {{"rows", static_cast<double>(m.rows)}, {"bytes", static_cast<double>(m.bytes)}, {"hits", static_cast<double>(m.hits)}});
  }

  // dense-embedding-gradient: an embedding lookup's backward (EmbeddingBackward0, nn.Embedding
  // without sparse=True) fills a gradient as large as the table, and the optimizer then updates
  // every row; its time per observed iteration tells a large table from a small one.
  if (!a.loader_worker && a.iteration_median_ns > 0) {
    const std::uint64_t observed = observed_complete_iterations(p);
    std::int64_t embedding_ns = 0;
    bool sparse = false;  // sparse gradients in use (sparse=True, SparseAdam): their backward is the rows looked up
    for (const StageStats& s : p.stages) {
      if (s.category != "op") continue;
      if (s.name.size() >= 18 && s.name.compare(s.name.size() - 18, 18, "EmbeddingBackward0") == 0) embedding_ns += s.total_ns;
      sparse |= s.name.find("sparse_coo_tensor") != std::string::npos || s.name.find("coalesce") != std::string::npos;
    }
    std::int64_t optimizer_ns = 0;
    for (const IterationStage& s : a.loop_stages)
      if (s.name == "optimizer") optimizer_ns = s.median_ns;
    const double iteration = static_cast<double>(a.iteration_median_ns);
    const double per_iteration = observed > 0 ? static_cast<double>(embedding_ns) / static_cast<double>(observed) : 0;
    if (!sparse && per_iteration >= 0.05 * iteration && static_cast<double>(optimizer_ns) >= 0.10 * iteration)
      add("dense-embedding-gradient", Severity::kWarning,
          fmt::format("the backward of an embedding lookup (EmbeddingBackward0: nn.Embedding or F.embedding) takes {} per "
                      "iteration ({:.0f}%) and the optimizer {} ({:.0f}%): without sparse=True the embedding's gradient is a "
                      "dense table as large as the embedding, which backward fills and the optimizer reads, updating every "
                      "row (with Adam, two more tables of its moments) at each step, although a batch looks up only its own "
                      "rows. nn.Embedding(..., sparse=True) with torch.optim.SparseAdam for the embedding's parameters (a "
                      "dense optimizer for the rest) updates only the rows looked up.",
                      human_ns(static_cast<std::int64_t>(per_iteration)), 100 * per_iteration / iteration,
                      human_ns(optimizer_ns), 100 * static_cast<double>(optimizer_ns) / iteration),
          {{"embedding_backward_ns", per_iteration},
           {"optimizer_ns", static_cast<double>(optimizer_ns)},
           {"iteration_ns", iteration},
           {"embedding_backward_share", per_iteration / iteration},
           {"optimizer_share", static_cast<double>(optimizer_ns) / iteration}});
  }

  // python-in-forward: the forward phase mostly outside its ops (its op stages' time over the
  // run against its own): the model's call runs plain Python, a sampler over Python sets in
  // graphsage-simple's aggregator, counted as forward (compute), which the what-if does not credit.
  // CPU runs only: on a GPU the ops return at launch, and the forward's own time is the Python
  // between launches (docs/gpu-validation.md).
  if (!a.loader_worker && a.iteration_median_ns > 0 && python_host(p) && !used_device(p)) {
    const StageStats* fwd = nullptr;
    for (const StageStats& s : p.stages)
      if (s.name == "forward") fwd = &s;
    std::int64_t nested = 0;  // its op stages' time (not a user scope's, nor gnnprof's own work)
    for (const StageEdge& e : p.stage_edges)
      if (e.parent == "forward")
        if (auto c = category.find(e.child); c != category.end() && c->second == "op") nested += e.total_ns;
    std::int64_t median = 0;
    for (const IterationStage& s : a.loop_stages)
      if (s.name == "forward") median = s.median_ns;
    const double own = fwd != nullptr && fwd->total_ns > 0 && nested > 0
                           ? static_cast<double>(fwd->self_ns) / static_cast<double>(fwd->total_ns)
                           : 0;
    const double python_ns = own * static_cast<double>(median);
    const double iteration = static_cast<double>(a.iteration_median_ns);
    // The loop thread's time off the CPU in the forward phase (the observer's counter, over the
    // run), as a share of the phase's own time: waiting for the GIL that another thread's Python
    // holds (a background generator's, a DataLoader pulled on a thread), not running Python.
    double off_share = 0;
    for (const CounterStats& c : p.counters)
      if (c.name == GNNPROF_OFF_CPU_COUNTER_PREFIX "forward" && fwd != nullptr && fwd->self_ns > 0)
        off_share = std::min(1.0, c.mean * static_cast<double>(c.samples) / static_cast<double>(fwd->self_ns));
    std::size_t threads = 0;  // that recorded anything: another one beside the loop's
    for (const ThreadInfo& t : p.threads) threads += t.recorded_events > 0 ? 1 : 0;
    const bool waiting = off_share >= 0.5 && threads > 1;
    if (own >= 0.5 && python_ns >= 0.2 * iteration) {
      const std::map<std::string, std::string> forward_only{{"forward", "forward"}};
      std::map<std::string, double> evidence{{"python_ns", python_ns}, {"forward_ns", static_cast<double>(median)},
                                             {"iteration_ns", iteration}, {"own_share", own}, {"share", python_ns / iteration}};
      if (waiting) evidence["off_cpu_share"] = off_share;
      const std::string why =
          waiting ? fmt::format(", and {:.0f}% of that with the loop's thread off the CPU: it waited, most likely for the GIL (or "
                                "for a core), which another thread of this process held while running Python (a background "
                                "generator's, a DataLoader's pulled on a thread, a thread pool's task). Python beside the loop "
                                "on threads slows the loop's own Python and ops' dispatch: run that work in processes "
                                "(DataLoader worker processes, num_workers > 0) or as tensor ops, which release the GIL.",
                                100 * off_share)
                  : std::string(": plain Python inside the model's call, such as neighbour sampling or index and mask building "
                                "over Python lists and sets, is data preparation on the critical path that this profile counts "
                                "as forward, so the what-if credits prefetching none of it (or, with many small ops, the "
                                "interpreter between them). Move such work out of the model into the data pipeline (a Dataset "
                                "or collate_fn in DataLoader workers, where it can run ahead) or into tensor ops; the line "
                                "table shows which lines hold it (--lines FILE traces the model's functions).");
      add("python-in-forward", Severity::kWarning,
          fmt::format("the model's forward spends {} per iteration ({:.0f}% of the iteration, {:.0f}% of the forward) with no "
                      "torch op running{}{}",
                      human_ns(static_cast<std::int64_t>(python_ns)), 100 * python_ns / iteration, 100 * own,
                      line_sentence(p, forward_only, "forward"), why),
          std::move(evidence));
    }
  }

  // host-sync: a sync stage (loss.item(), synchronize) holding a real share of the iteration.
  // Without a device nothing is waited for: the time is the scalar reads themselves (int(t[i])
  // over a tensor in Python), each a tensor op.
  const bool device = used_device(p);
  std::int64_t loop_ns = 0;  // the complete iterations' time: a line's share of the loop
  for (const auto& it : p.iterations) loop_ns += it.complete ? it.wall_ns : 0;
  bool elementwise_said = false;  // the reads' line covers every sync stage: named once
  for (const auto& s : a.loop_stages) {
    if (s.category != "sync") continue;
    std::uint64_t hits = 0, observed = 0;
    for (const auto& st : p.stages)
      if (st.name == s.name) hits = st.hits;
    for (const auto& it : p.iterations) observed += it.complete && it.ops_observed;
    const std::uint64_t reads = observed > 0 ? hits / observed : 0;
    // Reads element by element (int(t[i]) over a batch in Python): each one is cheap, the line
    // around them is not (the interpreter and a tensor op per element).
    std::int64_t top_ns = 0, all_ns = 0;
    const LineStats* reader = top_line(p, category, "sync", top_ns, all_ns);
    const double reader_share =
        reader != nullptr && loop_ns > 0 ? static_cast<double>(line_time(*reader)) / static_cast<double>(loop_ns) : 0;
    const bool elementwise = !device && !elementwise_said && reads >= 256 && reader_share >= 0.10;
    if (s.share <= 0.05 && !elementwise) continue;
    if (elementwise && s.share <= 0.05) {
      elementwise_said = true;
      add("host-sync", Severity::kWarning,
          fmt::format("about {} scalar reads (.item(), int(t), float(t), bool(t)) per iteration, most of them while "
                      "{}:{} `{}` ran, a line that takes {:.0f}% of the loop: reading a tensor element by element costs "
                      "a tensor op and the interpreter per element (the reads alone, \"{}\", are {:.0f}% of the "
                      "iteration). Read values in bulk (t.tolist()) or keep the work in tensor ops (bincount, "
                      "scatter_add_, a mask's sum).",
                      reads, base_name(reader->file), reader->line,
                      quoted_code(reader->code), 100 * reader_share,
                      s.name, 100 * s.share),
          {{"reads_per_iteration", static_cast<double>(reads)}, {"line_share", reader_share}, {"share", s.share}, {"device", 0.0}});
      continue;
    }
    if (device) {
      add("host-sync", Severity::kWarning,
          fmt::format("\"{}\" waits {:.0f}% of each iteration ({}): the host blocks until queued device work is done, "
                      "so device time is absorbed here. Read losses every N iterations, or asynchronously.",
                      s.name, 100 * s.share, human_ns(s.median_ns)),
          {{"median_ns", static_cast<double>(s.median_ns)}, {"share", s.share}});
      continue;
    }
    std::int64_t total = 0, nested = 0;
    for (const auto& st : p.stages)
      if (st.name == s.name) total = st.total_ns;
    // Mostly nested in another phase (a collate_fn's reads inside the DataLoader's __next__):
    // that phase; else the traced line they ran under.
    const StageEdge* in = nullptr;
    for (const auto& e : p.stage_edges)
      if (e.child == s.name) {
        nested += e.total_ns;
        if (in == nullptr || e.total_ns > in->total_ns) in = &e;
      }
    const std::string where = in != nullptr && 2 * nested > total
                                  ? fmt::format("; most of them inside \"{}\"", in->parent)
                                  : line_sentence(p, category, "sync");
    add("host-sync", Severity::kWarning,
        fmt::format("\"{}\" (scalar reads: .item(), int(t), float(t), bool(t)) takes {:.0f}% of each iteration ({}{}){}: "
                    "with no device in this run nothing is waited for; the time is the reads themselves, a tensor op "
                    "each. Read values in bulk (t.tolist()) or keep the work in tensor ops.",
                    s.name, 100 * s.share, human_ns(s.median_ns),
                    observed > 0 && hits >= 2 * observed ? fmt::format(", about {} reads", hits / observed) : "", where),
        {{"median_ns", static_cast<double>(s.median_ns)}, {"share", s.share}, {"device", 0.0}});
  }

  // host-memory-growth: anonymous RSS keeps rising while the loop runs (DataLoader workers'
  // copy-on-write leak). File-backed pages (a memory-mapped dataset read for the first time)
  // are the page cache, reclaimable: not counted where the profile has them. The window is the
  // analysed iterations' (start-up and warm-up left out: imports, a CUDA context, kernels loaded
  // at their first launch), at least kMinGrowthWindow long, and a leak grows in each of its
  // quarters: a step (a cache filled once) is none.
  if (const auto window = loop_window(p, a); p.host_samples.size() >= 8) {
    constexpr std::int64_t kMinGrowthWindow = 10'000'000'000;  // 10 s
    std::vector<double> anon;
    std::vector<std::int64_t> ts;
    std::int64_t first_ts = 0, last_ts = 0;
    for (const auto& h : p.host_samples) {
      if (window && (h.ts_ns < window->first || h.ts_ns > window->second)) continue;
      if (anon.empty()) first_ts = h.ts_ns;
      last_ts = h.ts_ns;
      anon.push_back(static_cast<double>(h.rss_bytes - h.rss_file_bytes));
      ts.push_back(h.ts_ns);
    }
    // Quarters [k*n/4, (k+1)*n/4): the newest samples in the last one.
    const std::size_t n = anon.size();
    auto bound = [n](std::size_t k) { return static_cast<std::ptrdiff_t>(k * n / 4); };
    double quarter[4] = {0, 0, 0, 0}, mid_ts[4] = {0, 0, 0, 0};
    for (std::size_t k = 0; n >= 8 && k < 4; ++k) {
      for (auto i = bound(k); i < bound(k + 1); ++i) {
        quarter[k] += anon[static_cast<std::size_t>(i)];
        mid_ts[k] += static_cast<double>(ts[static_cast<std::size_t>(i)]);
      }
      quarter[k] /= static_cast<double>(bound(k + 1) - bound(k));
      mid_ts[k] /= static_cast<double>(bound(k + 1) - bound(k));
    }
    const double early = quarter[0], late = quarter[3], growth = late - early;
    const double minutes = (mid_ts[3] - mid_ts[0]) / 60e9;  // between the quarters' middles
    // Rising in each quarter, and the last quarter's least above the first's most: a heap that
    // swings with each iteration's allocations (full-graph attention) rises by chance in four
    // averages, a leak also clears its own noise (a slow one under large swings is missed).
    const bool steady = n >= 8 && quarter[0] < quarter[1] && quarter[1] < quarter[2] && quarter[2] < quarter[3] &&
                        *std::min_element(anon.begin() + bound(3), anon.end()) >
                            *std::max_element(anon.begin(), anon.begin() + bound(1));
    if (last_ts - first_ts >= kMinGrowthWindow && steady && growth > 64.0 * 1024 * 1024 &&
        growth > 0.10 * early)
      add("host-memory-growth", Severity::kWarning,
          fmt::format("host memory (anonymous) grew from {} to {} while the loop ran ({:.0f} MiB/min, in each quarter "
                      "of {}): a leak, such as DataLoader workers touching Python lists (copy-on-write of refcounts). "
                      "Keep per-sample data in numpy arrays or tensors.",
                      human_bytes(static_cast<std::uint64_t>(early)), human_bytes(static_cast<std::uint64_t>(late)),
                      minutes > 0 ? growth / (1024 * 1024) / minutes : 0.0, human_ns(last_ts - first_ts)),
          {{"rss_early_bytes", early}, {"rss_late_bytes", late}, {"growth_bytes", growth}});
  }

  // low-utilization: with a GPU (CUPTI), the GPU idle most of each iteration: it waits for the
  // host. Without device activity, the device is the host CPU: short iterations and idle cores
  // (not with DataLoader worker processes: their CPU time is not this process's).
  if (a.gpu_busy && a.iterations_used > 0 && !a.loader_worker) {
    if (*a.gpu_busy < 0.5)
      add("low-utilization", Severity::kInfo,
          fmt::format("the GPU is busy {:.0f}% of an iteration ({} of kernels and copies in {}, medians): it waits "
                      "for the host the rest of the time. Shorten the host's part (move data work off the loop, "
                      "e.g. prefetch; fewer, larger ops), or give the GPU more per iteration (a larger batch).",
                      100 * *a.gpu_busy, human_ns(*a.gpu_ns), human_ns(a.iteration_median_ns)),
          {{"gpu_utilization", *a.gpu_busy}, {"gpu_ns", static_cast<double>(*a.gpu_ns)},
           {"iteration_ns", static_cast<double>(a.iteration_median_ns)}});
  } else if (const std::optional<double> util = a.loop_cpu_utilization ? a.loop_cpu_utilization : a.cpu_utilization;
             !a.loader_worker && a.worker_wait_ns == 0 && a.producer_wait_share <= 0.20 && a.await_share <= 0.20 && util &&
             *util < 0.5 && a.iterations_used > 0 &&
             a.iteration_median_ns < 20000000 &&
             // A process that never had more threads than it kept busy (torch on one thread of
             // two CPUs) is not idle for want of work per iteration.
             !(p.environment.max_threads > 0 && p.environment.max_threads < p.environment.cpus &&
               *util * static_cast<double>(p.environment.cpus) >= 0.5 * static_cast<double>(p.environment.max_threads)) &&
             // Nor one whose torch computes on fewer threads than CPUs and keeps them busy
             // (torch.set_num_threads(1): one of two CPUs, 48% busy).
             !torch_threads_busy(p, *util))
    add("low-utilization", Severity::kInfo,
        fmt::format("iterations are short ({}) and the {} are {:.0f}% busy {}: batches too small to keep the CPUs "
                    "busy. A larger batch (scaling the learning rate) amortizes the per-iteration overhead.",
                    human_ns(a.iteration_median_ns), cpus_text(p.environment.cpus), 100 * *util,
                    a.loop_cpu_utilization ? "while the analysed iterations ran" : "over the run"),
        {{"cpu_utilization", *util}, {"iteration_ns", static_cast<double>(a.iteration_median_ns)},
         {"cpus", static_cast<double>(p.environment.cpus)}});

  // dropped-events: the statistics undercount.
  if (p.dropped_events > 0)
    add("dropped-events", Severity::kWarning,
        fmt::format("{} events were dropped ({:.2f}% of {}): rings full or too many threads; statistics undercount. "
                    "Raise GNNPROF_BUFFER_EVENTS or GNNPROF_MAX_THREADS.",
                    p.dropped_events,
                    100.0 * static_cast<double>(p.dropped_events) / static_cast<double>(p.dropped_events + p.recorded_events),
                    p.dropped_events + p.recorded_events),
        {{"dropped", static_cast<double>(p.dropped_events)}, {"recorded", static_cast<double>(p.recorded_events)}});

  // failed-run: the launcher saw the command fail; the profile covers it up to then.
  if (p.run.failed())
    add("failed-run", Severity::kWarning,
        fmt::format("the program {}: this profile covers the run up to its failure, and a failed run's figures (an "
                    "exception in the first epoch, an OOM kill) are not its loop's; `gnnprof check` gives no verdict on "
                    "it unless --allow-failed-runs.",
                    exit_text(p.run)),
        {{"exit_code", static_cast<double>(*p.run.exit_code)}, {"signal", static_cast<double>(p.run.exit_signal)}});

  // reference-blas: Debian's reference BLAS is ~8x slower than OpenBLAS for training.
  if (p.environment.blas.find("/blas/libblas.so") != std::string::npos)
    add("reference-blas", Severity::kError,
        fmt::format("the process uses the reference BLAS ({}), about 8x slower than OpenBLAS for a training step. "
                    "Install libopenblas0-openmp; Debian's alternatives then switch libblas.so.3 to it.",
                    p.environment.blas),
        {});

  // thread-oversubscription: compute threads plus normal-priority producer threads > CPUs.
  if (p.environment.cpus > 0) {
    std::int64_t compute = p.environment.cpus;  // one intra-op thread per CPU, unless told
    if (!p.environment.omp_num_threads.empty()) compute = std::atoll(p.environment.omp_num_threads.c_str());
    for (const auto& c : p.counters)  // torch's own count (the Python package's last sample)
      if (c.name == kTorchThreadsCounter && c.last > 0) compute = static_cast<std::int64_t>(c.last);
    // By name: a producer per pass (prefetch-0 each epoch, of each loader) is one at a time.
    std::set<std::string> producer_names;
    for (const auto& t : p.threads)
      if (t.name.rfind("prefetch-", 0) == 0 && t.name.rfind("prefetch-idle-", 0) != 0) producer_names.insert(t.name);
    const auto producers = static_cast<std::int64_t>(producer_names.size());
    if (compute + producers > p.environment.cpus)
      add("thread-oversubscription", Severity::kWarning,
          fmt::format("{} compute threads{} share {}: threads preempt each other mid parallel region. Set "
                      "OMP_NUM_THREADS / torch.set_num_threads to the cores left, or run producers at background "
                      "priority.",
                      compute, producers > 0 ? fmt::format(" and {} normal-priority producer threads", producers) : "",
                      cpus_text(p.environment.cpus)),
          {{"compute_threads", static_cast<double>(compute)},
           {"producer_threads", static_cast<double>(producers)},
           {"cpus", static_cast<double>(p.environment.cpus)}});
  }

  // loader-bound: the loop waits for its DataLoader's worker processes, which cannot keep up.
  // Their count: the Python package's counter (num_workers at each fork).
  int workers = 0;
  for (const auto& c : p.counters)
    if (c.name == kLoaderWorkersCounter) workers = static_cast<int>(c.max);
  const double wait_share = a.iteration_median_ns > 0
                                ? static_cast<double>(a.worker_wait_ns) / static_cast<double>(a.iteration_median_ns)
                                : 0;
  if (!a.loader_worker && a.iterations_used > 0 && wait_share > 0.20)
    add("loader-bound", Severity::kWarning,
        fmt::format("the loop waits {:.0f}% of each iteration ({} of {}) for batches from its {}DataLoader worker "
                    "processes, which already load ahead of it: they cannot keep up. {}; under `gnnprof "
                    "run` each worker writes its own profile (<output>.<pid>.json), which `gnnprof report` sums up "
                    "under DataLoader workers: their pace and heaviest lines.",
                    100 * wait_share, human_ns(a.worker_wait_ns), human_ns(a.iteration_median_ns),
                    workers > 0 ? fmt::format("{} ", workers) : "",
                    // As many workers as CPUs: more would share the same cores with them and the loop.
                    workers > 0 && p.environment.cpus > 0 && workers >= p.environment.cpus
                        ? fmt::format("Make the per-sample work (__getitem__, collate_fn) cheaper: more workers than "
                                      "their {} would share this machine's {} with them and the loop",
                                      workers, cpus_text(p.environment.cpus))
                        : fmt::format("Raise num_workers ({}this machine has {}) or make the per-sample work "
                                      "(__getitem__, collate_fn) cheaper",
                                      workers > 0 ? fmt::format("{} now; ", workers) : "", cpus_text(p.environment.cpus))),
        {{"worker_wait_ns", static_cast<double>(a.worker_wait_ns)},
         {"workers", static_cast<double>(workers)},
         {"iteration_ns", static_cast<double>(a.iteration_median_ns)},
         {"wait_share", wait_share},
         {"compute_ns", static_cast<double>(a.compute_ns)},
         {"cpus", static_cast<double>(p.environment.cpus)}});

  if (auto d = producer_bound(p, a, ProducerProcesses{})) out.push_back(std::move(*d));
  if (auto d = await_bound(p, a)) out.push_back(std::move(*d));
  if (auto d = slow_iterations(p, a)) out.push_back(std::move(*d));
  return out;
}

namespace {
const CollectorInfo* collector(const Profile& p, const std::string& name) {
  for (const auto& c : p.collectors)
    if (c.name == name) return &c;
  return nullptr;
}
}  // namespace

std::string no_transfers_hint(const Profile& p) {
  const CollectorInfo* torch = collector(p, "torch-ops");
  if (torch != nullptr && torch->enabled)
    return "No host-device copies: none of this run's tensors moved between host and device (the torch observer records "
           "every cross-device copy_/to() with its bytes, pinned or pageable, sync or async). Record other copies with "
           "gnnprof.record_transfer() (C++: gnnprof::record_transfer).";
  return "No copies recorded: copies are seen by the torch observer (run under `gnnprof run`, torch-ops collector) or "
         "recorded with gnnprof.record_transfer() (C++: gnnprof::record_transfer).";
}

std::string no_kernels_hint(const Profile& p) {
  const CollectorInfo* cupti = collector(p, "cupti");
  const std::string how =
      "GPU time per kernel, attributed to the line and stage that launched it, needs CUPTI: build gnnprof with the CUDA "
      "toolkit (it finds CUPTI under /usr/local/cuda and builds libgnnprof_cupti.so), run on a machine with an NVIDIA "
      "driver; `gnnprof run` starts CUPTI when the process loads the CUDA runtime (GNNPROF_CUPTI=1: at start).";
  if (cupti == nullptr) return "No GPU kernels: this profile has no CUPTI collector. " + how;
  if (!cupti->enabled) return "No GPU kernels: CUPTI was off (" + cupti->reason + "). " + how;
  return "No GPU kernels: CUPTI was on (" + cupti->reason + ") and saw no kernel run.";
}

std::string own_session_note(const Profile& p) {
  for (const auto& c : p.collectors)
    if (c.name == "linked-core" && !c.enabled) return c.reason;
  return "";
}

std::string no_materializations_hint(const Profile& p) {
  (void)p;
  return "No feature materializations: none recorded. The torch observer records a gather of rows from a host tensor "
         "(index_select/embedding/index, at least GNNPROF_GATHER_MIN_BYTES, outside forward and backward), and the Python "
         "package one from a numpy memmap (`feats[ids]`); record others with gnnprof.record_materialization() or "
         "GNNPROF_MATERIALIZE.";
}

}  // namespace gnnprof::reports
