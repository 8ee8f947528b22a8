#include "cli.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "gnnprof/gnnprof.h"

namespace gnnprof::cli {

int parse_cli(int argc, const char* const* argv, Cli& out) {
  CLI::App app{"gnnprof: per-line and per-stage profiles of GNN training loops"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gnnprof ") + gnnprof::kVersion);

  CLI::App* report = app.add_subcommand("report", "Print a profile's line table, stage table and summary");
  report->add_option("profile", out.report.profile, "Profile JSON (gnnprof.profile/1)")->required();
  report->add_option("--json", out.report.json_out, "Also write the profile as JSON to this file");
  report->add_option("--text", out.report.text_out, "Also write the text report to this file");
  report->add_option("--html", out.report.html_out, "Write a self-contained HTML report");
  report->add_option("--trace", out.report.trace_out, "Write a Chrome Trace Event file (Perfetto UI, chrome://tracing)");
  report->add_option("--markdown", out.report.markdown_out, "Write a Markdown summary");
  report->add_option("--source-root", out.report.source_roots, "Directory to look for source files in (repeatable)");
  report->add_option("--skip", out.report.skip, "warm-up iterations to leave out of the analysis (default: detect)")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 40));
  report->add_flag("--ops", out.report.ops, "List each stage's top torch ops under it (the drill-down)");
  report->add_option("--top-ops", out.report.top_ops, "ops listed per stage before 'other ops' (default 10)")
      ->check(CLI::Range(1, 1000));
  auto* lo = report->add_flag("--lines", out.report.lines_only, "Only the line table");
  report->add_flag("--stages", out.report.stages_only, "Only the stage table")->excludes(lo);

  CLI::App* abc = app.add_subcommand(
      "ab", "A/B: baseline vs candidate runs, interleaved, compared per stage with statistics.\n"
            "  gnnprof ab [options] -- CMD ARGS...      GNNPROF_PREFETCH=0 vs =2 (change with --*-env)\n"
            "  gnnprof ab [options] --baseline 'CMD' --candidate 'CMD'");
  abc->add_option("--repeat", out.ab.repeat, "runs per side (default 5)")->check(CLI::Range(1, 1000));
  abc->add_option("-o,--output", out.ab.out_dir, "directory for profiles, logs and comparison.json (default gnnprof-ab)");
  abc->add_option("--skip", out.ab.skip, "warm-up iterations left out of every run (default: each run's, detected as report does)");
  abc->add_option("--baseline-env", out.ab.baseline_env, "K=V for baseline runs (repeatable)");
  abc->add_option("--candidate-env", out.ab.candidate_env, "K=V for candidate runs (repeatable)");
  abc->add_option("--baseline", out.ab.baseline_cmd, "baseline shell command (second form)");
  abc->add_option("--candidate", out.ab.candidate_cmd, "candidate shell command (second form)");
  abc->add_flag("--preload", out.ab.preload, "inject libgnnprof_preload.so into every run (unmodified programs, e.g. Python)");
  abc->add_flag("--ops", out.ab.ops, "list every torch op metric under its phase (default: phases, one line on the ops)");
  abc->add_option("command", out.ab.command, "CMD ARGS... (after --)");
  abc->positionals_at_end();

  CLI::App* cmpc = app.add_subcommand("compare", "Compare two profiles per stage (or render a gnnprof ab comparison.json)");
  cmpc->add_option("inputs", out.compare.inputs, "BASE.json CAND.json, or one comparison.json")->required()->expected(1, 2);
  cmpc->add_option("--html", out.compare.html_out, "Write the comparison as self-contained HTML");
  cmpc->add_option("--json", out.compare.json_out, "Write the comparison as gnnprof.compare/1 JSON");
  cmpc->add_option("--skip", out.compare.skip, "warm-up iterations left out (default: each run's, detected as report does)");
  cmpc->add_flag("--ops", out.compare.ops, "list every torch op metric under its phase (default: phases, one line on the ops)");

  CLI::App* chkc = app.add_subcommand("check", "CI regression gate: exit 0 pass, 1 regression, 2 usage or input error");
  chkc->add_option("--baseline", out.check.baselines,
                   "stored baseline profile (repeatable: with 3+ runs per side the tests are over runs, whose drift they cover)")
      ->required()
      ->allow_extra_args(false);  // one file per --baseline: the files after it are this build's
  chkc->add_option("current", out.check.currents, "profile(s) of this build")->required();
  chkc->add_option("--max-slowdown", out.check.max_slowdown, "allowed slowdown of the iteration, every stage and every torch op, in percent (default 5%; write 0.5% for half a percent: a bare number under 1 is refused)");
  chkc->add_option("--stage", out.check.stage_limits, "NAME=PCT: a stage's own limit, also its ops' (repeatable)");
  chkc->add_option("--op-floor", out.check.op_floor,
                   "a torch op regresses only when its median grew by at least this share of the iteration, and significantly "
                   "across all op tests (default 1%)");
  chkc->add_option("--stage-floor", out.check.stage_floor,
                   "a stage (or the time outside every stage) regresses only when its median grew by at least this share "
                   "of the iteration, and significantly across all stage tests (default 1%)");
  chkc->add_option("--junit", out.check.junit_out, "write JUnit XML for CI test-report viewers");
  chkc->add_option("--markdown", out.check.markdown_out, "write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)");
  chkc->add_flag("--allow-failed-runs", out.check.allow_failed_runs,
                 "judge profiles of runs that exited non-zero or were killed (default: no verdict, exit 2)");
  chkc->add_flag("--allow-different-programs", out.check.allow_different_programs,
                 "judge a baseline of another script or executable, as after a rename (default: no verdict, exit 2)");
  chkc->add_option("--skip", out.check.skip, "warm-up iterations left out (default: each run's, detected as report does)");

  CLI::App* runc = app.add_subcommand(
      "run", "Profile an unmodified program (Python or native) through the injected library.\n"
             "  gnnprof run [-o OUT.json] [--html OUT.html] -- /usr/bin/python3 train.py ARGS...");
  runc->add_option("-o,--output", out.run.output, "profile of the launched process (default $GNNPROF_OUTPUT or gnnprof.json); "
                                                  "other processes write OUT.[rankN.]PID.json next to it");
  runc->add_option("--html", out.run.html_out, "also write that profile's HTML report");
  runc->add_option("--preload", out.run.preload, "libgnnprof_preload.so to inject (default: next to gnnprof)");
  runc->add_option("--lines", out.run.lines,
                   "Python line tracing: auto (the training loop, default), none, FILE or FILE:FUNCTION (repeatable)");
  runc->add_option("command", out.run.command, "CMD ARGS... (after --)")->required();
  runc->positionals_at_end();

  CLI::App* mrgc = app.add_subcommand(
      "merge", "One report of a distributed run: each rank side by side, stragglers, imbalance, comm wait.\n"
               "  gnnprof merge RANK0.json RANK1.json ... [-o merged.json] [--html OUT.html]");
  mrgc->add_option("inputs", out.merge.inputs, "one profile per rank")->required()->expected(1, -1);
  mrgc->add_option("-o,--json", out.merge.json_out, "write the merged view as gnnprof.merge/1 JSON");
  mrgc->add_option("--html", out.merge.html_out, "write it as self-contained HTML");
  mrgc->add_option("--threshold", out.merge.threshold, "straggler: busy time over the median rank's by more than this (default 10%)");
  mrgc->add_option("--skip", out.merge.skip, "warm-up iterations left out on every rank (default 2)");

  CLI::App* envc = app.add_subcommand("env", "List every GNNPROF_* variable: type, default, who reads it, what it does, "
                                             "and its value here");
  envc->add_flag("--markdown", out.env_markdown, "as the Markdown table of docs/configuration.md");
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
    // The help of the command it was for, which lists its options; a word that is no command
    // is named as such (CLI11 would say "A subcommand is required").
    const std::initializer_list<const CLI::App*> subs{report, abc, cmpc, chkc, runc, mrgc, envc, version};
    std::string help = "gnnprof --help", names;
    for (const CLI::App* sub : subs) {
      if (argc > 1 && sub->get_name() == argv[1]) help = "gnnprof " + sub->get_name() + " --help";
      names += (names.empty() ? "" : ", ") + sub->get_name();
    }
    if (argc > 1 && argv[1][0] != '-' && help == "gnnprof --help")
      std::cerr << "gnnprof: unknown command '" << argv[1] << "' (commands: " << names << ")\n";
    else
      std::cerr << "gnnprof: " << e.what() << " (see " << help << ")\n";
    return 2;
  }
  if (report->parsed()) out.command = Cli::Command::kReport;
  if (abc->parsed()) out.command = Cli::Command::kAb;
  if (cmpc->parsed()) out.command = Cli::Command::kCompare;
  if (chkc->parsed()) out.command = Cli::Command::kCheck;
  if (runc->parsed()) out.command = Cli::Command::kRun;
  if (mrgc->parsed()) out.command = Cli::Command::kMerge;
  if (envc->parsed()) out.command = Cli::Command::kEnv;
  if (version->parsed()) out.command = Cli::Command::kVersion;
  return -1;
}

}  // namespace gnnprof::cli
