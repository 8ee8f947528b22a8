// merge_json.cpp — the gnnprof.merge/1 document (docs/merge-schema.md).
#include <nlohmann/json.hpp>

#include "gnnprof/reports/merge.h"

namespace gnnprof::reports {

using json = nlohmann::ordered_json;

std::string merged_to_json(const Merged& m) {
  json j;
  j["schema"] = m.schema;
  j["run_id"] = m.run_id;
  j["world_size"] = m.world_size;
  j["hosts"] = m.hosts;
  j["options"] = {{"straggler_threshold", m.options.straggler_threshold}, {"skip", m.options.skip}};
  j["busy_median_ns"] = m.busy_median_ns;
  j["stages"] = json::array();
  for (const std::string& n : m.stages) {
    auto c = m.stage_category.find(n);
    j["stages"].push_back({{"name", n}, {"category", c == m.stage_category.end() ? "" : c->second}});
  }
  j["ranks"] = json::array();
  for (const RankSummary& r : m.ranks) {
    json stages = json::object();
    for (const std::string& n : m.stages) {
      auto it = r.stage_ns.find(n);
      stages[n] = it == r.stage_ns.end() ? 0 : it->second;
    }
    j["ranks"].push_back({{"rank", r.rank},
                          {"local_rank", r.local_rank},
                          {"host", r.host},
                          {"pid", r.pid},
                          {"file", r.file},
                          {"iterations", r.iterations},
                          {"iteration_ns", r.iteration_ns},
                          {"busy_ns", r.busy_ns},
                          {"iteration_median_ns", r.iteration_median_ns},
                          {"busy_median_ns", r.busy_median_ns},
                          {"comm_ns", r.comm_ns},
                          {"comm_share", r.comm_share},
                          {"comm_in_flight_ns", r.comm_in_flight_ns},
                          {"comm_overlapped_ns", r.comm_overlapped_ns},
                          {"materialized_rows", r.materialized_rows},
                          {"materialized_bytes", r.materialized_bytes},
                          {"gpu_kernel_ns", r.gpu_kernel_ns},
                          {"clock_offset_ns", r.clock_offset_ns},
                          {"clock_basis", to_string(r.clock_basis)},
                          {"stage_ns", stages}});
  }
  j["stragglers"] = json::array();
  for (const Straggler& s : m.stragglers)
    j["stragglers"].push_back(
        {{"rank", s.rank}, {"excess", s.excess}, {"busy_ns", s.busy_ns}, {"others_busy_ns", s.others_busy_ns}, {"stage", s.stage}, {"stage_excess_ns", s.stage_excess_ns},
         {"op", s.op}, {"op_excess_ns", s.op_excess_ns}});
  j["imbalance"] = {{"materialized_rows", m.rows_imbalance}, {"materialized_bytes", m.bytes_imbalance}};
  j["notes"] = m.notes;
  return j.dump(1) + "\n";
}

}  // namespace gnnprof::reports
