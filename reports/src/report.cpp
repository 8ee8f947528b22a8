#include "gnnprof/reports/report.h"

#include <fmt/format.h>

#include "gnnprof/reports/format.h"

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

void set_loader_workers(Report& r, LoaderWorkers workers) {
  r.workers = std::move(workers);
  const LoaderWorkers& w = r.workers;
  const Analysis& a = r.analysis;
  const std::int64_t supply = w.supply_interval_ns() > 0 ? w.supply_interval_ns() : w.batch_median_ns;
  if (w.empty() || w.batches == 0 || supply <= 0 || 2 * supply > a.iteration_median_ns || w.busy_share() > 0.6) return;
  for (Diagnostic& d : r.diagnostics) {
    if (d.id != "loader-bound") continue;
    d.message = fmt::format(
        "the loop waits {:.0f}% of each iteration ({} of {}) at its DataLoader's __next__, though its worker processes keep "
        "up: together a batch every {} against an iteration of {}, busy {:.0f}% of their time. More workers will not "
        "help: the wait is the loop receiving each batch from them (unpickling what collate_fn returns: many small tensors "
        "or Python objects cost more than a few large tensors) or the workers short of CPU ({}, shared with the loop's "
        "compute); the DataLoader workers section below has their pace and heaviest lines.",
        100 * static_cast<double>(a.worker_wait_ns) / static_cast<double>(a.iteration_median_ns), human_ns(a.worker_wait_ns),
        human_ns(a.iteration_median_ns), human_ns(supply), human_ns(a.iteration_median_ns), 100 * w.busy_share(),
        cpus_text(r.profile->environment.cpus));
    d.evidence["worker_supply_ns"] = static_cast<double>(supply);
    d.evidence["worker_busy_share"] = w.busy_share();
  }
}

}  // namespace gnnprof::reports
