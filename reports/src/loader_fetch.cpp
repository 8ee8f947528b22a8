#include "gnnprof/reports/loader_fetch.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string_view>

#include "gnnprof/reports/format.h"

namespace gnnprof::reports {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

double mean_without_max(const CounterStats& c) {
  if (c.samples < 3) return c.mean;
  const double n = static_cast<double>(c.samples);
  return std::max(0.0, (c.mean * n - c.max) / (n - 1));
}

std::vector<ItemFetch> item_fetches(const Profile& p) {
  struct Sides {
    ItemFetch f;
    const CounterStats* c[2][3] = {};  // [ops observed][items, fetch ns, collate ns]
  };
  std::map<std::string, Sides> by_label;
  const std::string_view observed = kOpsObserved;
  for (const CounterStats& c : p.counters) {
    std::string_view name = c.name;
    int which = -1;
    for (const auto& [i, prefix] : {std::pair{0, kFetchItemsCounter}, {1, kFetchNsCounter}, {2, kCollateNsCounter}})
      if (starts_with(name, prefix)) {
        which = i;
        name.remove_prefix(std::string_view(prefix).size());
      }
    const bool obs = starts_with(name, observed);
    if (obs) name.remove_prefix(observed.size());
    if (which < 0 || !starts_with(name, ": ")) continue;
    name.remove_prefix(2);
    const auto with = name.rfind(" with ");
    if (with == std::string_view::npos) continue;
    Sides& s = by_label[std::string(name)];
    s.c[obs][which] = &c;
    ItemFetch& f = s.f;
    f.dataset = std::string(name.substr(0, with));
    f.collate = std::string(name.substr(with + 6));
    const std::string_view own = kOwnGetitem;
    f.takes_indices = !(f.dataset.size() >= own.size() && f.dataset.compare(f.dataset.size() - own.size(), own.size(), own) == 0);
    if (!f.takes_indices) f.dataset.resize(f.dataset.size() - own.size());
  }
  std::vector<ItemFetch> out;
  for (auto& entry : by_label) {
    Sides& s = entry.second;  // not a structured binding: a lambda below captures it
    ItemFetch& f = s.f;
    for (int o = 0; o < 2; ++o)
      if (s.c[o][0] != nullptr) {
        f.batches += s.c[o][0]->samples;
        f.items = std::max(f.items, static_cast<std::uint64_t>(std::max(0.0, s.c[o][0]->max)));
      }
    // The batches whose ops were not observed, unless too few of them and the others are there.
    auto complete = [&](int o) { return s.c[o][0] != nullptr && s.c[o][1] != nullptr && s.c[o][2] != nullptr; };
    const int side = complete(0) && (s.c[0][0]->samples >= 3 || !complete(1)) ? 0 : 1;
    if (!complete(side)) continue;
    f.mean_items = s.c[side][0]->mean;
    f.fetch_ns = mean_without_max(*s.c[side][1]);
    f.collate_ns = mean_without_max(*s.c[side][2]);
    if (f.batches > 0) out.push_back(std::move(f));
  }
  std::stable_sort(out.begin(), out.end(), [](const ItemFetch& a, const ItemFetch& b) { return a.batches > b.batches; });
  return out;
}

std::vector<ItemFetch> merge_item_fetches(const std::vector<std::vector<ItemFetch>>& fetches) {
  std::map<std::pair<std::string, std::string>, ItemFetch> by_kind;
  for (const auto& list : fetches)
    for (const ItemFetch& f : list) {
      ItemFetch& m = by_kind[{f.dataset, f.collate}];
      const double before = static_cast<double>(m.batches), more = static_cast<double>(f.batches);
      if (before + more <= 0) continue;
      m.fetch_ns = (m.fetch_ns * before + f.fetch_ns * more) / (before + more);
      m.collate_ns = (m.collate_ns * before + f.collate_ns * more) / (before + more);
      m.mean_items = (m.mean_items * before + f.mean_items * more) / (before + more);
      m.dataset = f.dataset;
      m.collate = f.collate;
      m.takes_indices = f.takes_indices;
      m.batches += f.batches;
      m.items = std::max(m.items, f.items);
    }
  std::vector<ItemFetch> out;
  for (auto& [kind, f] : by_kind)
    if (f.batches > 0) out.push_back(std::move(f));
  std::stable_sort(out.begin(), out.end(), [](const ItemFetch& a, const ItemFetch& b) { return a.batches > b.batches; });
  return out;
}

std::string describe_fetch(const ItemFetch& f) {
  const auto ns = [](double v) { return human_ns(static_cast<std::int64_t>(v)); };
  return fmt::format("{} dataset[i] calls on its {} ({}, {} an item) and {}", f.items, f.dataset, ns(f.fetch_ns),
                     ns(f.per_item_ns()),
                     f.default_collate() ? fmt::format("default_collate stacking the {} items ({})", f.items, ns(f.collate_ns))
                                         : fmt::format("{} over the list of {} items ({})", f.collate, f.items, ns(f.collate_ns)));
}

std::string batch_in_one_call(const ItemFetch& f) {
  const std::string loader = fmt::format(
      "DataLoader(dataset, batch_size=None, sampler=BatchSampler(RandomSampler(dataset), batch_size={}, drop_last=False)) "
      "(SequentialSampler(dataset) where shuffle is off, drop_last as the loader had it)",
      f.items);
  const bool tensors = f.dataset == "TensorDataset" || f.dataset.rfind("Subset of TensorDataset", 0) == 0;
  const std::string after = f.default_collate()
                                ? ", with no stacking"
                                : fmt::format("; {} then receives that batch instead of a list of its items", f.collate);
  if (f.takes_indices)
    return fmt::format("A {} takes a list of indices at once: {} fetches each batch with one dataset[indices], {}{}.",
                       f.dataset, loader, tensors ? "one index per tensor" : "one index", after);
  return fmt::format("If {}.__getitem__ can take a list of indices (a tensor indexed by it), {} fetches each batch with "
                     "one dataset[indices]{}.",
                     f.dataset, loader, after);
}

}  // namespace gnnprof::reports
