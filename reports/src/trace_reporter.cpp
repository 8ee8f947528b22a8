#include "gnnprof/reports/trace_reporter.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

namespace {
constexpr std::int64_t kTransferTrack = 1000000;  // tid of the transfers track
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}
}  // namespace

// Streamed event by event: a million-event trace is written without building a document.
Status TraceReporter::render(const Report& r, std::ostream& out) const {
  const Profile& p = *r.profile;
  const std::int64_t pid = p.run.pid;
  std::map<std::string, std::string> category;
  for (const auto& s : p.stages) category.emplace(s.name, s.category);
  // Names and categories JSON-escaped once, not per event.
  std::vector<std::string> names, cats, lines;
  for (const auto& n : p.timeline_names) {
    names.push_back(quoted(n));
    auto c = category.find(n);
    cats.push_back(quoted(c == category.end() ? "stage" : c->second));
    lines.push_back(quoted(n.size() > 80 ? n.substr(0, 77) + "..." : n));
  }

  std::string buf;
  buf.reserve(1 << 16);
  bool first = true;
  auto emit = [&](const std::string& ev) {
    buf += first ? "\n" : ",\n";
    first = false;
    buf += ev;
    if (buf.size() > (1 << 16)) {
      out << buf;
      buf.clear();
    }
  };
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":"
      << nlohmann::json({{"generator", "gnnprof " + p.tool.version},
                         {"schema", p.schema},
                         {"timeline_events_not_kept", p.timeline_dropped},
                         {"start_monotonic_ns", p.run.start_monotonic_ns}})
             .dump()
      << ",\"traceEvents\":[";
  emit(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":{}}}}})", pid, quoted("gnnprof: " + command_line(p))));
  for (const auto& t : p.threads) {
    std::string name = t.name.empty() ? "thread" : t.name;
    if (t.index == p.main_thread) name += " (loop)";
    emit(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":{}}}}})", pid, t.index,
                     quoted(name + " [tid " + std::to_string(t.tid) + "]")));
    emit(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_sort_index","args":{{"sort_index":{}}}}})", pid, t.index,
                     t.index == p.main_thread ? -1 : static_cast<std::int64_t>(t.index)));
  }
  emit(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name","args":{{"name":"transfers"}}}})", pid, kTransferTrack));
  auto us = [](std::int64_t ns) { return static_cast<double>(ns) / 1000.0; };
  for (const auto& e : p.timeline) {
    const std::size_t n = e.name;
    switch (e.kind) {
      case TimelineKind::kStage:
        emit(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"name":{},"cat":{},"ts":{:.3f},"dur":{:.3f}}})", pid, e.thread, names[n], cats[n],
                         us(e.ts_ns), us(e.dur_ns)));
        break;
      case TimelineKind::kLine:
        emit(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"name":{},"cat":"line","ts":{:.3f},"dur":{:.3f},"args":{{"statement":{}}}}})",
                         pid, e.thread, lines[n], us(e.ts_ns), us(e.dur_ns), names[n]));
        break;
      case TimelineKind::kTransfer:
        if (e.dur_ns > 0)
          emit(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"name":{},"cat":"transfer","ts":{:.3f},"dur":{:.3f},"args":{{"bytes":{},"stage":{},"thread":{}}}}})",
                           pid, kTransferTrack, quoted("copy " + human_bytes(static_cast<std::uint64_t>(e.value))), us(e.ts_ns),
                           us(e.dur_ns), e.value, names[n], e.thread));
        else
          emit(fmt::format(R"({{"ph":"i","s":"t","pid":{},"tid":{},"name":{},"cat":"transfer","ts":{:.3f},"args":{{"bytes":{},"stage":{},"thread":{}}}}})",
                           pid, kTransferTrack, quoted("copy " + human_bytes(static_cast<std::uint64_t>(e.value))), us(e.ts_ns), e.value,
                           names[n], e.thread));
        break;
      case TimelineKind::kMaterialize:
        emit(fmt::format(R"({{"ph":"i","s":"t","pid":{},"tid":{},"name":{},"cat":"materialize","ts":{:.3f},"args":{{"bytes":{}}}}})", pid,
                         e.thread, quoted("materialize " + p.timeline_names[n]), us(e.ts_ns), e.value));
        break;
      case TimelineKind::kCounter:
        emit(fmt::format(R"({{"ph":"C","pid":{},"name":{},"ts":{:.3f},"args":{{"value":{}}}}})", pid, names[n], us(e.ts_ns), e.value));
        break;
      case TimelineKind::kStep:
      case TimelineKind::kStepEnd:
        emit(fmt::format(R"({{"ph":"i","s":"p","pid":{},"tid":{},"name":"{}","cat":"step","ts":{:.3f}}})", pid, e.thread,
                         e.kind == TimelineKind::kStep ? "iteration" : "iterations end", us(e.ts_ns)));
        break;
    }
  }
  for (std::size_t i = 0; i < p.host_samples.size(); ++i) {
    const auto& h = p.host_samples[i];
    emit(fmt::format(R"j({{"ph":"C","pid":{},"name":"host RSS (MiB)","ts":{:.3f},"args":{{"rss":{:.3f}}}}})j", pid, us(h.ts_ns),
                     static_cast<double>(h.rss_bytes) / (1024.0 * 1024.0)));
    if (i > 0 && h.ts_ns > p.host_samples[i - 1].ts_ns)
      emit(fmt::format(R"({{"ph":"C","pid":{},"name":"host CPUs busy","ts":{:.3f},"args":{{"cpus":{:.3f}}}}})", pid, us(h.ts_ns),
                       static_cast<double>(h.cpu_ns - p.host_samples[i - 1].cpu_ns) / static_cast<double>(h.ts_ns - p.host_samples[i - 1].ts_ns)));
  }
  out << buf << "\n]}\n";
  return out ? Status::ok() : Status::error("write error");
}

}  // namespace gnnprof::reports
