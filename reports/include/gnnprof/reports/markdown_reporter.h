// gnnprof/reports/markdown_reporter.h — a short Markdown summary (GitHub step summaries, PRs):
// headline numbers, diagnostics, the per-iteration stage table and the what-if estimate.
#pragma once

#include "gnnprof/reports/reporter.h"

namespace gnnprof::reports {

class MarkdownReporter final : public Reporter {
 public:
  explicit MarkdownReporter(ReportOptions options) : options_(std::move(options)) {}
  const char* format() const noexcept override { return "markdown"; }
  Status render(const Profile& profile, std::ostream& out) const override;

 private:
  ReportOptions options_;
};

}  // namespace gnnprof::reports
