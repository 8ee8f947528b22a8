#include "report.h"

#include <iostream>

#include "gnnprof/profile_io.h"
#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/loader_workers.h"
#include "gnnprof/reports/reporter_factory.h"
#include "gnnprof/reports/text_reporter.h"

namespace gnnprof::cli {

int run_report(const ReportArgs& a) {
  gnnprof::Result<gnnprof::Profile> p = gnnprof::read_profile_file(a.profile);
  if (!p) {
    std::cerr << "gnnprof: " << p.status().message() << "\n";
    return 2;
  }
  gnnprof::reports::ReportOptions opt;
  opt.source_roots = a.source_roots;
  opt.skip = a.skip;
  opt.ops = a.ops;
  opt.top_ops = a.top_ops;
  // Analysed once; every output renders this report (a written profile carries its diagnostics).
  gnnprof::reports::Report report = gnnprof::reports::make_report(*p, opt);
  std::size_t more = 0;
  gnnprof::reports::LoaderWorkers workers =
      gnnprof::reports::summarize_loader_workers(*p, gnnprof::reports::read_loader_worker_profiles(a.profile, *p, 64, &more));
  workers.not_read = more;
  gnnprof::reports::set_producer_processes(
      report, gnnprof::reports::summarize_producer_processes(*p, gnnprof::reports::read_producer_profiles(a.profile, *p)));
  gnnprof::reports::set_loader_workers(report, std::move(workers));
  gnnprof::reports::TextReporter text(opt);
  if (a.lines_only) {
    text.render_line_table(*p, std::cout);
  } else if (a.stages_only) {
    text.render_stage_table(report, std::cout);
  } else if (auto st = text.render(report, std::cout); !st) {
    std::cerr << "gnnprof: " << st.message() << "\n";
    return 1;
  }
  int rc = 0;
  auto write = [&](const char* format, const std::string& path) {
    if (path.empty()) return;
    auto r = gnnprof::reports::make_reporter(format, opt);
    gnnprof::Status st = r ? gnnprof::reports::render_to_file(**r, report, path) : r.status();
    if (!st) {
      std::cerr << "gnnprof: " << st.message() << "\n";
      rc = 1;
    } else {
      std::cerr << "gnnprof: wrote " << path << "\n";
    }
  };
  write("json", a.json_out);
  write("text", a.text_out);
  write("html", a.html_out);
  write("trace", a.trace_out);
  write("markdown", a.markdown_out);
  return rc;
}

}  // namespace gnnprof::cli
