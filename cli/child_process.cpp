#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace gnnprof::cli {

Environment current_environment() {
  Environment env;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr) env[std::string(*e, static_cast<std::size_t>(eq - *e))] = eq + 1;
  }
  return env;
}

void prepend_preload(Environment& env, const std::string& library) {
  const auto prev = env.find("LD_PRELOAD");
  env["LD_PRELOAD"] = prev == env.end() || prev->second.empty() ? library : library + ":" + prev->second;
}

namespace {

/// posix_spawn cannot ignore a signal in the child, so this does what it does by hand: all
/// signals blocked across the fork, the handlers reset in the child before they are unblocked,
/// exec's errno back through a close-on-exec pipe. Async-signal-safe calls only in the child.
int fork_exec(char* const* argp, char* const* envp, const std::string& log, pid_t& pid,
              const std::vector<int>& default_signals, const std::vector<int>& ignored_signals) {
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return errno;
  sigset_t all, old;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &old);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(err_pipe[0]);
    struct sigaction dfl {}, ign {}, cur {};
    dfl.sa_handler = SIG_DFL;
    ign.sa_handler = SIG_IGN;
    for (int sig = 1; sig < NSIG; ++sig)
      if (::sigaction(sig, nullptr, &cur) == 0 && cur.sa_handler != SIG_DFL && cur.sa_handler != SIG_IGN)
        ::sigaction(sig, &dfl, nullptr);
    for (int sig : default_signals) ::sigaction(sig, &dfl, nullptr);
    for (int sig : ignored_signals) ::sigaction(sig, &ign, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    int e = 0;
    if (!log.empty()) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(1, 2) < 0) e = errno;
      if (fd > 2) ::close(fd);
      ::close(0);
    }
    if (e == 0) {
      ::execvpe(argp[0], argp, envp);
      e = errno;
    }
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ::close(err_pipe[1]);
  if (child < 0) {
    ::close(err_pipe[0]);
    return fork_errno;
  }
  int e = 0;
  ssize_t n;
  while ((n = ::read(err_pipe[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(err_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof e)) {  // exec failed: the child is gone, reap it
    while (::waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    return e != 0 ? e : ENOEXEC;
  }
  pid = child;
  return 0;
}

}  // namespace

int spawn(const std::vector<std::string>& argv, const Environment& env, const std::string& log, pid_t& pid,
          const std::vector<int>& default_signals, const std::vector<int>& ignored_signals) {
  if (argv.empty()) return EINVAL;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);
  if (!ignored_signals.empty())
    return fork_exec(argp.data(), envp.data(), log, pid, default_signals, ignored_signals);

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    posix_spawn_file_actions_addclose(&fa, 0);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  if (!default_signals.empty()) {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : default_signals) sigaddset(&set, sig);
    posix_spawnattr_setsigdefault(&attr, &set);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  }
  const int rc = ::posix_spawnp(&pid, argp[0], &fa, &attr, argp.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  return rc;
}

ChildExit wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return ChildExit{};
  return child_exit_of(status);
}

ChildExit child_exit_of(int status) {
  ChildExit e;
  e.waited = true;
  if (WIFSIGNALED(status)) {
    e.signal = WTERMSIG(status);
    e.code = 128 + e.signal;
  } else {
    e.code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  return e;
}

}  // namespace gnnprof::cli
