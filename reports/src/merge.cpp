// merge.cpp — the cross-rank model of a distributed run (gnnprof/reports/merge.h): per-rank
// summaries, stage rows, stragglers and imbalance. Its JSON is merge_json.cpp, its views
// merge_text.cpp and merge_html.cpp over the rows of merge_view.*.
#include "gnnprof/reports/merge.h"
#include "gnnprof/order_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

const char* to_string(ClockBasis b) noexcept {
  return b == ClockBasis::kMonotonicSameHost ? "monotonic (same host)" : "realtime (other host)";
}

namespace {

std::int64_t mean_of(std::int64_t total, std::size_t n) { return n == 0 ? 0 : total / static_cast<std::int64_t>(n); }

bool is_comm(const std::map<std::string, std::string>& cat, const std::string& stage) {
  auto it = cat.find(stage);
  return it != cat.end() && it->second == "comm";
}

}  // namespace

Result<Merged> merge_profiles(const std::vector<Profile>& profiles, const std::vector<std::string>& files,
                              const MergeOptions& options) {
  auto file = [&](std::size_t i) { return i < files.size() ? files[i] : fmt::format("profile #{}", i + 1); };
  if (profiles.empty()) return Status::error("gnnprof merge: no profiles given");
  Merged m;
  m.options = options;
  std::map<std::int64_t, std::size_t> by_rank;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    const RunInfo& r = profiles[i].run;
    if (!r.rank)
      return Status::error(file(i) + ": not the profile of a distributed rank (RANK was not set in its process)");
    if (auto [it, fresh] = by_rank.emplace(*r.rank, i); !fresh)
      return Status::error(fmt::format("{} and {} are both rank {}: profiles of one run have distinct ranks",
                                       file(it->second), file(i), *r.rank));
    const RunInfo& first = profiles[0].run;
    if (!r.run_id.empty() && !first.run_id.empty() && r.run_id != first.run_id)
      return Status::error(fmt::format("{} (run {}) and {} (run {}) are from different runs", file(0), first.run_id,
                                       file(i), r.run_id));
    if (r.world_size && first.world_size && *r.world_size != *first.world_size)
      return Status::error(fmt::format("{} (world size {}) and {} (world size {}) are from different runs", file(0),
                                       *first.world_size, file(i), *r.world_size));
  }
  m.run_id = profiles[0].run.run_id;
  m.world_size = profiles[0].run.world_size.value_or(static_cast<std::int64_t>(profiles.size()));
  if (static_cast<std::int64_t>(profiles.size()) != m.world_size) {
    std::string missing;
    int shown = 0;
    for (std::int64_t r = 0; r < m.world_size && shown < 8; ++r)
      if (!by_rank.count(r)) missing += (shown++ ? ", " : "") + std::to_string(r);
    m.notes.push_back(fmt::format("world size {}, {} rank profiles given (missing: {}{})", m.world_size,
                                  profiles.size(), missing, shown == 8 ? ", ..." : ""));
  }
  for (const Profile& p : profiles)
    for (const StageStats& s : p.stages) m.stage_category.emplace(s.name, s.category);
  {
    std::vector<const Profile*> all;
    for (const Profile& p : profiles) all.push_back(&p);
    m.places = stage_places(all);
  }

  const Profile& origin = profiles[by_rank.begin()->second];
  std::set<std::string> hosts;
  for (const auto& [rank, i] : by_rank) {
    const Profile& p = profiles[i];
    RankSummary rs;
    rs.rank = rank;
    rs.local_rank = p.run.local_rank.value_or(-1);
    rs.host = p.run.host;
    rs.pid = p.run.pid;
    rs.file = file(i);
    hosts.insert(p.run.host);
    std::vector<const IterationStats*> used;
    std::size_t complete = 0;
    for (const IterationStats& it : p.iterations)
      if (it.complete && complete++ >= options.skip) used.push_back(&it);
    if (used.empty() && complete > 0) {
      for (const IterationStats& it : p.iterations)
        if (it.complete) used.push_back(&it);
      m.notes.push_back(fmt::format("rank {}: {} complete iterations, no more than the {} warm-up ones; all used", rank,
                                    complete, options.skip));
    }
    if (used.empty()) m.notes.push_back(fmt::format("rank {}: no complete iterations", rank));
    // Iteration sampling: per-iteration stage, busy and comm figures need the ops observed.
    if (std::vector<const IterationStats*> observed = ops_observed(used); observed.size() < used.size()) {
      m.notes.push_back(fmt::format("rank {}: the {} of {} iterations whose torch ops were observed (iteration sampling)", rank,
                                    observed.size(), used.size()));
      used = std::move(observed);
    }
    rs.iterations = used.size();
    std::map<std::string, std::int64_t> stage_total;
    std::int64_t comm = 0, in_flight = 0, wait = 0, wall = 0;
    std::vector<std::int64_t>& busy = rs.busy_ns;
    for (const IterationStats* it : used) {
      rs.iteration_ns.push_back(it->wall_ns);
      wall += it->wall_ns;
      std::int64_t c = 0;
      for (const auto& [name, ns] : it->stages) {
        stage_total[name] += ns;
        if (is_comm(m.stage_category, name)) c += ns;
        if (name == "comm wait") wait += ns;
      }
      for (const auto& [name, ns] : it->other_threads)
        if (is_comm(m.stage_category, name)) in_flight += ns;
      comm += c;
      busy.push_back(it->wall_ns - c);
    }
    for (const auto& [name, total] : stage_total) rs.stage_ns[name] = mean_of(total, used.size());
    rs.iteration_median_ns = static_cast<std::int64_t>(median_value(rs.iteration_ns));
    rs.busy_median_ns = static_cast<std::int64_t>(median_value(busy));
    rs.comm_ns = mean_of(comm, used.size());
    rs.comm_share = wall > 0 ? static_cast<double>(comm) / static_cast<double>(wall) : 0.0;
    rs.comm_in_flight_ns = mean_of(in_flight, used.size());
    rs.comm_overlapped_ns = std::max<std::int64_t>(0, rs.comm_in_flight_ns - mean_of(wait, used.size()));
    std::uint64_t rows = 0, bytes = 0;
    for (const MaterializationStats& ms : p.materializations) {
      rows += ms.rows;
      bytes += ms.bytes;
    }
    std::int64_t kernel_ns = 0;
    for (const KernelStats& k : p.kernels) kernel_ns += k.total_ns;
    if (complete > 0) {
      rs.materialized_rows = static_cast<double>(rows) / static_cast<double>(complete);
      rs.materialized_bytes = static_cast<double>(bytes) / static_cast<double>(complete);
      rs.gpu_kernel_ns = mean_of(kernel_ns, complete);
    }
    if (p.run.host == origin.run.host) {
      rs.clock_offset_ns = p.run.start_monotonic_ns - origin.run.start_monotonic_ns;
      rs.clock_basis = ClockBasis::kMonotonicSameHost;
    } else {
      rs.clock_offset_ns = p.run.start_unix_ns - origin.run.start_unix_ns;
      rs.clock_basis = ClockBasis::kRealtimeOtherHost;
    }
    m.ranks.push_back(std::move(rs));
  }
  m.hosts.assign(hosts.begin(), hosts.end());

  // Stage rows: every loop-thread stage but the per-op ones, heaviest first by the median rank.
  std::map<std::string, double> median_stage;
  std::set<std::string> names;
  for (const RankSummary& r : m.ranks)
    for (const auto& [n, v] : r.stage_ns) {
      auto c = m.places.find(n);
      if (c == m.places.end() || !c->second.op()) names.insert(n);
    }
  for (const std::string& n : names) {
    std::vector<std::int64_t> v;
    for (const RankSummary& r : m.ranks) {
      auto it = r.stage_ns.find(n);
      v.push_back(it == r.stage_ns.end() ? 0 : it->second);
    }
    median_stage[n] = median_value(v);
    m.stages.push_back(n);
  }
  std::stable_sort(m.stages.begin(), m.stages.end(),
                   [&](const std::string& a, const std::string& b) { return median_stage[a] > median_stage[b]; });

  std::vector<std::int64_t> busy;
  std::vector<double> rows, bytes;
  for (const RankSummary& r : m.ranks) {
    if (r.iterations == 0) continue;
    busy.push_back(r.busy_median_ns);
    rows.push_back(r.materialized_rows);
    bytes.push_back(r.materialized_bytes);
  }
  m.busy_median_ns = static_cast<std::int64_t>(median_value(busy));
  auto imbalance = [](const std::vector<double>& v) {
    const double med = median_value(v);
    return med > 0 ? *std::max_element(v.begin(), v.end()) / med : 0.0;
  };
  if (!rows.empty()) {
    m.rows_imbalance = imbalance(rows);
    m.bytes_imbalance = imbalance(bytes);
  }
  // Each rank against the median of the others (for two ranks: the other one).
  for (const RankSummary& r : m.ranks) {
    if (r.iterations == 0) continue;
    std::vector<std::int64_t> others;
    for (const RankSummary& o : m.ranks)
      if (&o != &r && o.iterations > 0) others.push_back(o.busy_median_ns);
    const double base = median_value(others);
    if (others.empty() || base <= 0) continue;
    const double excess = static_cast<double>(r.busy_median_ns) / base - 1.0;
    if (excess <= options.straggler_threshold) continue;
    Straggler s;
    s.rank = r.rank;
    s.excess = excess;
    s.busy_ns = r.busy_median_ns;
    s.others_busy_ns = static_cast<std::int64_t>(base);
    auto excess_of = [&](const std::string& n) {
      std::vector<std::int64_t> v;
      for (const RankSummary& o : m.ranks) {
        if (&o == &r || o.iterations == 0) continue;
        auto it = o.stage_ns.find(n);
        v.push_back(it == o.stage_ns.end() ? 0 : it->second);
      }
      auto it = r.stage_ns.find(n);
      return (it == r.stage_ns.end() ? 0 : it->second) - static_cast<std::int64_t>(median_value(v));
    };
    for (const std::string& n : m.stages) {
      if (is_comm(m.stage_category, n)) continue;  // waiting is the others' symptom, not the cause
      if (const std::int64_t diff = excess_of(n); diff > s.stage_excess_ns) {
        s.stage_excess_ns = diff;
        s.stage = n;
      }
    }
    // Then down the hierarchy: the op inside that phase that makes most of it.
    for (const auto& [n, place] : m.places) {
      if (s.stage.empty() || !place.op() || place.phase != s.stage) continue;
      if (const std::int64_t diff = excess_of(n); diff > s.op_excess_ns) {
        s.op_excess_ns = diff;
        s.op = n;
      }
    }
    m.stragglers.push_back(s);
  }
  std::sort(m.stragglers.begin(), m.stragglers.end(),
            [](const Straggler& a, const Straggler& b) { return a.excess > b.excess; });
  return m;
}

}  // namespace gnnprof::reports
