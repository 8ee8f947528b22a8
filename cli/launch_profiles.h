// launch_profiles.h — the profiles one launch wrote: every process of a command run under
// LD_PRELOAD writes <dir>/<stem>.[rankN.]<pid>.json. Shared by `gnnprof run` and `gnnprof ab`,
// so that a wrapper (`sh -c 'python3 x.py && sleep 1'`) never stands in for the program.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gnnprof/profile.h"

namespace gnnprof::cli {

struct FoundProfile {
  std::string path;
  Profile profile;
};

struct LaunchProfiles {
  std::vector<FoundProfile> found;
  /// The launched process's profile when it recorded anything, else the busiest one, a loop's
  /// rather than a DataLoader worker's (which names its loop: run.parent_pid); -1: none.
  int main = -1;
  std::vector<std::string> rank_files;  ///< profiles that name a rank
  std::vector<std::string> unreadable;  ///< "PATH: why", for files that match but do not parse
};

/// GNNPROF_OUTPUT for a launch writing under dir with this stem.
std::string launch_output_pattern(const std::filesystem::path& dir, const std::string& stem);

/// The files in `dir` named as a launch with this stem names its processes' profiles.
std::vector<std::string> launch_profile_paths(const std::filesystem::path& dir, const std::string& stem);

/// The profiles in `dir` named after `stem` and written since `since`; `pid` is the launched
/// process; `run_id` non-empty: profiles of another launch (their run id differs) are left out.
LaunchProfiles collect_launch_profiles(const std::filesystem::path& dir, const std::string& stem,
                                       std::filesystem::file_time_type since, pid_t pid, const std::string& run_id = "");

}  // namespace gnnprof::cli
