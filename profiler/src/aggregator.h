// aggregator.h — turns drained raw events into the statistics of a Profile.
//
// It runs on the drainer thread (or in stop()/snapshot(), or on the host's thread at an
// iteration mark in threadless mode), never on the hot path, so it may allocate: from its own
// PrivateHeap, never from the host's malloc heap (private_heap.h says why). Memory grows with
// the number of distinct sites, threads and iterations, not with the number of events:
// per-hit distributions are histograms, the timeline is capped.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <map>
#include <memory_resource>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "clock.h"
#include "gnnprof/profile.h"
#include "histogram.h"
#include "gnnprof/internal/private_heap.h"
#include "raw_event.h"
#include "site_registry.h"

namespace gnnprof::detail {

struct AggregatorOptions {
  std::size_t timeline_events = 50000;
  std::size_t max_iterations = 200000;
  /// Stage events of other threads waiting for the mark that decides their iteration
  /// (normally a few ms of them, see advance()); past this they are placed at once.
  std::size_t max_pending = 1u << 16;
};

class Aggregator {
 public:
  explicit Aggregator(AggregatorOptions options);
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  /// Conversion used for events consumed from now on (refined by the drainer every pass).
  void set_clock(const ClockConverter& clock) { clock_ = clock; }
  /// How to learn a stage site's category (the session: the site registry). With it, every
  /// iteration also gets its time per category without counting a stage nested in one of its
  /// own category twice (IterationStats::categories); without it (tests) those stay empty.
  void set_category_resolver(std::function<std::string(std::uint32_t)> resolve) { resolve_category_ = std::move(resolve); }
  const ClockConverter& clock() const { return clock_; }

  void consume(std::uint32_t thread, const RawEvent& e);
  /// An event's start in profile ns: raw ticks converted, or a lane event's CLOCK_MONOTONIC ns
  /// made relative to the session origin.
  std::int64_t ts_of(const RawEvent& e) const noexcept {
    return (e.flags & kFlagMonoNs) != 0 ? static_cast<std::int64_t>(e.t0) - clock_.origin().mono_ns : clock_.to_ns(e.t0);
  }
  /// Called after each drain pass with the pass's clock time: stage events of non-loop
  /// threads that began more than kMarkHorizonNs before it are placed now, since no iteration
  /// mark can still arrive with an earlier timestamp (see the .cpp). Keeps the pending list to
  /// the other threads' events of the last drain period + 10 ms.
  void advance(std::int64_t pass_ns);
  static constexpr std::int64_t kMarkHorizonNs = 10000000;
  void note_thread(std::uint32_t index, std::int64_t tid, const char* name, std::uint64_t dropped);
  void note_sink_drops(std::uint64_t dropped) { sink_dropped_ = dropped; }
  /// A host sample (RSS, CPU time); kept at <= 1024 by dropping every other one when full.
  void note_host(const HostSample& s);
  void set_main_thread_hint(int thread) { main_hint_ = thread; }

  /// The profile as of `end_ns` (ns since the origin). Does not change the aggregator.
  Profile build(const std::vector<SiteInfo>& sites, std::int64_t end_ns) const;

  std::uint64_t recorded() const { return recorded_; }
  std::size_t pending() const { return pending_.size(); }

 private:
  struct StageThread {
    std::uint64_t hits = 0;
    std::int64_t total = 0, self = 0, top_level = 0;
  };
  struct StageAgg {
    explicit StageAgg(std::pmr::memory_resource* mr) : hist(mr), threads(mr) {}
    std::uint64_t hits = 0;
    std::int64_t total = 0, self = 0, max = 0;
    std::int64_t hits_total = 0;  // every hit's duration, recursive ones too (for the mean)
    LogHistogram hist;
    std::pmr::map<std::uint32_t, StageThread> threads;
  };
  struct LineAgg {
    explicit LineAgg(std::pmr::memory_resource* mr) : stages(mr) {}
    std::uint64_t hits = 0;
    std::uint64_t unobserved_hits = 0;  // hits in iterations whose torch ops were not observed
    std::uint64_t began = 0;            // times tracing began during it, its frame already running
    std::int64_t unobserved = 0;        // the line's time in those iterations
    std::int64_t total = 0, max = 0;
    std::int64_t off_loop = 0;  // its time on threads other than the loop's (a producer's)
    std::int64_t nested = 0;    // of total: traced lines that ran under it (its callees, a generator)
    std::uint32_t caller = 0;   // the first traced statement seen calling it (site), 0: none
    std::uint32_t stage = 0;
    bool timed = false;  // has had a line event (not only attributed time)
    std::pmr::map<std::uint32_t, std::int64_t> stages;  // outermost stage site -> ns
    std::int64_t charged = 0, gpu = 0;
  };
  struct TransferAgg {
    std::uint64_t count = 0, bytes = 0;
    std::int64_t total = 0;
  };
  struct KernelAgg {
    std::uint64_t count = 0;
    std::int64_t total = 0, min = 0, max = 0;
  };
  struct MaterializeAgg {
    std::uint64_t hits = 0, rows = 0, bytes = 0;
  };
  struct CounterAgg {
    std::uint64_t samples = 0;
    double min = 0, max = 0, sum = 0, last = 0;
  };
  struct Iter {
    explicit Iter(std::pmr::memory_resource* mr) : loop(mr), other(mr), lines(mr), loop_cat(mr), other_cat(mr) {}
    std::int64_t begin = 0;
    std::int64_t end = -1;  // -1: open
    std::pmr::map<std::uint32_t, std::int64_t> loop, other;
    std::pmr::map<std::uint32_t, std::int64_t> lines;  // line site -> ns (any thread)
    std::pmr::map<std::uint32_t, std::int64_t> loop_cat, other_cat;  // category id -> ns
    std::int64_t loop_top_level = 0;
    bool ops_observed = true;
    bool by_loader = false;  // marked at a DataLoader's __next__ (kStepByLoader)
    bool dropped = false;    // ended by a kStepDropOpen mark: no iteration, left out of the profile
  };
  struct Pending {
    std::uint32_t thread, site;
    std::int64_t begin, dur;
    bool top_level;
    bool line = false;  // a line event (Iter::lines), not a stage
    bool line_hit = false;    // a line event that begins a hit
    bool by_iteration = false;  // a line of another thread than the loop's: its iteration says
                                // whether its ops were observed (counted when it is placed)
    std::uint32_t category = kNoCategory;  // the outermost stage of its category: its id
  };
  static constexpr std::uint32_t kNoCategory = 0xffffffffu;
  /// The id of a stage site's category (resolved once per site), or kNoCategory.
  std::uint32_t category_id(std::uint32_t site);
  struct RawTimeline {
    std::uint32_t thread, site;
    EventKind kind;
    std::int64_t ts, dur;
    double value;
  };
  struct ThreadMeta {
    std::int64_t tid = 0;
    std::string name;
    std::uint64_t recorded = 0, dropped = 0;
  };

  void on_stage(std::uint32_t thread, const RawEvent& e);
  /// Places an event of a thread in its iteration: now, or once the mark that decides it has
  /// arrived (see on_stage).
  void place(const Pending& p);
  LineAgg& line_agg(std::uint32_t site) { return lines_.try_emplace(site, mr_).first->second; }
  static void add_to(Iter& it, int loop_thread, const Pending& p);
  void on_mark(std::uint32_t thread, std::int64_t ts, bool begin_next, std::uint64_t flags = 0);
  void assign(const Pending& p);
  void place_now(const Pending& p);
  /// The iteration p was added to, or nullptr.
  static const Iter* assign_into(std::pmr::vector<Iter>& iters, int loop_thread, const Pending& p);
  /// A line event of another thread, placed in `it`: counted unobserved when `it`'s ops were not.
  void count_placed_line(const Iter* it, const Pending& p);
  void keep_timeline(std::uint32_t thread, std::uint32_t site, EventKind kind, std::int64_t ts,
                     std::int64_t dur, double value);

  AggregatorOptions opt_;
  PrivateHeap heap_{1 << 20};  // first: outlives every table below; a histogram per stage fills a slab
  std::pmr::memory_resource* mr_ = heap_.resource();
  ClockConverter clock_;
  std::uint64_t recorded_ = 0;
  std::uint64_t sink_dropped_ = 0;
  int main_hint_ = -1;
  std::pmr::map<std::uint32_t, ThreadMeta> threads_{mr_};
  std::pmr::map<std::uint32_t, StageAgg> stages_{mr_};
  struct EdgeAgg {
    std::uint64_t hits = 0;
    std::int64_t total = 0, self = 0;
  };
  std::pmr::map<std::pair<std::uint32_t, std::uint32_t>, EdgeAgg> edges_{mr_};  // (parent, child)
  std::pmr::map<std::uint32_t, LineAgg> lines_{mr_};
  // (stage, line, flags)
  std::pmr::map<std::tuple<std::uint32_t, std::uint32_t, std::uint8_t>, TransferAgg> transfers_{mr_};
  // (site, stage, line)
  std::pmr::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, MaterializeAgg> materialize_{mr_};
  std::pmr::map<std::uint32_t, CounterAgg> counters_{mr_};
  // (kernel name, launching stage, launching op)
  std::pmr::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, KernelAgg> kernels_{mr_};
  std::pmr::vector<Iter> iters_{mr_};
  std::uint64_t iterations_dropped_ = 0;
  bool have_boundary_ = false;
  // The last mark began an iteration whose torch ops are not observed (iteration sampling):
  // line hits consumed from now on count as unobserved. Exact for the marking thread, whose
  // ring is consumed in order; as of the last drained mark for other threads.
  bool ops_unobserved_ = false;
  std::int64_t last_boundary_ = 0;
  int loop_thread_ = -1;
  int loop_marks_ = 0;  // the loop thread's marks (up to 2)
  std::pmr::vector<Pending> pending_{mr_};
  std::pmr::vector<RawTimeline> timeline_{mr_};
  std::pmr::vector<HostSample> host_{mr_};
  std::function<std::string(std::uint32_t)> resolve_category_;
  std::pmr::map<std::uint32_t, std::uint32_t> site_category_{mr_};  // site -> category id
  std::pmr::vector<std::pmr::string> categories_{mr_};               // category id -> name
  std::int64_t host_stride_ns_ = 50000000;  // 50 ms, doubled on every downsampling
  std::uint64_t timeline_dropped_ = 0;
};

}  // namespace gnnprof::detail
