#include "gnnprof/reports/report.h"

namespace gnnprof::reports {

Report make_report(const Profile& profile, const ReportOptions& options) {
  Report r;
  r.profile = &profile;
  r.options = options;
  r.analysis = analyze(profile, AnalysisOptions{options.skip});
  r.diagnostics = diagnose(profile, r.analysis);
  r.hierarchy = build_hierarchy(profile, r.analysis, options.top_ops);
  return r;
}

}  // namespace gnnprof::reports
