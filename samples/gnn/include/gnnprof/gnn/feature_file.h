// gnnprof/gnn/feature_file.h — node features as an fp16 row-major file, memory-mapped.
//
// Layout: a 4096-byte header (magic "GNNPFEAT", rows, dim, dtype = 1 for fp16), then
// rows x dim fp16 values, so rows start page-aligned. A missing file, a foreign one or a
// truncated one is an error that names the file and what is wrong.
//
//   auto f = gnnprof::gnn::MappedFeatures::open("features.f16");
//   std::vector<float> out(ids.size() * f->dim());
//   f->gather(ids.data(), ids.size(), out.data());   // the lazy "materialization"
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gnnprof/result.h"

namespace gnnprof::gnn {

inline constexpr std::int64_t kFeatureHeaderBytes = 4096;

struct FeatureFileInfo {
  std::int64_t rows = 0;
  std::int64_t dim = 0;
};

Result<FeatureFileInfo> read_feature_header(const std::string& path);

/// Writes a feature file atomically; `fill(row0, rows, out)` produces rows [row0, row0+rows)
/// as fp16 into `out` (chunks of up to 65536 rows).
Status write_feature_file(const std::string& path, std::int64_t rows, std::int64_t dim,
                          const std::function<void(std::int64_t, std::int64_t, std::uint16_t*)>& fill);

/// A read-only mapping of a feature file; unmapped and closed on destruction.
class MappedFeatures {
 public:
  static Result<std::unique_ptr<MappedFeatures>> open(const std::string& path);
  ~MappedFeatures();
  MappedFeatures(const MappedFeatures&) = delete;
  MappedFeatures& operator=(const MappedFeatures&) = delete;

  std::int64_t rows() const noexcept { return rows_; }
  std::int64_t dim() const noexcept { return dim_; }
  const std::uint16_t* data() const noexcept { return data_; }
  const std::string& path() const noexcept { return path_; }

  /// out[i * dim + j] = fp32(row ids[i], column j), for ids[begin, end). Ids must be < rows().
  void gather(const std::int64_t* ids, std::int64_t begin, std::int64_t end, float* out) const noexcept;

 private:
  MappedFeatures() = default;
  std::string path_;
  void* map_ = nullptr;
  std::size_t map_bytes_ = 0;
  const std::uint16_t* data_ = nullptr;
  std::int64_t rows_ = 0, dim_ = 0;
};

}  // namespace gnnprof::gnn
