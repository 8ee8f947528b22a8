// preload_plugins.cpp — finding libtorch and the CUDA runtime in the process, loading the
// torch observer and CUPTI plugins next to this library through plugin_abi.h, and the
// gnnprof-attach thread that watches for them (and flushes for a signal) in threads mode.
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "gnnprof/config.h"
#include "gnnprof/gnnprof_c.h"
#include "gnnprof/internal/load_counts.h"
#include "preload_poll.h"
#include "preload_state.h"

#ifndef GNNPROF_TORCH_CPU_REALPATH
#define GNNPROF_TORCH_CPU_REALPATH ""
#endif
#ifndef GNNPROF_TORCH_VERSION
#define GNNPROF_TORCH_VERSION ""
#endif

namespace gnnprof::instrument::preload {

std::atomic<TorchCloseThread> g_torch_close{nullptr};
std::atomic<TorchBecomeWorker> g_torch_worker{nullptr};
std::atomic<TorchBecomeForkLoop> g_torch_fork_loop{nullptr};
std::atomic<CuptiFlush> g_cupti_flush{nullptr};
std::mutex g_attach_mu;
bool g_torch_done = false, g_cuda_done = false;
bool g_torch_observing = false;  // under g_attach_mu
std::atomic<TorchModule> g_torch_module{nullptr};
std::atomic<TorchBackward> g_torch_backward{nullptr};
std::atomic<TorchGradClip> g_torch_grad_clip{nullptr};
std::atomic<TorchLoop> g_torch_loop{nullptr};
std::atomic<TorchUserScope> g_torch_user_scope{nullptr};
std::atomic<TorchUserStep> g_torch_user_step{nullptr};
std::atomic<TorchObserving> g_torch_observing_now{nullptr};
std::atomic<TorchConfigure> g_torch_configure{nullptr};
std::atomic<int> g_force_cupti{kCuptiNone};
int g_pipe[2] = {-1, -1};
std::atomic<bool> g_attach_running{false};

namespace {

TorchSetCorrelation g_torch_set_corr = nullptr;
CuptiCorrPush g_cupti_push = nullptr;
CuptiCorrPop g_cupti_pop = nullptr;

std::string self_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&self_dir), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string p = info.dli_fname;
  auto slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
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
  g_torch_observing = true;
  g_torch_module.store(reinterpret_cast<TorchModule>(dlsym(h, "gnnprof_torch_module")));
  g_torch_backward.store(reinterpret_cast<TorchBackward>(dlsym(h, "gnnprof_torch_backward")));
  g_torch_grad_clip.store(reinterpret_cast<TorchGradClip>(dlsym(h, "gnnprof_torch_grad_clip")));
  g_torch_loop.store(reinterpret_cast<TorchLoop>(dlsym(h, "gnnprof_torch_loop")));
  g_torch_user_scope.store(reinterpret_cast<TorchUserScope>(dlsym(h, "gnnprof_torch_user_scope")));
  g_torch_user_step.store(reinterpret_cast<TorchUserStep>(dlsym(h, "gnnprof_torch_user_step")));
  g_torch_observing_now.store(reinterpret_cast<TorchObserving>(dlsym(h, "gnnprof_torch_observing")));
  g_torch_configure.store(reinterpret_cast<TorchConfigure>(dlsym(h, "gnnprof_torch_configure")));
  g_torch_worker.store(reinterpret_cast<TorchBecomeWorker>(dlsym(h, "gnnprof_torch_become_worker")));
  g_torch_fork_loop.store(reinterpret_cast<TorchBecomeForkLoop>(dlsym(h, "gnnprof_torch_become_fork_loop")));
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

}  // namespace

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

}  // namespace gnnprof::instrument::preload

using namespace gnnprof::instrument::preload;

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

extern "C" int gnnprof_preload_torch_state(void) {
  if (!g_active || getpid() != g_owner_pid) return -1;
  try {
    std::unique_lock<std::mutex> lock(g_attach_mu, std::defer_lock);
    for (int i = 0; !lock.try_lock(); ++i) {  // the attach thread's look: a dlopen or two, CUPTI's start
      if (i == 10000) return -2;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    (void)scan_and_attach();
    return !g_torch_done ? 0 : g_torch_observing ? 1 : 2;
  } catch (...) {
    return -1;
  }
}

extern "C" void gnnprof_preload_torch_module(int enter) {
  if (TorchModule m = g_torch_module.load(std::memory_order_acquire)) m(enter);
}

extern "C" void gnnprof_preload_torch_backward(int enter) {
  if (TorchBackward b = g_torch_backward.load(std::memory_order_acquire)) b(enter);
}

extern "C" int gnnprof_preload_torch_loop(int enter) {
  if (TorchLoop l = g_torch_loop.load(std::memory_order_acquire)) return l(enter);
  return -1;
}

extern "C" void gnnprof_preload_torch_grad_clip(int enter) {
  if (TorchGradClip c = g_torch_grad_clip.load(std::memory_order_acquire)) c(enter);
}

extern "C" int gnnprof_preload_torch_user_scope(const char* name, const char* category, int enter) {
  TorchUserScope s = g_torch_user_scope.load(std::memory_order_acquire);
  return s != nullptr ? s(name, category, enter) : 0;
}

extern "C" int gnnprof_preload_torch_user_step(void) {
  TorchUserStep s = g_torch_user_step.load(std::memory_order_acquire);
  return s != nullptr ? s() : 0;
}

extern "C" int gnnprof_preload_torch_observing(void) {
  TorchObserving o = g_torch_observing_now.load(std::memory_order_acquire);
  return o != nullptr ? o() : -1;
}

extern "C" int gnnprof_preload_torch_configure(int flags) {
  if (gnnprof_preload_torch_state() != 1) return 0;  // after the look for torch, as a program's first op would be
  TorchConfigure c = g_torch_configure.load(std::memory_order_acquire);
  if (c == nullptr) return 0;
  c(flags);
  return 1;
}
