// Built with -DGNNPROF_DISABLE: every macro compiles to nothing, statements still run.
#ifndef GNNPROF_DISABLE
#error "this test must be compiled with -DGNNPROF_DISABLE"
#endif

#include "test_support.h"

namespace gnnprof {
namespace {

int side_effect = 0;
int bump() { return ++side_effect; }

TEST(Disabled, MacrosCompileToNothingAndStatementsStillRun) {
  Profile p = testing::profile_of(testing::quiet_config(), [] {
    for (int i = 0; i < 3; ++i) {
      GNNPROF_STEP();
      GNNPROF_FUNCTION();
      GNNPROF_STAGE("a");
      GNNPROF_STAGE("b");  // two macros in the same block
      GNNPROF_STAGE_CAT("c", "io");
      GNNPROF_LINE(int v = bump());
      GNNPROF_LINE(side_effect += v);
      GNNPROF_COUNTER("n", i);
      GNNPROF_MATERIALIZE("x", 1, 2);
    }
    GNNPROF_STEP_END();
  });
  EXPECT_EQ(side_effect, 14);  // the statements ran: v = 1 -> 2, v = 3 -> 6, v = 7 -> 14
  EXPECT_EQ(p.recorded_events, 0u);
  EXPECT_TRUE(p.stages.empty());
  EXPECT_TRUE(p.lines.empty());
  EXPECT_TRUE(p.iterations.empty());
}

}  // namespace
}  // namespace gnnprof
