// external_id.h — the CUPTI external correlation id the torch observer pushes around each
// top-level op: the stage open on the launching thread, the op, and the traced line current
// there, 21 bits each (a site id that does not fit is left out as 0). The CUPTI backend
// decodes it into the kernel table's stage and op and the line's GPU time.
#pragma once

#include <cstdint>

namespace gnnprof::instrument {

inline constexpr unsigned kExternalBits = 21;
inline constexpr std::uint64_t kExternalMask = (std::uint64_t{1} << kExternalBits) - 1;

inline std::uint64_t pack_external(std::uint32_t stage, std::uint32_t op, std::uint32_t line) noexcept {
  auto field = [](std::uint32_t site) { return site <= kExternalMask ? std::uint64_t{site} : 0; };
  return field(stage) | (field(op) << kExternalBits) | (field(line) << (2 * kExternalBits));
}
inline std::uint32_t external_stage(std::uint64_t external) noexcept {
  return static_cast<std::uint32_t>(external & kExternalMask);
}
inline std::uint32_t external_op(std::uint64_t external) noexcept {
  return static_cast<std::uint32_t>((external >> kExternalBits) & kExternalMask);
}
inline std::uint32_t external_line(std::uint64_t external) noexcept {
  return static_cast<std::uint32_t>((external >> (2 * kExternalBits)) & kExternalMask);
}

}  // namespace gnnprof::instrument
