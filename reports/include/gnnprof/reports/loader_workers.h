// gnnprof/reports/loader_workers.h — a loop's DataLoader workers, seen from the loop's report.
//
// Under `gnnprof run` each worker process writes its own profile beside the loop's (its
// run.parent_pid names the loop's process; its iterations are the batches it fetched). The
// loop's report summarizes them: how fast the workers deliver batches, how busy they are, and
// their heaviest lines, so that a loader-bound loop's report shows where the batches' time goes.
//
//   std::vector<Profile> ws = read_loader_worker_profiles("run.json", parent);
//   set_loader_workers(report, summarize_loader_workers(parent, ws));
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gnnprof/profile.h"
#include "gnnprof/reports/loader_fetch.h"

namespace gnnprof::reports {

/// The counter the Python package samples in the loop's process at each DataLoader worker's
/// fork (the iterator's num_workers): loader-bound quotes its value, the summary its samples.
inline constexpr const char* kLoaderWorkersCounter = "DataLoader workers";
/// Sampled beside it: torch's intra-op threads in the loop's process (torch.get_num_threads()),
/// for the rules that weigh compute threads against CPUs.
inline constexpr const char* kTorchThreadsCounter = "torch threads";
/// A worker's counter, per batch it returns (its first 64): the CPU tensor storages in it, the
/// name ending in torch.multiprocessing's sharing strategy in parentheses.
inline constexpr const char* kBatchTensorsCounterPrefix = "tensors per batch (";
/// The Python package's counter sampled at each numpy memmap read it records: the reading
/// thread's major page faults during it (pages read from storage; python/gnnprof/_numpy_hooks.py).
inline constexpr const char* kMemmapFaultsCounter = "memmap major faults";
/// Major page faults per batch (per iteration, in the loop) worth a sentence: a few pages of a
/// batch's rows; fewer are the first touches of a file that is otherwise in memory.
inline constexpr double kMemmapFaultsWorthSaying = 8;

struct WorkerLine {
  std::string file, function, code;
  std::uint32_t line = 0;
  std::uint64_t hits = 0;
  std::int64_t total_ns = 0;  ///< over all workers, callees included
  double share = 0;           ///< of the workers' batch time
  /// More time than the workers' batches took: the line also runs outside them (a worker's start).
  bool beyond_batches() const { return share > 1.0; }
};

struct LoaderWorkers {
  std::vector<std::int64_t> pids;  ///< one per worker profile, ascending
  int concurrent = 0;              ///< most worker processes alive at once
  std::uint64_t batches = 0;       ///< complete iterations over all workers
  /// A worker's pace: median batch time, over the batches whose torch ops were not observed
  /// when the workers sampled (the undisturbed pace), else over all.
  std::int64_t batch_median_ns = 0;
  bool pace_unobserved = false;
  std::int64_t batch_ns = 0;  ///< all batches' time
  std::int64_t wall_ns = 0;   ///< the workers' lifetimes, summed
  std::vector<WorkerLine> top_lines;  ///< heaviest first
  std::set<std::string> functions;    ///< every function the workers traced (qualified names)
  std::size_t not_read = 0;           ///< more worker profiles found than were read (the limit)
  /// Workers the loop started, when the loop's profile counted them (its "DataLoader workers"
  /// counter, sampled as each starts); more than `pids` when GNNPROF_LOADER_WORKERS capped them.
  std::uint64_t started = 0;
  /// Sets of workers alive together, in start order: more than one when the loader starts
  /// them anew (each epoch, without persistent_workers). A set's start is its first worker's,
  /// in ns since the loop's process started; a set begins with a worker that starts after one
  /// of the previous set ended.
  struct Generation {
    std::int64_t start_ns = 0;
    int workers = 0;
    /// When its first batch was fetched (same origin as start_ns), or 0 when none was: the
    /// start-up a persistent set would not pay is this less one batch's time.
    std::int64_t first_batch_ns = 0;
    /// Memory its workers copied from the loop's process (copy-on-write: each one's private
    /// dirty memory's growth beyond its RSS's, from its first reading to its last), summed over
    /// `copy_measured` workers (those whose profile has two readings).
    std::int64_t copied_bytes = 0;
    int copy_measured = 0;
  };
  std::vector<Generation> generations;
  /// The set that copied the most: its index in `generations` (-1: no worker measured).
  int most_copied = -1;
  /// When the workers belong to more than one DataLoader (run.loader: a training loader's and a
  /// validation loader's), the figures above are the loader's whose batches fed the most of the
  /// loop's iterations (then: the most batches), named here; the others' profiles and batches are
  /// counted apart.
  std::string loader;
  std::size_t other_loaders = 0, other_profiles = 0;
  std::uint64_t other_batches = 0;

  /// The CPU tensor storages per batch the workers returned (the Python package counts their
  /// first batches: "tensors per batch (<strategy>)"), mean; 0 when not counted. Each crosses to
  /// the loop on its own: with `sharing` "file_descriptor" (Linux's default), as a descriptor
  /// passed over a socket.
  double tensors_per_batch = 0;
  std::string sharing;  ///< torch.multiprocessing's sharing strategy in the workers

  /// Feature gathers the workers recorded (materializations: torch gathers, numpy memmap
  /// reads), over their batches whose ops were observed (`observed_batches`; every batch
  /// without iteration sampling); the place that gathered the most bytes.
  std::uint64_t gathered_bytes = 0, gathered_rows = 0, observed_batches = 0;
  std::string gather_file;
  std::uint32_t gather_line = 0;
  /// Major page faults during those gathers' numpy memmap reads (kMemmapFaultsCounter), over
  /// the same batches: pages the workers waited for from storage.
  double memmap_faults = 0;
  /// The workers' time off the CPU in their "materialize" stages (the observer's counter "off-CPU
  /// ns: materialize"), over the same batches: waiting, for storage or for a core.
  double materialize_off_cpu_ns = 0;
  /// The workers' item-by-item fetches (python/gnnprof/_loader_fetch.py), most batches first.
  std::vector<ItemFetch> fetches;

  bool empty() const { return pids.empty(); }
  /// Bytes and rows gathered per observed batch (0 when none).
  double gathered_bytes_per_batch() const {
    return observed_batches > 0 ? static_cast<double>(gathered_bytes) / static_cast<double>(observed_batches) : 0;
  }
  double gathered_rows_per_batch() const {
    return observed_batches > 0 ? static_cast<double>(gathered_rows) / static_cast<double>(observed_batches) : 0;
  }
  /// Where the most bytes were gathered, "file.py:LINE" (base name), or "" when not known.
  std::string most_gathered_at() const;
  double memmap_faults_per_batch() const {
    return observed_batches > 0 ? memmap_faults / static_cast<double>(observed_batches) : 0;
  }
  double materialize_off_cpu_per_batch_ns() const {
    return observed_batches > 0 ? materialize_off_cpu_ns / static_cast<double>(observed_batches) : 0;
  }
  /// With `concurrent` workers at this pace: a batch every this long (0 when unknown).
  std::int64_t supply_interval_ns() const { return concurrent > 0 ? batch_median_ns / concurrent : 0; }
  double busy_share() const { return wall_ns > 0 ? static_cast<double>(batch_ns) / static_cast<double>(wall_ns) : 0; }
};

/// The profiles in `parent_path`'s directory written by `parent`'s DataLoader workers
/// (run.parent_pid = parent's pid, same host and run id, started while it ran), by pid: at
/// most `limit` of them, in directory order; `*more` (when given) counts the files naming the
/// parent that were not read. Files that cannot be read are left out.
std::vector<Profile> read_loader_worker_profiles(const std::string& parent_path, const Profile& parent,
                                                 std::size_t limit = 64, std::size_t* more = nullptr);

/// The same for the profiles of `parent`'s producer processes (run.feeds_pid = parent's pid):
/// processes of the program's own that hand it batches through a multiprocessing.Queue.
std::vector<Profile> read_producer_profiles(const std::string& parent_path, const Profile& parent,
                                            std::size_t limit = 16);

/// The summary of `parent`'s `workers` (the profiles above); `top` lines at most.
LoaderWorkers summarize_loader_workers(const Profile& parent, const std::vector<Profile>& workers, std::size_t top = 5);

/// One paragraph: how many workers, their pace and busy share, what they deliver together.
std::string loader_workers_text(const LoaderWorkers& w);
/// A worker line's share of the workers' batch time ("12.3%"), or ">100%" for a line that also
/// runs outside their batches (a worker_init_fn, a Dataset's set-up in the worker).
std::string worker_line_share(const WorkerLine& l);
/// For a loop whose own process gathered nothing: what its workers gathered, or "".
std::string workers_gathered_note(const LoaderWorkers& w);
/// The note for the lines worker_line_share shows as ">100%", or "" when none is.
std::string worker_lines_note(const LoaderWorkers& w);

}  // namespace gnnprof::reports
