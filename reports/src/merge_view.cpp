// merge_view.cpp — what the merge's text and HTML both lay out: the per-rank (or min / median /
// max) rows, their headers, the slowest ranks and the straggler sentence.
#include "merge_view.h"

#include <fmt/format.h>

#include <algorithm>

#include "gnnprof/reports/format.h"

namespace gnnprof::reports::merge_view {

std::string ms(std::int64_t ns) { return fmt::format("{:.2f}", static_cast<double>(ns) / 1e6); }

bool per_rank_columns(const Merged& m) { return m.ranks.size() <= kMaxRankColumns; }

std::vector<const RankSummary*> slowest(const Merged& m, std::size_t n) {
  std::vector<const RankSummary*> v;
  for (const RankSummary& r : m.ranks) v.push_back(&r);
  std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->busy_median_ns > b->busy_median_ns; });
  if (v.size() > n) v.resize(n);
  return v;
}

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

}  // namespace gnnprof::reports::merge_view
