// host_info.h — facts about the process and its host for the profile (RunInfo, HostSample,
// EnvironmentInfo), read from the environment, /proc and the dynamic loader.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gnnprof/profile.h"
#include "gnnprof/session.h"

namespace gnnprof::detail {

/// An integer environment variable (RANK, LOCAL_RANK, WORLD_SIZE); none when unset or not a number.
std::optional<std::int64_t> env_int(const char* name);
std::vector<std::string> read_cmdline();
std::string iso8601_utc(std::int64_t unix_ns);
/// The run: command line, pid, host, cwd, start time, rank, world size, run id.
RunInfo make_run_info();
/// RSS (from /proc/self/statm) and CPU time (getrusage) of this process now. Allocates nothing.
HostSample host_sample(std::int64_t ts_ns);
/// This process's private dirty memory (/proc/self/smaps_rollup's Private_Dirty), 0 when
/// unknown. Walks the page tables: milliseconds for a process of some hundred MiB.
std::int64_t private_dirty_bytes();
/// The process's thread count (/proc/self/stat), 0 when unknown.
std::int64_t process_threads();
/// The BLAS library mapped, symlinks resolved. Caller holds the session's drain lock (the
/// cache's). `may_scan` false (a fork child): the last answer, without asking the loader.
std::string loaded_blas(bool may_scan);
/// Usable CPUs, the BLAS mapped, OMP_NUM_THREADS. Caller holds the drain lock.
EnvironmentInfo environment_info(std::int64_t max_threads, bool may_scan);
/// cfg.output (default gnnprof-%p.json) with %p the pid, %r the rank, %R "rank<N>." when set.
/// `rank`: the process's rank when known beyond the environment (gnnprof_set_rank) for %R/%r.
std::string output_path_for(const Config& cfg, pid_t pid, std::optional<std::int64_t> rank = std::nullopt);

}  // namespace gnnprof::detail
