// run.cpp — `gnnprof run [-o OUT.json] [--html OUT.html] -- CMD ARGS...`
//
// Every process of the command (children that exec included) loads libgnnprof_preload.so via
// LD_PRELOAD and writes <dir>/<stem>.[rankN.]<pid>.json; helper processes that record nothing
// write none. Afterwards the launched process's profile (or, when it recorded nothing, the
// busiest one) is renamed to OUT.json and every profile is listed with its pid and rank. A
// distributed run (two or more rank profiles) keeps the rank-named files and prints the
// `gnnprof merge` command that reports them together; GNNPROF_RUN_ID ties them to this launch.
#include "run.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gnnprof/profile_io.h"
#include "gnnprof/config.h"
#include "gnnprof/reports/loader_workers.h"
#include "gnnprof/reports/report.h"
#include "gnnprof/reports/reporter_factory.h"
#include "gnnprof/reports/text_reporter.h"
#include "child_process.h"
#include "launch_profiles.h"
#include "signal_relay.h"

namespace gnnprof::cli {
namespace fs = std::filesystem;

namespace {

std::string exe_dir() {
  char buf[PATH_MAX] = {0};
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<std::size_t>(n));
  return p.substr(0, p.rfind('/'));
}

}  // namespace

std::string find_preload() {
  if (const auto v = config::raw("GNNPROF_PRELOAD")) return *v;
  const std::string dir = exe_dir();
  for (const std::string& c : {dir + "/../lib/libgnnprof_preload.so", dir + "/../lib64/libgnnprof_preload.so",
                               dir + "/../../lib/libgnnprof_preload.so", dir + "/libgnnprof_preload.so"}) {
    std::error_code ec;
    if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec).string();
  }
  return "";
}

std::string find_python_dir() {
  if (const auto v = config::raw("GNNPROF_PYTHON_DIR")) return *v;
  const std::string dir = exe_dir();
  for (const std::string& c : {dir + "/../python", dir + "/../lib/python3/dist-packages"}) {
    std::error_code ec;
    if (fs::exists(c + "/gnnprof/_inject/sitecustomize.py", ec)) return fs::weakly_canonical(c, ec).string();
  }
  return "";
}

bool inject_python(std::map<std::string, std::string>& env) {
  const std::string dir = find_python_dir();
  if (dir.empty()) return false;
  const auto prev = env.find("PYTHONPATH");
  std::string path = dir + "/gnnprof/_inject:" + dir;
  if (prev != env.end() && !prev->second.empty()) path += ":" + prev->second;
  env["PYTHONPATH"] = path;
  return true;
}

int run_run(const RunArgs& args) {
  if (args.command.empty()) {
    std::cerr << "gnnprof run: no command given (usage: gnnprof run [-o OUT.json] [--html OUT.html] -- CMD ARGS...)\n";
    return 2;
  }
  const std::string preload = args.preload.empty() ? find_preload() : args.preload;
  if (preload.empty() || ::access(preload.c_str(), R_OK) != 0) {
    std::cerr << "gnnprof run: cannot find libgnnprof_preload.so" << (preload.empty() ? "" : " at " + preload)
              << " (set GNNPROF_PRELOAD)\n";
    return 2;
  }
  std::string out = args.output;
  if (out.empty()) {
    const auto env = config::raw("GNNPROF_OUTPUT");  // e.g. set by `gnnprof ab`
    out = env && env->find('%') == std::string::npos ? *env : "gnnprof.json";
  }
  fs::path out_path(out);
  fs::path dir = out_path.has_parent_path() ? out_path.parent_path() : fs::path(".");
  std::string stem = out_path.filename().string();
  if (stem.size() > 5 && stem.substr(stem.size() - 5) == ".json") stem.resize(stem.size() - 5);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) {
    std::cerr << "gnnprof run: cannot create the output directory " << dir.string() << "\n";
    return 2;
  }
  // A directory no file can be created in (/proc, a read-only mount): said before the program runs.
  {
    const std::string probe = (dir / fmt::format(".gnnprof-probe-{}", ::getpid())).string();
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
      std::cerr << "gnnprof run: cannot write in the output directory " << dir.string() << ": " << std::strerror(errno) << "\n";
      return 2;
    }
    ::close(fd);
    ::unlink(probe.c_str());
  }

  // The launch's processes run quiet (this command lists the files): a bad GNNPROF_* value
  // they would have named is named here, once.
  for (const auto& o : config::options())
    if (const auto v = config::raw(o.name); v && !config::valid(o, *v))
      std::cerr << "gnnprof run: ignoring " << o.name << "=" << *v << " (not a valid value; `gnnprof env` shows the "
                << "table); using the default, " << (*o.default_text ? o.default_text : "none") << "\n";

  // Environment: the host's, plus the injection.
  Environment env = current_environment();
  prepend_preload(env, preload);
  env["GNNPROF_OUTPUT"] = launch_output_pattern(dir, stem);
  env["GNNPROF_RUN_PID"] = std::to_string(::getpid());
  // One id for every process of this launch: `gnnprof merge` refuses ranks of different runs.
  if (!env.count("GNNPROF_RUN_ID")) {
    char host[256] = {0};
    ::gethostname(host, sizeof(host) - 1);
    env["GNNPROF_RUN_ID"] = fmt::format("{}-{}-{}", host, ::getpid(),
                                        std::chrono::duration_cast<std::chrono::milliseconds>(
                                            std::chrono::system_clock::now().time_since_epoch()).count());
  }
  if (!env.count("GNNPROF_QUIET")) env["GNNPROF_QUIET"] = "1";  // this command lists the files
  if (!env.count("NVTX_INJECTION64_PATH")) env["NVTX_INJECTION64_PATH"] = preload;
  // Python programs: gnnprof's package joins the session and traces lines (docs/zero-code.md,
  // "Python lines").
  if (!args.lines.empty()) {
    std::string spec;
    for (const auto& l : args.lines) spec += (spec.empty() ? "" : ";") + l;
    env["GNNPROF_LINES"] = spec;
  }
  // python -E / -I ignore PYTHONPATH, the package's way in: say so (the profile has no lines).
  if (const std::string exe = fs::path(args.command.front()).filename().string(); exe.rfind("python", 0) == 0)
    for (std::size_t i = 1; i < args.command.size(); ++i) {
      const std::string& a = args.command[i];
      if (a.size() < 2 || a[0] != '-' || a[1] == '-' || a == "-c" || a == "-m") break;  // the script or -c/-m: options end
      if (a.find_first_of("EI", 1) != std::string::npos && a.find_first_of("WXc", 1) == std::string::npos) {
        std::cerr << "gnnprof run: " << exe << " " << a
                  << " ignores PYTHONPATH: gnnprof's Python package does not load (no line table, no Python stages)\n";
        break;
      }
      if (a == "-W" || a == "-X") ++i;  // their value
    }
  if (!inject_python(env) && !args.lines.empty())
    std::cerr << "gnnprof run: --lines: gnnprof's Python package was not found (set GNNPROF_PYTHON_DIR); lines are not traced\n";

  const auto started = fs::file_time_type::clock::now() - std::chrono::seconds(2);
  // A signal sent to gnnprof alone is passed on; one sent to the group (the terminal's Ctrl-C)
  // reached the child already and is not sent twice (signal_relay.h). Either way the child
  // decides, and its fate becomes ours; gnnprof stays to collect the profiles.
  pid_t pid = 0;
  ChildExit child;
  {
    SignalRelay relay;
    const int rc = spawn(args.command, env, "", pid, relay.child_defaults(), relay.child_ignored());
    if (rc != 0) {
      std::cerr << "gnnprof run: cannot run " << args.command[0] << ": " << std::strerror(rc) << "\n";
      return 2;
    }
    child = relay.wait(pid);
  }

  // Collect this run's profiles.
  LaunchProfiles launch = collect_launch_profiles(dir, stem, started, pid, env["GNNPROF_RUN_ID"]);
  for (const auto& u : launch.unreadable) std::cerr << "gnnprof run: skipping " << u << "\n";
  const auto& found = launch.found;
  const FoundProfile* main = launch.main >= 0 ? &found[launch.main] : nullptr;
  // A distributed run: the rank profiles keep their rank-named files, for gnnprof merge.
  std::vector<std::string> rank_files = launch.rank_files;
  if (rank_files.size() > 1) main = nullptr;
  if (found.empty()) {
    std::cerr << "gnnprof run: no profile was written (is the program statically linked, or GNNPROF_ENABLED=0?)\n";
  } else {
    std::string main_path;
    // A launch that failed and recorded nothing (a mistyped script name) does not replace an
    // earlier profile at that path.
    const bool failed = !child.waited || child.signal != 0 || child.code != 0;
    const bool empty = main != nullptr && main->profile.stages.empty() && main->profile.lines.empty() &&
                       main->profile.iterations.empty();
    const bool keep = main != nullptr && failed && empty && fs::exists(out, ec);
    // How the command ended, written into a profile: a report names a failed run, and
    // `gnnprof check` gives no verdict on one.
    auto record_exit = [&](FoundProfile& f) {
      f.profile.run.exit_code = child.code;
      f.profile.run.exit_signal = child.signal;
      if (Status st = write_profile_file(f.profile, f.path); !st)
        std::cerr << "gnnprof run: " << st.message() << " (the exit code is not recorded in it)\n";
    };
    if (keep) {
      std::cerr << "gnnprof run: the program failed and recorded nothing: " << out << " (an earlier profile) is kept; this run's is "
                << main->path << "\n";
    } else if (main != nullptr) {
      if (child.waited) record_exit(launch.found[static_cast<std::size_t>(main - found.data())]);
      if (::rename(main->path.c_str(), out.c_str()) == 0) main_path = out;
      else std::cerr << "gnnprof run: cannot rename " << main->path << " to " << out << ": " << std::strerror(errno) << "\n";
    } else if (rank_files.size() > 1 && child.waited && failed) {
      // A distributed launch that failed (torchrun's exit code, a rank killed): every rank's
      // profile says so, so that gnnprof check gives no verdict on a crashed run's ranks.
      for (auto& f : launch.found)
        if (f.profile.run.rank) record_exit(f);
    }
    std::cerr << "gnnprof run: " << found.size() << (found.size() == 1 ? " profile" : " profiles") << ":\n";
    // The launched process's first, then by rank and pid.
    std::vector<const FoundProfile*> listed;
    for (const auto& f : found) listed.push_back(&f);
    std::stable_sort(listed.begin(), listed.end(), [&](const FoundProfile* x, const FoundProfile* y) {
      if ((x == main) != (y == main)) return x == main;
      return std::make_pair(x->profile.run.rank.value_or(-1), x->profile.run.pid) <
             std::make_pair(y->profile.run.rank.value_or(-1), y->profile.run.pid);
    });
    for (const FoundProfile* fp : listed) {
      const FoundProfile& f = *fp;
      const Profile& p = f.profile;
      std::cerr << "  " << (&f == main && !main_path.empty() ? main_path : f.path) << "  pid " << p.run.pid;
      if (p.run.rank) std::cerr << ", rank " << *p.run.rank;
      if (p.run.world_size) std::cerr << " of " << *p.run.world_size;
      std::size_t complete = 0;
      for (const auto& it : p.iterations) complete += it.complete ? 1 : 0;
      std::cerr << ", " << p.recorded_events << " events, " << complete << " iterations";
      for (const auto& c : p.collectors)
        if (c.enabled && c.name != "host") std::cerr << ", " << c.name;
      std::cerr << "\n";
    }
    // A linked program that names its own output keeps its own session: its stages and steps
    // are in that file, not in this one (linked_forward.cpp's note).
    if (main != nullptr)
      for (const auto& c : main->profile.collectors) {
        constexpr std::string_view kAt = "session of its own, writing ", kEnd = ": its stages";
        const std::size_t at = c.reason.find(kAt), end = c.reason.rfind(kEnd);
        if (c.name != "linked-core" || c.enabled || at == std::string::npos || end == std::string::npos ||
            end <= at + kAt.size())
          continue;
        const std::string own = c.reason.substr(at + kAt.size(), end - at - kAt.size());
        if (fs::exists(own, ec))
          std::cerr << "gnnprof run: the program wrote a profile of its own, " << own
                    << ": its stages, steps and lines are there; this one has what gnnprof run saw beside it\n";
      }
    if (rank_files.size() > 1) {
      std::sort(rank_files.begin(), rank_files.end());
      std::string cmd;
      for (const auto& f : rank_files) cmd += " " + f;
      std::cerr << "gnnprof run: " << rank_files.size() << " ranks; one report of them all: gnnprof merge" << cmd
                << (args.html_out.empty() ? "" : " --html " + args.html_out) << "\n";
    }
    std::optional<reports::Report> report;
    if (main != nullptr && !keep) {
      report = reports::make_report(main->profile, {});
      std::vector<Profile> workers;
      for (const auto& f : found)
        if (f.profile.run.parent_pid == main->profile.run.pid && f.profile.run.parent_pid != 0) workers.push_back(f.profile);
      std::vector<Profile> producers;
      for (const auto& f : found)
        if (f.profile.run.feeds_pid == main->profile.run.pid && f.profile.run.feeds_pid != 0) producers.push_back(f.profile);
      reports::set_producer_processes(*report, reports::summarize_producer_processes(main->profile, producers));
      reports::set_loader_workers(*report, reports::summarize_loader_workers(main->profile, workers));
      // What a line_profiler or Scalene user expects at the end of the run: the gist, on stderr.
      if (const std::string gist = reports::run_summary(*report); !gist.empty() && !config::get_bool("GNNPROF_QUIET"))
        std::cerr << "gnnprof run: " << (main_path.empty() ? main->path : main_path) << " in brief (`gnnprof report "
                  << (main_path.empty() ? main->path : main_path) << "` for all of it):\n"
                  << gist;
    }
    if (!args.html_out.empty() && main != nullptr && keep) {
      std::cerr << "gnnprof run: " << args.html_out << " not written (this run recorded nothing)\n";
    } else if (!args.html_out.empty() && report) {
      auto reporter = reports::make_reporter("html", {});
      Status st = reporter ? reports::render_to_file(**reporter, *report, args.html_out) : reporter.status();
      if (!st) std::cerr << "gnnprof run: " << st.message() << "\n";
      else std::cerr << "gnnprof run: HTML report " << args.html_out << "\n";
    }
  }

  if (!child.waited) return 1;
  if (child.signal != 0) {  // die the same way
    std::cout.flush();
    std::cerr.flush();
    ::signal(child.signal, SIG_DFL);
    ::kill(::getpid(), child.signal);
  }
  return child.code;
}

int run_env(bool markdown) {
  if (markdown) {
    std::cout << config::markdown();
    return 0;
  }
  std::size_t w = 0;
  for (const auto& o : config::options()) w = std::max(w, std::string(o.name).size());
  for (const auto& o : config::options()) {
    const auto v = config::raw(o.name);
    std::cout << std::string(o.name) << std::string(w + 2 - std::string(o.name).size(), ' ')
              << (v ? "= " + *v + (config::valid(o, *v) ? "" : "  (not valid: the default is used)")
                    : "(default: " + std::string(*o.default_text ? o.default_text : "-") + ")")
              << "\n"
              << std::string(w + 2, ' ') << o.doc << "\n";
  }
  return 0;
}

}  // namespace gnnprof::cli
