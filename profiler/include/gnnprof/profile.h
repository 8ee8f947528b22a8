// gnnprof/profile.h — the profile: what a session measured, aggregated, in plain structs.
//
// A Profile is what the collector produces when it drains, what `gnnprof.profile/1` JSON holds
// (docs/profile-schema.md, field by field), and what every reporter renders. All durations and
// timestamps are integer nanoseconds; timestamps are relative to the session start
// (run.start_monotonic_ns gives the absolute CLOCK_MONOTONIC origin).
//
//   gnnprof::Result<gnnprof::Profile> p = gnnprof::read_profile_file("run.json");
//   for (const auto& s : p->stages) std::cout << s.name << " " << s.total_ns << "\n";
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gnnprof/site.h"

namespace gnnprof {

inline constexpr const char* kProfileSchema = "gnnprof.profile/1";

struct ToolInfo {
  std::string name = "gnnprof";
  std::string version;
};

struct RunInfo {
  std::vector<std::string> command;
  std::int64_t pid = 0;
  std::string host;
  std::string cwd;
  std::string start_time;              ///< ISO 8601 UTC, e.g. 2026-11-21T13:48:46Z
  std::int64_t start_unix_ns = 0;      ///< CLOCK_REALTIME at session start
  std::int64_t start_monotonic_ns = 0; ///< CLOCK_MONOTONIC at session start (the time origin)
  /// CLOCK_REALTIME when the process began (/proc, 10 ms ticks), where that is more than two
  /// ticks before the session's start (a spawned DataLoader worker's session begins after its
  /// imports); 0 otherwise.
  std::int64_t process_start_unix_ns = 0;
  std::optional<std::int64_t> rank, local_rank, world_size;
  /// Names the launch that all ranks of one distributed run share: GNNPROF_RUN_ID (set by
  /// `gnnprof run`), else TORCHELASTIC_RUN_ID unless "none"; "" when unknown.
  std::string run_id;
  /// The process this one works for, when its session began as a worker's (a DataLoader
  /// worker, forked or spawned: gnnprof_start_worker); 0 otherwise.
  std::int64_t parent_pid = 0;
  /// A DataLoader worker's loader: the same for every worker of one DataLoader object, over
  /// all its passes, and different for another loader of the loop (a validation loader's);
  /// "" when unknown. The Python package writes "<dataset class> at <dataset id>, batch_size <n>,
  /// <num_workers> workers" (the report reads the count).
  std::string loader;
  /// A producer process of the program's own (a multiprocessing.Process that makes batches and
  /// hands them over through a multiprocessing.Queue): the process it feeds, the one that
  /// started it. The Python package sets it where auto selection found its producer function;
  /// the loop's report reads such profiles beside its own. 0 otherwise.
  std::int64_t feeds_pid = 0;
  /// How the launched command ended, written in by its launcher (`gnnprof run`, `python3 -m
  /// gnnprof`) once it exited: its exit code, or 128 + the signal that killed it; absent when no
  /// launcher saw it end (a linked or imported session, a worker's profile).
  std::optional<std::int64_t> exit_code;
  std::int64_t exit_signal = 0;  ///< the signal that killed it, or 0
  bool failed() const { return exit_code.value_or(0) != 0; }
};

/// How raw timestamps became nanoseconds (docs/architecture.md, "Clock").
struct ClockInfo {
  std::string source;          ///< "tsc" or "clock_monotonic"
  double ticks_per_ns = 1.0;   ///< measured over calibration_ns
  std::int64_t calibration_ns = 0;
};

/// One data source and whether it ran; `reason` says why not.
struct CollectorInfo {
  std::string name;
  bool enabled = false;
  std::string reason;
};

struct ThreadInfo {
  std::uint32_t index = 0;  ///< stable within the profile; referenced by other sections
  std::int64_t tid = 0;     ///< OS thread id
  std::string name;
  std::uint64_t recorded_events = 0;
  std::uint64_t dropped_events = 0;
};

struct StageThreadStats {
  std::uint32_t thread = 0;
  std::uint64_t hits = 0;
  std::int64_t total_ns = 0;
  std::int64_t self_ns = 0;
};

/// A stage aggregated over all threads and call sites with the same (name, category).
struct StageStats {
  std::string name;
  std::string category;      ///< data | compute | sync | comm | function | user | ...
  std::uint64_t hits = 0;
  std::int64_t total_ns = 0; ///< inclusive
  std::int64_t self_ns = 0;  ///< nested stages excluded
  std::int64_t mean_ns = 0;  ///< per hit
  std::int64_t p50_ns = 0, p90_ns = 0, max_ns = 0;  ///< per hit
  double pct_wall = 0.0;     ///< total_ns / wall_ns * 100 (threads add up; may exceed 100)
  std::vector<StageThreadStats> by_thread;
};

/// A stage nested directly in another (an op in its phase), aggregated: the hierarchy the
/// reports draw (phase -> ops). Every thread; lanes excluded.
struct StageEdge {
  std::string parent, child;
  std::uint64_t hits = 0;
  std::int64_t total_ns = 0, self_ns = 0;  ///< the child's time within that parent
};

/// The stage of gnnprof's own work on the host's thread (threadless mode's drains and
/// periodic flushes): left out of the time of the line it ran under.
inline constexpr const char* kOwnWorkStage = "gnnprof (own work)";
/// A data stage derived from traced Python lines: the training loop's header and the statements
/// above its forward line that bind what it reads, their time in no stage (a numpy sampler).
inline constexpr const char* kBatchPrepStage = "batch prep (Python)";
/// A data stage the Python package records: the loop's thread blocked waiting for the program's
/// own threads or processes (Queue.get, Future.result, Event.wait, multiprocessing Queue.get).
inline constexpr const char* kProducerWaitStage = "producer wait";
/// A data stage the Python tracer records: the training loop's coroutine suspended at an await
/// (the event loop running other tasks, or idle until I/O or a timer); its time off the CPU is
/// the counter "off-CPU ns: await".
inline constexpr const char* kAwaitStage = "await";

/// Iteration `index` spans [begin_ns, begin_ns + wall_ns) between two GNNPROF_STEP marks.

struct IterationStats {
  std::uint64_t index = 0;
  std::int64_t begin_ns = 0;
  std::int64_t wall_ns = 0;
  bool complete = true;  ///< false: still open when the session stopped
  /// false: the torch op observer sampled iterations and did not observe ops in this one
  /// (its stages hold user scopes only); per-stage analysis uses the observed ones.
  bool ops_observed = true;
  std::map<std::string, std::int64_t> stages;         ///< loop thread, inclusive ns by stage
  std::map<std::string, std::int64_t> other_threads;  ///< other threads, inclusive ns by stage
  std::int64_t unattributed_ns = 0;  ///< wall minus top-level stages on the loop thread
  /// Line time begun in this iteration (any thread), by index into Profile::lines.
  std::map<std::uint32_t, std::int64_t> lines;
  /// Stage time by category, a stage nested in one of its own category counted once (the
  /// outer one): on the loop thread, and on the other threads. Empty in profiles written
  /// before they existed (analyses then sum `stages` by category).
  std::map<std::string, std::int64_t> categories, other_categories;
};

/// One statement: a GNNPROF_LINE, or a line of traced Python (line_profiler's semantics: a
/// line's time runs to the next line of its frame, callees included; a statement that spans
/// several lines counts on its first line).
struct LineStats {
  std::string file;
  std::uint32_t line = 0;
  std::string function;
  std::string code;   ///< the statement text (as written in the macro, or Python's source)
  std::string stage;  ///< innermost stage around the line at its first hit, or ""
  std::uint64_t hits = 0;
  std::int64_t total_ns = 0;
  std::int64_t max_ns = 0;
  /// Time of the thread's outermost stages (forward, backward, optimizer, sample, comm wait,
  /// ...) while this line was the innermost traced line, by stage name (traced Python only).
  std::map<std::string, std::int64_t> stages;
  /// Autograd backward time of the graph this line built in forward (the torch observer
  /// links a backward node to its forward op by sequence number).
  std::int64_t backward_ns = 0;
  /// GPU kernel time of work this line launched (CUPTI external correlation).
  std::int64_t gpu_ns = 0;
  /// Hits in iterations whose torch ops were not observed (iteration sampling): the line's
  /// transfers, gathers, waits, backward and GPU time come from the other hits only.
  std::uint64_t unobserved_hits = 0;
  /// The line's time in those iterations (of total_ns): a wait, part of the line's time, is
  /// scaled by time, total_ns / (total_ns - unobserved_ns).
  std::int64_t unobserved_ns = 0;
  /// Times tracing began during this statement in a frame already running (the auto-selected
  /// loop, found at its first optimizer step): that frame's earlier statements ran untraced.
  std::uint64_t began_running = 0;
  /// The first user function (its file and qualified name) that ran under this line without
  /// being traced (traced Python): where `--lines` would look next.
  std::string callee_file, callee_function;
  /// Of total_ns, the time on threads other than the loop's (the one marking iterations): a
  /// prefetcher's or producer's thread, whose data time is hidden, not exposed.
  std::int64_t off_loop_ns = 0;
  /// Of total_ns, the time in traced lines that ran under this one on its thread: of functions
  /// it called, of a generator it resumed (traced Python). total_ns - nested_ns is its own.
  std::int64_t nested_ns = 0;
  /// The traced statement that called this line's function (first seen), by index into the
  /// profile's lines, e.g. a loop's header for its batch generator's lines; -1: none.
  std::int64_t caller = -1;
};

/// Copies grouped by where they happened and how.
struct TransferStats {
  std::string stage;  ///< innermost stage, or ""
  std::string file;   ///< innermost GNNPROF_LINE, or ""
  std::uint32_t line = 0;
  Direction direction = Direction::kH2D;  ///< "h2d" | "d2h" | "d2d" | "h2h" in JSON
  HostMemory memory = HostMemory::kNone;  ///< "pinned" | "pageable" | "none"
  CopyMode mode = CopyMode::kSync;        ///< "sync" | "async"
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::int64_t total_ns = 0;  ///< sum of reported copy durations (0 when not measured)
};

/// GPU kernels (CUPTI) grouped by kernel, launching stage and launching op, heaviest first.
struct KernelStats {
  std::string name;   ///< demangled kernel name
  std::string stage;  ///< stage open on the launching thread, or ""
  std::string op;     ///< torch op that launched it, or ""
  std::uint64_t count = 0;
  std::int64_t total_ns = 0, min_ns = 0, max_ns = 0;  ///< GPU execution time
};

struct MaterializationStats {
  std::string name;   ///< GNNPROF_MATERIALIZE name, or "" for record_materialization()
  std::string stage;
  std::string file;
  std::uint32_t line = 0;
  std::uint64_t hits = 0;
  std::uint64_t rows = 0;
  std::uint64_t bytes = 0;
};

struct CounterStats {
  std::string name;
  std::uint64_t samples = 0;
  double min = 0, max = 0, mean = 0, last = 0;
};

/// Kind of a timeline event. The numeric values are part of the profile format.
enum class TimelineKind : std::uint8_t {
  kStage = 0, kLine = 1, kTransfer = 2, kMaterialize = 3, kCounter = 4, kStep = 5, kStepEnd = 6
};
inline constexpr int kTimelineKinds = 7;
const char* to_string(TimelineKind k) noexcept;

/// One raw event kept for timeline views (Chrome trace); capped by config. Compact (40 bytes):
/// a million of them must fit comfortably in a report's memory.
struct TimelineEvent {
  std::uint32_t thread = 0;
  TimelineKind kind = TimelineKind::kStage;
  std::uint32_t name = 0;  ///< index into Profile::timeline_names
  std::int64_t ts_ns = 0;
  std::int64_t dur_ns = 0;
  double value = 0;  ///< stage: nesting depth; transfer/materialize: bytes; counter: the sample
};

/// What the process ran on, for the environment diagnostics.
struct EnvironmentInfo {
  std::int64_t cpus = 0;            ///< CPUs this process may run on (affinity)
  std::string blas;                 ///< path of the loaded BLAS library, "" if none
  std::string omp_num_threads;      ///< OMP_NUM_THREADS, "" if unset
  std::int64_t max_threads = 0;     ///< most threads the process had at a drain pass
};

/// One sample of the host process, taken by the drainer (at most every 50 ms; downsampled to
/// at most 1024 samples by keeping every other one when full).
struct HostSample {
  std::int64_t ts_ns = 0;
  std::int64_t rss_bytes = 0;
  std::int64_t cpu_ns = 0;  ///< user + system CPU time of the process so far
  /// Of rss_bytes, the file-backed and shared pages (a memory-mapped dataset's page cache:
  /// reclaimable, not a leak); 0 when not known (profiles before it was recorded).
  std::int64_t rss_file_bytes = 0;
  /// Busy CPU time so far of the CPUs the process may run on, every process's (/proc/stat:
  /// user, nice, system, irq, softirq, steal): with cpu_ns, how much other processes took
  /// (another tenant, the run's DataLoader workers). 0 when not known.
  std::int64_t machine_busy_ns = 0;
  /// Private dirty pages (/proc/self/smaps_rollup), read only in a process forked from the
  /// profiled loop (a DataLoader worker): at its start, every 0.5 s or more, and at its stop.
  /// Its growth beyond anonymous RSS's is what turned private of the pages shared at the fork
  /// (copy-on-write: RSS stays, the private part grows). 0 when not read.
  std::int64_t private_dirty_bytes = 0;
};

/// JSON: "info" | "warning" | "error".
enum class Severity : std::uint8_t { kInfo, kWarning, kError };
const char* to_string(Severity s) noexcept;
bool from_string(std::string_view text, Severity& out) noexcept;

struct Diagnostic {
  std::string id;  ///< stable, e.g. "pageable-h2d"
  Severity severity = Severity::kInfo;
  std::string message;
  std::map<std::string, double> evidence;
};

struct Profile {
  std::string schema = kProfileSchema;
  ToolInfo tool;
  RunInfo run;
  ClockInfo clock;
  std::vector<CollectorInfo> collectors;
  std::int64_t wall_ns = 0;
  std::uint32_t main_thread = 0;
  std::int64_t unattributed_ns = 0;  ///< wall minus top-level stages on the main thread
  std::uint64_t recorded_events = 0;
  std::uint64_t dropped_events = 0;
  std::vector<ThreadInfo> threads;
  std::vector<StageStats> stages;
  std::vector<StageEdge> stage_edges;  ///< by parent, then child's total descending
  std::vector<IterationStats> iterations;
  std::uint64_t iterations_dropped = 0;
  std::vector<LineStats> lines;
  std::vector<TransferStats> transfers;
  std::vector<KernelStats> kernels;
  std::vector<MaterializationStats> materializations;
  std::vector<CounterStats> counters;
  std::vector<std::string> timeline_names;  ///< names referenced by TimelineEvent::name
  std::vector<TimelineEvent> timeline;
  std::uint64_t timeline_dropped = 0;
  EnvironmentInfo environment;
  std::vector<HostSample> host_samples;
  std::vector<Diagnostic> diagnostics;
};

}  // namespace gnnprof
