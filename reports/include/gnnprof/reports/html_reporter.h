// gnnprof/reports/html_reporter.h — one self-contained HTML file: no network fetch, readable
// on a laptop screen and printable.
//
// Profile page: headline numbers, diagnostics, a stage breakdown chart, a per-iteration
// stacked timeline (downsampled to at most 300 columns), the what-if estimate, sortable stage
// and line tables, transfers, materializations, counters and host memory. Comparison page:
// the metric table with CIs and verdicts and, when the profiles are at hand, both sides'
// charts side by side. Charts are inline SVG drawn here; the only script sorts tables.
#pragma once

#include "gnnprof/reports/compare.h"
#include "gnnprof/reports/reporter.h"

namespace gnnprof::reports {

class HtmlReporter final : public Reporter {
 public:
  explicit HtmlReporter(ReportOptions options) : Reporter(std::move(options)) {}
  const char* format() const noexcept override { return "html"; }
  using Reporter::render;
  Status render(const Report& report, std::ostream& out) const override;
};

/// The comparison page; `baseline`/`candidate` (may be null) add side-by-side charts.
Status render_comparison_html(const Comparison& c, const Profile* baseline, const Profile* candidate, std::ostream& out);

}  // namespace gnnprof::reports
