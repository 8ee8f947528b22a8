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
// and nothing else changed; the estimate is the median over iterations. That is a bound: the
// expected time also respects the machine's limits (docs/architecture.md, "What-if"):
//   cores: the same CPU work on P CPUs takes at least that work / P: with the process keeping
//          a share b of the P CPUs busy while the iterations ran (host samples),
//          max(D_i, C_i, b wall_i - R_i) + R_i (without host samples: compute on k threads,
//          max(D_i, C_i, (D_i + k C_i) / P) + R_i);
//   GIL (Python hosts): the data stages' own Python (their time outside torch ops and off the
//          CPU, a share g of D) holds the GIL and cannot overlap the loop: max((1-g) D_i, C_i) + g D_i + R_i;
// and the expectation is the largest of these. Prefetching will not pay when it is within 5 %
// of today's time: whatif_note says which limit (or compute-bound data) is why.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
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

/// With CUPTI: a direction's bytes (every transfer of it in the profile) and the GPU's copy
/// time for it (its `gpu: memcpy HtoD` / `DtoH` ranges): the achieved bandwidth, which the
/// transfer rows the torch observer records (host side) do not carry.
struct GpuCopyRate {
  std::string direction;  ///< "h2d" or "d2h"
  std::uint64_t bytes = 0;
  std::int64_t gpu_ns = 0;
};

struct Analysis {
  std::uint64_t iterations_total = 0, iterations_used = 0, skipped = 0;
  /// Of the used iterations, those whose torch ops were not observed (iteration sampling):
  /// every other figure below comes from the observed ones; their own median wall is here.
  std::uint64_t iterations_unobserved = 0;
  std::int64_t unobserved_iteration_median_ns = 0;
  /// Under iteration sampling, with 3 or more unobserved iterations: the observed iterations'
  /// figures scaled to the unobserved ones' pace (observer_correction()). The scopes recorded in
  /// every iteration, and the rest of the loop thread's time ("" here), with their medians.
  struct ObserverScale {
    std::string scope;  ///< "" = the iteration outside those scopes
    std::int64_t observed_ns = 0, unobserved_ns = 0;
  };
  std::vector<ObserverScale> observer_scales;
  /// The observed iterations' median wall as recorded (observer cost included).
  std::int64_t observed_iteration_median_ns = 0;
  bool skip_detected = false;
  std::int64_t iteration_median_ns = 0, iteration_p90_ns = 0, iteration_mean_ns = 0;
  /// Of every used iteration, observed or not: the loop as it runs, the headline figure (under
  /// iteration sampling the figures above, the shares and the what-if are the observed
  /// iterations', scaled to the unobserved pace when observer_scales is set; else the same).
  std::int64_t run_iteration_median_ns = 0, run_iteration_p90_ns = 0;
  std::vector<IterationStage> loop_stages;   ///< by median, largest first
  std::vector<IterationStage> other_stages;
  std::int64_t exposed_data_ns = 0, hidden_data_ns = 0, compute_ns = 0, rest_ns = 0;  ///< medians
  /// Of exposed_data_ns: the loop waiting for a DataLoader's worker processes (median). They
  /// already load ahead, so the what-if leaves it on the critical path.
  std::int64_t worker_wait_ns = 0;
  /// Of exposed_data_ns: the loop waiting for batches the program's own threads or processes
  /// make ahead of it (the stage "producer wait": Queue.get, Future.result; median). Left on
  /// the critical path by the what-if, as worker_wait_ns.
  std::int64_t producer_wait_ns = 0;
  /// The same as a mean, and as a share of the analysed iterations' time (sum over sum): a
  /// thread pool's waits come in bursts (N futures done at once), so their median may be 0.
  std::int64_t producer_wait_mean_ns = 0;
  double producer_wait_share = 0;
  /// Of exposed_data_ns: the training loop's coroutine suspended at an await (the stage "await":
  /// the event loop running other tasks, or idle until I/O or a timer), as a mean and a share of
  /// the analysed iterations' time (sum over sum). Left on the critical path by the what-if.
  std::int64_t await_mean_ns = 0;
  double await_share = 0;
  /// Of the stage "await"'s time over the run, the share off the loop thread's CPU (the
  /// tracer's counter "off-CPU ns: await"); unset without it.
  std::optional<double> await_off_cpu_share;
  /// The loop's own data time: exposed less both waits, per iteration (median). What a
  /// prefetcher could overlap with compute.
  std::int64_t own_data_ns = 0;
  /// The profile of a DataLoader worker process (collector "loader-worker"): its iterations
  /// are batches fetched, so the loop's figures (exposed data, the what-if) and rules
  /// (exposed-data-time, loader-bound, low-utilization) do not apply to it.
  bool loader_worker = false;
  std::int64_t unattributed_median_ns = 0, unattributed_p90_ns = 0,  ///< loop-thread time outside every stage
      unattributed_mean_ns = 0;
  double exposed_data_share = 0;  ///< exposed_data_ns / iteration_median_ns
  std::int64_t whatif_predicted_ns = 0;
  double whatif_speedup = 1.0;  ///< iteration median / predicted
  /// The what-if within the machine's limits (cores, and the GIL in Python); = predicted when
  /// no limit applies.
  std::int64_t whatif_expected_ns = 0;
  double whatif_expected_speedup = 1.0;
  int whatif_cpus = 0, whatif_compute_threads = 0;  ///< P and k of the cores limit (0: unknown)
  std::optional<double> whatif_busy;                ///< b of the cores limit (host samples)
  std::optional<double> whatif_gil_share;           ///< g of the GIL limit (Python hosts with op stages)
  /// The loop thread's data stages' time off the CPU over the run (the observer's "off-CPU ns:"
  /// counters: sleeping, blocked in I/O), left out of g.
  std::int64_t data_off_cpu_ns = 0;
  bool whatif_pays = true;  ///< expected speedup >= 1.05
  std::string whatif_note;  ///< which limit the expectation hit, and why prefetching will not pay
  TransferTotals transfers;
  std::vector<GpuCopyRate> gpu_copies;
  std::optional<double> cpu_utilization;  ///< CPU time / (wall x cpus), from host samples
  /// The same over the analysed iterations only (host samples inside them covering half their
  /// span or more); unset otherwise. A loop's share, not the set-up's or a final sleep's.
  std::optional<double> loop_cpu_utilization;
  /// The same for every process on those CPUs (host samples' machine_busy_ns), over half a
  /// second or more: what other processes took (another tenant, DataLoader workers) is the
  /// difference. The what-if's CPU bound uses it when that is 10 % of the CPUs or more.
  std::optional<double> loop_machine_utilization;
  std::int64_t rss_first = 0, rss_last = 0, rss_peak = 0;
  std::string device_note;  ///< why there is no device busy/idle breakdown
  /// With CUPTI: GPU activity (kernels and copies on the GPU lanes) per analyzed iteration,
  /// median, and its share of the iteration (capped at 1; overlapping streams add up).
  std::optional<std::int64_t> gpu_ns;
  std::optional<double> gpu_busy;
  /// Backward passes per iteration (backward_passes_per_iteration()): over 1 under gradient
  /// accumulation, where an iteration (an optimizer step) holds several micro-batches.
  std::optional<double> backward_passes;
};

/// The "backward" stage's hits over the complete iterations whose ops were observed: how many
/// forward/backward passes an iteration holds (4 when the optimizer steps every 4th micro-batch).
/// nullopt without a backward stage or observed iterations.
std::optional<double> backward_passes_per_iteration(const Profile& profile);

/// "; each holds 4.0 backward passes (gradient accumulation: an iteration is one optimizer
/// step)" when passes >= 1.5, else "".
std::string passes_text(const std::optional<double>& passes);

Analysis analyze(const Profile& profile, const AnalysisOptions& options);

/// Under iteration sampling: how many iterations were observed, the observer's cost, and how the
/// figures were scaled to the unobserved pace (observer_scales). "" without sampling.
std::string sampling_note(const Analysis& a);

/// The warm-up `analyze` leaves out of a profile by default, which compare and check leave out
/// of each run too: the leading complete iterations over 1.5x the median of their kind
/// (observed or not, under iteration sampling), at most 10, a tenth of them (at least 2), a
/// third.
std::size_t detected_warmup(const Profile& profile);
/// `skip` when >= 0, else detected_warmup(profile).
std::size_t warmup_of(const Profile& profile, std::int64_t skip);
/// The complete iterations past the first `skip` complete ones, in order.
std::vector<const IterationStats*> complete_past(const Profile& profile, std::size_t skip);

/// The iterations `a` analysed: the complete ones past its warm-up (`a.skipped`), in order.
std::vector<const IterationStats*> analysed_iterations(const Profile& profile, const Analysis& a);

/// Whether the profiled process is a Python interpreter (its lines traced, or its command).
bool python_host(const Profile& profile);

/// Whether traced line `l` is a call that holds other traced functions: run once, all of its
/// function's time, and at least each other traced function's time (`trainer.fit(...)` around
/// Lightning's callbacks, `main()` at module level); not a one-line function's hot line.
bool holds_traced_functions(const Profile& profile, const LineStats& l);

/// Whether half or more of traced line `l`'s time is that of traced lines under it (nested_ns:
/// a loop's header resuming its traced batch generator): those lines show it, not this one.
inline bool holds_traced_lines(const LineStats& l) { return l.nested_ns > 0 && 2 * l.nested_ns >= l.total_ns; }

/// A training loop whose header pulls its batches from traced code of the program's own (a
/// batch generator, an iterator's __next__: lines whose `caller` is the header, holding half
/// its time or more), and the header rewritten to pull them through gnnprof's prefetcher.
struct GeneratorPrefetch {
  const LineStats* header = nullptr;  ///< `for seeds, nbrs in batches(n):`
  std::string function;               ///< the function it pulls from: `batches` (its qualified name)
  std::string file;                   ///< that function's file, as the tracer names it
  std::string edit;                   ///< `for seeds, nbrs in gnnprof.prefetch(batches(n)):`
};
/// nullopt when the loop is not such, or already pulls through a prefetcher (a loader_wait
/// stage, or the collector `prefetch` that gnnprof.prefetch notes at any depth).
std::optional<GeneratorPrefetch> generator_prefetch(const Profile& profile);

/// The what-if within the machine's limits in one sentence (every renderer prints it):
/// "Within this machine's limits: 19.9 ms (1.68x): a producer shares the 2 CPUs with ..." or
/// "Prefetching will not pay here: expected 30.1 ms (1.01x): compute-bound: ...". "" without
/// iterations.
std::string whatif_expectation(const Analysis& a);

/// "the GPU is busy 9% of an iteration (1.00 ms of kernels and copies per iteration, medians)",
/// or "" without device activity (every renderer prints it).
std::string gpu_busy_sentence(const Analysis& a);
/// "h2d 926.3 MiB in 22.6 ms (43.01 GB/s); d2h ...", or "" without GPU copy ranges.
std::string gpu_copy_rates(const Analysis& a);

/// How the what-if's prediction is made, for the renderers: "max(data, compute) + rest", or,
/// when the loop waits for DataLoader worker processes, "max(data - worker wait, compute) +
/// worker wait 4.91 ms + rest" (the wait stays on the critical path).
std::string whatif_formula(const Analysis& a);

/// "; other processes kept 47% of them busy while the loop ran" when they took 10 % or more of
/// the CPUs over the analysed iterations (loop_machine_utilization), else "".
std::string other_processes_text(const Analysis& a);
/// A DataLoader worker's profile: what its iterations are, and where the loop's analysis is.
std::string loader_worker_note(const Analysis& a);

/// Why a section is empty and what to do, one sentence each (every renderer prints them).
std::string no_transfers_hint(const Profile& p);
std::string no_kernels_hint(const Profile& p);
std::string no_materializations_hint(const Profile& p);
/// A linked program that kept a gnnprof session of its own under `gnnprof run` (the preload's
/// `linked-core` collector off): the reason, naming its file; "" otherwise.
std::string own_session_note(const Profile& p);

/// What one traced Python line event costs the traced program (bench/python_lines.py, 51-57 ns
/// on the 2-core VM; docs/performance.md): line events × this is a lower bound of a run's
/// tracing cost (a call from a traced line costs more).
inline constexpr std::int64_t kLineEventCostNs = 55;

/// Traced Python line events per complete iteration (the line table's hits over the run).
std::uint64_t line_events_per_iteration(const Profile& p);
/// "" or, when tracing costs 5 % of the median iteration or more (a hot Python loop traced
/// line by line), a sentence saying how much and what it inflates.
std::string tracing_cost_note(const Profile& p);
/// "" or, when gnnprof's own work ran on the loop thread under traced lines, how much, and
/// that the lines' times leave it out.
std::string own_work_note(const Profile& p);

/// Iteration sampling (the zero-code observer watched ops in some iterations only): the
/// iterations of `its` whose ops were observed, when there are such and some were not;
/// otherwise `its` itself. Per-stage figures are taken over these.
std::vector<const IterationStats*> ops_observed(const std::vector<const IterationStats*>& its);

/// Under iteration sampling, one sentence for the sections of what the torch observer records
/// (copies, gathers, kernels' launching op): they count the N of M iterations it observed.
/// "" when every iteration was observed.
std::string sampled_ops_note(const Profile& p, bool gpu_records = false);

/// The diagnostics rules (docs/diagnostics.md): stable ids, severity, message, evidence.
std::vector<Diagnostic> diagnose(const Profile& profile, const Analysis& analysis);

/// A loop's producer processes, from their own profiles (read_producer_profiles): processes of
/// the program's own that hand it batches through a multiprocessing.Queue, whose producer
/// function auto selection traced there.
struct ProducerProcesses {
  std::vector<std::int64_t> pids;  ///< ascending
  /// The traced function with the most own time over them (traced callees apart), and its
  /// heaviest line; empty when none traced anything.
  std::string file, function, code;
  std::int64_t own_ns = 0;
  std::uint32_t line = 0;
  std::int64_t line_ns = 0;
  bool empty() const { return pids.empty(); }
};
/// Over those of `producers` that ran while the loop's complete iterations did (a pool that
/// preprocessed before the loop began is left out).
ProducerProcesses summarize_producer_processes(const Profile& loop, const std::vector<Profile>& producers);

/// producer-bound (docs/diagnostics.md) with the loop's producer processes: where no traced
/// function ran beside the loop in its own process, the processes' producer is named.
std::optional<Diagnostic> producer_bound(const Profile& p, const Analysis& a, const ProducerProcesses& processes);

/// Whether a stage is a DataLoader's scope around a batch it hands out (torch's
/// "enumerate(DataLoader)#<its iterator class>.__next__" record_function).
bool is_loader_scope(std::string_view stage) noexcept;

/// Whether a torch DataLoader's passes ran mostly on threads other than the loop's (a
/// prefetcher's producer, or a thread of the program's own, pulls them).
bool loader_beside_loop(const Profile& p);

/// Whether a loop-thread stage is the wait for a multi-process DataLoader's workers (torch's
/// "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__" scope).
bool is_worker_wait(std::string_view stage) noexcept;

/// Every rule id, in the order diagnose() evaluates them.
const std::vector<std::string>& diagnostic_ids();

}  // namespace gnnprof::reports
