// gnnprof/result.h — Status and Result<T>: errors as values inside gnnprof's libraries.
//
// Library code never throws across its own layers (STYLE.md, practice 5); a failure is a
// Status with a one-line message that the CLI prints as is. Usage:
//
//   gnnprof::Result<gnnprof::Profile> r = gnnprof::read_profile_file("p.json");
//   if (!r) { std::cerr << r.status().message() << "\n"; return 2; }
//   const gnnprof::Profile& p = *r;
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace gnnprof {

/// Success, or a one-line error message that names the object and the problem.
class Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status error(std::string message) {
    Status s;
    s.failed_ = true;
    s.message_ = std::move(message);
    return s;
  }
  bool is_ok() const noexcept { return !failed_; }
  explicit operator bool() const noexcept { return !failed_; }
  const std::string& message() const noexcept { return message_; }

 private:
  bool failed_ = false;
  std::string message_;
};

/// A value or the Status that explains why there is none.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}            // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}    // NOLINT(google-explicit-constructor)
  explicit operator bool() const noexcept { return value_.has_value(); }
  const Status& status() const noexcept { return status_; }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T&& operator*() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace gnnprof
