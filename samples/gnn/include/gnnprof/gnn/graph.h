// gnnprof/gnn/graph.h — the graph side of the sample pipeline (no libtorch).
//
// A CSC graph (in-neighbours per node: int64 offsets, int32 or int64 indices), node labels and
// a train/val/test split, plus the three ways to get one: a deterministic synthetic generator
// (Chung-Lu power-law degrees with class homophily, so that labels are learnable from features
// *and* neighbourhoods), the Cora text format, and a binary cache file.
//
//   gnnprof::gnn::SyntheticSpec spec;  spec.nodes = 100000;
//   auto ds = gnnprof::gnn::prepare_synthetic("~/.cache/gnnprof", spec, &std::cerr);
//   if (!ds) { std::cerr << ds.status().message() << "\n"; return 2; }
#pragma once

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>
#include <vector>

#include "gnnprof/result.h"

namespace gnnprof::gnn {

/// In-neighbours of node v are indices[indptr[v] .. indptr[v+1]) (sources of edges into v).
/// Indices are stored 32-bit when the node count allows it, else 64-bit.
class CscGraph {
 public:
  CscGraph() = default;
  CscGraph(std::int64_t num_nodes, std::vector<std::int64_t> indptr, std::vector<std::int64_t> indices);

  std::int64_t num_nodes() const noexcept { return num_nodes_; }
  std::int64_t num_edges() const noexcept { return indptr_.empty() ? 0 : indptr_.back(); }
  std::int64_t in_degree(std::int64_t v) const noexcept { return indptr_[v + 1] - indptr_[v]; }
  std::int64_t neighbor(std::int64_t e) const noexcept {
    return wide_ ? idx64_[static_cast<std::size_t>(e)] : idx32_[static_cast<std::size_t>(e)];
  }
  const std::vector<std::int64_t>& indptr() const noexcept { return indptr_; }
  bool wide_indices() const noexcept { return wide_; }
  const std::vector<std::int32_t>& indices32() const noexcept { return idx32_; }
  const std::vector<std::int64_t>& indices64() const noexcept { return idx64_; }

  /// Validates offsets and indices; an error names the first bad entry.
  Status validate() const;

 private:
  std::int64_t num_nodes_ = 0;
  std::vector<std::int64_t> indptr_;
  bool wide_ = false;
  std::vector<std::int32_t> idx32_;
  std::vector<std::int64_t> idx64_;
};

enum class Split : std::uint8_t { kTrain = 0, kVal = 1, kTest = 2 };

/// Graph + labels + split. Node features live in an fp16 file (features_path), read through
/// FeatureStore.
struct Dataset {
  std::string name;
  CscGraph graph;
  std::vector<std::int32_t> labels;
  std::vector<Split> split;
  std::int64_t num_classes = 0;
  std::int64_t feat_dim = 0;
  std::string features_path;

  std::vector<std::int64_t> nodes_in(Split s) const;
};

struct SyntheticSpec {
  std::int64_t nodes = 1000000;
  std::int64_t avg_degree = 10;
  std::int64_t feat_dim = 128;
  std::int64_t classes = 16;
  std::uint64_t seed = 1;
  double homophily = 0.8;      ///< share of in-edges drawn from the node's own class
  double signal = 0.05;        ///< class-centroid scale in the features (noise is U(-1, 1))
  double train_fraction = 0.1; ///< as in OGB's large graphs, a small labelled train set
  double val_fraction = 0.05;
};

/// Generates the graph, labels and split in memory (features: write_synthetic_features).
/// Deterministic for a spec. Progress lines go to `progress` when non-null.
Dataset generate_synthetic(const SyntheticSpec& spec, std::ostream* progress);

/// Writes the fp16 features of a synthetic dataset: class centroid * signal + U(-1, 1) noise.
Status write_synthetic_features(const SyntheticSpec& spec, const std::vector<std::int32_t>& labels,
                                const std::string& path, std::ostream* progress);

/// The synthetic dataset for `spec`, generated into `cache_dir` on first use (graph.bin +
/// features.f16, written atomically) and loaded from there afterwards.
Result<Dataset> prepare_synthetic(const std::string& cache_dir, const SyntheticSpec& spec, std::ostream* progress);

/// Loads DIR/cora.content and DIR/cora.cites (the LINQS Cora format: "<paper> <0/1 words...>
/// <label>" and "<cited> <citing>"); edges are made symmetric. Features are written as fp16
/// to `cache_dir`/cora-<hash>/features.f16.
Result<Dataset> load_cora(const std::string& dir, const std::string& cache_dir);

/// The parsing half of load_cora, from streams (`*_name` names them in errors): graph,
/// labels, split and the row-normalized features, which load_cora then writes as fp16.
struct CoraParsed {
  Dataset dataset;                        ///< features_path left empty
  std::vector<std::vector<float>> rows;   ///< features, one row per paper
};
Result<CoraParsed> parse_cora(std::istream& content, const std::string& content_name, std::istream& cites,
                              const std::string& cites_name);

/// Binary graph file: magic "GNNPGRF1", then counts, indptr, indices, labels and split.
Status save_graph_file(const Dataset& ds, const std::string& path);
Result<Dataset> load_graph_file(const std::string& path);

/// "~" expanded; default cache dir is $XDG_CACHE_HOME/gnnprof or ~/.cache/gnnprof.
std::string default_cache_dir();

}  // namespace gnnprof::gnn
