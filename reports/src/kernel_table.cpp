#include "gnnprof/reports/kernel_table.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace gnnprof::reports {

std::vector<KernelRow> kernel_rows(const Profile& p, bool sampled) {
  std::vector<KernelRow> rows;
  std::map<std::string, std::vector<std::size_t>> with_op;  // kernel name -> its rows with an op
  for (const auto& k : p.kernels) {
    rows.push_back(KernelRow{k.name, k.stage, k.op, k.count, k.total_ns, k.max_ns, false});
    if (sampled && !k.op.empty()) with_op[k.name].push_back(rows.size() - 1);
  }
  if (sampled) {
    std::vector<KernelRow> split = rows;  // the rows with an op, growing; those without, kept or dropped
    std::vector<bool> dropped(rows.size(), false);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const KernelRow& k = rows[i];
      const auto at = with_op.find(k.name);
      if (!k.op.empty() || at == with_op.end()) continue;
      std::uint64_t calls = 0;
      for (std::size_t j : at->second) calls += rows[j].count;
      if (calls == 0) continue;
      // Shares by calls, rounded so that the calls still add up: the last row takes the rest.
      std::uint64_t given_calls = 0;
      std::int64_t given_ns = 0;
      for (std::size_t n = 0; n < at->second.size(); ++n) {
        const std::size_t j = at->second[n];
        const bool last = n + 1 == at->second.size();
        const double share = static_cast<double>(rows[j].count) / static_cast<double>(calls);
        const std::uint64_t c = last ? k.count - given_calls : static_cast<std::uint64_t>(std::llround(share * static_cast<double>(k.count)));
        const std::int64_t t = last ? k.total_ns - given_ns : std::llround(share * static_cast<double>(k.total_ns));
        given_calls += c;
        given_ns += t;
        split[j].count += c;
        split[j].total_ns += t;
        split[j].max_ns = std::max(split[j].max_ns, k.max_ns);
        split[j].estimated = true;
      }
      dropped[i] = true;
    }
    rows.clear();
    for (std::size_t i = 0; i < split.size(); ++i)
      if (!dropped[i]) rows.push_back(std::move(split[i]));
  }
  std::stable_sort(rows.begin(), rows.end(), [](const KernelRow& a, const KernelRow& b) { return a.total_ns > b.total_ns; });
  return rows;
}

}  // namespace gnnprof::reports
