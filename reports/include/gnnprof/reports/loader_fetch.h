// loader_fetch.h — batches a torch DataLoader fetched item by item, from the counters the Python
// package samples at each such fetch (python/gnnprof/_loader_fetch.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gnnprof/profile.h"

namespace gnnprof::reports {

/// Counter name prefixes, each followed by ": <dataset> with <collate>", or by kOpsObserved and
/// that: a fetch in an iteration whose torch ops were observed (their cost in its time).
inline constexpr const char* kFetchItemsCounter = "DataLoader fetch items";
inline constexpr const char* kFetchNsCounter = "DataLoader fetch ns";
inline constexpr const char* kCollateNsCounter = "DataLoader collate ns";
inline constexpr const char* kOpsObserved = " (ops observed)";
/// Ends <dataset> where the dataset is not known to take a list of indices.
inline constexpr const char* kOwnGetitem = " (its own __getitem__)";

/// An item of a dataset's own __getitem__ this cheap is mostly the call: batching it pays.
inline constexpr double kCheapItemNs = 10'000;

/// One kind of item-by-item fetch (a dataset kind and collate function) over the run.
struct ItemFetch {
  std::string dataset;   ///< TensorDataset, Tensor, ndarray, "Subset of ..." or a class name
  std::string collate;   ///< the collate function's qualified name (default_collate)
  bool takes_indices = false;  ///< the dataset indexes a list of indices as it is
  std::uint64_t batches = 0;      ///< all of them, ops observed or not
  std::uint64_t items = 0;        ///< the largest batch's items (the batch_size)
  /// A batch's dataset[i] calls and its collate: means over the batches whose ops were not
  /// observed where there are 3 or more, else over the others; the slowest batch left out.
  double fetch_ns = 0;
  double collate_ns = 0;
  bool default_collate() const { return collate == "default_collate"; }
  double mean_items = 0;          ///< items a batch, mean over the same batches as the times
  double per_item_ns() const { return mean_items > 0 ? fetch_ns / mean_items : 0; }
  /// What a fetch in one call removes: the calls, and default_collate's stacking (batch_size=None
  /// converts instead); another collate function still runs, on the batch.
  double removable_ns() const { return fetch_ns + (default_collate() ? collate_ns : 0); }
};

/// A counter's mean with its largest sample left out, from 3 samples on (a pass's first batch,
/// a file's first read); its mean below that.
double mean_without_max(const CounterStats& c);

/// The profile's item-by-item fetches, most batches first.
std::vector<ItemFetch> item_fetches(const Profile& p);
/// `fetches` of several processes (a loader's workers) as one per kind: batches added, the
/// times weighted by them.
std::vector<ItemFetch> merge_item_fetches(const std::vector<std::vector<ItemFetch>>& fetches);
/// "N dataset[i] calls on its D (time, per item) and <collate> ... (time)".
std::string describe_fetch(const ItemFetch& f);
/// The sentence that says how to fetch each batch in one call (a BatchSampler as the sampler).
std::string batch_in_one_call(const ItemFetch& f);

}  // namespace gnnprof::reports
