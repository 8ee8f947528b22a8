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
#include "gnnprof/internal/json_number.h"
#include "gnnprof/reports/compare.h"

namespace gnnprof::reports {

using json = nlohmann::ordered_json;

namespace {

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json side_json(const Side& s) {
  json runs = json::array();
  for (const auto& r : s.runs)
    runs.push_back({{"profile", r.profile},
                    {"command", r.command},
                    {"exit_code", r.exit_code},
                    {"error", r.error},
                    {"iterations", r.iterations},
                    {"median_iteration_ns", r.median_iteration_ns},
                    {"wall_ns", r.wall_ns}});
  return {{"label", s.label}, {"env", s.env}, {"command", s.command}, {"runs", runs}};
}

/// A number as T, checked: get<T>() on an out-of-range or fractional number is undefined
/// behaviour for integers (the fuzzer's UBSan found it in the profile reader).
template <typename T>
T checked(const json& v) {
  if (!detail::json_number_fits<T>(v)) throw std::runtime_error(std::string("expected a number in range, got ") + v.dump());
  return v.get<T>();
}

template <typename E>
E enum_at(const json& j, const char* key) {
  const auto text = j.at(key).get<std::string>();
  E e{};
  if (!from_string(text, e)) throw std::runtime_error(std::string(key) + ": unknown value \"" + text + "\"");
  return e;
}

std::optional<double> get_opt(const json& j, const char* key) {
  const json& v = j.at(key);
  if (v.is_null()) return std::nullopt;
  return checked<double>(v);
}

MetricComparison metric_from(const json& m) {
  MetricComparison mc;
  mc.name = m.at("name").get<std::string>();
  mc.scope = enum_at<Scope>(m, "scope");
  mc.baseline_n = checked<std::uint64_t>(m.at("baseline_n"));
  mc.candidate_n = checked<std::uint64_t>(m.at("candidate_n"));
  mc.baseline_median_ns = checked<std::int64_t>(m.at("baseline_median_ns"));
  mc.candidate_median_ns = checked<std::int64_t>(m.at("candidate_median_ns"));
  mc.delta_ns = checked<std::int64_t>(m.at("delta_ns"));
  mc.ratio = get_opt(m, "ratio");
  mc.ci_low = get_opt(m, "ci_low");
  mc.ci_high = get_opt(m, "ci_high");
  mc.p_value = checked<double>(m.at("p_value"));
  mc.verdict = enum_at<Verdict>(m, "verdict");
  if (m.contains("category")) mc.category = m.at("category").get<std::string>();  // absent before 0.1 reports
  if (m.contains("phase")) mc.phase = m.at("phase").get<std::string>();
  return mc;
}

Side side_from(const json& j) {
  Side s;
  s.label = j.at("label").get<std::string>();
  s.env = j.at("env").get<std::vector<std::string>>();
  s.command = j.at("command").get<std::string>();
  for (const auto& r : j.at("runs")) {
    RunRecord rr;
    rr.profile = r.at("profile").get<std::string>();
    rr.command = r.at("command").get<std::string>();
    rr.exit_code = checked<int>(r.at("exit_code"));
    rr.error = r.at("error").get<std::string>();
    rr.iterations = checked<std::uint64_t>(r.at("iterations"));
    rr.median_iteration_ns = checked<std::int64_t>(r.at("median_iteration_ns"));
    rr.wall_ns = checked<std::int64_t>(r.at("wall_ns"));
    s.runs.push_back(std::move(rr));
  }
  return s;
}

}  // namespace

namespace {
json metric_json(const MetricComparison& m) {
  json j = {{"name", m.name},
          {"scope", to_string(m.scope)},
          {"baseline_n", m.baseline_n},
          {"candidate_n", m.candidate_n},
          {"baseline_median_ns", m.baseline_median_ns},
          {"candidate_median_ns", m.candidate_median_ns},
          {"delta_ns", m.delta_ns},
          {"ratio", opt(m.ratio)},
          {"ci_low", opt(m.ci_low)},
          {"ci_high", opt(m.ci_high)},
          {"p_value", m.p_value},
          {"verdict", to_string(m.verdict)}};
  if (!m.category.empty()) j["category"] = m.category;
  if (!m.phase.empty()) j["phase"] = m.phase;
  return j;
}
}  // namespace

std::string comparison_to_json(const Comparison& c) {
  json j;
  j["schema"] = c.schema;
  j["tool"] = {{"name", "gnnprof"}, {"version", c.tool_version}};
  j["options"] = {{"skip", c.options.skip},
                  {"bootstrap", c.options.bootstrap},
                  {"seed", c.options.seed},
                  {"alpha", c.options.alpha},
                  {"ci", "bootstrap 95% of the ratio of medians"},
                  {"test", "Mann-Whitney U, two-sided, normal approximation with tie correction"}};
  j["baseline"] = side_json(c.baseline);
  j["candidate"] = side_json(c.candidate);
  j["headline"] = {{"metric", "iteration"},
                   {"speedup", opt(c.speedup)},
                   {"speedup_ci_low", opt(c.speedup_ci_low)},
                   {"speedup_ci_high", opt(c.speedup_ci_high)},
                   {"verdict", to_string(c.verdict)}};
  j["metrics"] = json::array();
  for (const auto& m : c.metrics) j["metrics"].push_back(metric_json(m));
  if (!c.lines.empty()) {  // written only when the profiles have line tables
    j["lines"] = json::array();
    for (const auto& l : c.lines)
      j["lines"].push_back({{"file", l.file},
                            {"function", l.function},
                            {"code", l.code},
                            {"candidate_code", l.candidate_code},
                            {"baseline_line", l.baseline_line},
                            {"candidate_line", l.candidate_line},
                            {"match", l.match},
                            {"baseline_hits", l.baseline_hits},
                            {"candidate_hits", l.candidate_hits},
                            {"metric", metric_json(l.metric)}});
  }
  return j.dump(2) + "\n";
}


Result<Comparison> comparison_from_json(const std::string& text, const std::string& origin) {
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
    const json& o = j.at("options");
    c.options.skip = checked<std::uint64_t>(o.at("skip"));
    c.options.bootstrap = checked<std::uint32_t>(o.at("bootstrap"));
    c.options.seed = checked<std::uint64_t>(o.at("seed"));
    c.options.alpha = checked<double>(o.at("alpha"));
    c.baseline = side_from(j.at("baseline"));
    c.candidate = side_from(j.at("candidate"));
    const json& h = j.at("headline");
    c.speedup = get_opt(h, "speedup");
    c.speedup_ci_low = get_opt(h, "speedup_ci_low");
    c.speedup_ci_high = get_opt(h, "speedup_ci_high");
    c.verdict = enum_at<Verdict>(h, "verdict");
    for (const auto& m : j.at("metrics")) c.metrics.push_back(metric_from(m));
    if (j.contains("lines")) {  // absent when neither side had line tables
      for (const auto& l : j.at("lines")) {
        LineComparison lc;
        lc.file = l.at("file").get<std::string>();
        lc.function = l.at("function").get<std::string>();
        lc.code = l.at("code").get<std::string>();
        lc.candidate_code = l.at("candidate_code").get<std::string>();
        lc.baseline_line = checked<std::uint32_t>(l.at("baseline_line"));
        lc.candidate_line = checked<std::uint32_t>(l.at("candidate_line"));
        lc.match = l.at("match").get<std::string>();
        lc.baseline_hits = checked<std::uint64_t>(l.at("baseline_hits"));
        lc.candidate_hits = checked<std::uint64_t>(l.at("candidate_hits"));
        lc.metric = metric_from(l.at("metric"));
        c.lines.push_back(std::move(lc));
      }
    }
    return c;
  } catch (const std::exception& e) {
    return Status::error(origin + ": bad comparison: " + e.what());
  }
}

Result<Comparison> read_comparison_file(const std::string& path) {
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    return Status::error(path + ": is a directory, not a comparison file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return comparison_from_json(ss.str(), path);
}

}  // namespace gnnprof::reports
