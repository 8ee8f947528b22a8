#include "gnnprof/reports/html_reporter.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/line_table.h"

namespace gnnprof::reports {

namespace {

std::string esc(const std::string& s) { return escape_markup(s); }

const char* kStyle = R"(<style>
:root{--fg:#1d2330;--muted:#5d6778;--line:#d8dde6;--bg:#fff;--card:#f6f8fb}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1200px;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.muted{color:var(--muted)}.kpis{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.kpi{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 14px;min-width:160px}
.kpi b{display:block;font-size:20px}.kpi span{color:var(--muted);font-size:12px}
table{border-collapse:collapse;width:100%;font-size:13px}th,td{padding:4px 8px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
th{background:var(--card);cursor:pointer;user-select:none;position:sticky;top:0}th.l,td.l{text-align:left}td.code{font-family:ui-monospace,Menlo,Consolas,monospace;white-space:pre;text-align:left;max-width:560px;overflow:hidden;text-overflow:ellipsis}
.diag{border-left:4px solid #e0a100;background:#fff8e6;padding:8px 12px;margin:8px 0;border-radius:4px}.diag.error{border-color:#c62828;background:#fdecea}.diag.info{border-color:#1e6fd9;background:#eaf2fd}
.diag code{font-size:12px}.ev{color:var(--muted);font-size:12px}.legend span{display:inline-block;margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
.faster{color:#1b7f3b;font-weight:600}.slower{color:#c62828;font-weight:600}.side{display:grid;grid-template-columns:1fr 1fr;gap:16px}
table.src td{padding:1px 8px}table.src td.code{max-width:none}tr.idle td{color:var(--muted)}
td.heat{padding:1px 4px}td.heat div{width:110px}td.heat i{display:block;height:10px;background:#e15759;border-radius:2px;min-width:1px}
h3.fn{font-size:15px;margin:18px 0 6px}h3.fn span{font-weight:400;font-size:12px}
svg{max-width:100%;height:auto}svg text{font:11px system-ui,sans-serif;fill:var(--fg)}
@media print{body{max-width:none;padding:0}th{position:static}h2{break-after:avoid}table,svg,.diag{break-inside:avoid}.noprint{display:none}}
</style>)";

const char* kScript = R"(<script>
document.querySelectorAll('table.sortable th').forEach(function(th,i){th.addEventListener('click',function(){
var t=th.closest('table'),b=t.tBodies[0],rows=Array.from(b.rows),asc=th.dataset.asc!=='1';th.dataset.asc=asc?'1':'0';
rows.sort(function(x,y){var a=x.cells[i].dataset.v||x.cells[i].textContent,c=y.cells[i].dataset.v||y.cells[i].textContent,na=parseFloat(a),nc=parseFloat(c);
var r=(!isNaN(na)&&!isNaN(nc))?na-nc:a.localeCompare(c);return asc?r:-r;});rows.forEach(function(r){b.appendChild(r);});});});
</script>)";

std::string color_for(const std::string& category, std::size_t k) {
  static const char* data[] = {"#f28e2b", "#ffbe7d", "#e15759", "#d37295"};
  static const char* compute[] = {"#4e79a7", "#76b7b2", "#59a14f", "#8cd17d"};
  static const char* other[] = {"#b07aa1", "#9c755f", "#bab0ac", "#edc948"};
  if (category == "data") return data[k % 4];
  if (category == "compute") return compute[k % 4];
  if (category == "sync") return "#c62828";
  return other[k % 4];
}

std::map<std::string, std::string> palette(const Profile& p) {
  std::map<std::string, std::string> out;
  std::map<std::string, std::size_t> used;
  for (const auto& s : p.stages) out.emplace(s.name, color_for(s.category, used[s.category]++));
  return out;
}

std::string kpi(const std::string& value, const std::string& label) {
  return fmt::format("<div class=kpi><b>{}</b><span>{}</span></div>", esc(value), esc(label));
}

/// Horizontal bars: per-iteration median of each loop-thread stage (and hidden ones).
std::string stage_chart(const Analysis& a, const std::map<std::string, std::string>& colors) {
  std::vector<std::pair<std::string, const IterationStage*>> rows;
  for (const auto& s : a.loop_stages) rows.emplace_back("loop", &s);
  for (const auto& s : a.other_stages) rows.emplace_back("other", &s);
  if (rows.empty()) return "<p class=muted>No iterations: mark them with GNNPROF_STEP().</p>";
  std::int64_t mx = 1;
  for (const auto& r : rows) mx = std::max(mx, r.second->median_ns);
  const int w = 760, label = 190, bar_h = 18, gap = 6;
  const int h = static_cast<int>(rows.size()) * (bar_h + gap) + 10;
  std::string svg = fmt::format("<svg viewBox='0 0 {} {}' width='{}' role=img aria-label='stage breakdown'>", w, h, w);
  int y = 4;
  for (const auto& [where, s] : rows) {
    const double frac = static_cast<double>(s->median_ns) / static_cast<double>(mx);
    const int bw = std::max(1, static_cast<int>(frac * (w - label - 130)));
    auto c = colors.find(s->name);
    svg += fmt::format("<text x='{}' y='{}' text-anchor=end>{}{}</text>", label - 6, y + 13, esc(s->name),
                       where == "other" ? " (hidden)" : "");
    svg += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='{}'{}><title>{}: median {} per iteration</title></rect>",
                       label, y, bw, bar_h, c == colors.end() ? "#999" : c->second, where == "other" ? " opacity='.45'" : "",
                       esc(s->name), human_ns(s->median_ns));
    svg += fmt::format("<text x='{}' y='{}'>{} ({:.1f}%)</text>", label + bw + 6, y + 13, human_ns(s->median_ns), 100 * s->share);
    y += bar_h + gap;
  }
  return svg + "</svg>";
}

/// Stacked bars per iteration (loop thread) + unattributed, downsampled to <= 300 columns.
std::string iteration_chart(const Profile& p, const std::map<std::string, std::string>& colors) {
  std::vector<const IterationStats*> its;
  for (const auto& it : p.iterations)
    if (it.complete) its.push_back(&it);
  if (its.empty()) return "<p class=muted>No complete iterations.</p>";
  std::map<std::string, std::string> category;
  for (const auto& s : p.stages) category.emplace(s.name, s.category);
  std::set<std::string> names;
  for (const auto* it : its)
    for (const auto& [n, v] : it->stages) names.insert(n);
  std::vector<std::string> order(names.begin(), names.end());
  std::stable_sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    auto ca = category[a], cb = category[b];
    return (ca == "data" ? 0 : ca == "compute" ? 1 : 2) < (cb == "data" ? 0 : cb == "compute" ? 1 : 2);
  });
  const std::size_t cols = std::min<std::size_t>(300, its.size());
  const std::size_t per = (its.size() + cols - 1) / cols;
  struct Col {
    std::map<std::string, double> v;
    double un = 0, wall = 0;
    std::size_t first = 0, last = 0;
  };
  std::vector<Col> data;
  for (std::size_t i = 0; i < its.size(); i += per) {
    Col c;
    const std::size_t end = std::min(its.size(), i + per);
    for (std::size_t j = i; j < end; ++j) {
      for (const auto& [n, v] : its[j]->stages) {
        // Top-level share only would need nesting; stages are stacked as recorded (inclusive).
        c.v[n] += static_cast<double>(v);
      }
      c.un += static_cast<double>(its[j]->unattributed_ns);
      c.wall += static_cast<double>(its[j]->wall_ns);
    }
    const double k = static_cast<double>(end - i);
    for (auto& [n, v] : c.v) v /= k;
    c.un /= k;
    c.wall /= k;
    c.first = its[i]->index;
    c.last = its[end - 1]->index;
    data.push_back(c);
  }
  // Scale to 2.5x the median column so that a warm-up iteration does not flatten the rest;
  // taller columns are clipped and capped with a dark line (their tooltip has the value).
  std::vector<double> heights;
  for (const auto& c : data) {
    double stack = c.un;
    for (const auto& [n, v] : c.v) stack += v;
    heights.push_back(std::max(stack, c.wall));
  }
  std::vector<double> sorted = heights;
  std::sort(sorted.begin(), sorted.end());
  const double mx = std::max({1.0, std::min(sorted.back(), 2.5 * sorted[sorted.size() / 2])});
  const int w = 1000, h = 240, left = 60, bottom = 24;
  const double cw = static_cast<double>(w - left - 10) / static_cast<double>(data.size());
  std::string svg = fmt::format("<svg viewBox='0 0 {} {}' width='{}' role=img aria-label='per-iteration timeline'>", w, h, w);
  for (int t = 0; t <= 4; ++t) {
    const double y = static_cast<double>(h - bottom) - (h - bottom - 10) * t / 4.0;
    svg += fmt::format("<line x1='{}' x2='{}' y1='{:.1f}' y2='{:.1f}' stroke='#e3e7ee'/><text x='{}' y='{:.1f}' text-anchor=end>{}</text>",
                       left, w - 10, y, y, left - 4, y + 4, human_ns(static_cast<std::int64_t>(mx * t / 4)));
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto& c = data[i];
    double y = h - bottom;
    const double x = left + cw * static_cast<double>(i);
    std::string tip = c.first == c.last ? fmt::format("iteration {}", c.first) : fmt::format("iterations {}-{} (mean)", c.first, c.last);
    tip += fmt::format(": wall {}", human_ns(static_cast<std::int64_t>(c.wall)));
    const double top = 10;
    auto bar = [&](double v, const std::string& color, const std::string& name) {
      if (v <= 0 || y <= top) return;
      const double bh = std::min(v / mx * (h - bottom - 10), y - top);
      y -= bh;
      svg += fmt::format("<rect x='{:.2f}' y='{:.2f}' width='{:.2f}' height='{:.2f}' fill='{}'><title>{}; {} {}</title></rect>", x, y,
                         std::max(0.5, cw - (cw > 3 ? 1 : 0)), bh, color, esc(tip), esc(name), human_ns(static_cast<std::int64_t>(v)));
    };
    for (const auto& n : order) {
      auto f = c.v.find(n);
      if (f != c.v.end()) bar(f->second, colors.count(n) ? colors.at(n) : "#999", n);
    }
    bar(c.un, "#cfd5de", "unattributed");
    if (heights[i] > mx)
      svg += fmt::format("<rect x='{:.2f}' y='{}' width='{:.2f}' height='3' fill='#1d2330'><title>{} (clipped)</title></rect>", x, top,
                         std::max(0.5, cw - (cw > 3 ? 1 : 0)), esc(tip));
  }
  svg += fmt::format("<text x='{}' y='{}'>iteration {}</text><text x='{}' y='{}' text-anchor=end>{}</text>", left, h - 6,
                     data.front().first, w - 10, h - 6, data.back().last);
  svg += "</svg><div class=legend>";
  for (const auto& n : order)
    svg += fmt::format("<span><i style='background:{}'></i>{}</span>", colors.count(n) ? colors.at(n) : "#999", esc(n));
  svg += "<span><i style='background:#cfd5de'></i>unattributed</span></div>";
  if (per > 1) svg += fmt::format("<p class=muted>{} iterations, {} per column (means).</p>", its.size(), per);
  return svg;
}

std::string sparkline(const std::vector<HostSample>& s) {
  if (s.size() < 2) return "<p class=muted>Not enough host samples.</p>";
  std::int64_t lo = s.front().rss_bytes, hi = lo;
  for (const auto& x : s) {
    lo = std::min(lo, x.rss_bytes);
    hi = std::max(hi, x.rss_bytes);
  }
  if (hi == lo) hi = lo + 1;
  const int w = 600, h = 80;
  const double t0 = static_cast<double>(s.front().ts_ns), t1 = static_cast<double>(std::max(s.back().ts_ns, s.front().ts_ns + 1));
  std::string pts;
  for (const auto& x : s)
    pts += fmt::format("{:.1f},{:.1f} ", (static_cast<double>(x.ts_ns) - t0) / (t1 - t0) * (w - 10) + 5,
                       h - 5 - static_cast<double>(x.rss_bytes - lo) / static_cast<double>(hi - lo) * (h - 10));
  return fmt::format("<svg viewBox='0 0 {} {}' width='{}' role=img aria-label='host memory'><polyline fill=none stroke='#4e79a7' "
                     "stroke-width=2 points='{}'/></svg><div class=muted>RSS {} to {} over {}</div>",
                     w, h, w, pts, human_bytes(static_cast<std::uint64_t>(lo)), human_bytes(static_cast<std::uint64_t>(hi)),
                     human_ns(s.back().ts_ns - s.front().ts_ns));
}

std::string diagnostics_html(const std::vector<Diagnostic>& ds) {
  if (ds.empty()) return fmt::format("<p>None of the {} rules fired.</p>", diagnostic_ids().size());
  std::string o;
  for (const auto& d : ds) {
    const std::string ev = evidence_text(d.evidence);
    o += fmt::format("<div class='diag {}'><b>{}</b> <code>{}</code><br>{}{}</div>", esc(d.severity), esc(d.severity), esc(d.id),
                     esc(d.message), ev.empty() ? "" : "<div class=ev>evidence: " + esc(ev) + "</div>");
  }
  return o;
}

/// The line table: per function, its source with line_profiler's figures, gnnprof's extra
/// columns where the profile has data, and a heat bar of each line's share of the function.
std::string lines_html(const Profile& p, const ReportOptions& opt) {
  const LineTable t = build_line_table(p, opt.source_roots, opt.max_function_lines);
  if (t.blocks.empty()) return "<p class=muted id=no-lines>" + esc(no_lines_hint(p)) + "</p>";
  std::string o;
  if (t.any_extra())
    o += "<p class=muted>Beyond line_profiler: " + esc(extra_columns_legend(t)) + ". Hover a time for its split by stage.</p>";
  std::string extra_head;
  if (t.copied) extra_head += "<th>copied</th>";
  if (t.gathered) extra_head += "<th>gathered</th>";
  if (t.gpu) extra_head += "<th>GPU</th>";
  if (t.wait) extra_head += "<th>wait</th>";
  if (t.backward) extra_head += "<th>backward</th>";
  for (const LineBlock& b : t.blocks) {
    o += fmt::format("<h3 class=fn>{} <span class=muted>{} &middot; {}</span></h3>", esc(b.function), esc(b.file), human_ns(b.total_ns));
    if (!b.source_found) o += "<p class=muted>Source not found; the recorded statements only.</p>";
    o += "<table class=src><thead><tr><th>line</th><th>hits</th><th>time</th><th>per hit</th><th>%</th><th class=l></th>" +
         extra_head + "<th class=l>source</th></tr></thead><tbody>";
    for (const LineRow& r : b.rows) {
      const LineStats* l = r.stats;
      std::string text = r.text;
      if (!b.source_found && l != nullptr) text = l->code;
      if (l == nullptr) {
        std::string empty;
        for (int k = 0; k < t.copied + t.gathered + t.gpu + t.wait + t.backward; ++k) empty += "<td></td>";
        o += fmt::format("<tr class=idle><td>{}</td><td></td><td></td><td></td><td></td><td></td>{}<td class=code>{}</td></tr>",
                         r.line, empty, esc(text));
        continue;
      }
      const double pct = b.total_ns > 0 ? 100.0 * static_cast<double>(l->total_ns) / static_cast<double>(b.total_ns) : 0.0;
      std::string split;
      for (const auto& [name, ns] : l->stages) split += fmt::format("{}{} {}", split.empty() ? "" : ", ", name, human_ns(ns));
      auto cell = [](std::int64_t ns) { return ns > 0 ? fmt::format("<td data-v={}>{}</td>", ns, human_ns(ns)) : std::string("<td></td>"); };
      std::string extra;
      if (t.copied) extra += "<td>" + esc(copied_cell(r.extras)) + "</td>";
      if (t.gathered) extra += "<td>" + (r.extras.gathered > 0 ? human_bytes(r.extras.gathered) : std::string()) + "</td>";
      if (t.gpu) extra += cell(r.extras.gpu_ns);
      if (t.wait) extra += cell(r.extras.wait_ns);
      if (t.backward) extra += cell(r.extras.backward_ns);
      o += fmt::format("<tr><td>{}</td><td>{}</td><td data-v={} title='{}'>{}</td><td>{}</td><td>{:.1f}</td>"
                       "<td class=heat><div><i style='width:{:.1f}%'></i></div></td>{}<td class=code>{}</td></tr>",
                       r.line, l->hits, l->total_ns, esc(split.empty() ? "no stage" : split), human_ns(l->total_ns),
                       human_ns(l->hits ? l->total_ns / static_cast<std::int64_t>(l->hits) : 0), pct, pct, extra, esc(text));
    }
    o += "</tbody></table>";
  }
  return o;
}

std::string profile_body(const Profile& p, const Analysis& a, bool compact, const ReportOptions& opt = {}) {
  const auto colors = palette(p);
  std::string o;
  o += "<h2>Stage breakdown (median per iteration)</h2>";
  if (a.iterations_unobserved > 0)
    o += fmt::format("<p class=muted>Iteration sampling: torch ops observed in {} of {} iterations; the stage figures are from "
                     "those (median {}). The others took {} (median) without the observer's per-op cost.</p>",
                     a.iterations_used - a.iterations_unobserved, a.iterations_used, human_ns(a.iteration_median_ns),
                     human_ns(a.unobserved_iteration_median_ns));
  o += stage_chart(a, colors);
  o += "<h2>Per-iteration timeline (loop thread)</h2>" + iteration_chart(p, colors);
  if (compact) return o;
  o += "<h2>What-if prefetch</h2>";
  if (a.iterations_used == 0) {
    o += "<p class=muted>No iterations to estimate from.</p>";
  } else {
    o += fmt::format("<p>Exposed data time <b>{}</b> ({:.1f}% of the iteration), compute <b>{}</b>, rest <b>{}</b>. "
                     "With data fully overlapped (max(data, compute) + rest): <b>{}</b> per iteration, <b>{:.2f}x</b> of "
                     "today's {}. Hidden data time already: {}.</p>",
                     human_ns(a.exposed_data_ns), 100 * a.exposed_data_share, human_ns(a.compute_ns), human_ns(a.rest_ns),
                     human_ns(a.whatif_predicted_ns), a.whatif_speedup, human_ns(a.iteration_median_ns), human_ns(a.hidden_data_ns));
    o += fmt::format("<p id=whatif-expected class='{}'>{}</p>", a.whatif_pays ? "" : "slower", esc(whatif_expectation(a)));
  }
  o += "<h2>Stages</h2><table class=sortable><thead><tr><th class=l>stage</th><th class=l>category</th><th>hits</th><th>total</th>"
       "<th>self</th><th>per hit</th><th>p50</th><th>p90</th><th>max</th><th>% wall</th></tr></thead><tbody>";
  for (const auto& s : p.stages)
    o += fmt::format("<tr><td class=l>{}</td><td class=l>{}</td><td>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}</td>"
                     "<td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td>{:.1f}</td></tr>",
                     esc(s.name), esc(s.category), s.hits, s.total_ns, human_ns(s.total_ns), s.self_ns, human_ns(s.self_ns), s.mean_ns,
                     human_ns(s.mean_ns), s.p50_ns, human_ns(s.p50_ns), s.p90_ns, human_ns(s.p90_ns), s.max_ns, human_ns(s.max_ns),
                     s.pct_wall);
  o += fmt::format("<tr><td class=l><i>(unattributed)</i></td><td class=l>-</td><td></td><td data-v={}>{}</td><td></td><td></td><td></td>"
                   "<td></td><td></td><td>{:.1f}</td></tr></tbody></table>",
                   p.unattributed_ns, human_ns(p.unattributed_ns),
                   p.wall_ns > 0 ? 100.0 * static_cast<double>(p.unattributed_ns) / static_cast<double>(p.wall_ns) : 0.0);
  o += "<h2 id=lines>Lines</h2>" + lines_html(p, opt);
  o += "<h2>Transfers</h2>";
  if (p.transfers.empty()) {
    o += "<p class=muted>No copies recorded.</p>";
  } else {
    o += fmt::format("<p>{} copies, {}: pinned {}, pageable {}; {} async, {} sync.</p>", a.transfers.count, human_bytes(a.transfers.bytes),
                     human_bytes(a.transfers.pinned_bytes), human_bytes(a.transfers.pageable_bytes), a.transfers.async_count,
                     a.transfers.sync_count);
    o += "<table class=sortable><thead><tr><th class=l>stage</th><th class=l>line</th><th class=l>dir</th><th class=l>memory</th>"
         "<th class=l>mode</th><th>count</th><th>bytes</th><th>bandwidth</th></tr></thead><tbody>";
    for (const auto& t : p.transfers)
      o += fmt::format("<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td>"
                       "<td data-v={}>{}</td><td>{}</td></tr>",
                       esc(t.stage), t.file.empty() ? "-" : esc(fmt::format("{}:{}", base_name(t.file), t.line)),
                       esc(t.direction), esc(t.memory), esc(t.mode), t.count, t.bytes, human_bytes(t.bytes),
                       t.total_ns > 0 ? fmt::format("{:.2f} GB/s", static_cast<double>(t.bytes) / static_cast<double>(t.total_ns)) : "-");
    o += "</tbody></table>";
  }
  if (!p.kernels.empty()) {
    std::int64_t gpu = 0;
    for (const auto& k : p.kernels) gpu += k.total_ns;
    o += fmt::format("<h2>GPU kernels</h2><p>{} kernels (by name, launching stage and op), {} of GPU time (CUPTI).</p>",
                     p.kernels.size(), human_ns(gpu));
    o += "<table class=sortable><thead><tr><th class=l>kernel</th><th class=l>stage</th><th class=l>op</th><th>calls</th>"
         "<th>total</th><th>mean</th><th>max</th><th>% GPU</th></tr></thead><tbody>";
    for (const auto& k : p.kernels) {
      const std::int64_t mean = k.count ? k.total_ns / static_cast<std::int64_t>(k.count) : 0;
      o += fmt::format("<tr><td class=l title=\"{}\">{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td><td data-v={}>{}</td>"
                       "<td data-v={}>{}</td><td data-v={}>{}</td><td>{:.1f}</td></tr>",
                       esc(k.name), esc(short_kernel_name(k.name, 80)), esc(k.stage), esc(short_op_name(k.op)), k.count, k.total_ns,
                       human_ns(k.total_ns), mean, human_ns(mean), k.max_ns, human_ns(k.max_ns),
                       gpu > 0 ? 100.0 * static_cast<double>(k.total_ns) / static_cast<double>(gpu) : 0.0);
    }
    o += "</tbody></table>";
  }
  if (!p.materializations.empty()) {
    o += "<h2>Materializations</h2><table class=sortable><thead><tr><th class=l>name</th><th class=l>stage</th><th class=l>where</th>"
         "<th>hits</th><th>rows</th><th>bytes</th></tr></thead><tbody>";
    for (const auto& m : p.materializations)
      o += fmt::format("<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td data-v={}>{}</td></tr>",
                       esc(m.name), esc(m.stage), esc(fmt::format("{}:{}", base_name(m.file), m.line)), m.hits,
                       m.rows, m.bytes, human_bytes(m.bytes));
    o += "</tbody></table>";
  }
  if (!p.counters.empty()) {
    o += "<h2>Counters</h2><table><thead><tr><th class=l>counter</th><th>samples</th><th>min</th><th>mean</th><th>max</th><th>last</th></tr>"
         "</thead><tbody>";
    for (const auto& c : p.counters)
      o += fmt::format("<tr><td class=l>{}</td><td>{}</td><td>{:.4g}</td><td>{:.4g}</td><td>{:.4g}</td><td>{:.4g}</td></tr>", esc(c.name),
                       c.samples, c.min, c.mean, c.max, c.last);
    o += "</tbody></table>";
  }
  o += "<h2>Host</h2>" + sparkline(p.host_samples);
  if (a.cpu_utilization) o += fmt::format("<p>{:.0f}% of {} CPUs busy on average.</p>", 100 * *a.cpu_utilization, p.environment.cpus);
  if (!a.device_note.empty()) o += "<p class=muted>Device: " + esc(a.device_note) + "</p>";
  return o;
}

std::string head(const std::string& title) {
  return "<!doctype html><html lang=en><head><meta charset=utf-8><meta name=viewport content='width=device-width,initial-scale=1'>"
         "<title>" + esc(title) + "</title>" + kStyle + "</head><body>";
}

}  // namespace

Status HtmlReporter::render(const Profile& p, std::ostream& out) const {
  const Analysis a = analyze(p, AnalysisOptions{options_.skip});
  const auto diags = diagnose(p, a);
  std::string top = "-";
  double top_share = 0;
  if (!a.loop_stages.empty()) {
    top = a.loop_stages.front().name;
    top_share = a.loop_stages.front().share;
  }
  std::string o = head("gnnprof: " + command_line(p));
  o += "<h1>gnnprof profile</h1><div class=muted>" + esc(command_line(p)) +
       fmt::format(" &middot; pid {} &middot; {} &middot; {} &middot; gnnprof {}</div>", p.run.pid, esc(p.run.host),
                   esc(p.run.start_time), esc(p.tool.version));
  o += "<div class=kpis>";
  o += fmt::format("<div class=kpi id=total-time><b>{}</b><span>total time (wall)</span></div>", human_ns(p.wall_ns));
  o += kpi(human_ns(a.iteration_median_ns), fmt::format("median iteration ({} analyzed)", a.iterations_used));
  o += fmt::format("<div class=kpi id=top-stage><b>{}</b><span>top stage: {:.1f}% of an iteration</span></div>", esc(top), 100 * top_share);
  o += kpi(fmt::format("{:.1f}%", 100 * a.exposed_data_share), "data time exposed");
  o += kpi(fmt::format("{:.2f}x", a.whatif_speedup), "what-if prefetch");
  o += kpi(std::to_string(diags.size()), "diagnostics");
  o += "</div><h2>Diagnostics</h2>" + diagnostics_html(diags);
  o += profile_body(p, a, false, options_);
  o += fmt::format("<h2>Collection</h2><p class=muted>{} events recorded, {} dropped; timeline kept {} ({} more not kept); clock {} "
                   "({:.4f} ticks/ns); collectors: ",
                   p.recorded_events, p.dropped_events, p.timeline.size(), p.timeline_dropped, esc(p.clock.source), p.clock.ticks_per_ns);
  for (const auto& c : p.collectors) o += esc(c.name) + (c.enabled ? " (on) " : " (off: " + c.reason + ") ");
  o += "</p>";
  o += kScript;
  o += "</body></html>\n";
  out << o;
  return out ? Status::ok() : Status::error("write error");
}

Status render_comparison_html(const Comparison& c, const Profile* baseline, const Profile* candidate, std::ostream& out) {
  std::string o = head("gnnprof comparison");
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
  o += kpi(c.verdict, "verdict");
  if (const std::string slow = slower_summary(c); !slow.empty())
    o += "</div><div class='diag error' id=slower>" + esc(slow) + "</div><div>";
  o += "</div><h2>Per stage</h2><table class=sortable><thead><tr><th class=l>metric</th><th class=l>scope</th><th>baseline</th>"
       "<th>candidate</th><th>delta</th><th>ratio</th><th>95% CI</th><th>p</th><th class=l>verdict</th></tr></thead><tbody>";
  for (const auto& m : c.metrics) {
    const std::string cls = m.verdict == "faster" ? "faster" : m.verdict == "slower" ? "slower" : "";
    o += fmt::format("<tr><td class=l>{}</td><td class=l>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}{}</td><td>{}</td>"
                     "<td>{}</td><td>{}</td><td class='l {}'>{}</td></tr>",
                     esc(m.name), esc(m.scope), m.baseline_median_ns, human_ns(m.baseline_median_ns), m.candidate_median_ns,
                     human_ns(m.candidate_median_ns), m.delta_ns, m.delta_ns > 0 ? "+" : "", human_ns(m.delta_ns),
                     m.ratio ? fmt::format("{:.3f}", *m.ratio) : "-",
                     m.ci_low ? fmt::format("{:.3f} – {:.3f}", *m.ci_low, *m.ci_high) : "-",
                     m.p_value < 1e-6 ? "&lt;1e-6" : fmt::format("{:.2g}", m.p_value), cls, esc(m.verdict));
  }
  o += "</tbody></table><p class=muted>Per-iteration samples pooled over runs; first " + std::to_string(c.options.skip) +
       " iterations of each run skipped; CI: bootstrap of the ratio of medians; p: Mann-Whitney U.</p>";
  if (!c.lines.empty()) {
    o += "<h2>Lines</h2><p class=muted>Line tables side by side, matched by file, function and statement text (an edited "
         "statement is paired with its twin); per-iteration medians.</p>";
    std::string fn;
    for (const auto& l : c.lines) {
      const std::string here = base_name(l.file) + ": " + l.function;
      if (here != fn) {
        if (!fn.empty()) o += "</tbody></table>";
        fn = here;
        o += "<h3 class=fn>" + esc(fn) + "</h3><table class='sortable lines'><thead><tr><th>baseline line</th>"
             "<th>candidate line</th><th>baseline</th><th>candidate</th><th>delta</th><th>ratio</th><th>95% CI</th><th>p</th>"
             "<th class=l>verdict</th><th class=l>statement</th></tr></thead><tbody>";
      }
      const MetricComparison& m = l.metric;
      const bool both = l.baseline_line != 0 && l.candidate_line != 0;
      const char* cls = m.verdict == "faster" ? "faster" : m.verdict == "slower" ? "slower" : "";
      std::string code = esc(l.code);
      if (l.match == "edited") code += "<br><span class=muted>&rarr; " + esc(l.candidate_code) + "</span>";
      o += fmt::format("<tr><td>{}</td><td>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td>{}</td>"
                       "<td>{}</td><td>{}</td><td class='l {}'>{}</td><td class=code>{}</td></tr>",
                       l.baseline_line ? std::to_string(l.baseline_line) : "-",
                       l.candidate_line ? std::to_string(l.candidate_line) : "-", m.baseline_median_ns,
                       l.baseline_line ? human_ns(m.baseline_median_ns) : "-", m.candidate_median_ns,
                       l.candidate_line ? human_ns(m.candidate_median_ns) : "-", m.delta_ns,
                       both ? (m.delta_ns > 0 ? "+" : "") + human_ns(m.delta_ns) : "-",
                       both && m.ratio ? fmt::format("{:.3f}", *m.ratio) : "-",
                       both && m.ci_low ? fmt::format("{:.3f} – {:.3f}", *m.ci_low, *m.ci_high) : "-",
                       !both ? "-" : m.p_value < 1e-6 ? "&lt;1e-6" : fmt::format("{:.2g}", m.p_value), cls,
                       esc(l.match == "edited" ? "edited, " + m.verdict : m.verdict), code);
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
    const Analysis a = analyze(*baseline, {}), b = analyze(*candidate, {});
    o += "<h2>Side by side</h2><div class=side><div><h2>baseline</h2>" + profile_body(*baseline, a, true) +
         "</div><div><h2>candidate</h2>" + profile_body(*candidate, b, true) + "</div></div>";
    o += "<h2>What the baseline predicted</h2>" +
         fmt::format("<p>From the baseline profile, full overlap of data with compute predicted <b>{}</b> per iteration "
                     "({:.2f}x); within the machine's limits <b>{}</b> ({:.2f}x); the candidate measured <b>{}</b>{}.</p>",
                     human_ns(a.whatif_predicted_ns), a.whatif_speedup, human_ns(a.whatif_expected_ns),
                     a.whatif_expected_speedup, human_ns(b.iteration_median_ns),
                     c.speedup ? fmt::format(" ({:.2f}x)", *c.speedup) : "");
  }
  o += kScript;
  o += "</body></html>\n";
  out << o;
  return out ? Status::ok() : Status::error("write error");
}

}  // namespace gnnprof::reports
