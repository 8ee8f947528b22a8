// gnnprof/reports/analysis.h — what a profile means: per-iteration breakdown, data time
// exposed vs hidden, transfers, host usage, a what-if-prefetch estimate, and diagnostics.
//
//   gnnprof::reports::Analysis a = gnnprof::reports::analyze(profile, {});
//   for (const auto& d : gnnprof::reports::diagnose(profile, a)) std::cout << d.id << "\n";
//
// Definitions (per complete iteration i, after warm-up):
//   D_i  exposed data time: loop-thread stages of category "data" (sample, materialize, h2d,
//        loader_wait, ...) — the loop waited for them;
//   H_i  hidden data time: "data" stages on other threads (a prefetcher's producer);
//   C_i  compute time: loop-thread stages of category "compute";
//   R_i  the rest: wall_i - D_i - C_i (sync, other stages, unattributed).
// What-if prefetch: predicted_i = max(D_i, C_i) + R_i, i.e. data fully overlapped with compute
// and nothing else changed; the estimate is the median over iterations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gnnprof/profile.h"

namespace gnnprof::reports {

struct AnalysisOptions {
  /// Warm-up iterations to leave out; -1 detects them (leading iterations slower than 1.5x the
  /// median, at most 10 and at most a tenth of all).
  std::int64_t skip = -1;
};

struct IterationStage {
  std::string name, category;
  std::int64_t median_ns = 0, p90_ns = 0, mean_ns = 0;
  double share = 0;  ///< median / median iteration
};

struct TransferTotals {
  std::uint64_t count = 0, bytes = 0;
  std::uint64_t pinned_bytes = 0, pageable_bytes = 0;
  std::uint64_t sync_count = 0, async_count = 0;
  std::int64_t total_ns = 0;
};

struct Analysis {
  std::uint64_t iterations_total = 0, iterations_used = 0, skipped = 0;
  /// Of the used iterations, those whose torch ops were not observed (iteration sampling):
  /// every other figure below comes from the observed ones; their own median wall is here.
  std::uint64_t iterations_unobserved = 0;
  std::int64_t unobserved_iteration_median_ns = 0;
  bool skip_detected = false;
  std::int64_t iteration_median_ns = 0, iteration_p90_ns = 0, iteration_mean_ns = 0;
  std::vector<IterationStage> loop_stages;   ///< by median, largest first
  std::vector<IterationStage> other_stages;
  std::int64_t exposed_data_ns = 0, hidden_data_ns = 0, compute_ns = 0, rest_ns = 0;  ///< medians
  double exposed_data_share = 0;  ///< exposed_data_ns / iteration_median_ns
  std::int64_t whatif_predicted_ns = 0;
  double whatif_speedup = 1.0;  ///< iteration median / predicted
  TransferTotals transfers;
  std::optional<double> cpu_utilization;  ///< CPU time / (wall x cpus), from host samples
  std::int64_t rss_first = 0, rss_last = 0, rss_peak = 0;
  std::string device_note;  ///< why there is no device busy/idle breakdown
};

Analysis analyze(const Profile& profile, const AnalysisOptions& options);

/// Iteration sampling (the zero-code observer watched ops in some iterations only): the
/// iterations of `its` whose ops were observed, when there are such and some were not;
/// otherwise `its` itself. Per-stage figures are taken over these.
std::vector<const IterationStats*> ops_observed(const std::vector<const IterationStats*>& its);

/// The diagnostics rules (docs/diagnostics.md): stable ids, severity, message, evidence.
std::vector<Diagnostic> diagnose(const Profile& profile, const Analysis& analysis);

/// Every rule id, in the order diagnose() evaluates them.
const std::vector<std::string>& diagnostic_ids();

}  // namespace gnnprof::reports
