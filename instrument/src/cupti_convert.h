// cupti_convert.h — CUPTI activity records -> gnnprof GPU events (headers only, no libcupti).
//
// Kept apart from the CUPTI calls so that tests feed it synthetic records on a machine with no
// GPU (tests/instrument/cupti_convert_test.cpp).
#pragma once

#include <cupti_activity.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "external_id.h"

namespace gnnprof::instrument {

struct GpuEvent {
  enum class Kind : std::uint8_t { kKernel, kMemcpy, kSync };
  Kind kind = Kind::kKernel;
  std::string lane;          ///< "GPU0 stream 7", "CUDA sync"
  std::string name;          ///< kernel name, "memcpy HtoD", "stream synchronize", ...
  std::uint64_t external = 0;  ///< external correlation id (external_id.h), 0 if none
  std::int64_t begin_ns = 0, end_ns = 0;  ///< host CLOCK_MONOTONIC
  std::uint64_t bytes = 0;
  int direction = 0, memory = 0, mode = 0;  ///< GNNPROF_H2D.., GNNPROF_PINNED.., GNNPROF_ASYNC..
};

class CuptiConverter {
 public:
  /// gpu_to_mono_ns is added to every record timestamp (0 when CUPTI already uses the host
  /// clock through cuptiActivityRegisterTimestampCallback).
  explicit CuptiConverter(std::int64_t gpu_to_mono_ns = 0) : offset_(gpu_to_mono_ns) {}

  /// Converts one buffer's records. External-correlation records are applied first, so a
  /// kernel finds its launching op's id even when it comes before that record in the buffer;
  /// the map persists for later buffers.
  std::vector<GpuEvent> convert(const std::vector<const CUpti_Activity*>& records);

  std::uint64_t unknown_records() const noexcept { return unknown_; }
  std::uint64_t kernels() const noexcept { return kernels_; }
  /// Kernels whose launch carried an external correlation id (the torch observer's op).
  std::uint64_t kernels_correlated() const noexcept { return kernels_correlated_; }

 private:
  std::int64_t offset_;
  static constexpr std::size_t kMaxPending = 1u << 17;  // ~5 MB at most
  std::unordered_map<std::uint32_t, std::uint64_t> external_;  // correlationId -> external id
  std::uint32_t latest_ = 0;
  std::uint64_t unknown_ = 0;
  std::uint64_t kernels_ = 0;
  std::uint64_t kernels_correlated_ = 0;
};

}  // namespace gnnprof::instrument

namespace gnnprof::instrument {


/// A kernel's demangled name (the name unchanged when it is not a mangled C++ name).
std::string demangle(const std::string& name);

/// The torch ops under which the observer records a copy's transfer itself (aten::copy_, and
/// the ops whose nested copy_ it keeps observing): a device copy issued inside one of them is
/// already a transfer in the profile.
inline bool is_observed_copy_op(const std::string& op) {
  return op == "aten::copy_" || op == "aten::to" || op == "aten::_to_copy" || op == "aten::cuda" || op == "aten::cpu";
}

/// Records GpuEvents into the session through the C ABI: each kernel becomes a range
/// "gpu: <stage of the launching op>" on its stream's lane (so the stage table gives GPU
/// time per phase), each memcpy a range "gpu: memcpy HtoD" (...) in the launching stage and a
/// transfer with its bytes and host memory kind (unless the observer recorded that copy), and
/// syncs a range on the "CUDA sync" lane. Kernels also go to the per-kernel table (kernel name,
/// launching stage and op: `kernels` in the profile).
class GpuEventEmitter {
 public:
  void emit(const GpuEvent& ev);

 private:
  std::uint32_t lane_of(const std::string& name);
  std::uint32_t site_for(std::uint64_t external, const std::string& fallback);
  std::uint32_t site_named(const std::string& name, const char* category);  // interned once
  std::uint32_t kernel_site(const std::string& mangled);                     // demangled, interned once
  bool observed_copy(std::uint32_t op);                                      // is_observed_copy_op, cached
  std::unordered_map<std::uint32_t, bool> copy_ops_;
  std::unordered_map<std::string, std::uint32_t> lanes_;
  std::unordered_map<std::string, std::uint32_t> sites_;
  std::unordered_map<std::string, std::uint32_t> kernels_;
};

}  // namespace gnnprof::instrument
