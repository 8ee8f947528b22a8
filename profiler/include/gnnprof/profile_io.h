// gnnprof/profile_io.h — the `gnnprof.profile/1` JSON format: write and read a Profile.
//
// Writing goes through a temporary file in the target directory and rename(2), so a reader
// sees the previous complete profile or the new complete one, never half of one. Reading
// rejects missing, truncated and foreign files with a one-line message naming the file.
//
//   if (auto st = gnnprof::write_profile_file(p, "run.json"); !st) report(st.message());
#pragma once

#include <string>

#include "gnnprof/profile.h"
#include "gnnprof/result.h"

namespace gnnprof {

/// The JSON text of a profile (2-space indent, fixed key order, trailing newline).
std::string profile_to_json(const Profile& profile);

/// Parses JSON text; `origin` names the source in error messages.
Result<Profile> profile_from_json(const std::string& text, const std::string& origin);

/// Reads and validates a profile file.
Result<Profile> read_profile_file(const std::string& path);

/// Writes `text` to `path` atomically (temp file in the same directory + rename).
Status write_file_atomic(const std::string& path, const std::string& text);

/// write_file_atomic(path, profile_to_json(profile)).
Status write_profile_file(const Profile& profile, const std::string& path);

}  // namespace gnnprof
