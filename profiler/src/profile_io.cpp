// profile_io.cpp — gnnprof.profile/1 <-> Profile. Field order is fixed (ordered_json), so
// write -> read -> write reproduces the document byte for byte.
#include "gnnprof/profile_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>
#include <type_traits>
#include <random>
#include <sstream>

#include "gnnprof/internal/json_fields.h"
#include "gnnprof/internal/json_number.h"

namespace gnnprof {

using json = nlohmann::ordered_json;
using detail::json_number_fits;

namespace {

json to_json_stages(const std::map<std::string, std::int64_t>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

}  // namespace

// ---- One field description per record (gnnprof/internal/json_fields.h) ----
// The writer (to_value) and the reader (read_value) both walk Record<S>::fields. Records with
// optional or derived fields (run, iterations, lines, diagnostics, the columnar timeline) are
// written and read by hand below.
namespace detail {
template <>
struct Record<ToolInfo> {
  static constexpr auto fields = std::tuple{field("name", &ToolInfo::name), field("version", &ToolInfo::version)};
};
template <>
struct Record<ClockInfo> {
  static constexpr auto fields = std::tuple{field("source", &ClockInfo::source), field("ticks_per_ns", &ClockInfo::ticks_per_ns),
                                            field("calibration_ns", &ClockInfo::calibration_ns)};
};
template <>
struct Record<CollectorInfo> {
  static constexpr auto fields = std::tuple{field("name", &CollectorInfo::name), field("enabled", &CollectorInfo::enabled),
                                            field("reason", &CollectorInfo::reason)};
};
template <>
struct Record<ThreadInfo> {
  static constexpr auto fields =
      std::tuple{field("index", &ThreadInfo::index), field("tid", &ThreadInfo::tid), field("name", &ThreadInfo::name),
                 field("recorded_events", &ThreadInfo::recorded_events), field("dropped_events", &ThreadInfo::dropped_events)};
};
template <>
struct Record<StageThreadStats> {
  static constexpr auto fields = std::tuple{field("thread", &StageThreadStats::thread), field("hits", &StageThreadStats::hits),
                                            field("total_ns", &StageThreadStats::total_ns), field("self_ns", &StageThreadStats::self_ns)};
};
template <>
struct Record<StageStats> {
  static constexpr auto fields =
      std::tuple{field("name", &StageStats::name),     field("category", &StageStats::category), field("hits", &StageStats::hits),
                 field("total_ns", &StageStats::total_ns), field("self_ns", &StageStats::self_ns), field("mean_ns", &StageStats::mean_ns),
                 field("p50_ns", &StageStats::p50_ns), field("p90_ns", &StageStats::p90_ns),   field("max_ns", &StageStats::max_ns),
                 field("pct_wall", &StageStats::pct_wall), field("by_thread", &StageStats::by_thread)};
};
template <>
struct Record<StageEdge> {
  static constexpr auto fields = std::tuple{field("parent", &StageEdge::parent), field("child", &StageEdge::child),
                                            field("hits", &StageEdge::hits), field("total_ns", &StageEdge::total_ns),
                                            field("self_ns", &StageEdge::self_ns)};
};
template <>
struct Record<TransferStats> {
  static constexpr auto fields =
      std::tuple{field("stage", &TransferStats::stage),         field("file", &TransferStats::file),
                 field("line", &TransferStats::line),           field("direction", &TransferStats::direction),
                 field("memory", &TransferStats::memory),       field("mode", &TransferStats::mode),
                 field("count", &TransferStats::count),         field("bytes", &TransferStats::bytes),
                 field("total_ns", &TransferStats::total_ns)};
};
template <>
struct Record<KernelStats> {
  static constexpr auto fields =
      std::tuple{field("name", &KernelStats::name),         field("stage", &KernelStats::stage), field("op", &KernelStats::op),
                 field("count", &KernelStats::count),       field("total_ns", &KernelStats::total_ns),
                 field("min_ns", &KernelStats::min_ns),     field("max_ns", &KernelStats::max_ns)};
};
template <>
struct Record<MaterializationStats> {
  static constexpr auto fields =
      std::tuple{field("name", &MaterializationStats::name), field("stage", &MaterializationStats::stage),
                 field("file", &MaterializationStats::file), field("line", &MaterializationStats::line),
                 field("hits", &MaterializationStats::hits), field("rows", &MaterializationStats::rows),
                 field("bytes", &MaterializationStats::bytes)};
};
template <>
struct Record<CounterStats> {
  static constexpr auto fields = std::tuple{field("name", &CounterStats::name), field("samples", &CounterStats::samples),
                                            field("min", &CounterStats::min),   field("max", &CounterStats::max),
                                            field("mean", &CounterStats::mean), field("last", &CounterStats::last)};
};
template <>
struct Record<EnvironmentInfo> {
  static constexpr auto fields =
      std::tuple{field("cpus", &EnvironmentInfo::cpus), field("blas", &EnvironmentInfo::blas),
                 field("omp_num_threads", &EnvironmentInfo::omp_num_threads), field("max_threads", &EnvironmentInfo::max_threads)};
};
template <>
struct Record<HostSample> {
  static constexpr auto fields =
      std::tuple{field("ts_ns", &HostSample::ts_ns), field("rss_bytes", &HostSample::rss_bytes), field("cpu_ns", &HostSample::cpu_ns)};
};

}  // namespace detail

namespace {

using detail::field;
using detail::IsRecord;
using detail::Record;
using detail::RecordVector;

template <class T>
json to_value(const T& v) {
  return detail::to_json_value(v);
}

json profile_json(const Profile& p, const std::vector<Diagnostic>& diagnostics) {
  json j;
  j["schema"] = p.schema;
  j["tool"] = to_value(p.tool);
  j["run"] = {{"command", p.run.command},
              {"pid", p.run.pid},
              {"host", p.run.host},
              {"cwd", p.run.cwd},
              {"start_time", p.run.start_time},
              {"start_unix_ns", p.run.start_unix_ns},
              {"start_monotonic_ns", p.run.start_monotonic_ns},
              {"rank", to_value(p.run.rank)},
              {"local_rank", to_value(p.run.local_rank)},
              {"world_size", to_value(p.run.world_size)}};
  if (!p.run.run_id.empty()) j["run"]["run_id"] = p.run.run_id;
  j["clock"] = to_value(p.clock);
  j["collectors"] = to_value(p.collectors);
  j["wall_ns"] = p.wall_ns;
  j["main_thread"] = p.main_thread;
  j["unattributed_ns"] = p.unattributed_ns;
  j["recorded_events"] = p.recorded_events;
  j["dropped_events"] = p.dropped_events;
  j["threads"] = to_value(p.threads);
  j["stages"] = to_value(p.stages);
  if (!p.stage_edges.empty()) j["stage_edges"] = to_value(p.stage_edges);  // absent in hand-made and older profiles
  j["iterations"] = json::array();
  for (const auto& it : p.iterations) {
    json ji = {{"index", it.index},
               {"begin_ns", it.begin_ns},
               {"wall_ns", it.wall_ns},
               {"complete", it.complete},
               {"stages", to_json_stages(it.stages)},
               {"other_threads", to_json_stages(it.other_threads)},
               {"unattributed_ns", it.unattributed_ns}};
    if (!it.ops_observed) ji["ops_observed"] = false;  // written only when sampled out
    if (!it.categories.empty() || !it.other_categories.empty()) {  // absent in hand-made profiles
      ji["categories"] = to_json_stages(it.categories);
      ji["other_categories"] = to_json_stages(it.other_categories);
    }
    if (!it.lines.empty()) {  // written only when lines were timed
      json lines = json::object();
      for (const auto& [idx, ns] : it.lines) lines[std::to_string(idx)] = ns;
      ji["lines"] = std::move(lines);
    }
    j["iterations"].push_back(std::move(ji));
  }
  j["iterations_dropped"] = p.iterations_dropped;
  j["lines"] = json::array();
  for (const auto& l : p.lines) {
    json jl = {{"file", l.file},         {"line", l.line},   {"function", l.function},
               {"code", l.code},         {"stage", l.stage}, {"hits", l.hits},
               {"total_ns", l.total_ns}, {"max_ns", l.max_ns}};
    // Traced Python's attribution, written only where there is some.
    if (!l.stages.empty()) jl["stages"] = to_json_stages(l.stages);
    if (l.backward_ns != 0) jl["backward_ns"] = l.backward_ns;
    if (l.gpu_ns != 0) jl["gpu_ns"] = l.gpu_ns;
    j["lines"].push_back(std::move(jl));
  }
  j["transfers"] = to_value(p.transfers);
  j["kernels"] = to_value(p.kernels);
  j["materializations"] = to_value(p.materializations);
  j["counters"] = to_value(p.counters);
  // Columnar: a name table and one array per field, so that a million events cost a few
  // numbers each in the file and in a reader's memory, not an object each.
  {
    json thread = json::array(), kind = json::array(), name = json::array(), ts = json::array(), dur = json::array(),
         value = json::array();
    for (const auto& e : p.timeline) {
      thread.push_back(e.thread);
      kind.push_back(static_cast<int>(e.kind));
      name.push_back(e.name);
      ts.push_back(e.ts_ns);
      dur.push_back(e.dur_ns);
      value.push_back(e.value);
    }
    j["timeline"] = {{"names", p.timeline_names}, {"thread", std::move(thread)}, {"kind", std::move(kind)},
                     {"name", std::move(name)},   {"ts_ns", std::move(ts)},      {"dur_ns", std::move(dur)},
                     {"value", std::move(value)}};
  }
  j["timeline_dropped"] = p.timeline_dropped;
  j["environment"] = to_value(p.environment);
  j["host_samples"] = to_value(p.host_samples);
  j["diagnostics"] = json::array();
  for (const auto& d : diagnostics) {
    json ev = json::object();
    for (const auto& [k, v] : d.evidence) ev[k] = v;
    j["diagnostics"].push_back(
        {{"id", d.id}, {"severity", to_string(d.severity)}, {"message", d.message}, {"evidence", ev}});
  }
  return j;
}

// Reading: every access names the JSON path it failed at.
struct Reader {
  std::string origin;

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw std::runtime_error(origin + ": " + path + ": " + what);
  }
  const json& field(const json& o, const char* key, const std::string& path) const {
    if (!o.is_object()) fail(path, "expected an object");
    auto it = o.find(key);
    if (it == o.end()) fail(path, std::string("missing key \"") + key + "\"");
    return *it;
  }
  /// A name of an enum in site.h (from_string), or a failure listing the expected names.
  template <typename E>
  void get_enum(const json& o, const char* key, const std::string& path, E& out, const char* expected) const {
    const auto text = get<std::string>(o, key, path);
    if (!from_string(text, out)) fail(path + "." + key, "\"" + text + "\" is not one of " + expected);
  }
  template <typename T>
  T get(const json& o, const char* key, const std::string& path) const {
    return as<T>(field(o, key, path), path + "." + key);
  }
  /// v as T, checked first: converting an out-of-range number with get<T>() is undefined
  /// behaviour (UBSan found it through the fuzzer), so integers must be JSON integers in T's
  /// range, and the other types must match exactly.
  template <typename T>
  T as(const json& v, const std::string& path) const {
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) fail(path, std::string("wrong type (") + v.type_name() + ")");
    } else if constexpr (std::is_arithmetic_v<T>) {
      if (!json_number_fits<T>(v))
        fail(path, v.is_number_integer() ? "integer out of range" : std::string("wrong type (") + v.type_name() + ")");
    }
    try {
      return v.get<T>();
    } catch (const json::exception&) {
      fail(path, std::string("wrong type (") + v.type_name() + ")");
    }
  }
  const json& array(const json& o, const char* key, const std::string& path) const {
    const json& v = field(o, key, path);
    if (!v.is_array()) fail(path + "." + key, "expected an array");
    return v;
  }
  std::optional<std::int64_t> opt(const json& o, const char* key, const std::string& path) const {
    const json& v = field(o, key, path);
    if (v.is_null()) return std::nullopt;
    return as<std::int64_t>(v, path + "." + key);
  }
  std::map<std::string, std::int64_t> stage_map(const json& o, const char* key, const std::string& path) const {
    const json& v = field(o, key, path);
    if (!v.is_object()) fail(path + "." + key, "expected an object");
    std::map<std::string, std::int64_t> m;
    for (auto it = v.begin(); it != v.end(); ++it) {
      m[it.key()] = as<std::int64_t>(it.value(), path + "." + key + "." + it.key());
    }
    return m;
  }
};

const char* names_of(Direction) { return "h2d, d2h, d2d or h2h"; }
const char* names_of(HostMemory) { return "pinned, pageable or none"; }
const char* names_of(CopyMode) { return "sync or async"; }

template <class T>
void read_value(const Reader& r, const json& o, const char* key, const std::string& path, T& out);

/// A record at `path`, field by field from Record<S>::fields.
template <IsRecord S>
S read_record(const Reader& r, const json& o, const std::string& path) {
  if (!o.is_object()) r.fail(path, "expected an object");
  S s;
  detail::for_each_field(s, [&](const char* key, auto& m) { read_value(r, o, key, path, m); });
  return s;
}

template <class T>
void read_value(const Reader& r, const json& o, const char* key, const std::string& path, T& out) {
  if constexpr (std::is_enum_v<T>) {
    r.get_enum(o, key, path, out, names_of(out));
  } else if constexpr (IsRecord<T>) {
    out = read_record<T>(r, r.field(o, key, path), path + "." + key);
  } else if constexpr (RecordVector<T>::value) {
    out.clear();
    std::size_t i = 0;
    for (const auto& x : r.array(o, key, path))
      out.push_back(read_record<typename RecordVector<T>::element>(r, x, path + "." + key + "[" + std::to_string(i++) + "]"));
  } else {
    out = r.get<T>(o, key, path);
  }
}

Profile profile_from(const json& j, const Reader& r) {
  Profile p;
  const std::string root = "$";
  p.schema = r.get<std::string>(j, "schema", root);
  read_value(r, j, "tool", root, p.tool);
  const json& run = r.field(j, "run", root);
  p.run.command = r.get<std::vector<std::string>>(run, "command", "$.run");
  p.run.pid = r.get<std::int64_t>(run, "pid", "$.run");
  p.run.host = r.get<std::string>(run, "host", "$.run");
  p.run.cwd = r.get<std::string>(run, "cwd", "$.run");
  p.run.start_time = r.get<std::string>(run, "start_time", "$.run");
  p.run.start_unix_ns = r.get<std::int64_t>(run, "start_unix_ns", "$.run");
  p.run.start_monotonic_ns = r.get<std::int64_t>(run, "start_monotonic_ns", "$.run");
  p.run.rank = r.opt(run, "rank", "$.run");
  p.run.local_rank = r.opt(run, "local_rank", "$.run");
  p.run.world_size = r.opt(run, "world_size", "$.run");
  if (auto id = run.find("run_id"); id != run.end() && id->is_string()) p.run.run_id = id->get<std::string>();
  read_value(r, j, "clock", root, p.clock);
  read_value(r, j, "collectors", root, p.collectors);
  p.wall_ns = r.get<std::int64_t>(j, "wall_ns", root);
  p.main_thread = r.get<std::uint32_t>(j, "main_thread", root);
  p.unattributed_ns = r.get<std::int64_t>(j, "unattributed_ns", root);
  p.recorded_events = r.get<std::uint64_t>(j, "recorded_events", root);
  p.dropped_events = r.get<std::uint64_t>(j, "dropped_events", root);
  read_value(r, j, "threads", root, p.threads);
  read_value(r, j, "stages", root, p.stages);
  if (j.contains("stage_edges")) read_value(r, j, "stage_edges", root, p.stage_edges);
  std::size_t i = 0;
  for (const auto& it : r.array(j, "iterations", root)) {
    std::string path = "$.iterations[" + std::to_string(i++) + "]";
    IterationStats is;
    is.index = r.get<std::uint64_t>(it, "index", path);
    is.begin_ns = r.get<std::int64_t>(it, "begin_ns", path);
    is.wall_ns = r.get<std::int64_t>(it, "wall_ns", path);
    is.complete = r.get<bool>(it, "complete", path);
    is.stages = r.stage_map(it, "stages", path);
    is.other_threads = r.stage_map(it, "other_threads", path);
    is.unattributed_ns = r.get<std::int64_t>(it, "unattributed_ns", path);
    if (it.contains("ops_observed")) is.ops_observed = r.get<bool>(it, "ops_observed", path);
    if (it.contains("categories")) {
      is.categories = r.stage_map(it, "categories", path);
      is.other_categories = r.stage_map(it, "other_categories", path);
    }
    if (it.contains("lines")) {
      for (const auto& [key, ns] : r.stage_map(it, "lines", path)) {
        char* end = nullptr;
        const unsigned long idx = std::strtoul(key.c_str(), &end, 10);
        if (key.empty() || *end != '\0' || idx > 0xffffffffUL) r.fail(path + ".lines", "key \"" + key + "\" is not a line index");
        is.lines[static_cast<std::uint32_t>(idx)] = ns;
      }
    }
    p.iterations.push_back(std::move(is));
  }
  p.iterations_dropped = r.get<std::uint64_t>(j, "iterations_dropped", root);
  i = 0;
  for (const auto& l : r.array(j, "lines", root)) {
    std::string path = "$.lines[" + std::to_string(i++) + "]";
    LineStats ls;
    ls.file = r.get<std::string>(l, "file", path);
    ls.line = r.get<std::uint32_t>(l, "line", path);
    ls.function = r.get<std::string>(l, "function", path);
    ls.code = r.get<std::string>(l, "code", path);
    ls.stage = r.get<std::string>(l, "stage", path);
    ls.hits = r.get<std::uint64_t>(l, "hits", path);
    ls.total_ns = r.get<std::int64_t>(l, "total_ns", path);
    ls.max_ns = r.get<std::int64_t>(l, "max_ns", path);
    if (l.contains("stages")) ls.stages = r.stage_map(l, "stages", path);
    if (l.contains("backward_ns")) ls.backward_ns = r.get<std::int64_t>(l, "backward_ns", path);
    if (l.contains("gpu_ns")) ls.gpu_ns = r.get<std::int64_t>(l, "gpu_ns", path);
    p.lines.push_back(std::move(ls));
  }
  for (const auto& it : p.iterations)
    for (const auto& [idx, ns] : it.lines)
      if (idx >= p.lines.size()) r.fail("$.iterations[" + std::to_string(it.index) + "].lines", "line index out of range");
  read_value(r, j, "transfers", root, p.transfers);
  if (j.contains("kernels")) read_value(r, j, "kernels", root, p.kernels);  // absent in profiles written before it existed
  read_value(r, j, "materializations", root, p.materializations);
  read_value(r, j, "counters", root, p.counters);
  {
    const json& tl = r.field(j, "timeline", root);
    p.timeline_names = r.get<std::vector<std::string>>(tl, "names", "$.timeline");
    const json& thread = r.array(tl, "thread", "$.timeline");
    const json& kind = r.array(tl, "kind", "$.timeline");
    const json& name = r.array(tl, "name", "$.timeline");
    const json& ts = r.array(tl, "ts_ns", "$.timeline");
    const json& dur = r.array(tl, "dur_ns", "$.timeline");
    const json& value = r.array(tl, "value", "$.timeline");
    const std::size_t n = thread.size();
    if (kind.size() != n || name.size() != n || ts.size() != n || dur.size() != n || value.size() != n)
      r.fail("$.timeline", "columns differ in length");
    p.timeline.resize(n);
    try {
      for (std::size_t k = 0; k < n; ++k) {
        TimelineEvent& e = p.timeline[k];
        const std::string at = "$.timeline[" + std::to_string(k) + "]";
        e.thread = r.as<std::uint32_t>(thread[k], at + ".thread");
        const int kd = r.as<int>(kind[k], at + ".kind");
        e.name = r.as<std::uint32_t>(name[k], at + ".name");
        if (kd < 0 || kd >= kTimelineKinds || e.name >= p.timeline_names.size())
          r.fail("$.timeline[" + std::to_string(k) + "]", "kind or name index out of range");
        e.kind = static_cast<TimelineKind>(kd);
        e.ts_ns = r.as<std::int64_t>(ts[k], at + ".ts_ns");
        e.dur_ns = r.as<std::int64_t>(dur[k], at + ".dur_ns");
        e.value = r.as<double>(value[k], at + ".value");
      }
    } catch (const json::exception&) {
      r.fail("$.timeline", "wrong type in a column");
    }
  }
  p.timeline_dropped = r.get<std::uint64_t>(j, "timeline_dropped", root);
  read_value(r, j, "environment", root, p.environment);
  read_value(r, j, "host_samples", root, p.host_samples);
  i = 0;
  for (const auto& d : r.array(j, "diagnostics", root)) {
    std::string path = "$.diagnostics[" + std::to_string(i++) + "]";
    Diagnostic dg;
    dg.id = r.get<std::string>(d, "id", path);
    r.get_enum(d, "severity", path, dg.severity, "info, warning or error");
    dg.message = r.get<std::string>(d, "message", path);
    dg.evidence = r.get<std::map<std::string, double>>(d, "evidence", path);
    p.diagnostics.push_back(std::move(dg));
  }
  return p;
}

}  // namespace

std::string profile_to_json(const Profile& profile) { return profile_json(profile, profile.diagnostics).dump(2) + "\n"; }

std::string profile_to_json(const Profile& profile, const std::vector<Diagnostic>& diagnostics) {
  return profile_json(profile, diagnostics).dump(2) + "\n";
}

Result<Profile> profile_from_json(const std::string& text, const std::string& origin) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return Status::error(origin + ": empty file");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    if (e.byte >= text.size())
      return Status::error(origin + ": truncated JSON (input ends at byte " + std::to_string(text.size()) + ")");
    return Status::error(origin + ": not a JSON file (malformed at byte " + std::to_string(e.byte) + ")");
  } catch (const json::exception& e) {
    // e.g. out_of_range 406, a number too large for a double (found by the fuzzer).
    return Status::error(origin + ": invalid JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string())
    return Status::error(origin + ": not a gnnprof profile (no \"schema\" key)");
  const std::string schema = j["schema"].get<std::string>();
  if (schema != kProfileSchema) {
    if (schema.rfind("gnnprof.profile/", 0) == 0)
      return Status::error(origin + ": unsupported profile schema \"" + schema + "\" (this gnnprof reads " +
                           kProfileSchema + ")");
    return Status::error(origin + ": not a gnnprof profile (schema \"" + schema + "\")");
  }
  try {
    return profile_from(j, Reader{origin});
  } catch (const std::exception& e) {
    return Status::error(e.what());
  }
}

Result<Profile> read_profile_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::error(path + ": is a directory, not a profile file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return Status::error(path + ": read error: " + std::strerror(errno));
  return profile_from_json(ss.str(), path);
}

Result<AtomicFileWriter> AtomicFileWriter::open(const std::string& path) {
  std::random_device rd;
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd() & 0xffffff);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error("cannot write " + path + ": " + std::strerror(errno));
  return AtomicFileWriter(path, std::move(tmp), fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)), tmp_(std::move(other.tmp_)), fd_(other.fd_) {
  other.fd_ = -1;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

Status AtomicFileWriter::fail(int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  return Status::error("cannot write " + path_ + ": " + std::strerror(err));
}

Status AtomicFileWriter::write(const void* data, std::size_t size) {
  if (fd_ < 0) return Status::error("cannot write " + path_ + ": writer already closed");
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno);
    }
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return Status::ok();
}

Status AtomicFileWriter::commit(FileSync sync) {
  if (fd_ < 0) return Status::error("cannot write " + path_ + ": writer already closed");
  if (sync == FileSync::kDurable && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) return fail(errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return Status::error("cannot write " + path_ + ": " + std::strerror(err));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return Status::error("cannot write " + path_ + ": " + std::strerror(err));
  }
  return Status::ok();
}

Status write_file_atomic(const std::string& path, const std::string& text, FileSync sync) {
  auto w = AtomicFileWriter::open(path);
  if (!w) return w.status();
  if (Status st = w->write(text.data(), text.size()); !st) return st;
  return w->commit(sync);
}

Status write_profile_file(const Profile& profile, const std::string& path, FileSync sync) {
  try {
    return write_file_atomic(path, profile_to_json(profile), sync);
  } catch (const std::exception& e) {
    return Status::error("cannot write " + path + ": " + e.what());
  }
}

}  // namespace gnnprof
