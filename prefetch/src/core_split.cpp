#include "gnnprof/prefetch/core_split.h"

#include <cstdio>

#include "gnnprof/config.h"
#include "gnnprof/gnnprof.h"
#include "gnnprof/gnnprof_c.h"

namespace gnnprof::prefetch {

namespace {

CoreSplit::Mode mode_from_env() {
  try {
    return CoreSplit::parse_mode(config::get_string("GNNPROF_PREFETCH_THREADS")).value_or(CoreSplit::Mode::kAuto);
  } catch (...) {
    return CoreSplit::Mode::kAuto;
  }
}

}  // namespace

std::optional<CoreSplit::Mode> CoreSplit::parse_mode(const std::string& text) {
  if (text == "auto") return Mode::kAuto;
  if (text == "all") return Mode::kAll;
  if (text == "split") return Mode::kSplit;
  return std::nullopt;
}

CoreSplit::CoreSplit(int cores, int workers, SetThreads set_threads, std::optional<Mode> mode)
    : all_(cores < 1 ? 1 : cores),
      split_(all_ - (workers < 1 ? 1 : workers)),
      mode_(mode.value_or(mode_from_env())),
      set_threads_(std::move(set_threads)),
      // Arm 0 is today's setting, arm 1 the split. Blocks of 4 (the first one not measured),
      // 2 rounds: 2 + 16 iterations, 6 measured per arm.
      trial_(BlockTrial::Options{split_ >= 1 && mode_ == Mode::kAuto ? 2 : 1, 2, 4, 2, 0.02}),
      threads_(all_) {
  if (split_ < 1) split_ = all_;
}

void CoreSplit::set(int n) {
  if (n == threads_) return;
  threads_ = n;
  try {
    if (set_threads_) set_threads_(n);
  } catch (...) {
  }
  GNNPROF_COUNTER("compute_threads", n);
}

void CoreSplit::on_iteration(std::uint64_t now_ns) {
  if (!started_) {
    started_ = true;
    GNNPROF_COUNTER("compute_threads", threads_);
  }
  if (mode_ == Mode::kAuto && split_ != all_) {
    const int arm = trial_.on_iteration(now_ns);
    if (arm >= 0) arm_ = arm;
    if (trial_.decided()) report();
  } else {
    arm_ = mode_ == Mode::kSplit ? 1 : 0;
    report();
  }
  set(arm_ == 1 ? split_ : all_);
}

void CoreSplit::idle() { set(all_); }

std::string CoreSplit::describe() const {
  const auto name = [&](int n) {
    std::string s = std::to_string(n) + " compute thread" + (n == 1 ? "" : "s");
    return s + (n == split_ ? ", the producer on a core of its own" : ", the producer at background priority in their gaps");
  };
  if (split_ == all_) return std::to_string(all_) + " compute thread(s): no core to spare for a producer";
  if (mode_ != Mode::kAuto) return name(arm_ == 1 ? split_ : all_) + (mode_ == Mode::kAll ? " (GNNPROF_PREFETCH_THREADS=all)" : " (GNNPROF_PREFETCH_THREADS=split)");
  if (!trial_.decided()) return "trying " + name(all_) + ", and " + name(split_);
  const int chosen = arm_;
  char buf[160];
  std::snprintf(buf, sizeof buf, ": median iteration %.1f ms against %.1f ms with %d compute thread%s (%zu and %zu prefetched iterations measured)",
                static_cast<double>(trial_.median_ns(chosen)) / 1e6, static_cast<double>(trial_.median_ns(1 - chosen)) / 1e6,
                chosen == 1 ? all_ : split_, (chosen == 1 ? all_ : split_) == 1 ? "" : "s", trial_.measured(chosen),
                trial_.measured(1 - chosen));
  return name(chosen == 1 ? split_ : all_) + buf;
}

void CoreSplit::report() {
  if (reported_) return;
  reported_ = true;
  gnnprof_note_collector("prefetch-threads", 1, describe().c_str());
}

}  // namespace gnnprof::prefetch
