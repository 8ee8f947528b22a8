// host_app — an instrumented program that never calls gnnprof::start(): the session starts
// lazily from the environment and is flushed at exit. Prints one line and exits with the code
// given on the command line, so tests can check that gnnprof changes neither.
//   host_app EXIT_CODE [exit-inside-stage | two-threads]
// two-threads: a second thread records 100 "worker" stages from the first instant, racing the
// main thread's lazy start.
#include <gnnprof/gnnprof.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

int main(int argc, char** argv) {
  int code = argc > 1 ? std::atoi(argv[1]) : 0;
  bool exit_in_stage = argc > 2 && std::strcmp(argv[2], "exit-inside-stage") == 0;
  std::thread worker;
  if (argc > 2 && std::strcmp(argv[2], "two-threads") == 0)
    worker = std::thread([] {
      gnnprof::set_thread_name("worker");
      for (int i = 0; i < 100; ++i) {
        GNNPROF_STAGE("worker");
      }
    });
  long sum = 0;
  for (int i = 0; i < 50; ++i) {
    GNNPROF_STEP();
    GNNPROF_STAGE("forward");
    GNNPROF_LINE(for (int k = 0; k < 10000; ++k) sum += k % 7);
    if (exit_in_stage && i == 10) {
      std::printf("host_app: exiting inside a stage\n");
      std::exit(code);
    }
  }
  GNNPROF_STEP_END();
  if (worker.joinable()) worker.join();
  std::printf("host_app: sum=%ld\n", sum);
  return code;
}
