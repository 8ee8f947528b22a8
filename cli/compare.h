// compare.h — `gnnprof compare` and `gnnprof check` (the CI regression gate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gnnprof::cli {

struct CompareArgs {
  std::vector<std::string> inputs;  ///< BASE.json CAND.json, or one gnnprof.compare/1 file
  std::string html_out, json_out;
  std::int64_t skip = -1;  ///< -1: each run's warm-up as report detects it
  bool ops = false;  ///< list op metrics under their phase
};
int run_compare(const CompareArgs& args);

struct CheckArgs {
  /// One profile per side, or 2+ (runs of each build: the statistics are then over runs).
  std::vector<std::string> baselines, currents;
  std::string max_slowdown = "5%";
  std::string op_floor = "1%";  ///< an op regresses only when it grew by this share of the iteration
  std::string stage_floor = "1%";  ///< a stage too (and the time outside every stage)
  std::vector<std::string> stage_limits;  ///< NAME=PCT
  std::string junit_out, markdown_out;
  std::int64_t skip = -1;  ///< -1: each run's warm-up as report detects it
  bool allow_failed_runs = false;  ///< judge profiles of runs that exited non-zero (else no verdict)
  bool allow_different_programs = false;  ///< judge a baseline of another script (else no verdict)
};
/// 0 pass, 1 regression (or an output not written), 2 usage or input error.
int run_check(const CheckArgs& args);

/// "5%", "5", "0.5%" -> 0.05, 0.05, 0.005; false unless a plain non-negative decimal (with or
/// without "%"), and for a bare number between 0 and 1 ("0.05": a fraction or 0.05 %?); `why`
/// then says what was wrong.
bool parse_pct(std::string text, double& out, std::string* why = nullptr);

}  // namespace gnnprof::cli
