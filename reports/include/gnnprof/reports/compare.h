// gnnprof/reports/compare.h — baseline vs candidate, per stage and per iteration, with
// statistics: the `gnnprof.compare/1` document of `gnnprof ab` (and later `gnnprof compare`).
//
// Samples are per-iteration values pooled over each side's runs (complete iterations only,
// the first `skip` of every run left out as warm-up). For every metric: both medians, the
// delta and ratio of medians, a 95 % bootstrap confidence interval of that ratio, a two-sided
// Mann-Whitney U p-value, and a verdict. docs/compare-schema.md describes the JSON.
//
//   gnnprof::reports::Comparison c = gnnprof::reports::compare_profiles(base, cand, {});
//   std::cout << gnnprof::reports::comparison_text(c);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gnnprof/profile.h"
#include "gnnprof/order_stats.h"
#include "gnnprof/result.h"

namespace gnnprof::reports {

inline constexpr const char* kCompareSchema = "gnnprof.compare/1";
/// Runs per side from which the runs are the samples: Welch's t on 2 and 2 runs has 1 or 2
/// degrees of freedom, an interval wider than any effect (a 1.2x prefetch read 0.65x to 4.2x).
inline constexpr std::uint32_t kMinRuns = 3;

struct CompareOptions {
  /// Warm-up iterations left out of every run; -1: each run's as `gnnprof report` detects it
  /// (detected_warmup: leading iterations over 1.5x the median).
  std::int64_t skip = -1;
  std::uint32_t bootstrap = 2000;    ///< resamples for the confidence interval
  std::uint64_t seed = 12345;        ///< bootstrap seed: the same inputs give the same document
  double alpha = 0.05;               ///< significance level of the verdict
};

/// One run of one side.
struct RunRecord {
  std::string profile;   ///< path of its profile ("" when it wrote none)
  std::string command;
  int exit_code = 0;
  std::string error;     ///< why the run is not usable ("" when it is)
  std::uint64_t iterations = 0;          ///< complete iterations used (after skip)
  std::int64_t median_iteration_ns = 0;
  std::int64_t wall_ns = 0;              ///< the process's wall time, as measured by the runner
  std::uint64_t line_events = 0;         ///< traced Python line events per complete iteration (0: none)
};


struct Side {
  std::string label;  ///< "baseline" / "candidate"
  std::vector<std::string> env;  ///< K=V settings the runner applied
  std::string command;
  std::vector<RunRecord> runs;
};

/// What a metric measures. JSON: "loop" (iteration wall), "loop_thread" (stage time on the loop
/// thread: exposed), "other_threads" (stage time on other threads: hidden), "line" (a traced
/// line's time per iteration), "workers" (DataLoader worker processes' time per batch: hidden).
/// Ordered as the comparison lists them.
enum class Scope { kLoop, kLoopThread, kOtherThreads, kLine, kWorkers };
/// JSON: "faster" | "slower" | "no significant change"; for hidden time (scopes other_threads
/// and workers, a line in workers on both sides) "more" | "less"; for a line or a stage of one
/// side only "baseline only" | "candidate only"; for a line that ran in the loop's process on one
/// side and in DataLoader workers on the other "moved to workers" | "moved to the loop".
enum class Verdict {
  kNoChange, kFaster, kSlower, kLess, kMore, kBaselineOnly, kCandidateOnly, kMovedToWorkers, kMovedToLoop,
  kMovedOffLoopThread, kMovedToLoopThread
};
/// How a line of the line tables found its twin. JSON: "same" | "edited" (a changed statement
/// between two matched neighbours) | "baseline only" | "candidate only".
enum class Match { kSame, kEdited, kBaselineOnly, kCandidateOnly };
const char* to_string(Scope s) noexcept;
const char* to_string(Match m) noexcept;
bool from_string(std::string_view text, Match& out) noexcept;
const char* to_string(Verdict v) noexcept;
bool from_string(std::string_view text, Scope& out) noexcept;
bool from_string(std::string_view text, Verdict& out) noexcept;

/// The metric of the loop thread's time outside every stage (per iteration).
inline constexpr const char* kUnattributed = "(unattributed)";

struct MetricComparison {
  std::string name;  ///< "iteration", a stage name or kUnattributed
  Scope scope = Scope::kLoop;
  std::uint64_t baseline_n = 0, candidate_n = 0;
  std::int64_t baseline_median_ns = 0, candidate_median_ns = 0;
  std::int64_t delta_ns = 0;              ///< candidate - baseline medians
  std::optional<double> ratio;            ///< candidate / baseline medians; none if baseline is 0
  std::optional<double> ci_low, ci_high;  ///< 95 % bootstrap CI of the ratio
  double p_value = 1.0;                   ///< Mann-Whitney U, two-sided, normal approximation
  /// With 3+ runs on each side (kMinRuns), the runs the statistics are over (0: iterations of one run):
  /// p is Welch's t on the runs' medians (means for "iteration (mean)"), the CI that t's
  /// interval of the difference, as a ratio to the baseline runs' mean; *_median_ns, delta and
  /// ratio are then the means of the runs' medians (means).
  std::uint32_t baseline_runs = 0, candidate_runs = 0;
  Verdict verdict = Verdict::kNoChange;
  /// The stage's category ("" for the iteration) and, for a torch op, the phase it ran in
  /// most: views list ops under their phase (hierarchy.h).
  std::string category, phase;
  /// A torch op that ran in several phases (another one holding 10 % or more of its time): its
  /// metric is their sum, and this says how it splits ("forward 62%, ops (no grad) 38%").
  std::string phases;
  /// "" for medians; "mean" for the "iteration (mean)" row: its *_median_ns hold means (the
  /// loop's time per iteration, slow iterations included), its CI is the bootstrap of the ratio
  /// of means and its p Welch's t-test.
  std::string statistic;
  bool op() const { return category == "op"; }
};

/// A stage's row that is 0 ns in the median iteration of both sides (gnnprof's own work, a rare
/// sync): it says nothing, and the text views leave it out (the JSON keeps it).
inline bool zero_on_both_sides(const MetricComparison& m) {
  return m.scope != Scope::kLoop && m.baseline_median_ns == 0 && m.candidate_median_ns == 0;
}

/// The name of the loop's mean-iteration row (second, after "iteration").
inline constexpr const char* kMeanIteration = "iteration (mean)";
/// The DataLoader's batch stage when the sides' iterator classes differ (workers on one side only).
inline constexpr const char* kLoaderNext = "enumerate(DataLoader)#__next__";
/// The metric of a DataLoader worker's batch (scope workers): its wall time per batch.
inline constexpr const char* kWorkerBatch = "batch (DataLoader workers)";

/// One line of the line tables, matched across the sides by file (its base name), function
/// and statement text, so that lines moved by an edit elsewhere still match; a changed
/// statement between two matched neighbours is paired with its twin as "edited".
struct LineComparison {
  std::string file, function;
  std::string code;            ///< the statement (the baseline's when both sides have it)
  std::string candidate_code;  ///< the candidate's statement when it differs ("edited")
  std::uint32_t baseline_line = 0, candidate_line = 0;  ///< 0: absent on that side
  Match match = Match::kSame;
  std::uint64_t baseline_hits = 0, candidate_hits = 0;  ///< over the runs' analyzed iterations
  /// The side's lines of this table (function) ran in DataLoader worker processes: samples per
  /// batch, off the loop thread (a collate_fn moved into workers by num_workers 0 -> 2). Set for
  /// the table, so also on a side that lacks this one line.
  bool baseline_in_workers = false, candidate_in_workers = false;
  /// The side's lines of this table ran mostly on threads other than the loop's, in its process
  /// (LineStats::off_loop_ns: a prefetcher's producer): hidden behind the loop. Set for the table.
  bool baseline_off_loop = false, candidate_off_loop = false;
  /// Ran in fewer than half the analyzed iterations on both sides (a validation pass once an
  /// epoch): the metric is over the iterations it ran in, not every one (whose median is 0).
  bool sparse = false;
  /// Per-iteration time of the line (name: "file:line", scope "line"); for a line of one
  /// side only, the other side's samples are empty and the verdict is the match.
  MetricComparison metric;
};

struct Comparison {
  std::string schema = kCompareSchema;
  std::string tool_version;
  CompareOptions options;
  Side baseline, candidate;
  /// "iteration" first, "iteration (mean)" second, then loop-thread stages phase-first (each phase by its larger median,
  /// followed by its ops), then other threads' the same way.
  std::vector<MetricComparison> metrics;
  /// From the "iteration" metric: baseline / candidate medians (> 1: candidate faster), with
  /// the CI inverted accordingly.
  std::optional<double> speedup, speedup_ci_low, speedup_ci_high;
  Verdict verdict = Verdict::kNoChange;  ///< the iteration metric's
  /// Line tables side by side (profiles with traced lines), grouped by function in the
  /// candidate's source order.
  std::vector<LineComparison> lines;
  /// Backward passes per iteration on each side (backward_passes_per_iteration(), the mean over
  /// its profiles): they differ under a changed gradient accumulation, where per-iteration
  /// figures compare different amounts of work.
  std::optional<double> baseline_passes, candidate_passes;
};

/// Whether a row's statistics are over runs (kMinRuns or more on each side).
inline bool runs_are_samples(const MetricComparison& m) { return m.baseline_runs >= kMinRuns && m.candidate_runs >= kMinRuns; }

/// How the comparison's statistics were taken, one sentence: over runs (3+ per side) or over
/// the iterations of one run, and the one-run caveat (drift between runs is not measured).
std::string statistics_note(const Comparison& c);


/// Compares two sets of profiles (each with at least one profile). `*_workers`: the DataLoader
/// worker processes' profiles of each side's runs (read_loader_worker_profiles()), compared per
/// batch (scope workers) and in the line tables, so that work moved into workers is followed there.
Comparison compare_profiles(const std::vector<Profile>& baseline, const std::vector<Profile>& candidate,
                            const CompareOptions& options, const std::vector<Profile>& baseline_workers = {},
                            const std::vector<Profile>& candidate_workers = {});

/// Fills run statistics (iterations, median iteration) of `run` from its profile.
void describe_run(const Profile& profile, std::int64_t skip, RunRecord& run);

std::string comparison_to_json(const Comparison& c);
Result<Comparison> comparison_from_json(const std::string& text, const std::string& origin);
Result<Comparison> read_comparison_file(const std::string& path);
/// `ops`: list every op metric under its phase; otherwise phases only and one line on the ops.
std::string comparison_text(const Comparison& c, bool ops = false);
/// When the candidate's iteration is significantly slower: one sentence that says so plainly
/// and names the loop-thread stage that got slower the most ("" otherwise).
std::string slower_summary(const Comparison& c);
/// When the mean iteration's verdict differs from the median's (slow iterations that the
/// median leaves out, or that the candidate lost): one sentence, else "".
std::string mean_summary(const Comparison& c);

/// When the sides' iterations hold different numbers of backward passes (gradient accumulation
/// 1 vs 4): one sentence with the iteration per pass on each side, else "".
std::string passes_summary(const Comparison& c);

/// The line part of comparison_text() (empty without line comparisons).
std::string comparison_lines_text(const Comparison& c);

/// When lines left the loop's process for DataLoader workers (or came back): one sentence with
/// the loop-thread time they took and what they take per batch in the workers, else "".
std::string moved_summary(const Comparison& c);

/// Where a line table's lines ran, for its heading: "" when in the loop's process on both sides.
std::string line_where(const LineComparison& l);

/// The line part of compare_profiles(), exposed for tests.
std::vector<LineComparison> compare_lines(const std::vector<Profile>& baseline, const std::vector<Profile>& candidate,
                                          const CompareOptions& options, const std::vector<Profile>& baseline_workers = {},
                                          const std::vector<Profile>& candidate_workers = {});

/// Similarity of two statements in [0, 1]: of their characters (2 x common characters in
/// order / total length), raised to 0.5 + half that when both assign to (or call) the same name.
double statement_similarity(const std::string& a, const std::string& b);
/// 2 x the longest common subsequence of characters / total length, in [0, 1].
double character_similarity(const std::string& a, const std::string& b);

/// Statistics used above, exposed for tests.
double mann_whitney_p(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b);

}  // namespace gnnprof::reports
