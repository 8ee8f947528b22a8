#include "gnnprof/reports/json_reporter.h"

#include "gnnprof/profile_io.h"

namespace gnnprof::reports {

Status JsonReporter::render(const Report& report, std::ostream& out) const {
  out << profile_to_json(*report.profile, report.diagnostics);
  return out ? Status::ok() : Status::error("write error");
}

}  // namespace gnnprof::reports
