#include "gnnprof/reports/loader_workers.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "gnnprof/gnnprof_c.h"
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

/// The profiles beside `parent_path` whose run.<field> (`name` in the JSON) is parent's pid.
std::vector<Profile> read_child_profiles(const std::string& parent_path, const Profile& parent, const char* name,
                                         std::int64_t RunInfo::*field, std::size_t limit, std::size_t* more) {
  std::vector<Profile> out;
  if (more != nullptr) *more = 0;
  if (parent.run.pid <= 0) return out;
  std::error_code ec;
  const fs::path self = fs::path(parent_path);
  const fs::path dir = self.has_parent_path() ? self.parent_path() : fs::path(".");
  const std::string key = fmt::format("\"{}\": {}", name, parent.run.pid);
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
    if (!p || (p->run).*field != parent.run.pid || p->run.host != parent.run.host ||
        p->run.start_unix_ns < parent.run.start_unix_ns ||
        (parent.wall_ns > 0 && p->run.start_unix_ns > parent.run.start_unix_ns + parent.wall_ns) ||
        (!parent.run.run_id.empty() && !p->run.run_id.empty() && p->run.run_id != parent.run.run_id))
      continue;
    out.push_back(std::move(*p));
  }
  std::sort(out.begin(), out.end(), [](const Profile& a, const Profile& b) { return a.run.pid < b.run.pid; });
  return out;
}

}  // namespace

std::vector<Profile> read_loader_worker_profiles(const std::string& parent_path, const Profile& parent,
                                                 std::size_t limit, std::size_t* more) {
  return read_child_profiles(parent_path, parent, "parent_pid", &RunInfo::parent_pid, limit, more);
}

std::vector<Profile> read_producer_profiles(const std::string& parent_path, const Profile& parent, std::size_t limit) {
  return read_child_profiles(parent_path, parent, "feeds_pid", &RunInfo::feeds_pid, limit, nullptr);
}

namespace {

/// The worker count in a run.loader written by the Python package ("TensorDataset at 0x7f...,
/// batch_size 128, 2 workers"), or 0.
int workers_in_label(const std::string& label) {
  static const std::string tail = " workers";
  if (label.size() <= tail.size() || label.compare(label.size() - tail.size(), tail.size(), tail) != 0) return 0;
  const std::size_t at = label.size() - tail.size();
  std::size_t from = at;
  while (from > 0 && label[from - 1] >= '0' && label[from - 1] <= '9') --from;
  return from >= 2 && from < at && at - from < 6 && label.compare(from - 2, 2, ", ") == 0
             ? std::stoi(label.substr(from, at - from))
             : 0;
}

/// Where a worker's complete batches were fetched, in the loop's iterations (their indices): the
/// training loader's fetch one in each, an evaluation loader's in the few its passes ran in.
std::set<std::uint64_t> iterations_fed(const Profile& parent, const Profile& worker) {
  std::set<std::uint64_t> out;
  const std::int64_t origin = worker.run.start_unix_ns - parent.run.start_unix_ns;
  for (const IterationStats& b : worker.iterations) {
    if (!b.complete) continue;
    const std::int64_t t = origin + b.begin_ns + b.wall_ns;
    const auto it = std::upper_bound(parent.iterations.begin(), parent.iterations.end(), t,
                                     [](std::int64_t x, const IterationStats& i) { return x < i.begin_ns; });
    if (it == parent.iterations.begin()) continue;
    const IterationStats& in = *std::prev(it);
    if (in.complete && t < in.begin_ns + in.wall_ns) out.insert(in.index);
  }
  return out;
}

/// What a fork child copied from its parent while it ran: its private dirty memory's growth
/// less its anonymous RSS's (pages it allocated grow both; a shared page written turns private
/// and leaves RSS as it was; file pages, a memory-mapped dataset's, are in neither), between its
/// first and last readings; none without two.
std::optional<std::int64_t> copied_from_parent(const Profile& worker) {
  const HostSample* first = nullptr;
  const HostSample* last = nullptr;
  for (const HostSample& h : worker.host_samples)
    if (h.private_dirty_bytes > 0) {
      if (first == nullptr) first = &h;
      last = &h;
    }
  if (first == nullptr || last == first) return std::nullopt;
  const auto anon = [](const HostSample& h) { return h.rss_bytes - h.rss_file_bytes; };
  return std::max<std::int64_t>(0, (last->private_dirty_bytes - first->private_dirty_bytes) - (anon(*last) - anon(*first)));
}

std::uint64_t complete_iterations(const Profile& p) {
  return static_cast<std::uint64_t>(
      std::count_if(p.iterations.begin(), p.iterations.end(), [](const IterationStats& it) { return it.complete; }));
}

}  // namespace

LoaderWorkers summarize_loader_workers(const Profile& parent, const std::vector<Profile>& all_workers, std::size_t top) {
  LoaderWorkers w;
  for (const CounterStats& c : parent.counters)
    if (c.name == kLoaderWorkersCounter) w.started = c.samples;
  // One loader's workers at a time: the one whose batches fed the most of the loop's iterations
  // (the training loader's, beside an evaluation loader's, which may fetch more batches in
  // fewer iterations), then the most batches; the others counted apart.
  std::map<std::string, std::uint64_t> batches_of;
  for (const Profile& p : all_workers) batches_of[p.run.loader] += complete_iterations(p);
  std::vector<const Profile*> workers;
  for (const Profile& p : all_workers) workers.push_back(&p);
  if (batches_of.size() > 1) {
    std::map<std::string, std::set<std::uint64_t>> fed;
    for (const Profile& p : all_workers) fed[p.run.loader].merge(iterations_fed(parent, p));
    const auto most = std::max_element(batches_of.begin(), batches_of.end(), [&](const auto& a, const auto& b) {
      return std::make_pair(fed[a.first].size(), a.second) < std::make_pair(fed[b.first].size(), b.second);
    });
    w.loader = most->first;
    w.other_loaders = batches_of.size() - 1;
    for (const Profile* p : workers)
      if (p->run.loader != w.loader) {
        ++w.other_profiles;
        w.other_batches += complete_iterations(*p);
      }
    workers.erase(std::remove_if(workers.begin(), workers.end(), [&](const Profile* p) { return p->run.loader != w.loader; }),
                  workers.end());
  }
  std::vector<std::vector<ItemFetch>> fetches;
  for (const Profile* p : workers) fetches.push_back(item_fetches(*p));
  w.fetches = merge_item_fetches(fetches);
  std::vector<std::int64_t> all, unobserved;
  double tensor_sum = 0;
  std::uint64_t tensor_batches = 0;
  using Key = std::tuple<std::string, std::uint32_t, std::string>;  // file, line, function
  std::map<Key, WorkerLine> lines;
  std::map<std::pair<std::string, std::uint32_t>, std::uint64_t> gathers;  // bytes by file, line
  for (const Profile* pp : workers) {
    const Profile& p = *pp;
    w.pids.push_back(p.run.pid);
    w.wall_ns += p.wall_ns;
    for (const IterationStats& it : p.iterations) {
      if (!it.complete) continue;
      ++w.batches;
      w.batch_ns += it.wall_ns;
      all.push_back(it.wall_ns);
      if (!it.ops_observed) unobserved.push_back(it.wall_ns);
      else ++w.observed_batches;
    }
    for (const MaterializationStats& m : p.materializations) {
      w.gathered_bytes += m.bytes;
      w.gathered_rows += m.rows;
      gathers[{m.file, m.line}] += m.bytes;
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
    for (const CounterStats& c : p.counters)
      if (c.name == kMemmapFaultsCounter) {
        w.memmap_faults += c.mean * static_cast<double>(c.samples);
      } else if (c.name == GNNPROF_OFF_CPU_COUNTER_PREFIX "materialize") {
        w.materialize_off_cpu_ns += c.mean * static_cast<double>(c.samples);
      } else if (c.name.rfind(kBatchTensorsCounterPrefix, 0) == 0 && c.samples > 0 && c.name.back() == ')') {
        tensor_sum += c.mean * static_cast<double>(c.samples);
        tensor_batches += c.samples;
        w.sharing = c.name.substr(std::strlen(kBatchTensorsCounterPrefix),
                                  c.name.size() - 1 - std::strlen(kBatchTensorsCounterPrefix));
      }
  }
  if (tensor_batches > 0) w.tensors_per_batch = tensor_sum / static_cast<double>(tensor_batches);
  const auto most_gathered = std::max_element(gathers.begin(), gathers.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most_gathered != gathers.end()) std::tie(w.gather_file, w.gather_line) = most_gathered->first;
  // Most workers alive at once: the lifetimes [start, start + wall) overlapping at one start.
  for (const Profile* a : workers) {
    int alive = 0;
    for (const Profile* b : workers)
      alive += b->run.start_unix_ns <= a->run.start_unix_ns && a->run.start_unix_ns < b->run.start_unix_ns + b->wall_ns;
    w.concurrent = std::max(w.concurrent, alive);
  }
  std::vector<const Profile*> by_start = workers;
  std::sort(by_start.begin(), by_start.end(),
            [](const Profile* x, const Profile* y) { return x->run.start_unix_ns < y->run.start_unix_ns; });
  std::int64_t first_end = 0;  // of the current set
  // A full set also ends one: the last pass's workers may exit after the next pass's start.
  const int per_set = workers.empty() ? 0 : workers_in_label(workers.front()->run.loader);
  for (const Profile* x : by_start) {
    const std::int64_t start = x->run.start_unix_ns, end = start + x->wall_ns;
    // (Not a worker started after the set's first batch: a spawned set's workers start seconds
    // apart, each importing torch, and the first may have fetched by then.)
    // A spawned worker's session begins after its imports: the set started with its processes.
    const std::int64_t launched = x->run.process_start_unix_ns > 0 ? std::min(start, x->run.process_start_unix_ns) : start;
    if (w.generations.empty() || start >= first_end || (per_set > 0 && w.generations.back().workers >= per_set)) {
      w.generations.push_back({launched - parent.run.start_unix_ns, 0});
      first_end = end;
    }
    LoaderWorkers::Generation& g = w.generations.back();
    g.start_ns = std::min(g.start_ns, launched - parent.run.start_unix_ns);
    ++g.workers;
    first_end = std::min(first_end, end);
    for (const IterationStats& it : x->iterations)
      if (it.complete) {
        const std::int64_t ready = start - parent.run.start_unix_ns + it.begin_ns + it.wall_ns;
        if (g.first_batch_ns == 0 || ready < g.first_batch_ns) g.first_batch_ns = ready;
        break;
      }
    if (const std::optional<std::int64_t> copied = copied_from_parent(*x)) {
      g.copied_bytes += *copied;
      ++g.copy_measured;
    }
  }
  for (std::size_t i = 0; i < w.generations.size(); ++i)
    if (w.generations[i].copy_measured > 0 &&
        (w.most_copied < 0 || w.generations[i].copied_bytes > w.generations[static_cast<std::size_t>(w.most_copied)].copied_bytes))
      w.most_copied = static_cast<int>(i);
  // A set ending while the next starts (a worker exiting late) is not more workers fetching.
  int most = 0;
  for (const LoaderWorkers::Generation& g : w.generations) most = std::max(most, g.workers);
  if (most > 0) w.concurrent = std::min(w.concurrent, most);
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

std::string LoaderWorkers::most_gathered_at() const {
  return gather_file.empty() ? std::string() : fmt::format("{}:{}", base_name(gather_file), gather_line);
}

std::string worker_line_share(const WorkerLine& l) {
  return l.beyond_batches() ? std::string(">100%") : fmt::format("{:.1f}%", 100 * l.share);
}

std::string workers_gathered_note(const LoaderWorkers& w) {
  if (w.gathered_bytes == 0 || w.observed_batches == 0) return "";
  return fmt::format(" Its DataLoader workers gathered {} a batch{}: see the DataLoader workers section.",
                     human_bytes(static_cast<std::uint64_t>(std::llround(w.gathered_bytes_per_batch()))),
                     w.most_gathered_at().empty() ? std::string() : " (most at " + w.most_gathered_at() + ")");
}

std::string worker_lines_note(const LoaderWorkers& w) {
  const bool outside = std::any_of(w.top_lines.begin(), w.top_lines.end(), [](const WorkerLine& l) { return l.beyond_batches(); });
  return outside ? "(>100%: more time than the workers' batches took; the line also runs outside them, at a worker's "
                   "start (a worker_init_fn, a Dataset's set-up) or between its batches)"
                 : "";
}

std::string loader_workers_text(const LoaderWorkers& w) {
  if (w.empty()) return "";
  std::string pids;
  for (std::size_t i = 0; i < w.pids.size() && i < 8; ++i) pids += (i ? ", " : "") + std::to_string(w.pids[i]);
  if (w.pids.size() > 8) pids += ", ...";
  std::string out = fmt::format("{} DataLoader worker profile{} (pid {}; {} at once): {} batches", w.pids.size(),
                                w.pids.size() == 1 ? "" : "s", pids, w.concurrent, w.batches);
  if (!w.loader.empty())
    out += fmt::format(" of the loader that fed the most iterations, {}; {} more worker profile{}, of {} other loader{} ({} "
                       "batches: an evaluation loader's?), are left out of these figures",
                       w.loader, w.other_profiles, w.other_profiles == 1 ? "" : "s", w.other_loaders,
                       w.other_loaders == 1 ? "" : "s", w.other_batches);
  if (w.not_read > 0) out += fmt::format(" ({} more worker profiles not read)", w.not_read);
  if (w.started > w.pids.size() + w.other_profiles + w.not_read)
    out += fmt::format(" (the run started {} workers; the others wrote no profile: GNNPROF_LOADER_WORKERS profiles the "
                       "run's first 16 by default, and a worker killed before it exits writes none)",
                       w.started);
  if (w.batches == 0) return out + ".";
  out += fmt::format(", {} a batch per worker (median{}), busy {:.0f}% of their time", human_ns(w.batch_median_ns),
                     w.pace_unobserved ? " of the batches whose ops were not observed" : "", 100 * w.busy_share());
  if (w.concurrent > 1) out += fmt::format("; together a batch every {}", human_ns(w.supply_interval_ns()));
  // Start-up: from a set's first process start (a spawned worker's imports included) to its first batch.
  std::vector<std::int64_t> startups;
  for (const LoaderWorkers::Generation& g : w.generations)
    if (g.first_batch_ns > g.start_ns) startups.push_back(g.first_batch_ns - g.start_ns);
  if (!startups.empty())
    out += fmt::format("; from a set's start to its first batch {}{}", human_ns(median_of(startups)),
                       startups.size() > 1 ? fmt::format(" (median of {} sets)", startups.size()) : "");
  if (w.tensors_per_batch > 0)
    out += fmt::format("; {:.1f} tensors per batch (their first batches' CPU tensor storages, each sent on its own; "
                       "sharing strategy {})",
                       w.tensors_per_batch, w.sharing);
  if (w.gathered_bytes > 0 && w.observed_batches > 0) {
    out += fmt::format("; they gathered {} a batch ({:.0f} rows; materializations{}), most at {}",
                       human_bytes(static_cast<std::uint64_t>(std::llround(w.gathered_bytes_per_batch()))),
                       w.gathered_rows_per_batch(),
                       w.observed_batches < w.batches ? fmt::format(", over the {} batches whose ops were observed", w.observed_batches) : "",
                       w.most_gathered_at().empty() ? std::string("no traced line") : w.most_gathered_at());
    if (w.memmap_faults_per_batch() >= 0.5)
      out += fmt::format(", their numpy memmap reads waiting on {:.0f} major page faults a batch (pages read from storage)",
                         w.memmap_faults_per_batch());
  }
  return out + ".";
}

}  // namespace gnnprof::reports
