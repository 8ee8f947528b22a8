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
#include <type_traits>
#include <random>
#include <sstream>

#include "gnnprof/internal/json_number.h"

namespace gnnprof {

using json = nlohmann::ordered_json;
using detail::json_number_fits;

namespace {

json opt_int(const std::optional<std::int64_t>& v) { return v ? json(*v) : json(nullptr); }

json to_json_stages(const std::map<std::string, std::int64_t>& m) {
  json o = json::object();
  for (const auto& [k, v] : m) o[k] = v;
  return o;
}

json profile_json(const Profile& p, const std::vector<Diagnostic>& diagnostics) {
  json j;
  j["schema"] = p.schema;
  j["tool"] = {{"name", p.tool.name}, {"version", p.tool.version}};
  j["run"] = {{"command", p.run.command},
              {"pid", p.run.pid},
              {"host", p.run.host},
              {"cwd", p.run.cwd},
              {"start_time", p.run.start_time},
              {"start_unix_ns", p.run.start_unix_ns},
              {"start_monotonic_ns", p.run.start_monotonic_ns},
              {"rank", opt_int(p.run.rank)},
              {"local_rank", opt_int(p.run.local_rank)},
              {"world_size", opt_int(p.run.world_size)}};
  if (!p.run.run_id.empty()) j["run"]["run_id"] = p.run.run_id;
  j["clock"] = {{"source", p.clock.source},
                {"ticks_per_ns", p.clock.ticks_per_ns},
                {"calibration_ns", p.clock.calibration_ns}};
  j["collectors"] = json::array();
  for (const auto& c : p.collectors)
    j["collectors"].push_back({{"name", c.name}, {"enabled", c.enabled}, {"reason", c.reason}});
  j["wall_ns"] = p.wall_ns;
  j["main_thread"] = p.main_thread;
  j["unattributed_ns"] = p.unattributed_ns;
  j["recorded_events"] = p.recorded_events;
  j["dropped_events"] = p.dropped_events;
  j["threads"] = json::array();
  for (const auto& t : p.threads)
    j["threads"].push_back({{"index", t.index},
                            {"tid", t.tid},
                            {"name", t.name},
                            {"recorded_events", t.recorded_events},
                            {"dropped_events", t.dropped_events}});
  j["stages"] = json::array();
  for (const auto& s : p.stages) {
    json bt = json::array();
    for (const auto& t : s.by_thread)
      bt.push_back({{"thread", t.thread}, {"hits", t.hits}, {"total_ns", t.total_ns}, {"self_ns", t.self_ns}});
    j["stages"].push_back({{"name", s.name},
                           {"category", s.category},
                           {"hits", s.hits},
                           {"total_ns", s.total_ns},
                           {"self_ns", s.self_ns},
                           {"mean_ns", s.mean_ns},
                           {"p50_ns", s.p50_ns},
                           {"p90_ns", s.p90_ns},
                           {"max_ns", s.max_ns},
                           {"pct_wall", s.pct_wall},
                           {"by_thread", bt}});
  }
  if (!p.stage_edges.empty()) {  // absent in hand-made and older profiles
    j["stage_edges"] = json::array();
    for (const auto& e : p.stage_edges)
      j["stage_edges"].push_back(
          {{"parent", e.parent}, {"child", e.child}, {"hits", e.hits}, {"total_ns", e.total_ns}, {"self_ns", e.self_ns}});
  }
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
  j["transfers"] = json::array();
  for (const auto& t : p.transfers)
    j["transfers"].push_back({{"stage", t.stage},
                              {"file", t.file},
                              {"line", t.line},
                              {"direction", to_string(t.direction)},
                              {"memory", to_string(t.memory)},
                              {"mode", to_string(t.mode)},
                              {"count", t.count},
                              {"bytes", t.bytes},
                              {"total_ns", t.total_ns}});
  j["kernels"] = json::array();
  for (const auto& k : p.kernels)
    j["kernels"].push_back({{"name", k.name},
                            {"stage", k.stage},
                            {"op", k.op},
                            {"count", k.count},
                            {"total_ns", k.total_ns},
                            {"min_ns", k.min_ns},
                            {"max_ns", k.max_ns}});
  j["materializations"] = json::array();
  for (const auto& m : p.materializations)
    j["materializations"].push_back({{"name", m.name},
                                     {"stage", m.stage},
                                     {"file", m.file},
                                     {"line", m.line},
                                     {"hits", m.hits},
                                     {"rows", m.rows},
                                     {"bytes", m.bytes}});
  j["counters"] = json::array();
  for (const auto& c : p.counters)
    j["counters"].push_back({{"name", c.name},
                             {"samples", c.samples},
                             {"min", c.min},
                             {"max", c.max},
                             {"mean", c.mean},
                             {"last", c.last}});
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
  j["environment"] = {{"cpus", p.environment.cpus},
                      {"blas", p.environment.blas},
                      {"omp_num_threads", p.environment.omp_num_threads},
                      {"max_threads", p.environment.max_threads}};
  j["host_samples"] = json::array();
  for (const auto& h : p.host_samples)
    j["host_samples"].push_back({{"ts_ns", h.ts_ns}, {"rss_bytes", h.rss_bytes}, {"cpu_ns", h.cpu_ns}});
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

Profile profile_from(const json& j, const Reader& r) {
  Profile p;
  const std::string root = "$";
  p.schema = r.get<std::string>(j, "schema", root);
  const json& tool = r.field(j, "tool", root);
  p.tool.name = r.get<std::string>(tool, "name", "$.tool");
  p.tool.version = r.get<std::string>(tool, "version", "$.tool");
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
  const json& clock = r.field(j, "clock", root);
  p.clock.source = r.get<std::string>(clock, "source", "$.clock");
  p.clock.ticks_per_ns = r.get<double>(clock, "ticks_per_ns", "$.clock");
  p.clock.calibration_ns = r.get<std::int64_t>(clock, "calibration_ns", "$.clock");
  std::size_t i = 0;
  for (const auto& c : r.array(j, "collectors", root)) {
    std::string path = "$.collectors[" + std::to_string(i++) + "]";
    p.collectors.push_back(CollectorInfo{r.get<std::string>(c, "name", path), r.get<bool>(c, "enabled", path),
                                         r.get<std::string>(c, "reason", path)});
  }
  p.wall_ns = r.get<std::int64_t>(j, "wall_ns", root);
  p.main_thread = r.get<std::uint32_t>(j, "main_thread", root);
  p.unattributed_ns = r.get<std::int64_t>(j, "unattributed_ns", root);
  p.recorded_events = r.get<std::uint64_t>(j, "recorded_events", root);
  p.dropped_events = r.get<std::uint64_t>(j, "dropped_events", root);
  i = 0;
  for (const auto& t : r.array(j, "threads", root)) {
    std::string path = "$.threads[" + std::to_string(i++) + "]";
    ThreadInfo ti;
    ti.index = r.get<std::uint32_t>(t, "index", path);
    ti.tid = r.get<std::int64_t>(t, "tid", path);
    ti.name = r.get<std::string>(t, "name", path);
    ti.recorded_events = r.get<std::uint64_t>(t, "recorded_events", path);
    ti.dropped_events = r.get<std::uint64_t>(t, "dropped_events", path);
    p.threads.push_back(std::move(ti));
  }
  i = 0;
  for (const auto& s : r.array(j, "stages", root)) {
    std::string path = "$.stages[" + std::to_string(i++) + "]";
    StageStats st;
    st.name = r.get<std::string>(s, "name", path);
    st.category = r.get<std::string>(s, "category", path);
    st.hits = r.get<std::uint64_t>(s, "hits", path);
    st.total_ns = r.get<std::int64_t>(s, "total_ns", path);
    st.self_ns = r.get<std::int64_t>(s, "self_ns", path);
    st.mean_ns = r.get<std::int64_t>(s, "mean_ns", path);
    st.p50_ns = r.get<std::int64_t>(s, "p50_ns", path);
    st.p90_ns = r.get<std::int64_t>(s, "p90_ns", path);
    st.max_ns = r.get<std::int64_t>(s, "max_ns", path);
    st.pct_wall = r.get<double>(s, "pct_wall", path);
    std::size_t k = 0;
    for (const auto& t : r.array(s, "by_thread", path)) {
      std::string tp = path + ".by_thread[" + std::to_string(k++) + "]";
      st.by_thread.push_back(StageThreadStats{r.get<std::uint32_t>(t, "thread", tp), r.get<std::uint64_t>(t, "hits", tp),
                                              r.get<std::int64_t>(t, "total_ns", tp),
                                              r.get<std::int64_t>(t, "self_ns", tp)});
    }
    p.stages.push_back(std::move(st));
  }
  if (j.contains("stage_edges")) {
    i = 0;
    for (const auto& e : r.array(j, "stage_edges", root)) {
      std::string path = "$.stage_edges[" + std::to_string(i++) + "]";
      p.stage_edges.push_back(StageEdge{r.get<std::string>(e, "parent", path), r.get<std::string>(e, "child", path),
                                        r.get<std::uint64_t>(e, "hits", path), r.get<std::int64_t>(e, "total_ns", path),
                                        r.get<std::int64_t>(e, "self_ns", path)});
    }
  }
  i = 0;
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
  i = 0;
  for (const auto& t : r.array(j, "transfers", root)) {
    std::string path = "$.transfers[" + std::to_string(i++) + "]";
    TransferStats ts;
    ts.stage = r.get<std::string>(t, "stage", path);
    ts.file = r.get<std::string>(t, "file", path);
    ts.line = r.get<std::uint32_t>(t, "line", path);
    r.get_enum(t, "direction", path, ts.direction, "h2d, d2h, d2d or h2h");
    r.get_enum(t, "memory", path, ts.memory, "pinned, pageable or none");
    r.get_enum(t, "mode", path, ts.mode, "sync or async");
    ts.count = r.get<std::uint64_t>(t, "count", path);
    ts.bytes = r.get<std::uint64_t>(t, "bytes", path);
    ts.total_ns = r.get<std::int64_t>(t, "total_ns", path);
    p.transfers.push_back(std::move(ts));
  }
  i = 0;
  if (j.contains("kernels")) {  // absent in profiles written before it existed
    for (const auto& k : r.array(j, "kernels", root)) {
      std::string path = "$.kernels[" + std::to_string(i++) + "]";
      KernelStats ks;
      ks.name = r.get<std::string>(k, "name", path);
      ks.stage = r.get<std::string>(k, "stage", path);
      ks.op = r.get<std::string>(k, "op", path);
      ks.count = r.get<std::uint64_t>(k, "count", path);
      ks.total_ns = r.get<std::int64_t>(k, "total_ns", path);
      ks.min_ns = r.get<std::int64_t>(k, "min_ns", path);
      ks.max_ns = r.get<std::int64_t>(k, "max_ns", path);
      p.kernels.push_back(std::move(ks));
    }
  }
  i = 0;
  for (const auto& m : r.array(j, "materializations", root)) {
    std::string path = "$.materializations[" + std::to_string(i++) + "]";
    MaterializationStats ms;
    ms.name = r.get<std::string>(m, "name", path);
    ms.stage = r.get<std::string>(m, "stage", path);
    ms.file = r.get<std::string>(m, "file", path);
    ms.line = r.get<std::uint32_t>(m, "line", path);
    ms.hits = r.get<std::uint64_t>(m, "hits", path);
    ms.rows = r.get<std::uint64_t>(m, "rows", path);
    ms.bytes = r.get<std::uint64_t>(m, "bytes", path);
    p.materializations.push_back(std::move(ms));
  }
  i = 0;
  for (const auto& c : r.array(j, "counters", root)) {
    std::string path = "$.counters[" + std::to_string(i++) + "]";
    CounterStats cs;
    cs.name = r.get<std::string>(c, "name", path);
    cs.samples = r.get<std::uint64_t>(c, "samples", path);
    cs.min = r.get<double>(c, "min", path);
    cs.max = r.get<double>(c, "max", path);
    cs.mean = r.get<double>(c, "mean", path);
    cs.last = r.get<double>(c, "last", path);
    p.counters.push_back(std::move(cs));
  }
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
  const json& env = r.field(j, "environment", root);
  p.environment.cpus = r.get<std::int64_t>(env, "cpus", "$.environment");
  p.environment.blas = r.get<std::string>(env, "blas", "$.environment");
  p.environment.omp_num_threads = r.get<std::string>(env, "omp_num_threads", "$.environment");
  p.environment.max_threads = r.get<std::int64_t>(env, "max_threads", "$.environment");
  i = 0;
  for (const auto& h : r.array(j, "host_samples", root)) {
    std::string path = "$.host_samples[" + std::to_string(i++) + "]";
    p.host_samples.push_back(HostSample{r.get<std::int64_t>(h, "ts_ns", path), r.get<std::int64_t>(h, "rss_bytes", path),
                                        r.get<std::int64_t>(h, "cpu_ns", path)});
  }
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
