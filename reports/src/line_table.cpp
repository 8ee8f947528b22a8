#include "gnnprof/reports/line_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

namespace {

/// Source lines of `file`, found as given, under the run's cwd, or under a source root.
bool load_source(const std::string& file, const std::string& cwd, const std::vector<std::string>& roots,
                 std::vector<std::string>& lines) {
  std::vector<std::string> candidates{file};
  if (!file.empty() && file[0] != '/' && !cwd.empty()) candidates.push_back(cwd + "/" + file);
  for (const auto& r : roots) {
    candidates.push_back(r + "/" + file);
    candidates.push_back(r + "/" + base_name(file));
  }
  for (const auto& c : candidates) {
    std::ifstream f(c);
    if (!f) continue;
    lines.clear();
    std::string l;
    while (std::getline(f, l)) lines.push_back(l);
    return true;
  }
  return false;
}


std::size_t indent_of(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return i;
}

bool blank_or_comment(const std::string& s) {
  const std::size_t i = indent_of(s);
  return i == s.size() || s[i] == '#';
}

bool starts_with_at(const std::string& s, std::size_t at, const char* word) {
  return s.compare(at, std::char_traits<char>::length(word), word) == 0;
}

/// A Python function's lines as line_profiler prints them: from its decorators and `def` to
/// the last line of its body. `first`/`last` are its first and last recorded statements
/// (1-based). Module-level code keeps [first, last].
void python_extent(const std::vector<std::string>& src, const std::string& function, std::uint32_t& first,
                   std::uint32_t& last) {
  if (function == "<module>" || first == 0 || first > src.size()) return;
  const std::size_t body_indent = indent_of(src[first - 1]);
  std::uint32_t def = 0;
  for (std::uint32_t n = first; n >= 1; --n) {
    const std::string& s = src[n - 1];
    if (blank_or_comment(s)) continue;
    const std::size_t i = indent_of(s);
    if (i < body_indent && (starts_with_at(s, i, "def ") || starts_with_at(s, i, "async def "))) {
      def = n;
      break;
    }
  }
  if (def == 0) return;
  const std::size_t def_indent = indent_of(src[def - 1]);
  first = def;
  while (first > 1) {  // decorators
    const std::string& s = src[first - 2];
    if (blank_or_comment(s) || indent_of(s) != def_indent || s[def_indent] != '@') break;
    --first;
  }
  for (std::uint32_t n = last + 1; n <= src.size(); ++n) {
    const std::string& s = src[n - 1];
    if (blank_or_comment(s)) continue;
    if (indent_of(s) <= def_indent) break;
    last = n;
  }
}

}  // namespace

namespace {
/// The op observer's own data stages: recorded only in iterations whose ops it observed (a
/// DataLoader's scope, a user's stage are recorded in every one).
bool observer_data_stage(const std::string& name) {
  return name == "materialize" || name == "h2d" || name == "d2d" || name == "pin_memory" || name == "ops (no grad)";
}
}  // namespace

namespace {
/// Iteration sampling: the loop's backward time over every iteration / over the observed ones
/// (where its phase is recorded in every one), or 0 when unknown. Observed iterations include
/// the warm-up's slow ones and the observer's cost, so the hits' ratio would overstate the rest.
double backward_scale(const Profile& p) {
  std::int64_t all = 0, observed = 0;
  bool unobserved_have_it = false;
  for (const auto& it : p.iterations) {
    auto f = it.stages.find("backward");
    if (f == it.stages.end()) continue;
    all += f->second;
    if (it.ops_observed) observed += f->second;
    else unobserved_have_it = true;
  }
  if (unobserved_have_it && observed > 0) return static_cast<double>(all) / static_cast<double>(observed);
  // Else by the time of the lines that run backward (loss.backward()), every hit of which is
  // timed, at their unobserved pace where sampling slowed them (line_time: their Time column),
  // so that no forward line's backward exceeds the backward line's Time.
  all = observed = 0;
  for (const auto& l : p.lines) {
    auto f = l.stages.find("backward");
    const std::int64_t seen = l.total_ns - l.unobserved_ns;
    if (f == l.stages.end() || l.unobserved_ns <= 0 || seen <= 0 || 2 * f->second < seen) continue;
    all += line_time(l);
    observed += seen;
  }
  return observed > 0 ? static_cast<double>(all) / static_cast<double>(observed) : 0.0;
}
}  // namespace

LineExtras line_extras(const Profile& p, const LineStats& l) {
  LineExtras e;
  std::int64_t data_every = 0;  // data stages recorded in every iteration: never scaled
  for (const auto& t : p.transfers) {
    if (t.line != l.line || t.file != l.file) continue;
    (t.memory == HostMemory::kPinned ? e.copied_pinned : t.memory == HostMemory::kPageable ? e.copied_pageable : e.copied_other) +=
        t.bytes;
  }
  for (const auto& m : p.materializations)
    if (m.line == l.line && m.file == l.file) e.gathered += m.bytes;
  for (const auto& [name, ns] : l.stages) {
    if (name == "comm wait") {
      e.wait_ns += ns;
      continue;
    }
    for (const auto& s : p.stages)
      if (s.name == name) {
        if (s.category == "sync") e.wait_ns += ns;
        if (s.category == "data") (observer_data_stage(name) ? e.data_ns : data_every) += ns;
        break;
      }
  }
  e.gpu_ns = l.gpu_ns;
  e.backward_ns = l.backward_ns;
  // What the torch observer saw of the line covers its observed hits only: scale to all hits.
  // (Explicit gnnprof.record_transfer()/record_materialization() calls in unobserved
  // iterations are scaled too: rare in a loop that is sampled.)
  if (l.unobserved_hits > 0 && l.unobserved_hits < l.hits) {
    const double k = static_cast<double>(l.hits) / static_cast<double>(l.hits - l.unobserved_hits);
    auto scale_bytes = [k](std::uint64_t& v) { v = static_cast<std::uint64_t>(std::llround(static_cast<double>(v) * k)); };
    auto scale_ns = [k](std::int64_t& v) { v = std::llround(static_cast<double>(v) * k); };
    scale_bytes(e.copied_pinned);
    scale_bytes(e.copied_pageable);
    scale_bytes(e.copied_other);
    scale_bytes(e.gathered);
    scale_ns(e.gpu_ns);
    const double kb = backward_scale(p);
    e.backward_ns = std::llround(static_cast<double>(e.backward_ns) * (kb > 0 ? std::min(k, kb) : k));
    // A wait is part of the line's own time: scaled by time, so that one long wait in an
    // observed hit does not become more wait than the line took.
    // So is the line's data time.
    const std::int64_t observed_ns = l.total_ns - l.unobserved_ns;
    for (std::int64_t* v : {&e.wait_ns, &e.data_ns}) {
      if (l.unobserved_ns > 0 && observed_ns > 0)
        *v = std::llround(static_cast<double>(*v) * static_cast<double>(l.total_ns) / static_cast<double>(observed_ns));
      else
        scale_ns(*v);  // a profile without unobserved_ns
      *v = std::min(*v, line_time(l));  // no more than its Time (at the unobserved pace where paced)
    }
    e.estimated = e.copied() > 0 || e.gathered > 0 || e.gpu_ns > 0 || e.data_ns > 0 || e.wait_ns > 0 || e.backward_ns > 0;
  }
  e.data_ns = std::min(e.data_ns + data_every, line_time(l));
  e.unknown = l.hits > 0 && l.unobserved_hits >= l.hits;
  return e;
}

namespace {

/// A line's per-hit paces in observed and unobserved iterations, when both have enough hits.
bool line_paces(const LineStats& l, double& observed_per_hit, double& unobserved_per_hit) {
  const std::uint64_t observed_hits = l.hits - std::min(l.hits, l.unobserved_hits);
  const std::int64_t observed_ns = l.total_ns - l.unobserved_ns;
  // Enough hits on both sides for a per-hit pace (a line of the first, observed, iterations only has none).
  if (l.unobserved_hits < 5 || observed_hits < 2 || observed_ns <= 0 || l.unobserved_ns <= 0) return false;
  observed_per_hit = static_cast<double>(observed_ns) / static_cast<double>(observed_hits);
  unobserved_per_hit = static_cast<double>(l.unobserved_ns) / static_cast<double>(l.unobserved_hits);
  return true;
}

}  // namespace

std::int64_t line_time(const LineStats& l, bool* paced) {
  double o = 0, u = 0;
  const bool slowed = line_paces(l, o, u) && o >= 1.5 * u;  // as observer_pace_note
  if (paced != nullptr) *paced = slowed;
  if (!slowed) return l.total_ns;
  return l.unobserved_ns + std::llround(u * static_cast<double>(l.hits - l.unobserved_hits));
}

std::string observer_pace_note(const LineBlock& b) {
  struct Slowed {
    const LineStats* l;
    double observed_per_hit, unobserved_per_hit;
  };
  std::vector<Slowed> slowed;  // every paced row: each "~" is explained
  for (const LineRow& r : b.rows) {
    double o = 0, u = 0;
    if (r.stats != nullptr && r.paced && line_paces(*r.stats, o, u)) slowed.push_back({r.stats, o, u});
  }
  if (slowed.empty()) return "";
  std::sort(slowed.begin(), slowed.end(), [](const Slowed& x, const Slowed& y) { return x.l->total_ns > y.l->total_ns; });
  std::string list;
  for (std::size_t i = 0; i < slowed.size() && i < 3; ++i) {
    const Slowed& s = slowed[i];
    list += fmt::format("{}line {} {} per hit against {} in the other {} of its {} hits", i ? "; " : "", s.l->line,
                        human_ns(std::llround(s.observed_per_hit)), human_ns(std::llround(s.unobserved_per_hit)),
                        s.l->unobserved_hits, s.l->hits);
  }
  return fmt::format("iteration sampling: these lines' hits in the iterations whose ops were observed (the first "
                     "iterations among them) took 1.5x or more those in the others: {}{}. Their Time and Per Hit (~) "
                     "are at the unobserved pace, and % Time of the function's time at that pace, {} of the {} measured "
                     "(the observer's cost and the warm-up left out)",
                     list, slowed.size() > 3 ? "; ..." : "", human_ns(b.paced_ns), human_ns(b.total_ns));
}

std::string off_loop_note(const LineBlock& b) {
  std::int64_t off = 0, all = 0;
  for (const LineRow& r : b.rows)
    if (r.stats != nullptr) {
      off += std::min(r.stats->off_loop_ns, r.stats->total_ns);
      all += r.stats->total_ns;
    }
  if (all <= 0 || 2 * off < all) return "";
  return fmt::format("{:.0f}% of these lines' time ran on threads other than the loop's (a prefetcher's producer, or "
                     "the program's own): their Data is hidden behind the loop's iterations, not exposed",
                     100.0 * static_cast<double>(off) / static_cast<double>(all));
}

std::string caller_note(const Profile& p, const LineBlock& b) {
  std::map<std::int64_t, std::uint64_t> votes;  // caller -> hits of the rows naming it
  for (const LineRow& r : b.rows) {
    if (r.stats == nullptr || r.stats->caller < 0 || r.stats->caller >= static_cast<std::int64_t>(p.lines.size())) continue;
    const LineStats& c = p.lines[static_cast<std::size_t>(r.stats->caller)];
    if (c.file == b.file && c.function == b.function) continue;  // recursion: the function's own line
    votes[r.stats->caller] += std::max<std::uint64_t>(1, r.stats->hits);
  }
  if (votes.empty()) return "";
  const auto top = std::max_element(votes.begin(), votes.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  const LineStats& c = p.lines[static_cast<std::size_t>(top->first)];
  const std::string code = c.code.size() > 60 ? c.code.substr(0, 57) + "..." : c.code;
  return fmt::format("run under {}:{} `{}` in {}(), whose Time includes this function's (a line's time includes what it "
                     "calls, as in line_profiler)",
                     base_name(c.file), c.line, code, c.function);
}

std::string began_note(const LineBlock& b) {
  const LineStats* at = nullptr;
  std::uint64_t calls = 0;
  std::int64_t total = 0, off_loop = 0;
  for (const LineRow& r : b.rows)
    if (r.stats != nullptr) {
      total += r.stats->total_ns;
      off_loop += r.stats->off_loop_ns;
      if (r.stats->began_running == 0) continue;
      if (at == nullptr) at = r.stats;
      calls += r.stats->began_running;
    }
  if (at == nullptr) return "";
  // A function beside the loop is a producer's, found at its first feature gather or hand-over.
  const char* found =
      b.producer_process ? "a producer process's function is found at its first multiprocessing.Queue.put"
      : 2 * off_loop > total
          ? "a producer thread's function is found at its first feature gather or hand-over of a batch (Queue.put, "
            "Event.set)"
          : "the training loop is found at its first optimizer step (or hand-written parameter update)";
  return fmt::format("tracing began at line {} in {} already running, as it does where {}: the statements {} ran before "
                     "are not counted, such as a loop's first pass up to line {}",
                     at->line, calls == 1 ? "a call" : fmt::format("{} calls", calls), found,
                     calls == 1 ? "that call" : "those calls", at->line);
}

std::string callee_hint(const LineTable& t, bool brief) {
  // Time in these is torch's (autograd, the optimizer) or a wait, not the program's own calls.
  static const std::set<std::string> not_callees = {"backward", "optimizer", "parameter update", "sync",
                                                    "comm wait", "comm",     "h2d",              "d2h",
                                                    "d2d",       "pin_memory", "materialize",    "gnnprof (own work)"};
  for (const LineBlock& b : t.blocks) {
    if (!b.python) continue;
    for (const LineRow& r : b.rows) {
      const LineStats* l = r.stats;
      // A loop's statement: not one call holding the run (`trainer.fit(...)`, whose callbacks
      // are traced and whose rest is the framework's).
      if (l == nullptr || l->hits < 2 || r.pct < 50.0 || l->code.find('(') == std::string::npos) continue;
      // Only user code the tracer saw run under the line untraced: `out = model(x)` over
      // torch's own modules has its ops in the op tables, and no line to add.
      if (l->callee_file.empty()) continue;
      // Stages are split over the line's observed hits (iteration sampling).
      const std::int64_t observed = l->total_ns - l->unobserved_ns > 0 ? l->total_ns - l->unobserved_ns : l->total_ns;
      std::int64_t torch_own = 0;
      // A DataLoader's __next__ too: its workers' profiles show their work, and auto selection
      // traces the user code it calls in this process.
      for (const auto& [stage, ns] : l->stages)
        if (not_callees.count(stage) != 0 || is_loader_scope(stage)) torch_own += ns;
      if (2 * torch_own >= observed) continue;
      // Its callee traced after all, or a traced function of comparable time that fits in the
      // line's (what it calls, most likely; a caller's time holds the line's).
      const bool traced = std::any_of(t.blocks.begin(), t.blocks.end(), [&](const LineBlock& o) {
        return &o != &b && ((o.file == l->callee_file && o.function == l->callee_function) ||
                            (2 * o.total_ns >= r.time_ns && o.total_ns <= r.time_ns));
      });
      if (traced) continue;
      const std::string file = base_name(b.file);
      const std::string callee = base_name(l->callee_file);
      if (brief)
        return fmt::format("{}:{} holds {:.0f}% of {}() in calls not traced ({}() of {}): gnnprof run --lines auto "
                           "--lines {} -- ... traces them",
                           file, r.line, r.pct, b.function, l->callee_function, callee, callee);
      return fmt::format("Line {} of {} takes {:.0f}% of {}() in what it calls, which is not traced: it runs {}() of {}. "
                         "`gnnprof run --lines auto --lines {} -- ...` traces every function of {} as well "
                         "(--lines {}:{} that one alone).",
                         r.line, file, r.pct, b.function, l->callee_function, callee, callee, callee, callee,
                         l->callee_function);
    }
  }
  return "";
}

std::string copied_cell(const LineExtras& e) {
  const std::uint64_t total = e.copied();
  if (total == 0) return "";
  const int kinds = (e.copied_pinned > 0) + (e.copied_pageable > 0) + (e.copied_other > 0);
  const char* what = kinds > 1 ? "mixed" : e.copied_pinned > 0 ? "pinned" : e.copied_pageable > 0 ? "pageable" : "";
  return *what != '\0' ? human_bytes(total) + " " + what : human_bytes(total);
}

bool is_python_file(const std::string& file) {
  return (file.size() > 3 && file.compare(file.size() - 3, 3, ".py") == 0) || (!file.empty() && file[0] == '<');
}

LineTable build_line_table(const Profile& p, const std::vector<std::string>& source_roots, int max_function_lines) {
  LineTable t;
  std::map<std::pair<std::string, std::string>, std::vector<const LineStats*>> groups;
  for (const auto& l : p.lines)
    if (l.hits > 0 || l.total_ns > 0 || l.gpu_ns > 0 || l.backward_ns > 0) groups[{l.file, l.function}].push_back(&l);
  for (auto& [key, lines] : groups) {
    LineBlock b;
    b.file = key.first;
    b.function = key.second;
    b.producer_process = p.run.feeds_pid != 0;
    b.python = is_python_file(b.file);
    std::sort(lines.begin(), lines.end(), [](const LineStats* x, const LineStats* y) { return x->line < y->line; });
    for (const auto* l : lines) {
      b.total_ns += l->total_ns;
      b.paced_ns += line_time(*l);
    }
    std::uint32_t first = lines.front()->line, last = lines.back()->line;
    std::vector<std::string> src;
    const bool loaded = load_source(b.file, p.run.cwd, source_roots, src) && last <= src.size();
    if (loaded && b.python) python_extent(src, b.function, first, last);
    // A script edited since the profile was taken would show its new lines against the old
    // figures: a traced line whose text is not its recorded statement's says so.
    // (The recorded statement has its whitespace runs collapsed: so is the line compared.)
    auto collapsed = [](const std::string& text, std::size_t n) {
      std::string out;
      for (char c : text) {
        const bool space = c == ' ' || c == '\t' || c == '\r' || c == '\n';
        if (space && (out.empty() || out.back() == ' ')) continue;
        out += space ? ' ' : c;
        if (out.size() == n) break;
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      return out;
    };
    if (loaded && b.python)
      for (const auto* l : lines) {
        if (l->line == 0 || l->line > src.size() || l->code.empty()) continue;
        const std::string head = collapsed(src[l->line - 1], 24), code = collapsed(l->code, 24);
        if (code.compare(0, head.size(), head) != 0) b.source_changed = true;
      }
    b.source_found = loaded && !b.source_changed && static_cast<int>(last - first) < max_function_lines;
    b.first = first;
    std::map<std::uint32_t, const LineStats*> by_line;
    for (const auto* l : lines) by_line[l->line] = l;
    auto add = [&](std::uint32_t n, const LineStats* l, std::string text) {
      LineRow r;
      r.line = n;
      r.text = std::move(text);
      r.stats = l;
      if (l != nullptr) {
        r.extras = line_extras(p, *l);
        r.time_ns = line_time(*l, &r.paced);
        t.copied |= r.extras.copied() > 0;
        t.gathered |= r.extras.gathered > 0;
        t.gpu |= r.extras.gpu_ns > 0;
        t.data |= r.extras.data_ns > 0;
        t.wait |= r.extras.wait_ns > 0;
        t.backward |= r.extras.backward_ns > 0;
        t.estimated |= r.extras.estimated;
      }
      b.rows.push_back(std::move(r));
    };
    if (b.source_found) {
      for (std::uint32_t n = first; n <= last; ++n) {
        auto it = by_line.find(n);
        add(n, it == by_line.end() ? nullptr : it->second, src[n - 1]);
      }
    } else {
      b.first = lines.front()->line;
      for (const auto& [n, l] : by_line) add(n, l, "");
    }
    for (LineRow& r : b.rows) {
      r.pct = b.paced_ns > 0 ? 100.0 * static_cast<double>(r.time_ns) / static_cast<double>(b.paced_ns) : 0.0;
      // Whatever a line under 0.1% of its function held is too little to mark (`total = 0`
      // between epochs, whose hits all fall outside the observed iterations): left blank.
      if (r.extras.unknown && r.pct < 0.1) r.extras.unknown = false;
      t.unknown |= r.extras.unknown;
    }
    t.blocks.push_back(std::move(b));
  }
  // Heaviest function first (ties by file, function), so the order does not depend on where
  // the sources were checked out.
  std::stable_sort(t.blocks.begin(), t.blocks.end(), [](const LineBlock& a, const LineBlock& b) { return a.total_ns > b.total_ns; });
  return t;
}

std::string extra_columns_legend(const LineTable& t) {
  std::string out;
  auto add = [&](bool on, const char* text) {
    if (on) out += (out.empty() ? "" : "; ") + std::string(text);
  };
  add(t.copied, "Copied = bytes copied between host and device (pinned or pageable host memory)");
  add(t.gathered, "Gathered = feature bytes materialized");
  add(t.gpu, "GPU = kernel time the line launched, its backward's included");
  add(t.data, "Data = time in data stages (sampling, materialization, copies, waits for loaders and producers, ops needing no grad; "
              "in the training loop, from its header to its forward line and in traced code run there, the time in no torch op: "
              "batch prep) "
              "while the line was current (a traced function it calls shows its own): exposed data time");
  add(t.wait, "Wait = host syncs and communication waits");
  add(t.backward, "Backward = autograd backward of the graph the line built");
  add(t.estimated, "~ = estimated: torch ops were observed in some iterations only (iteration sampling), so the "
                   "line's figures from its observed hits are scaled to all its hits");
  add(t.unknown && t.any_extra(),
      "? = not known: torch ops were observed in none of the line's hits (blank where the line took under 0.1% of "
      "its function)");
  return out;
}

std::string no_lines_hint(const Profile& p) {
  for (const auto& c : p.collectors) {
    if (c.name != "python-lines") continue;
    if (!c.enabled) return "No line table: Python lines were not traced (" + c.reason + ").";
    return "No line table: Python line tracing was on (" + c.reason +
           ") but no selected function ran. The default (auto) traces the function that calls the optimizer's "
           "step or, with no optimizer, the loop over a torch DataLoader; choose others with `gnnprof run --lines "
           "FILE[:FUNCTION]` or @gnnprof.profile.";
  }
  return "No line table: no lines were traced. For Python, `gnnprof run` traces the training loop (the function "
         "that calls the optimizer's step); choose functions with --lines FILE[:FUNCTION] or @gnnprof.profile. "
         "For C++, wrap statements in GNNPROF_LINE(...).";
}

}  // namespace gnnprof::reports
