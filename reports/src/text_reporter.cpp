#include "gnnprof/reports/text_reporter.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>
#include <regex>
#include <set>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/hierarchy.h"
#include "gnnprof/reports/kernel_table.h"
#include "gnnprof/reports/line_table.h"
#include "gnnprof/order_stats.h"

namespace gnnprof::reports {

namespace {
/// Why nothing was analysed: no complete iteration, or --skip took them all.
std::string no_iterations_text(const Analysis& a) {
  if (a.iterations_total > 0 && a.skipped >= a.iterations_total)
    return fmt::format("No complete iterations to analyze: the warm-up skipped (--skip) took all {} of the run's.",
                       a.iterations_total);
  return "No complete iterations to analyze.";
}
}  // namespace

void TextReporter::render_line_table(const Profile& p, std::ostream& out) const {
  const LineTable t = build_line_table(p, options_.source_roots, options_.max_function_lines);
  if (t.blocks.empty()) {
    out << no_lines_hint(p) << "\n";
    return;
  }
  // line_profiler's layout; gnnprof's columns go between % Time and Line Contents, only those
  // with data somewhere in the profile.
  out << "Timer unit: 1e-06 s\n";
  std::string extra_head;
  if (t.copied) extra_head += fmt::format(" {:>18}", "Copied");
  if (t.gathered) extra_head += fmt::format(" {:>10}", "Gathered");
  if (t.gpu) extra_head += fmt::format(" {:>10}", "GPU");
  if (t.data) extra_head += fmt::format(" {:>10}", "Data");
  if (t.wait) extra_head += fmt::format(" {:>10}", "Wait");
  if (t.backward) extra_head += fmt::format(" {:>10}", "Backward");
  if (t.any_extra()) out << "Beyond line_profiler: " << extra_columns_legend(t) << " (times in the timer unit)\n";
  if (const std::string cost = tracing_cost_note(p); !cost.empty()) out << cost << "\n";
  if (const std::string own = own_work_note(p); !own.empty()) out << own << "\n";
  const std::string header = fmt::format("{:>6} {:>9} {:>12} {:>8} {:>8}{}  {}", "Line #", "Hits", "Time", "Per Hit",
                                         "% Time", extra_head, "Line Contents");
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1e3; };
  for (const LineBlock& b : t.blocks) {
    out << "\n" << fmt::format("Total time: {:g} s\n", static_cast<double>(b.total_ns) / 1e9);
    out << "File: " << b.file << "\n";
    out << "Function: " << b.function << " at line " << b.first << "\n\n";
    out << header << "\n" << std::string(header.size(), '=') << "\n";
    if (b.source_changed)
      out << "(source changed since the profile was taken: " << b.file << "; showing the recorded statements)\n";
    else if (!b.source_found)
      out << "(source missing: " << b.file << "; showing the recorded statements)\n";
    for (const LineRow& r : b.rows) {
      std::string text = r.text;
      if (!b.source_found && r.stats != nullptr) text = b.python ? r.stats->code : "GNNPROF_LINE(" + r.stats->code + ")";
      const LineStats* l = r.stats;
      if (l == nullptr) {
        out << fmt::format("{:>6} {:>9} {:>12} {:>8} {:>8}{}  {}", r.line, "", "", "", "",
                           std::string(extra_head.size(), ' '), text)
            << "\n";
        continue;
      }
      const std::int64_t time = r.time_ns;
      const std::string pace_mark = r.paced ? "~" : "";
      const double per = l->hits != 0 ? us(time) / static_cast<double>(l->hits) : 0.0;
      const double pct = r.pct;
      std::string extra;
      const std::string mark = estimate_mark(r.extras);
      const std::string none = r.extras.unknown ? "?" : "";
      auto time_cell = [&](std::int64_t ns) {
        return fmt::format(" {:>10}", ns > 0 ? mark + fmt::format("{:.1f}", us(ns)) : none);
      };
      const std::string copied = copied_cell(r.extras);
      if (t.copied) extra += fmt::format(" {:>18}", copied.empty() ? none : mark + copied);
      if (t.gathered)
        extra += fmt::format(" {:>10}", r.extras.gathered > 0 ? mark + human_bytes(r.extras.gathered) : none);
      if (t.gpu) extra += time_cell(r.extras.gpu_ns);
      if (t.data) extra += time_cell(r.extras.data_ns);
      if (t.wait) extra += time_cell(r.extras.wait_ns);
      if (t.backward) extra += time_cell(r.extras.backward_ns);
      out << fmt::format("{:>6} {:>9} {:>12} {:>8} {:>8.1f}{}  {}", r.line, l->hits, pace_mark + fmt::format("{:.1f}", us(time)),
                         pace_mark + fmt::format("{:.1f}", per), pct, extra, text)
          << "\n";
    }
    if (const std::string pace = observer_pace_note(b); !pace.empty()) out << "(" << pace << ")\n";
    if (const std::string began = began_note(b); !began.empty()) out << "(" << began << ")\n";
    if (const std::string under = caller_note(p, b); !under.empty()) out << "(" << under << ")\n";
    if (const std::string off = off_loop_note(b); !off.empty()) out << "(" << off << ")\n";
  }
  if (const std::string hint = callee_hint(t); !hint.empty()) out << "\n" << hint << "\n";
}

void TextReporter::render_stage_table(const Report& r, std::ostream& out) const {
  // Phases first; each phase's ops are a drill-down (--ops).
  const Profile& p = *r.profile;
  const Hierarchy& h = r.hierarchy;
  const std::vector<const PhaseNode*> rows = phase_rows(h);
  std::size_t w = 20;  // wide enough for every name shown: none is cut
  bool nested = false;
  auto row_name = [&](const PhaseNode* ph) {
    const int depth = phase_depth(*ph, h);
    nested = nested || depth > 0;
    return std::string(2 * static_cast<std::size_t>(depth), ' ') + ph->name + (ph->sampled ? " *" : "");
  };
  for (const auto* ph : rows) w = std::max(w, row_name(ph).size() + 1);
  if (options_.ops)
    for (const auto* ph : rows)
      for (const auto& op : ph->ops) w = std::max(w, op.label.size() + 5);
  const std::string header = fmt::format("{:<{}} {:<9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7} {:>7}", "Stage",
                                         w, "Category", "Hits", "Total", "Self", "Per hit", "p50", "p90", "Max", "% wall", "% iter");
  auto pct_cell = [](double pct) { return pct < 0 ? std::string("-") : fmt::format("{:.1f}", pct); };
  out << header << "\n" << std::string(header.size(), '-') << "\n";
  auto op_row = [&](const OpNode& op, const std::string& label, bool other, const std::string& phase) {
    out << fmt::format("{:<{}} {:<9} {:>9} {:>10} {:>10} {:>10}  {:.1f}% of {}", "    " + label, w, "op",
                       other ? std::string() : std::to_string(op.hits), human_ns(op.total_ns), human_ns(op.self_ns),
                       other || op.hits == 0 ? std::string() : human_ns(op.total_ns / static_cast<std::int64_t>(op.hits)),
                       100 * op.share, phase)
        << "\n";
  };
  bool any_sampled = false;
  for (const auto* ph : rows) {
    const StageStats& s = ph->stats;
    any_sampled = any_sampled || ph->sampled;
    out << fmt::format("{:<{}} {:<9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7.1f} {:>7}",
                       row_name(ph), w, ph->category, s.hits, human_ns(s.total_ns),
                       human_ns(s.self_ns), human_ns(s.mean_ns), human_ns(s.p50_ns), human_ns(s.p90_ns), human_ns(s.max_ns),
                       s.pct_wall, pct_cell(iteration_pct(*ph, h)))
        << "\n";
    if (!options_.ops) continue;
    for (const auto& op : ph->ops) op_row(op, op.label, false, ph->name);
    if (ph->other.hits > 0) op_row(ph->other, fmt::format("other ops ({})", ph->other.hits), true, ph->name);
  }
  double un_pct = p.wall_ns > 0 ? 100.0 * static_cast<double>(p.unattributed_ns) / static_cast<double>(p.wall_ns) : 0;
  out << fmt::format("{:<{}} {:<9} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>7.1f} {:>7}", "(unattributed)", w, "-", "-",
                     human_ns(p.unattributed_ns), "-", "-", "-", "-", "-", un_pct, pct_cell(unattributed_iteration_pct(h)))
      << "\n";
  out << fmt::format("Wall {}; % wall adds up per thread{}; unattributed = {} thread (#{}) time outside every stage.\n",
                     human_ns(p.wall_ns), nested ? " (an indented stage runs inside the one above it: its time is in that one's too)" : "",
                     p.iterations.empty() ? "main" : "loop", p.main_thread);
  if (h.analysed_iterations > 0)
    out << fmt::format("% iter: time per iteration over the iteration (means of the {} analysed iterations, loop thread). "
                       "Total and % wall cover the whole run: {} before the first iteration, {} after the last{}.\n",
                       h.analysed_iterations, human_ns(h.before_loop_ns), human_ns(h.after_loop_ns), between_text(h));
  if (any_sampled)
    out << fmt::format("* recorded in the {} of {} iterations whose torch ops were observed (iteration sampling): its total "
                       "and % wall cover those, the other stages every iteration; compare them per iteration (Iterations).\n",
                       h.observed_iterations, h.complete_iterations);
  if (h.op_stages > 0 && !options_.ops)
    out << fmt::format("{} torch op stages run inside these; `gnnprof report --ops` lists each stage's top {} by their share of it.\n",
                       h.op_stages, h.top_ops);
  if (h.op_stages > 0 && options_.ops && h.edges)
    out << "Op rows: Total and Self over the run within their stage (set-up included); \"% of\" is the op's self time "
           "over its stage's (in the iterations whose ops were observed, for a stage that runs mostly in them), and "
           "orders them.\n";
  if (h.op_stages > 0 && options_.ops && !h.edges)
    out << "(this profile does not say which stage each op ran in: it was written before gnnprof recorded it)\n";
}

Status TextReporter::render(const Report& r, std::ostream& out) const {
  const Profile& p = *r.profile;
  const std::string cmd = command_line(p);
  out << fmt::format("gnnprof {} profile of `{}` (pid {}, host {}, started {})\n", p.tool.version, cmd, p.run.pid,
                     p.run.host, p.run.start_time);
  if (p.run.rank) out << fmt::format("rank {} of {}\n", *p.run.rank, p.run.world_size ? *p.run.world_size : 0);
  // The answer first: the gist `gnnprof run` prints (the sections below have all of it).
  if (const std::string gist = run_summary(r); !gist.empty()) out << "\n== Summary ==\n" << gist;
  out << "\n== Line table ==\n";
  render_line_table(p, out);
  out << "\n== Stages ==\n";
  render_stage_table(r, out);

  // The Analysis's iterations: the warm-up it leaves out is listed, not pooled.
  std::vector<const IterationStats*> done = analysed_iterations(p, r.analysis);
  out << "\n== Iterations ==\n";
  if (r.analysis.iterations_total == 0) {
    if (const std::string own = own_session_note(p); !own.empty())
      out << "No complete iterations here: " << own << ".\n";
    else
      out << "No complete iterations: mark their boundaries with gnnprof.step() (Python) or GNNPROF_STEP() (C++).\n";
  } else if (done.empty()) {
    out << no_iterations_text(r.analysis) << "\n";
  } else {
    if (r.analysis.skipped > 0) {
      std::vector<std::string> warm;
      std::uint64_t seen = 0;
      for (const auto& it : p.iterations)
        if (it.complete && seen++ < r.analysis.skipped) warm.push_back(human_ns(it.wall_ns));
      out << fmt::format("{} warm-up iteration{} left out ({}): {}\n", r.analysis.skipped, r.analysis.skipped == 1 ? "" : "s",
                         r.analysis.skip_detected ? (r.analysis.iterations_unobserved > 0 ? "detected: over 1.5x the median of their kind"
                                                                                          : "detected: over 1.5x the median")
                                                  : "--skip",
                         fmt::join(warm, ", "));
    }
    std::vector<std::int64_t> walls;
    std::set<std::string> names;
    std::map<std::string, std::string> category;
    for (const auto& st : p.stages) category.emplace(st.name, st.category);
    for (const auto* it : done) {
      walls.push_back(it->wall_ns);
      for (const auto& [n, v] : it->stages)
        if (!is_op_category(category[n])) names.insert(n);  // phases only: ops are the --ops drill-down
    }
    out << fmt::format("{} {}: median {}, p90 {}, min {}, max {}\n", done.size(),
                       r.analysis.skipped > 0 ? "iterations after the warm-up" : "complete iterations", human_ns(upper_median(walls)),
                       human_ns(quantile_of(walls, 0.9)), human_ns(*std::min_element(walls.begin(), walls.end())),
                       human_ns(*std::max_element(walls.begin(), walls.end())));
    // Iteration sampling: the per-stage rows come from the iterations whose ops were observed.
    if (std::vector<const IterationStats*> observed = ops_observed(done); observed.size() < done.size()) {
      out << fmt::format("Stage rows: the {} iterations whose torch ops were observed (iteration sampling)\n", observed.size());
      done = std::move(observed);
    }
    std::size_t w = 20;
    for (const auto& n : names) w = std::max(w, n.size() + 1);
    out << fmt::format("{:<{}} {:>12} {:>12}\n", "Stage (loop thread)", w, "median/iter", "p90/iter");
    std::int64_t sum_of_medians = 0;  // of the stages nested in no other row
    std::vector<std::int64_t> rows_walls;
    for (const auto* it : done) rows_walls.push_back(it->wall_ns);
    std::set<std::string> nested;
    for (const auto& e : p.stage_edges)
      if (names.count(e.parent) != 0) nested.insert(e.child);
    for (const auto& n : names) {
      std::vector<std::int64_t> v;
      for (const auto* it : done) {
        auto f = it->stages.find(n);
        v.push_back(f == it->stages.end() ? 0 : f->second);
      }
      if (nested.count(n) == 0) sum_of_medians += upper_median(v);
      out << fmt::format("{:<{}} {:>12} {:>12}\n", n, w, human_ns(upper_median(v)), human_ns(quantile_of(v, 0.9)));
    }
    std::vector<std::int64_t> un;
    for (const auto* it : done) un.push_back(it->unattributed_ns);
    out << fmt::format("{:<{}} {:>12} {:>12}\n", "(unattributed)", w, human_ns(upper_median(un)), human_ns(quantile_of(un, 0.9)));
    // Each row's median is over the iterations on its own: a stage that is long in some
    // iterations and short in others does not add its share to the sum.
    sum_of_medians += upper_median(un);
    const std::int64_t it_median = upper_median(rows_walls);
    if (names.size() - nested.size() >= 2 && it_median > 0 && std::llabs(sum_of_medians - it_median) * 10 > it_median)
      out << fmt::format("(the medians of the rows nested in no other add up to {}, not these iterations' median {}: "
                         "each is that stage's own median over them, and stages long in some iterations and short in "
                         "others do not add up; the Stages table's % iter are means)\n",
                         human_ns(sum_of_medians), human_ns(it_median));
  }

  const Analysis& a = r.analysis;
  out << "\n== Analysis ==\n";
  if (a.iterations_used == 0) {
    out << no_iterations_text(a) << "\n";
  } else {
    out << fmt::format("{} iterations analyzed ({} warm-up skipped{}){}; median {}, p90 {}\n", a.iterations_used, a.skipped,
                       a.skip_detected ? ", detected" : "", passes_text(a.backward_passes), human_ns(a.run_iteration_median_ns),
                       human_ns(a.run_iteration_p90_ns));
    if (a.iterations_unobserved > 0) out << sampling_note(a) << "\n";
    if (a.loader_worker) {
      out << loader_worker_note(a) << "\n";
    } else {
      out << fmt::format("Data time exposed (loop waited): {} per iteration ({:.1f}%); hidden (other threads): {}\n",
                         human_ns(a.exposed_data_ns), 100 * a.exposed_data_share, human_ns(a.hidden_data_ns));
      out << fmt::format("Compute: {}; the rest (sync, other stages, unattributed): {}\n", human_ns(a.compute_ns),
                         human_ns(a.rest_ns));
      out << fmt::format("What-if prefetch: {} = {} per iteration, {:.2f}x of today's {}\n", whatif_formula(a),
                         human_ns(a.whatif_predicted_ns), a.whatif_speedup, human_ns(a.iteration_median_ns));
      out << whatif_expectation(a) << "\n";
    }
  }
  if (a.cpu_utilization)
    out << fmt::format("Host: {:.0f}% of {} busy over the run{}{}; RSS {} -> {} (peak {})\n", 100 * *a.cpu_utilization,
                       cpus_text(p.environment.cpus),
                       a.worker_wait_ns > 0 ? " (this process; its DataLoader workers are processes of their own)" : "",
                       other_processes_text(a),
                       human_bytes(static_cast<std::uint64_t>(a.rss_first)),
                       human_bytes(static_cast<std::uint64_t>(a.rss_last)), human_bytes(static_cast<std::uint64_t>(a.rss_peak)));
  if (!a.device_note.empty()) out << "Device: " << a.device_note << "\n";
  if (a.gpu_busy) out << "Device: " << gpu_busy_sentence(a) << "\n";

  out << "\n== Diagnostics ==\n";
  const std::vector<Diagnostic>& diags = r.diagnostics;
  if (diags.empty()) out << "None of the " << diagnostic_ids().size() << " rules fired.\n";
  for (const auto& d : diags) {
    out << fmt::format("[{}] {}: {}\n", to_string(d.severity), d.id, d.message);
    if (!d.evidence.empty()) out << "    evidence: " << evidence_text(d.evidence) << "\n";
  }

  if (const LoaderWorkers& w = r.workers; !w.empty()) {
    out << "\n== DataLoader workers ==\n" << loader_workers_text(w) << "\n";
    if (!w.top_lines.empty()) {
      out << "Their heaviest lines (all workers; time includes callees, share of their batch time):\n";
      for (const WorkerLine& l : w.top_lines)
        out << fmt::format("  {:<28} {:>9} hits {:>10} {:>7}  {}\n", fmt::format("{}:{}", base_name(l.file), l.line), l.hits,
                           human_ns(l.total_ns), worker_line_share(l), l.code);
      if (const std::string note = worker_lines_note(w); !note.empty()) out << note << "\n";
      // Workers trace what their loader calls (a Dataset, a collate_fn), not deeper: a heavy
      // line that calls a function of the user's own (a bare name or a method of self) says
      // how to see inside it.
      static const std::regex call(R"((^|[^A-Za-z0-9_.])(self\.)?([A-Za-z_][A-Za-z0-9_]*)\s*\()");
      std::smatch m;
      static const std::set<std::string> builtins = {"range", "len", "sorted", "list", "dict", "set", "tuple", "int",
                                                     "float", "str", "print", "zip", "enumerate", "map", "filter",
                                                     "sum", "min", "max", "any", "all", "isinstance", "super", "iter",
                                                     "next", "open", "abs", "round", "getattr", "reversed", "type"};
      // Not a function the workers traced already (a generator the Dataset's __iter__ pulls from).
      auto traced = [&](const std::string& f) {
        return std::any_of(w.functions.begin(), w.functions.end(), [&](const std::string& q) {
          return q == f || (q.size() > f.size() && q.compare(q.size() - f.size() - 1, std::string::npos, "." + f) == 0);
        });
      };
      // The heaviest line that calls a function not traced yet (its callee may be the next line down).
      for (const WorkerLine& top : w.top_lines) {
        if (top.share < 0.5) break;
        if (!std::regex_search(top.code, m, call) || builtins.count(m[3].str()) != 0 || traced(m[3].str())) continue;
        out << fmt::format("To see inside {}() (if {} defines it; else name its file): gnnprof run --lines auto --lines {}:{} -- ...\n",
                           m[3].str(), base_name(top.file), base_name(top.file), m[3].str());
        break;
      }
    }
    out << "Each worker's own report: gnnprof report <its profile> (pid in the file name under gnnprof run).\n";
  }

  const std::string sampled = sampled_ops_note(p), sampled_gpu = sampled_ops_note(p, true);
  if (p.transfers.empty()) out << "\n== Transfers ==\n" << no_transfers_hint(p) << "\n";
  if (!p.transfers.empty()) {
    out << "\n== Transfers ==\n";
    if (!sampled_gpu.empty()) out << sampled_gpu << "\n";
    out << fmt::format("{:<14} {:<28} {:<4} {:<8} {:<5} {:>8} {:>12} {:>12}\n", "Stage", "Line", "Dir", "Memory", "Mode",
                       "Count", "Bytes", "Bandwidth");
    for (const auto& t : p.transfers) {
      std::string where = t.file.empty() ? "-" : fmt::format("{}:{}", base_name(t.file), t.line);
      std::string bw = t.total_ns > 0 ? fmt::format("{:.2f} GB/s", static_cast<double>(t.bytes) / static_cast<double>(t.total_ns))
                                      : std::string("-");
      out << fmt::format("{:<14} {:<28} {:<4} {:<8} {:<5} {:>8} {:>12} {:>12}\n", t.stage.empty() ? "-" : t.stage, where,
                         to_string(t.direction), to_string(t.memory), to_string(t.mode), t.count, human_bytes(t.bytes), bw);
    }
  }
  if (!a.gpu_copies.empty()) out << "GPU copy time (CUPTI): " << gpu_copy_rates(a) << "\n";
  if (p.kernels.empty()) out << "\n== GPU kernels ==\n" << no_kernels_hint(p) << "\n";
  if (!p.kernels.empty()) {
    std::int64_t gpu = 0;
    for (const auto& k : p.kernels) gpu += k.total_ns;
    const std::vector<KernelRow> rows = kernel_rows(p, !sampled_gpu.empty());
    const std::size_t shown = std::min<std::size_t>(rows.size(), 20);
    out << fmt::format("\n== GPU kernels (CUPTI): {} kinds, {} of GPU time; launching stage and op ==\n", rows.size(),
                       human_ns(gpu));
    if (!sampled_gpu.empty()) out << sampled_gpu << "\n";
    bool estimated = false;
    for (std::size_t i = 0; i < shown; ++i) estimated |= rows[i].estimated;
    if (estimated)
      out << kKernelShareNote << "\n";
    out << fmt::format("{:<52} {:<14} {:<24} {:>7} {:>10} {:>10} {:>10} {:>6}\n", "Kernel", "Stage", "Op", "Calls", "Total",
                       "Mean", "Max", "%GPU");
    for (std::size_t i = 0; i < shown; ++i) {
      const KernelRow& k = rows[i];
      const std::string mark = k.estimated ? "~" : "";
      out << fmt::format("{:<52} {:<14} {:<24} {:>7} {:>10} {:>10} {:>10} {:>5.1f}%\n", short_kernel_name(k.name, 52),
                         k.stage.empty() ? "-" : k.stage, k.op.empty() ? "-" : short_op_name(k.op).substr(0, 24),
                         mark + std::to_string(k.count), mark + human_ns(k.total_ns),
                         human_ns(k.count ? k.total_ns / static_cast<std::int64_t>(k.count) : 0), human_ns(k.max_ns),
                         gpu > 0 ? 100.0 * static_cast<double>(k.total_ns) / static_cast<double>(gpu) : 0.0);
    }
    if (shown < rows.size()) out << fmt::format("({} more in the profile's \"kernels\")\n", rows.size() - shown);
  }
  if (p.materializations.empty())
    out << "\n== Materializations ==\n" << no_materializations_hint(p) << workers_gathered_note(r.workers) << "\n";
  if (!p.materializations.empty()) {
    out << "\n== Materializations ==\n";
    if (!sampled.empty()) out << sampled << "\n";
    // The torch observer's gathers have no name of their own (the C++ macro's have): a column
    // only when some row has one.
    const bool named = std::any_of(p.materializations.begin(), p.materializations.end(),
                                   [](const MaterializationStats& m) { return !m.name.empty(); });
    const std::string name_col = named ? fmt::format("{:<16} ", "Name") : "";
    out << name_col << fmt::format("{:<14} {:<28} {:>8} {:>12} {:>12}\n", "Stage", "Where", "Hits", "Rows", "Bytes");
    for (const auto& m : p.materializations) {
      // No line: before line tracing began (the first batch), or no line was traced there.
      std::string where = m.file.empty() ? "(no traced line)" : fmt::format("{}:{}", base_name(m.file), m.line);
      if (named) out << fmt::format("{:<16} ", m.name.empty() ? "-" : m.name);
      out << fmt::format("{:<14} {:<28} {:>8} {:>12} {:>12}\n", m.stage.empty() ? "-" : m.stage, where, m.hits, m.rows,
                         human_bytes(m.bytes));
    }
  }
  if (!p.counters.empty()) {
    out << "\n== Counters ==\n";
    out << fmt::format("{:<20} {:>9} {:>12} {:>12} {:>12} {:>12}\n", "Counter", "Samples", "Min", "Mean", "Max", "Last");
    for (const auto& c : p.counters)
      out << fmt::format("{:<20} {:>9} {:>12.4g} {:>12.4g} {:>12.4g} {:>12.4g}\n", c.name, c.samples, c.min, c.mean,
                         c.max, c.last);
  }
  out << "\n== Collection ==\n";
  out << fmt::format("Events: {} recorded, {} dropped{}\n", p.recorded_events, p.dropped_events,
                     p.dropped_events > 0 ? " (rings full or thread cap reached: statistics undercount)" : "");
  if (p.timeline_dropped > 0)
    out << fmt::format("Timeline: first {} events kept, {} more not kept (GNNPROF_TIMELINE_EVENTS)\n", p.timeline.size(),
                       p.timeline_dropped);
  std::string cols;
  for (const auto& c : p.collectors)
    cols += fmt::format("{}{} ({}{})", cols.empty() ? "" : ", ", c.name, c.enabled ? "on" : "off",
                        c.reason.empty() ? "" : ": " + c.reason);
  out << "Collectors: " << cols << "\n";
  out << fmt::format("Clock: {} ({:.4f} ticks/ns, calibrated over {})\n", p.clock.source, p.clock.ticks_per_ns,
                     human_ns(p.clock.calibration_ns));
  return out ? Status::ok() : Status::error("write error");
}

std::string run_summary(const Report& r) {
  const Profile& p = *r.profile;
  const Analysis& a = r.analysis;
  std::string out;
  if (p.run.feeds_pid != 0)
    out += fmt::format("  a producer process of pid {}: the batches it makes feed that process's loop, whose report reads "
                       "this profile (producer-bound)\n",
                       p.run.feeds_pid);
  if (a.iterations_used > 0 && !a.loader_worker) {
    // The mean beside the median when slow iterations pull it well above (an epoch's first batch).
    const std::vector<const IterationStats*> used = analysed_iterations(p, a);
    std::int64_t sum = 0;
    for (const IterationStats* it : used) sum += it->wall_ns;
    const std::int64_t mean = used.empty() ? 0 : sum / static_cast<std::int64_t>(used.size());
    const std::string mean_text =
        5 * mean > 6 * a.run_iteration_median_ns ? fmt::format(" (mean {}: slow iterations)", human_ns(mean)) : "";
    // Under iteration sampling the shares are of the observed iterations' median: say so when it
    // differs from the run's (the observer's cost, a few slow observed ones).
    const std::int64_t run = a.run_iteration_median_ns, observed = a.iteration_median_ns;
    const std::string of = a.iterations_unobserved == 0 || 20 * std::llabs(run - observed) <= run
                               ? std::string("an iteration")
                           : a.observer_scales.empty()
                               ? fmt::format("an observed iteration ({} median)", human_ns(observed))
                               : fmt::format("an iteration without the observer's cost ({} median)", human_ns(observed));
    out += fmt::format("  {} iterations{}{}, median {}{}; data exposed {:.1f}% of {}; what-if prefetch {:.2f}x",
                       a.iterations_used, a.skipped > 0 ? fmt::format(" ({} warm-up left out)", a.skipped) : "",
                       passes_text(a.backward_passes), human_ns(run), mean_text, 100 * a.exposed_data_share, of, a.whatif_speedup);
    if (a.whatif_expected_speedup + 0.005 < a.whatif_speedup)
      out += fmt::format(", {:.2f}x within this machine's limits", a.whatif_expected_speedup);
    out += "\n";
  } else if (a.iterations_used == 0 && !a.loader_worker && a.iterations_total > 0) {
    out += "  " + no_iterations_text(a) + "\n";
  }
  // Each line's share of its own function's time, as its table gives it: a line that calls
  // another traced function holds that function's lines' time too, so a share of all the
  // traced lines' time would count it twice.
  std::vector<const LineStats*> lines;
  std::map<std::pair<std::string, std::string>, std::int64_t> function_ns;
  // At the unobserved pace where iteration sampling slowed a line (line_time), as its table.
  for (const auto& l : p.lines) {
    lines.push_back(&l);
    function_ns[{l.file, l.function}] += line_time(l);
  }
  std::stable_sort(lines.begin(), lines.end(), [](const LineStats* x, const LineStats* y) { return line_time(*x) > line_time(*y); });
  // A line holding other traced functions (`trainer.fit(...)` around Lightning's callbacks,
  // `main()` at module level) says nothing here.
  const auto holder = [&](const LineStats* l) { return holds_traced_functions(p, *l) || holds_traced_lines(*l); };
  if (!std::all_of(lines.begin(), lines.end(), holder))
    lines.erase(std::remove_if(lines.begin(), lines.end(), holder), lines.end());
  std::string heavy;
  for (std::size_t i = 0; i < lines.size() && i < 3 && line_time(*lines[i]) > 0; ++i) {
    const std::string code = lines[i]->code.size() > 40 ? lines[i]->code.substr(0, 37) + "..." : lines[i]->code;
    const std::int64_t fn = function_ns[{lines[i]->file, lines[i]->function}];
    heavy += fmt::format("{}{}:{} `{}` {:.0f}% of {}(){}", i ? ", " : "", base_name(lines[i]->file), lines[i]->line, code,
                         100.0 * static_cast<double>(line_time(*lines[i])) / static_cast<double>(std::max<std::int64_t>(1, fn)),
                         lines[i]->function, 2 * lines[i]->off_loop_ns > lines[i]->total_ns ? " (off the loop's thread)" : "");
  }
  if (!heavy.empty()) out += "  heaviest lines: " + heavy + "\n";
  if (!heavy.empty())
    if (const std::string hint = callee_hint(build_line_table(p, {}), true); !hint.empty()) out += "  " + hint + "\n";
  if (out.empty()) return "";
  for (const Diagnostic& d : r.diagnostics) {
    const std::size_t end = d.message.find(". ");
    out += fmt::format("  [{}] {}: {}\n", to_string(d.severity), d.id,
                       end == std::string::npos ? d.message : d.message.substr(0, end + 1));
  }
  return out;
}

}  // namespace gnnprof::reports
