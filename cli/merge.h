// merge.h — `gnnprof merge RANK0.json RANK1.json ... [-o merged.json] [--html OUT]`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gnnprof::cli {

struct MergeArgs {
  std::vector<std::string> inputs;  ///< one profile per rank
  std::string json_out, html_out;
  std::string threshold = "10%";    ///< straggler threshold over the median rank's busy time
  std::uint64_t skip = 2;
};

/// Prints the cross-rank text report; 0 on success, 1 an output not written, 2 bad input
/// (unreadable profile, no rank, duplicate ranks, profiles of different runs).
int run_merge(const MergeArgs& args);

}  // namespace gnnprof::cli
