// gnnprof/reports/hierarchy.h — a profile read top-down: the iteration, its phases, each
// phase's ops (and the traced lines that spent time in it). Built once from a Profile and its
// Analysis; the text, HTML and Markdown reports, compare and merge render it, none groups ops
// by itself.
//
// Phases are the stages that are not torch ops: the observer's forward, backward,
// forward (no grad), ops (no grad), ops after backward, optimizer, comm, comm wait; sample, materialize, h2d,
// loader_wait; record_function scopes and NVTX ranges; GNNPROF_STAGEs. Ops (category "op") hang
// under the phase they ran in (the profile's stage_edges), heaviest by self time first, the
// top N and one "other ops" row for the rest. Autograd's node frames show as the node's name
// (`SoftmaxBackward0`, not `autograd::engine::evaluate_function: SoftmaxBackward0`).
//
//   Hierarchy h = build_hierarchy(profile, analyze(profile, {}));
//   for (const PhaseNode& ph : h.phases) for (const OpNode& op : ph.ops) ...
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gnnprof/profile.h"
#include "gnnprof/reports/analysis.h"

namespace gnnprof::reports {

struct OpNode {
  std::string name;   ///< as recorded
  std::string label;  ///< for display (short_op_name)
  std::uint64_t hits = 0;
  std::int64_t self_ns = 0, total_ns = 0;  ///< over the run, within this phase
  double share = 0;                        ///< self_ns / the phase's total_ns
};

struct LineNode {
  std::string file, code;
  std::uint32_t line = 0;
  std::int64_t ns = 0;  ///< the line's time in this phase over the run (lines[].stages)
  double share = 0;     ///< of the phase's total_ns
};

struct PhaseNode {
  std::string name, category;
  bool hidden = false;  ///< on other threads (a prefetcher's producer, a GPU lane): not the loop's
  bool in_iterations = true;  ///< false: seen in no analysed iteration (no per-iteration figures)
  std::int64_t median_ns = 0, p90_ns = 0, mean_ns = 0;  ///< per iteration
  double share = 0;                        ///< median / median iteration
  std::uint64_t hits = 0;
  std::int64_t total_ns = 0, self_ns = 0;  ///< over the run, every thread
  StageStats stats;                        ///< the stage's run-level row (hits, per hit, p50, ...)
  std::string parent;  ///< the phase it mostly ran inside (e.g. a user scope), "" if top-level
  std::vector<OpNode> ops;                 ///< the top ones by self time
  OpNode other;                            ///< the rest together ("other ops"); hits = how many ops
  std::size_t op_count = 0;
  std::vector<LineNode> lines;             ///< traced lines by their time in this phase (top 5)
  /// Iteration sampling: recorded only in the iterations whose torch ops were observed (a
  /// phase the op observer opens), so its run total covers those iterations, not every one.
  bool sampled = false;
};

struct Hierarchy {
  std::int64_t iteration_median_ns = 0, iteration_mean_ns = 0;
  std::int64_t unattributed_median_ns = 0, unattributed_mean_ns = 0;
  /// Loop-thread phases by median, then other threads' (a name may be in both), then stages
  /// seen in no analysed iteration (median 0).
  std::vector<PhaseNode> phases;
  std::size_t op_stages = 0;  ///< op stages listed under a phase (every op stage without stage_edges)
  std::size_t top_ops = 10;
  bool edges = false;             ///< the profile says which phase each op ran in
  /// Complete iterations, and those whose torch ops were observed (fewer under iteration sampling).
  std::size_t complete_iterations = 0, observed_iterations = 0;
  std::size_t analysed_iterations = 0;  ///< those the per-iteration figures come from (warm-up skipped)
  /// The run's time before its first complete iteration (setup) and after its last (0 without).
  std::int64_t before_loop_ns = 0, after_loop_ns = 0;
  /// Between them, the time in no iteration: between a loop's passes (an evaluation after each
  /// epoch), and iterations left out (incomplete, a DataLoader's before the training loop's).
  std::int64_t between_ns = 0;
  bool loader_worker = false;  ///< a DataLoader worker's profile: between its batches it waits for requests
};

/// A phase's mean time per analysed iteration over the mean iteration, in percent (loop
/// thread; the stage tables' "% iter"); negative when it has none (another thread's, setup's).
double iteration_pct(const PhaseNode& ph, const Hierarchy& h);
/// The same for the loop thread's time outside every stage.
double unattributed_iteration_pct(const Hierarchy& h);

/// Whether a stage category is a torch op's (a drill-down row, not a phase).
bool is_op_category(const std::string& category);

Hierarchy build_hierarchy(const Profile& p, const Analysis& a, std::size_t top_ops = 10);

/// ", N between iterations (...)" when the complete iterations leave time between them (a
/// loop's passes, an evaluation after each epoch), else "".
std::string between_text(const Hierarchy& h);

/// The stage table's rows: each phase once (its loop-thread node when it has one), by total
/// time over the run, then name; a nested phase right after the phase it runs in.
std::vector<const PhaseNode*> phase_rows(const Hierarchy& h);
/// How deep `ph` is nested (0: top level; its `parent` chain among h's phases).
int phase_depth(const PhaseNode& ph, const Hierarchy& h);

/// Where each stage of `profiles` sits in the hierarchy, for views that list a metric per
/// stage name (compare, merge): its category, and for an op the phase it ran in most (by time
/// over all the profiles; "" when no profile says).
struct StagePlace {
  std::string category, phase;
  /// An op whose time is split across phases (another one holds 10 % or more): "forward 62%,
  /// ops (no grad) 38%", largest first; else empty.
  std::string phases;
  bool op() const { return is_op_category(category); }
};
std::map<std::string, StagePlace> stage_places(const std::vector<const Profile*>& profiles);

/// Orders rows phase-first: each phase (in the rows' order) followed by its ops (in theirs),
/// then ops whose phase is not among the rows. `name_of` gives a row's stage name.
template <typename Row, typename Name>
std::vector<Row> phase_first(std::vector<Row> rows, const std::map<std::string, StagePlace>& places, Name name_of) {
  auto place = [&](const Row& r) -> const StagePlace* {
    auto f = places.find(name_of(r));
    return f == places.end() ? nullptr : &f->second;
  };
  std::vector<Row> out;
  std::vector<bool> used(rows.size(), false);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const StagePlace* pl = place(rows[i]);
    if (pl != nullptr && pl->op()) continue;
    out.push_back(rows[i]);
    used[i] = true;
    for (std::size_t j = 0; j < rows.size(); ++j) {
      const StagePlace* q = place(rows[j]);
      if (!used[j] && q != nullptr && q->op() && q->phase == name_of(rows[i])) {
        out.push_back(rows[j]);
        used[j] = true;
      }
    }
  }
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (!used[i]) out.push_back(rows[i]);
  return out;
}

}  // namespace gnnprof::reports
