#include "aggregator.h"

#include "gnnprof/gnnprof.h"

#include <algorithm>
#include <cstring>
#include <string_view>

namespace gnnprof::detail {

namespace {

TimelineKind timeline_kind(EventKind k) {
  switch (k) {
    case EventKind::kStage: return TimelineKind::kStage;
    case EventKind::kLine: return TimelineKind::kLine;
    case EventKind::kTransfer: return TimelineKind::kTransfer;
    case EventKind::kMaterialize: return TimelineKind::kMaterialize;
    case EventKind::kCounter: return TimelineKind::kCounter;
    case EventKind::kStep: return TimelineKind::kStep;
    case EventKind::kStepEnd: return TimelineKind::kStepEnd;
    case EventKind::kKernel:     // not kept: its lane range is
    case EventKind::kLineStage:  // not kept: statistics only
    case EventKind::kLineCharge: return TimelineKind::kStage;
  }
  return TimelineKind::kStage;
}

const SiteInfo& site_or_empty(const std::vector<SiteInfo>& sites, std::uint32_t id) {
  static const SiteInfo kEmpty;
  return id < sites.size() ? sites[id] : kEmpty;
}

}  // namespace

void Aggregator::note_thread(std::uint32_t index, std::int64_t tid, const char* name,
                             std::uint64_t dropped) {
  ThreadMeta& t = threads_[index];
  t.tid = tid;
  if (name != nullptr && name[0] != '\0') t.name = name;
  t.dropped = dropped;
}

void Aggregator::note_host(const HostSample& s) {
  if (!host_.empty() && s.ts_ns - host_.back().ts_ns < host_stride_ns_ && s.private_dirty_bytes == 0) return;
  if (host_.size() == 1024) {
    std::size_t keep = 0;
    for (std::size_t i = 0; i < host_.size(); i += 2) host_[keep++] = host_[i];
    host_.resize(keep);
    host_stride_ns_ *= 2;
  }
  host_.push_back(s);
}

Aggregator::Aggregator(AggregatorOptions options) : opt_(options) {
  // The timeline grows through the whole run: one mapping for all of it (no copy on growth),
  // its first part faulted in now rather than during the host's first iterations.
  try {
    timeline_.reserve(opt_.timeline_events);
    populate_pages(timeline_.data(), std::min<std::size_t>(opt_.timeline_events * sizeof(RawTimeline), kPopulateAheadBytes));
  } catch (const std::bad_alloc&) {
  }
}

void Aggregator::keep_timeline(std::uint32_t thread, std::uint32_t site, EventKind kind,
                               std::int64_t ts, std::int64_t dur, double value) {
  if (timeline_.size() < opt_.timeline_events)
    timeline_.push_back(RawTimeline{thread, site, kind, ts, dur, value});
  else
    ++timeline_dropped_;
}

void Aggregator::consume(std::uint32_t thread, const RawEvent& e) {
  ++recorded_;
  ++threads_[thread].recorded;
  switch (e.kind) {
    case EventKind::kStage:
      on_stage(thread, e);
      break;
    case EventKind::kLine: {
      std::int64_t ts = clock_.to_ns(e.t0);
      std::int64_t dur = clock_.ticks_to_ns(e.t1 - e.t0);
      LineAgg& l = line_agg(e.site);
      if (!l.timed) l.stage = e.ctx;
      l.timed = true;
      const bool hit = (e.flags & kFlagNoHit) == 0;
      // The loop thread's events arrive in order with its marks: the current iteration's flag
      // is theirs. Another thread's (a producer's) wait for their iteration (count_placed_line).
      const bool by_iteration = loop_thread_ >= 0 && static_cast<int>(thread) != loop_thread_;
      if (hit) ++l.hits;
      if ((e.flags & kFlagBegan) != 0) ++l.began;
      if (!by_iteration && ops_unobserved_) {
        if (hit) ++l.unobserved_hits;
        l.unobserved += dur;
      }
      l.total += dur;
      if (by_iteration) l.off_loop += dur;
      if (e.a != 0) l.nested += clock_.ticks_to_ns(e.a);
      if (l.caller == 0 && (e.flags & kFlagCaller) != 0 && e.line_ctx != e.site) l.caller = e.line_ctx;
      l.max = std::max(l.max, dur);
      keep_timeline(thread, e.site, e.kind, ts, dur, 0);
      Pending p{thread, e.site, ts, dur, false, true};
      p.line_hit = hit;
      p.by_iteration = by_iteration;
      place(p);
      break;
    }
    case EventKind::kLineStage:
      if (e.t1 >= e.t0) line_agg(e.site).stages[e.ctx] += clock_.ticks_to_ns(e.t1 - e.t0);
      break;
    case EventKind::kLineCharge:
      if (e.t1 >= e.t0) line_agg(e.site).charged += static_cast<std::int64_t>(e.t1 - e.t0);
      break;
    case EventKind::kTransfer: {
      TransferAgg& t = transfers_[{e.ctx, e.line_ctx, static_cast<std::uint8_t>(e.flags & ~kFlagMonoNs)}];
      ++t.count;
      t.bytes += e.a;
      t.total += static_cast<std::int64_t>(e.t1);
      keep_timeline(thread, e.ctx, e.kind, ts_of(e), static_cast<std::int64_t>(e.t1),
                    static_cast<double>(e.a));
      break;
    }
    case EventKind::kMaterialize: {
      // A named site (GNNPROF_MATERIALIZE) is its own place; an anonymous one is placed by
      // the enclosing GNNPROF_LINE.
      MaterializeAgg& m = materialize_[{e.site, e.ctx, e.site != 0 ? 0u : e.line_ctx}];
      ++m.hits;
      m.rows += e.a;
      m.bytes += e.b;
      keep_timeline(thread, e.site != 0 ? e.site : e.ctx, e.kind, clock_.to_ns(e.t0), 0,
                    static_cast<double>(e.b));
      break;
    }
    case EventKind::kCounter: {
      double v = 0;
      std::memcpy(&v, &e.a, sizeof(double));
      CounterAgg& c = counters_[e.site];
      if (c.samples == 0) c.min = c.max = v;
      ++c.samples;
      c.min = std::min(c.min, v);
      c.max = std::max(c.max, v);
      c.sum += v;
      c.last = v;
      keep_timeline(thread, e.site, e.kind, clock_.to_ns(e.t0), 0, v);
      break;
    }
    case EventKind::kKernel: {
      // Statistics only: the emitter records the same kernel as a range on its stream's lane
      // ("gpu: <stage>"), which is what the stage table and the timeline show.
      if (e.t1 < e.t0) break;
      const auto dur = static_cast<std::int64_t>(e.t1 - e.t0);
      KernelAgg& k = kernels_[{e.site, e.ctx, static_cast<std::uint32_t>(e.a)}];
      k.min = k.count == 0 ? dur : std::min(k.min, dur);
      ++k.count;
      k.total += dur;
      k.max = std::max(k.max, dur);
      if (e.line_ctx != 0) line_agg(e.line_ctx).gpu += dur;
      break;
    }
    case EventKind::kStep:
    case EventKind::kStepEnd: {
      std::int64_t ts = clock_.to_ns(e.t0);
      on_mark(thread, ts, e.kind == EventKind::kStep, e.a);
      keep_timeline(thread, 0, e.kind, ts, 0, 0);
      break;
    }
  }
}

void Aggregator::on_stage(std::uint32_t thread, const RawEvent& e) {
  const bool mono = (e.flags & kFlagMonoNs) != 0;
  std::int64_t begin = ts_of(e);
  std::int64_t dur = mono ? static_cast<std::int64_t>(e.t1 - e.t0) : clock_.ticks_to_ns(e.t1 - e.t0);
  std::int64_t self = mono ? dur : std::min(dur, clock_.ticks_to_ns(e.a));
  // A stage inside one of its own site (recursion) is a hit, but its time is in the outer
  // one's already: totals and iteration sums count the outermost.
  const bool repeated = (e.flags & kFlagRepeated) != 0 && !mono;
  const std::int64_t outer = repeated ? 0 : dur;
  StageAgg& s = stages_.try_emplace(e.site, mr_).first->second;
  ++s.hits;
  s.total += outer;
  s.hits_total += dur;
  s.self += self;
  s.max = std::max(s.max, dur);
  s.hist.add(dur);
  StageThread& st = s.threads[thread];
  ++st.hits;
  st.total += outer;
  st.self += self;
  bool top = e.depth == 0;
  if (top) st.top_level += dur;
  if (e.ctx != 0 && !mono) {
    EdgeAgg& ed = edges_[{e.ctx, e.site}];
    ++ed.hits;
    ed.total += dur;
    ed.self += self;
  }
  if ((e.flags & kFlagExtLine) != 0 && e.line_ctx != 0) line_agg(e.line_ctx).stages[e.site] += clock_.ticks_to_ns(e.b);
  keep_timeline(thread, e.site, e.kind, begin, dur, static_cast<double>(e.depth));
  Pending p{thread, e.site, begin, outer, top};
  // Per category, only a stage whose enclosing stage is of another category counts: "load"
  // around "sample" (both data) is data time once.
  if (resolve_category_ && !mono) {
    const std::uint32_t cat = category_id(e.site);
    if (cat != kNoCategory && (e.ctx == 0 || category_id(e.ctx) != cat)) p.category = cat;
  }
  place(p);
}

std::uint32_t Aggregator::category_id(std::uint32_t site) {
  auto it = site_category_.find(site);
  if (it != site_category_.end()) return it->second;
  std::uint32_t id = kNoCategory;
  try {
    const std::string name = resolve_category_(site);
    if (!name.empty()) {
      for (std::uint32_t i = 0; i < categories_.size(); ++i)
        if (std::string_view(categories_[i]) == name) id = i;
      if (id == kNoCategory) {
        id = static_cast<std::uint32_t>(categories_.size());
        categories_.emplace_back(name);
      }
    }
  } catch (...) {
  }
  site_category_.emplace(site, id);
  return id;
}

void Aggregator::place(const Pending& p) {
  const std::uint32_t thread = p.thread;
  const std::int64_t begin = p.begin;
  // The loop thread's own events are published after its earlier marks and before its later
  // ones, so their iteration is known now; before any mark there is no iteration to join
  // (other threads' events racing the very first mark land in none). Only another thread's
  // event that began after the latest mark must wait: that thread's ring may be drained
  // before the loop thread's next mark is.
  if (!have_boundary_ || static_cast<int>(thread) == loop_thread_) {
    place_now(p);
    return;
  }
  if (begin < last_boundary_) {
    assign(p);
    return;
  }
  pending_.push_back(p);
  if (pending_.size() > opt_.max_pending) {
    // Safety net (advance() normally keeps the list to ~100 ms): place what is waiting as if
    // no mark could still arrive before it.
    for (const Pending& q : pending_) place_now(q);
    pending_.clear();
  }
}

const Aggregator::Iter* Aggregator::assign_into(std::pmr::vector<Iter>& iters, int loop_thread, const Pending& p) {
  auto it = std::upper_bound(iters.begin(), iters.end(), p.begin,
                             [](std::int64_t t, const Iter& x) { return t < x.begin; });
  if (it == iters.begin()) return nullptr;  // before the first iteration
  Iter& target = *(it - 1);
  if (target.end >= 0 && p.begin >= target.end) return nullptr;  // between iterations
  add_to(target, loop_thread, p);
  return &target;
}

void Aggregator::count_placed_line(const Iter* it, const Pending& p) {
  if (!p.line || !p.by_iteration) return;
  // Past the kept iterations (max_iterations), the latest mark's flag stands for them.
  const bool capped = it == nullptr && iters_.size() >= opt_.max_iterations && !iters_.empty() &&
                      p.begin >= iters_.back().begin;
  if (capped ? !ops_unobserved_ : (it == nullptr || it->ops_observed)) return;
  LineAgg& l = line_agg(p.site);
  if (p.line_hit) ++l.unobserved_hits;
  l.unobserved += p.dur;
}

void Aggregator::add_to(Iter& it, int loop_thread, const Pending& p) {
  if (p.line) {
    it.lines[p.site] += p.dur;
    return;
  }
  bool loop = static_cast<int>(p.thread) == loop_thread;
  (loop ? it.loop : it.other)[p.site] += p.dur;
  if (loop && p.top_level) it.loop_top_level += p.dur;
  if (p.category != kNoCategory) (loop ? it.loop_cat : it.other_cat)[p.category] += p.dur;
}

void Aggregator::assign(const Pending& p) { count_placed_line(assign_into(iters_, loop_thread_, p), p); }

// A mark not yet drained was stamped after its ring head was last read, except for the few
// instructions between its rdtsc and its publishing store. Allowing 10 ms for a thread
// preempted exactly there (longer than a scheduler time slice), no mark can still arrive
// stamped before pass_ns - 10 ms, so the open iteration (if any) certainly extends to that
// point and older pending events can be placed: in the open iteration, an earlier one, or none.
void Aggregator::advance(std::int64_t pass_ns) {
  const std::int64_t horizon = pass_ns - kMarkHorizonNs;
  std::size_t keep = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    const Pending& q = pending_[i];
    if (q.begin >= horizon) {
      pending_[keep++] = q;
      continue;
    }
    place_now(q);
  }
  pending_.resize(keep);
}

void Aggregator::place_now(const Pending& q) {
  bool open = !iters_.empty() && iters_.back().end < 0;
  if (open && q.begin >= iters_.back().begin) {
    // The open iteration, with its end treated as beyond q.begin.
    add_to(iters_.back(), loop_thread_, q);
    count_placed_line(&iters_.back(), q);
  } else {
    assign(q);
  }
}

void Aggregator::on_mark(std::uint32_t thread, std::int64_t ts, bool begin_next, std::uint64_t flags) {
  // Marks are expected from one thread in time order; a mark earlier than the last boundary
  // (another thread's) would break the sorted iteration list and is ignored.
  if (have_boundary_ && ts < last_boundary_) return;
  // One mark of the loop thread (the first forward of a sanity check on the main thread), then
  // another thread's (one that trains, which the torch observer lets take the loop): the
  // iterations are that thread's.
  if (loop_thread_ >= 0 && static_cast<int>(thread) != loop_thread_ && loop_marks_ <= 1 && iters_.size() <= 1) {
    iters_.clear();
    loop_thread_ = -1;
  }
  if (loop_thread_ < 0) {
    loop_thread_ = static_cast<int>(thread);
    loop_marks_ = 0;
  }
  if (static_cast<int>(thread) == loop_thread_ && loop_marks_ < 2) ++loop_marks_;
  if (!iters_.empty() && iters_.back().end < 0) {
    iters_.back().end = ts;
    iters_.back().dropped = (flags & gnnprof::detail::kStepDropOpen) != 0;
  }
  if (begin_next) {
    ops_unobserved_ = (flags & gnnprof::detail::kStepOpsUnobserved) != 0;
    if (iters_.size() < opt_.max_iterations) {
      Iter it(mr_);
      it.begin = ts;
      it.ops_observed = (flags & gnnprof::detail::kStepOpsUnobserved) == 0;
      it.by_loader = (flags & gnnprof::detail::kStepByLoader) != 0;
      iters_.push_back(std::move(it));
    } else {
      ++iterations_dropped_;
    }
  }
  have_boundary_ = true;
  last_boundary_ = ts;
  std::size_t keep = 0;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    if (pending_[i].begin < last_boundary_)
      assign(pending_[i]);
    else
      pending_[keep++] = pending_[i];
  }
  pending_.resize(keep);
}

Profile Aggregator::build(const std::vector<SiteInfo>& sites, std::int64_t end_ns) const {
  Profile p;
  p.wall_ns = end_ns;
  p.recorded_events = recorded_;

  std::uint64_t dropped = sink_dropped_;
  for (const auto& [index, t] : threads_) {
    ThreadInfo ti;
    ti.index = index;
    ti.tid = t.tid;
    ti.name = t.name;
    ti.recorded_events = t.recorded;
    ti.dropped_events = t.dropped;
    dropped += t.dropped;
    p.threads.push_back(std::move(ti));
  }
  p.dropped_events = dropped;

  // Main thread: the one that marks iterations; else the one that started the session; else
  // the one with the most top-level stage time.
  int main = loop_thread_;
  if (main < 0 && main_hint_ >= 0 && threads_.count(static_cast<std::uint32_t>(main_hint_)) != 0)
    main = main_hint_;
  if (main < 0) {
    std::map<std::uint32_t, std::int64_t> top;
    for (const auto& [id, s] : stages_)
      for (const auto& [t, st] : s.threads) top[t] += st.top_level;
    std::int64_t best = -1;
    for (const auto& [t, v] : top)
      if (v > best) {
        best = v;
        main = static_cast<int>(t);
      }
  }
  p.main_thread = main < 0 ? 0 : static_cast<std::uint32_t>(main);

  std::int64_t main_top = 0;
  for (const auto& [id, s] : stages_) {
    const SiteInfo& info = site_or_empty(sites, id);
    StageStats st;
    st.name = info.name;
    st.category = info.category;
    st.hits = s.hits;
    st.total_ns = s.total;
    st.self_ns = s.self;
    st.mean_ns = s.hits != 0 ? s.hits_total / static_cast<std::int64_t>(s.hits) : 0;
    st.p50_ns = std::min(s.hist.quantile(0.5), s.max);
    st.p90_ns = std::min(s.hist.quantile(0.9), s.max);
    st.max_ns = s.max;
    st.pct_wall = end_ns > 0 ? 100.0 * static_cast<double>(s.total) / static_cast<double>(end_ns) : 0.0;
    for (const auto& [t, ts] : s.threads) {
      st.by_thread.push_back(StageThreadStats{t, ts.hits, ts.total, ts.self});
      if (t == p.main_thread) main_top += ts.top_level;
    }
    p.stages.push_back(std::move(st));
  }
  std::stable_sort(p.stages.begin(), p.stages.end(), [](const StageStats& a, const StageStats& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    return a.name < b.name;
  });
  p.unattributed_ns = std::max<std::int64_t>(0, end_ns - main_top);
  for (const auto& [key, ed] : edges_)
    p.stage_edges.push_back(StageEdge{site_or_empty(sites, key.first).name, site_or_empty(sites, key.second).name, ed.hits,
                                      ed.total, ed.self});
  std::stable_sort(p.stage_edges.begin(), p.stage_edges.end(), [](const StageEdge& a, const StageEdge& b) {
    return std::tie(a.parent, b.total_ns, a.child) < std::tie(b.parent, a.total_ns, b.child);
  });

  // Iterations: close the open one at end_ns and place the events still waiting for a mark.
  // A copy on the ordinary heap (the copy's allocator is the default resource): transient.
  std::pmr::vector<Iter> iters = iters_;
  bool last_open = !iters.empty() && iters.back().end < 0;
  if (last_open) iters.back().end = std::max(end_ns, iters.back().begin);
  for (const Pending& q : pending_) assign_into(iters, loop_thread_, q);
  // Lines in the profile's order (file, function, line): iterations refer to them by index.
  std::vector<std::pair<LineStats, std::uint32_t>> lines;
  for (const auto& [id, l] : lines_) {
    const SiteInfo& info = site_or_empty(sites, id);
    LineStats ls;
    ls.file = info.file;
    ls.line = info.line;
    ls.function = info.function;
    ls.code = info.code;
    ls.stage = site_or_empty(sites, l.stage).name;
    ls.hits = l.hits;
    ls.unobserved_hits = l.unobserved_hits;
    ls.unobserved_ns = l.unobserved;
    ls.began_running = l.began;
    ls.off_loop_ns = l.off_loop;
    ls.nested_ns = std::min(l.nested, l.total);
    ls.callee_file = info.callee_file;
    ls.callee_function = info.callee_function;
    ls.total_ns = l.total;
    ls.max_ns = l.max;
    for (const auto& [stage, ns] : l.stages) ls.stages[site_or_empty(sites, stage).name] += ns;
    if (auto own = ls.stages.find(kOwnWorkStage); own != ls.stages.end())  // gnnprof's, not the line's
      ls.total_ns = std::max<std::int64_t>(0, ls.total_ns - own->second);
    ls.backward_ns = l.charged;
    ls.gpu_ns = l.gpu;
    lines.emplace_back(std::move(ls), id);
  }
  std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.file, a.first.function, a.first.line, a.second) <
           std::tie(b.first.file, b.first.function, b.first.line, b.second);
  });
  std::map<std::uint32_t, std::uint32_t> line_index;  // site -> index in p.lines
  for (auto& [ls, id] : lines) {
    line_index[id] = static_cast<std::uint32_t>(p.lines.size());
    p.lines.push_back(std::move(ls));
  }
  for (const auto& [ls, id] : lines)
    if (auto l = lines_.find(id); l != lines_.end() && l->second.caller != 0)
      if (auto c = line_index.find(l->second.caller); c != line_index.end()) p.lines[line_index[id]].caller = c->second;

  // Batches of a DataLoader loop marked before the training loop's own marks (an evaluation
  // first): not the loop the run is about.
  const bool other_marks = std::any_of(iters.begin(), iters.end(), [](const Iter& it) { return !it.by_loader; });
  for (std::size_t i = 0; i < iters.size(); ++i) {
    const Iter& it = iters[i];
    if (it.dropped) continue;  // between a loop's passes: no iteration
    IterationStats is;
    is.index = p.iterations.size();
    is.begin_ns = it.begin;
    is.wall_ns = it.end - it.begin;
    is.complete = !(last_open && i + 1 == iters.size()) && !(it.by_loader && other_marks);
    is.ops_observed = it.ops_observed;
    for (const auto& [id, ns] : it.loop) is.stages[site_or_empty(sites, id).name] += ns;
    for (const auto& [id, ns] : it.other) is.other_threads[site_or_empty(sites, id).name] += ns;
    is.unattributed_ns = std::max<std::int64_t>(0, is.wall_ns - it.loop_top_level);
    for (const auto& [id, ns] : it.lines) is.lines[line_index[id]] += ns;
    for (const auto& [id, ns] : it.loop_cat) is.categories[std::string(categories_[id])] += ns;
    for (const auto& [id, ns] : it.other_cat) is.other_categories[std::string(categories_[id])] += ns;
    p.iterations.push_back(std::move(is));
  }
  p.iterations_dropped = iterations_dropped_;


  for (const auto& [key, t] : transfers_) {
    const auto& [stage, line, flags] = key;
    TransferStats ts;
    ts.stage = site_or_empty(sites, stage).name;
    const SiteInfo& li = site_or_empty(sites, line);
    ts.file = li.file;
    ts.line = li.line;
    ts.direction = static_cast<Direction>(flags & 3);
    ts.memory = ((flags >> 2) & 3) <= 1 ? static_cast<HostMemory>((flags >> 2) & 3) : HostMemory::kNone;
    ts.mode = ((flags >> 4) & 1) != 0 ? CopyMode::kAsync : CopyMode::kSync;
    ts.count = t.count;
    ts.bytes = t.bytes;
    ts.total_ns = t.total;
    p.transfers.push_back(std::move(ts));
  }
  for (const auto& [key, k] : kernels_) {
    const auto& [name, stage, op] = key;
    KernelStats ks;
    ks.name = site_or_empty(sites, name).name;
    ks.stage = site_or_empty(sites, stage).name;
    ks.op = site_or_empty(sites, op).name;
    ks.count = k.count;
    ks.total_ns = k.total;
    ks.min_ns = k.min;
    ks.max_ns = k.max;
    p.kernels.push_back(std::move(ks));
  }
  std::sort(p.kernels.begin(), p.kernels.end(), [](const KernelStats& a, const KernelStats& b) {
    return std::tie(b.total_ns, a.name, a.stage, a.op) < std::tie(a.total_ns, b.name, b.stage, b.op);
  });
  for (const auto& [key, m] : materialize_) {
    const auto& [site, stage, line] = key;
    MaterializationStats ms;
    const SiteInfo& si = site_or_empty(sites, site);
    ms.name = si.name;
    ms.stage = site_or_empty(sites, stage).name;
    const SiteInfo& li = site != 0 ? si : site_or_empty(sites, line);
    ms.file = li.file;
    ms.line = li.line;
    ms.hits = m.hits;
    ms.rows = m.rows;
    ms.bytes = m.bytes;
    p.materializations.push_back(std::move(ms));
  }
  for (const auto& [id, c] : counters_) {
    CounterStats cs;
    cs.name = site_or_empty(sites, id).name;
    cs.samples = c.samples;
    cs.min = c.min;
    cs.max = c.max;
    cs.mean = c.samples != 0 ? c.sum / static_cast<double>(c.samples) : 0;
    cs.last = c.last;
    p.counters.push_back(std::move(cs));
  }
  std::map<std::uint32_t, std::uint32_t> name_index;  // site id -> index in timeline_names
  p.timeline.reserve(timeline_.size());
  for (const RawTimeline& r : timeline_) {
    auto [it, fresh] = name_index.try_emplace(r.site, static_cast<std::uint32_t>(p.timeline_names.size()));
    if (fresh) {
      const SiteInfo& si = site_or_empty(sites, r.site);
      p.timeline_names.push_back(!si.name.empty() ? si.name : si.code);
    }
    TimelineEvent te;
    te.thread = r.thread;
    te.kind = timeline_kind(r.kind);
    te.name = it->second;
    te.ts_ns = r.ts;
    te.dur_ns = r.dur;
    te.value = r.value;
    p.timeline.push_back(te);
  }
  p.timeline_dropped = timeline_dropped_;
  p.host_samples.assign(host_.begin(), host_.end());
  return p;
}

}  // namespace gnnprof::detail
