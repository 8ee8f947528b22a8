// gnnprof/torch_observer.h — torch op observer for linked libtorch programs.
//
// One call makes every torch op of the process visible to gnnprof, sorted into forward,
// backward, optimizer, materialize, h2d/d2h, comm and record_function stages (rules in
// docs/zero-code.md), with no macro on each line:
//
//   #include <gnnprof/torch_observer.h>
//   gnnprof::torch::observe_ops();   // once, before the loop
//
// The same observer runs in `gnnprof run` (injected). This header includes no torch header;
// link gnnprof::torch_observer.
#pragma once

#include <cstdint>

#include "gnnprof/result.h"

namespace gnnprof::torch {

struct ObserveOptions {
  /// Each top-level op (aten::addmm, ...) also becomes a stage of category "op".
  bool op_stages = true;
  /// A gather (index_select / embedding / index) from a host tensor of at least this many
  /// bytes is recorded as a materialization.
  std::uint64_t gather_min_bytes = 1u << 20;
  /// Phase stages (forward, backward, ops (no grad), optimizer). Turn off when the program's
  /// own GNNPROF_STAGE macros name its phases: the op stages then nest in those.
  bool phases = true;
  /// Iterations from optimizer steps. Turn off when the program marks them (GNNPROF_STEP).
  bool mark_iterations = true;
};

/// Registers the global RecordFunction callback (once; later calls are no-ops).
Status observe_ops(const ObserveOptions& options = {});

/// Closes the calling thread's open phase stage (call before the session stops, or let
/// gnnprof::stop() lose an unfinished phase).
void close_thread() noexcept;

}  // namespace gnnprof::torch
