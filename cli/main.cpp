// gnnprof — command-line front end.
//
//   gnnprof report PROFILE.json [--html OUT] [--trace OUT] [--markdown OUT] [--json OUT] [--text OUT]
//   gnnprof ab [--repeat N] [-o DIR] -- CMD ARGS...   |   --baseline 'CMD' --candidate 'CMD'
//   gnnprof compare BASE.json CAND.json [--html OUT] [--json OUT]   |   compare comparison.json
//   gnnprof check --baseline BASE.json CURRENT.json [--max-slowdown 5%] [--stage NAME=PCT]...
//   gnnprof version
//
// Exit codes: 0 success; 2 bad usage or bad input (missing, truncated or foreign file), with
// one line on stderr naming the file and the problem; 1 an output could not be written, a run
// of `ab` failed, or `check` found a regression.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "gnnprof/gnnprof.h"
#include "gnnprof/profile_io.h"
#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/reporter.h"
#include "gnnprof/reports/text_reporter.h"
#include "ab.h"
#include "compare.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitWriteError = 1;
constexpr int kExitBadInput = 2;

struct ReportArgs {
  std::string profile;
  std::string json_out;
  std::string text_out;
  std::string html_out, trace_out, markdown_out;
  std::vector<std::string> source_roots;
  bool lines_only = false;
  bool stages_only = false;
  std::int64_t skip = -1;
};

int run_report(const ReportArgs& a) {
  gnnprof::Result<gnnprof::Profile> p = gnnprof::read_profile_file(a.profile);
  if (!p) {
    std::cerr << "gnnprof: " << p.status().message() << "\n";
    return kExitBadInput;
  }
  gnnprof::reports::ReportOptions opt;
  opt.source_roots = a.source_roots;
  opt.skip = a.skip;
  // Written profiles carry the diagnostics of this analysis.
  p->diagnostics = gnnprof::reports::diagnose(*p, gnnprof::reports::analyze(*p, gnnprof::reports::AnalysisOptions{a.skip}));
  gnnprof::reports::TextReporter text(opt);
  if (a.lines_only) {
    text.render_line_table(*p, std::cout);
  } else if (a.stages_only) {
    text.render_stage_table(*p, std::cout);
  } else if (auto st = text.render(*p, std::cout); !st) {
    std::cerr << "gnnprof: " << st.message() << "\n";
    return kExitWriteError;
  }
  int rc = kExitOk;
  auto write = [&](const char* format, const std::string& path) {
    if (path.empty()) return;
    auto r = gnnprof::reports::make_reporter(format, opt);
    gnnprof::Status st = r ? gnnprof::reports::render_to_file(**r, *p, path) : r.status();
    if (!st) {
      std::cerr << "gnnprof: " << st.message() << "\n";
      rc = kExitWriteError;
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gnnprof: per-line and per-stage profiles of GNN training loops"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gnnprof ") + gnnprof::kVersion);

  ReportArgs ra;
  CLI::App* report = app.add_subcommand("report", "Print a profile's line table, stage table and summary");
  report->add_option("profile", ra.profile, "Profile JSON (gnnprof.profile/1)")->required();
  report->add_option("--json", ra.json_out, "Also write the profile as JSON to this file");
  report->add_option("--text", ra.text_out, "Also write the text report to this file");
  report->add_option("--html", ra.html_out, "Write a self-contained HTML report");
  report->add_option("--trace", ra.trace_out, "Write a Chrome Trace Event file (Perfetto UI, chrome://tracing)");
  report->add_option("--markdown", ra.markdown_out, "Write a Markdown summary");
  report->add_option("--source-root", ra.source_roots, "Directory to look for source files in (repeatable)");
  report->add_option("--skip", ra.skip, "warm-up iterations to leave out of the analysis (default: detect)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  auto* lo = report->add_flag("--lines", ra.lines_only, "Only the line table");
  report->add_flag("--stages", ra.stages_only, "Only the stage table")->excludes(lo);

  gnnprof::cli::AbArgs ab;
  CLI::App* abc = app.add_subcommand(
      "ab", "A/B: baseline vs candidate runs, interleaved, compared per stage with statistics.\n"
            "  gnnprof ab [options] -- CMD ARGS...      GNNPROF_PREFETCH=0 vs =2 (change with --*-env)\n"
            "  gnnprof ab [options] --baseline 'CMD' --candidate 'CMD'");
  abc->add_option("--repeat", ab.repeat, "runs per side (default 5)")->check(CLI::Range(1, 1000));
  abc->add_option("-o,--output", ab.out_dir, "directory for profiles, logs and comparison.json (default gnnprof-ab)");
  abc->add_option("--skip", ab.skip, "warm-up iterations left out of every run (default 2)");
  abc->add_option("--baseline-env", ab.baseline_env, "K=V for baseline runs (repeatable)");
  abc->add_option("--candidate-env", ab.candidate_env, "K=V for candidate runs (repeatable)");
  abc->add_option("--baseline", ab.baseline_cmd, "baseline shell command (second form)");
  abc->add_option("--candidate", ab.candidate_cmd, "candidate shell command (second form)");
  abc->add_option("command", ab.command, "CMD ARGS... (after --)");
  abc->positionals_at_end();

  gnnprof::cli::CompareArgs cmp;
  CLI::App* cmpc = app.add_subcommand("compare", "Compare two profiles per stage (or render a gnnprof ab comparison.json)");
  cmpc->add_option("inputs", cmp.inputs, "BASE.json CAND.json, or one comparison.json")->required()->expected(1, 2);
  cmpc->add_option("--html", cmp.html_out, "Write the comparison as self-contained HTML");
  cmpc->add_option("--json", cmp.json_out, "Write the comparison as gnnprof.compare/1 JSON");
  cmpc->add_option("--skip", cmp.skip, "warm-up iterations left out (default 2)");

  gnnprof::cli::CheckArgs chk;
  CLI::App* chkc = app.add_subcommand("check", "CI regression gate: exit 0 pass, 1 regression, 2 usage or input error");
  chkc->add_option("--baseline", chk.baseline, "stored baseline profile")->required();
  chkc->add_option("current", chk.current, "profile of this build")->required();
  chkc->add_option("--max-slowdown", chk.max_slowdown, "allowed slowdown of the iteration and of every stage (default 5%)");
  chkc->add_option("--stage", chk.stage_limits, "NAME=PCT: a stage's own limit (repeatable)");
  chkc->add_option("--junit", chk.junit_out, "write JUnit XML for CI test-report viewers");
  chkc->add_option("--markdown", chk.markdown_out, "write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)");
  chkc->add_option("--skip", chk.skip, "warm-up iterations left out (default 2)");

  CLI::App* version = app.add_subcommand("version", "Print the version");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "gnnprof: " << e.what() << " (see gnnprof --help)\n";
    return kExitBadInput;
  }
  try {
    if (report->parsed()) return run_report(ra);
    if (abc->parsed()) return gnnprof::cli::run_ab(ab);
    if (cmpc->parsed()) return gnnprof::cli::run_compare(cmp);
    if (chkc->parsed()) return gnnprof::cli::run_check(chk);
    if (version->parsed()) {
      std::cout << "gnnprof " << gnnprof::kVersion << "\n";
      return kExitOk;
    }
  } catch (const std::exception& e) {
    std::cerr << "gnnprof: internal error: " << e.what() << "\n";
    return kExitWriteError;
  }
  return kExitBadInput;
}
