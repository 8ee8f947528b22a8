// gnnprof/reports/merge.h — one cross-rank view of a distributed run (`gnnprof merge`).
//
// Input: one profile per rank (rank, local rank, world size, host and run id in each
// profile's `run`). Output: each rank's per-iteration stage times side by side, iteration time
// per rank, stragglers with the stage that makes the difference, load imbalance (rows and
// bytes materialized per iteration), the share of each rank's iterations spent waiting in
// communication, and the clock offset of each rank (docs/architecture.md, "Distributed").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gnnprof/profile.h"
#include "gnnprof/result.h"
#include "gnnprof/reports/hierarchy.h"

namespace gnnprof::reports {

inline constexpr const char* kMergeSchema = "gnnprof.merge/1";

struct MergeOptions {
  /// A rank is a straggler when its median busy time per iteration (wall minus exposed
  /// communication) exceeds the median of the other ranks' by more than this fraction.
  double straggler_threshold = 0.10;
  /// Warm-up iterations left out on every rank.
  std::uint64_t skip = 2;
};

/// How a rank's clock offset was taken: CLOCK_MONOTONIC on the lowest rank's host, else the
/// wall clock (other hosts' clocks are only as close as NTP keeps them).
enum class ClockBasis { kMonotonicSameHost, kRealtimeOtherHost };
/// "monotonic (same host)" | "realtime (other host)", as in the merge JSON.
const char* to_string(ClockBasis b) noexcept;

struct RankSummary {
  std::int64_t rank = 0;
  std::int64_t local_rank = -1;
  std::string host;
  std::int64_t pid = 0;
  std::string file;
  std::uint64_t iterations = 0;              ///< complete iterations used (after skip)
  std::vector<std::int64_t> iteration_ns;    ///< wall per iteration used, in order
  std::vector<std::int64_t> busy_ns;         ///< the same minus exposed comm, per iteration
  std::int64_t iteration_median_ns = 0;
  /// Per iteration (mean): time in comm stages of the loop thread (waiting for the other ranks
  /// or the network), and wall minus that (what this rank computes and loads itself).
  std::int64_t comm_ns = 0;
  std::int64_t busy_median_ns = 0;
  double comm_share = 0.0;                   ///< comm_ns / mean iteration wall
  /// Collectives in flight per iteration (start to completion, on the backend's threads) and
  /// the part of it overlapped by the loop thread's own work.
  std::int64_t comm_in_flight_ns = 0;
  std::int64_t comm_overlapped_ns = 0;
  std::map<std::string, std::int64_t> stage_ns;  ///< loop thread, mean inclusive ns per iteration
  double materialized_rows = 0, materialized_bytes = 0;  ///< per iteration
  /// GPU kernel execution time per iteration (the profile's kernel table over its complete
  /// iterations, like the materialized figures; 0 without CUPTI): a rank whose GPU is slower
  /// shows its extra time here; its host-side stages show it only as a wait at the next
  /// synchronization.
  std::int64_t gpu_kernel_ns = 0;
  std::int64_t clock_offset_ns = 0;  ///< this rank's time origin minus rank 0's
  ClockBasis clock_basis = ClockBasis::kMonotonicSameHost;
};

struct Straggler {
  std::int64_t rank = 0;
  double excess = 0.0;           ///< busy time over the other ranks' median, as a fraction
  std::int64_t busy_ns = 0;         ///< its median busy time per iteration
  std::int64_t others_busy_ns = 0;  ///< the median of the other ranks' busy times
  std::string stage;             ///< the stage that makes the most of the difference
  std::int64_t stage_excess_ns = 0;
  std::string op;                ///< inside that stage, the torch op that makes most of it ("" if none)
  std::int64_t op_excess_ns = 0;
};

struct Merged {
  std::string schema = kMergeSchema;
  std::string run_id;
  std::int64_t world_size = 0;
  std::vector<std::string> hosts;
  MergeOptions options;
  std::vector<RankSummary> ranks;  ///< by rank
  std::vector<std::string> stages; ///< phase rows (no torch ops), heaviest first (by the median rank)
  std::map<std::string, std::string> stage_category;
  std::map<std::string, StagePlace> places;  ///< where each stage sits in the hierarchy (hierarchy.h)
  std::int64_t busy_median_ns = 0; ///< the median rank's
  std::vector<Straggler> stragglers;
  /// Max over median rank, per iteration (1.0 = balanced); 0 when nothing was materialized.
  double rows_imbalance = 0, bytes_imbalance = 0;
  std::vector<std::string> notes;  ///< e.g. "rank 3 has 2 fewer iterations"
};

/// Checks that the profiles are ranks of one run (rank present, no duplicate, same run id and
/// world size) and summarizes them. `files` names them in errors. An error message names the
/// file(s) and the problem.
Result<Merged> merge_profiles(const std::vector<Profile>& profiles, const std::vector<std::string>& files,
                              const MergeOptions& options = {});

std::string merged_to_json(const Merged& m);
std::string merged_text(const Merged& m);
Status render_merged_html(const Merged& m, std::ostream& out);

}  // namespace gnnprof::reports
