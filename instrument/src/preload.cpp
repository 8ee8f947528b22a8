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
//    off): no thread. The dlsym trampoline (preload_dlsym.cpp) does the watching when Python
//    resolves an extension module's PyInit_, the loop thread drains and flushes at the observer's
//    iteration marks (and its other polls, NVTX calls among them), SIGTERM flushes from a
//    _Fork()ed child, and the host's first thread of its own switches to the threads mode.
// The plugins reach the session only through the C ABI exported here.
//
// Never harm the host: nothing throws out of here, every wait is bounded, gnnprof's threads
// block all signals, a forked child records nothing (the core's atfork handler), and every
// missing piece is one line on stderr plus a "collectors" entry in the profile.
//
// The parts: this file (the constructor, threadless mode, exit), preload_plugins.cpp (finding
// libtorch and CUDA, the plugins, the attach thread), preload_signals.cpp, preload_dlsym.cpp;
// what they share is preload_state.h.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define GNNPROF_HAVE_SINGLE_THREADED 1
#endif

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "gnnprof/config.h"
#include "gnnprof/gnnprof_c.h"
#include "gnnprof/session.h"
#include "preload_poll.h"
#include "preload_state.h"

namespace gnnprof::instrument::preload {

bool g_active = false;
pid_t g_owner_pid = 0;
std::atomic<bool> g_threadless{false};

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

}  // namespace gnnprof::instrument::preload

using namespace gnnprof::instrument::preload;

/// The poll point of the torch observer (gnnprof_torch_set_poll) and of the NVTX injection.
/// With gnnprof's threads the poll only looks at the caller's ring (a fast producer helps the
/// drainer: gnnprof_poll).
void gnnprof::instrument::preload_poll(int at_mark) noexcept {
  try {
    if (g_threadless.load(std::memory_order_relaxed) && !host_single_threaded()) switch_to_threads();
    (void)gnnprof_poll(at_mark);
  } catch (...) {
  }
}

namespace {

#if defined(__x86_64__) && defined(__linux__)
constexpr bool kHaveDlsymHook = true;  // preload_dlsym.cpp
#else
constexpr bool kHaveDlsymHook = false;
#endif

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
    if (gnnprof::config::is_set("GNNPROF_RUN_PID")) {
      cfg.write_empty = gnnprof::config::get_count("GNNPROF_RUN_PID") == static_cast<unsigned long long>(getppid());
      // A process image exec'd by one that had a session (same pid, so the same file): its own
      // file beside it, <stem>.<pid>.exec<N>.json, not the earlier image's profile replaced.
      const std::string suffix = ".json";
      if (cfg.output.size() > suffix.size() && cfg.output.compare(cfg.output.size() - suffix.size(), suffix.size(), suffix) == 0) {
        const std::string stem = cfg.output.substr(0, cfg.output.size() - suffix.size());
        gnnprof::Config probe = cfg;
        for (int n = 1; n < 100 && access(gnnprof::resolved_output_path(probe).c_str(), F_OK) == 0; ++n)
          probe.output = stem + ".exec" + std::to_string(n) + suffix;
        cfg.output = probe.output;
      }
    }
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
        note("cupti", false, "GNNPROF_CUPTI=0", false);
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
      new (&g_attach_mu) std::mutex();  // the parent's attach thread may have held it at the fork
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

extern "C" void gnnprof_preload_close_torch_thread(void) {
  if (TorchCloseThread c = g_torch_close.load()) c();
}

namespace {
/// A worker's session (worker) or a fork child's own program's, with the observer's rules for it.
int start_child_session(long parent_pid, bool worker) {
  try {
    if (!g_active) return -1;
    const bool forked = getpid() != g_owner_pid;
    if (!worker && !forked) return -1;
    // A fork child has no gnnprof thread (nor an attach thread: torch is attached already); a
    // spawned process keeps the mode it has.
    const bool threadless =
        forked ? host_single_threaded() && gnnprof::config::get_bool("GNNPROF_THREADLESS") : g_threadless.load();
    const int drainer = threadless ? 0 : 1;
    if ((worker ? gnnprof_start_worker(parent_pid, drainer) : gnnprof_start_in_fork_child(drainer)) != 0) return -1;
    g_owner_pid = getpid();
    g_threadless.store(threadless);
    if (forked)
      gnnprof_note_collector("threads", 1,
                             threadless ? "none in this fork child while it is single-threaded: drained at its ops' poll points"
                                        : "gnnprof-drainer (this fork child had threads of its own)");
    // A child of a process that never loaded torch (the forkserver) loaded it after the fork,
    // with no attach thread to see it: look now. Torch only in a fork child: CUDA and CUPTI are
    // not started in the child of a process that may have a CUDA context.
    std::unique_lock<std::mutex> lock(g_attach_mu, std::try_to_lock);
    if (lock.owns_lock()) {
      if (forked) g_cuda_done = true;
      (void)scan_and_attach();
    }
    if (worker) {
      if (TorchBecomeWorker w = g_torch_worker.load()) w();
    } else if (TorchBecomeForkLoop l = g_torch_fork_loop.load()) {
      l();
    }
    return 0;
  } catch (...) {
    return -1;
  }
}
}  // namespace

extern "C" int gnnprof_preload_start_worker(long parent_pid) { return start_child_session(parent_pid, true); }

extern "C" int gnnprof_preload_start_fork_child(void) { return start_child_session(0, false); }

