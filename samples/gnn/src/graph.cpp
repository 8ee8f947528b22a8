#include "gnnprof/gnn/graph.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include "gnnprof/gnn/feature_file.h"
#include "gnnprof/gnn/half.h"
#include "gnnprof/profile_io.h"
#include "random.h"

namespace gnnprof::gnn {

namespace fs = std::filesystem;

CscGraph::CscGraph(std::int64_t num_nodes, std::vector<std::int64_t> indptr, std::vector<std::int64_t> indices)
    : num_nodes_(num_nodes), indptr_(std::move(indptr)) {
  wide_ = num_nodes > static_cast<std::int64_t>(INT32_MAX);
  if (wide_) {
    idx64_ = std::move(indices);
  } else {
    idx32_.resize(indices.size());
    for (std::size_t i = 0; i < indices.size(); ++i) idx32_[i] = static_cast<std::int32_t>(indices[i]);
  }
}

Status CscGraph::validate() const {
  if (indptr_.size() != static_cast<std::size_t>(num_nodes_) + 1)
    return Status::error("indptr has " + std::to_string(indptr_.size()) + " entries, expected " +
                         std::to_string(num_nodes_ + 1));
  if (indptr_.front() != 0) return Status::error("indptr[0] is not 0");
  for (std::int64_t v = 0; v < num_nodes_; ++v)
    if (indptr_[v + 1] < indptr_[v]) return Status::error("indptr decreases at node " + std::to_string(v));
  const std::int64_t e = num_edges();
  const std::size_t stored = wide_ ? idx64_.size() : idx32_.size();
  if (stored != static_cast<std::size_t>(e))
    return Status::error("indices has " + std::to_string(stored) + " entries, expected " + std::to_string(e));
  for (std::int64_t i = 0; i < e; ++i) {
    std::int64_t u = neighbor(i);
    if (u < 0 || u >= num_nodes_) return Status::error("edge " + std::to_string(i) + " has node id " + std::to_string(u));
  }
  return Status::ok();
}

std::vector<std::int64_t> Dataset::nodes_in(Split s) const {
  std::vector<std::int64_t> out;
  for (std::size_t v = 0; v < split.size(); ++v)
    if (split[v] == s) out.push_back(static_cast<std::int64_t>(v));
  return out;
}

namespace {

void report(std::ostream* progress, const std::string& what, std::int64_t done, std::int64_t total) {
  if (progress == nullptr || total <= 0) return;
  *progress << "\r" << what << ": " << (100 * done / total) << "%" << (done == total ? "\n" : "") << std::flush;
}

std::vector<Split> make_split(std::int64_t n, double train, double val, std::uint64_t seed) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  SplitMix64 rng(seed ^ 0x5eed5eedULL);
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<std::size_t>(i)], order[rng.below(static_cast<std::uint64_t>(i + 1))]);
  std::vector<Split> split(static_cast<std::size_t>(n), Split::kTest);
  const auto n_train = static_cast<std::int64_t>(train * static_cast<double>(n));
  const auto n_val = static_cast<std::int64_t>(val * static_cast<double>(n));
  for (std::int64_t i = 0; i < n_train + n_val && i < n; ++i)
    split[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = i < n_train ? Split::kTrain : Split::kVal;
  return split;
}

}  // namespace

Dataset generate_synthetic(const SyntheticSpec& spec, std::ostream* progress) {
  const std::int64_t n = spec.nodes;
  SplitMix64 rng(spec.seed);
  Dataset ds;
  ds.name = "synthetic";
  ds.num_classes = spec.classes;
  ds.feat_dim = spec.feat_dim;
  ds.labels.resize(static_cast<std::size_t>(n));
  for (auto& l : ds.labels) l = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(spec.classes)));

  // Chung-Lu: node v's expected in-degree and its chance of being a source are both
  // proportional to w_v = rank(v)^(-1/(gamma-1)) with gamma = 2.5 (a power law), where ranks
  // are a random permutation so that hubs are spread over the id space.
  std::vector<std::int64_t> rank(static_cast<std::size_t>(n));
  std::iota(rank.begin(), rank.end(), 1);
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(rank[static_cast<std::size_t>(i)], rank[rng.below(static_cast<std::uint64_t>(i + 1))]);
  const double alpha = 1.0 / 1.5;
  std::vector<double> w(static_cast<std::size_t>(n));
  double total = 0;
  for (std::int64_t v = 0; v < n; ++v) total += (w[static_cast<std::size_t>(v)] = std::pow(static_cast<double>(rank[static_cast<std::size_t>(v)]), -alpha));

  // Cumulative weights, globally and per class, for drawing sources.
  std::vector<double> cum_all(static_cast<std::size_t>(n));
  std::vector<std::vector<double>> cum_class(static_cast<std::size_t>(spec.classes));
  std::vector<std::vector<std::int64_t>> node_class(static_cast<std::size_t>(spec.classes));
  double run = 0;
  for (std::int64_t v = 0; v < n; ++v) {
    run += w[static_cast<std::size_t>(v)];
    cum_all[static_cast<std::size_t>(v)] = run;
    auto c = static_cast<std::size_t>(ds.labels[static_cast<std::size_t>(v)]);
    double prev = cum_class[c].empty() ? 0.0 : cum_class[c].back();
    cum_class[c].push_back(prev + w[static_cast<std::size_t>(v)]);
    node_class[c].push_back(v);
  }
  auto draw = [&](const std::vector<double>& cum, double r) {
    return static_cast<std::size_t>(std::upper_bound(cum.begin(), cum.end(), r * cum.back()) - cum.begin());
  };

  std::vector<std::int64_t> indptr(static_cast<std::size_t>(n) + 1, 0), indices;
  indices.reserve(static_cast<std::size_t>(n * spec.avg_degree));
  const double scale = static_cast<double>(spec.avg_degree) * static_cast<double>(n) / total;
  for (std::int64_t v = 0; v < n; ++v) {
    double expect = scale * w[static_cast<std::size_t>(v)];
    auto deg = static_cast<std::int64_t>(expect);
    if (rng.uniform() < expect - static_cast<double>(deg)) ++deg;
    deg = std::max<std::int64_t>(deg, 1);
    auto c = static_cast<std::size_t>(ds.labels[static_cast<std::size_t>(v)]);
    for (std::int64_t k = 0; k < deg; ++k) {
      std::int64_t u;
      if (rng.uniform() < spec.homophily && node_class[c].size() > 1)
        u = node_class[c][std::min(draw(cum_class[c], rng.uniform()), node_class[c].size() - 1)];
      else
        u = static_cast<std::int64_t>(std::min(draw(cum_all, rng.uniform()), static_cast<std::size_t>(n - 1)));
      indices.push_back(u);
    }
    indptr[static_cast<std::size_t>(v) + 1] = static_cast<std::int64_t>(indices.size());
    if ((v & 0x3ffff) == 0 || v == n - 1) report(progress, "gnnprof: generating synthetic graph", v + 1, n);
  }
  ds.graph = CscGraph(n, std::move(indptr), std::move(indices));
  ds.split = make_split(n, spec.train_fraction, spec.val_fraction, spec.seed);
  return ds;
}

Status write_synthetic_features(const SyntheticSpec& spec, const std::vector<std::int32_t>& labels,
                                const std::string& path, std::ostream* progress) {
  const std::int64_t n = static_cast<std::int64_t>(labels.size()), d = spec.feat_dim;
  std::vector<float> centroid(static_cast<std::size_t>(spec.classes * d));
  SplitMix64 crng(spec.seed * 0x9e3779b97f4a7c15ULL + 17);
  for (auto& c : centroid) c = static_cast<float>(crng.gaussian());
  const auto signal = static_cast<float>(spec.signal);
  return write_feature_file(path, n, d, [&](std::int64_t row0, std::int64_t rows, std::uint16_t* out) {
    // One generator per chunk: the file does not depend on how it is chunked or written.
    SplitMix64 rng(spec.seed ^ (0xfea7u + static_cast<std::uint64_t>(row0) * 0x9e3779b97f4a7c15ULL));
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* c = &centroid[static_cast<std::size_t>(labels[static_cast<std::size_t>(row0 + r)] * d)];
      for (std::int64_t j = 0; j < d; ++j) {
        float noise = static_cast<float>(2.0 * rng.uniform() - 1.0);
        out[r * d + j] = float_to_half(signal * c[j] + noise);
      }
    }
    report(progress, "gnnprof: writing synthetic features", row0 + rows, n);
  });
}

std::string default_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0') return std::string(x) + "/gnnprof";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') return std::string(h) + "/.cache/gnnprof";
  return "/tmp/gnnprof-cache";
}

Result<Dataset> prepare_synthetic(const std::string& cache_dir, const SyntheticSpec& spec, std::ostream* progress) {
  std::ostringstream key;
  key << "synthetic-n" << spec.nodes << "-d" << spec.avg_degree << "-f" << spec.feat_dim << "-c" << spec.classes << "-s"
      << spec.seed << "-h" << spec.homophily << "-x" << spec.signal << "-t" << spec.train_fraction << "-v"
      << spec.val_fraction;
  const std::string dir = cache_dir + "/" + key.str();
  const std::string graph_path = dir + "/graph.bin", feat_path = dir + "/features.f16";
  std::error_code ec;
  if (fs::exists(graph_path, ec) && fs::exists(feat_path, ec)) {
    auto ds = load_graph_file(graph_path);
    auto info = read_feature_header(feat_path);
    if (ds && info && info->rows == spec.nodes && info->dim == spec.feat_dim) {
      ds->features_path = feat_path;
      return ds;
    }
    if (progress != nullptr)
      *progress << "gnnprof: cached dataset in " << dir << " is unusable ("
                << (!ds ? ds.status().message() : !info ? info.status().message() : std::string("shape differs"))
                << "); regenerating\n";
  }
  fs::create_directories(dir, ec);
  if (ec) return Status::error("cannot create cache directory " + dir + ": " + ec.message());
  if (progress != nullptr) *progress << "gnnprof: generating the synthetic dataset into " << dir << " (once)\n";
  Dataset ds = generate_synthetic(spec, progress);
  if (Status st = write_synthetic_features(spec, ds.labels, feat_path, progress); !st) return st;
  if (Status st = save_graph_file(ds, graph_path); !st) return st;
  ds.features_path = feat_path;
  return ds;
}

// ---- Cora ----

Result<CoraParsed> parse_cora(std::istream& content, const std::string& content_path, std::istream& cites,
                              const std::string& cites_path) {
  std::unordered_map<std::string, std::int64_t> id_of;
  std::vector<std::vector<float>> rows;
  std::vector<std::string> label_names;
  std::string line;
  std::int64_t words = -1, lineno = 0;
  while (std::getline(content, line)) {
    ++lineno;
    if (line.empty()) continue;
    std::istringstream ss(line);
    std::vector<std::string> tok;
    for (std::string t; ss >> t;) tok.push_back(t);
    const std::string where = content_path + ":" + std::to_string(lineno) + ": ";
    if (tok.size() < 3) return Status::error(where + "expected <paper id> <word attributes...> <label>");
    const auto w = static_cast<std::int64_t>(tok.size()) - 2;
    if (words < 0) words = w;
    if (w != words)
      return Status::error(where + std::to_string(w) + " word attributes, earlier lines have " + std::to_string(words));
    std::vector<float> row(static_cast<std::size_t>(w));
    float sum = 0;
    for (std::int64_t j = 0; j < w; ++j) {
      const std::string& t = tok[static_cast<std::size_t>(j + 1)];
      if (t != "0" && t != "1") return Status::error(where + "word attribute \"" + t + "\" is not 0 or 1");
      row[static_cast<std::size_t>(j)] = t == "1" ? 1.f : 0.f;
      sum += row[static_cast<std::size_t>(j)];
    }
    if (sum > 0)
      for (auto& x : row) x /= sum;  // row-normalized, as DGL's CoraGraphDataset
    if (!id_of.emplace(tok[0], static_cast<std::int64_t>(rows.size())).second)
      return Status::error(where + "duplicate paper id " + tok[0]);
    rows.push_back(std::move(row));
    label_names.push_back(tok.back());
  }
  if (rows.empty()) return Status::error(content_path + ": no papers");
  const auto n = static_cast<std::int64_t>(rows.size());

  std::vector<std::vector<std::int64_t>> in(static_cast<std::size_t>(n));
  lineno = 0;
  while (std::getline(cites, line)) {
    ++lineno;
    if (line.empty()) continue;
    std::istringstream ss(line);
    std::string a, b, extra;
    const std::string where = cites_path + ":" + std::to_string(lineno) + ": ";
    if (!(ss >> a >> b) || (ss >> extra)) return Status::error(where + "expected <cited paper id> <citing paper id>");
    auto ia = id_of.find(a), ib = id_of.find(b);
    if (ia == id_of.end()) return Status::error(where + "unknown paper id " + a);
    if (ib == id_of.end()) return Status::error(where + "unknown paper id " + b);
    if (ia->second == ib->second) continue;
    in[static_cast<std::size_t>(ia->second)].push_back(ib->second);  // symmetric, as DGL's Cora
    in[static_cast<std::size_t>(ib->second)].push_back(ia->second);
  }
  std::vector<std::int64_t> indptr{0}, indices;
  for (auto& nb : in) {
    std::sort(nb.begin(), nb.end());
    nb.erase(std::unique(nb.begin(), nb.end()), nb.end());
    indices.insert(indices.end(), nb.begin(), nb.end());
    indptr.push_back(static_cast<std::int64_t>(indices.size()));
  }

  CoraParsed out;
  Dataset& ds = out.dataset;
  ds.name = "cora";
  std::vector<std::string> classes = label_names;
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  ds.num_classes = static_cast<std::int64_t>(classes.size());
  for (const auto& l : label_names)
    ds.labels.push_back(static_cast<std::int32_t>(std::lower_bound(classes.begin(), classes.end(), l) - classes.begin()));
  ds.graph = CscGraph(n, std::move(indptr), std::move(indices));
  ds.split = make_split(n, 0.5, 0.2, 0);
  ds.feat_dim = words;
  out.rows = std::move(rows);
  return out;
}

Result<Dataset> load_cora(const std::string& dir, const std::string& cache_dir) {
  const std::string content_path = dir + "/cora.content", cites_path = dir + "/cora.cites";
  std::ifstream content(content_path);
  if (!content) return Status::error(content_path + ": cannot open: " + std::strerror(errno));
  std::ifstream cites(cites_path);
  if (!cites) return Status::error(cites_path + ": cannot open: " + std::strerror(errno));
  auto parsed = parse_cora(content, content_path, cites, cites_path);
  if (!parsed) return parsed.status();
  Dataset ds = std::move(parsed->dataset);
  const auto& rows = parsed->rows;
  const std::int64_t n = ds.graph.num_nodes(), words = ds.feat_dim;

  // Features go to the cache as fp16, keyed by the absolute source directory.
  std::error_code ec;
  std::string abs = fs::absolute(dir, ec).string();
  const std::string sub = cache_dir + "/cora-" + std::to_string(std::hash<std::string>{}(abs) & 0xffffffffu);
  fs::create_directories(sub, ec);
  if (ec) return Status::error("cannot create cache directory " + sub + ": " + ec.message());
  ds.features_path = sub + "/features.f16";
  Status st = write_feature_file(ds.features_path, n, words, [&](std::int64_t row0, std::int64_t cnt, std::uint16_t* out) {
    for (std::int64_t r = 0; r < cnt; ++r)
      for (std::int64_t j = 0; j < words; ++j)
        out[r * words + j] = float_to_half(rows[static_cast<std::size_t>(row0 + r)][static_cast<std::size_t>(j)]);
  });
  if (!st) return st;
  return ds;
}

// ---- binary graph file ----

namespace {
constexpr char kGraphMagic[8] = {'G', 'N', 'N', 'P', 'G', 'R', 'F', '1'};

struct GraphHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t index_bytes;
  std::int64_t nodes, edges, classes, feat_dim;
  char name[32];
};
}  // namespace

Status save_graph_file(const Dataset& ds, const std::string& path) {
  GraphHeader h{};
  std::memcpy(h.magic, kGraphMagic, 8);
  h.version = 1;
  h.index_bytes = ds.graph.wide_indices() ? 8 : 4;
  h.nodes = ds.graph.num_nodes();
  h.edges = ds.graph.num_edges();
  h.classes = ds.num_classes;
  h.feat_dim = ds.feat_dim;
  std::strncpy(h.name, ds.name.c_str(), sizeof(h.name) - 1);
  std::string buf(reinterpret_cast<const char*>(&h), sizeof(h));
  auto append = [&buf](const void* p, std::size_t n) { buf.append(static_cast<const char*>(p), n); };
  append(ds.graph.indptr().data(), ds.graph.indptr().size() * 8);
  if (ds.graph.wide_indices())
    append(ds.graph.indices64().data(), ds.graph.indices64().size() * 8);
  else
    append(ds.graph.indices32().data(), ds.graph.indices32().size() * 4);
  append(ds.labels.data(), ds.labels.size() * 4);
  append(ds.split.data(), ds.split.size());
  return write_file_atomic(path, buf);
}

Result<Dataset> load_graph_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::error(path + ": cannot open: " + std::strerror(errno));
  GraphHeader h{};
  if (!f.read(reinterpret_cast<char*>(&h), sizeof(h))) return Status::error(path + ": truncated (no header)");
  if (std::memcmp(h.magic, kGraphMagic, 8) != 0) return Status::error(path + ": not a gnnprof graph file");
  if (h.version != 1 || (h.index_bytes != 4 && h.index_bytes != 8) || h.nodes < 0 || h.edges < 0)
    return Status::error(path + ": unsupported or corrupt header");
  const auto n = static_cast<std::size_t>(h.nodes), e = static_cast<std::size_t>(h.edges);
  const std::uintmax_t want = sizeof(h) + (n + 1) * 8 + e * h.index_bytes + n * 4 + n;
  std::error_code ec;
  const std::uintmax_t have = fs::file_size(path, ec);
  if (have != want)
    return Status::error(path + ": truncated or corrupt (" + std::to_string(have) + " bytes, expected " + std::to_string(want) + ")");
  std::vector<std::int64_t> indptr(n + 1), indices(e);
  f.read(reinterpret_cast<char*>(indptr.data()), static_cast<std::streamsize>((n + 1) * 8));
  if (h.index_bytes == 8) {
    f.read(reinterpret_cast<char*>(indices.data()), static_cast<std::streamsize>(e * 8));
  } else {
    std::vector<std::int32_t> narrow(e);
    f.read(reinterpret_cast<char*>(narrow.data()), static_cast<std::streamsize>(e * 4));
    for (std::size_t i = 0; i < e; ++i) indices[i] = narrow[i];
  }
  Dataset ds;
  h.name[sizeof(h.name) - 1] = '\0';
  ds.name = h.name;
  ds.num_classes = h.classes;
  ds.feat_dim = h.feat_dim;
  ds.labels.resize(n);
  ds.split.resize(n);
  f.read(reinterpret_cast<char*>(ds.labels.data()), static_cast<std::streamsize>(n * 4));
  f.read(reinterpret_cast<char*>(ds.split.data()), static_cast<std::streamsize>(n));
  if (!f) return Status::error(path + ": read error");
  ds.graph = CscGraph(h.nodes, std::move(indptr), std::move(indices));
  if (Status st = ds.graph.validate(); !st) return Status::error(path + ": " + st.message());
  for (auto l : ds.labels)
    if (l < 0 || l >= h.classes) return Status::error(path + ": label " + std::to_string(l) + " out of range");
  return ds;
}

}  // namespace gnnprof::gnn
