// gnnprof/reports/report.h — compute, then render: a profile with everything the views show
// (the analysis, the diagnostics, the phase hierarchy) computed once. Every reporter renders a
// Report; none analyses on its own (google/benchmark's ComputeStats, then the reporters).
//
//   const Report r = make_report(profile, options);
//   TextReporter(options).render(r, std::cout);
//   render_to_file(HtmlReporter(options), r, "run.html");
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnnprof/profile.h"
#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/hierarchy.h"
#include "gnnprof/reports/loader_workers.h"

namespace gnnprof::reports {

struct ReportOptions {
  /// Extra directories in which to look for source files named in the line table.
  std::vector<std::string> source_roots;
  /// Longest source range shown per function in the line table.
  int max_function_lines = 400;
  /// Warm-up iterations left out of the analysis; -1 detects them.
  std::int64_t skip = -1;
  /// Text: list each phase's top ops under it (the drill-down; HTML always has it, folded).
  bool ops = false;
  /// Ops listed per phase before one "other ops" row.
  std::size_t top_ops = 10;
};

struct Report {
  const Profile* profile = nullptr;  ///< not owned: outlives the Report
  ReportOptions options;
  Analysis analysis;
  std::vector<Diagnostic> diagnostics;  ///< diagnose(profile, analysis)
  Hierarchy hierarchy;                  ///< build_hierarchy(profile, analysis, options.top_ops)
  /// The loop's DataLoader workers, from their own profiles (left empty by make_report: the
  /// caller that knows where the profile lies reads them, read_loader_worker_profiles).
  LoaderWorkers workers;
  /// The loop's producer processes, from their own profiles (also left empty by make_report).
  ProducerProcesses producers;
};

/// Analyses `profile` once (options.skip), runs the diagnostics rules and builds the hierarchy.
Report make_report(const Profile& profile, const ReportOptions& options);

/// Sets the report's DataLoader workers; where they keep up (together a batch in under half
/// an iteration, idle most of the time) yet the loop waits at __next__, loader-bound says the
/// wait is the loop receiving batches or the workers short of CPU, not too few workers.
void set_loader_workers(Report& r, LoaderWorkers workers);

/// Sets the report's producer processes (summarize_producer_processes of
/// read_producer_profiles): producer-bound then names their producer function where no traced
/// function ran beside the loop in its own process. Before set_loader_workers, which adds to it.
void set_producer_processes(Report& r, ProducerProcesses processes);

}  // namespace gnnprof::reports
