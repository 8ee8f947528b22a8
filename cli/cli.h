// cli.h — the command line of `gnnprof`, parsed apart from running it, so that parsing can be
// fuzzed (fuzz/cli_args_fuzzer.cpp) without running commands.
#pragma once

#include "ab.h"
#include "compare.h"
#include "merge.h"
#include "report.h"
#include "run.h"

namespace gnnprof::cli {

struct Cli {
  enum class Command { kNone, kReport, kAb, kCompare, kCheck, kRun, kMerge, kEnv, kVersion };
  Command command = Command::kNone;
  ReportArgs report;
  AbArgs ab;
  CompareArgs compare;
  CheckArgs check;
  RunArgs run;
  MergeArgs merge;
  bool env_markdown = false;  ///< `gnnprof env --markdown`
};

/// Parses argv into `out`. Returns -1 to go on and run out.command, or the exit code to stop
/// with (0 after --help / --version, 2 after a usage error, printed as one line on stderr).
int parse_cli(int argc, const char* const* argv, Cli& out);

}  // namespace gnnprof::cli
