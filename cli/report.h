// report.h — `gnnprof report`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gnnprof::cli {

struct ReportArgs {
  std::string profile;
  std::string json_out;
  std::string text_out;
  std::string html_out, trace_out, markdown_out;
  std::vector<std::string> source_roots;
  bool lines_only = false;
  bool stages_only = false;
  bool ops = false;         ///< --ops: each stage's top ops under it
  std::size_t top_ops = 10;
  std::int64_t skip = -1;
};

/// Prints the text report and writes the requested outputs. 0, 1 (an output not written) or 2
/// (bad input file).
int run_report(const ReportArgs& args);

}  // namespace gnnprof::cli
