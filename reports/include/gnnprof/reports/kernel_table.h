#pragma once
// The GPU kernel table's rows (text and HTML reports): under iteration sampling a kernel's
// launches in the iterations whose ops were not observed carry no op; they are shared among the
// stages and ops that kernel's observed launches had.
#include <cstdint>
#include <string>
#include <vector>

#include "gnnprof/profile.h"

namespace gnnprof::reports {

struct KernelRow {
  std::string name, stage, op;
  std::uint64_t count = 0;
  std::int64_t total_ns = 0, max_ns = 0;
  /// Holds a share of launches without their op (iteration sampling): its calls and time are
  /// estimates ("~" in the text).
  bool estimated = false;
};

/// What "~" on a row means, for the table's legend.
inline constexpr const char* kKernelShareNote =
    "~ = with a share of the kernel's launches in iterations whose ops were not observed, split among the stages and "
    "ops its observed launches had, by their calls";

/// `p.kernels` as the table shows them, largest total first. `sampled`: the run sampled
/// iterations (sampled_ops_note(p, true) is not empty); then a kernel's launches without an op
/// are split among the (stage, op) rows of its launches with one, by those rows' calls. A
/// kernel never seen with its op keeps its row, as does every row of an unsampled run (a
/// kernel launched outside any torch op: custom CUDA, NCCL).
std::vector<KernelRow> kernel_rows(const Profile& p, bool sampled);

}  // namespace gnnprof::reports
