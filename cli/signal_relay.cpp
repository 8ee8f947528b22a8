#include "signal_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>

namespace gnnprof::cli {

namespace {

constexpr std::array<int, 4> kRelayed{SIGINT, SIGTERM, SIGHUP, SIGQUIT};

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_self_w = -1;  // the self-pipe's write end; -1: no witness

void on_signal(int sig) {
  const int saved = errno;
  if (g_self_w >= 0) {
    const unsigned char b = static_cast<unsigned char>(sig);
    (void)!::write(g_self_w, &b, 1);
  } else if (g_child > 0) {
    ::kill(static_cast<pid_t>(g_child), sig);
  }
  errno = saved;
}

void on_child(int) {
  const int saved = errno;
  const unsigned char b = 0;
  if (g_self_w >= 0) (void)!::write(g_self_w, &b, 1);
  errno = saved;
}

/// The witness: holds the relayed signals blocked (inherited so from the fork) and writes one
/// byte per signal it receives to fd 3. Async-signal-safe calls only (a fork of this process).
[[noreturn]] void witness_main(pid_t parent, int write_fd, const sigset_t& set) {
  ::signal(SIGCHLD, SIG_DFL);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(0);
  ::prctl(PR_SET_NAME, "gnnprof-signals");
  // The pipe out of the way first (with stdin closed, pipe2 may have given it fd 0..2).
  const int out = ::fcntl(write_fd, F_DUPFD, 10);
  if (out < 0) ::_exit(0);
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0)
    for (int fd = 0; fd < 3; ++fd) ::dup2(null, fd);
  if (::dup2(out, 3) < 0) ::_exit(0);
  // Nothing else of gnnprof's stays open here (a pipe the shell waits on, the profile files).
  if (::syscall(SYS_close_range, 4U, ~0U, 0U) != 0)
    for (int fd = 4; fd < 4096; ++fd) ::close(fd);
  for (;;) {
    siginfo_t si;
    const int s = ::sigwaitinfo(&set, &si);
    if (s <= 0) continue;
    const unsigned char b = static_cast<unsigned char>(s);
    if (::write(3, &b, 1) < 0 && errno != EINTR) ::_exit(0);
  }
}

int read_bytes(int fd, unsigned char* buf, int n) {
  const ssize_t r = ::read(fd, buf, static_cast<std::size_t>(n));
  return r > 0 ? static_cast<int>(r) : r == 0 ? -1 : 0;  // -1: the other end is gone
}

int g_self_r = -1;

}  // namespace

SignalRelay::SignalRelay() {
  start_witness();
  struct sigaction handle {};
  handle.sa_handler = on_signal;
  sigemptyset(&handle.sa_mask);
  for (int sig : kRelayed) {
    Saved s{sig, {}};
    if (::sigaction(sig, nullptr, &s.old) != 0) continue;
    if (s.old.sa_handler == SIG_IGN) continue;  // ignored before gnnprof: stays so, for the command too
    if (witness_ <= 0 && sig != SIGTERM) {
      // No witness: the terminal's signals reach the command by its group; gnnprof outlives
      // them to collect the profiles. (Its own default is set back in the command.)
      struct sigaction ignore {};
      ignore.sa_handler = SIG_IGN;
      ::sigaction(sig, &ignore, nullptr);
      ignored_.push_back(sig);
    } else {
      ::sigaction(sig, &handle, nullptr);
    }
    saved_.push_back(s);
  }
  // SIGCHLD ignored would reap the command unseen (no exit code): handled here (the witness's
  // wake-up) or its default, and ignored again in the command, which inherited it so.
  struct sigaction child {};
  child.sa_handler = witness_ > 0 ? on_child : SIG_DFL;
  child.sa_flags = witness_ > 0 ? SA_NOCLDSTOP : 0;
  sigemptyset(&child.sa_mask);
  Saved s{SIGCHLD, {}};
  if (::sigaction(SIGCHLD, nullptr, &s.old) == 0 && (witness_ > 0 || s.old.sa_handler == SIG_IGN) &&
      ::sigaction(SIGCHLD, &child, nullptr) == 0) {
    saved_.push_back(s);
    if (s.old.sa_handler == SIG_IGN) child_ignored_.push_back(SIGCHLD);
  }
}

void SignalRelay::start_witness() {
  int self[2], wit[2];
  if (::pipe2(self, O_CLOEXEC | O_NONBLOCK) != 0) return;
  if (::pipe2(wit, O_CLOEXEC) != 0) {
    ::close(self[0]);
    ::close(self[1]);
    return;
  }
  sigset_t set, old;
  sigemptyset(&set);
  for (int sig : kRelayed) sigaddset(&set, sig);
  // Blocked across the fork: the witness holds them from its first instruction.
  ::sigprocmask(SIG_BLOCK, &set, &old);
  const pid_t parent = ::getpid();
  const pid_t w = ::fork();
  if (w == 0) witness_main(parent, wit[1], set);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::close(wit[1]);
  if (w < 0) {
    ::close(wit[0]);
    ::close(self[0]);
    ::close(self[1]);
    return;
  }
  ::fcntl(wit[0], F_SETFL, ::fcntl(wit[0], F_GETFL) | O_NONBLOCK);
  witness_ = w;
  witness_fd_ = wit[0];
  g_self_r = self[0];
  g_self_w = self[1];
}

SignalRelay::~SignalRelay() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) ::sigaction(it->sig, &it->old, nullptr);
  g_child = 0;
  if (witness_ > 0) {
    ::kill(witness_, SIGKILL);
    while (::waitpid(witness_, nullptr, 0) < 0 && errno == EINTR) {
    }
    ::close(witness_fd_);
    const int w = g_self_w;
    g_self_w = -1;
    ::close(w);
    ::close(g_self_r);
    g_self_r = -1;
  }
}

ChildExit SignalRelay::wait(pid_t child) {
  g_child = child;
  if (witness_ <= 0) {
    ChildExit e = wait_child(child);
    g_child = 0;
    return e;
  }
  using Clock = std::chrono::steady_clock;
  const auto window = std::chrono::milliseconds(kWindowMs);
  struct Pending {
    int sig;
    Clock::time_point at;
  };
  std::vector<Pending> pending;
  std::array<Clock::time_point, 65> group_seen{};  // when the witness last got each signal
  bool witness_alive = true;
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(child, &status, WNOHANG);
    if (r == child) {
      g_child = 0;
      return child_exit_of(status);
    }
    if (r < 0 && errno != EINTR) {
      g_child = 0;
      return ChildExit{};
    }
    auto now = Clock::now();
    int timeout = -1;
    for (const Pending& p : pending) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p.at + window - now).count();
      const int ms = left > 0 ? static_cast<int>(left) + 1 : 0;
      timeout = timeout < 0 ? ms : std::min(timeout, ms);
    }
    pollfd fds[2] = {{g_self_r, POLLIN, 0}, {witness_alive ? witness_fd_ : -1, POLLIN, 0}};
    ::poll(fds, 2, timeout < 0 ? 1000 : timeout);  // SIGCHLD wakes it; the second a safety net
    now = Clock::now();
    unsigned char buf[64];
    // The witness's first: a group signal that both got is matched in the same pass.
    if (witness_alive && fds[1].revents != 0) {
      int n;
      while ((n = read_bytes(witness_fd_, buf, sizeof(buf))) > 0)
        for (int i = 0; i < n; ++i) {
          const int sig = buf[i];
          if (sig <= 0 || sig >= 65) continue;
          group_seen[static_cast<std::size_t>(sig)] = now;
          std::erase_if(pending, [&](const Pending& p) { return p.sig == sig; });
        }
      if (n < 0) witness_alive = false;  // killed: pass everything on at once from now on
    }
    if (fds[0].revents != 0) {
      int n;
      while ((n = read_bytes(g_self_r, buf, sizeof(buf))) > 0)
        for (int i = 0; i < n; ++i) {
          const int sig = buf[i];
          if (sig <= 0 || sig >= 65) continue;  // 0: SIGCHLD, the wait above looks
          const auto seen = group_seen[static_cast<std::size_t>(sig)];
          if (seen != Clock::time_point{} && now - seen <= window) continue;  // the command got it too
          pending.push_back({sig, now});
        }
    }
    std::erase_if(pending, [&](const Pending& p) {
      if (witness_alive && now - p.at < window) return false;
      ::kill(child, p.sig);
      return true;
    });
  }
}

}  // namespace gnnprof::cli
