// fault_app — a profiled program that meets a fault, for tests/app/fault_test.sh:
//   fault_app fork     200 fork()s while another thread registers sites and records (the
//                      registry and buffer locks are taken all the time); children record and
//                      exit(0); prints "forks ok" and exits 0 when no child hung
//   fault_app exec     records, then execs /bin/sh -c 'exit 7'
//   fault_app loop     records forever (to be killed)
//   fault_app segv     records, then raises SIGSEGV
#include <gnnprof/gnnprof.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

namespace {
void work(int n) {
  for (int i = 0; i < n; ++i) {
    GNNPROF_STEP();
    GNNPROF_STAGE("forward");
  }
}
}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  work(100);
  if (mode == "fork") {
    std::atomic<bool> stop{false};
    std::thread busy([&] {
      for (int i = 0; !stop; ++i) {
        // A new name each time: the site registry's mutex is taken on every call.
        gnnprof_site_t s = gnnprof_stage_site(("dynamic_" + std::to_string(i % 5000)).c_str(), nullptr);
        gnnprof_stage_begin(s);
        gnnprof_stage_end();
      }
    });
    for (int i = 0; i < 200; ++i) {
      pid_t pid = fork();
      if (pid == 0) {
        work(10);
        gnnprof_stage_site(("child_" + std::to_string(i)).c_str(), nullptr);  // takes the registry lock
        std::exit(0);  // runs atexit handlers: they must not write the parent's profile
      }
      int status = 0;
      if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::printf("child %d failed\n", i);
        stop = true;
        busy.join();
        return 1;
      }
    }
    stop = true;
    busy.join();
    std::printf("forks ok\n");
    return 0;
  }
  if (mode == "exec") {
    std::fflush(stdout);
    execl("/bin/sh", "sh", "-c", "exit 7", static_cast<char*>(nullptr));
    return 99;
  }
  if (mode == "loop") {
    std::printf("looping\n");
    std::fflush(stdout);
    for (;;) work(1000);
  }
  if (mode == "segv") {
    std::raise(SIGSEGV);
    return 98;
  }
  std::printf("usage: fault_app fork|exec|loop|segv\n");
  return 2;
}
