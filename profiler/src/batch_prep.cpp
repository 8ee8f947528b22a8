#include "batch_prep.h"

#include "gnnprof/order_stats.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gnnprof::detail {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

/// A Python loop header: `for ... in ...:`, `async for ...`, `while ...:`.
bool loop_header(const LineStats& l) {
  const std::string_view c = trimmed(l.code);
  return c.rfind("for ", 0) == 0 || c.rfind("async for ", 0) == 0 || c.rfind("while ", 0) == 0 ||
         c.rfind("while(", 0) == 0;
}

std::int64_t forward_ns(const LineStats& l) {
  auto f = l.stages.find("forward");
  return f == l.stages.end() ? 0 : f->second;
}

bool same_function(const LineStats& a, const LineStats& b) { return a.file == b.file && a.function == b.function; }

/// Of a line's time, its own (not of traced lines under it) share in no stage on the loop's
/// thread, from the hits whose torch ops were observed (in the others the observer's stages are
/// not recorded at all).
double unstaged_share(const LineStats& l) {
  if (l.total_ns <= 0 || (l.hits > 0 && l.unobserved_hits >= l.hits)) return 0;
  std::int64_t staged = 0;
  for (const auto& [name, ns] : l.stages) staged += ns;
  const std::int64_t seen = l.unobserved_ns > 0 ? l.total_ns - l.unobserved_ns : l.total_ns;
  if (seen <= 0) return 0;
  const double nested = static_cast<double>(l.nested_ns) * static_cast<double>(seen) / static_cast<double>(l.total_ns);
  const double free = std::clamp((static_cast<double>(seen - staged) - nested) / static_cast<double>(seen), 0.0, 1.0);
  const double loop = 1.0 - std::clamp(static_cast<double>(l.off_loop_ns) / static_cast<double>(l.total_ns), 0.0, 1.0);
  return free * loop;
}

/// The names a Python statement binds (`defs`: assignment, `for` and `as` targets, the object
/// of an attribute or item assignment) and the names it reads (`uses`). From its text, one
/// statement on one line: strings, attributes and keyword arguments are not names.
struct Names {
  std::set<std::string> defs, uses;
};

bool python_keyword(std::string_view w) {
  // Constant data, no destructor: the profile is also built at exit, after static objects die.
  static constexpr std::string_view k[] = {"and", "as", "assert", "async", "await", "break", "continue", "def", "del",
                                             "elif", "else", "except", "False", "finally", "for", "from", "global", "if",
                                             "import", "in", "is", "lambda", "None", "nonlocal", "not", "or", "pass",
                                             "raise", "return", "True", "try", "while", "with", "yield"};
  return std::find(std::begin(k), std::end(k), w) != std::end(k);
}

Names statement_names(std::string_view code) {
  struct Token {
    std::string_view text;
    char kind;  // 'n' name, 'o' operator or punctuation
    int depth;
    bool attribute;  // a name after '.'
  };
  std::vector<Token> toks;
  int depth = 0;
  for (std::size_t i = 0; i < code.size();) {
    const char c = code[i];
    if (c == '#') break;
    if (c == '\'' || c == '"') {  // a string: skipped
      const std::size_t end = code.find(c, i + 1);
      i = end == std::string_view::npos ? code.size() : end + 1;
      toks.push_back({"''", 'o', depth, false});
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < code.size() && (std::isalnum(static_cast<unsigned char>(code[j])) || code[j] == '_')) ++j;
      if (j < code.size() && (code[j] == '\'' || code[j] == '"')) {  // f"...", rb'...'
        i = j;
        continue;
      }
      const bool attribute = !toks.empty() && toks.back().text == ".";
      toks.push_back({code.substr(i, j - i), 'n', depth, attribute});
      i = j;
      continue;
    }
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') depth = std::max(0, depth - 1);
    // Two-character operators, so that `==` is not an assignment.
    std::size_t n = 1;
    if (i + 1 < code.size() && code[i + 1] == '=' && std::string_view("=!<>+-*/%&|^@:").find(c) != std::string_view::npos) n = 2;
    toks.push_back({code.substr(i, n), 'o', depth, false});
    i += n;
  }
  // The last top-level `=` (or augmented `+=`) ends the targets.
  std::size_t assign = toks.size();
  bool augmented = false;
  for (std::size_t k = 0; k < toks.size(); ++k) {
    const Token& t = toks[k];
    if (t.kind != 'o' || t.depth != 0) continue;
    if (t.text == "=") assign = k;
    else if (t.text.size() == 2 && t.text[1] == '=' && std::string_view("+-*/%&|^@").find(t.text[0]) != std::string_view::npos) {
      assign = k;
      augmented = true;
    }
  }
  Names out;
  const bool for_header = !toks.empty() && (toks[0].text == "for" || (toks[0].text == "async" && toks.size() > 1 && toks[1].text == "for"));
  bool in_targets = for_header, after_as = false;
  for (std::size_t k = 0; k < toks.size(); ++k) {
    const Token& t = toks[k];
    if (for_header && t.text == "in" && t.depth == 0) in_targets = false;
    if (t.kind != 'n' || python_keyword(t.text)) {
      after_as = t.text == "as";
      continue;
    }
    if (t.attribute) continue;
    // A keyword argument's name: `f(dim=1)`.
    if (t.depth > 0 && k + 1 < toks.size() && toks[k + 1].text == "=") continue;
    const std::string name(t.text);
    const bool target = (k < assign && assign < toks.size() && t.depth == 0) || (in_targets && t.depth == 0) || after_as;
    after_as = false;
    if (target) {
      out.defs.insert(name);
      if (augmented) out.uses.insert(name);
    } else {
      out.uses.insert(name);
    }
  }
  return out;
}

}  // namespace

void attribute_batch_prep(Profile& p) {
  for (const auto& c : p.collectors)
    if (c.name == "batch-prep") return;  // already attributed (or said why not)
  // The training loop's forward line: of the function whose forward lines built the most
  // backward, its first such line run about as often as its most-run one.
  const LineStats* top = nullptr;
  std::int64_t top_backward = 0;
  for (const LineStats& l : p.lines) {
    if (forward_ns(l) <= 0) continue;
    std::int64_t b = 0;
    for (const LineStats& o : p.lines)
      if (same_function(o, l) && forward_ns(o) > 0) b += o.backward_ns;
    if (b > top_backward) {
      top_backward = b;
      top = &l;
    }
  }
  if (top == nullptr) return;
  std::uint64_t most_hits = 0;
  for (const LineStats& l : p.lines)
    if (same_function(l, *top) && forward_ns(l) > 0) most_hits = std::max(most_hits, l.hits);
  const LineStats* forward = nullptr;
  for (const LineStats& l : p.lines)
    if (same_function(l, *top) && forward_ns(l) > 0 && 2 * l.hits >= most_hits && (forward == nullptr || l.line < forward->line))
      forward = &l;
  if (forward == nullptr || forward->hits == 0) return;
  // Its loop's header: the nearest loop header above it run once per pass through the body
  // (an inner loop's header runs more often; an earlier, finished loop's less).
  const LineStats* header = nullptr;
  for (const LineStats& l : p.lines) {
    if (!same_function(l, *forward) || l.line >= forward->line || !loop_header(l)) continue;
    if (l.hits < forward->hits || 2 * l.hits > 3 * forward->hits + 4) continue;
    if (header == nullptr || l.line > header->line) header = &l;
  }
  if (header == nullptr) return;

  // The statements the forward needs: what the forward's lines read (from its first line to the
  // last that built backward: a `with autocast():` line first; not the logging after the step,
  // whose forward phase a readback may open), and, upward, what the statements binding those
  // names read. Bookkeeping above the forward (a timer, a log call) binds none.
  std::set<std::string> needed;
  std::uint32_t forward_end = forward->line;
  for (const LineStats& l : p.lines)
    if (same_function(l, *forward) && l.line >= forward->line && l.backward_ns > 0 && 2 * l.hits >= forward->hits)
      forward_end = std::max(forward_end, l.line);
  for (const LineStats& l : p.lines)
    if (same_function(l, *forward) && l.line >= forward->line && l.line <= forward_end)
      for (const auto& n : statement_names(l.code).uses) needed.insert(n);
  std::vector<std::uint32_t> above;  // the body's lines above the forward, bottom up
  for (std::uint32_t i = 0; i < p.lines.size(); ++i)
    if (same_function(p.lines[i], *forward) && p.lines[i].line > header->line && p.lines[i].line < forward->line) above.push_back(i);
  std::sort(above.begin(), above.end(), [&](std::uint32_t a, std::uint32_t b) { return p.lines[a].line > p.lines[b].line; });
  std::set<std::uint32_t> feeding;
  for (std::uint32_t i : above) {
    const Names n = statement_names(p.lines[i].code);
    if (std::none_of(n.defs.begin(), n.defs.end(), [&](const std::string& d) { return needed.count(d) != 0; })) continue;
    feeding.insert(i);
    needed.insert(n.uses.begin(), n.uses.end());
  }

  // Traced code those statements run (a batch generator the header resumes, a sampler a
  // feeding statement calls, what that calls): its lines' own time is batch preparation too.
  const auto header_index = static_cast<std::uint32_t>(header - p.lines.data());
  auto prep_statement = [&](std::int64_t i) { return i == header_index || feeding.count(static_cast<std::uint32_t>(i)) != 0; };
  auto runs_under_prep = [&](std::uint32_t i) {
    std::int64_t c = p.lines[i].caller;
    for (int hops = 0; hops < 32 && c >= 0 && c < static_cast<std::int64_t>(p.lines.size()); ++hops) {
      if (same_function(p.lines[c], *forward)) return prep_statement(c);
      c = p.lines[c].caller;
    }
    return false;
  };

  struct Prep {
    std::uint32_t index;
    double share;
  };
  std::vector<Prep> prep;
  std::int64_t total = 0;
  for (std::uint32_t i = 0; i < p.lines.size(); ++i) {
    const LineStats& l = p.lines[i];
    if (same_function(l, *forward) ? !prep_statement(i) : !runs_under_prep(i)) continue;
    const double share = unstaged_share(l);
    if (share <= 0) continue;
    prep.push_back({i, share});
    total += std::llround(share * static_cast<double>(l.total_ns));
  }
  if (prep.empty() || total <= 0) return;
  std::vector<std::int64_t> per_iteration, walls;
  for (const IterationStats& it : p.iterations) {
    double ns = 0;
    for (const Prep& q : prep)
      if (auto f = it.lines.find(q.index); f != it.lines.end()) ns += q.share * static_cast<double>(f->second);
    per_iteration.push_back(std::min(it.wall_ns, static_cast<std::int64_t>(std::llround(ns))));
    walls.push_back(it.wall_ns);
  }
  // Under 1 % of an iteration: the loop's own Python, not worth a stage of its own.
  const std::int64_t median_prep = quantile_of(per_iteration, 0.5);
  if (per_iteration.empty() || median_prep <= 0 || 100 * median_prep < quantile_of(walls, 0.5)) return;

  // A profile whose tracer did not report the time of traced lines under each statement
  // (nested_ns, caller: an older one): a traced function run in most iterations on the loop's
  // thread may run under these statements, whose time then holds its. Not told apart: nothing
  // is attributed, and the profile says so.
  const bool nesting_known = std::any_of(p.lines.begin(), p.lines.end(), [](const LineStats& l) { return l.caller >= 0; });
  std::vector<std::size_t> in(p.lines.size());  // iterations each line ran in
  for (const IterationStats& it : p.iterations)
    for (const auto& [index, ns] : it.lines)
      if (index < in.size()) ++in[index];
  for (std::size_t i = 0; i < p.lines.size() && !nesting_known; ++i) {
    const LineStats& l = p.lines[i];
    if (same_function(l, *forward) || l.total_ns <= l.off_loop_ns) continue;
    if (4 * in[i] < p.iterations.size() || 100 * (l.total_ns - l.off_loop_ns) < total) continue;
    p.collectors.push_back(CollectorInfo{
        "batch-prep", false,
        "the traced " + l.function + " runs on the loop's thread in most iterations, possibly under the loop's statements "
        "above its forward line (" + std::to_string(forward->line) + "), whose time then holds its own: their time in no "
        "stage is not counted as data (its own lines show their data stages)"});
    return;
  }

  for (std::size_t k = 0; k < p.iterations.size(); ++k) {
    IterationStats& it = p.iterations[k];
    const std::int64_t ns = std::min(per_iteration[k], it.unattributed_ns);
    if (ns <= 0) continue;
    it.stages[kBatchPrepStage] += ns;
    if (!it.categories.empty() || it.stages.size() == 1) it.categories["data"] += ns;
    it.unattributed_ns -= ns;
  }
  for (const Prep& q : prep) {
    LineStats& l = p.lines[q.index];
    l.stages[kBatchPrepStage] += std::llround(q.share * static_cast<double>(l.total_ns));
  }
  StageStats st;
  st.name = kBatchPrepStage;
  st.category = "data";
  std::vector<std::int64_t> hits;
  for (std::int64_t v : per_iteration)
    if (v > 0) hits.push_back(v);
  st.hits = std::max<std::uint64_t>(1, hits.size());
  st.total_ns = st.self_ns = total;
  st.mean_ns = total / static_cast<std::int64_t>(st.hits);
  st.p50_ns = quantile_of(hits, 0.5);
  st.p90_ns = quantile_of(hits, 0.9);
  st.max_ns = hits.empty() ? total : *std::max_element(hits.begin(), hits.end());
  st.pct_wall = p.wall_ns > 0 ? 100.0 * static_cast<double>(total) / static_cast<double>(p.wall_ns) : 0.0;
  st.by_thread.push_back(StageThreadStats{p.main_thread, st.hits, total, total});
  p.stages.insert(std::upper_bound(p.stages.begin(), p.stages.end(), st,
                                   [](const StageStats& a, const StageStats& b) { return a.total_ns > b.total_ns; }),
                  st);
  p.unattributed_ns = std::max<std::int64_t>(0, p.unattributed_ns - total);

  // "line 15 of train.py:main (...) and lines 9, 10 of train.py:batches (...)": per function,
  // in the order the profile holds them (the loop's function first).
  auto lines_of = [&](const LineStats& fn) {
    std::string out;
    std::size_t n = 0;
    for (const Prep& q : prep)
      if (same_function(p.lines[q.index], fn)) out += (n++ == 0 ? "" : ", ") + std::to_string(p.lines[q.index].line);
    const std::string file = fn.file.substr(fn.file.find_last_of('/') + 1);
    return (n == 1 ? "line " : "lines ") + out + " of " + file + ":" + fn.function;
  };
  std::vector<const LineStats*> fns;  // the functions holding them, the loop's first
  for (const Prep& q : prep) {
    const LineStats& l = p.lines[q.index];
    if (std::none_of(fns.begin(), fns.end(), [&](const LineStats* f) { return same_function(*f, l); })) fns.push_back(&l);
  }
  std::stable_partition(fns.begin(), fns.end(), [&](const LineStats* f) { return same_function(*f, *header); });
  const bool loop_lines = same_function(*fns.front(), *header);
  const std::string statements = "the statements above its forward line (" + std::to_string(forward->line) + ") that bind what it reads";
  std::string where;
  for (std::size_t k = 0; k < fns.size(); ++k) {
    where += k == 0 ? "" : k + 1 == fns.size() ? " and " : ", ";
    where += lines_of(*fns[k]);
    if (k == 0 && loop_lines) where += " (the loop's header and " + statements + ")";
    else if (k + 1 == fns.size()) where += loop_lines ? " (traced code run under them)" : " (traced code run under the loop's header or " + statements + ")";
  }
  p.collectors.push_back(CollectorInfo{
      "batch-prep", true,
      where + ": their own time in no torch op or stage (Python, numpy, a C extension's sampler) is the data stage \"" +
          std::string(kBatchPrepStage) + "\""});
}

}  // namespace gnnprof::detail
