// gnnprof/session.h — start, stop and configure a profiling session.
//
// A session starts explicitly with start(), or lazily on the first instrumented event with the
// configuration from the environment. It drains per-thread buffers on a background thread and
// writes the profile at stop() or at process exit.
//
//   gnnprof::Config cfg = gnnprof::Config::from_env();
//   cfg.output = "train.gnnprof.json";
//   gnnprof::start(cfg);
//   ... instrumented loop ...
//   gnnprof::stop();   // drains and writes train.gnnprof.json
//
// Environment (each overrides the default; see docs/architecture.md):
//   GNNPROF_ENABLED=0|1        0: record nothing, write nothing
//   GNNPROF_OUTPUT=path        profile file; default gnnprof-<pid>.json in the working directory.
//                              %p: pid; %r: RANK or 0; %R: "rank<N>." when RANK/LOCAL_RANK is set
//   GNNPROF_BUFFER_EVENTS=N    per-thread ring capacity in events (rounded up to a power of 2)
//   GNNPROF_MAX_THREADS=N      threads with a buffer; events of further threads are dropped
//   GNNPROF_TIMELINE_EVENTS=N  raw events kept for timeline views
//   GNNPROF_QUIET=1            no "profile written" line on stderr (warnings still print)
//   GNNPROF_FLUSH_INTERVAL_MS=N  also write the profile so far every N ms (0: only at stop)
//   GNNPROF_DRAIN_INTERVAL_MS=N  the drainer's period while rings are under a quarter full (10)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "gnnprof/profile.h"
#include "gnnprof/result.h"

namespace gnnprof {

struct Config {
  bool enabled = true;
  std::string output;  ///< "" means gnnprof-<pid>.json
  /// Events per thread ring: 4096 x 48 B = 192 KiB, small enough to stay in L2 next to the
  /// program's data (a 768 KiB ring measured ~10 ns more per event on a 5 us loop body,
  /// docs/performance.md). The drainer empties rings every drain_interval_ms, and every 1 ms
  /// while any ring is over a quarter full, so a thread may record ~3 M events/s without
  /// dropping any.
  std::size_t buffer_events = 4096;
  /// Threads that get a ring. Cap on ring memory: max_threads x buffer_events x 48 B
  /// (256 x 192 KiB = 48 MiB worst case; typical loops use 2-8 threads).
  std::size_t max_threads = 256;
  /// Drainer period when rings are less than a quarter full.
  std::uint32_t drain_interval_ms = 10;
  std::size_t timeline_events = 50000;
  /// Iterations kept with their per-stage times (~300 B each: 200k = ~60 MB at most); later
  /// ones still count in every total and are counted in iterations_dropped.
  std::size_t max_iterations = 200000;
  bool drainer_thread = true;   ///< false: drain only in snapshot()/stop() (tests)
  bool write_at_stop = true;    ///< false: stop() writes nothing (tests, in-process use)
  bool flush_at_exit = true;    ///< register an atexit flush
  bool quiet = false;
  /// > 0: also write the profile so far every flush_interval_ms (temp file + rename), so that
  /// a process killed with SIGKILL leaves what was flushed. The preload library uses 1000.
  /// The drainer's flush that took c of CPU waits at least 500 c for the next (at most 0.2 %
  /// of a core). A periodic flush skips the fsync (FileSync::kRenameOnly); the last one at
  /// stop() does not.
  std::uint32_t flush_interval_ms = 0;
  /// false: a session that recorded no event writes no file (the preload library's helper
  /// processes under `gnnprof run`: shells, compilers, ...).
  bool write_empty = true;

  /// Defaults overridden by the GNNPROF_* environment variables above.
  static Config from_env();
};

/// Starts a session. No-op (ok) when one is running; ok and inactive when cfg.enabled is false.
Status start(const Config& cfg = Config::from_env());

/// Stops the session: drains every buffer, builds the profile and writes it (if configured).
/// Ok when no session runs. On a write error the message is also printed once on stderr.
Status stop();

/// Drains now and returns the profile so far; the session keeps running.
Result<Profile> snapshot();

bool is_running() noexcept;

/// Names the calling thread in the profile (copied; at most 31 bytes are kept).
void set_thread_name(const char* name) noexcept;

/// The output path a session with this config writes to.
std::string resolved_output_path(const Config& cfg);

}  // namespace gnnprof
