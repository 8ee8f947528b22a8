// preload.cpp — libgnnprof_preload.so: zero-code attach through LD_PRELOAD.
//
// At load (a constructor, before main): start a session whose profile goes to
// GNNPROF_OUTPUT (default gnnprof-[rankN.]<pid>.json), flushed every second and at exit;
// install a SIGTERM (and, outside Python, SIGINT) handler that flushes and then lets the
// signal kill the process as it would have. Then, in one of two modes (docs/zero-code.md,
// "Threads"):
//  - threads (any other host): one "gnnprof-attach" thread watches for libtorch and the CUDA
//    runtime being loaded and then dlopens the torch observer (libgnnprof_torch_observer.so) or
//    the CUPTI backend (libgnnprof_cupti.so) next to this library; the core's drainer drains.
//  - threadless (the default while a Python host is single-threaded; GNNPROF_THREADLESS=0 turns it
//    off): no thread. The dlsym trampoline at the end of this file does the watching when Python
//    resolves an extension module's PyInit_, the loop thread drains and flushes at the observer's
//    iteration marks (and its other polls, NVTX calls among them), SIGTERM flushes from a
//    _Fork()ed child, and the host's first thread of its own switches to the threads mode.
// The plugins reach the session only through the C ABI exported here.
//
// Never harm the host: nothing throws out of here, every wait is bounded, gnnprof's threads
// block all signals, a forked child records nothing (the core's atfork handler), and every
// missing piece is one line on stderr plus a "collectors" entry in the profile.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define GNNPROF_HAVE_SINGLE_THREADED 1
#endif

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>

#include "gnnprof/internal/load_counts.h"
#include "gnnprof/config.h"
#include "gnnprof/gnnprof_c.h"
#include "gnnprof/session.h"
#include "plugin_abi.h"
#include "preload_poll.h"

#ifndef GNNPROF_TORCH_CPU_REALPATH
#define GNNPROF_TORCH_CPU_REALPATH ""
#endif
#ifndef GNNPROF_TORCH_VERSION
#define GNNPROF_TORCH_VERSION ""
#endif

namespace {

int g_pipe[2] = {-1, -1};
std::atomic<bool> g_attach_running{false};
// Threadless mode (docs/zero-code.md, "Threads"): while a Python host is single-threaded no
// gnnprof thread runs. The first thread makes glibc's malloc take its arena lock on every call
// for the rest of the process (docs/performance.md), a cost the host would pay for gnnprof
// alone. Detection then happens in the dlsym hook below, draining and flushing on the loop
// thread at the torch observer's iteration marks, the SIGTERM flush in a forked child; the
// first thread the host starts itself switches to the drainer and attach threads.
std::atomic<bool> g_threadless{false};
pid_t g_owner_pid = 0;
std::mutex g_attach_mu;  // one scan-and-attach at a time (the hook only try_locks it)
bool g_torch_done = false, g_cuda_done = false;  // under g_attach_mu
// GNNPROF_CUPTI=1: the attach thread starts it. 0 nothing to do, 1 waiting for the attach
// thread, 2 the attach thread is trying, 3 tried.
enum CuptiTry { kCuptiNone, kCuptiWaiting, kCuptiTrying, kCuptiTried };
std::atomic<int> g_force_cupti{kCuptiNone};

#if defined(__x86_64__) && defined(__linux__)
constexpr bool kHaveDlsymHook = true;
#else
constexpr bool kHaveDlsymHook = false;
#endif
std::atomic<void*> g_real_dlsym{nullptr};

std::atomic<int> g_signal_flushed{0};
std::atomic<bool> g_in_signal{false};
bool g_active = false;

// The plugins' entry points, typed by their declarations in plugin_abi.h.
using TorchObserve = decltype(&gnnprof_torch_observe);
using TorchCloseThread = decltype(&gnnprof_torch_close_thread);
using TorchSetCorrelation = decltype(&gnnprof_torch_set_correlation);
using TorchSetPoll = decltype(&gnnprof_torch_set_poll);
using CuptiStart = decltype(&gnnprof_cupti_start);
using CuptiFlush = decltype(&gnnprof_cupti_flush);
using CuptiCorrPush = decltype(&gnnprof_cupti_push_external);
using CuptiCorrPop = decltype(&gnnprof_cupti_pop_external);

std::atomic<TorchCloseThread> g_torch_close{nullptr};
TorchSetCorrelation g_torch_set_corr = nullptr;
std::atomic<CuptiFlush> g_cupti_flush{nullptr};
CuptiCorrPush g_cupti_push = nullptr;
CuptiCorrPop g_cupti_pop = nullptr;

std::string self_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&self_dir), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string p = info.dli_fname;
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

std::string self_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&self_path), &info) == 0 || info.dli_fname == nullptr) return "";
  char real[PATH_MAX];
  return realpath(info.dli_fname, real) != nullptr ? std::string(real) : std::string(info.dli_fname);
}

/// One line on stderr (a warning: GNNPROF_QUIET does not silence it) and the collector entry.
void note(const char* collector, bool enabled, const std::string& reason, bool say) {
  gnnprof_note_collector(collector, enabled ? 1 : 0, reason.c_str());
  if (say) std::fprintf(stderr, "gnnprof: %s: %s\n", collector, reason.c_str());
}

struct Loaded {
  std::string torch_cpu;  // path of the mapped libtorch_cpu.so, "" if none
  bool cuda = false;      // libcudart or libcuda mapped
};

int scan_object(dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<Loaded*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  const char* base = std::strrchr(info->dlpi_name, '/');
  base = base != nullptr ? base + 1 : info->dlpi_name;
  if (std::strncmp(base, "libtorch_cpu.so", 15) == 0) out->torch_cpu = info->dlpi_name;
  if (std::strncmp(base, "libcudart.so", 12) == 0 || std::strncmp(base, "libcuda.so", 10) == 0) out->cuda = true;
  return 0;
}

/// The dynamic linker's load and unload counters (the same in every dl_phdr_info): a change
/// means an object came or went since the last look.

/// dlopens a plugin next to this library; on failure notes the collector off with dlerror().
void* open_plugin(const char* file, const char* collector) {
  const std::string lib = self_dir() + "/" + file;
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* err = dlerror();
    note(collector, false, std::string("cannot load ") + file + ": " + (err != nullptr ? err : lib), true);
  }
  return h;
}

void wire_correlation() {
  if (g_torch_set_corr != nullptr && g_cupti_push != nullptr && g_cupti_pop != nullptr)
    g_torch_set_corr(g_cupti_push, g_cupti_pop);
}

void try_torch(const std::string& loaded) {
  std::string built = GNNPROF_TORCH_CPU_REALPATH;
  // Test hook: pretend gnnprof was built against another torch (tests/app/zero_code_test.sh).
  if (const auto v = gnnprof::config::raw("GNNPROF_TORCH_BUILT_PATH"); v && !built.empty()) built = *v;
  if (built.empty()) {
    note("torch-ops", false, "gnnprof was built without libtorch; torch ops are not observed", true);
    return;
  }
  char real[PATH_MAX];
  const std::string loaded_real = realpath(loaded.c_str(), real) != nullptr ? std::string(real) : loaded;
  if (loaded_real != built) {
    note("torch-ops", false,
         "the process loaded " + loaded_real + ", but gnnprof's observer was built against torch " +
             GNNPROF_TORCH_VERSION + " (" + built +
             "); op observer disabled (rebuild gnnprof against this torch, or use /usr/bin/python3)",
         true);
    return;
  }
  void* h = open_plugin("libgnnprof_torch_observer.so", "torch-ops");
  if (h == nullptr) return;
  auto observe = reinterpret_cast<TorchObserve>(dlsym(h, "gnnprof_torch_observe"));
  g_torch_set_corr = reinterpret_cast<TorchSetCorrelation>(dlsym(h, "gnnprof_torch_set_correlation"));
  auto close = reinterpret_cast<TorchCloseThread>(dlsym(h, "gnnprof_torch_close_thread"));
  if (observe == nullptr) {
    note("torch-ops", false, "the torch observer library lacks gnnprof_torch_observe", true);
    return;
  }
  const bool op_stages = gnnprof::config::get_bool("GNNPROF_TORCH_OPS");
  const unsigned long long min_bytes = gnnprof::config::get_count("GNNPROF_GATHER_MIN_BYTES");
  char reason[256] = {0};
  if (observe(op_stages ? GNNPROF_TORCH_OP_STAGES : 0, min_bytes, reason, sizeof(reason)) != 0) {
    note("torch-ops", false, reason, true);
    return;
  }
  g_torch_close.store(close);
  if (auto set_poll = reinterpret_cast<TorchSetPoll>(dlsym(h, "gnnprof_torch_set_poll"))) set_poll(gnnprof::instrument::preload_poll);
  note("torch-ops", true, std::string("torch ") + GNNPROF_TORCH_VERSION + " at " + loaded_real, false);
  wire_correlation();
}

void try_cupti(const char* why) {
  void* h = open_plugin("libgnnprof_cupti.so", "cupti");
  if (h == nullptr) return;
  auto start = reinterpret_cast<CuptiStart>(dlsym(h, "gnnprof_cupti_start"));
  if (start == nullptr) {
    note("cupti", false, "the CUPTI backend lacks gnnprof_cupti_start", true);
    return;
  }
  char reason[512] = {0};
  if (start(reason, sizeof(reason)) != 0) {
    // The backend noted the collector itself; one line here.
    std::fprintf(stderr, "gnnprof: cupti: %s (%s)\n", reason, why);
    return;
  }
  g_cupti_flush.store(reinterpret_cast<CuptiFlush>(dlsym(h, "gnnprof_cupti_flush")));
  g_cupti_push = reinterpret_cast<CuptiCorrPush>(dlsym(h, "gnnprof_cupti_push_external"));
  g_cupti_pop = reinterpret_cast<CuptiCorrPop>(dlsym(h, "gnnprof_cupti_pop_external"));
  wire_correlation();
}

/// One look at the loaded objects for libtorch and the CUDA runtime, attaching what appeared.
/// Caller holds g_attach_mu. Returns true when nothing is left to watch for.
bool scan_and_attach() {
  static gnnprof::detail::LoadCounts seen;
  static bool scanned = false;
  if (g_torch_done && g_cuda_done) return true;
  // Walk the loaded objects only when the process loaded or unloaded one since the last
  // walk: a process that never loads CUDA is polled for its whole run.
  const gnnprof::detail::LoadCounts now = gnnprof::detail::load_counts();
  if (scanned && now.available() && now == seen) return false;
  seen = now;
  scanned = true;
  Loaded l;
  dl_iterate_phdr(scan_object, &l);
  if (!g_torch_done && !l.torch_cpu.empty()) {
    g_torch_done = true;
    try_torch(l.torch_cpu);
  }
  if (!g_cuda_done && l.cuda) {
    g_cuda_done = true;
    try_cupti("the process loaded the CUDA runtime");
  }
  return g_torch_done && g_cuda_done;
}

void* attach_main(void*) {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  gnnprof_set_thread_name("gnnprof-attach");
  pthread_setname_np(pthread_self(), "gnnprof-attach");
  if (int w = kCuptiWaiting; g_force_cupti.compare_exchange_strong(w, kCuptiTrying)) {
    {
      std::lock_guard<std::mutex> lock(g_attach_mu);
      try_cupti("GNNPROF_CUPTI=1");
    }
    g_force_cupti.store(kCuptiTried);
  }
  bool done = false;
  for (;;) {
    pollfd p{g_pipe[0], POLLIN, 0};
    // 5 ms while watching for torch (ops before the observer is in are missed); 50 ms while
    // only the CUDA runtime is awaited (a torch with CUDA loads it with libtorch, so it is
    // usually found in the same pass; a CPU-only process never loads it, and a 5 ms poll for
    // its whole run would cost a little of a core); then only the signal pipe.
    bool torch_done = false;
    if (!done) {
      std::lock_guard<std::mutex> lock(g_attach_mu);
      torch_done = g_torch_done;
    }
    const int r = poll(&p, 1, done ? -1 : torch_done ? 50 : 5);
    if (r > 0 && (p.revents & POLLIN) != 0) {
      char sig = 0;
      if (read(g_pipe[0], &sig, 1) == 1) {
        if (CuptiFlush f = g_cupti_flush.load()) f();
        gnnprof_stop();
        g_signal_flushed.store(1);
      }
      continue;
    }
    if (done) continue;
    std::lock_guard<std::mutex> lock(g_attach_mu);
    done = scan_and_attach();
  }
  return nullptr;
}

bool start_attach_thread() {
  if (g_pipe[0] < 0 && pipe2(g_pipe, O_CLOEXEC) != 0) return false;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  const bool ok = pthread_create(&t, &attr, attach_main, nullptr) == 0;
  pthread_attr_destroy(&attr);
  if (ok) g_attach_running.store(true);
  return ok;
}

bool host_single_threaded() {
#ifdef GNNPROF_HAVE_SINGLE_THREADED
  return __libc_single_threaded != 0;
#else
  return false;
#endif
}

/// The host started a thread of its own: the malloc cost is paid, so gnnprof's threads start.
void switch_to_threads() {
  if (!g_threadless.exchange(false)) return;
  gnnprof_note_collector("threads", 1, "gnnprof-drainer and gnnprof-attach, started when the process started a thread of its own");
  if (gnnprof_start_drainer() != 0)
    std::fprintf(stderr, "gnnprof: cannot start the drainer thread; draining at iteration marks only\n");
  if (!start_attach_thread())
    note("cupti", false, "cannot start the gnnprof-attach thread; the CUDA runtime is not watched for", true);
}

}  // namespace

/// The poll point of the torch observer (gnnprof_torch_set_poll) and of the NVTX injection.
void gnnprof::instrument::preload_poll(int at_mark) noexcept {
  if (!g_threadless.load(std::memory_order_relaxed)) return;
  try {
    if (!host_single_threaded()) {
      switch_to_threads();
      return;
    }
    (void)gnnprof_poll(at_mark);
  } catch (...) {
  }
}

namespace {

/// Threadless mode: Python resolves each extension module's PyInit_ right after loading it,
/// with libtorch among its dependencies when the module is torch._C.
void on_extension_loaded() {
  if (!g_threadless.load(std::memory_order_relaxed) || getpid() != g_owner_pid) return;
  if (!host_single_threaded()) {
    switch_to_threads();
    return;
  }
  std::unique_lock<std::mutex> lock(g_attach_mu, std::try_to_lock);
  if (lock.owns_lock()) (void)scan_and_attach();
}

/// Threadless mode's SIGTERM flush: the interrupted thread may be anywhere (inside malloc,
/// inside gnnprof), so the profile is written by a child made with the async-signal-safe
/// _Fork(), which works on a copy and takes no lock the interrupted thread might hold; the
/// parent waits for it 3 s at most. A child that fails leaves the last periodic flush.
void flush_in_child() {
  const pid_t parent = getpid();
  const pid_t child = _Fork();
  if (child == 0) {
    if (TorchCloseThread c = g_torch_close.load()) c();
    _exit(gnnprof_flush_in_fork_child(static_cast<long>(parent)) == 0 ? 0 : 1);
  }
  if (child < 0) return;
  timespec ts{0, 5 * 1000 * 1000};
  int status = 0;
  for (int i = 0; i < 600; ++i) {
    const pid_t r = waitpid(child, &status, WNOHANG);
    if (r == child || (r < 0 && errno != EINTR)) return;  // done, or reaped by the host's handler
    nanosleep(&ts, nullptr);
  }
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
}

void on_fatal_signal(int sig) {
  const int saved = errno;
  if (!g_in_signal.exchange(true)) {
    if (g_attach_running.load()) {
      char c = static_cast<char>(sig);
      if (write(g_pipe[1], &c, 1) == 1) {
        // Bounded: 3 s at most, then the signal takes its course regardless.
        timespec ts{0, 5 * 1000 * 1000};
        for (int i = 0; i < 600 && g_signal_flushed.load() == 0; ++i) nanosleep(&ts, nullptr);
      }
    } else if (g_threadless.load() && getpid() == g_owner_pid) {
      flush_in_child();
    }
  }
  // Restore the default action and let the (blocked, pending) signal kill us as it would have.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  errno = saved;
  raise(sig);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  pthread_sigmask(SIG_UNBLOCK, &s, nullptr);
}

void install_handler(int sig) {
  struct sigaction old {};
  if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

bool is_python() {
  char exe[PATH_MAX] = {0};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return false;
  const char* base = std::strrchr(exe, '/');
  base = base != nullptr ? base + 1 : exe;
  return std::strncmp(base, "python", 6) == 0;
}

void at_exit_first() {
  // Runs before the core's exit flush (registered after it): close the main thread's open
  // torch phase and drain CUPTI's buffers so both make it into the final profile.
  if (TorchCloseThread c = g_torch_close.load()) c();
  if (CuptiFlush f = g_cupti_flush.load()) f();
  // GNNPROF_CUPTI=1 in a process that ended before the attach thread got to it (a short
  // program on a loaded machine): say so, once, as a failed start would. The exchange makes
  // this and the attach thread's attempt exclusive. An attempt under way is given up to 3 s
  // to end, so that its one line (started, or why not) is not lost with the process.
  int w = kCuptiWaiting;
  if (g_force_cupti.compare_exchange_strong(w, kCuptiNone))
    note("cupti", false, "not started: the process exited before gnnprof's attach thread ran (GNNPROF_CUPTI=1)", true);
  else
    for (int i = 0; i < 3000 && g_force_cupti.load() == kCuptiTrying; ++i) usleep(1000);
}

__attribute__((constructor)) void gnnprof_preload_init() {
  try {
    gnnprof::Config cfg = gnnprof::Config::from_env();
    if (!cfg.enabled) return;
    if (!gnnprof::config::is_set("GNNPROF_OUTPUT")) cfg.output = "gnnprof-%R%p.json";
    if (!gnnprof::config::is_set("GNNPROF_FLUSH_INTERVAL_MS")) cfg.flush_interval_ms = 1000;
    // Observed torch ops arrive in bursts of tens of thousands per second (several events each)
    // on the loop thread, and on 2 cores the drainer is not always scheduled in time: a 4096-event
    // ring overflowed (iteration marks with it) on a loop of 2 us ops. 16384 events = 768 KiB per
    // thread that records.
    if (!gnnprof::config::is_set("GNNPROF_BUFFER_EVENTS")) cfg.buffer_events = 16384;
    // Under `gnnprof run`, helper processes (shells, `sleep`, ...) that record nothing leave no
    // file; the launched process itself always writes one (host samples at least).
    if (gnnprof::config::is_set("GNNPROF_RUN_PID"))
      cfg.write_empty = gnnprof::config::get_count("GNNPROF_RUN_PID") == static_cast<unsigned long long>(getppid());
    // NVTX finds its injection through this variable: point it here unless the user chose one.
    if (std::getenv("NVTX_INJECTION64_PATH") == nullptr) {
      const std::string me = self_path();
      if (!me.empty()) setenv("NVTX_INJECTION64_PATH", me.c_str(), 0);
    }
    // Threadless while a Python host is single-threaded (the hook below needs x86-64): on the
    // sample it cost +0.7 % against the threads' +2.0 % (docs/performance.md, "Threadless by
    // default"). GNNPROF_THREADLESS=0 keeps the threads; GNNPROF_CUPTI=1 starts CUPTI at once,
    // from the attach thread.
    const std::string cupti_env = gnnprof::config::get_string("GNNPROF_CUPTI");  // auto, 0 or 1
    const bool force_cupti = cupti_env == "1";
    const bool threads_asked = !gnnprof::config::get_bool("GNNPROF_THREADLESS");
    const bool threadless = kHaveDlsymHook && !force_cupti && !threads_asked && host_single_threaded() && is_python();
    cfg.drainer_thread = !threadless;
    if (!gnnprof::start(cfg)) return;
    g_active = true;
    g_owner_pid = getpid();
    gnnprof_note_collector("torch-ops", false, "the process never loaded libtorch");
#ifdef GNNPROF_HAVE_NVTX
    gnnprof_note_collector("nvtx", false, "the process made no NVTX call");
#else
    gnnprof_note_collector("nvtx", false, "gnnprof was built without the NVTX headers");
#endif
    if (cupti_env != "0") gnnprof_note_collector("cupti", false, "the process never loaded the CUDA runtime");
    {
      std::lock_guard<std::mutex> lock(g_attach_mu);
      if (cupti_env == "0") {
        note("cupti", false, "off (GNNPROF_CUPTI=0)", false);
        g_cuda_done = true;
      }
      if (force_cupti) {
        g_force_cupti.store(kCuptiWaiting);
        g_cuda_done = true;
      }
    }
    std::atexit(at_exit_first);
    // A forked child has no gnnprof thread: its signal handler must not wait for one, and it
    // attaches nothing (its session is stopped).
    pthread_atfork(nullptr, nullptr, [] {
      g_attach_running.store(false);
      g_force_cupti.store(kCuptiNone);  // the child has no attach thread to wait for
      g_threadless.store(false);
    });
    if (threadless) {
      g_threadless.store(true);
      gnnprof_note_collector("threads", 1,
                             "none while the process is single-threaded: drained and flushed on its own thread at "
                             "torch iteration marks and NVTX calls (GNNPROF_THREADLESS=0: gnnprof's threads)");
    } else {
      if (!start_attach_thread())
        note("torch-ops", false, "cannot start the gnnprof-attach thread; torch ops and CUPTI are not observed", true);
      else
        gnnprof_note_collector("threads", 1, "gnnprof-drainer and gnnprof-attach");
    }
    install_handler(SIGTERM);
    // Python turns SIGINT into KeyboardInterrupt and exits through atexit (which flushes);
    // a handler here would stop it from installing its own.
    if (!is_python()) install_handler(SIGINT);
  } catch (...) {
    // Never harm the host: without a session the program simply runs unprofiled.
  }
}

}  // namespace

/// For the Python package (gnnprof/_native): the poll point of its line tracer, and a look for
/// libtorch and the CUDA runtime now, after Python imported torch (the package loaded this
/// library with dlopen, so the dlsym hook below does not see the host's extension modules).
extern "C" int gnnprof_preload_poll(int at_mark) {
  gnnprof::instrument::preload_poll(at_mark);
  return 0;
}

extern "C" int gnnprof_preload_attach(void) {
  if (!g_active || getpid() != g_owner_pid) return -1;
  try {
    std::unique_lock<std::mutex> lock(g_attach_mu, std::try_to_lock);
    if (!lock.owns_lock()) return 0;
    return scan_and_attach() ? 1 : 0;
  } catch (...) {
    return -1;
  }
}

// The dlsym hook (threadless mode's only way to see libtorch arrive without a thread).
// `dlsym` below is an assembly trampoline: it calls gnnprof_dlsym_hook with the arguments,
// restores them and *jumps* to the real dlsym that the hook returned. Because it jumps, the
// real dlsym sees the host's own return address, so RTLD_NEXT and RTLD_DEFAULT resolve exactly
// as without gnnprof (glibc takes the caller from the return address; a C wrapper that called
// it would make gnnprof the caller). dlopen is not hooked: it must run before the hook could
// act, and a wrapper around it would change how the host's relative names resolve.
namespace {
void* no_dlsym(void*, const char*) { return nullptr; }
}  // namespace

extern "C" __attribute__((visibility("hidden"), used)) void* gnnprof_dlsym_hook(void* /*handle*/, const char* name) {
  void* real = g_real_dlsym.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (real == nullptr) real = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (real == nullptr) return reinterpret_cast<void*>(&no_dlsym);
    g_real_dlsym.store(real, std::memory_order_release);
  }
  // Python resolves PyInit_<module> right after loading an extension module.
  if (name != nullptr && name[0] == 'P' && std::strncmp(name, "PyInit_", 7) == 0 &&
      g_threadless.load(std::memory_order_relaxed)) {
    try {
      on_extension_loaded();
    } catch (...) {
    }
  }
  return real;
}

#if defined(__x86_64__) && defined(__linux__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  .cfi_startproc
  endbr64
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call gnnprof_dlsym_hook
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  jmp *%rax
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#endif
