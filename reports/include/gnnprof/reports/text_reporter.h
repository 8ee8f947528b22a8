// gnnprof/reports/text_reporter.h — the terminal report.
//
// First the line table in line_profiler's layout ("Timer unit:", "Total time:", "File:",
// "Function:", then Line #, Hits, Time, Per Hit, % Time, Line Contents), one block per
// function, with the source read from disk; then the stage table (stage, hits, total, self,
// per hit, %), with time outside every stage as "(unattributed)"; then iterations, transfers,
// materializations, counters, dropped events and collectors.
#pragma once

#include "gnnprof/reports/reporter.h"

namespace gnnprof::reports {

class TextReporter final : public Reporter {
 public:
  explicit TextReporter(ReportOptions options) : Reporter(std::move(options)) {}
  const char* format() const noexcept override { return "text"; }
  using Reporter::render;
  Status render(const Report& report, std::ostream& out) const override;

  /// Only the line table (used by the golden test and by `gnnprof report --lines`).
  void render_line_table(const Profile& profile, std::ostream& out) const;
  /// Only the stage table (phases; with options().ops each phase's top ops).
  void render_stage_table(const Report& report, std::ostream& out) const;
  void render_stage_table(const Profile& profile, std::ostream& out) const {
    render_stage_table(make_report(profile, options_), out);
  }
};

/// What `gnnprof run` prints when the program ends (stderr): a few lines with the iteration,
/// the data time exposed and what prefetching would buy, the heaviest traced lines and the
/// diagnostics' first sentences; "" when the profile has neither iterations nor lines.
std::string run_summary(const Report& report);

}  // namespace gnnprof::reports
