// merge.cpp — the cross-rank view of a distributed run (gnnprof/reports/merge.h).
#include "gnnprof/reports/merge.h"
#include "gnnprof/reports/stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

const char* to_string(ClockBasis b) noexcept {
  return b == ClockBasis::kMonotonicSameHost ? "monotonic (same host)" : "realtime (other host)";
}

namespace {

using json = nlohmann::ordered_json;

std::int64_t mean_of(std::int64_t total, std::size_t n) { return n == 0 ? 0 : total / static_cast<std::int64_t>(n); }

bool is_comm(const std::map<std::string, std::string>& cat, const std::string& stage) {
  auto it = cat.find(stage);
  return it != cat.end() && it->second == "comm";
}

std::string ms(std::int64_t ns) { return fmt::format("{:.2f}", static_cast<double>(ns) / 1e6); }

/// Ranks shown one column each; above this the tables show min / median / max and the slowest.
constexpr std::size_t kMaxRankColumns = 16;

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

std::string merged_to_json(const Merged& m) {
  json j;
  j["schema"] = m.schema;
  j["run_id"] = m.run_id;
  j["world_size"] = m.world_size;
  j["hosts"] = m.hosts;
  j["options"] = {{"straggler_threshold", m.options.straggler_threshold}, {"skip", m.options.skip}};
  j["busy_median_ns"] = m.busy_median_ns;
  j["stages"] = json::array();
  for (const std::string& n : m.stages) {
    auto c = m.stage_category.find(n);
    j["stages"].push_back({{"name", n}, {"category", c == m.stage_category.end() ? "" : c->second}});
  }
  j["ranks"] = json::array();
  for (const RankSummary& r : m.ranks) {
    json stages = json::object();
    for (const std::string& n : m.stages) {
      auto it = r.stage_ns.find(n);
      stages[n] = it == r.stage_ns.end() ? 0 : it->second;
    }
    j["ranks"].push_back({{"rank", r.rank},
                          {"local_rank", r.local_rank},
                          {"host", r.host},
                          {"pid", r.pid},
                          {"file", r.file},
                          {"iterations", r.iterations},
                          {"iteration_ns", r.iteration_ns},
                          {"busy_ns", r.busy_ns},
                          {"iteration_median_ns", r.iteration_median_ns},
                          {"busy_median_ns", r.busy_median_ns},
                          {"comm_ns", r.comm_ns},
                          {"comm_share", r.comm_share},
                          {"comm_in_flight_ns", r.comm_in_flight_ns},
                          {"comm_overlapped_ns", r.comm_overlapped_ns},
                          {"materialized_rows", r.materialized_rows},
                          {"materialized_bytes", r.materialized_bytes},
                          {"gpu_kernel_ns", r.gpu_kernel_ns},
                          {"clock_offset_ns", r.clock_offset_ns},
                          {"clock_basis", to_string(r.clock_basis)},
                          {"stage_ns", stages}});
  }
  j["stragglers"] = json::array();
  for (const Straggler& s : m.stragglers)
    j["stragglers"].push_back(
        {{"rank", s.rank}, {"excess", s.excess}, {"busy_ns", s.busy_ns}, {"others_busy_ns", s.others_busy_ns}, {"stage", s.stage}, {"stage_excess_ns", s.stage_excess_ns},
         {"op", s.op}, {"op_excess_ns", s.op_excess_ns}});
  j["imbalance"] = {{"materialized_rows", m.rows_imbalance}, {"materialized_bytes", m.bytes_imbalance}};
  j["notes"] = m.notes;
  return j.dump(1) + "\n";
}

namespace {

/// The ranks that get a column: all of them, or (too many to list) none; then the table shows
/// min / median / max and the slowest ranks get their own lines.
bool per_rank_columns(const Merged& m) { return m.ranks.size() <= kMaxRankColumns; }

std::vector<const RankSummary*> slowest(const Merged& m, std::size_t n) {
  std::vector<const RankSummary*> v;
  for (const RankSummary& r : m.ranks) v.push_back(&r);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->busy_median_ns > b->busy_median_ns; });
  if (v.size() > n) v.resize(n);
  return v;
}

struct Row {
  std::string label;
  std::vector<std::string> cells;  // per rank, or min / median / max
};

std::vector<Row> table(const Merged& m) {
  std::vector<Row> rows;
  // value_of gives the number, `spec` its text; min / median / max are picked by number.
  auto add = [&](const std::string& label, auto value_of, const char* spec = "{:.2f}") {
    auto text = [&](double x) { return fmt::format(fmt::runtime(spec), x); };
    Row r;
    r.label = label;
    if (per_rank_columns(m)) {
      for (const RankSummary& rs : m.ranks) r.cells.push_back(text(value_of(rs)));
    } else {
      std::vector<double> v;
      for (const RankSummary& rs : m.ranks) v.push_back(value_of(rs));
      std::sort(v.begin(), v.end());
      r.cells = {text(v.front()), text(v[v.size() / 2]), text(v.back())};
    }
    rows.push_back(std::move(r));
  };
  auto in_ms = [](std::int64_t ns) { return static_cast<double>(ns) / 1e6; };
  add("iteration (median), ms", [&](const RankSummary& r) { return in_ms(r.iteration_median_ns); });
  add("busy = iteration - comm, ms", [&](const RankSummary& r) { return in_ms(r.busy_median_ns); });
  add("comm exposed, ms", [&](const RankSummary& r) { return in_ms(r.comm_ns); });
  add("comm share of iteration, %", [](const RankSummary& r) { return 100 * r.comm_share; }, "{:.1f}");
  add("collectives in flight, ms", [&](const RankSummary& r) { return in_ms(r.comm_in_flight_ns); });
  add("  of which overlapped, ms", [&](const RankSummary& r) { return in_ms(r.comm_overlapped_ns); });
  add("materialized rows", [](const RankSummary& r) { return r.materialized_rows; }, "{:.0f}");
  add("materialized MiB", [](const RankSummary& r) { return r.materialized_bytes / 1048576.0; });
  if (std::any_of(m.ranks.begin(), m.ranks.end(), [](const RankSummary& r) { return r.gpu_kernel_ns > 0; }))
    add("GPU kernels, ms", [&](const RankSummary& r) { return in_ms(r.gpu_kernel_ns); });
  for (const std::string& n : m.stages)
    add(n + ", ms", [&](const RankSummary& r) {
      auto it = r.stage_ns.find(n);
      return in_ms(it == r.stage_ns.end() ? 0 : it->second);
    });
  return rows;
}

std::vector<std::string> headers(const Merged& m) {
  std::vector<std::string> h;
  if (per_rank_columns(m))
    for (const RankSummary& r : m.ranks) h.push_back(fmt::format("rank {}", r.rank));
  else
    h = {"min", "median", "max"};
  return h;
}

std::string straggler_line(const Straggler& s) {
  std::string line = fmt::format("rank {}: busy {:+.0f} % over the other ranks' median ({} vs {} ms per iteration)",
                                 s.rank, 100 * s.excess, ms(s.busy_ns), ms(s.others_busy_ns));
  if (!s.stage.empty())
    line += fmt::format("; most of the difference is in stage \"{}\" (+{} ms per iteration)", s.stage, ms(s.stage_excess_ns));
  if (!s.op.empty()) line += fmt::format(", inside it in {} (+{} ms)", short_op_name(s.op), ms(s.op_excess_ns));
  return line;
}

}  // namespace

std::string merged_text(const Merged& m) {
  std::ostringstream o;
  o << fmt::format("gnnprof merge: {} of {} ranks{}, {} host{} ({})\n", m.ranks.size(), m.world_size,
                   m.run_id.empty() ? "" : ", run " + m.run_id, m.hosts.size(), m.hosts.size() == 1 ? "" : "s",
                   [&] {
                     std::string s;
                     for (std::size_t i = 0; i < m.hosts.size() && i < 8; ++i) s += (i ? ", " : "") + m.hosts[i];
                     return s + (m.hosts.size() > 8 ? ", ..." : "");
                   }());
  o << fmt::format("Per iteration, mean over each rank's complete iterations after {} warm-up ones (loop thread):\n",
                   m.options.skip);
  const auto h = headers(m);
  const auto rows = table(m);
  std::size_t w = 28;
  for (const Row& r : rows) w = std::max(w, r.label.size() + 1);
  w = std::min<std::size_t>(w, 48);
  o << fmt::format("{:<{}}", "", w);
  for (const auto& c : h) o << fmt::format("{:>10}", c);
  o << "\n";
  for (const Row& r : rows) {
    o << fmt::format("{:<{}}", r.label.substr(0, w - 1), w);
    for (const auto& c : r.cells) o << fmt::format("{:>10}", c);
    o << "\n";
  }
  if (!per_rank_columns(m)) {
    o << "Slowest ranks (busy time per iteration):\n";
    for (const RankSummary* r : slowest(m, 8))
      o << fmt::format("  rank {:>4} on {}: busy {} ms, comm {} ms\n", r->rank, r->host, ms(r->busy_median_ns), ms(r->comm_ns));
  }
  o << fmt::format("Stragglers (busy > the other ranks' median + {:.0f} %):", 100 * m.options.straggler_threshold);
  if (m.stragglers.empty()) o << " none\n";
  else {
    o << "\n";
    for (const Straggler& s : m.stragglers) o << "  " << straggler_line(s) << "\n";
  }
  if (m.rows_imbalance > 0)
    o << fmt::format("Load imbalance (max rank / median rank): materialized rows {:.2f}x, bytes {:.2f}x\n",
                     m.rows_imbalance, m.bytes_imbalance);
  o << "Clock offsets (rank's time origin - lowest rank's):";
  std::size_t shown = 0;
  for (const RankSummary& r : m.ranks) {
    if (shown++ == kMaxRankColumns) {
      o << " ...";
      break;
    }
    o << fmt::format(" rank {} {:+.3f} ms [{}];", r.rank, static_cast<double>(r.clock_offset_ns) / 1e6,
                     r.clock_basis == ClockBasis::kMonotonicSameHost ? "monotonic" : "realtime");
  }
  o << "\n";
  for (const std::string& n : m.notes) o << "Note: " << n << "\n";
  return o.str();
}

Status render_merged_html(const Merged& m, std::ostream& out) {
  const auto h = headers(m);
  const auto rows = table(m);
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gnnprof merge: " << m.ranks.size()
      << " ranks</title>\n<style>body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}"
         "table{border-collapse:collapse;font-size:13px}td,th{padding:3px 8px;border-bottom:1px solid #ddd;text-align:right}"
         "td:first-child,th:first-child{text-align:left}.strag{color:#b00020;font-weight:600}"
         ".hot{background:#fde2e2}.note{color:#666}svg{background:#fafafa;border:1px solid #ddd}</style></head><body>\n";
  out << "<h1>gnnprof merge</h1>\n<p>" << m.ranks.size() << " of " << m.world_size << " ranks"
      << (m.run_id.empty() ? "" : ", run " + escape_markup(m.run_id)) << ", hosts: ";
  for (std::size_t i = 0; i < m.hosts.size() && i < 16; ++i) out << (i ? ", " : "") << escape_markup(m.hosts[i]);
  if (m.hosts.size() > 16) out << ", … (" << m.hosts.size() << ")";
  out << "</p>\n<h2>Stragglers</h2>\n";
  if (m.stragglers.empty()) out << "<p>None (no rank's busy time exceeds the other ranks' median by more than "
                                << fmt::format("{:.0f}", 100 * m.options.straggler_threshold) << " %).</p>\n";
  else {
    out << "<ul>\n";
    for (const Straggler& s : m.stragglers) out << "<li class=\"strag\">" << escape_markup(straggler_line(s)) << "</li>\n";
    out << "</ul>\n";
  }
  if (m.rows_imbalance > 0)
    out << fmt::format("<p>Load imbalance (max rank / median rank): materialized rows {:.2f}x, bytes {:.2f}x.</p>\n",
                       m.rows_imbalance, m.bytes_imbalance);
  std::set<std::int64_t> strag;
  for (const Straggler& s : m.stragglers) strag.insert(s.rank);
  out << "<h2>Per iteration, side by side</h2>\n<p class=\"note\">Mean per iteration on each rank's loop thread, "
      << m.options.skip << " warm-up iterations left out."
      << (per_rank_columns(m) ? "" : fmt::format(" {} ranks: too many to list, so min / median / max across ranks; the "
                                                 "slowest ranks are listed below.", m.ranks.size()))
      << "</p>\n<table><tr><th></th>";
  for (std::size_t i = 0; i < h.size(); ++i)
    out << "<th" << (per_rank_columns(m) && strag.count(m.ranks[i].rank) ? " class=\"strag\"" : "") << ">" << h[i] << "</th>";
  out << "</tr>\n";
  for (const Row& r : rows) {
    out << "<tr><td>" << escape_markup(r.label) << "</td>";
    for (std::size_t i = 0; i < r.cells.size(); ++i)
      out << "<td" << (per_rank_columns(m) && strag.count(m.ranks[i].rank) ? " class=\"hot\"" : "") << ">" << r.cells[i] << "</td>";
    out << "</tr>\n";
  }
  out << "</table>\n";
  if (!per_rank_columns(m)) {
    out << "<h3>Slowest ranks</h3><table><tr><th>rank</th><th>host</th><th>busy, ms</th><th>comm, ms</th></tr>\n";
    for (const RankSummary* r : slowest(m, 8))
      out << "<tr><td>" << r->rank << "</td><td>" << escape_markup(r->host) << "</td><td>" << ms(r->busy_median_ns)
          << "</td><td>" << ms(r->comm_ns) << "</td></tr>\n";
    out << "</table>\n";
  }
  // Iteration time per rank: one line per rank (or min / median / max across ranks).
  std::size_t n_it = 0;
  std::int64_t max_ns = 1;
  for (const RankSummary& r : m.ranks) {
    n_it = std::max(n_it, r.iteration_ns.size());
    for (std::int64_t v : r.iteration_ns) max_ns = std::max(max_ns, v);
  }
  out << "<h2>Iteration time per rank</h2>\n";
  if (n_it > 0) {
    const double W = 720, H = 220, pad = 30;
    auto x = [&](std::size_t i) { return pad + (n_it == 1 ? 0.0 : (W - 2 * pad) * static_cast<double>(i) / static_cast<double>(n_it - 1)); };
    auto y = [&](std::int64_t v) { return H - pad - (H - 2 * pad) * static_cast<double>(v) / static_cast<double>(max_ns); };
    out << fmt::format("<svg width=\"{}\" height=\"{}\" role=\"img\"><text x=\"4\" y=\"14\" font-size=\"11\">{} ms</text>"
                       "<text x=\"{}\" y=\"{}\" font-size=\"11\">iteration</text>\n",
                       W, H, ms(max_ns), W - 70, H - 8);
    static const char* colors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    auto poly = [&](const std::vector<std::int64_t>& v, const char* color, const std::string& label, bool dashed = false) {
      std::string pts;
      for (std::size_t i = 0; i < v.size(); ++i) pts += fmt::format("{:.1f},{:.1f} ", x(i), y(v[i]));
      out << fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"{} points=\"{}\"><title>{}</title></polyline>\n",
                         color, dashed ? " stroke-dasharray=\"4 3\"" : "", pts, escape_markup(label));
    };
    if (per_rank_columns(m)) {
      for (std::size_t k = 0; k < m.ranks.size(); ++k) {
        const char* color = strag.count(m.ranks[k].rank) ? "#b00020" : colors[k % 8];
        poly(m.ranks[k].iteration_ns, color, fmt::format("rank {}: iteration", m.ranks[k].rank));
        poly(m.ranks[k].busy_ns, color, fmt::format("rank {}: busy (iteration - comm)", m.ranks[k].rank), true);
      }
    } else {
      std::vector<std::int64_t> lo(n_it, 0), med(n_it, 0), hi(n_it, 0);
      for (std::size_t i = 0; i < n_it; ++i) {
        std::vector<std::int64_t> v;
        for (const RankSummary& r : m.ranks)
          if (i < r.iteration_ns.size()) v.push_back(r.iteration_ns[i]);
        std::sort(v.begin(), v.end());
        lo[i] = v.front();
        med[i] = v[v.size() / 2];
        hi[i] = v.back();
      }
      poly(lo, "#2ca02c", "min over ranks");
      poly(med, "#1f77b4", "median over ranks");
      poly(hi, "#d62728", "max over ranks");
    }
    out << "</svg>\n<p class=\"note\">"
        << (per_rank_columns(m) ? "Per rank (stragglers in red): iteration time, solid; busy time (iteration minus "
                                  "exposed comm), dashed. In synchronous training every rank's iteration lasts as long as "
                                  "the slowest one's; busy time shows who makes the others wait."
                                : "Min, median and max over ranks per iteration.")
        << "</p>\n";
  }
  out << "<h2>Clocks</h2>\n<p class=\"note\">Ranks on one host share CLOCK_MONOTONIC; ranks on other hosts are "
         "placed by CLOCK_REALTIME (NTP accuracy, typically well under a millisecond to a few ms). Iterations are "
         "compared by index, so offsets only matter for timelines.</p>\n<table><tr><th>rank</th><th>host</th><th>offset, ms"
         "</th><th>basis</th></tr>\n";
  std::size_t shown = 0;
  for (const RankSummary& r : m.ranks) {
    if (shown++ == 64) break;
    out << "<tr><td>" << r.rank << "</td><td>" << escape_markup(r.host) << "</td><td>"
        << fmt::format("{:+.3f}", static_cast<double>(r.clock_offset_ns) / 1e6) << "</td><td>" << to_string(r.clock_basis) << "</td></tr>\n";
  }
  out << "</table>\n";
  for (const std::string& n : m.notes) out << "<p class=\"note\">Note: " << escape_markup(n) << "</p>\n";
  out << "</body></html>\n";
  if (!out) return Status::error("gnnprof merge: cannot write the HTML report");
  return Status::ok();
}

}  // namespace gnnprof::reports
