#include "gnnprof/reports/hierarchy.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "gnnprof/reports/format.h"

namespace gnnprof::reports {

bool is_op_category(const std::string& category) { return category == "op"; }

Hierarchy build_hierarchy(const Profile& p, const Analysis& a, std::size_t top_ops) {
  Hierarchy h;
  h.top_ops = top_ops;
  h.iteration_median_ns = a.iteration_median_ns;
  h.edges = !p.stage_edges.empty();
  std::map<std::string, const StageStats*> stage;
  for (const auto& s : p.stages) {
    stage.emplace(s.name, &s);
    if (is_op_category(s.category)) ++h.op_stages;
  }
  auto add_phases = [&](const std::vector<IterationStage>& rows, bool hidden) {
    for (const auto& r : rows) {
      if (is_op_category(r.category)) continue;
      PhaseNode ph;
      ph.name = r.name;
      ph.category = r.category;
      ph.hidden = hidden;
      ph.median_ns = r.median_ns;
      ph.p90_ns = r.p90_ns;
      ph.mean_ns = r.mean_ns;
      ph.share = r.share;
      if (auto s = stage.find(r.name); s != stage.end()) {
        ph.stats = *s->second;
        ph.hits = s->second->hits;
        ph.total_ns = s->second->total_ns;
        ph.self_ns = s->second->self_ns;
      }
      h.phases.push_back(std::move(ph));
    }
  };
  add_phases(a.loop_stages, false);
  add_phases(a.other_stages, true);
  // Stages outside every analysed iteration (setup, a profile without iterations) are phases
  // too, after the others, by total time.
  {
    std::set<std::string> seen;
    for (const auto& ph : h.phases) seen.insert(ph.name);
    for (const auto& s : p.stages) {
      if (is_op_category(s.category) || seen.count(s.name)) continue;
      PhaseNode ph;
      ph.name = s.name;
      ph.category = s.category;
      ph.stats = s;
      ph.hits = s.hits;
      ph.total_ns = s.total_ns;
      ph.self_ns = s.self_ns;
      ph.in_iterations = false;
      h.phases.push_back(std::move(ph));
    }
  }
  // Iteration sampling: ops were recorded in some iterations only, their phases in every one,
  // so an op's share of its phase is taken against the phase's time in those iterations.
  std::vector<const IterationStats*> complete;
  for (const auto& it : p.iterations)
    if (it.complete) complete.push_back(&it);
  const std::vector<const IterationStats*> observed = ops_observed(complete);
  const bool sampled = observed.size() < complete.size();
  h.complete_iterations = complete.size();
  h.loader_worker = a.loader_worker;
  h.observed_iterations = observed.size();
  h.analysed_iterations = a.iterations_used - a.iterations_unobserved;  // the stage means' iterations
  if (!complete.empty()) {
    h.before_loop_ns = std::max<std::int64_t>(0, complete.front()->begin_ns);
    h.after_loop_ns = std::max<std::int64_t>(0, p.wall_ns - complete.back()->begin_ns - complete.back()->wall_ns);
    for (std::size_t i = 1; i < complete.size(); ++i)
      h.between_ns += std::max<std::int64_t>(0, complete[i]->begin_ns - complete[i - 1]->begin_ns - complete[i - 1]->wall_ns);
  }
  // The stages that unobserved iterations have (scopes, the optimizer): recorded in every one.
  std::set<std::string> in_unobserved;
  if (sampled) {
    const std::set<const IterationStats*> seen(observed.begin(), observed.end());
    for (const auto* it : complete)
      if (seen.count(it) == 0)
        for (const auto& [n, v] : it->stages) in_unobserved.insert(n);
  }
  // An op's time in the observed iterations (its per-iteration sums: over all its phases).
  auto op_in_observed = [&](const std::string& op) {
    std::int64_t sum = 0;
    for (const auto* it : observed) {
      if (auto f = it->stages.find(op); f != it->stages.end()) sum += f->second;
      if (auto f = it->other_threads.find(op); f != it->other_threads.end()) sum += f->second;  // autograd's device thread
    }
    return sum;
  };
  auto ops_denominator = [&](const PhaseNode& ph) -> std::int64_t {
    if (!sampled) return ph.total_ns;
    std::int64_t sum = 0;
    for (const auto* it : observed) {
      const auto& m = ph.hidden ? it->other_threads : it->stages;
      if (auto f = m.find(ph.name); f != m.end()) sum += f->second;
    }
    // A phase that lives mostly outside the iterations (set-up's "ops (no grad)"): its ops'
    // shares are of its run time, as their Total is.
    return sum > 0 && 2 * sum >= ph.total_ns ? sum : ph.total_ns;
  };
  std::set<std::string> placed_ops;
  for (auto& ph : h.phases) {
    // A phase seen on both the loop and other threads appears twice; its ops once, on the
    // loop-thread row.
    if (ph.hidden && std::any_of(h.phases.begin(), h.phases.end(), [&](const PhaseNode& o) { return !o.hidden && o.name == ph.name; }))
      continue;
    // Nested phases (a record_function scope around forward): the phase holding most of its
    // time, through the op it runs in (checkpoint recompute inside backward's
    // CheckpointFunctionBackward).
    auto phase_above = [&](std::string name) {
      for (int hop = 0; hop < 8; ++hop) {
        auto s = stage.find(name);
        if (s == stage.end()) return std::string();
        if (!is_op_category(s->second->category)) return name;
        const StageEdge* up = nullptr;
        for (const auto& e : p.stage_edges)
          if (e.child == name && e.parent != name && (up == nullptr || e.total_ns > up->total_ns)) up = &e;
        if (up == nullptr) return std::string();
        name = up->parent;
      }
      return std::string();
    };
    std::int64_t inside = 0;
    for (const auto& e : p.stage_edges) {
      if (e.child != ph.name || e.parent == ph.name || e.total_ns <= inside) continue;
      const std::string above = phase_above(e.parent);
      if (above.empty() || above == ph.name) continue;
      inside = e.total_ns;
      if (2 * e.total_ns >= ph.total_ns) ph.parent = above;
    }
    const std::int64_t denominator = ops_denominator(ph);
    ph.sampled = sampled && !ph.hidden && ph.in_iterations && in_unobserved.count(ph.name) == 0;
    std::vector<OpNode> ops;
    for (const auto& e : p.stage_edges) {
      if (e.parent != ph.name) continue;
      auto s = stage.find(e.child);
      if (s == stage.end() || !is_op_category(s->second->category)) continue;
      OpNode op;
      op.name = e.child;
      op.label = short_op_name(e.child);
      op.hits = e.hits;
      op.self_ns = e.self_ns;
      op.total_ns = e.total_ns;
      // Under sampling the denominator is the phase's time in the observed iterations: so is
      // the numerator (the op's share of this phase of its time there), not its run total,
      // which counts set-up before the first iteration too (shares over 100 %).
      double numerator = static_cast<double>(e.self_ns);
      if (sampled && denominator != ph.total_ns && s->second->total_ns > 0)
        numerator = std::min(numerator, static_cast<double>(op_in_observed(e.child)) * static_cast<double>(e.self_ns) /
                                             static_cast<double>(s->second->total_ns));
      // (Capped: the per-iteration sums are per op, not per (phase, op).)
      op.share = denominator > 0 ? std::min(1.0, numerator / static_cast<double>(denominator)) : 0;
      placed_ops.insert(op.name);
      ops.push_back(std::move(op));
    }
    // By their share of the phase (what the rows' % says: under sampling, of its time in the
    // observed iterations, set-up left out), then by run time.
    std::stable_sort(ops.begin(), ops.end(), [](const OpNode& x, const OpNode& y) {
      return x.share != y.share ? x.share > y.share : x.self_ns > y.self_ns;
    });
    ph.op_count = ops.size();
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (i < top_ops) {
        ph.ops.push_back(ops[i]);
        continue;
      }
      ++ph.other.hits;
      ph.other.self_ns += ops[i].self_ns;
      ph.other.total_ns += ops[i].total_ns;
      ph.other.share += ops[i].share;
    }
    ph.other.name = ph.other.label = "other ops";
    for (const auto& l : p.lines) {
      auto f = l.stages.find(ph.name);
      if (f == l.stages.end() || f->second <= 0) continue;
      ph.lines.push_back(LineNode{l.file, l.code, l.line, f->second,
                                  ph.total_ns > 0 ? static_cast<double>(f->second) / static_cast<double>(ph.total_ns) : 0});
    }
    std::stable_sort(ph.lines.begin(), ph.lines.end(), [](const LineNode& x, const LineNode& y) { return x.ns > y.ns; });
    if (ph.lines.size() > 5) ph.lines.resize(5);
  }
  // Ops listed under a phase; without stage_edges (older profiles) every op stage.
  h.op_stages = h.edges ? placed_ops.size() : h.op_stages;
  h.unattributed_median_ns = a.unattributed_median_ns;
  h.unattributed_mean_ns = a.unattributed_mean_ns;
  h.iteration_mean_ns = a.iteration_mean_ns;
  return h;
}

double iteration_pct(const PhaseNode& ph, const Hierarchy& h) {
  if (ph.hidden || !ph.in_iterations || h.iteration_mean_ns <= 0) return -1;
  return 100.0 * static_cast<double>(ph.mean_ns) / static_cast<double>(h.iteration_mean_ns);
}

double unattributed_iteration_pct(const Hierarchy& h) {
  if (h.iteration_mean_ns <= 0) return -1;
  return 100.0 * static_cast<double>(h.unattributed_mean_ns) / static_cast<double>(h.iteration_mean_ns);
}

std::vector<const PhaseNode*> phase_rows(const Hierarchy& h) {
  std::vector<const PhaseNode*> all;
  for (const auto& ph : h.phases)
    if (std::none_of(all.begin(), all.end(), [&](const PhaseNode* x) { return x->name == ph.name; })) all.push_back(&ph);
  std::stable_sort(all.begin(), all.end(), [](const PhaseNode* x, const PhaseNode* y) {
    if (x->stats.total_ns != y->stats.total_ns) return x->stats.total_ns > y->stats.total_ns;
    return x->name < y->name;
  });
  // A nested phase (checkpoint recompute inside backward) right after the phase it runs in.
  auto listed = [&](const std::string& name) {
    return std::any_of(all.begin(), all.end(), [&](const PhaseNode* x) { return x->name == name; });
  };
  std::vector<const PhaseNode*> rows;
  std::set<const PhaseNode*> placed;
  std::function<void(const PhaseNode*, int)> place = [&](const PhaseNode* ph, int depth) {
    if (!placed.insert(ph).second) return;
    rows.push_back(ph);
    if (depth > 8) return;
    for (const PhaseNode* c : all)
      if (c->parent == ph->name && c != ph) place(c, depth + 1);
  };
  for (const PhaseNode* ph : all)
    if (ph->parent.empty() || !listed(ph->parent)) place(ph, 0);
  for (const PhaseNode* ph : all) place(ph, 0);  // a cycle of parents: flat
  return rows;
}

int phase_depth(const PhaseNode& ph, const Hierarchy& h) {
  int depth = 0;
  std::set<std::string> seen{ph.name};
  for (const PhaseNode* at = &ph; !at->parent.empty() && depth < 8; ++depth) {
    if (!seen.insert(at->parent).second) return 0;  // a cycle of parents: listed flat (phase_rows)
    const PhaseNode* up = nullptr;
    for (const auto& x : h.phases)
      if (x.name == at->parent && &x != at) up = &x;
    if (up == nullptr) break;
    at = up;
  }
  return depth;
}

std::map<std::string, StagePlace> stage_places(const std::vector<const Profile*>& profiles) {
  std::map<std::string, StagePlace> out;
  std::map<std::string, std::map<std::string, std::int64_t>> in;  // op -> phase -> time
  for (const Profile* p : profiles) {
    for (const auto& s : p->stages) out[s.name].category = s.category;
    for (const auto& e : p->stage_edges) in[e.child][e.parent] += e.total_ns;
  }
  for (auto& [name, place] : out) {
    if (!place.op()) continue;
    std::vector<std::pair<std::int64_t, std::string>> shares;  // ns, phase
    std::int64_t total = 0;
    for (const auto& [parent, ns] : in[name]) {
      auto f = out.find(parent);
      if (f == out.end() || f->second.op()) continue;
      shares.emplace_back(ns, parent);
      total += ns;
    }
    std::stable_sort(shares.begin(), shares.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    if (!shares.empty()) place.phase = shares.front().second;
    if (shares.size() < 2 || total <= 0 || 10 * shares[1].first < total) continue;
    for (const auto& [ns, parent] : shares)
      if (10 * ns >= total)
        place.phases += fmt::format("{}{} {:.0f}%", place.phases.empty() ? "" : ", ", parent,
                                    100.0 * static_cast<double>(ns) / static_cast<double>(total));
  }
  return out;
}

std::string between_text(const Hierarchy& h) {
  if (h.between_ns <= 0) return "";
  if (h.loader_worker)
    return fmt::format(", {} between batches (the worker waiting for the loop to ask for the next)", human_ns(h.between_ns));
  return fmt::format(", {} between iterations (no iteration: between the loop's passes, such as an evaluation after each epoch)",
                     human_ns(h.between_ns));
}

}  // namespace gnnprof::reports
