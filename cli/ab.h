// ab.h — `gnnprof ab`: baseline vs candidate runs, interleaved, then a comparison.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace gnnprof::cli {

struct AbArgs {
  int repeat = 5;
  std::string out_dir = "gnnprof-ab";
  std::int64_t skip = -1;  ///< -1: each run's warm-up as report detects it
  std::vector<std::string> baseline_env, candidate_env;  ///< K=V, applied after the defaults
  std::string baseline_cmd, candidate_cmd;               ///< shell commands (second form)
  std::vector<std::string> command;                      ///< CMD ARGS... after `--` (first form)
  bool preload = false;  ///< inject libgnnprof_preload.so (unmodified programs, e.g. Python)
  bool ops = false;      ///< list op metrics under their phase
};

/// K=V settings into `out` (later ones win); false with the offending text in `bad`.
bool parse_env(const std::vector<std::string>& kvs, std::map<std::string, std::string>& out, std::string& bad);

/// Runs the A/B and prints the comparison. Returns the process exit code: 0, 1 when a run
/// failed or an output could not be written, 2 for bad usage.
int run_ab(const AbArgs& args);

}  // namespace gnnprof::cli
