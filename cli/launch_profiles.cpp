// launch_profiles.cpp — finding the profiles of one launch and the one that stands for it.
#include "launch_profiles.h"

#include <algorithm>
#include <regex>

#include "gnnprof/profile_io.h"

namespace gnnprof::cli {
namespace fs = std::filesystem;

std::string launch_output_pattern(const fs::path& dir, const std::string& stem) {
  // Absolute: a program that changes its directory (os.chdir, Hydra) still writes here.
  std::error_code ec;
  const fs::path abs = fs::absolute(dir, ec);
  return ((ec ? dir : abs) / (stem + ".%R%p.json")).string();
}

namespace {

std::regex name_pattern(const std::string& stem) {
  return std::regex(std::regex_replace(stem, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                    R"(\.(rank[0-9]+\.)?[0-9]+(\.exec[0-9]+)?\.json)");
}

}  // namespace

std::vector<std::string> launch_profile_paths(const fs::path& dir, const std::string& stem) {
  std::vector<std::string> out;
  const std::regex name_re = name_pattern(stem);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.is_regular_file(ec) && std::regex_match(entry.path().filename().string(), name_re))
      out.push_back(entry.path().string());
  return out;
}

LaunchProfiles collect_launch_profiles(const fs::path& dir, const std::string& stem, fs::file_time_type since,
                                       pid_t pid, const std::string& run_id) {
  LaunchProfiles out;
  const std::regex name_re = name_pattern(stem);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file(ec) || !std::regex_match(name, name_re)) continue;
    if (entry.last_write_time(ec) < since) continue;
    Result<Profile> p = read_profile_file(entry.path().string());
    if (!p) {
      out.unreadable.push_back(entry.path().string() + ": " + p.status().message());
      continue;
    }
    // A file an earlier launch wrote within the time window (a worker's of the run before).
    if (!run_id.empty() && !p->run.run_id.empty() && p->run.run_id != run_id) continue;
    out.found.push_back({entry.path().string(), std::move(*p)});
  }
  const auto& found = out.found;
  // The launched process's, when it recorded a stage, line or iteration (not a counter alone: a
  // launcher that set torch's threads and spawned the loop).
  // Of several (an image exec'd in the same process wrote <stem>.<pid>.exec<N>.json), the busiest.
  for (std::size_t i = 0; i < found.size(); ++i) {
    const Profile& p = found[i].profile;
    if (p.run.pid == pid && p.recorded_events > 0 && (!p.stages.empty() || !p.lines.empty() || !p.iterations.empty()) &&
        (out.main < 0 || p.recorded_events > found[static_cast<std::size_t>(out.main)].profile.recorded_events))
      out.main = static_cast<int>(i);
  }
  // A launcher that forked the training (multiprocessing.Process, Hogwild) and built a model on
  // the way: the busiest of its children forked to train that has iterations, where it has none.
  auto iterates = [](const Profile& p) {
    return std::any_of(p.iterations.begin(), p.iterations.end(), [](const IterationStats& it) { return it.complete; });
  };
  auto forked_to_train = [](const Profile& p) {
    return std::any_of(p.collectors.begin(), p.collectors.end(),
                       [](const CollectorInfo& c) { return c.name == "fork-child" && c.enabled; });
  };
  if (out.main >= 0 && !iterates(found[static_cast<std::size_t>(out.main)].profile)) {
    int best = -1;
    for (std::size_t i = 0; i < found.size(); ++i) {
      const Profile& p = found[i].profile;
      if (p.run.parent_pid == 0 && forked_to_train(p) && iterates(p) &&
          (best < 0 || p.recorded_events > found[static_cast<std::size_t>(best)].profile.recorded_events))
        best = static_cast<int>(i);
    }
    if (best >= 0) out.main = best;
  }
  auto busier = [&](int m, const FoundProfile& f) {
    const bool worker = f.profile.run.parent_pid != 0, m_worker = m >= 0 && found[m].profile.run.parent_pid != 0;
    if (m < 0 || worker != m_worker) return m < 0 || !worker;
    return f.profile.recorded_events > found[m].profile.recorded_events;
  };
  if (out.main < 0)
    for (std::size_t i = 0; i < found.size(); ++i)
      if (busier(out.main, found[i])) out.main = static_cast<int>(i);
  for (const auto& f : found)
    if (f.profile.run.rank) out.rank_files.push_back(f.path);
  return out;
}

}  // namespace gnnprof::cli
