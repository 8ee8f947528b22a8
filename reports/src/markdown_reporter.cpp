#include "gnnprof/reports/markdown_reporter.h"

#include <fmt/format.h>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

namespace {
std::string cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : std::string(1, c);
  return o;
}
}  // namespace

Status MarkdownReporter::render(const Profile& p, std::ostream& out) const {
  const Analysis a = analyze(p, AnalysisOptions{options_.skip});
  out << "### gnnprof profile\n\n`" << cell(command_line(p)) << "`\n\n";
  out << fmt::format("Wall {}, {} iterations analyzed ({} warm-up skipped), median iteration **{}**; data exposed {:.1f}%, "
                     "what-if prefetch {} ({:.2f}x).\n\n",
                     human_ns(p.wall_ns), a.iterations_used, a.skipped, human_ns(a.iteration_median_ns), 100 * a.exposed_data_share,
                     human_ns(a.whatif_predicted_ns), a.whatif_speedup);
  if (const std::string e = whatif_expectation(a); !e.empty()) out << e << "\n\n";
  if (a.iterations_unobserved > 0)
    out << fmt::format("Iteration sampling: torch ops observed in {} of {} iterations; figures from those (the others: median {}).\n\n",
                       a.iterations_used - a.iterations_unobserved, a.iterations_used, human_ns(a.unobserved_iteration_median_ns));
  out << "| stage | scope | median/iteration | p90 | share |\n|---|---|---:|---:|---:|\n";
  for (const auto* rows : {&a.loop_stages, &a.other_stages})
    for (const auto& s : *rows)
      out << fmt::format("| {} | {} | {} | {} | {:.1f}% |\n", cell(s.name), rows == &a.loop_stages ? "loop" : "hidden",
                         human_ns(s.median_ns), human_ns(s.p90_ns), 100 * s.share);
  const auto diags = diagnose(p, a);
  out << "\n**Diagnostics:** " << (diags.empty() ? "none.\n" : "\n\n");
  for (const auto& d : diags) out << fmt::format("- **{}** `{}`: {}\n", d.severity, d.id, cell(d.message));
  return out ? Status::ok() : Status::error("write error");
}

}  // namespace gnnprof::reports
