// The GNNPROF_* table (gnnprof/config.h): one parser for every variable, defaults from the
// table, a bad value warned about once and replaced by the default.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

#include "gnnprof/config.h"
#include "gnnprof/gnnprof_c.h"
#include "gnnprof/session.h"

namespace gnnprof::config {
namespace {

struct Env {  // sets a variable for one test
  const char* name;
  Env(const char* n, const char* v) : name(n) { ::setenv(n, v, 1); }
  ~Env() { ::unsetenv(name); }
};

TEST(Config, EveryVariableOnceWithTypeDefaultAndDoc) {
  std::set<std::string> names;
  for (const Option& o : options()) {
    EXPECT_TRUE(names.insert(o.name).second) << o.name;
    EXPECT_EQ(std::string(o.name).rfind("GNNPROF_", 0), 0u);
    EXPECT_GT(std::string(o.doc).size(), 10u) << o.name;
    EXPECT_GT(std::string(o.read_by).size(), 2u) << o.name;
    if (o.type == Type::kChoice) {
      EXPECT_NE(std::string(o.choices), "") << o.name;
    }
  }
  for (const char* n : {"GNNPROF_ENABLED", "GNNPROF_OUTPUT", "GNNPROF_QUIET", "GNNPROF_TORCH_SAMPLE", "GNNPROF_CUPTI", "GNNPROF_PREFETCH",
                        "GNNPROF_LINES", "GNNPROF_THREADLESS"})
    EXPECT_TRUE(names.count(n)) << n;
  const std::string md = markdown();
  for (const auto& n : names) EXPECT_NE(md.find("| `" + n + "` |"), std::string::npos) << n;
}

TEST(Config, BoolsParseOneWay) {
  // GNNPROF_QUIET once meant "not 0" in the session and "starts with 1" in the torch observer.
  for (const char* on : {"1", "true", "on", "yes"}) {
    Env e("GNNPROF_QUIET", on);
    EXPECT_TRUE(get_bool("GNNPROF_QUIET")) << on;
    EXPECT_TRUE(Config::from_env().quiet) << on;
    EXPECT_EQ(gnnprof_config_bool("GNNPROF_QUIET"), 1) << on;
  }
  for (const char* off : {"0", "false", "off", "no"}) {
    Env e("GNNPROF_ENABLED", off);
    EXPECT_FALSE(Config::from_env().enabled) << off;
  }
  EXPECT_TRUE(get_bool("GNNPROF_ENABLED"));   // default 1
  EXPECT_FALSE(get_bool("GNNPROF_QUIET"));    // default 0
  EXPECT_TRUE(get_bool("GNNPROF_THREADLESS"));
}

TEST(Config, BadValueWarnsOnceAndUsesTheDefault) {
  Env e("GNNPROF_BUFFER_EVENTS", "lots");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(get_count("GNNPROF_BUFFER_EVENTS"), 4096u);
  EXPECT_EQ(get_count("GNNPROF_BUFFER_EVENTS"), 4096u);
  EXPECT_EQ(Config::from_env().buffer_events, 4096u);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "gnnprof: ignoring GNNPROF_BUFFER_EVENTS=lots (expected an integer in 0..67108864); using 4096\n");
  {
    Env big("GNNPROF_PREFETCH", "65");  // over the table's maximum
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(valid(*find("GNNPROF_PREFETCH"), "65"));
    EXPECT_TRUE(valid(*find("GNNPROF_PREFETCH"), "64"));
    (void)::testing::internal::GetCapturedStderr();
  }
  Env c("GNNPROF_CLOCK", "sundial");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(get_string("GNNPROF_CLOCK"), "tsc");
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "gnnprof: ignoring GNNPROF_CLOCK=sundial (expected one of tsc|monotonic); using tsc\n");
  Env q("GNNPROF_QUIET", "1");
  Env d("GNNPROF_DRAIN_INTERVAL_MS", "-3");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(get_count("GNNPROF_DRAIN_INTERVAL_MS"), 10u);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");  // quiet
}

TEST(Config, ValuesAndTheCAbi) {
  Env a("GNNPROF_GATHER_MIN_BYTES", "4096");
  EXPECT_EQ(get_count("GNNPROF_GATHER_MIN_BYTES"), 4096u);
  EXPECT_EQ(gnnprof_config_count("GNNPROF_GATHER_MIN_BYTES"), 4096u);
  Env b("GNNPROF_CUPTI", "1");
  EXPECT_EQ(get_string("GNNPROF_CUPTI"), "1");
  char buf[8];
  EXPECT_EQ(gnnprof_config_string("GNNPROF_CUPTI", buf, sizeof(buf)), 1);
  EXPECT_STREQ(buf, "1");
  EXPECT_EQ(gnnprof_config_string("GNNPROF_LINES", buf, sizeof(buf)), 0);  // unset: the default
  EXPECT_STREQ(buf, "auto");
  EXPECT_EQ(gnnprof_config_string("GNNPROF_OUTPUT", buf, 4), 0);  // truncated, NUL-terminated
  EXPECT_STREQ(buf, "gnn");
  EXPECT_EQ(get_bool("GNNPROF_NOT_A_VARIABLE"), false);
  EXPECT_EQ(get_count("GNNPROF_NOT_A_VARIABLE"), 0u);
}

}  // namespace
}  // namespace gnnprof::config
