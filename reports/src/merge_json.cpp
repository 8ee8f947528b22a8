// merge_json.cpp — the gnnprof.merge/1 document (docs/merge-schema.md). Its records are
// described once (gnnprof/internal/json_fields.h); the root assembles them with the fields
// that depend on the whole merge (the stage rows, each rank's stage columns in their order).
#include <nlohmann/json.hpp>

#include "gnnprof/internal/json_fields.h"
#include "gnnprof/reports/merge.h"

namespace gnnprof::detail {
template <>
struct Record<reports::MergeOptions> {
  using O = reports::MergeOptions;
  static constexpr auto fields = std::tuple{field("straggler_threshold", &O::straggler_threshold), field("skip", &O::skip)};
};
/// A rank; its "stage_ns" (every merged stage, 0 where it has none) follows.
template <>
struct Record<reports::RankSummary> {
  using R = reports::RankSummary;
  static constexpr auto fields =
      std::tuple{field("rank", &R::rank),
                 field("local_rank", &R::local_rank),
                 field("host", &R::host),
                 field("pid", &R::pid),
                 field("file", &R::file),
                 field("iterations", &R::iterations),
                 field("iteration_ns", &R::iteration_ns),
                 field("busy_ns", &R::busy_ns),
                 field("iteration_median_ns", &R::iteration_median_ns),
                 field("busy_median_ns", &R::busy_median_ns),
                 field("comm_ns", &R::comm_ns),
                 field("comm_share", &R::comm_share),
                 field("comm_in_flight_ns", &R::comm_in_flight_ns),
                 field("comm_overlapped_ns", &R::comm_overlapped_ns),
                 field("materialized_rows", &R::materialized_rows),
                 field("materialized_bytes", &R::materialized_bytes),
                 field("gpu_kernel_ns", &R::gpu_kernel_ns),
                 field("clock_offset_ns", &R::clock_offset_ns),
                 field("clock_basis", &R::clock_basis)};
};
template <>
struct Record<reports::Straggler> {
  using S = reports::Straggler;
  static constexpr auto fields =
      std::tuple{field("rank", &S::rank),   field("excess", &S::excess), field("busy_ns", &S::busy_ns),
                 field("others_busy_ns", &S::others_busy_ns), field("stage", &S::stage),
                 field("stage_excess_ns", &S::stage_excess_ns), field("op", &S::op), field("op_excess_ns", &S::op_excess_ns)};
};
}  // namespace gnnprof::detail

namespace gnnprof::reports {

using json = nlohmann::ordered_json;
using detail::to_json_value;

std::string merged_to_json(const Merged& m) {
  json j;
  j["schema"] = m.schema;
  j["run_id"] = m.run_id;
  j["world_size"] = m.world_size;
  j["hosts"] = m.hosts;
  j["options"] = to_json_value(m.options);
  j["busy_median_ns"] = m.busy_median_ns;
  j["stages"] = json::array();
  for (const std::string& n : m.stages) {
    auto c = m.stage_category.find(n);
    j["stages"].push_back({{"name", n}, {"category", c == m.stage_category.end() ? "" : c->second}});
  }
  j["ranks"] = json::array();
  for (const RankSummary& r : m.ranks) {
    json jr = to_json_value(r);
    json stages = json::object();
    for (const std::string& n : m.stages) {
      auto it = r.stage_ns.find(n);
      stages[n] = it == r.stage_ns.end() ? 0 : it->second;
    }
    jr["stage_ns"] = std::move(stages);
    j["ranks"].push_back(std::move(jr));
  }
  j["stragglers"] = to_json_value(m.stragglers);
  j["imbalance"] = {{"materialized_rows", m.rows_imbalance}, {"materialized_bytes", m.bytes_imbalance}};
  j["notes"] = m.notes;
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace gnnprof::reports
