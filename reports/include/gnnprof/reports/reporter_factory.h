// gnnprof/reports/reporter_factory.h — a reporter by format name, and rendering to a file.
// The one place that knows every concrete reporter (the stack stays one-way: reporter.h <-
// each reporter <- this).
#pragma once

#include <memory>
#include <string>

#include "gnnprof/reports/reporter.h"

namespace gnnprof::reports {

/// The reporter for `format`, or an error naming the formats there are.
Result<std::unique_ptr<Reporter>> make_reporter(const std::string& format, const ReportOptions& options);

/// Renders to `path` atomically (temp file + rename), so an existing report is never half
/// overwritten.
Status render_to_file(const Reporter& reporter, const Report& report, const std::string& path);
Status render_to_file(const Reporter& reporter, const Profile& profile, const std::string& path);

}  // namespace gnnprof::reports
