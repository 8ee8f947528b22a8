// profile_io.cpp — gnnprof.profile/1 <-> Profile. Field order is fixed (ordered_json), so
// write -> read -> write reproduces the document byte for byte.
#include "gnnprof/profile_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>
#include <type_traits>
#include <random>
#include <sstream>
#include <string_view>

#include "gnnprof/internal/json_fields.h"
#include "gnnprof/internal/json_number.h"

namespace gnnprof {

using json = nlohmann::ordered_json;
using detail::json_number_fits;

namespace {

// Reading: every access names the JSON path it failed at.
struct Reader {
  std::string origin;

  [[noreturn]] void fail(const std::string& path, const std::string& what) const {
    throw std::runtime_error((origin.empty() ? "" : origin + ": ") + path + ": " + what);
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
};

// Columnar: a name table and one array per field, so that a million events cost a few numbers
// each in the file and in a reader's memory, not an object each. The tree holds a placeholder;
// profile_text writes the columns as text, one line each (a periodic flush writes the profile on
// the host's thread: a json node per number made that 90 % of a flush).
json timeline_placeholder(const Profile&) { return nullptr; }

template <typename T>
void append_number(std::string& out, T v) {
  char buf[32];
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) {  // as nlohmann writes them
      out += "null";
      return;
    }
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, end);
    // Keep the number a float for readers that type it (1.0, not 1), as nlohmann writes it.
    if (std::find_if(buf, end, [](char c) { return c == '.' || c == 'e'; }) == end) out += ".0";
  } else {
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, end);
  }
}

template <typename F>
void append_column(std::string& out, const char* key, const std::vector<TimelineEvent>& events, F get, bool last) {
  out += "    \"";
  out += key;
  out += "\": [";
  for (std::size_t k = 0; k < events.size(); ++k) {
    if (k != 0) out += ',';
    append_number(out, get(events[k]));
  }
  out += last ? "]\n" : "],\n";
}

void append_timeline(std::string& out, const Profile& p) {
  out += "{\n    \"names\": [";
  for (std::size_t k = 0; k < p.timeline_names.size(); ++k) {
    out += k == 0 ? "\n      " : ",\n      ";
    out += json(p.timeline_names[k]).dump(-1, ' ', false, json::error_handler_t::replace);
  }
  out += p.timeline_names.empty() ? "],\n" : "\n    ],\n";
  const auto& ev = p.timeline;
  append_column(out, "thread", ev, [](const TimelineEvent& e) { return e.thread; }, false);
  append_column(out, "kind", ev, [](const TimelineEvent& e) { return static_cast<int>(e.kind); }, false);
  append_column(out, "name", ev, [](const TimelineEvent& e) { return e.name; }, false);
  append_column(out, "ts_ns", ev, [](const TimelineEvent& e) { return e.ts_ns; }, false);
  append_column(out, "dur_ns", ev, [](const TimelineEvent& e) { return e.dur_ns; }, false);
  append_column(out, "value", ev, [](const TimelineEvent& e) { return e.value; }, true);
  out += "  }";
}

/// The document: the tree's text with the timeline's columns written in place of its placeholder
/// (a top-level key, so the only "\n  \"timeline\": null" in the text: strings hold no raw newline).
std::string profile_text(const json& tree, const Profile& p) {
  // A byte that is not UTF-8 (a name from the host) becomes U+FFFD: the profile is still written.
  std::string text = tree.dump(2, ' ', false, json::error_handler_t::replace);
  static constexpr std::string_view kSlot = "\n  \"timeline\": null", kNull = "null";
  const std::size_t at = text.find(kSlot);
  if (at != std::string::npos) {
    const std::size_t value = at + kSlot.size() - kNull.size();
    std::string tail = text.substr(value + kNull.size());  // what follows the timeline: a few keys
    text.resize(value);
    std::size_t names = 0;
    for (const auto& n : p.timeline_names) names += n.size() + 10;
    text.reserve(value + names + p.timeline.size() * 40 + 256 + tail.size());
    append_timeline(text, p);
    text += tail;
  }
  text += '\n';
  return text;
}

void read_timeline(const json& tl, Profile& p, const std::string& path) {
  const Reader r{""};  // the caller adds the file's name
  p.timeline_names = r.get<std::vector<std::string>>(tl, "names", path);
  const json& thread = r.array(tl, "thread", path);
  const json& kind = r.array(tl, "kind", path);
  const json& name = r.array(tl, "name", path);
  const json& ts = r.array(tl, "ts_ns", path);
  const json& dur = r.array(tl, "dur_ns", path);
  const json& value = r.array(tl, "value", path);
  const std::size_t n = thread.size();
  if (kind.size() != n || name.size() != n || ts.size() != n || dur.size() != n || value.size() != n)
    r.fail(path, "columns differ in length");
  p.timeline.resize(n);
  // The path is spelled only for an entry that fails (a million events are read per report).
  auto at = [&](std::size_t k) { return path + "[" + std::to_string(k) + "]"; };
  auto num = [&](auto& out, const json& v, std::size_t k, const char* key) {
    using T = std::remove_reference_t<decltype(out)>;
    out = json_number_fits<T>(v) ? v.template get<T>() : r.as<T>(v, at(k) + key);
  };
  for (std::size_t k = 0; k < n; ++k) {
    TimelineEvent& e = p.timeline[k];
    int kd = 0;
    num(e.thread, thread[k], k, ".thread");
    num(kd, kind[k], k, ".kind");
    num(e.name, name[k], k, ".name");
    if (kd < 0 || kd >= kTimelineKinds || e.name >= p.timeline_names.size()) r.fail(at(k), "kind or name index out of range");
    e.kind = static_cast<TimelineKind>(kd);
    num(e.ts_ns, ts[k], k, ".ts_ns");
    num(e.dur_ns, dur[k], k, ".dur_ns");
    num(e.value, value[k], k, ".value");
  }
}

/// Per-iteration category time, absent in hand-made profiles: both maps or neither.
bool has_categories(const IterationStats& it) { return !it.categories.empty() || !it.other_categories.empty(); }

}  // namespace

// ---- One field description per record (gnnprof/internal/json_fields.h) ----
// The writer (to_json_value) and the reader (read_value) both walk Record<S>::fields, down from
// the Profile itself. Optional fields say when they are written; the columnar timeline is a
// Custom field with its own writer and reader.
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
      std::tuple{field("ts_ns", &HostSample::ts_ns), field("rss_bytes", &HostSample::rss_bytes), field("cpu_ns", &HostSample::cpu_ns),
                 field("rss_file_bytes", &HostSample::rss_file_bytes, Presence::kWhenSet),
                 field("machine_busy_ns", &HostSample::machine_busy_ns, Presence::kWhenSet),
                 field("private_dirty_bytes", &HostSample::private_dirty_bytes, Presence::kWhenSet)};
};

template <>
struct Record<RunInfo> {
  using R = RunInfo;
  static constexpr auto fields =
      std::tuple{field("command", &R::command),       field("pid", &R::pid),
                 field("host", &R::host),             field("cwd", &R::cwd),
                 field("start_time", &R::start_time), field("start_unix_ns", &R::start_unix_ns),
                 field("start_monotonic_ns", &R::start_monotonic_ns), field("rank", &R::rank),
                 field("local_rank", &R::local_rank), field("world_size", &R::world_size),
                 field("run_id", &R::run_id, Presence::kWhenSet),
                 field("parent_pid", &R::parent_pid, Presence::kWhenSet),
                 field("loader", &R::loader, Presence::kWhenSet),
                 field("feeds_pid", &R::feeds_pid, Presence::kWhenSet),
                 field("exit_code", &R::exit_code, Presence::kWhenSet),
                 field("exit_signal", &R::exit_signal, Presence::kWhenSet),
                 field("process_start_unix_ns", &R::process_start_unix_ns, Presence::kWhenSet)};
};
template <>
struct Record<IterationStats> {
  using I = IterationStats;
  static constexpr auto fields =
      std::tuple{field("index", &I::index),
                 field("begin_ns", &I::begin_ns),
                 field("wall_ns", &I::wall_ns),
                 field("complete", &I::complete),
                 field("stages", &I::stages),
                 field("other_threads", &I::other_threads),
                 field("unattributed_ns", &I::unattributed_ns),
                 field("ops_observed", &I::ops_observed, Presence::kWhenSet),  // written only when sampled out
                 field("categories", &I::categories, has_categories),
                 field("other_categories", &I::other_categories, has_categories),
                 field("lines", &I::lines, Presence::kWhenSet)};  // by index into the profile's lines
};
template <>
struct Record<LineStats> {
  using L = LineStats;
  // Traced Python's attribution (stages, backward_ns, gpu_ns) is written only where there is some.
  static constexpr auto fields =
      std::tuple{field("file", &L::file),         field("line", &L::line),      field("function", &L::function),
                 field("code", &L::code),         field("stage", &L::stage),    field("hits", &L::hits),
                 field("unobserved_hits", &L::unobserved_hits, Presence::kWhenSet),
                 field("unobserved_ns", &L::unobserved_ns, Presence::kWhenSet),
                 field("total_ns", &L::total_ns), field("max_ns", &L::max_ns),  field("stages", &L::stages, Presence::kWhenSet),
                 field("backward_ns", &L::backward_ns, Presence::kWhenSet),     field("gpu_ns", &L::gpu_ns, Presence::kWhenSet),
                 field("began_running", &L::began_running, Presence::kWhenSet),
                 field("callee_file", &L::callee_file, Presence::kWhenSet),
                 field("callee_function", &L::callee_function, Presence::kWhenSet),
                 field("off_loop_ns", &L::off_loop_ns, Presence::kWhenSet),
                 field("nested_ns", &L::nested_ns, Presence::kWhenSet),
                 field("caller", &L::caller, Presence::kWhenSet)};
};
template <>
struct Record<Diagnostic> {
  static constexpr auto fields = std::tuple{field("id", &Diagnostic::id), field("severity", &Diagnostic::severity),
                                            field("message", &Diagnostic::message), field("evidence", &Diagnostic::evidence)};
};
template <>
struct Record<Profile> {
  using P = Profile;
  static constexpr auto fields = std::tuple{
      field("schema", &P::schema),
      field("tool", &P::tool),
      field("run", &P::run),
      field("clock", &P::clock),
      field("collectors", &P::collectors),
      field("wall_ns", &P::wall_ns),
      field("main_thread", &P::main_thread),
      field("unattributed_ns", &P::unattributed_ns),
      field("recorded_events", &P::recorded_events),
      field("dropped_events", &P::dropped_events),
      field("threads", &P::threads),
      field("stages", &P::stages),
      field("stage_edges", &P::stage_edges, Presence::kWhenSet),  // absent in hand-made and older profiles
      field("iterations", &P::iterations),
      field("iterations_dropped", &P::iterations_dropped),
      field("lines", &P::lines),
      field("transfers", &P::transfers),
      field("kernels", &P::kernels, Presence::kDefaulted),  // absent in profiles written before it existed
      field("materializations", &P::materializations),
      field("counters", &P::counters),
      custom<P>("timeline", timeline_placeholder, read_timeline),
      field("timeline_dropped", &P::timeline_dropped),
      field("environment", &P::environment),
      field("host_samples", &P::host_samples),
      field("diagnostics", &P::diagnostics)};
};

}  // namespace detail

namespace {

using detail::IsRecord;
using detail::ObjectMap;
using detail::Optional;
using detail::RecordVector;

const char* names_of(Direction) { return "h2d, d2h, d2d or h2h"; }
const char* names_of(HostMemory) { return "pinned, pageable or none"; }
const char* names_of(CopyMode) { return "sync or async"; }
const char* names_of(Severity) { return "info, warning or error"; }

template <class T>
void read_value(const Reader& r, const json& o, const char* key, const std::string& path, T& out);
template <class S>
void read_value(const Reader& r, const json& o, const char* key, const std::string& path, detail::CustomTarget<S> t);

/// A record at `path`, field by field from Record<S>::fields.
template <IsRecord S>
S read_record(const Reader& r, const json& o, const std::string& path) {
  if (!o.is_object()) r.fail(path, "expected an object");
  S s;
  detail::for_each_read_field(s, o, [&](const char* key, auto&& m) { read_value(r, o, key, path, m); });
  return s;
}

template <class T>
void read_value(const Reader& r, const json& o, const char* key, const std::string& path, T& out) {
  const std::string at = path + "." + key;
  if constexpr (std::is_enum_v<T>) {
    r.get_enum(o, key, path, out, names_of(out));
  } else if constexpr (IsRecord<T>) {
    out = read_record<T>(r, r.field(o, key, path), at);
  } else if constexpr (RecordVector<T>::value) {
    out.clear();
    std::size_t i = 0;
    for (const auto& x : r.array(o, key, path))
      out.push_back(read_record<typename RecordVector<T>::element>(r, x, at + "[" + std::to_string(i++) + "]"));
  } else if constexpr (Optional<T>::value) {
    const json& v = r.field(o, key, path);
    out = v.is_null() ? T{} : T{r.as<typename T::value_type>(v, at)};
  } else if constexpr (ObjectMap<T>::value) {
    const json& v = r.field(o, key, path);
    if (!v.is_object()) r.fail(at, "expected an object");
    out.clear();
    for (auto it = v.begin(); it != v.end(); ++it) {
      using K = typename ObjectMap<T>::key;
      if constexpr (std::is_integral_v<K>) {
        const std::string& text = it.key();
        char* end = nullptr;
        const unsigned long long k = std::strtoull(text.c_str(), &end, 10);
        if (text.empty() || text[0] < '0' || text[0] > '9' || *end != '\0' || k > std::numeric_limits<K>::max())
          r.fail(at, "key \"" + text + "\" is not an index");
        out[static_cast<K>(k)] = r.as<typename ObjectMap<T>::mapped>(it.value(), at + "." + text);
      } else {
        out[it.key()] = r.as<typename ObjectMap<T>::mapped>(it.value(), at + "." + it.key());
      }
    }
  } else {
    out = r.get<T>(o, key, path);
  }
}

template <class S>
void read_value(const Reader& r, const json& o, const char* key, const std::string& path, detail::CustomTarget<S> t) {
  const json& v = r.field(o, key, path);
  try {
    t.field->read(v, *t.record, path + "." + key);
  } catch (const std::exception& e) {
    throw std::runtime_error(r.origin + ": " + e.what());
  }
}

Profile profile_from(const json& j, const Reader& r) {
  Profile p = read_record<Profile>(r, j, "$");
  for (const auto& it : p.iterations)
    for (const auto& [idx, ns] : it.lines)
      if (idx >= p.lines.size()) r.fail("$.iterations[" + std::to_string(it.index) + "].lines", "line index out of range");
  for (std::size_t i = 0; i < p.lines.size(); ++i)
    if (p.lines[i].caller < -1 || p.lines[i].caller >= static_cast<std::int64_t>(p.lines.size()))
      r.fail("$.lines[" + std::to_string(i) + "].caller", "line index out of range");
  return p;
}

/// The profile with another diagnostics list (the report's, which may be newer than its own).
json profile_json(const Profile& p, const std::vector<Diagnostic>& diagnostics) {
  json j = detail::to_json_value(p);
  j["diagnostics"] = detail::to_json_value(diagnostics);
  return j;
}

}  // namespace

std::string profile_to_json(const Profile& profile) { return profile_text(detail::to_json_value(profile), profile); }

std::string profile_to_json(const Profile& profile, const std::vector<Diagnostic>& diagnostics) {
  return profile_text(profile_json(profile, diagnostics), profile);
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
  if (!j.is_object() || !j.contains("schema"))
    return Status::error(origin + ": not a gnnprof profile (no \"schema\" key)");
  if (!j["schema"].is_string())
    return Status::error(origin + ": not a gnnprof profile (\"schema\" is " + std::string(j["schema"].type_name()) +
                         ", not a string)");
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
  // /dev/zero would be read forever; a pipe (<(cat p.json)) is read as a file.
  if (::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
    return Status::error(path + ": is a device, not a profile file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return Status::error(path + ": read error: " + std::strerror(errno));
  return profile_from_json(ss.str(), path);
}

Result<AtomicFileWriter> AtomicFileWriter::open(const std::string& path) {
  // A descriptor the process already has (/dev/stdout, /dev/fd/N, /proc/self/fd/N): written
  // through it, with its offset and O_APPEND; resolving it to a file and renaming over that
  // would drop what `>> log` held.
  int inherited = -1;
  if (path == "/dev/stdout") inherited = 1;
  else if (path == "/dev/stderr") inherited = 2;
  else
    for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"})
      if (path.rfind(prefix, 0) == 0 && path.size() > std::strlen(prefix) &&
          path.find_first_not_of("0123456789", std::strlen(prefix)) == std::string::npos)
        inherited = std::atoi(path.c_str() + std::strlen(prefix));
  if (inherited >= 0) {
    const int fd = ::fcntl(inherited, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return Status::error("cannot write " + path + ": " + std::strerror(errno));
    return AtomicFileWriter(path, std::string(), fd);
  }
  // Through a symbolic link: the file it names is replaced, the link stays (a dangling link:
  // the file it would name is created). Not a regular file (a FIFO, a terminal): written in
  // place, since a rename would replace it.
  std::string target = path;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target = real;
      std::free(real);
    } else {
      char buf[4096];
      const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf) - 1);
      if (n > 0) {
        const std::string link(buf, static_cast<std::size_t>(n));
        const auto slash = path.rfind('/');
        target = link.front() == '/' || slash == std::string::npos ? link : path.substr(0, slash + 1) + link;
      }
    }
  }
  if (::stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Status::error("cannot write " + path + ": " + std::strerror(errno));
    return AtomicFileWriter(path, std::string(), fd);
  }
  std::random_device rd;
  std::string tmp = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(rd() & 0xffffff);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error("cannot write " + path + ": " + std::strerror(errno));
  AtomicFileWriter w(path, std::move(tmp), fd);
  w.target_ = std::move(target);
  return w;
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)), tmp_(std::move(other.tmp_)), target_(std::move(other.target_)), fd_(other.fd_) {
  other.fd_ = -1;
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
  }
}

Status AtomicFileWriter::fail(int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
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
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
    return Status::error("cannot write " + path_ + ": " + std::strerror(err));
  }
  if (tmp_.empty()) return Status::ok();  // written in place (a device, a FIFO)
  if (::rename(tmp_.c_str(), (target_.empty() ? path_ : target_).c_str()) != 0) {
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
