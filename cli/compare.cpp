#include "compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "gnnprof/profile_io.h"
#include "gnnprof/reports/check.h"
#include "gnnprof/reports/compare.h"
#include "gnnprof/reports/format.h"
#include "gnnprof/reports/html_reporter.h"
#include "gnnprof/reports/loader_workers.h"

namespace gnnprof::cli {

namespace {

constexpr int kOk = 0, kFail = 1, kBad = 2;

/// Reads a profile that has complete iterations, or prints one line and returns false.
bool load(const std::string& path, Profile& out, const char* tool) {
  auto p = read_profile_file(path);
  if (!p) {
    std::cerr << tool << ": " << p.status().message() << "\n";
    return false;
  }
  std::size_t complete = 0;
  for (const auto& it : p->iterations) complete += it.complete ? 1 : 0;
  if (complete == 0) {
    // A run killed before its first iteration ended (a CI timeout, the OOM killer) says so.
    if (p->run.failed())
      std::cerr << tool << ": " << path << ": no complete iterations: the program " << reports::exit_text(p->run) << "\n";
    else
      std::cerr << tool << ": " << path << ": no complete iterations to compare (a torch loop's optimizer steps mark them; "
                                           "else gnnprof.step() in Python, GNNPROF_STEP() in C++)\n";
    return false;
  }
  out = std::move(*p);
  return true;
}

std::set<std::string> stage_names(const Profile& p) {
  std::set<std::string> s;
  for (const auto& it : p.iterations) {
    for (const auto& [n, v] : it.stages) s.insert(n);
    for (const auto& [n, v] : it.other_threads) s.insert(n);
  }
  return s;
}

/// The names, comma-separated; past `most` of them, how many more (an error line stays readable).
std::string join(const std::set<std::string>& s, std::size_t most = 40) {
  std::string o;
  std::size_t n = 0;
  for (const auto& x : s) {
    if (n++ == most) return o + fmt::format(", ... ({} more)", s.size() - most);
    o += (o.empty() ? "" : ", ") + x;
  }
  return o;
}

/// The stages by name, then how many torch ops (category "op" in either profile) besides.
std::string stage_list(const std::set<std::string>& names, const Profile& a, const Profile& b) {
  std::set<std::string> ops;
  for (const Profile* p : {&a, &b})
    for (const auto& s : p->stages)
      if (s.category == "op") ops.insert(s.name);
  std::set<std::string> stages;
  std::size_t n_ops = 0;
  for (const auto& n : names)
    if (ops.count(n) != 0) ++n_ops;
    else stages.insert(n);
  return "stages: " + join(stages) + (n_ops > 0 ? fmt::format("; and {} torch ops", n_ops) : std::string());
}

/// The program a profile ran: its script's base name (the first argument ending in .py), else
/// its executable's; "" when unknown.
std::string program_of(const Profile& p) {
  for (const auto& arg : p.run.command)
    if (arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".py") == 0) return reports::base_name(arg);
  return p.run.command.empty() ? std::string() : reports::base_name(p.run.command.front());
}

/// "A.json ran x.py, B.json ran y.py" when the two profiles ran different programs, else "".
std::string different_programs(const Profile& a, const Profile& b, const std::string& pa, const std::string& pb) {
  const std::string x = program_of(a), y = program_of(b);
  if (x.empty() || y.empty() || x == y) return "";
  return pa + " ran " + x + ", " + pb + " ran " + y;
}

/// The arguments after the program (its script, else its executable), shortened for a note.
std::string arguments_of(const Profile& p) {
  std::size_t at = 0;
  for (std::size_t i = 0; i < p.run.command.size(); ++i)
    if (const std::string& arg = p.run.command[i]; arg.size() > 3 && arg.compare(arg.size() - 3, 3, ".py") == 0) {
      at = i;
      break;
    }
  std::string out;
  for (std::size_t i = at + 1; i < p.run.command.size(); ++i) out += (out.empty() ? "" : " ") + p.run.command[i];
  return out.size() > 80 ? out.substr(0, 77) + "..." : out;
}

/// "A.json and B.json ran x.py with other arguments (`...` vs `...`)" for two runs of one program
/// whose arguments differ (a batch size, a flag), else "": judged as a change of code would be.
std::string different_arguments(const Profile& a, const Profile& b, const std::string& pa, const std::string& pb) {
  const std::string x = program_of(a);
  if (x.empty() || x != program_of(b) || a.run.command.empty() || b.run.command.empty()) return "";
  const std::string ax = arguments_of(a), bx = arguments_of(b);
  if (ax == bx) return "";
  return fmt::format("{} and {} ran {} with other arguments (`{}` vs `{}`)", pa, pb, x, ax.empty() ? "none" : ax,
                     bx.empty() ? "none" : bx);
}

/// compare's note: a wrong file, or a renamed script, which is still its loop; other arguments.
void note_programs(const Profile& a, const Profile& b, const std::string& pa, const std::string& pb, const char* tool) {
  if (const std::string n = different_programs(a, b, pa, pb); !n.empty())
    std::cerr << tool << ": note: " << n << ": different programs? (compared all the same: a renamed script is still its loop)\n";
  else if (const std::string g = different_arguments(a, b, pa, pb); !g.empty())
    std::cerr << tool << ": note: " << g << ": a change of arguments shows as a change of the program\n";
}

bool write_text(const std::string& path, const std::string& text, const char* tool) {
  if (Status st = write_file_atomic(path, text); !st) {
    std::cerr << tool << ": " << st.message() << "\n";
    return false;
  }
  std::cerr << tool << ": wrote " << path << "\n";
  return true;
}

}  // namespace

bool parse_pct(std::string s, double& out, std::string* why) {
  auto fail = [&](const char* what) {
    if (why != nullptr) *why = what;
    return false;
  };
  const bool pct = !s.empty() && s.back() == '%';
  if (pct) s.pop_back();
  // Digits with at most one point: no sign, exponent, hex, inf or nan (1e400 would switch the
  // gate off without a word, 0x10 reads as 16).
  const bool digits = !s.empty() && s != "." && std::count(s.begin(), s.end(), '.') <= 1 &&
                      std::all_of(s.begin(), s.end(), [](char ch) { return (ch >= '0' && ch <= '9') || ch == '.'; });
  if (!digits) return fail("expected a percentage like 5%");
  const double v = std::strtod(s.c_str(), nullptr);
  if (!std::isfinite(v)) return fail("expected a percentage like 5%");
  if (!pct && v > 0 && v < 1) return fail("a bare number under 1 is ambiguous (0.05 as a fraction is 5%): add the %, as 5% or 0.05%");
  out = v / 100.0;
  return true;
}

int run_compare(const CompareArgs& a) {
  const char* tool = "gnnprof compare";
  reports::Comparison c;
  Profile base, cand;
  bool have_profiles = false;
  if (a.inputs.size() == 1) {
    auto r = reports::read_comparison_file(a.inputs[0]);
    if (!r) {
      std::cerr << tool << ": " << r.status().message() << "\n";
      return kBad;
    }
    c = std::move(*r);
    // The first usable profile of each side, for the side-by-side charts.
    auto first = [](const reports::Side& s) {
      for (const auto& run : s.runs)
        if (run.error.empty() && !run.profile.empty()) return run.profile;
      return std::string();
    };
    const std::string bp = first(c.baseline), cp = first(c.candidate);
    if (!bp.empty() && !cp.empty()) {
      auto b = read_profile_file(bp), d = read_profile_file(cp);
      if (b && d) {
        base = std::move(*b);
        cand = std::move(*d);
        have_profiles = true;
      }
    }
  } else if (a.inputs.size() == 2) {
    if (!load(a.inputs[0], base, tool) || !load(a.inputs[1], cand, tool)) return kBad;
    note_programs(base, cand, a.inputs[0], a.inputs[1], tool);
    const auto sb = stage_names(base), sc = stage_names(cand);
    std::set<std::string> common;
    for (const auto& n : sb)
      if (sc.count(n) != 0) common.insert(n);
    if (common.empty()) {
      std::cerr << tool << ": " << a.inputs[0] << " and " << a.inputs[1] << " share no stage (" << join(sb) << " vs " << join(sc)
                << "): nothing to compare\n";
      return kBad;
    }
    reports::CompareOptions opt;
    opt.skip = a.skip;
    // DataLoader workers' profiles beside each (gnnprof run writes them there): work that moved
    // into workers is followed there, not listed as gone.
    const std::vector<Profile> wb = reports::read_loader_worker_profiles(a.inputs[0], base, 64),
                               wc = reports::read_loader_worker_profiles(a.inputs[1], cand, 64);
    c = reports::compare_profiles({base}, {cand}, opt, wb, wc);
    if (c.metrics.front().baseline_n == 0 || c.metrics.front().candidate_n == 0) {
      std::cerr << tool << ": " << a.inputs[c.metrics.front().baseline_n == 0 ? 0 : 1] << ": no complete iterations left after "
                << (a.skip >= 0 ? "skipping " + std::to_string(a.skip) + " (--skip)" : std::string("its warm-up")) << "\n";
      return kBad;
    }
    c.baseline.label = "baseline";
    c.candidate.label = "candidate";
    c.baseline.command = a.inputs[0];
    c.candidate.command = a.inputs[1];
    for (auto* side : {&c.baseline, &c.candidate}) {
      reports::RunRecord r;
      r.profile = side->command;
      reports::describe_run(side == &c.baseline ? base : cand, a.skip, r);
      side->runs.push_back(r);
    }
    have_profiles = true;
  } else {
    std::cerr << tool << ": expected BASE.json CAND.json, or one comparison.json from gnnprof ab\n";
    return kBad;
  }
  std::cout << reports::comparison_text(c, a.ops);
  int rc = kOk;
  if (!a.json_out.empty() && !write_text(a.json_out, reports::comparison_to_json(c), tool)) rc = kFail;
  if (!a.html_out.empty()) {
    std::ostringstream html;
    (void)reports::render_comparison_html(c, have_profiles ? &base : nullptr, have_profiles ? &cand : nullptr, html);
    if (!write_text(a.html_out, html.str(), tool)) rc = kFail;
  }
  return rc;
}

int run_check(const CheckArgs& a) {
  const char* tool = "gnnprof check";
  double default_limit = 0;
  std::string why;
  if (!parse_pct(a.max_slowdown, default_limit, &why)) {
    std::cerr << tool << ": --max-slowdown \"" << a.max_slowdown << "\": " << why << "\n";
    return kBad;
  }
  double op_floor = 0, stage_floor = 0;
  if (!parse_pct(a.op_floor, op_floor, &why) || op_floor > 1) {
    std::cerr << tool << ": --op-floor \"" << a.op_floor << "\": " << (op_floor > 1 ? "over 100% of the iteration" : why) << "\n";
    return kBad;
  }
  if (!parse_pct(a.stage_floor, stage_floor, &why) || stage_floor > 1) {
    std::cerr << tool << ": --stage-floor \"" << a.stage_floor << "\": " << (stage_floor > 1 ? "over 100% of the iteration" : why)
              << "\n";
    return kBad;
  }
  std::map<std::string, double> limits;
  for (const auto& kv : a.stage_limits) {
    const auto eq = kv.find('=');
    double v = 0;
    if (eq == std::string::npos || eq == 0 || !parse_pct(kv.substr(eq + 1), v, &why)) {
      std::cerr << tool << ": --stage \"" << kv << "\": " << (eq == std::string::npos || eq == 0 ? "expected NAME=PCT (e.g. forward=10%)" : why)
                << "\n";
      return kBad;
    }
    limits[kv.substr(0, eq)] = v;
  }
  std::vector<Profile> bases(a.baselines.size()), curs(a.currents.size());
  for (std::size_t i = 0; i < bases.size(); ++i)
    if (!load(a.baselines[i], bases[i], tool)) return kBad;
  for (std::size_t i = 0; i < curs.size(); ++i)
    if (!load(a.currents[i], curs[i], tool)) return kBad;
  if (bases.empty() || curs.empty()) return kBad;
  const Profile& base = bases.front();
  const Profile& cur = curs.front();
  // Labels: the file, or the first of several and how many.
  auto label = [](const std::vector<std::string>& files) {
    return files.size() == 1 ? files.front() : fmt::format("{} (+{} more)", files.front(), files.size() - 1);
  };
  const std::string baseline = label(a.baselines), current = label(a.currents);
  // A failed run's figures are not the loop's (an exception in the first epoch is fast).
  std::vector<std::string> failed_runs;  // "FILE: the program exited with code 1"
  for (const auto* side : {&a.baselines, &a.currents})
    for (std::size_t i = 0; i < side->size(); ++i)
      if (const Profile& p = (side == &a.baselines ? bases : curs)[i]; p.run.failed())
        failed_runs.push_back((*side)[i] + ": the program " + reports::exit_text(p.run));
  // No verdict: one line, and the CI's report files say it too, where a reader looks first.
  auto no_verdict = [&](const std::string& why) {
    std::cerr << tool << ": " << why << "\n";
    if (!a.markdown_out.empty()) (void)write_file_atomic(a.markdown_out, "### gnnprof check: no verdict\n\n" + why + "\n");
    if (!a.junit_out.empty())
      (void)write_file_atomic(a.junit_out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites><testsuite name=\"gnnprof.check\" "
                                           "tests=\"1\" failures=\"0\" errors=\"1\"><testcase classname=\"gnnprof.loop\" "
                                           "name=\"verdict\"><error message=\"" + reports::escape_markup(why) +
                                           "\"/></testcase></testsuite></testsuites>\n");
    return kBad;
  };
  if (!failed_runs.empty() && !a.allow_failed_runs)
    return no_verdict(failed_runs.front() + ": no verdict on a failed run (--allow-failed-runs judges it all the same)");
  // A baseline of another script is a wrong file in the CI's set-up more often than a rename.
  std::string programs;
  for (std::size_t i = 0; i < curs.size() && programs.empty(); ++i)
    for (std::size_t j = 0; j < bases.size() && programs.empty(); ++j)
      programs = different_programs(bases[j], curs[i], a.baselines[j], a.currents[i]);
  if (!programs.empty() && !a.allow_different_programs)
    return no_verdict(programs + ": no verdict across different programs (--allow-different-programs judges them all the "
                                 "same, as after a rename)");
  // Stages of one side only are listed as such (an op replaced by another, a stage added);
  // two sides with none in common are not runs of one program.
  std::set<std::string> names, common, theirs;
  for (const Profile& p : bases)
    for (const auto& n : stage_names(p)) names.insert(n);
  for (const Profile& p : curs)
    for (const auto& n : stage_names(p)) theirs.insert(n);
  for (const auto& n : theirs) (names.count(n) != 0 ? common : names).insert(n);
  const bool no_common = common.empty() && !names.empty();
  names.insert(reports::kUnattributed);  // a metric too: --stage "(unattributed)=10%"
  names.insert("iteration");             // and the loop's rows: --stage "iteration (mean)=10%"
  names.insert(reports::kMeanIteration);
  if (no_common) {
    std::cerr << tool << ": " << baseline << " and " << current << " share no stage: not two runs of one program\n";
    return kBad;
  }
  for (const auto& [name, v] : limits)
    if (names.count(name) == 0) {
      std::cerr << tool << ": --stage " << name << ": no such stage in " << baseline << " or " << current
                << " (" << stage_list(names, base, cur) << ")\n";
      return kBad;
    }
  reports::CompareOptions opt;
  opt.skip = a.skip;
  const reports::Comparison c = reports::compare_profiles(bases, curs, opt);

  reports::CheckPolicy policy;
  policy.default_limit = default_limit;
  policy.limits = limits;
  policy.op_floor = op_floor;
  policy.stage_floor = stage_floor;
  policy.alpha = opt.alpha;
  policy.skip = a.skip;
  reports::CheckResult r = reports::apply_check(c, policy);
  // What the inputs were, for the Markdown and JUnit a CI shows rather than its stderr.
  if (!programs.empty()) r.input_notes.push_back(programs + ": different programs (judged all the same: --allow-different-programs)");
  // Same program, other arguments (a CI job whose baseline ran another batch size): judged, said.
  std::string arguments;
  for (std::size_t i = 0; i < curs.size() && arguments.empty() && programs.empty(); ++i)
    for (std::size_t j = 0; j < bases.size() && arguments.empty(); ++j)
      arguments = different_arguments(bases[j], curs[i], a.baselines[j], a.currents[i]);
  if (!arguments.empty()) {
    r.input_notes.push_back(arguments + ": judged as one program, so a changed argument shows as a change of it");
    std::cerr << tool << ": note: " << arguments << "\n";
  }
  for (const auto& f : failed_runs) r.input_notes.push_back(f + " (judged all the same: --allow-failed-runs)");
  // A limit on a stage or op of the baseline only checks nothing: say so rather than pass silently
  // (one of the current run only regresses from its floor of the iteration on).
  for (const auto& row : r.rows)
    if (limits.count(row.metric.name) != 0 &&
        (row.status == reports::CheckStatus::kBaselineOnly || row.status == reports::CheckStatus::kCandidateOnly))
      std::cerr << tool << ": note: --stage " << row.metric.name << ": in the "
                << (row.status == reports::CheckStatus::kBaselineOnly ? "baseline only, so not checked (the iteration and its phase judge it)"
                                                                       : "current run only, under its floor of the iteration (--stage-floor)")
                << "\n";
  std::cout << reports::check_text(r) << "\n" << reports::check_summary(r) << "\n";
  if (const std::string passes = reports::passes_summary(c); !passes.empty()) std::cout << passes << "\n";
  int rc = r.iteration_undecided ? kBad : r.regressions > 0 ? kFail : kOk;
  // No verdict exits 2, as bad input does: its one line on stderr too.
  if (r.iteration_undecided) std::cerr << tool << ": " << reports::check_summary(r) << "\n";
  // An output that cannot be written is the CI's problem, not a regression: exit 2, unless a
  // regression (1) says more.
  const int unwritable = rc == kFail ? kFail : kBad;
  if (!a.markdown_out.empty() && !write_text(a.markdown_out, reports::check_markdown(r, baseline, current), tool)) rc = unwritable;
  if (!a.junit_out.empty() && !write_text(a.junit_out, reports::check_junit(r), tool)) rc = unwritable;
  return rc;
}

}  // namespace gnnprof::cli
