// gnnprof/reports/hierarchy.h — a profile read top-down: the iteration, its phases, each
// phase's ops (and the traced lines that spent time in it). Built once from a Profile and its
// Analysis; the text, HTML and Markdown reports, compare and merge render it, none groups ops
// by itself.
//
// Phases are the stages that are not torch ops: the observer's forward, backward,
// forward (no grad), ops (no grad), optimizer, comm, comm wait; sample, materialize, h2d,
// loader_wait; record_function scopes and NVTX ranges; GNNPROF_STAGEs. Ops (category "op") hang
// under the phase they ran in (the profile's stage_edges), heaviest by self time first, the
// top N and one "other ops" row for the rest. Autograd's node frames show as the node's name
// (`SoftmaxBackward0`, not `autograd::engine::evaluate_function: SoftmaxBackward0`).
//
//   Hierarchy h = build_hierarchy(profile, analyze(profile, {}));
//   for (const PhaseNode& ph : h.phases) for (const OpNode& op : ph.ops) ...
#pragma once

#include <cstdint>
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
  std::int64_t median_ns = 0, p90_ns = 0;  ///< per iteration
  double share = 0;                        ///< median / median iteration
  std::uint64_t hits = 0;
  std::int64_t total_ns = 0, self_ns = 0;  ///< over the run, every thread
  std::vector<OpNode> ops;                 ///< the top ones by self time
  OpNode other;                            ///< the rest together ("other ops"); hits = how many ops
  std::size_t op_count = 0;
  std::vector<LineNode> lines;             ///< traced lines by their time in this phase (top 5)
};

struct Hierarchy {
  std::int64_t iteration_median_ns = 0;
  std::int64_t unattributed_median_ns = 0;
  std::vector<PhaseNode> phases;  ///< loop-thread phases by median, then hidden ones
  std::size_t op_stages = 0;      ///< op stages in the profile
  std::size_t top_ops = 10;
  bool edges = false;             ///< the profile says which phase each op ran in
};

/// Whether a stage category is a torch op's (a drill-down row, not a phase).
bool is_op_category(const std::string& category);

Hierarchy build_hierarchy(const Profile& p, const Analysis& a, std::size_t top_ops = 10);

}  // namespace gnnprof::reports
