#include "gnnprof/reports/html_reporter.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/hierarchy.h"
#include "gnnprof/reports/kernel_table.h"
#include "gnnprof/reports/line_table.h"
#include "html_page.h"

namespace gnnprof::reports {

namespace {

using html::esc;
using html::kpi;

std::string color_for(const std::string& category, std::size_t k) {
  static const char* data[] = {"#f28e2b", "#ffbe7d", "#e15759", "#d37295"};
  static const char* compute[] = {"#4e79a7", "#76b7b2", "#59a14f", "#8cd17d"};
  static const char* other[] = {"#b07aa1", "#9c755f", "#bab0ac", "#edc948"};
  if (category == "data") return data[k % 4];
  if (category == "compute") return compute[k % 4];
  if (category == "sync") return "#c62828";
  return other[k % 4];
}

/// A colour per phase, by category (ops are drawn in their phase's colour).
std::map<std::string, std::string> palette(const Hierarchy& h) {
  std::map<std::string, std::string> out;
  std::map<std::string, std::size_t> used;
  for (const auto& ph : h.phases)
    if (!out.count(ph.name)) out.emplace(ph.name, color_for(ph.category, used[ph.category]++));
  return out;
}

/// Width in px that an 11px system-ui label needs (a conservative 6.6 px per character).
int label_px(std::size_t chars) { return static_cast<int>(static_cast<double>(chars) * 6.6) + 14; }

/// Horizontal bars: per-iteration median of each phase (loop thread, then other threads). The
/// label column is as wide as the longest name, so no name is cut.
std::string stage_chart(const Hierarchy& h, const std::map<std::string, std::string>& colors) {
  std::vector<const PhaseNode*> shown, rows;
  for (const auto& ph : h.phases)
    if (ph.median_ns > 0 || ph.mean_ns > 0) shown.push_back(&ph);
  // A phase nested in another (a readback inside a DataLoader's __next__) right under it,
  // marked: its time is part of its parent's bar, not beside it.
  auto nested = [&](const PhaseNode* ph) {
    return !ph->parent.empty() && std::any_of(shown.begin(), shown.end(), [&](const PhaseNode* o) {
      return o != ph && o->name == ph->parent && o->hidden == ph->hidden;
    });
  };
  std::function<void(const PhaseNode*)> place = [&](const PhaseNode* ph) {
    rows.push_back(ph);
    for (const PhaseNode* c : shown)
      if (c != ph && nested(c) && c->parent == ph->name && c->hidden == ph->hidden &&
          std::find(rows.begin(), rows.end(), c) == rows.end())
        place(c);
  };
  for (const PhaseNode* ph : shown)
    if (!nested(ph)) place(ph);
  for (const PhaseNode* ph : shown)  // a cycle of parents: listed as they come
    if (std::find(rows.begin(), rows.end(), ph) == rows.end()) rows.push_back(ph);
  auto depth = [&](const PhaseNode* ph) {
    int d = 0;
    for (const PhaseNode* at = ph; nested(at) && d < 4;) {
      ++d;
      auto up = std::find_if(shown.begin(), shown.end(), [&](const PhaseNode* o) { return o->name == at->parent && o->hidden == at->hidden; });
      at = *up;
    }
    return d;
  };
  if (rows.empty()) return "<p class=muted>No iterations: mark them with gnnprof.step() (Python), GNNPROF_STEP() (C++), or "
                           "let the torch observer find them at the optimizer's step.</p>";
  std::int64_t mx = 1;
  std::size_t chars = 0;
  for (const auto* r : rows) {
    mx = std::max(mx, r->median_ns);
    chars = std::max(chars, r->name.size() + (r->hidden ? 9 : 0) + 3 * static_cast<std::size_t>(depth(r)));
  }
  const int label = std::max(120, label_px(chars)), bar_h = 18, gap = 6, value = 130;
  const int w = std::max(760, label + 300 + value);
  const int height = static_cast<int>(rows.size()) * (bar_h + gap) + 10;
  std::string svg = fmt::format("<svg id=stage-chart viewBox='0 0 {} {}' width='{}' role=img aria-label='stage breakdown'>", w, height, w);
  int y = 4;
  for (const auto* s : rows) {
    const double frac = static_cast<double>(s->median_ns) / static_cast<double>(mx);
    const int bw = std::max(1, static_cast<int>(frac * (w - label - value)));
    auto c = colors.find(s->name);
    const int d = depth(s);
    std::string arrow;
    for (int i = 0; i < d; ++i) arrow += i + 1 == d ? "\u21b3 " : "  ";
    svg += fmt::format("<text class=label x='{}' y='{}' text-anchor=end>{}{}{}</text>", label - 6 - 14 * std::max(0, d - 1), y + 13,
                       arrow, esc(s->name), s->hidden ? " (hidden)" : "");
    svg += fmt::format("<rect x='{}' y='{}' width='{}' height='{}' fill='{}'{}><title>{}: median {} per iteration{}</title></rect>",
                       label, y, bw, bar_h, c == colors.end() ? "#999" : c->second,
                       s->hidden ? " opacity='.45'" : d > 0 ? " opacity='.7'" : "", esc(s->name), human_ns(s->median_ns),
                       d > 0 ? esc(", inside " + s->parent + " (part of its bar)") : "");
    // A stage of a few iterations only (an evaluation's, a restart's): its median is 0, its mean says how much.
    svg += s->median_ns == 0 && s->mean_ns > 0
               ? fmt::format("<text x='{}' y='{}'>0 ns median (in half the iterations or fewer: mean {})</text>", label + bw + 6, y + 13,
                             human_ns(s->mean_ns))
               : fmt::format("<text x='{}' y='{}'>{} ({:.1f}%)</text>", label + bw + 6, y + 13, human_ns(s->median_ns), 100 * s->share);
    y += bar_h + gap;
  }
  return svg + "</svg>";
}

/// Stacked bars per iteration (loop thread) + unattributed, downsampled to <= 300 columns.
std::string iteration_chart(const Profile& p, const std::map<std::string, std::string>& colors) {
  // Phases only (those in the palette): an op's time is inside its phase's bar.
  std::vector<const IterationStats*> its;
  for (const auto& it : p.iterations)
    if (it.complete) its.push_back(&it);
  if (its.empty()) {
    if (const std::string own = own_session_note(p); !own.empty())
      return "<p class=muted>No complete iterations here: " + esc(own) + ".</p>";
    return "<p class=muted>No complete iterations.</p>";
  }
  std::map<std::string, std::string> category;
  for (const auto& s : p.stages) category.emplace(s.name, s.category);
  std::set<std::string> names;
  for (const auto* it : its)
    for (const auto& [n, v] : it->stages)
      if (colors.count(n)) names.insert(n);
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
    std::size_t first = 0, last = 0, unobserved = 0, n = 0;
  };
  bool any_unobserved = false;
  std::vector<Col> data;
  for (std::size_t i = 0; i < its.size(); i += per) {
    Col c;
    const std::size_t end = std::min(its.size(), i + per);
    for (std::size_t j = i; j < end; ++j) {
      for (const auto& [n, v] : its[j]->stages)
        if (colors.count(n)) c.v[n] += static_cast<double>(v);  // inclusive, as recorded
      c.un += static_cast<double>(its[j]->unattributed_ns);
      c.wall += static_cast<double>(its[j]->wall_ns);
      if (!its[j]->ops_observed) ++c.unobserved;
    }
    c.n = end - i;
    any_unobserved = any_unobserved || c.unobserved > 0;
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
    // Iteration sampling: an unobserved iteration holds its scopes only; the rest is not
    // "unattributed" but unknown.
    if (c.unobserved == c.n) tip += " (torch ops not observed: iteration sampling)";
    else if (c.unobserved > 0) tip += fmt::format(" ({} of {} without observed torch ops)", c.unobserved, c.n);
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
    if (c.unobserved == c.n) bar(c.un, "#eef0f4", "not observed");
    else bar(c.un, "#cfd5de", "unattributed");
    if (heights[i] > mx)
      svg += fmt::format("<rect x='{:.2f}' y='{}' width='{:.2f}' height='3' fill='#1d2330'><title>{} (clipped)</title></rect>", x, top,
                         std::max(0.5, cw - (cw > 3 ? 1 : 0)), esc(tip));
  }
  svg += fmt::format("<text x='{}' y='{}'>iteration {}</text><text x='{}' y='{}' text-anchor=end>{}</text>", left, h - 6,
                     data.front().first, w - 10, h - 6, data.back().last);
  svg += "</svg><div class=legend>";
  for (const auto& n : order)
    svg += fmt::format("<span><i style='background:{}'></i>{}</span>", colors.count(n) ? colors.at(n) : "#999", esc(n));
  svg += "<span><i style='background:#cfd5de'></i>unattributed</span>";
  if (any_unobserved) svg += "<span><i style='background:#eef0f4'></i>not observed (iteration sampling: torch ops not watched)</span>";
  svg += "</div>";
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
    o += fmt::format("<div class='diag {}'><b>{}</b> <code>{}</code><br>{}{}</div>", to_string(d.severity), to_string(d.severity), esc(d.id),
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
  if (const std::string cost = tracing_cost_note(p); !cost.empty()) o += "<p>" + esc(cost) + "</p>";
  if (const std::string own = own_work_note(p); !own.empty()) o += "<p class=muted>" + esc(own) + "</p>";
  std::string extra_head;
  if (t.copied) extra_head += "<th>copied</th>";
  if (t.gathered) extra_head += "<th>gathered</th>";
  if (t.gpu) extra_head += "<th>GPU</th>";
  if (t.data) extra_head += "<th>data</th>";
  if (t.wait) extra_head += "<th>wait</th>";
  if (t.backward) extra_head += "<th>backward</th>";
  for (const LineBlock& b : t.blocks) {
    o += fmt::format("<h3 class=fn>{} <span class=muted>{} &middot; {}</span></h3>", esc(b.function), esc(b.file), human_ns(b.total_ns));
    if (b.source_changed) o += "<p class=muted>Source changed since the profile was taken; the recorded statements only.</p>";
    else if (!b.source_found) o += "<p class=muted>Source not found; the recorded statements only.</p>";
    o += "<div class=scroll><table class=src><thead><tr><th>line</th><th>hits</th><th>time</th><th>per hit</th><th>%</th><th class=l></th>" +
         extra_head + "<th class=l>source</th></tr></thead><tbody>";
    for (const LineRow& r : b.rows) {
      const LineStats* l = r.stats;
      std::string text = r.text;
      if (!b.source_found && l != nullptr) text = l->code;
      if (l == nullptr) {
        std::string empty;
        for (int k = 0; k < t.extra_count(); ++k) empty += "<td></td>";
        o += fmt::format("<tr class=idle><td>{}</td><td></td><td></td><td></td><td></td><td></td>{}<td class=code>{}</td></tr>",
                         r.line, empty, esc(text));
        continue;
      }
      const std::int64_t time = r.time_ns;
      const bool paced = r.paced;
      const std::string pace_mark = paced ? "~" : "";
      const double pct = r.pct;
      std::string split;
      for (const auto& [name, ns] : l->stages) split += fmt::format("{}{} {}", split.empty() ? "" : ", ", name, human_ns(ns));
      // An estimated row (iteration sampling): "~" and why, on each non-empty extra cell.
      const std::string mark = estimate_mark(r.extras);
      const std::string why =
          r.extras.estimated
              ? fmt::format(" title='estimated: torch ops observed in {} of the line&apos;s {} hits, scaled to all of them'",
                            l->hits - l->unobserved_hits, l->hits)
              : std::string();
      const std::string none = r.extras.unknown ? "<td title='not known: torch ops were observed in none of its hits'>?</td>"
                                                : std::string("<td></td>");
      auto text_cell = [&](const std::string& v) { return v.empty() ? none : "<td" + why + ">" + mark + esc(v) + "</td>"; };
      auto cell = [&](std::int64_t ns) {
        return ns > 0 ? fmt::format("<td data-v={}{}>{}{}</td>", ns, why, mark, human_ns(ns)) : none;
      };
      std::string extra;
      if (t.copied) extra += text_cell(copied_cell(r.extras));
      if (t.gathered) extra += text_cell(r.extras.gathered > 0 ? human_bytes(r.extras.gathered) : std::string());
      if (t.gpu) extra += cell(r.extras.gpu_ns);
      if (t.data) extra += cell(r.extras.data_ns);
      if (t.wait) extra += cell(r.extras.wait_ns);
      if (t.backward) extra += cell(r.extras.backward_ns);
      const std::string title = esc(split.empty() ? "no stage" : split) +
                                (paced ? esc(fmt::format("; at the unobserved pace (measured {})", human_ns(l->total_ns))) : "");
      o += fmt::format("<tr><td>{}</td><td>{}</td><td data-v={} title='{}'>{}{}</td><td>{}{}</td><td>{:.1f}</td>"
                       "<td class=heat><div><i style='width:{:.1f}%'></i></div></td>{}<td class=code>{}</td></tr>",
                       r.line, l->hits, time, title, pace_mark, human_ns(time), pace_mark,
                       human_ns(l->hits ? time / static_cast<std::int64_t>(l->hits) : 0), pct, pct, extra, esc(text));
    }
    o += "</tbody></table></div>";
    if (const std::string pace = observer_pace_note(b); !pace.empty()) o += "<p class=muted>" + esc(pace) + "</p>";
    if (const std::string began = began_note(b); !began.empty()) o += "<p class=muted>" + esc(began) + "</p>";
    if (const std::string under = caller_note(p, b); !under.empty()) o += "<p class=muted>" + esc(under) + "</p>";
    if (const std::string off = off_loop_note(b); !off.empty()) o += "<p class=muted>" + esc(off) + "</p>";
  }
  if (const std::string hint = callee_hint(t); !hint.empty()) o += "<p id=callee-hint>" + esc(hint) + "</p>";
  return o;
}

/// `hex` (#rrggbb) mixed with white: an op's shade of its phase's colour.
std::string lighten(const std::string& hex, double f) {
  if (hex.size() != 7) return hex;
  std::string o = "#";
  for (int i = 0; i < 3; ++i) {
    const int v = std::stoi(hex.substr(1 + 2 * i, 2), nullptr, 16);
    o += fmt::format("{:02x}", static_cast<int>(v + (255 - v) * f));
  }
  return o;
}

/// The hierarchy as one picture: iteration -> phases -> ops (and a phase's traced lines), drawn
/// by report.js from the JSON here. Widths are mean time per iteration, so siblings add up.
std::string hierarchy_view(const Hierarchy& h, const std::map<std::string, std::string>& colors) {
  if (h.iteration_mean_ns <= 0 || h.phases.empty()) return "<p class=muted>No iterations to draw.</p>";
  using nlohmann::json;
  auto per_iter = [](std::int64_t part, std::int64_t whole, std::int64_t mean) {
    return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) * static_cast<double>(mean) : 0.0;
  };
  std::map<std::string, json> nodes;
  std::vector<std::string> order;
  for (const auto& ph : h.phases) {
    if (ph.hidden || ph.mean_ns <= 0) continue;
    const std::string c = colors.count(ph.name) ? colors.at(ph.name) : "#999999";
    json n = {{"n", ph.name}, {"k", "phase"}, {"v", ph.mean_ns}, {"c", c}, {"children", json::array()}, {"lines", json::array()}};
    std::string tip = fmt::format("{}: {} per iteration (mean; median {}), {:.1f}% of an iteration", ph.name, human_ns(ph.mean_ns),
                                  human_ns(ph.median_ns),
                                  100.0 * static_cast<double>(ph.mean_ns) / static_cast<double>(h.iteration_mean_ns));
    if (!ph.ops.empty()) tip += fmt::format("; {} ops, the heaviest {} ({:.1f}% of it by self time)", ph.op_count, ph.ops.front().label,
                                           100 * ph.ops.front().share);
    n["t"] = tip;
    for (const auto& op : ph.ops)
      n["children"].push_back({{"n", op.label},
                               {"k", "op"},
                               {"v", op.share * static_cast<double>(ph.mean_ns)},
                               {"c", lighten(c, 0.45)},
                               {"t", fmt::format("{} in {}: {} hits, {} self over the run ({} per hit), {:.1f}% of {}", op.label,
                                                 ph.name, op.hits, human_ns(op.self_ns),
                                                 human_ns(op.hits ? op.self_ns / static_cast<std::int64_t>(op.hits) : 0),
                                                 100 * op.share, ph.name)}});
    if (ph.other.hits > 0)
      n["children"].push_back({{"n", fmt::format("other ops ({})", ph.other.hits)},
                               {"k", "other"},
                               {"v", ph.other.share * static_cast<double>(ph.mean_ns)},
                               {"c", lighten(c, 0.7)},
                               {"t", fmt::format("{} more ops in {}: {} self over the run, {:.1f}% of it", ph.other.hits, ph.name,
                                                 human_ns(ph.other.self_ns), 100 * ph.other.share)}});
    for (const auto& l : ph.lines)
      n["lines"].push_back({{"n", fmt::format("{}: {}", l.line, l.code)},
                            {"k", "line"},
                            {"v", per_iter(l.ns, ph.total_ns, ph.mean_ns)},
                            {"c", "#f4c7c3"},
                            {"t", fmt::format("{}:{} {}: {} of {} over the run ({:.1f}%)", base_name(l.file), l.line, l.code,
                                              human_ns(l.ns), ph.name, 100 * l.share)}});
    nodes[ph.name] = std::move(n);
    order.push_back(ph.name);
  }
  json root = {{"n", "iteration"}, {"k", "iteration"}, {"v", h.iteration_mean_ns}, {"c", "#d8dde6"}, {"children", json::array()}};
  root["t"] = fmt::format("Mean iteration {} (median {}). Click a phase for its ops and traced lines; click the top bar to go back.",
                          human_ns(h.iteration_mean_ns), human_ns(h.iteration_median_ns));
  // A phase nested in another (a record_function scope around forward) goes under it; the
  // deepest first, so a node moves with its own children already attached.
  std::map<std::string, std::string> parent;
  for (const auto& x : h.phases)
    if (!x.hidden && nodes.count(x.name) && nodes.count(x.parent) && x.parent != x.name) parent[x.name] = x.parent;
  auto depth = [&](std::string n) {
    int d = 0;
    for (auto f = parent.find(n); f != parent.end() && d <= static_cast<int>(parent.size()); f = parent.find(f->second)) ++d;
    return d;  // a cycle stops at parent.size() + 1
  };
  std::vector<std::string> nested;
  for (const auto& [child, par] : parent) nested.push_back(child);
  std::stable_sort(nested.begin(), nested.end(), [&](const std::string& a, const std::string& b) { return depth(a) > depth(b); });
  for (const auto& child : nested) {
    const std::string& par = parent[child];
    if (depth(child) > static_cast<int>(parent.size())) continue;  // a cycle: both stay top-level
    auto& kids = nodes[par]["children"];
    kids.insert(kids.begin(), std::move(nodes[child]));
    nodes.erase(child);
  }
  for (const auto& name : order)
    if (nodes.count(name)) root["children"].push_back(std::move(nodes[name]));
  if (h.unattributed_mean_ns > 0)
    root["children"].push_back({{"n", "unattributed"},
                                {"k", "unattributed"},
                                {"v", h.unattributed_mean_ns},
                                {"c", "#eef0f4"},
                                {"t", fmt::format("unattributed: {} per iteration (mean): loop-thread time outside every stage",
                                                  human_ns(h.unattributed_mean_ns))}});
  std::string data;  // '<' as \u003c: no name can end the script element or open a comment in it
  for (char ch : root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) data += ch == '<' ? std::string("\\u003c") : std::string(1, ch);
  return "<div id=icicle class=icicle></div><div id=icicle-info></div><script type='application/json' id=icicle-data>" + data +
         "</script>";
}

/// The stage table: one row per phase; its ops (top N and "other ops") in the same group,
/// folded until the phase's button opens them.
std::string stage_table(const Profile& p, const Hierarchy& h) {
  std::string o =
      "<table class=sortable id=stage-table><thead><tr><th class=l>stage</th><th class=l>category</th><th>hits</th><th>total</th>"
      "<th>self</th><th>per hit</th><th>p50</th><th>p90</th><th>max</th><th>% wall</th>"
      "<th title='time per iteration over the iteration (means of the analysed iterations, loop thread)'>% iter</th></tr></thead>";
  auto pct_cell = [](double pct) { return pct < 0 ? std::string("<td data-v=-1>-</td>") : fmt::format("<td>{:.1f}</td>", pct); };
  for (const PhaseNode* ph : phase_rows(h)) {
    const StageStats& s = ph->stats;
    std::string tog;
    if (ph->op_count > 0) {
      const std::string label = fmt::format("{} op{}", ph->op_count, ph->op_count == 1 ? "" : "s");
      tog = fmt::format(" <button class=tog aria-expanded=false data-label='{}'>&#9656; {}</button>", label, label);
    }
    // A nested phase (checkpoint recompute inside backward) indented under the one it runs in.
    const int depth = phase_depth(*ph, h);
    o += fmt::format("<tbody><tr class=phase><td class=l data-v=\"{}\"{}>{}{}</td><td class=l>{}</td><td>{}</td><td data-v={}>{}</td>"
                     "<td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td data-v={}>{}</td>"
                     "<td>{:.1f}</td>{}</tr>",
                     esc(ph->name),
                     depth > 0 ? fmt::format(" style='padding-left:{}em' title='runs inside {}'", 1.2 * depth, esc(ph->parent)) : "",
                     esc(ph->name) + (ph->sampled ? " *" : ""), tog, esc(ph->category), s.hits, s.total_ns,
                     human_ns(s.total_ns), s.self_ns,
                     human_ns(s.self_ns), s.mean_ns, human_ns(s.mean_ns), s.p50_ns, human_ns(s.p50_ns), s.p90_ns, human_ns(s.p90_ns),
                     s.max_ns, human_ns(s.max_ns), s.pct_wall, pct_cell(iteration_pct(*ph, h)));
    auto op_row = [&](const OpNode& op, const std::string& label, bool other) {
      o += fmt::format("<tr class='op{}' hidden><td class=l title=\"{}\">{}</td><td class=l>op</td><td>{}</td><td data-v={}>{}</td>"
                       "<td data-v={}>{}</td><td>{}</td><td class=l colspan=3>{:.1f}% of {}</td><td></td><td></td></tr>",
                       other ? " other" : "", esc(op.name), esc(label), other ? "" : std::to_string(op.hits), op.total_ns,
                       human_ns(op.total_ns), op.self_ns, human_ns(op.self_ns),
                       other || op.hits == 0 ? "" : human_ns(op.total_ns / static_cast<std::int64_t>(op.hits)), 100 * op.share,
                       esc(ph->name));
    };
    for (const auto& op : ph->ops) op_row(op, op.label, false);
    if (ph->other.hits > 0) op_row(ph->other, fmt::format("other ops ({})", ph->other.hits), true);
    o += "</tbody>";
  }
  o += fmt::format("<tbody><tr><td class=l><i>(unattributed)</i></td><td class=l>-</td><td></td><td data-v={}>{}</td><td></td><td></td>"
                   "<td></td><td></td><td></td><td>{:.1f}</td>{}</tr></tbody></table>",
                   p.unattributed_ns, human_ns(p.unattributed_ns),
                   p.wall_ns > 0 ? 100.0 * static_cast<double>(p.unattributed_ns) / static_cast<double>(p.wall_ns) : 0.0,
                   pct_cell(unattributed_iteration_pct(h)));
  if (h.analysed_iterations > 0)
    o += fmt::format("<p class=muted>% iter: time per iteration over the iteration (means of the {} analysed iterations, loop "
                     "thread). Total and % wall cover the whole run: {} before the first iteration, {} after the last{}.</p>",
                     h.analysed_iterations, human_ns(h.before_loop_ns), human_ns(h.after_loop_ns), esc(between_text(h)));
  for (const PhaseNode* ph : phase_rows(h))
    if (ph->sampled) {
      o += fmt::format("<p class=muted>* recorded in the {} of {} iterations whose torch ops were observed (iteration "
                       "sampling): its total and % wall cover those, the other stages every iteration.</p>",
                       h.observed_iterations, h.complete_iterations);
      break;
    }
  if (h.op_stages > 0)
    o += fmt::format("<p class=muted>{} torch op stages ran inside these phases: a phase's button lists its top {} by self time and "
                     "the rest as one row.{}</p>",
                     h.op_stages, h.top_ops, h.edges ? "" : " (This profile predates gnnprof recording which phase each op ran in.)");
  return o;
}

}  // namespace

std::string html::profile_body(const Report& r, bool compact) {
  const Profile& p = *r.profile;
  const Analysis& a = r.analysis;
  const ReportOptions& opt = r.options;
  const Hierarchy& h = r.hierarchy;
  const auto colors = palette(h);
  std::string o;
  // Traced lines open the body, as the line table opens the text report; without any, the
  // section (its hint) stays after the stages.
  const bool lines_first = !compact && !p.lines.empty();
  if (lines_first) o += "<h2 id=lines>Lines</h2>" + lines_html(p, opt);
  if (!compact)
    o += "<h2>Where an iteration goes</h2><p class=muted>Iteration &rarr; phases &rarr; ops (and a phase's traced lines); widths "
         "are mean time per iteration. Click to zoom in, click the top bar to zoom out.</p>" +
         hierarchy_view(h, colors);
  o += "<h2>Stage breakdown (median per iteration)</h2>";
  if (a.iterations_unobserved > 0)
    o += "<p class=muted>" + esc(sampling_note(a)) + "</p>";
  o += stage_chart(h, colors);
  o += "<h2>Per-iteration timeline (loop thread)</h2>" + iteration_chart(p, colors);
  if (compact) return o;
  o += "<h2>What-if prefetch</h2>";
  if (a.iterations_used == 0) {
    o += "<p class=muted>No iterations to estimate from.</p>";
  } else if (a.loader_worker) {
    o += "<p class=muted id=loader-worker>" + esc(loader_worker_note(a)) + "</p>";
  } else {
    o += fmt::format("<p>Exposed data time <b>{}</b> ({:.1f}% of the iteration), compute <b>{}</b>, rest <b>{}</b>. "
                     "With data fully overlapped ({}): <b>{}</b> per iteration, <b>{:.2f}x</b> of "
                     "today's {}. Hidden data time already: {}.</p>",
                     human_ns(a.exposed_data_ns), 100 * a.exposed_data_share, human_ns(a.compute_ns), human_ns(a.rest_ns),
                     esc(whatif_formula(a)), human_ns(a.whatif_predicted_ns), a.whatif_speedup, human_ns(a.iteration_median_ns), human_ns(a.hidden_data_ns));
    o += fmt::format("<p id=whatif-expected class='{}'>{}</p>", a.whatif_pays ? "" : "slower", esc(whatif_expectation(a)));
  }
  o += "<h2>Stages</h2><div class=scroll>" + stage_table(p, h) + "</div>";
  if (!lines_first) o += "<h2 id=lines>Lines</h2>" + lines_html(p, opt);
  const std::string sampled = sampled_ops_note(p);
  const std::string sampled_p = sampled.empty() ? "" : "<p class=muted>" + esc(sampled) + "</p>";
  const std::string sampled_gpu = sampled_ops_note(p, true);
  const std::string sampled_gpu_p = sampled_gpu.empty() ? "" : "<p class=muted>" + esc(sampled_gpu) + "</p>";
  o += "<h2>Transfers</h2>";
  if (p.transfers.empty()) {
    o += "<p class=muted id=no-transfers>" + esc(no_transfers_hint(p)) + "</p>";
  } else {
    o += fmt::format("<p>{} copies, {}: pinned {}, pageable {}; {} async, {} sync.</p>", a.transfers.count, human_bytes(a.transfers.bytes),
                     human_bytes(a.transfers.pinned_bytes), human_bytes(a.transfers.pageable_bytes), a.transfers.async_count,
                     a.transfers.sync_count);
    if (!a.gpu_copies.empty()) o += "<p>GPU copy time (CUPTI): " + esc(gpu_copy_rates(a)) + ".</p>";
    o += sampled_gpu_p;
    o += "<table class=sortable><thead><tr><th class=l>stage</th><th class=l>line</th><th class=l>dir</th><th class=l>memory</th>"
         "<th class=l>mode</th><th>count</th><th>bytes</th><th>bandwidth</th></tr></thead><tbody>";
    for (const auto& t : p.transfers)
      o += fmt::format("<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td>"
                       "<td data-v={}>{}</td><td>{}</td></tr>",
                       esc(t.stage), t.file.empty() ? "-" : esc(fmt::format("{}:{}", base_name(t.file), t.line)),
                       to_string(t.direction), to_string(t.memory), to_string(t.mode), t.count, t.bytes, human_bytes(t.bytes),
                       t.total_ns > 0 ? fmt::format("{:.2f} GB/s", static_cast<double>(t.bytes) / static_cast<double>(t.total_ns)) : "-");
    o += "</tbody></table>";
  }
  if (p.kernels.empty()) o += "<h2>GPU kernels</h2><p class=muted id=no-kernels>" + esc(no_kernels_hint(p)) + "</p>";
  if (!p.kernels.empty()) {
    std::int64_t gpu = 0;
    for (const auto& k : p.kernels) gpu += k.total_ns;
    const std::vector<KernelRow> rows = kernel_rows(p, !sampled_gpu.empty());
    o += fmt::format("<h2>GPU kernels</h2><p>{} kernels (by name, launching stage and op), {} of GPU time (CUPTI).</p>",
                     rows.size(), human_ns(gpu));
    o += sampled_gpu_p;
    if (std::any_of(rows.begin(), rows.end(), [](const KernelRow& k) { return k.estimated; }))
      o += "<p class=muted>" + esc(kKernelShareNote) + ".</p>";
    o += "<table class=sortable><thead><tr><th class=l>kernel</th><th class=l>stage</th><th class=l>op</th><th>calls</th>"
         "<th>total</th><th>mean</th><th>max</th><th>% GPU</th></tr></thead><tbody>";
    for (const auto& k : rows) {
      const std::int64_t mean = k.count ? k.total_ns / static_cast<std::int64_t>(k.count) : 0;
      const std::string mark = k.estimated ? "~" : "";
      o += fmt::format("<tr><td class=l title=\"{}\">{}</td><td class=l>{}</td><td class=l>{}</td><td data-v={}>{}{}</td>"
                       "<td data-v={}>{}{}</td><td data-v={}>{}</td><td data-v={}>{}</td><td>{:.1f}</td></tr>",
                       esc(k.name), esc(short_kernel_name(k.name, 80)), esc(k.stage), esc(short_op_name(k.op)), k.count, mark,
                       k.count, k.total_ns, mark, human_ns(k.total_ns), mean, human_ns(mean), k.max_ns, human_ns(k.max_ns),
                       gpu > 0 ? 100.0 * static_cast<double>(k.total_ns) / static_cast<double>(gpu) : 0.0);
    }
    o += "</tbody></table>";
  }
  if (p.materializations.empty())
    o += "<h2>Materializations</h2><p class=muted id=no-materializations>" +
         esc(no_materializations_hint(p) + workers_gathered_note(r.workers)) + "</p>";
  if (!p.materializations.empty()) {
    o += "<h2>Materializations</h2>" + sampled_p + "<table class=sortable><thead><tr><th class=l>name</th><th class=l>stage</th><th class=l>where</th>"
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
  if (a.cpu_utilization)
    o += fmt::format("<p>{:.0f}% of {} busy on average{}{}.</p>", 100 * *a.cpu_utilization, cpus_text(p.environment.cpus),
                     a.worker_wait_ns > 0 ? " (this process; its DataLoader workers are processes of their own)" : "",
                     esc(other_processes_text(a)));
  if (!a.device_note.empty()) o += "<p class=muted>Device: " + esc(a.device_note) + "</p>";
  if (a.gpu_busy) o += "<p>Device: " + esc(gpu_busy_sentence(a)) + ".</p>";
  return o;
}

Status HtmlReporter::render(const Report& r, std::ostream& out) const {
  const Profile& p = *r.profile;
  const Analysis& a = r.analysis;
  const auto& diags = r.diagnostics;
  std::string top = "-";
  double top_share = 0;
  if (!a.loop_stages.empty()) {
    top = a.loop_stages.front().name;
    top_share = a.loop_stages.front().share;
  }
  std::string o = html::page_head("gnnprof: " + command_line(p));
  o += "<h1>gnnprof profile</h1><div class=muted>" + esc(command_line(p)) +
       fmt::format(" &middot; pid {} &middot; {} &middot; {} &middot; gnnprof {}</div>", p.run.pid, esc(p.run.host),
                   esc(p.run.start_time), esc(p.tool.version));
  if (p.run.failed()) o += "<div class=diag id=failed-run>The program " + esc(exit_text(p.run)) + ": a failed run's profile.</div>";
  o += "<div class=kpis>";
  o += fmt::format("<div class=kpi id=total-time><b>{}</b><span>total time (wall)</span></div>", human_ns(p.wall_ns));
  o += kpi(human_ns(a.run_iteration_median_ns),
           fmt::format("median {} ({} analyzed){}", a.loader_worker ? "batch fetched" : "iteration", a.iterations_used,
                       a.backward_passes && *a.backward_passes >= 1.5
                           ? fmt::format(": {:.1f} backward passes each (one optimizer step)", *a.backward_passes)
                           : ""));
  o += fmt::format("<div class=kpi id=top-stage><b>{}</b><span>top stage: {:.1f}% of an iteration (median)</span></div>", esc(top), 100 * top_share);
  if (!a.loader_worker) {
    o += kpi(fmt::format("{:.1f}%", 100 * a.exposed_data_share), "data time exposed");
    o += kpi(fmt::format("{:.2f}x", a.whatif_speedup), "what-if prefetch");
  }
  o += kpi(std::to_string(diags.size()), "diagnostics");
  const LineTable lines = build_line_table(p, r.options.source_roots, r.options.max_function_lines);
  const LineRow* heaviest = nullptr;
  const LineBlock* heaviest_in = nullptr;
  // As the text's heaviest lines: not a line whose time is mostly traced lines under it, unless all are.
  auto pick = [&](bool skip_holders) {
    for (const LineBlock& b : lines.blocks)
      for (const LineRow& row : b.rows) {
        if (row.stats == nullptr || (skip_holders && holds_traced_lines(*row.stats))) continue;
        if (heaviest == nullptr || row.time_ns > heaviest->time_ns) {
          heaviest = &row;
          heaviest_in = &b;
        }
      }
  };
  pick(true);
  if (heaviest == nullptr) pick(false);
  if (heaviest != nullptr)
    o += fmt::format("<a class=kpi id=top-line href='#lines' title='{}'><b>{}:{}</b><span>heaviest line: {:.1f}% of {}</span></a>",
                     esc(heaviest->stats->code), esc(base_name(heaviest->stats->file)), heaviest->stats->line,
                     heaviest->pct,
                     esc(heaviest_in->function));
  o += "</div><h2>Diagnostics</h2>" + diagnostics_html(diags);
  if (const LoaderWorkers& w = r.workers; !w.empty()) {
    o += "<h2>DataLoader workers</h2><p id=loader-workers>" + esc(loader_workers_text(w)) + "</p>";
    if (!w.top_lines.empty()) {
      o += "<table class=sortable><thead><tr><th class=l>line</th><th class=l>function</th><th>hits</th><th>time</th>"
           "<th>% of batch time</th><th class=l>statement</th></tr></thead><tbody>";
      for (const WorkerLine& l : w.top_lines)
        o += fmt::format("<tr><td class=l>{}</td><td class=l>{}</td><td>{}</td><td data-v={}>{}</td><td data-v={:.4f}>{}</td>"
                         "<td class='l code'>{}</td></tr>",
                         esc(fmt::format("{}:{}", base_name(l.file), l.line)), esc(l.function), l.hits, l.total_ns,
                         human_ns(l.total_ns), 100 * l.share, esc(worker_line_share(l)), esc(l.code));
      const std::string note = worker_lines_note(w);
      o += "</tbody></table><p class=muted>All workers together; a line's time includes its callees. " + esc(note) +
           (note.empty() ? "" : " ") + "Each worker's own report: <code>gnnprof report</code> of its profile.</p>";
    }
  }
  o += html::profile_body(r, false);
  o += fmt::format("<h2>Collection</h2><p class=muted>{} events recorded, {} dropped; timeline kept {} ({} more not kept); clock {} "
                   "({:.4f} ticks/ns); collectors: ",
                   p.recorded_events, p.dropped_events, p.timeline.size(), p.timeline_dropped, esc(p.clock.source), p.clock.ticks_per_ns);
  for (const auto& c : p.collectors) o += esc(c.name) + (c.enabled ? " (on) " : " (off: " + c.reason + ") ");
  o += "</p>";
  o += html::page_end();
  out << o;
  return out ? Status::ok() : Status::error("write error");
}

}  // namespace gnnprof::reports
