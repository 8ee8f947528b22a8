// Links gnnprof::gnnprof and gnnprof::reports from an install tree; profiles a tiny loop and
// prints its stage table.
#include <gnnprof/gnnprof.h>
#include <gnnprof/reports/text_reporter.h>

#include <iostream>

int main() {
  gnnprof::Config cfg = gnnprof::Config::from_env();
  cfg.write_at_stop = false;
  gnnprof::start(cfg);
  volatile double acc = 0;
  for (int i = 0; i < 10; ++i) {
    GNNPROF_STEP();
    GNNPROF_STAGE("forward");
    GNNPROF_LINE(for (int k = 0; k < 1000; ++k) acc = acc + k);
  }
  GNNPROF_STEP_END();
  gnnprof::stop();
  auto p = gnnprof::snapshot();
  if (!p) return 1;
  gnnprof::reports::TextReporter({}).render_stage_table(*p, std::cout);
  return p->stages.size() == 1 && p->stages[0].hits == 10 ? 0 : 1;
}
