// merge_text.cpp — the merge as text: stragglers first, then the ranks side by side.
#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "gnnprof/reports/format.h"
#include "gnnprof/reports/merge.h"
#include "merge_view.h"

namespace gnnprof::reports {

using namespace merge_view;

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

}  // namespace gnnprof::reports
