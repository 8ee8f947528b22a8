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
/// The same with `diagnostics` in place of the profile's own (a report's, computed on reading).
std::string profile_to_json(const Profile& profile, const std::vector<Diagnostic>& diagnostics);

/// Parses JSON text; `origin` names the source in error messages.
Result<Profile> profile_from_json(const std::string& text, const std::string& origin);

/// Reads and validates a profile file.
Result<Profile> read_profile_file(const std::string& path);

/// How a write finishes. kDurable fsyncs the file before the rename, so it survives a crash of
/// the machine. kRenameOnly skips the fsync: readers still see the old or the new complete
/// file, and the file survives the writing process being killed (SIGKILL), which is what a
/// periodic flush is for; fsync's disk wait and writeback then stay off the writing thread.
enum class FileSync { kDurable, kRenameOnly };

/// Writes a file through a temporary file in the same directory that commit() renames over
/// the target, so readers see the old complete file or the new complete one. Destroyed
/// without commit() (an error, an exception), the temporary file is removed.
///
///   auto w = gnnprof::AtomicFileWriter::open("features.f16");
///   if (!w) return w.status();
///   for (...) if (auto st = w->write(chunk.data(), chunk.size()); !st) return st;
///   return w->commit();
class AtomicFileWriter {
 public:
  static Result<AtomicFileWriter> open(const std::string& path);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();
  Status write(const void* data, std::size_t size);
  /// Flushes to disk (kDurable), closes and renames over the target. The writer is done
  /// afterwards.
  Status commit(FileSync sync = FileSync::kDurable);

 private:
  AtomicFileWriter(std::string path, std::string tmp, int fd) : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  Status fail(int err);
  std::string path_, tmp_;  ///< tmp_ "": written in place (not a regular file: /dev/stdout, a FIFO)
  std::string target_;      ///< what path_ names through a symbolic link ("": path_ itself)
  int fd_ = -1;
};

/// Writes `text` to `path` atomically (AtomicFileWriter).
Status write_file_atomic(const std::string& path, const std::string& text, FileSync sync = FileSync::kDurable);

/// write_file_atomic(path, profile_to_json(profile)).
Status write_profile_file(const Profile& profile, const std::string& path, FileSync sync = FileSync::kDurable);

}  // namespace gnnprof
