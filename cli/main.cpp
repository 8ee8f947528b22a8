// gnnprof — command-line front end.
//
//   gnnprof report PROFILE.json [--html OUT] [--trace OUT] [--markdown OUT] [--json OUT] [--text OUT]
//   gnnprof ab [--repeat N] [-o DIR] -- CMD ARGS...   |   --baseline 'CMD' --candidate 'CMD'
//   gnnprof compare BASE.json CAND.json [--html OUT] [--json OUT]   |   compare comparison.json
//   gnnprof check --baseline BASE.json CURRENT.json [--max-slowdown 5%] [--stage NAME=PCT]...
//   gnnprof run [-o OUT.json] [--html OUT.html] -- CMD ARGS...   (zero-code attach, LD_PRELOAD)
//   gnnprof merge RANK0.json RANK1.json ... [-o merged.json] [--html OUT]   (distributed runs)
//   gnnprof env [--markdown]   (every GNNPROF_* variable)
//   gnnprof version
//
// Exit codes: 0 success; 2 bad usage or bad input (missing, truncated or foreign file), with
// one line on stderr naming the file and the problem; 1 an output could not be written, a run
// of `ab` failed, or `check` found a regression.
#include <exception>
#include <iostream>

#include "cli.h"
#include "gnnprof/gnnprof.h"

int main(int argc, char** argv) {
  using gnnprof::cli::Cli;
  Cli cli;
  if (int rc = gnnprof::cli::parse_cli(argc, argv, cli); rc >= 0) return rc;
  try {
    switch (cli.command) {
      case Cli::Command::kReport: return gnnprof::cli::run_report(cli.report);
      case Cli::Command::kAb: return gnnprof::cli::run_ab(cli.ab);
      case Cli::Command::kCompare: return gnnprof::cli::run_compare(cli.compare);
      case Cli::Command::kCheck: return gnnprof::cli::run_check(cli.check);
      case Cli::Command::kRun: return gnnprof::cli::run_run(cli.run);
      case Cli::Command::kMerge: return gnnprof::cli::run_merge(cli.merge);
      case Cli::Command::kEnv: return gnnprof::cli::run_env(cli.env_markdown);
      case Cli::Command::kVersion:
        std::cout << "gnnprof " << gnnprof::kVersion << "\n";
        return 0;
      case Cli::Command::kNone: break;
    }
  } catch (const std::exception& e) {
    std::cerr << "gnnprof: internal error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
