// gnnprof/reports/markdown_reporter.h — a short Markdown summary (GitHub step summaries, PRs):
// headline numbers, diagnostics, the per-iteration stage table and the what-if estimate.
#pragma once

#include "gnnprof/reports/reporter.h"

namespace gnnprof::reports {

class MarkdownReporter final : public Reporter {
 public:
  explicit MarkdownReporter(ReportOptions options) : Reporter(std::move(options)) {}
  const char* format() const noexcept override { return "markdown"; }
  using Reporter::render;
  Status render(const Report& report, std::ostream& out) const override;
};

}  // namespace gnnprof::reports
