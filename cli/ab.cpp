// ab.cpp — runs baseline and candidate interleaved (B1 C1 B2 C2 ...), each run writing its own
// profile into the output directory, then compares them (reports/compare.h).
#include "ab.h"
#include "run.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "gnnprof/profile_io.h"
#include "gnnprof/reports/analysis.h"
#include "gnnprof/reports/compare.h"
#include "gnnprof/reports/format.h"
#include "child_process.h"
#include "launch_profiles.h"

namespace gnnprof::cli {

namespace {

std::string tail_lines(const std::string& path, int n) {
  std::ifstream f(path);
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) {
    lines.push_back(l);
    if (lines.size() > static_cast<std::size_t>(n)) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines) out += "    | " + l + "\n";
  return out;
}

struct RunSpec {
  std::vector<std::string> argv;
  Environment env;  // overrides
};

/// Runs one command with env overrides, stdout+stderr to `log`; returns the exit code
/// (128+signal when killed, 127 when it could not start).
int spawn_and_wait(const RunSpec& spec, const std::string& log, std::string& error, pid_t& pid) {
  if (const int rc = spawn(spec.argv, spec.env, log, pid); rc != 0) {
    error = "cannot start " + spec.argv[0] + ": " + std::strerror(rc);
    return 127;
  }
  const ChildExit e = wait_child(pid);
  if (!e.waited) {
    error = std::string("waitpid: ") + std::strerror(errno);
    return 127;
  }
  if (e.signal != 0)
    error = "killed by signal " + std::to_string(e.signal) + " (" + strsignal(e.signal) + ")";
  return e.code;
}

/// The program a command line starts is a Python interpreter (`python3`, `/usr/bin/python3.11`,
/// after any `K=V` settings and `env`).
bool starts_python(const std::string& command) {
  std::istringstream in(command);
  for (std::string word; in >> word;) {
    static const std::regex assignment("[A-Za-z_][A-Za-z0-9_]*=.*");
    if (word == "env" || std::regex_match(word, assignment)) continue;
    const std::string base = word.substr(word.rfind('/') + 1);
    return base.rfind("python", 0) == 0;
  }
  return false;
}

}  // namespace

bool parse_env(const std::vector<std::string>& kvs, std::map<std::string, std::string>& out, std::string& bad) {
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      bad = kv;
      return false;
    }
    out[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return true;
}

int run_ab(const AbArgs& a) {
  const bool shell_form = !a.baseline_cmd.empty() || !a.candidate_cmd.empty();
  if (shell_form && !a.command.empty()) {
    std::cerr << "gnnprof ab: give either -- CMD ARGS... or --baseline/--candidate, not both\n";
    return 2;
  }
  if (shell_form && (a.baseline_cmd.empty() || a.candidate_cmd.empty())) {
    std::cerr << "gnnprof ab: --baseline and --candidate go together\n";
    return 2;
  }
  if (!shell_form && a.command.empty()) {
    std::cerr << "gnnprof ab: no command (gnnprof ab [options] -- CMD ARGS..., or --baseline 'CMD' --candidate 'CMD')\n";
    return 2;
  }
  if (a.repeat < 1) {
    std::cerr << "gnnprof ab: --repeat must be at least 1\n";
    return 2;
  }
  std::map<std::string, std::string> benv, cenv;
  const std::string joined = reports::shell_command(a.command);
  const bool python_command = !shell_form && starts_python(joined);
  if (!shell_form) {
    benv["GNNPROF_PREFETCH"] = "0";
    cenv["GNNPROF_PREFETCH"] = "2";
    // An unmodified Python loop over a torch DataLoader runs through gnnprof.prefetch on both
    // sides (depth 0: inline), so the pair differs only by overlap.
    if (python_command) benv["GNNPROF_PREFETCH_LOADERS"] = cenv["GNNPROF_PREFETCH_LOADERS"] = "1";
  }
  std::string bad;
  if (!parse_env(a.baseline_env, benv, bad) || !parse_env(a.candidate_env, cenv, bad)) {
    std::cerr << "gnnprof ab: bad environment setting \"" << bad << "\" (expected K=V)\n";
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(a.out_dir, ec);
  if (ec || ::access(a.out_dir.c_str(), W_OK) != 0) {
    std::cerr << "gnnprof ab: cannot write to " << a.out_dir << ": " << (ec ? ec.message() : std::strerror(errno)) << "\n";
    return 1;
  }

  reports::Side sides[2];
  sides[0].label = "baseline";
  sides[1].label = "candidate";
  sides[0].command = shell_form ? a.baseline_cmd : joined;
  sides[1].command = shell_form ? a.candidate_cmd : joined;
  for (const auto& [k, v] : benv) sides[0].env.push_back(k + "=" + v);
  for (const auto& [k, v] : cenv) sides[1].env.push_back(k + "=" + v);

  // An unmodified Python program writes no profile unless injected: inject it, as gnnprof run does.
  bool want_preload = a.preload;
  if (!want_preload &&
      (shell_form ? starts_python(a.baseline_cmd) || starts_python(a.candidate_cmd) : python_command)) {
    want_preload = true;
    std::cerr << "gnnprof ab: a Python command: gnnprof is injected into every run (as --preload does)\n";
  }
  std::string preload;
  if (want_preload) {
    preload = find_preload();
    if (preload.empty()) {
      std::cerr << "gnnprof ab: --preload: cannot find libgnnprof_preload.so (set GNNPROF_PRELOAD)\n";
      return 2;
    }
  }
  std::vector<Profile> profiles[2], workers[2];
  bool any_failed = false;
  const int total = 2 * a.repeat;
  for (int r = 0; r < a.repeat; ++r) {
    for (int side = 0; side < 2; ++side) {
      const int n = 2 * r + side + 1;
      const std::string name = sides[side].label + "-" + std::to_string(r + 1);
      const std::string stem = a.out_dir + "/" + name;
      RunSpec spec;
      spec.argv = shell_form ? std::vector<std::string>{"/bin/sh", "-c", side == 0 ? a.baseline_cmd : a.candidate_cmd} : a.command;
      spec.env = current_environment();
      for (const auto& [k, v] : side == 0 ? benv : cenv) spec.env[k] = v;
      // Every process writes its own file (a wrapping shell, a DataLoader worker); the launch's
      // own, as gnnprof run picks it, becomes <stem>.json.
      spec.env["GNNPROF_OUTPUT"] = launch_output_pattern(a.out_dir, name);
      spec.env["GNNPROF_RUN_PID"] = std::to_string(::getpid());  // helpers that record nothing leave no file
      spec.env["GNNPROF_QUIET"] = "1";
      if (!preload.empty()) {
        prepend_preload(spec.env, preload);
        (void)inject_python(spec.env);  // Python runs: line tables to compare
      }
      // Stale profiles must not pass for this run's.
      std::filesystem::remove(stem + ".json", ec);
      for (const auto& old : launch_profile_paths(a.out_dir, name)) std::filesystem::remove(old, ec);
      std::cerr << "gnnprof ab: [" << n << "/" << total << "] " << sides[side].label << " run " << (r + 1) << "/" << a.repeat
                << " ..." << std::flush;
      reports::RunRecord rec;
      rec.command = sides[side].command;
      const auto since = std::filesystem::file_time_type::clock::now() - std::chrono::seconds(2);
      const auto t0 = std::chrono::steady_clock::now();
      std::string error;
      pid_t pid = 0;
      rec.exit_code = spawn_and_wait(spec, stem + ".log", error, pid);
      rec.wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      if (rec.exit_code != 0 && error.empty()) error = "exit code " + std::to_string(rec.exit_code);
      if (error.empty()) {
        LaunchProfiles launch = collect_launch_profiles(a.out_dir, name, since, pid);
        for (int i = 0; i < static_cast<int>(launch.found.size()); ++i)  // `sh -c`: the shell's, empty
          if (i != launch.main && launch.found[i].profile.recorded_events == 0) std::filesystem::remove(launch.found[i].path, ec);
        if (launch.main < 0 || ::rename(launch.found[launch.main].path.c_str(), (stem + ".json").c_str()) != 0) {
          error = "no usable profile";
          if (!launch.unreadable.empty()) error += ": " + launch.unreadable.front();
          // A program that does not link gnnprof writes none unless it is injected.
          if (preload.empty() && launch.found.empty() && launch.unreadable.empty())
            error += " (the program wrote no profile: add --preload to inject gnnprof into an unmodified program, as "
                     "gnnprof run does)";
        } else {
          Profile& p = launch.found[launch.main].profile;
          rec.profile = stem + ".json";
          reports::describe_run(p, a.skip, rec);
          if (rec.iterations == 0) {
            error = "its profile " + rec.profile + " has no complete iteration past the " +
                    (a.skip >= 0 ? std::to_string(a.skip) + " skipped" : std::string("warm-up")) + " (pid " + std::to_string(p.run.pid) + ": " + std::to_string(p.recorded_events) +
                    " events): nothing to compare";
          } else {
            // Its DataLoader workers' profiles (beside it, as <name>.<pid>.json): compared per batch.
            for (int i = 0; i < static_cast<int>(launch.found.size()); ++i)
              if (i != launch.main && launch.found[i].profile.run.parent_pid == p.run.pid && p.run.pid > 0 &&
                  launch.found[i].profile.recorded_events > 0)
                workers[side].push_back(std::move(launch.found[i].profile));
            profiles[side].push_back(std::move(p));
          }
        }
      }
      rec.error = error;
      std::cerr << " " << reports::human_ns(rec.wall_ns);
      if (!error.empty()) {
        any_failed = true;
        std::cerr << ", FAILED: " << error << " (log: " << stem << ".log)\n" << tail_lines(stem + ".log", 10);
        // The first run wrote none: every other run of the same program would say the same.
        if (n == 1 && preload.empty() && (!shell_form || a.baseline_cmd == a.candidate_cmd) &&
            error.find("add --preload") != std::string::npos) {
          std::cerr << "gnnprof ab: stopping: without --preload no run of this program writes a profile\n";
          return 1;
        }
      } else {
        std::cerr << ", median iteration " << reports::human_ns(rec.median_iteration_ns) << "\n";
      }
      // The first baseline run of an unmodified Python loop that pulls its batches from the
      // program's own generator: no DataLoader to wrap, so both sides wrap that generator's
      // calls (GNNPROF_PREFETCH_GENERATORS, depth 0 and 2) from now on, and this run is redone.
      if (python_command && r == 0 && side == 0 && !profiles[0].empty() && !benv.count("GNNPROF_PREFETCH_GENERATORS") &&
          !cenv.count("GNNPROF_PREFETCH_GENERATORS")) {
        if (const auto g = reports::generator_prefetch(profiles[0].back()); g && !g->file.empty()) {
          const std::string target = g->file + ":" + g->function;
          benv["GNNPROF_PREFETCH_GENERATORS"] = cenv["GNNPROF_PREFETCH_GENERATORS"] = target;
          for (reports::Side& s : sides) s.env.push_back("GNNPROF_PREFETCH_GENERATORS=" + target);
          std::cerr << "gnnprof ab: the loop pulls its batches from " << g->function << "() of "
                    << reports::base_name(g->file) << " (" << reports::base_name(g->header->file) << ":" << g->header->line
                    << "), no DataLoader: every run wraps its calls in gnnprof.prefetch (depth 0 and 2) from now on, as "
                       "`"
                    << g->edit << "` would; baseline run 1 again\n";
          profiles[0].pop_back();
          workers[0].clear();
          --side;  // the same run, wrapped
          continue;
        }
      }
      sides[side].runs.push_back(std::move(rec));
    }
  }

  if (profiles[0].empty() || profiles[1].empty()) {
    std::cerr << "gnnprof ab: no comparison: " << (profiles[0].empty() ? "no baseline" : "no candidate")
              << " run produced a profile; profiles and logs are in " << a.out_dir << "\n";
    return 1;
  }
  reports::CompareOptions opt;
  opt.skip = a.skip;
  reports::Comparison c = reports::compare_profiles(profiles[0], profiles[1], opt, workers[0], workers[1]);
  c.baseline = sides[0];
  c.candidate = sides[1];
  std::cout << reports::comparison_text(c, a.ops);
  // The default pair differs only in GNNPROF_PREFETCH: a program without gnnprof's prefetcher
  // (its loader_wait stage) ran the same code on both sides.
  bool prefetched = false;
  for (const Profile& p : profiles[1])
    for (const auto& s : p.stages) prefetched = prefetched || s.name == "loader_wait";
  if (!shell_form && !prefetched) {
    std::cerr << "gnnprof ab: the candidate never waited on gnnprof's prefetcher (no loader_wait stage): this program does "
                 "not use it (gnnprof.prefetch(loader), gnnprof::Prefetcher"
              << (python_command ? "; nor a `for` over a torch DataLoader in its own code, which ab prefetches: "
                                          "a framework's loop, as Lightning's, is left as it is"
                                        : "")
              << "), so GNNPROF_PREFETCH=2 changed nothing; compare two versions with --baseline 'CMD' --candidate 'CMD'\n";
    // A loop pulling from the program's own generator: the one-line edit that makes ab's pair differ.
    std::optional<reports::GeneratorPrefetch> g;
    for (const Profile& p : profiles[0])
      if (!g) g = reports::generator_prefetch(p);
    if (g)
      std::cerr << "gnnprof ab: the loop pulls its batches from " << g->function << "() of its own code: "
                << reports::base_name(g->header->file) << ":" << g->header->line << " `" << g->edit
                << "` (and `import gnnprof`) runs it ahead on a thread at GNNPROF_PREFETCH's depth; rerun ab on the edited "
                   "script\n";
  }
  const std::string out = a.out_dir + "/comparison.json";
  if (Status st = write_file_atomic(out, reports::comparison_to_json(c)); !st) {
    std::cerr << "gnnprof ab: " << st.message() << "\n";
    return 1;
  }
  std::cerr << "gnnprof ab: comparison written to " << out << (any_failed ? "; some runs FAILED (see above)" : "") << "\n";
  return any_failed ? 1 : 0;
}

}  // namespace gnnprof::cli
