// gnnprof/reports/reporter.h — one interface for every output format.
//
// A new format is a new Reporter subclass in its own file plus one line in make_reporter()
// (reporter_factory.h), never a branch in several places (google/benchmark's
// BenchmarkReporter). A reporter renders a Report (report.h): the analysis is computed once,
// before any reporter runs.
//
//   const Report r = make_report(profile, options);
//   if (auto st = TextReporter(options).render(r, std::cout); !st) ...
//   TextReporter(options).render(profile, std::cout);  // the same, for one view
#pragma once

#include <ostream>
#include <utility>

#include "gnnprof/profile.h"
#include "gnnprof/reports/report.h"
#include "gnnprof/result.h"

namespace gnnprof::reports {

class Reporter {
 public:
  explicit Reporter(ReportOptions options = {}) : options_(std::move(options)) {}
  virtual ~Reporter() = default;
  /// Stable format id: "text", "json", ...
  virtual const char* format() const noexcept = 0;
  virtual Status render(const Report& report, std::ostream& out) const = 0;
  /// Builds the Report with this reporter's options and renders it.
  Status render(const Profile& profile, std::ostream& out) const { return render(make_report(profile, options_), out); }
  const ReportOptions& options() const noexcept { return options_; }

 protected:
  ReportOptions options_;
};

}  // namespace gnnprof::reports
