#include "gnnprof/reports/markdown_reporter.h"

#include <fmt/format.h>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/hierarchy.h"

namespace gnnprof::reports {

namespace {
/// Text for a table cell or a list item: '|' would end the cell, '<' and '>' open HTML.
std::string cell(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '|' ? std::string("\\|") : c == '<' ? std::string("&lt;") : c == '>' ? std::string("&gt;") : std::string(1, c);
  return o;
}

/// Text inside a `code span`: entities would show literally; only a backtick needs care.
std::string code(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '`' ? std::string("'") : std::string(1, c);
  return o;
}
}  // namespace

Status MarkdownReporter::render(const Report& r, std::ostream& out) const {
  const Profile& p = *r.profile;
  const Analysis& a = r.analysis;
  out << "### gnnprof profile\n\n`" << code(command_line(p)) << "`\n\n";
  if (p.run.failed()) out << "**The program " << exit_text(p.run) << "**: a failed run's profile.\n\n";
  if (a.loader_worker) {
    out << fmt::format("Wall {}, {} iterations analyzed ({} warm-up skipped). ", human_ns(p.wall_ns), a.iterations_used, a.skipped)
        << loader_worker_note(a) << "\n\n";
  } else {
    out << fmt::format("Wall {}, {} iterations analyzed ({} warm-up skipped), median iteration **{}**; data exposed {:.1f}%, "
                       "what-if prefetch {} ({:.2f}x).\n\n",
                       human_ns(p.wall_ns), a.iterations_used, a.skipped, human_ns(a.run_iteration_median_ns), 100 * a.exposed_data_share,
                       human_ns(a.whatif_predicted_ns), a.whatif_speedup);
    if (const std::string e = whatif_expectation(a); !e.empty()) out << e << "\n\n";
  }
  if (a.iterations_unobserved > 0)
    out << sampling_note(a) << "\n\n";
  // Phases first; each phase's top ops folded under it (GitHub renders <details>).
  const Hierarchy& h = r.hierarchy;
  out << "| stage | scope | median/iteration | p90 | share |\n|---|---|---:|---:|---:|\n";
  for (const auto& ph : h.phases)
    if (ph.in_iterations)
      out << fmt::format("| {} | {} | {} | {} | {:.1f}% |\n", cell(ph.name), ph.hidden ? "hidden" : "loop", human_ns(ph.median_ns),
                       human_ns(ph.p90_ns), 100 * ph.share);
  for (const auto& ph : h.phases) {
    if (ph.ops.empty()) continue;
    out << fmt::format("\n<details><summary>{}: top {} of {} ops by self time</summary>\n\n| op | hits | self | share of {} |\n"
                       "|---|---:|---:|---:|\n",
                       escape_markup(ph.name), ph.ops.size(), ph.op_count, cell(ph.name));
    for (const auto& op : ph.ops)
      out << fmt::format("| {} | {} | {} | {:.1f}% |\n", cell(op.label), op.hits, human_ns(op.self_ns), 100 * op.share);
    if (ph.other.hits > 0)
      out << fmt::format("| other ops ({}) | | {} | {:.1f}% |\n", ph.other.hits, human_ns(ph.other.self_ns), 100 * ph.other.share);
    out << "\n</details>\n";
  }
  const auto& diags = r.diagnostics;
  out << "\n**Diagnostics:** " << (diags.empty() ? "none.\n" : "\n\n");
  for (const auto& d : diags) {
    out << fmt::format("- **{}** `{}`: {}", to_string(d.severity), d.id, cell(d.message));
    if (const std::string ev = evidence_text(d.evidence); !ev.empty()) out << " (" << cell(ev) << ")";
    out << "\n";
  }
  if (!r.workers.empty()) {
    out << "\n**DataLoader workers:** " << cell(loader_workers_text(r.workers));
    if (!r.workers.top_lines.empty()) {
      const WorkerLine& l = r.workers.top_lines.front();
      out << fmt::format(" Heaviest line: `{}:{}` `{}`, {} of their batch time{}.", code(base_name(l.file)), l.line,
                         code(l.code), worker_line_share(l), l.beyond_batches() ? " (it also runs outside their batches)" : "");
    }
    out << "\n";
  }
  return out ? Status::ok() : Status::error("write error");
}

}  // namespace gnnprof::reports
