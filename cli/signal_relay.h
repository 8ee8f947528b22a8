// signal_relay.h — `gnnprof run` waits for its command and passes on the signals sent to it,
// once. The command runs in gnnprof's process group, so a signal sent to that group (Ctrl-C,
// `kill -TERM -PGID`, timeout(1), a batch system or systemd signalling every process of the
// job) reaches it already: passing that one on too would deliver it twice (a handler's "second
// signal: force quit" would fire). A signal sent to gnnprof alone (`kill PID`, a container's
// stop) is passed on.
//
// How it tells them apart: a witness process in the same group blocks the relayed signals and
// reports each one it receives through a pipe. A signal that gnnprof gets is passed on unless
// the witness got the same signal within kWindowMs; the wait for the witness delays passing it
// on by up to that much.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <vector>

#include "child_process.h"

namespace gnnprof::cli {

class SignalRelay {
 public:
  static constexpr int kWindowMs = 150;

  /// Installs the handlers and starts the witness: before the command is spawned. Signals this
  /// process ignores stay ignored (nohup's SIGHUP), and the command inherits that, as without
  /// gnnprof; handled ones are back to their defaults in the command (exec resets them).
  /// Without a witness (no fork or pipe), SIGTERM is passed on at once, and SIGINT, SIGQUIT and
  /// SIGHUP are left to reach the command from the terminal.
  SignalRelay();
  /// Ends the witness and puts the dispositions back.
  ~SignalRelay();
  SignalRelay(const SignalRelay&) = delete;
  SignalRelay& operator=(const SignalRelay&) = delete;

  /// Waits for `child`, relaying signals to it meanwhile.
  ChildExit wait(pid_t child);

  /// Signals that this process ignores for the wait only: the command gets them at their
  /// default (spawn's default_signals).
  const std::vector<int>& child_defaults() const { return ignored_; }
  /// Signals this process ignored before and handles now (SIGCHLD): ignored in the command,
  /// as without gnnprof (spawn's ignored_signals).
  const std::vector<int>& child_ignored() const { return child_ignored_; }

 private:
  void start_witness();
  struct Saved {
    int sig;
    struct sigaction old;
  };
  std::vector<Saved> saved_;
  std::vector<int> ignored_;
  std::vector<int> child_ignored_;
  pid_t witness_ = -1;
  int witness_fd_ = -1;  // read end: one byte per signal the witness received
};

}  // namespace gnnprof::cli
