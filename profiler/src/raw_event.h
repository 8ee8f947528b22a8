// raw_event.h — the 48-byte record a hot-path call writes into its thread's ring.
#pragma once

#include <cstdint>
#include <type_traits>

namespace gnnprof::detail {

enum class EventKind : std::uint8_t {
  kStage = 1,        // t0..t1 range; a = self ticks; depth = enclosing stages
  kLine = 2,         // t0..t1 range
  kTransfer = 3,     // t0 = when; t1 = duration ns (0 if unknown); a = bytes; flags = dir|mem|mode
  kMaterialize = 4,  // t0 = when; a = rows; b = bytes
  kCounter = 5,      // t0 = when; a = bit pattern of a double
  kStep = 6,         // t0 = iteration boundary; a = flags of the iteration it begins
  kStepEnd = 7,      // t0 = end of the open iteration
  kKernel = 8,       // GPU kernel (lanes only): t0..t1 mono ns; site = kernel name; ctx = launching
                     // stage (0 if unknown); a = launching op's site (0 if unknown); line_ctx =
                     // launching line (0 if unknown)
  kLineStage = 9,    // t0..t1: a part of the outermost stage `ctx` spent while line `site` (an
                     // outside tracer's) was current
  kLineCharge = 10,  // t0..t1 mono ns: time of stage `ctx` charged to line `site` (autograd
                     // backward of the graph that line built)
};

/// Plain data, written by one producer thread and read by the drainer once published.
struct RawEvent {
  std::uint64_t t0;
  std::uint64_t t1;
  std::uint64_t a;
  std::uint64_t b;
  std::uint32_t site;      // stage/line/counter/materialize site id
  std::uint32_t ctx;       // innermost open stage's site id, 0 if none
  std::uint32_t line_ctx;  // innermost open line's site id, 0 if none
  EventKind kind;
  std::uint8_t flags;
  std::uint16_t depth;
};
static_assert(sizeof(RawEvent) == 48, "RawEvent layout is part of the memory-cap arithmetic");
static_assert(std::is_trivial_v<RawEvent>, "rings are raw mappings: no constructor runs on their slots");

// flags of kTransfer: bits 0-1 direction, bits 2-3 host memory, bit 4 async.
// Bit 7 (any kind): t0 (and t1 of a stage) are CLOCK_MONOTONIC ns, not raw ticks (lane events).
inline constexpr std::uint8_t kFlagMonoNs = 0x80;
// Bit 6 of kLine: a continuation of the line's current execution (a generator resumed at its
// yield), time without a hit. Of kStage: b = ticks of this outermost stage since line_ctx
// (an outside tracer's line) became current.
inline constexpr std::uint8_t kFlagNoHit = 0x40;
inline constexpr std::uint8_t kFlagExtLine = 0x40;
// Bit 5 of kStage: a stage of the same site encloses this one on its thread (recursion); its
// time is already in the outer one's. Of kLine: tracing began during this statement, in a frame
// already running.
inline constexpr std::uint8_t kFlagRepeated = 0x20;
inline constexpr std::uint8_t kFlagBegan = 0x20;
// Bit 4 of kLine: line_ctx is the traced statement that called the line's function (the Python
// tracer's gnnprof_line_event_nested), not an enclosing GNNPROF_LINE scope.
inline constexpr std::uint8_t kFlagCaller = 0x10;
inline std::uint8_t pack_transfer_flags(int dir, int mem, int mode) noexcept {
  return static_cast<std::uint8_t>((dir & 3) | ((mem & 3) << 2) | ((mode & 1) << 4));
}

}  // namespace gnnprof::detail
