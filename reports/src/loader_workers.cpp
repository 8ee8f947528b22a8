#include "gnnprof/reports/loader_workers.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>

#include "gnnprof/order_stats.h"
#include "gnnprof/profile_io.h"
#include "gnnprof/reports/format.h"

namespace gnnprof::reports {
namespace {

namespace fs = std::filesystem;

/// Whether the file's first 64 KiB (the run block comes first) name `pid` as the parent: only
/// such files are parsed whole.
bool names_parent(const fs::path& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  std::string head(64 * 1024, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<std::size_t>(in.gcount()));
  for (std::size_t at = head.find(key); at != std::string::npos; at = head.find(key, at + 1)) {
    const std::size_t end = at + key.size();
    if (end < head.size() && (head[end] < '0' || head[end] > '9')) return true;
  }
  return false;
}

}  // namespace

std::vector<Profile> read_loader_worker_profiles(const std::string& parent_path, const Profile& parent,
                                                 std::size_t limit, std::size_t* more) {
  std::vector<Profile> out;
  if (more != nullptr) *more = 0;
  if (parent.run.pid <= 0) return out;
  std::error_code ec;
  const fs::path self = fs::path(parent_path);
  const fs::path dir = self.has_parent_path() ? self.parent_path() : fs::path(".");
  const std::string key = "\"parent_pid\": " + std::to_string(parent.run.pid);
  std::size_t seen = 0;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (++seen > 20000) break;  // not a profile directory
    const fs::path& path = it->path();
    if (path.extension() != ".json" || !it->is_regular_file(ec) || fs::equivalent(path, self, ec)) continue;
    if (!names_parent(path, key)) continue;
    if (out.size() >= limit) {  // many epochs' workers: those read stand for them
      if (more != nullptr) ++*more;
      continue;
    }
    Result<Profile> p = read_profile_file(path.string());
    // The same launch: same host and run id, started while the loop ran (pids are reused).
    if (!p || p->run.parent_pid != parent.run.pid || p->run.host != parent.run.host ||
        p->run.start_unix_ns < parent.run.start_unix_ns ||
        (parent.wall_ns > 0 && p->run.start_unix_ns > parent.run.start_unix_ns + parent.wall_ns) ||
        (!parent.run.run_id.empty() && !p->run.run_id.empty() && p->run.run_id != parent.run.run_id))
      continue;
    out.push_back(std::move(*p));
  }
  std::sort(out.begin(), out.end(), [](const Profile& a, const Profile& b) { return a.run.pid < b.run.pid; });
  return out;
}

LoaderWorkers summarize_loader_workers(const Profile& parent, const std::vector<Profile>& workers, std::size_t top) {
  LoaderWorkers w;
  for (const CounterStats& c : parent.counters)
    if (c.name == kLoaderWorkersCounter) w.started = c.samples;
  std::vector<std::int64_t> all, unobserved;
  using Key = std::tuple<std::string, std::uint32_t, std::string>;  // file, line, function
  std::map<Key, WorkerLine> lines;
  for (const Profile& p : workers) {
    w.pids.push_back(p.run.pid);
    w.wall_ns += p.wall_ns;
    for (const IterationStats& it : p.iterations) {
      if (!it.complete) continue;
      ++w.batches;
      w.batch_ns += it.wall_ns;
      all.push_back(it.wall_ns);
      if (!it.ops_observed) unobserved.push_back(it.wall_ns);
    }
    for (const LineStats& l : p.lines) {
      WorkerLine& x = lines[Key{l.file, l.line, l.function}];
      x.file = l.file;
      x.line = l.line;
      x.function = l.function;
      x.code = l.code;
      x.hits += l.hits;
      x.total_ns += l.total_ns;
      w.functions.insert(l.function);
    }
  }
  // Most workers alive at once: the lifetimes [start, start + wall) overlapping at one start.
  for (const Profile& a : workers) {
    int alive = 0;
    for (const Profile& b : workers)
      alive += b.run.start_unix_ns <= a.run.start_unix_ns && a.run.start_unix_ns < b.run.start_unix_ns + b.wall_ns;
    w.concurrent = std::max(w.concurrent, alive);
  }
  std::vector<const Profile*> by_start;
  for (const Profile& x : workers) by_start.push_back(&x);
  std::sort(by_start.begin(), by_start.end(),
            [](const Profile* x, const Profile* y) { return x->run.start_unix_ns < y->run.start_unix_ns; });
  std::int64_t first_end = 0;  // of the current set
  for (const Profile* x : by_start) {
    const std::int64_t start = x->run.start_unix_ns, end = start + x->wall_ns;
    if (w.generations.empty() || start >= first_end) {
      w.generations.push_back({start - parent.run.start_unix_ns, 0});
      first_end = end;
    }
    ++w.generations.back().workers;
    first_end = std::min(first_end, end);
  }
  std::sort(w.pids.begin(), w.pids.end());
  w.pace_unobserved = !unobserved.empty();
  w.batch_median_ns = median_of(w.pace_unobserved ? unobserved : all);
  for (auto& [key, l] : lines) {
    l.share = w.batch_ns > 0 ? static_cast<double>(l.total_ns) / static_cast<double>(w.batch_ns) : 0;
    w.top_lines.push_back(l);
  }
  std::sort(w.top_lines.begin(), w.top_lines.end(),
            [](const WorkerLine& a, const WorkerLine& b) { return a.total_ns > b.total_ns; });
  if (w.top_lines.size() > top) w.top_lines.resize(top);
  return w;
}

std::string loader_workers_text(const LoaderWorkers& w) {
  if (w.empty()) return "";
  std::string pids;
  for (std::size_t i = 0; i < w.pids.size() && i < 8; ++i) pids += (i ? ", " : "") + std::to_string(w.pids[i]);
  if (w.pids.size() > 8) pids += ", ...";
  std::string out = fmt::format("{} DataLoader worker profile{} (pid {}; {} at once): {} batches", w.pids.size(),
                                w.pids.size() == 1 ? "" : "s", pids, w.concurrent, w.batches);
  if (w.not_read > 0) out += fmt::format(" ({} more worker profiles not read)", w.not_read);
  if (w.started > w.pids.size() + w.not_read)
    out += fmt::format(" (the run started {} workers; the others wrote no profile: GNNPROF_LOADER_WORKERS profiles the "
                       "run's first 16 by default, and a worker killed before it exits writes none)",
                       w.started);
  if (w.batches == 0) return out + ".";
  out += fmt::format(", {} a batch per worker (median{}), busy {:.0f}% of their time", human_ns(w.batch_median_ns),
                     w.pace_unobserved ? " of the batches whose ops were not observed" : "", 100 * w.busy_share());
  if (w.concurrent > 1) out += fmt::format("; together a batch every {}", human_ns(w.supply_interval_ns()));
  return out + ".";
}

}  // namespace gnnprof::reports
