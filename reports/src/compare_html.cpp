// compare_html.cpp — the comparison as one HTML page: the headline, per-stage table phase-first
// (a phase's ops folded behind its button), the line tables side by side, the runs, and the two
// profiles side by side with what the baseline predicted.
#include <fmt/format.h>

#include <ostream>

#include "gnnprof/reports/compare.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/html_reporter.h"
#include "html_page.h"

namespace gnnprof::reports {

using html::esc;
using html::kpi;

Status render_comparison_html(const Comparison& c, const Profile* baseline, const Profile* candidate, std::ostream& out) {
  std::string o = html::page_head("gnnprof comparison");
  o += "<h1>gnnprof comparison</h1>";
  o += "<div class=muted>baseline: " + esc(c.baseline.command) + (c.baseline.env.empty() ? "" : " [" + esc(fmt::format("{}", fmt::join(c.baseline.env, " "))) + "]") +
       "<br>candidate: " + esc(c.candidate.command) +
       (c.candidate.env.empty() ? "" : " [" + esc(fmt::format("{}", fmt::join(c.candidate.env, " "))) + "]") + "</div>";
  const MetricComparison* it = c.metrics.empty() ? nullptr : &c.metrics.front();
  o += "<div class=kpis>";
  if (it != nullptr) {
    o += kpi(human_ns(it->baseline_median_ns), "baseline median iteration");
    o += kpi(human_ns(it->candidate_median_ns), "candidate median iteration");
  }
  if (c.speedup)
    o += fmt::format("<div class=kpi id=speedup><b>{:.3f}x</b><span>speedup{}</span></div>", *c.speedup,
                     c.speedup_ci_low ? fmt::format(", 95% CI {:.3f}x to {:.3f}x", *c.speedup_ci_low, *c.speedup_ci_high) : "");
  o += kpi(to_string(c.verdict), "verdict");
  if (const std::string slow = slower_summary(c); !slow.empty())
    o += "</div><div class='diag error' id=slower>" + esc(slow) + "</div><div>";
  if (const std::string mean = mean_summary(c); !mean.empty())
    o += "</div><div class='diag warning' id=mean-disagrees>" + esc(mean) + "</div><div>";
  if (const std::string passes = passes_summary(c); !passes.empty())
    o += "</div><div class='diag warning' id=passes-differ>" + esc(passes) + "</div><div>";
  if (const std::string moved = moved_summary(c); !moved.empty())
    o += "</div><div class='diag info' id=moved-to-workers>" + esc(moved) + "</div><div>";
  o += "</div><h2>Per stage</h2><div class=scroll><table class=sortable id=compare-table><thead><tr><th class=l>metric</th><th class=l>scope</th>"
       "<th>baseline</th><th>candidate</th><th>delta</th><th>ratio</th><th>95% CI</th><th>p</th><th class=l>verdict</th></tr></thead>";
  // Phase-first: a phase's ops follow it in its group, folded behind its button.
  std::vector<std::vector<const MetricComparison*>> groups;
  for (const auto& m : c.metrics) {
    if (m.op() && !groups.empty() && !groups.back().front()->op() && groups.back().front()->name == m.phase &&
        groups.back().front()->scope == m.scope)
      groups.back().push_back(&m);
    else
      groups.push_back({&m});
  }
  for (const auto& g : groups) {
    o += "<tbody>";
    for (std::size_t i = 0; i < g.size(); ++i) {
      const MetricComparison& m = *g[i];
      const std::string cls = m.verdict == Verdict::kFaster ? "faster" : m.verdict == Verdict::kSlower ? "slower" : "";
      std::string name = esc(m.op() ? short_op_name(m.name) : m.name);
      if (i == 0 && g.size() > 1) {
        std::size_t slower = 0;
        for (const auto* x : g) slower += x != g.front() && x->verdict == Verdict::kSlower ? 1 : 0;
        const std::string label = fmt::format("{} op{}{}", g.size() - 1, g.size() == 2 ? "" : "s",
                                              slower > 0 ? fmt::format(", {} slower", slower) : "");
        name += fmt::format(" <button class=tog aria-expanded=false data-label='{}'>&#9656; {}</button>", label, label);
      }
      o += fmt::format("<tr class='{}'{}><td class=l data-v=\"{}\">{}</td><td class=l>{}</td><td data-v={}>{}</td><td data-v={}>{}</td>"
                       "<td data-v={}>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td class='l {}'>{}</td></tr>",
                       i > 0 ? "op" : "phase", i > 0 ? " hidden" : "", esc(m.name), name, to_string(m.scope), m.baseline_median_ns,
                       human_ns(m.baseline_median_ns), m.candidate_median_ns, human_ns(m.candidate_median_ns), m.delta_ns,
                       m.delta_ns > 0 ? "+" : "", human_ns(m.delta_ns), ratio_text(m.ratio),
                       ci_text(m.ci_low, m.ci_high, CiStyle::kSpacedDash), esc(p_text(m.p_value)), cls, to_string(m.verdict));
    }
    o += "</tbody>";
  }
  o += "</table></div><p class=muted>" + esc(statistics_note(c)) + ". A phase's button lists the torch ops that ran in it.</p>";
  if (!c.lines.empty()) {
    o += "<h2>Lines</h2><p class=muted>Line tables side by side, matched by file, function and statement text (an edited "
         "statement is paired with its twin); per-iteration medians; a line marked * ran in fewer than half the iterations "
         "(validation once an epoch): medians over the iterations it ran in.</p>";
    std::string fn;
    for (const auto& l : c.lines) {
      const std::string where = line_where(l);
      const std::string here = base_name(l.file) + ": " + l.function + (where.empty() ? "" : " (" + where + ")");
      if (here != fn) {
        if (!fn.empty()) o += "</tbody></table>";
        fn = here;
        o += "<h3 class=fn>" + esc(fn) + "</h3><table class='sortable lines'><thead><tr><th>baseline line</th>"
             "<th>candidate line</th><th>baseline</th><th>candidate</th><th>delta</th><th>ratio</th><th>95% CI</th><th>p</th>"
             "<th class=l>verdict</th><th class=l>statement</th></tr></thead><tbody>";
      }
      const MetricComparison& m = l.metric;
      const bool both = l.baseline_line != 0 && l.candidate_line != 0;
      const char* cls = m.verdict == Verdict::kFaster ? "faster" : m.verdict == Verdict::kSlower ? "slower" : "";
      std::string code = (l.sparse ? "<span title='ran in fewer than half the iterations: medians over those it ran in'>* </span>"
                                   : "") +
                         esc(l.code);
      if (l.match == Match::kEdited) code += "<br><span class=muted>&rarr; " + esc(l.candidate_code) + "</span>";
      o += fmt::format("<tr><td>{}</td><td>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td class='l {}'>{}</td><td class=code>{}</td></tr>",
                       l.baseline_line ? std::to_string(l.baseline_line) : "-",
                       l.candidate_line ? std::to_string(l.candidate_line) : "-", m.baseline_median_ns,
                       l.baseline_line ? human_ns(m.baseline_median_ns) : "-", m.candidate_median_ns,
                       l.candidate_line ? human_ns(m.candidate_median_ns) : "-", m.delta_ns,
                       both ? fmt::format("{}{}", m.delta_ns > 0 ? "+" : "", human_ns(m.delta_ns)) : "-",
                       both ? ratio_text(m.ratio) : "-", both ? ci_text(m.ci_low, m.ci_high, CiStyle::kSpacedDash) : "-",
                       both ? esc(p_text(m.p_value)) : "-", cls,
                       esc(l.match == Match::kEdited ? std::string("edited, ") + to_string(m.verdict) : to_string(m.verdict)), code);
    }
    o += "</tbody></table>";
  }
  o += "<h2>Runs</h2><table><thead><tr><th class=l>side</th><th>#</th><th>exit</th><th>iterations</th><th>median iteration</th>"
       "<th class=l>profile / error</th></tr></thead><tbody>";
  for (const Side* s : {&c.baseline, &c.candidate})
    for (std::size_t i = 0; i < s->runs.size(); ++i) {
      const auto& r = s->runs[i];
      o += fmt::format("<tr><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=l>{}</td></tr>", esc(s->label), i + 1,
                       r.exit_code, r.iterations, human_ns(r.median_iteration_ns), esc(r.error.empty() ? r.profile : r.error));
    }
  o += "</tbody></table>";
  if (baseline != nullptr && candidate != nullptr) {
    const Report rb = make_report(*baseline, {}), rc = make_report(*candidate, {});
    const Analysis &a = rb.analysis, &b = rc.analysis;
    o += "<h2>Side by side</h2><div class=side><div><h2>baseline</h2>" + html::profile_body(rb, true) +
         "</div><div><h2>candidate</h2>" + html::profile_body(rc, true) + "</div></div>";
    o += "<h2>What the baseline predicted</h2>" +
         fmt::format("<p>From the baseline profile, full overlap of data with compute predicted <b>{}</b> per iteration "
                     "({:.2f}x); within the machine's limits <b>{}</b> ({:.2f}x); the candidate measured <b>{}</b>{}.</p>",
                     human_ns(a.whatif_predicted_ns), a.whatif_speedup, human_ns(a.whatif_expected_ns),
                     a.whatif_expected_speedup, human_ns(b.iteration_median_ns),
                     c.speedup ? fmt::format(" ({:.2f}x)", *c.speedup) : "");
  }
  o += html::page_end();
  out << o;
  return out ? Status::ok() : Status::error("write error");
}

}  // namespace gnnprof::reports
