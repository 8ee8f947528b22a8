#include "child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

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

int spawn(const std::vector<std::string>& argv, const Environment& env, const std::string& log, pid_t& pid,
          const std::vector<int>& default_signals) {
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
