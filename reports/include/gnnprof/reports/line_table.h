// gnnprof/reports/line_table.h — the line table of a profile, built once for every renderer.
//
// One block per function (line_profiler prints one per profiled function), heaviest first;
// each block holds the function's source lines with, per statement, line_profiler's figures
// (hits, time, per hit, % of the function) and what line_profiler cannot see: bytes copied
// (pinned / pageable), bytes gathered, GPU time of the kernels the line launched, time the
// line waited (host syncs, communication), and the autograd backward time of the graph the
// line built. The text and HTML reports render this model; `gnnprof compare` matches lines
// of two profiles (line_match.h).
//
//   LineTable t = build_line_table(profile, {"src/"});
//   for (const LineBlock& b : t.blocks) for (const LineRow& r : b.rows) ...
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnnprof/profile.h"

namespace gnnprof::reports {

/// What a line did besides taking time, joined from the profile's transfers,
/// materializations, line stage split and kernels.
struct LineExtras {
  std::uint64_t copied_pinned = 0, copied_pageable = 0, copied_other = 0;  ///< bytes
  std::uint64_t gathered = 0;                                             ///< bytes
  std::int64_t gpu_ns = 0;
  std::int64_t data_ns = 0;      ///< stages of category data while the line ran: its exposed data time
  std::int64_t wait_ns = 0;      ///< stages of category sync, and comm wait, while the line ran
  std::int64_t backward_ns = 0;  ///< autograd backward of the graph the line built
  /// Iteration sampling left some of the line's hits unobserved: the figures above are those
  /// of its observed hits scaled by hits / observed hits (rendered with a leading "~").
  bool estimated = false;
  /// Iteration sampling left every hit of the line unobserved (a line after a loop whose last
  /// iteration was not observed): its figures above are unknown, not zero (rendered "?").
  bool unknown = false;

  std::uint64_t copied() const { return copied_pinned + copied_pageable + copied_other; }
};

struct LineRow {
  std::uint32_t line = 0;
  std::string text;                   ///< the source line ("" when the source is missing)
  const LineStats* stats = nullptr;   ///< nullptr: no statement begins on this line
  LineExtras extras;
  std::int64_t time_ns = 0;  ///< line_time(*stats): Time
  bool paced = false;        ///< ... at the unobserved pace ("~")
  double pct = 0;            ///< % Time: of the block's paced_ns
};

struct LineBlock {
  std::string file, function;
  std::uint32_t first = 0;  ///< first line shown ("Function: f at line <first>")
  std::int64_t total_ns = 0;  ///< measured ("Total time:")
  std::int64_t paced_ns = 0;  ///< its lines' line_time(): what % Time is of
  bool python = false;       ///< traced Python (a .py file): rows span the whole function
  bool source_found = false; ///< rows are the source's lines; else only the statements
  bool source_changed = false;  ///< the file's lines are not the recorded statements (edited since)
  bool producer_process = false;  ///< in a producer process's profile (run.feeds_pid)
  std::vector<LineRow> rows;
};

struct LineTable {
  std::vector<LineBlock> blocks;
  /// Which extra columns have data anywhere in the profile (the others are left out, so that
  /// a table with nothing extra is exactly line_profiler's).
  bool copied = false, gathered = false, gpu = false, data = false, wait = false, backward = false;
  bool estimated = false;  ///< some row's extras are estimates (LineExtras::estimated)
  bool unknown = false;    ///< some row's extras are unknown (LineExtras::unknown)
  bool any_extra() const { return copied || gathered || gpu || data || wait || backward; }
  int extra_count() const { return copied + gathered + gpu + data + wait + backward; }
};

/// The extras of one LineStats of `p`; when iteration sampling left some of its hits
/// unobserved, scaled from the observed ones (LineExtras::estimated).
LineExtras line_extras(const Profile& p, const LineStats& l);

/// Whether a line site's file is Python's: a .py file or a pseudo-file (<ipython-input-3-...>,
/// <string>); a C++ site's file is a path (__FILE__).
bool is_python_file(const std::string& file);

/// Builds the table; source files are looked up as recorded, under the run's cwd, then under
/// each of `source_roots`. A function longer than max_function_lines shows its statements only.
LineTable build_line_table(const Profile& p, const std::vector<std::string>& source_roots, int max_function_lines = 400);

/// What the extra columns of `t` mean, those shown only ("Copied = ...; Gathered = ...").
std::string extra_columns_legend(const LineTable& t);

/// Why a profile has no line table, and how to get one (for every renderer's empty section).
std::string no_lines_hint(const Profile& p);

/// A line's time with the hits of iterations whose torch ops were observed at the pace of its
/// other hits, when iteration sampling left at least 5 of those and 2 observed ones, and the
/// observed ones took 1.5x or more per hit (the op observer's cost lands on the lines it
/// observes; the first iterations' warm-up is among them); its measured time otherwise.
/// `paced`: which. What the line costs the program: the line table's Time and % Time, and the
/// heaviest lines.
std::int64_t line_time(const LineStats& l, bool* paced = nullptr);

/// Iteration sampling: the lines of `b` whose Time is paced (line_time), up to three, with both
/// paces and the block's measured time and time at the unobserved pace; "" when none.
std::string observer_pace_note(const LineBlock& b);

/// The block's lines ran mostly on threads other than the loop's (LineStats::off_loop_ns: a
/// prefetcher's producer): their Data is hidden, not exposed; "" otherwise.
std::string off_loop_note(const LineBlock& b);

/// The traced statement of `p` the block's function ran under (LineStats::caller, the one its
/// lines name most), whose Time holds this function's as line_profiler counts callees: "run
/// under train.py:32 `for x in batches(n):` ..."; "" when none is known.
std::string caller_note(const Profile& p, const LineBlock& b);

/// Where tracing began in a frame already running (LineStats::began_running), and what that
/// leaves out; "" when no row says so.
std::string began_note(const LineBlock& b);

/// A traced Python line run more than once that takes half its function's time or more, in a call (the model's
/// forward, a sampler) that no traced function accounts for, and not in backward or the
/// optimizer: how to trace what it calls (--lines FILE); "" when no line is such. `brief`: one
/// clause for the run's summary.
std::string callee_hint(const LineTable& t, bool brief = false);

/// "82.4 MB" + " pinned" / " pageable" / " mixed" (a cell of the Copied column).
std::string copied_cell(const LineExtras& e);
/// "~" for an estimated row's non-empty extra cell, "" otherwise.
inline const char* estimate_mark(const LineExtras& e) { return e.estimated ? "~" : ""; }

}  // namespace gnnprof::reports
