// ab_app — a tiny instrumented loop for testing `gnnprof ab`. Appends its GNNPROF_PREFETCH
// value (or "-") to the file $AB_ORDER, runs $AB_ITERS iterations (default 10) whose "work"
// stage spins 300 us + K x 300 us, and exits with $AB_EXIT (default 0).
#include <gnnprof/gnnprof.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main() {
  const char* k_env = std::getenv("GNNPROF_PREFETCH");
  const int k = k_env != nullptr ? std::atoi(k_env) : 0;
  if (const char* order = std::getenv("AB_ORDER"); order != nullptr) {
    if (FILE* f = std::fopen(order, "a")) {
      std::fprintf(f, "%s\n", k_env != nullptr ? k_env : "-");
      std::fclose(f);
    }
  }
  const char* iters_env = std::getenv("AB_ITERS");
  const int iters = iters_env != nullptr ? std::atoi(iters_env) : 10;
  for (int i = 0; i < iters; ++i) {
    GNNPROF_STEP();
    GNNPROF_STAGE("work");
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(300 + 300 * k);
    while (std::chrono::steady_clock::now() < until) {
    }
  }
  GNNPROF_STEP_END();
  std::printf("ab_app: K=%d\n", k);
  const char* code = std::getenv("AB_EXIT");
  return code != nullptr ? std::atoi(code) : 0;
}
