#include "gnnprof/block_trial.h"

#include <algorithm>

#include "gnnprof/order_stats.h"

namespace gnnprof {

BlockTrial::BlockTrial(Options o) : opt_(o) {
  opt_.arms = std::max(1, opt_.arms);
  opt_.warmup = std::max(0, opt_.warmup);
  opt_.block = std::max(2, opt_.block);
  opt_.rounds = std::max(1, opt_.rounds);
  opt_.min_gain = std::max(0.0, opt_.min_gain);
  times_.resize(static_cast<std::size_t>(opt_.arms));
  if (opt_.arms == 1) decided_ = true;
}

int BlockTrial::on_iteration(std::uint64_t now_ns) {
  if (decided_) return -1;
  if (have_last_ && measure_last_ && now_ns > last_) times_[static_cast<std::size_t>(current_)].push_back(now_ns - last_);
  last_ = now_ns;
  have_last_ = true;
  const int i = iteration_++;
  const int before = current_;
  if (i < opt_.warmup) {
    measure_last_ = false;
    return -1;
  }
  const int k = i - opt_.warmup;
  if (k >= opt_.rounds * opt_.arms * opt_.block) {
    decide();
  } else {
    current_ = (k / opt_.block) % opt_.arms;
    measure_last_ = k % opt_.block != 0 && !skip_;
  }
  skip_ = false;
  return current_ != before ? current_ : -1;
}

std::uint64_t BlockTrial::median_ns(int arm) const {
  const auto& v = times_.at(static_cast<std::size_t>(arm));
  return v.empty() ? 0 : upper_median(v);
}

void BlockTrial::decide() {
  decided_ = true;
  measure_last_ = false;
  int best = 0;
  const std::uint64_t base = median_ns(0);
  for (int a = 1; a < arms(); ++a) {
    const std::uint64_t m = median_ns(a);
    if (m == 0) continue;
    const std::uint64_t against = best == 0 ? base : median_ns(best);
    const double bar = best == 0 ? static_cast<double>(against) * (1.0 - opt_.min_gain) : static_cast<double>(against);
    if (against == 0 || static_cast<double>(m) < bar) best = a;
  }
  current_ = best;
}

}  // namespace gnnprof
