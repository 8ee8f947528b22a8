// merge_view.h — the rows the merge's text and HTML both lay out. Internal to reports/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnnprof/reports/merge.h"

namespace gnnprof::reports::merge_view {

/// Ranks shown one column each; above this the tables show min / median / max and the slowest.
constexpr std::size_t kMaxRankColumns = 16;

/// "12.34": ns as ms, two decimals.
std::string ms(std::int64_t ns);
/// The ranks that get a column: all of them, or (too many to list) none; then the table shows
/// min / median / max and the slowest ranks get their own lines.
bool per_rank_columns(const Merged& m);
/// The `n` ranks with the longest busy time, slowest first.
std::vector<const RankSummary*> slowest(const Merged& m, std::size_t n);

struct Row {
  std::string label;
  std::vector<std::string> cells;  // per rank, or min / median / max
};
std::vector<Row> table(const Merged& m);
std::vector<std::string> headers(const Merged& m);
/// "rank 1: busy +38 % over the other ranks' median (...); most of the difference is in ..."
std::string straggler_line(const Straggler& s);

}  // namespace gnnprof::reports::merge_view
