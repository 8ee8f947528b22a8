#include "gnnprof/reports/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

Report make_report(const Profile& profile, const ReportOptions& options) {
  Report r;
  r.profile = &profile;
  r.options = options;
  r.analysis = analyze(profile, AnalysisOptions{options.skip});
  r.diagnostics = diagnose(profile, r.analysis);
  r.hierarchy = build_hierarchy(profile, r.analysis, options.top_ops);
  return r;
}

namespace {

// loader-restarts: the workers start anew each epoch; the iterations they started in.
void restart_diagnostic(Report& r) {
  const LoaderWorkers& w = r.workers;
  const Analysis& a = r.analysis;
  const Profile& p = *r.profile;
  const std::int64_t med = a.run_iteration_median_ns;
  if (w.generations.size() < 2 || med <= 0 || a.loader_worker) return;
  // The analysed iterations (their time as slow-iterations counts it), and the one each set
  // started in (or the first after it, when it started between two); one set per iteration (a
  // validation loader's set beside the next epoch's counts once).
  const std::vector<const IterationStats*> analysed = analysed_iterations(p, a);
  std::int64_t loop_ns = 0;
  for (const IterationStats* it : analysed) loop_ns += it->wall_ns;
  std::vector<const IterationStats*> at;
  for (const auto& g : w.generations) {
    const IterationStats* found = nullptr;
    for (const IterationStats* it : analysed)
      if (it->begin_ns + it->wall_ns > g.start_ns) {
        found = it;
        break;
      }
    at.push_back(found);
  }
  std::int64_t excess = 0;
  std::string which;
  std::size_t restarts = 0;
  for (std::size_t g = 1; g < at.size(); ++g) {
    if (at[g] == nullptr || std::find(at.begin(), at.begin() + static_cast<std::ptrdiff_t>(g), at[g]) != at.begin() + static_cast<std::ptrdiff_t>(g))
      continue;
    ++restarts;
    // The iteration's time beyond the median, at most the set's start-up: from its start to its
    // first batch, less a batch's fetch (a validation pass in the same iteration is not theirs).
    std::int64_t over = std::max<std::int64_t>(0, at[g]->wall_ns - med);
    const LoaderWorkers::Generation& gen = w.generations[g];
    if (gen.first_batch_ns > gen.start_ns)
      over = std::min(over, std::max<std::int64_t>(0, gen.first_batch_ns - gen.start_ns - w.batch_median_ns));
    excess += over;
    if (restarts <= 4) which += fmt::format("{}{} ({})", restarts == 1 ? "" : ", ", at[g]->index, human_ns(at[g]->wall_ns));
  }
  if (restarts == 0 || loop_ns <= 0 || 20 * excess < loop_ns) return;
  const int per = w.generations.front().workers;
  // GNNPROF_LOADER_WORKERS caps the profiled workers: the loop's counter counts every start.
  // (the counter counts other loaders' starts too: then the sets seen)
  const std::uint64_t starts = w.other_loaders > 0 ? w.generations.size()
                                                   : std::max<std::uint64_t>(w.generations.size(), per > 0 ? w.started / static_cast<std::uint64_t>(per) : 0);
  r.diagnostics.push_back(Diagnostic{
      "loader-restarts", Severity::kWarning,
      fmt::format("the DataLoader{} starts its {} worker process{} anew at each pass over it ({} starts; persistent_workers "
                  "is off): in the iteration{} the restarted workers began in, {}, their start-up until the first batch took {} "
                  "beyond the median iteration ({}), {:.0f}% of the analysed loop's time; DataLoader(..., "
                  "persistent_workers=True) starts them once and keeps them between epochs.",
                  w.loader.empty() ? "" : " (" + w.loader + ")", per, per == 1 ? "" : "es", starts, restarts == 1 ? "" : "s",
                  which + (restarts > 4 ? ", ..." : ""),
                  human_ns(excess), human_ns(med), 100.0 * static_cast<double>(excess) / static_cast<double>(loop_ns)),
      {{"starts", static_cast<double>(starts)},
       {"workers", static_cast<double>(per)},
       {"restart_excess_ns", static_cast<double>(excess)},
       {"restart_share", static_cast<double>(excess) / static_cast<double>(loop_ns)},
       {"iteration_ns", static_cast<double>(med)}}});
  for (Diagnostic& d : r.diagnostics)
    if (d.id == "slow-iterations" && d.evidence.count("excess_ns") && 2 * static_cast<double>(excess) >= d.evidence.at("excess_ns"))
      d.message += " The DataLoader's worker restarts account for most of them: see loader-restarts.";
}

// loader-contention: the loop's compute threads and its busy workers want more CPUs than there are.
void contention_diagnostic(Report& r) {
  const LoaderWorkers& w = r.workers;
  const Profile& p = *r.profile;
  const long long cpus = p.environment.cpus;
  if (w.empty() || w.concurrent < 1 || cpus <= 0 || r.analysis.loader_worker) return;
  // The loop's compute threads: torch's own count (the Python package samples it at each
  // set_num_threads and as workers start: its last), else OMP_NUM_THREADS; unknown
  // (torch's default is the physical cores, which the profile does not have): no verdict.
  long long compute = 0;
  for (const auto& c : p.counters)
    if (c.name == kTorchThreadsCounter) compute = static_cast<long long>(c.last);
  const std::string& omp = p.environment.omp_num_threads;
  if (compute <= 0 && !omp.empty() && omp.find_first_not_of("0123456789") == std::string::npos) compute = std::atoll(omp.c_str());
  if (compute <= 0) return;
  const double used = w.busy_share() * w.concurrent;  // CPUs the workers keep busy, on average
  if (used < 0.25 || static_cast<double>(compute) + used <= static_cast<double>(cpus) + 0.25) return;
  const long long left = std::max(1LL, cpus - static_cast<long long>(std::ceil(used - 0.25)));
  const bool bound = std::any_of(r.diagnostics.begin(), r.diagnostics.end(), [](const Diagnostic& d) { return d.id == "loader-bound"; });
  std::string advice = fmt::format("torch.set_num_threads({}) in the loop (or OMP_NUM_THREADS={}) leaves the workers their cores{}",
                                   left, left, bound ? " (the loop waits for them: loader-bound; more workers would share the "
                                                       "same CPUs)" : ", or use fewer workers");
  if (left >= compute) advice = bound ? "The loop waits for them (loader-bound) on CPUs already full: cheaper per-sample work helps, more workers do not"
                                      : "Fewer workers leave compute its cores";
  const std::string check = left < compute ? fmt::format("; check it with gnnprof ab --baseline 'python3 train.py' --candidate "
                                                         "'OMP_NUM_THREADS={} python3 train.py'",
                                                         left)
                                           : std::string();
  r.diagnostics.push_back(Diagnostic{
      "loader-contention", Severity::kWarning,
      fmt::format("the loop's {} compute thread{} and its {} DataLoader worker process{} (busy {:.0f}% of their time: {:.1f} "
                  "CPUs on average) share {}: while the workers run, compute's threads wait for cores (a parallel op runs "
                  "at the pace of its slowest thread). {}{}.",
                  compute, compute == 1 ? "" : "s", w.concurrent, w.concurrent == 1 ? "" : "es", 100 * w.busy_share(), used,
                  cpus_text(cpus), advice, check),
      {{"compute_threads", static_cast<double>(compute)},
       {"workers", static_cast<double>(w.concurrent)},
       {"worker_cpus", used},
       {"cpus", static_cast<double>(cpus)}}});
}

// loader-copy-on-write: the workers copied the loop process's pages by writing them (Python
// reference counts of a dataset's per-sample objects), one copy per worker.
void copy_on_write_diagnostic(Report& r) {
  const LoaderWorkers& w = r.workers;
  if (w.most_copied < 0 || r.analysis.loader_worker) return;
  // Together, and each: any forked worker's interpreter copies a few MiB of the loop's objects
  // as it runs, whatever its dataset holds, and many workers add that up.
  constexpr std::int64_t kMinCopied = 64LL << 20, kMinEach = 16LL << 20;
  const LoaderWorkers::Generation& g = w.generations[static_cast<std::size_t>(w.most_copied)];
  const std::int64_t each = g.copied_bytes / g.copy_measured;
  if (g.copied_bytes < kMinCopied || each < kMinEach) return;
  const std::int64_t loop_rss = r.profile->host_samples.empty() ? 0 : r.profile->host_samples.back().rss_bytes;
  r.diagnostics.push_back(Diagnostic{
      "loader-copy-on-write", Severity::kWarning,
      fmt::format("the DataLoader's worker processes{} copied {} of the loop process's memory{} while they fetched: "
                  "{} worker{}, {} each{} (their private memory grew beyond their RSS: pages shared with the loop's "
                  "process since the fork, copied when one of the two wrote them). Reading a Python object writes its "
                  "reference count, and the garbage collector writes to the containers it visits: a dataset that keeps "
                  "its samples as Python lists, dicts, numbers or strings has every page it reads copied into every "
                  "worker, memory that grows as the workers read on{}. Keep per-sample data in numpy arrays or tensors "
                  "(one object each: reading an element writes nothing), e.g. np.asarray(values) in the Dataset's "
                  "__init__; gc.freeze() before the loader starts its workers keeps the collector off the objects made "
                  "until then.",
                  w.loader.empty() ? "" : " (" + w.loader + ")", human_bytes(static_cast<std::uint64_t>(g.copied_bytes)),
                  loop_rss > 0 ? fmt::format(" (RSS {})", human_bytes(static_cast<std::uint64_t>(loop_rss))) : "",
                  g.copy_measured, g.copy_measured == 1 ? "" : "s", human_bytes(static_cast<std::uint64_t>(each)),
                  w.generations.size() > 1 ? fmt::format(", in the one of {} passes whose workers copied the most", w.generations.size())
                                           : "",
                  w.generations.size() > 1 ? ", and each pass's new workers copy it anew" : ""),
      {{"copied_bytes", static_cast<double>(g.copied_bytes)},
       {"copied_per_worker_bytes", static_cast<double>(each)},
       {"workers", static_cast<double>(g.copy_measured)},
       {"loop_rss_bytes", static_cast<double>(loop_rss)}}});
}


}  // namespace

void set_producer_processes(Report& r, ProducerProcesses processes) {
  r.producers = std::move(processes);
  if (r.producers.empty()) return;
  for (Diagnostic& d : r.diagnostics)
    if (d.id == "producer-bound")
      if (auto again = producer_bound(*r.profile, r.analysis, r.producers)) d = std::move(*again);
}

void set_loader_workers(Report& r, LoaderWorkers workers) {
  r.workers = std::move(workers);
  restart_diagnostic(r);
  contention_diagnostic(r);
  copy_on_write_diagnostic(r);
  const LoaderWorkers& w = r.workers;
  const Analysis& a = r.analysis;
  const std::int64_t supply = w.supply_interval_ns() > 0 ? w.supply_interval_ns() : w.batch_median_ns;
  if (w.empty() || w.batches == 0 || supply <= 0) return;
  // The workers cannot keep up: together a batch every more than half an iteration, or busy.
  const bool behind = 2 * supply > a.iteration_median_ns || w.busy_share() > 0.6;
  // A thread of the program's own pulls the DataLoader and the loop waits for that thread: the
  // workers behind it are what cannot keep up.
  if (behind && loader_beside_loop(*r.profile))
    for (Diagnostic& d : r.diagnostics)
      if (d.id == "producer-bound") {
        d.message += fmt::format(
            " Its {} worker process{} cannot keep up: together a batch every {} against an iteration of {}, busy {:.0f}% "
            "of their time (this machine has {}); the DataLoader workers section below has their pace and heaviest lines.",
            w.concurrent, w.concurrent == 1 ? "" : "es", human_ns(supply), human_ns(a.iteration_median_ns),
            100 * w.busy_share(), cpus_text(r.profile->environment.cpus));
        d.evidence["worker_supply_ns"] = static_cast<double>(supply);
        d.evidence["worker_busy_share"] = w.busy_share();
      }
  if (behind) {
    // Workers that cannot keep up, fetching each batch item by item: most of a batch can be the
    // calls and the stacking, which one dataset[indices] a batch removes.
    if (!w.fetches.empty() && w.batch_median_ns > 0) {
      const ItemFetch& f = w.fetches.front();
      const double share = f.removable_ns() / static_cast<double>(w.batch_median_ns);
      if (f.items >= 16 && share >= 0.2 && (f.takes_indices || f.per_item_ns() <= kCheapItemNs))
        for (Diagnostic& d : r.diagnostics)
          if (d.id == "loader-bound") {
            d.message += fmt::format(" Each worker fetches its batches item by item: {}, {:.0f}% of a worker's {} batch. {}",
                                     describe_fetch(f), 100 * std::min(share, 1.0), human_ns(w.batch_median_ns),
                                     batch_in_one_call(f));
            d.evidence["item_fetch_share"] = share;
          }
    }
    // Workers that cannot keep up, reading features from a memory-mapped file that is not in
    // memory: a worker waiting on storage holds no core, so more workers than cores still help.
    if (w.memmap_faults_per_batch() < kMemmapFaultsWorthSaying) return;
    for (Diagnostic& d : r.diagnostics) {
      if (d.id != "loader-bound") continue;
      d.message += fmt::format(
          " Their numpy memmap reads wait on storage: {:.0f} major page faults a batch (pages not in memory, read from "
          "disk{}){}. A worker waiting on the disk holds no core, so more workers overlap more of those reads even beyond "
          "the cores; features that fit in memory read faster loaded (np.load without mmap_mode, or a copy to RAM at "
          "start), else from faster storage.",
          w.memmap_faults_per_batch(),
          w.most_gathered_at().empty() ? std::string() : ", most gathered at " + w.most_gathered_at(),
          w.materialize_off_cpu_ns > 0
              ? fmt::format(", their gathers {} a batch off the CPU of a worker's {}",
                            human_ns(std::llround(w.materialize_off_cpu_per_batch_ns())), human_ns(w.batch_median_ns))
              : "");
      d.evidence["memmap_faults_per_batch"] = w.memmap_faults_per_batch();
    }
    return;
  }
  // Each tensor storage a batch holds crosses on its own; with file descriptors (Linux's default
  // strategy) a socket round trip to the worker each: a cost per tensor besides its bytes.
  const bool per_tensor = w.sharing == "file_descriptor" && w.tensors_per_batch >= 2;
  constexpr double kFewTensors = 4;  // bench/loader_sharing.py: file_system pays from about 4 tensors a batch
  for (Diagnostic& d : r.diagnostics) {
    if (d.id != "loader-bound") continue;
    const std::string why =
        per_tensor
            ? fmt::format("the wait is the loop receiving each batch from them: its {:.0f} tensors cross one by one, each "
                          "as a shared-memory file descriptor passed over a socket to the worker (torch.multiprocessing's "
                          "sharing strategy file_descriptor, Linux's default), about {} of the wait per tensor here. "
                          "{}all torch.multiprocessing.set_sharing_strategy(\"file_system\") before the DataLoader starts "
                          "(no descriptor per tensor; its shared memory files can outlive a killed process); the DataLoader "
                          "workers section below has their pace and heaviest lines.",
                          w.tensors_per_batch,
                          human_ns(static_cast<std::int64_t>(static_cast<double>(a.worker_wait_ns) / w.tensors_per_batch)),
                          // A batch of a few tensors (features and labels) has little to concatenate.
                          w.tensors_per_batch >= kFewTensors
                              ? "Return fewer, larger tensors from collate_fn (one per kind of field, concatenated, with "
                                "offsets), or c"
                              : "C")
            : fmt::format("the wait is the loop receiving each batch from them (unpickling what collate_fn returns: many "
                          "small tensors or Python objects cost more than a few large tensors) or the workers short of CPU "
                          "({}, shared with the loop's compute); the DataLoader workers section below has their pace and "
                          "heaviest lines.",
                          cpus_text(r.profile->environment.cpus));
    d.message = fmt::format(
        "the loop waits {:.0f}% of each iteration ({} of {}) at its DataLoader's __next__ receiving batches its worker "
        "processes have ready (they keep up: together a batch every {} against an iteration of {}, busy {:.0f}% of their "
        "time). More workers will not help: {}",
        100 * static_cast<double>(a.worker_wait_ns) / static_cast<double>(a.iteration_median_ns), human_ns(a.worker_wait_ns),
        human_ns(a.iteration_median_ns), human_ns(supply), human_ns(a.iteration_median_ns), 100 * w.busy_share(), why);
    d.evidence["worker_supply_ns"] = static_cast<double>(supply);
    d.evidence["worker_busy_share"] = w.busy_share();
    if (w.tensors_per_batch > 0) d.evidence["tensors_per_batch"] = w.tensors_per_batch;
  }
}

}  // namespace gnnprof::reports
