#include "gnnprof/reports/trace_reporter.h"

#include <map>
#include <nlohmann/json.hpp>

#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

using json = nlohmann::json;

namespace {
constexpr std::int64_t kTransferTrack = 1000000;  // tid of the transfers track
double us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }
}  // namespace

Status TraceReporter::render(const Profile& p, std::ostream& out) const {
  const std::int64_t pid = p.run.pid;
  std::map<std::string, std::string> category;
  for (const auto& s : p.stages) category.emplace(s.name, s.category);
  json events = json::array();
  std::string cmd;
  for (const auto& a : p.run.command) cmd += (cmd.empty() ? "" : " ") + a;
  events.push_back({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", "gnnprof: " + cmd}}}});
  for (const auto& t : p.threads) {
    std::string name = t.name.empty() ? "thread" : t.name;
    if (t.index == p.main_thread) name += " (loop)";
    events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", t.index}, {"name", "thread_name"},
                      {"args", {{"name", name + " [tid " + std::to_string(t.tid) + "]"}}}});
    events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", t.index}, {"name", "thread_sort_index"},
                      {"args", {{"sort_index", t.index == p.main_thread ? -1 : static_cast<std::int64_t>(t.index)}}}});
  }
  events.push_back({{"ph", "M"}, {"pid", pid}, {"tid", kTransferTrack}, {"name", "thread_name"}, {"args", {{"name", "transfers"}}}});
  for (const auto& e : p.timeline) {
    if (e.kind == "stage") {
      auto c = category.find(e.name);
      events.push_back({{"ph", "X"}, {"pid", pid}, {"tid", e.thread}, {"name", e.name},
                        {"cat", c == category.end() ? "stage" : c->second}, {"ts", us(e.ts_ns)}, {"dur", us(e.dur_ns)}});
    } else if (e.kind == "line") {
      events.push_back({{"ph", "X"}, {"pid", pid}, {"tid", e.thread}, {"name", e.name.size() > 80 ? e.name.substr(0, 77) + "..." : e.name},
                        {"cat", "line"}, {"ts", us(e.ts_ns)}, {"dur", us(e.dur_ns)}, {"args", {{"statement", e.name}}}});
    } else if (e.kind == "transfer") {
      json ev = {{"pid", pid}, {"tid", kTransferTrack}, {"name", "copy " + human_bytes(static_cast<std::uint64_t>(e.value))},
                 {"cat", "transfer"}, {"ts", us(e.ts_ns)},
                 {"args", {{"bytes", e.value}, {"stage", e.name}, {"thread", e.thread}}}};
      if (e.dur_ns > 0) {
        ev["ph"] = "X";
        ev["dur"] = us(e.dur_ns);
      } else {
        ev["ph"] = "i";
        ev["s"] = "t";
      }
      events.push_back(ev);
    } else if (e.kind == "materialize") {
      events.push_back({{"ph", "i"}, {"s", "t"}, {"pid", pid}, {"tid", e.thread}, {"name", "materialize " + e.name},
                        {"cat", "materialize"}, {"ts", us(e.ts_ns)}, {"args", {{"bytes", e.value}}}});
    } else if (e.kind == "counter") {
      events.push_back({{"ph", "C"}, {"pid", pid}, {"name", e.name}, {"ts", us(e.ts_ns)}, {"args", {{"value", e.value}}}});
    } else if (e.kind == "step" || e.kind == "step_end") {
      events.push_back({{"ph", "i"}, {"s", "p"}, {"pid", pid}, {"tid", e.thread}, {"name", e.kind == "step" ? "iteration" : "iterations end"},
                        {"cat", "step"}, {"ts", us(e.ts_ns)}});
    }
  }
  for (std::size_t i = 0; i < p.host_samples.size(); ++i) {
    const auto& h = p.host_samples[i];
    events.push_back({{"ph", "C"}, {"pid", pid}, {"name", "host RSS (MiB)"}, {"ts", us(h.ts_ns)},
                      {"args", {{"rss", static_cast<double>(h.rss_bytes) / (1024.0 * 1024.0)}}}});
    if (i > 0 && h.ts_ns > p.host_samples[i - 1].ts_ns && p.environment.cpus > 0) {
      const double busy = static_cast<double>(h.cpu_ns - p.host_samples[i - 1].cpu_ns) /
                          static_cast<double>(h.ts_ns - p.host_samples[i - 1].ts_ns);
      events.push_back({{"ph", "C"}, {"pid", pid}, {"name", "host CPUs busy"}, {"ts", us(h.ts_ns)}, {"args", {{"cpus", busy}}}});
    }
  }
  json doc = {{"traceEvents", events},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"generator", "gnnprof " + p.tool.version},
                {"schema", p.schema},
                {"timeline_events_not_kept", p.timeline_dropped},
                {"start_monotonic_ns", p.run.start_monotonic_ns}}}};
  out << doc.dump() << "\n";
  return out ? Status::ok() : Status::error("write error");
}

}  // namespace gnnprof::reports
