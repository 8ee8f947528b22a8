// gnnprof/config.h — every GNNPROF_* environment variable in one self-documenting table
// (Caliper's option table): name, type, default, one line of doc and who reads it, with one
// parser. A bad value is reported once on stderr (unless GNNPROF_QUIET) and the default used;
// the host program never sees an error. The plugins and the preload read it through the C ABI
// (gnnprof_config_* in gnnprof_c.h); `gnnprof env` prints it and docs/configuration.md is that
// output.
//
//   if (gnnprof::config::get_bool("GNNPROF_TORCH_NESTED")) ...
//   const auto n = gnnprof::config::get_count("GNNPROF_BUFFER_EVENTS");
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace gnnprof::config {

enum class Type {
  kBool,    ///< 1/true/on/yes or 0/false/off/no
  kCount,   ///< a non-negative integer, at most `max`
  kChoice,  ///< one of `choices` ("a|b|c"); unset is the default
  kString,  ///< free text (paths, patterns, lists)
};

struct Option {
  const char* name;
  Type type;
  const char* default_text;  ///< as documented ("" for none)
  const char* doc;           ///< one line
  const char* read_by;       ///< core, preload, torch observer, prefetch, cli, python
  const char* choices = "";  ///< kChoice: "a|b"
  std::uint64_t max = ~0ull; ///< kCount
};

/// The table, in documentation order.
std::span<const Option> options();
const Option* find(const char* name);

/// The variable's text when set and not empty.
std::optional<std::string> raw(const char* name);
bool is_set(const char* name);

/// Typed readers over the table: the value, or the table's default when unset or bad. A bad
/// value warns once per variable. `name` must be in the table (else: false / 0 / "").
bool get_bool(const char* name);
std::uint64_t get_count(const char* name);
/// The same for a variable whose default is the caller's (GNNPROF_PREFETCH: "the code's").
std::uint64_t get_count(const char* name, std::uint64_t code_default);
/// kChoice and kString: the value, or the default text when unset (or not one of the choices).
std::string get_string(const char* name);

/// For values with their own grammar (GNNPROF_TORCH_SAMPLE, GNNPROF_PREFETCH): reports `value`
/// of `name` as bad, once, with what was expected and what is used instead.
void warn_bad_value(const char* name, const std::string& value, const std::string& expected, const std::string& using_instead);

/// Whether `value` is a valid value of `o` (kString: always).
bool valid(const Option& o, const std::string& value);

/// The table as Markdown (docs/configuration.md is this).
std::string markdown();

}  // namespace gnnprof::config
