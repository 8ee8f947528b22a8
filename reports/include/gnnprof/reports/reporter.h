// gnnprof/reports/reporter.h — one interface for every output format.
//
// A new format is a new Reporter subclass in its own file plus one line in make_reporter(),
// never a branch in several places (google/benchmark's BenchmarkReporter).
//
//   auto r = gnnprof::reports::make_reporter("text", {});
//   if (auto st = (*r)->render(profile, std::cout); !st) ...
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "gnnprof/profile.h"
#include "gnnprof/result.h"

namespace gnnprof::reports {

struct ReportOptions {
  /// Extra directories in which to look for source files named in the line table.
  std::vector<std::string> source_roots;
  /// Longest source range shown per function in the line table.
  int max_function_lines = 400;
  /// Warm-up iterations left out of the analysis; -1 detects them.
  std::int64_t skip = -1;
  /// Text: list each phase's top ops under it (the drill-down; HTML always has it, folded).
  bool ops = false;
  /// Ops listed per phase before one "other ops" row.
  std::size_t top_ops = 10;
};

class Reporter {
 public:
  virtual ~Reporter() = default;
  /// Stable format id: "text", "json", ...
  virtual const char* format() const noexcept = 0;
  virtual Status render(const Profile& profile, std::ostream& out) const = 0;
};

/// The reporter for `format`, or an error naming the formats there are.
Result<std::unique_ptr<Reporter>> make_reporter(const std::string& format, const ReportOptions& options);

/// Renders to `path` atomically (temp file + rename), so an existing report is never half
/// overwritten.
Status render_to_file(const Reporter& reporter, const Profile& profile, const std::string& path);

}  // namespace gnnprof::reports
