// preload_state.h — what the parts of libgnnprof_preload.so share: preload.cpp (the
// constructor, threadless mode, exit), preload_plugins.cpp (finding libtorch and CUDA, loading
// the plugins, the attach thread), preload_signals.cpp (the SIGTERM/SIGINT flush) and
// preload_dlsym.cpp (the dlsym hook). Internal to the preload; nothing here is exported.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <mutex>
#include <string>

#include "plugin_abi.h"

namespace gnnprof::instrument::preload {

// ---- session and mode (preload.cpp) ----
extern bool g_active;      ///< the constructor started a session
extern pid_t g_owner_pid;  ///< the process that did (a forked child is not it)
/// Threadless mode (docs/zero-code.md, "Threads"): while a Python host is single-threaded no
/// gnnprof thread runs; the first thread makes glibc's malloc take its arena lock on every call
/// for the rest of the process, a cost the host would pay for gnnprof alone.
extern std::atomic<bool> g_threadless;
bool host_single_threaded();
/// The host started a thread of its own: the malloc cost is paid, so gnnprof's threads start.
void switch_to_threads();
/// Threadless mode: Python resolved an extension module's PyInit_ (the dlsym hook).
void on_extension_loaded();

// ---- plugins and the attach thread (preload_plugins.cpp) ----
// The plugins' entry points, typed by their declarations in plugin_abi.h.
using TorchObserve = decltype(&gnnprof_torch_observe);
using TorchCloseThread = decltype(&gnnprof_torch_close_thread);
using TorchModule = decltype(&gnnprof_torch_module);
using TorchBackward = decltype(&gnnprof_torch_backward);
using TorchGradClip = decltype(&gnnprof_torch_grad_clip);
using TorchLoop = decltype(&gnnprof_torch_loop);
using TorchUserScope = decltype(&gnnprof_torch_user_scope);
using TorchUserStep = decltype(&gnnprof_torch_user_step);
using TorchObserving = decltype(&gnnprof_torch_observing);
using TorchConfigure = decltype(&gnnprof_torch_configure);
using TorchBecomeWorker = decltype(&gnnprof_torch_become_worker);
using TorchBecomeForkLoop = decltype(&gnnprof_torch_become_fork_loop);
using TorchSetCorrelation = decltype(&gnnprof_torch_set_correlation);
using TorchSetPoll = decltype(&gnnprof_torch_set_poll);
using CuptiStart = decltype(&gnnprof_cupti_start);
using CuptiFlush = decltype(&gnnprof_cupti_flush);
using CuptiCorrPush = decltype(&gnnprof_cupti_push_external);
using CuptiCorrPop = decltype(&gnnprof_cupti_pop_external);
extern std::atomic<TorchCloseThread> g_torch_close;
extern std::atomic<TorchBecomeWorker> g_torch_worker;  ///< or null
extern std::atomic<TorchBecomeForkLoop> g_torch_fork_loop;  ///< or null
extern std::atomic<CuptiFlush> g_cupti_flush;

extern std::mutex g_attach_mu;            ///< one scan-and-attach at a time (the hook only try_locks it)
extern bool g_torch_done, g_cuda_done;    ///< under g_attach_mu
/// GNNPROF_CUPTI=1: the attach thread starts it.
enum CuptiTry { kCuptiNone, kCuptiWaiting, kCuptiTrying, kCuptiTried };
extern std::atomic<int> g_force_cupti;
extern int g_pipe[2];                     ///< the signal handler -> attach thread pipe
extern std::atomic<bool> g_attach_running;

/// This library's path, symlinks resolved ("" if unknown).
std::string self_path();
/// One line on stderr (a warning: GNNPROF_QUIET does not silence it) when `say`, and the
/// collector entry.
void note(const char* collector, bool enabled, const std::string& reason, bool say);
/// One look at the loaded objects for libtorch and the CUDA runtime, attaching what appeared.
/// Caller holds g_attach_mu. Returns true when nothing is left to watch for.
bool scan_and_attach();
/// Starts the detached gnnprof-attach thread (and the signal pipe). False when it could not.
bool start_attach_thread();

// ---- signals (preload_signals.cpp) ----
extern std::atomic<int> g_signal_flushed;  ///< the attach thread flushed for a signal
/// A handler for `sig` that flushes the profile and then lets the signal take its course, when
/// the host has none of its own.
void install_handler(int sig);

}  // namespace gnnprof::instrument::preload
