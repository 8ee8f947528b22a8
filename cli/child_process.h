// child_process.h — starting a command under gnnprof: its environment (the host's plus the
// injection), posix_spawnp (or fork and exec) and the wait. Shared by `gnnprof run` and `gnnprof ab`. (Not
// spawn.h: cli/ is on the include path, and <spawn.h> must stay the system's.)
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace gnnprof::cli {

using Environment = std::map<std::string, std::string>;

/// This process's environment.
Environment current_environment();

/// Puts `library` first on env's LD_PRELOAD (the rest kept after it).
void prepend_preload(Environment& env, const std::string& library);

/// Starts argv[0] (looked up on PATH) with argv and env. `log` non-empty: stdout and stderr go
/// to that file (truncated) and stdin is closed. `default_signals`: set back to their default
/// action in the child (signals the caller ignores while it waits, which the child would
/// inherit ignored). `ignored_signals`: ignored in the child (signals the caller ignored before
/// it handled them: exec would give the child their default). Returns 0 and sets `pid`, else
/// the errno value.
int spawn(const std::vector<std::string>& argv, const Environment& env, const std::string& log, pid_t& pid,
          const std::vector<int>& default_signals = {}, const std::vector<int>& ignored_signals = {});

struct ChildExit {
  bool waited = false;  ///< false: waitpid failed (errno set)
  int code = 0;         ///< the exit code, or 128 + signal when killed
  int signal = 0;       ///< the signal that killed it, or 0
};

/// Waits for `pid`, through EINTR.
ChildExit wait_child(pid_t pid);

/// How a child ended, from waitpid's status.
ChildExit child_exit_of(int status);

}  // namespace gnnprof::cli
