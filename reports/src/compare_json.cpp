// compare_json.cpp — the gnnprof.compare/1 document (docs/compare-schema.md): writer and a
// reader that checks every field before converting it.
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "gnnprof/gnnprof.h"
#include "gnnprof/internal/json_fields.h"
#include "gnnprof/internal/json_number.h"
#include "gnnprof/reports/compare.h"

namespace gnnprof::detail {
// The comparison's records, each described once for the writer and the reader below.
template <>
struct Record<reports::CompareOptions> {
  static constexpr auto fields =
      std::tuple{field("skip", &reports::CompareOptions::skip), field("bootstrap", &reports::CompareOptions::bootstrap),
                 field("seed", &reports::CompareOptions::seed), field("alpha", &reports::CompareOptions::alpha)};
};
template <>
struct Record<reports::RunRecord> {
  using R = reports::RunRecord;
  static constexpr auto fields =
      std::tuple{field("profile", &R::profile),     field("command", &R::command),
                 field("exit_code", &R::exit_code), field("error", &R::error),
                 field("iterations", &R::iterations), field("median_iteration_ns", &R::median_iteration_ns),
                 field("wall_ns", &R::wall_ns), field("line_events", &R::line_events, Presence::kWhenSet)};
};
template <>
struct Record<reports::Side> {
  using S = reports::Side;
  static constexpr auto fields =
      std::tuple{field("label", &S::label), field("env", &S::env), field("command", &S::command), field("runs", &S::runs)};
};
/// A metric; "category" and "phase" are written when not empty (absent before 0.1 reports).
template <>
struct Record<reports::MetricComparison> {
  using M = reports::MetricComparison;
  static constexpr auto fields =
      std::tuple{field("name", &M::name),
                 field("scope", &M::scope),
                 field("baseline_n", &M::baseline_n),
                 field("candidate_n", &M::candidate_n),
                 field("baseline_median_ns", &M::baseline_median_ns),
                 field("candidate_median_ns", &M::candidate_median_ns),
                 field("delta_ns", &M::delta_ns),
                 field("ratio", &M::ratio),
                 field("ci_low", &M::ci_low),
                 field("ci_high", &M::ci_high),
                 field("p_value", &M::p_value),
                 field("verdict", &M::verdict),
                 field("category", &M::category, Presence::kWhenSet),
                 field("phase", &M::phase, Presence::kWhenSet),
                 field("phases", &M::phases, Presence::kWhenSet),
                 field("statistic", &M::statistic, Presence::kWhenSet),
                 field("baseline_runs", &M::baseline_runs, Presence::kWhenSet),
                 field("candidate_runs", &M::candidate_runs, Presence::kWhenSet)};
};
/// A line matched across the sides, with its metric.
template <>
struct Record<reports::LineComparison> {
  using L = reports::LineComparison;
  static constexpr auto fields =
      std::tuple{field("file", &L::file),
                 field("function", &L::function),
                 field("code", &L::code),
                 field("candidate_code", &L::candidate_code),
                 field("baseline_line", &L::baseline_line),
                 field("candidate_line", &L::candidate_line),
                 field("match", &L::match),
                 field("baseline_hits", &L::baseline_hits),
                 field("candidate_hits", &L::candidate_hits),
                 field("sparse", &L::sparse, Presence::kWhenSet),
                 field("baseline_in_workers", &L::baseline_in_workers, Presence::kWhenSet),
                 field("candidate_in_workers", &L::candidate_in_workers, Presence::kWhenSet),
                 field("baseline_off_loop", &L::baseline_off_loop, Presence::kWhenSet),
                 field("candidate_off_loop", &L::candidate_off_loop, Presence::kWhenSet),
                 field("metric", &L::metric)};
};
}  // namespace gnnprof::detail

namespace gnnprof::reports {

using json = nlohmann::ordered_json;
using detail::to_json_value;

namespace {

/// A number as T, checked: get<T>() on an out-of-range or fractional number is undefined
/// behaviour for integers (the fuzzer's UBSan found it in the profile reader).
template <typename T>
T checked(const json& v) {
  if (!detail::json_number_fits<T>(v)) throw std::runtime_error(std::string("expected a number in range, got ") + v.dump());
  return v.get<T>();
}

/// o[key] into `out`, checked: numbers in range, enums by name, records field by field.
template <typename T>
void read_value(const json& o, const char* key, T& out) {
  const json& v = o.at(key);
  if constexpr (std::is_enum_v<T>) {
    const auto text = v.get<std::string>();
    if (!from_string(text, out)) throw std::runtime_error(std::string(key) + ": unknown value \"" + text + "\"");
  } else if constexpr (detail::Optional<T>::value) {
    out = v.is_null() ? T{} : T{checked<typename T::value_type>(v)};
  } else if constexpr (detail::IsRecord<T>) {
    detail::for_each_read_field(out, v, [&](const char* k, auto& m) { read_value(v, k, m); });
  } else if constexpr (detail::RecordVector<T>::value) {
    out.clear();
    for (const auto& x : v) {
      typename detail::RecordVector<T>::element e;
      detail::for_each_read_field(e, x, [&](const char* k, auto& m) { read_value(x, k, m); });
      out.push_back(std::move(e));
    }
  } else if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    out = checked<T>(v);
  } else {
    out = v.get<T>();
  }
}

}  // namespace

std::string comparison_to_json(const Comparison& c) {
  json j;
  j["schema"] = c.schema;
  j["tool"] = {{"name", "gnnprof"}, {"version", c.tool_version}};
  j["options"] = to_json_value(c.options);
  const bool runs = !c.metrics.empty() && runs_are_samples(c.metrics.front());
  j["options"]["ci"] = runs ? "Welch's t 95% interval of the difference of the runs' medians, as a ratio to the baseline runs' mean"
                            : "bootstrap 95% of the ratio of medians";
  j["options"]["test"] = runs ? "Welch's t on the runs' medians, two-sided"
                              : "Mann-Whitney U, two-sided, normal approximation with tie correction";
  j["baseline"] = to_json_value(c.baseline);
  j["candidate"] = to_json_value(c.candidate);
  j["headline"] = {{"metric", "iteration"},
                   {"speedup", to_json_value(c.speedup)},
                   {"speedup_ci_low", to_json_value(c.speedup_ci_low)},
                   {"speedup_ci_high", to_json_value(c.speedup_ci_high)},
                   {"verdict", to_string(c.verdict)}};
  j["metrics"] = to_json_value(c.metrics);
  if (!c.lines.empty()) j["lines"] = to_json_value(c.lines);  // written only when the profiles have line tables
  if (c.baseline_passes || c.candidate_passes)
    j["backward_passes"] = {{"baseline", to_json_value(c.baseline_passes)}, {"candidate", to_json_value(c.candidate_passes)}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<Comparison> comparison_from_json(const std::string& text, const std::string& origin) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return Status::error(origin + ": empty file");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::error(origin + (e.byte >= text.size() ? ": truncated JSON"
                                                         : ": not a JSON file (malformed at byte " + std::to_string(e.byte) + ")"));
  } catch (const json::exception& e) {
    return Status::error(origin + ": invalid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string() || j["schema"] != kCompareSchema)
    return Status::error(origin + ": not a gnnprof comparison (expected schema \"" + kCompareSchema + "\")");
  try {
    Comparison c;
    c.tool_version = j.at("tool").at("version").get<std::string>();
    read_value(j, "options", c.options);
    read_value(j, "baseline", c.baseline);
    read_value(j, "candidate", c.candidate);
    const json& h = j.at("headline");
    read_value(h, "speedup", c.speedup);
    read_value(h, "speedup_ci_low", c.speedup_ci_low);
    read_value(h, "speedup_ci_high", c.speedup_ci_high);
    read_value(h, "verdict", c.verdict);
    read_value(j, "metrics", c.metrics);
    if (j.contains("lines")) read_value(j, "lines", c.lines);  // absent when neither side had line tables
    if (j.contains("backward_passes")) {
      read_value(j.at("backward_passes"), "baseline", c.baseline_passes);
      read_value(j.at("backward_passes"), "candidate", c.candidate_passes);
    }
    return c;
  } catch (const std::exception& e) {
    return Status::error(origin + ": bad comparison: " + e.what());
  }
}

Result<Comparison> read_comparison_file(const std::string& path) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    return Status::error(path + ": is a directory, not a comparison file");
  if (std::error_code ec; std::filesystem::is_character_file(path, ec) || std::filesystem::is_block_file(path, ec))
    return Status::error(path + ": is a device, not a comparison file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return comparison_from_json(ss.str(), path);
}

}  // namespace gnnprof::reports
