// host_info.cpp — what the profile says about the process and its host: the run (command,
// rank, run id), /proc samples of RSS, CPU time and threads, and the BLAS actually mapped.
#include "host_info.h"

#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string_view>

#include "clock.h"
#include "gnnprof/config.h"
#include "gnnprof/internal/load_counts.h"

namespace gnnprof::detail {
namespace {

/// A small /proc file's text, NUL-terminated, in `buf` with one read(): no stdio buffer to
/// allocate (the drainer's host sample runs on the host's thread in threadless mode). False
/// when it cannot be read.
template <std::size_t N>
bool read_proc(const char* path, char (&buf)[N]) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, buf, N - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  return true;
}

bool is_blas_name(const char* path) {
  const char* slash = std::strrchr(path, '/');
  const std::string_view base(slash == nullptr ? path : slash + 1);
  for (std::string_view prefix : {"libblas.so", "libopenblas", "libmkl_rt", "libblis"})
    if (base.substr(0, prefix.size()) == prefix) return true;
  return false;
}

// When this process began, as CLOCK_REALTIME: /proc/self/stat's starttime (clock ticks since
// boot, CLOCK_BOOTTIME's origin) and the process's age now. 0 when unknown or not more than two
// ticks before now (the resolution: a process whose session began with it).
std::int64_t process_start_unix_ns(std::int64_t now_unix_ns) {
  char buf[1024];
  if (!read_proc("/proc/self/stat", buf)) return 0;
  const char* p = std::strrchr(buf, ')');  // comm may hold spaces and parentheses
  if (p == nullptr) return 0;
  // Fields after comm: state is the 3rd, starttime the 22nd.
  for (int field = 2; field < 22 && p != nullptr; ++field) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return 0;
  const unsigned long long ticks = std::strtoull(p + 1, nullptr, 10);
  const long hz = ::sysconf(_SC_CLK_TCK);
  timespec boot{};
  if (hz <= 0 || ticks == 0 || ::clock_gettime(CLOCK_BOOTTIME, &boot) != 0) return 0;
  const std::int64_t tick = 1000000000LL / hz;
  const std::int64_t age = static_cast<std::int64_t>(boot.tv_sec) * 1000000000LL + boot.tv_nsec - static_cast<std::int64_t>(ticks) * tick;
  return age > 2 * tick ? now_unix_ns - age : 0;
}

}  // namespace

std::optional<std::int64_t> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0') return std::nullopt;
  return x;
}

std::vector<std::string> read_cmdline() {
  std::vector<std::string> out;
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string arg;
  while (std::getline(f, arg, '\0')) out.push_back(arg);
  return out;
}

std::string iso8601_utc(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1000000000LL);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

RunInfo make_run_info() {
  RunInfo r;
  r.command = read_cmdline();
  r.pid = static_cast<std::int64_t>(::getpid());
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) == 0) r.host = host;
  char cwd[4096] = {0};
  if (::getcwd(cwd, sizeof(cwd) - 1) != nullptr) r.cwd = cwd;
  r.start_unix_ns = realtime_ns();
  r.start_time = iso8601_utc(r.start_unix_ns);
  r.process_start_unix_ns = process_start_unix_ns(r.start_unix_ns);
  r.rank = env_int("RANK");
  r.local_rank = env_int("LOCAL_RANK");
  r.world_size = env_int("WORLD_SIZE");
  if (const auto id = config::raw("GNNPROF_RUN_ID")) {
    r.run_id = *id;
  } else if (const char* te = std::getenv("TORCHELASTIC_RUN_ID"); te != nullptr && *te != '\0' &&
             std::strcmp(te, "none") != 0) {
    r.run_id = te;
  }
  return r;
}

namespace {

/// The busy time of the CPUs in this process's affinity mask, all processes' (/proc/stat's
/// per-CPU lines, in clock ticks), in ns; 0 when unknown.
std::int64_t machine_busy_ns() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  static char buf[32768];  // the per-CPU lines come first; the rest may be cut. Callers hold the session's sampling.
  if (!read_proc("/proc/stat", buf)) return 0;
  const long hz = ::sysconf(_SC_CLK_TCK);
  if (hz <= 0) return 0;
  unsigned long long ticks = 0;
  for (const char* line = buf; std::strncmp(line, "cpu", 3) == 0;) {
    int cpu = -1;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (std::sscanf(line, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice, &system, &idle, &iowait, &irq,
                    &softirq, &steal) >= 8 &&
        cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &set))
      ticks += user + nice + system + irq + softirq + steal;
    const char* next = std::strchr(line, '\n');
    if (next == nullptr) break;
    line = next + 1;
  }
  return static_cast<std::int64_t>(ticks * (1000000000ull / static_cast<unsigned long long>(hz)));
}

}  // namespace

/// RSS and its file-backed/shared part (from /proc/self/statm) and CPU time (getrusage) of
/// this process now, and the busy time of the CPUs it may run on.
HostSample host_sample(std::int64_t ts_ns) {
  HostSample h;
  h.ts_ns = ts_ns;
  char buf[128];
  long size = 0, resident = 0, shared = 0;
  if (read_proc("/proc/self/statm", buf) && std::sscanf(buf, "%ld %ld %ld", &size, &resident, &shared) >= 2) {
    h.rss_bytes = resident * ::sysconf(_SC_PAGESIZE);
    h.rss_file_bytes = shared * ::sysconf(_SC_PAGESIZE);
  }
  rusage ru{};
  if (::getrusage(RUSAGE_SELF, &ru) == 0)
    h.cpu_ns = (static_cast<std::int64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 + ru.ru_utime.tv_usec +
                ru.ru_stime.tv_usec) * 1000;
  h.machine_busy_ns = machine_busy_ns();
  return h;
}

std::int64_t private_dirty_bytes() {
  char buf[4096];
  if (!read_proc("/proc/self/smaps_rollup", buf)) return 0;
  const char* p = std::strstr(buf, "\nPrivate_Dirty:");
  long long kb = 0;
  if (p == nullptr || std::sscanf(p + 15, "%lld", &kb) != 1) return 0;
  return static_cast<std::int64_t>(kb) * 1024;
}

/// The process's thread count: field 20 of /proc/self/stat, one read() (the drainer asks at
/// every host sample; /proc/self/status, which also has it, costs several times more to render).
std::int64_t process_threads() {
  char buf[1024];
  if (!read_proc("/proc/self/stat", buf)) return 0;
  // The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  for (int field = 2; field < 20 && p != nullptr; ++field) p = std::strchr(p + 1, ' ');
  return p == nullptr ? 0 : std::atoll(p + 1);
}

/// The BLAS library the process has mapped, with symlinks resolved (Debian's alternatives
/// link libblas.so.3 to the reference BLAS in .../blas/ or to OpenBLAS in .../openblas-*/).
/// Walks the loader's list only when an object was loaded or unloaded since the last call:
/// every flush asks, and the list can hold hundreds of objects. Caller holds drain_mu (the
/// cache's lock). `may_scan` false (a child of _Fork, where another thread of the parent may
/// have held the loader's lock): the last answer, without asking the loader.
std::string loaded_blas(bool may_scan) {
  struct Cache {
    bool have = false;
    LoadCounts counts;
    std::string blas;
  };
  static auto* cache = new Cache();  // leaked on purpose: the exit flush runs after static destructors
  if (!may_scan) return cache->blas;
  const LoadCounts now = load_counts();
  if (cache->have && now.available() && now == cache->counts) return cache->blas;
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0' || !is_blas_name(info->dlpi_name)) return 0;
        *static_cast<std::string*>(data) = info->dlpi_name;
        return 1;
      },
      &found);
  if (char* real = found.empty() ? nullptr : ::realpath(found.c_str(), nullptr)) {
    found = real;
    std::free(real);
  }
  cache->blas = found;
  cache->counts = now;
  cache->have = true;
  return cache->blas;
}

/// The environment facts the diagnostics need: usable CPUs, the BLAS library actually mapped,
/// OMP_NUM_THREADS. Caller holds drain_mu.
EnvironmentInfo environment_info(std::int64_t max_threads, bool may_scan) {
  EnvironmentInfo e;
  cpu_set_t set;
  CPU_ZERO(&set);
  e.cpus = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : ::sysconf(_SC_NPROCESSORS_ONLN);
  e.blas = loaded_blas(may_scan);
  if (const char* v = std::getenv("OMP_NUM_THREADS")) e.omp_num_threads = v;
  e.max_threads = max_threads;
  return e;
}

}  // namespace gnnprof::detail
