// rank_profile_gen — writes the profile of one synthetic distributed rank, for the merge tests
// (tests/app/merge_test.sh) and the 64-rank merge-cost check. RANK / WORLD_SIZE /
// GNNPROF_RUN_ID come from the environment as in a real run.
//
//   rank_profile_gen ITERATIONS OUT.json [SLOW_US [BASE_US]]
//
// Each iteration: sample, materialize (with rows/bytes), forward, backward, comm wait,
// optimizer. Busy-waits give sample SLOW_US extra microseconds per iteration (a straggler) and
// the other stages a few microseconds; comm wait is 10x BASE_US, and 2 us on a slow rank, as
// when the others wait for it. The contrast is wide on purpose: comm shares are totals, and one
// preemption of a few ms inside a 2 us wait (a loaded 2-core machine) must not invert it.
#include <gnnprof/gnnprof.h>
#include <gnnprof/gnnprof_c.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {
void spin_us(long us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: rank_profile_gen ITERATIONS OUT.json [SLOW_US [BASE_US]]\n");
    return 2;
  }
  const long n = std::atol(argv[1]);
  const long slow = argc > 3 ? std::atol(argv[3]) : 0;
  gnnprof::Config cfg = gnnprof::Config::from_env();
  cfg.output = argv[2];
  cfg.quiet = true;
  if (!gnnprof::start(cfg)) return 1;
  const gnnprof_site_t sample = gnnprof_stage_site("sample", "data");
  const gnnprof_site_t materialize = gnnprof_stage_site("materialize", "data");
  const gnnprof_site_t forward = gnnprof_stage_site("forward", "compute");
  const gnnprof_site_t backward = gnnprof_stage_site("backward", "compute");
  const gnnprof_site_t wait = gnnprof_stage_site("comm wait", "comm");
  const gnnprof_site_t optimizer = gnnprof_stage_site("optimizer", "compute");
  const long base = argc > 4 ? std::atol(argv[4]) : 20;
  for (long i = 0; i < n; ++i) {
    gnnprof_step();
    gnnprof_stage_begin(sample);
    spin_us(base + slow);
    gnnprof_stage_end();
    gnnprof_stage_begin(materialize);
    gnnprof_materialize(1000 + (slow > 0 ? 500 : 0), 512000 + (slow > 0 ? 256000 : 0));
    spin_us(base);
    gnnprof_stage_end();
    gnnprof_stage_begin(forward);
    spin_us(base);
    gnnprof_stage_end();
    gnnprof_stage_begin(backward);
    spin_us(base);
    gnnprof_stage_begin(wait);
    spin_us(slow > 0 ? 2 : 10 * base);
    gnnprof_stage_end();
    gnnprof_stage_end();
    gnnprof_stage_begin(optimizer);
    spin_us(base / 2);
    gnnprof_stage_end();
  }
  gnnprof_step_end();
  return gnnprof::stop() ? 0 : 1;
}
