#include "gnnprof/reports/reporter_factory.h"

#include <sstream>

#include "gnnprof/profile_io.h"
#include "gnnprof/reports/html_reporter.h"
#include "gnnprof/reports/json_reporter.h"
#include "gnnprof/reports/markdown_reporter.h"
#include "gnnprof/reports/text_reporter.h"
#include "gnnprof/reports/trace_reporter.h"

namespace gnnprof::reports {

Result<std::unique_ptr<Reporter>> make_reporter(const std::string& format, const ReportOptions& options) {
  if (format == "text") return std::unique_ptr<Reporter>(new TextReporter(options));
  if (format == "json") return std::unique_ptr<Reporter>(new JsonReporter());
  if (format == "trace") return std::unique_ptr<Reporter>(new TraceReporter());
  if (format == "html") return std::unique_ptr<Reporter>(new HtmlReporter(options));
  if (format == "markdown") return std::unique_ptr<Reporter>(new MarkdownReporter(options));
  return Status::error("unknown report format \"" + format + "\" (known: text, json, trace, html, markdown)");
}

Status render_to_file(const Reporter& reporter, const Report& report, const std::string& path) {
  std::ostringstream out;
  if (Status st = reporter.render(report, out); !st) return st;
  return write_file_atomic(path, out.str());
}

Status render_to_file(const Reporter& reporter, const Profile& profile, const std::string& path) {
  return render_to_file(reporter, make_report(profile, reporter.options()), path);
}

}  // namespace gnnprof::reports
