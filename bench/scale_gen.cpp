// scale_gen — writes a large profile for the rendering-scale benchmark: N iterations of 9
// stages + a step mark (10 events per iteration), all kept in the timeline.
//   GNNPROF_BUFFER_EVENTS=2097152 GNNPROF_TIMELINE_EVENTS=1000000 scale_gen 100000 out.json
#include <gnnprof/gnnprof.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: scale_gen ITERATIONS OUT.json\n");
    return 2;
  }
  const long n = std::atol(argv[1]);
  gnnprof::Config cfg = gnnprof::Config::from_env();
  cfg.output = argv[2];
  cfg.quiet = true;
  gnnprof::start(cfg);
  volatile long sink = 0;
  for (long i = 0; i < n; ++i) {
    GNNPROF_STEP();
    { GNNPROF_STAGE("sample"); sink = sink + 1; }
    { GNNPROF_STAGE("materialize"); sink = sink + 1; }
    { GNNPROF_STAGE("h2d"); sink = sink + 1; }
    { GNNPROF_STAGE("forward"); { GNNPROF_STAGE("aggregate"); sink = sink + 1; } { GNNPROF_STAGE("linear"); sink = sink + 1; } }
    { GNNPROF_STAGE("backward"); sink = sink + 1; }
    { GNNPROF_STAGE("optimizer"); sink = sink + 1; }
    { GNNPROF_STAGE("sync"); sink = sink + 1; }
  }
  GNNPROF_STEP_END();
  return gnnprof::stop() ? 0 : 1;
}
