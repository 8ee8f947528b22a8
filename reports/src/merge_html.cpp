// merge_html.cpp — the merge as one HTML page (the shared shell of html_page.h): stragglers,
// the ranks side by side, iteration time per rank, clocks.
#include <fmt/format.h>

#include <algorithm>
#include <ostream>
#include <set>

#include "gnnprof/reports/merge.h"
#include "html_page.h"
#include "merge_view.h"

namespace gnnprof::reports {

using namespace merge_view;

Status render_merged_html(const Merged& m, std::ostream& out) {
  const auto h = headers(m);
  const auto rows = table(m);
  out << html::page_head(fmt::format("gnnprof merge: {} ranks", m.ranks.size())) << "\n";
  out << "<h1>gnnprof merge</h1>\n<p>" << m.ranks.size() << " of " << m.world_size << " ranks"
      << (m.run_id.empty() ? "" : ", run " + html::esc(m.run_id)) << ", hosts: ";
  for (std::size_t i = 0; i < m.hosts.size() && i < 16; ++i) out << (i ? ", " : "") << html::esc(m.hosts[i]);
  if (m.hosts.size() > 16) out << ", … (" << m.hosts.size() << ")";
  out << "</p>\n<h2>Stragglers</h2>\n";
  if (m.stragglers.empty()) out << "<p>None (no rank's busy time exceeds the other ranks' median by more than "
                                << fmt::format("{:.0f}", 100 * m.options.straggler_threshold) << " %).</p>\n";
  else {
    out << "<ul>\n";
    for (const Straggler& s : m.stragglers) out << "<li class=\"strag\">" << html::esc(straggler_line(s)) << "</li>\n";
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
    out << "<tr><td>" << html::esc(r.label) << "</td>";
    for (std::size_t i = 0; i < r.cells.size(); ++i)
      out << "<td" << (per_rank_columns(m) && strag.count(m.ranks[i].rank) ? " class=\"hot\"" : "") << ">" << r.cells[i] << "</td>";
    out << "</tr>\n";
  }
  out << "</table>\n";
  if (!per_rank_columns(m)) {
    out << "<h3>Slowest ranks</h3><table><tr><th>rank</th><th>host</th><th>busy, ms</th><th>comm, ms</th></tr>\n";
    for (const RankSummary* r : slowest(m, 8))
      out << "<tr><td>" << r->rank << "</td><td>" << html::esc(r->host) << "</td><td>" << ms(r->busy_median_ns)
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
      std::vector<std::pair<double, double>> points;
      for (std::size_t i = 0; i < v.size(); ++i) points.emplace_back(x(i), y(v[i]));
      out << html::polyline(points, color, label, dashed);
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
    out << "<tr><td>" << r.rank << "</td><td>" << html::esc(r.host) << "</td><td>"
        << fmt::format("{:+.3f}", static_cast<double>(r.clock_offset_ns) / 1e6) << "</td><td>" << to_string(r.clock_basis) << "</td></tr>\n";
  }
  out << "</table>\n";
  for (const std::string& n : m.notes) out << "<p class=\"note\">Note: " << html::esc(n) << "</p>\n";
  out << html::page_end();
  if (!out) return Status::error("gnnprof merge: cannot write the HTML report");
  return Status::ok();
}

}  // namespace gnnprof::reports
