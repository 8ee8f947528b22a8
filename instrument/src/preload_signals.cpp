// preload_signals.cpp — SIGTERM (and, outside Python, SIGINT): flush the profile, then let the
// signal kill the process as it would have. Threads mode hands the flush to the attach thread;
// threadless mode writes it from a _Fork()ed child. Every wait is bounded (3 s).
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "gnnprof/gnnprof_c.h"
#include "preload_state.h"

extern char** environ;

namespace gnnprof::instrument::preload {

std::atomic<int> g_signal_flushed{0};

namespace {

std::atomic<bool> g_in_signal{false};

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

/// Writes the profile before the process ends without its atexit flush: the attach thread
/// stops the session (threads mode), or a _Fork()ed child writes it. Once per process; bounded.
void flush_before_end(int sig) {
  if (g_in_signal.exchange(true)) return;
  if (g_attach_running.load()) {
    char c = static_cast<char>(sig);
    if (write(g_pipe[1], &c, 1) == 1) {
      // Bounded: 3 s at most, then the process ends regardless.
      timespec ts{0, 5 * 1000 * 1000};
      for (int i = 0; i < 600 && g_signal_flushed.load() == 0; ++i) nanosleep(&ts, nullptr);
    }
  } else if (getpid() == g_owner_pid) {  // threadless, or a fork child's session (no attach thread)
    flush_in_child();
  }
}

void on_fatal_signal(int sig) {
  const int saved = errno;
  flush_before_end(sig);
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

}  // namespace

void install_handler(int sig) {
  struct sigaction old {};
  if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) != 0) return;
  struct sigaction sa {};
  sa.sa_handler = on_fatal_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

}  // namespace gnnprof::instrument::preload

// os._exit(), torch's DataLoader worker on its parent's SIGTERM (_exit(0) from the handler) and
// any other _exit skip the atexit flush: the profile is written first, as at a SIGTERM. Only
// in the process that owns the session (the launched one, or a worker that started its own):
// a vfork child shares the parent's memory and must touch nothing, and a fork child that
// records nothing has nothing to write. Then the exit itself, as glibc's _exit makes it.
namespace {
[[noreturn]] void exit_after_flush(int status) {
  using namespace gnnprof::instrument::preload;
  if (g_active && getpid() == g_owner_pid && gnnprof_is_running() == 1) {
    const int saved = errno;
    flush_before_end(0);
    errno = saved;
  }
  for (;;) syscall(SYS_exit_group, status);
}
}  // namespace

// An exec replaces the process image without atexit: the profile so far is written first (a
// flush: the session goes on should the exec fail), by the process that owns the session
// only (a vfork child of Python's subprocess execs too, in the parent's memory). The new
// image's preload writes a file of its own (<stem>.<pid>.exec<N>.json). execv and execve only:
// the calls Python's os.execv/os.execve make; glibc's other exec* call its internal execve.
namespace {
void flush_before_exec() {
  using namespace gnnprof::instrument::preload;
  if (g_active && getpid() == g_owner_pid && gnnprof_is_running() == 1) {
    const int saved = errno;
    (void)gnnprof_flush();
    errno = saved;
  }
}
}  // namespace

extern "C" __attribute__((visibility("default"))) int execve(const char* path, char* const argv[], char* const envp[]) {
  flush_before_exec();
  return static_cast<int>(syscall(SYS_execve, path, argv, envp));
}
extern "C" __attribute__((visibility("default"))) int execv(const char* path, char* const argv[]) {
  flush_before_exec();
  return static_cast<int>(syscall(SYS_execve, path, argv, environ));
}

extern "C" __attribute__((visibility("default"), noreturn)) void _exit(int status) { exit_after_flush(status); }
extern "C" __attribute__((visibility("default"), noreturn)) void _Exit(int status) { exit_after_flush(status); }
