// gnnprof/site.h — static per-call-site metadata, the key to a cheap hot path.
//
// Every instrumentation macro expands to one function-local `static SourceSite` holding only
// pointers to string literals, so it is constant-initialized (no guard, no allocation). The first
// time a site fires it is registered and gets a small integer id; afterwards the hot path loads
// that id with one relaxed atomic read and puts only the id and timestamps into the thread's
// buffer (the shape of tracy's `SourceLocationData`).
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace gnnprof {

/// What a site records. The numeric values appear in no file format; names do.
enum class SiteKind : std::uint8_t {
  kStage = 1,      ///< a named range ("forward"), nested ranges allowed
  kLine = 2,       ///< one timed statement, reported in the line table
  kCounter = 3,    ///< a sampled value (queue depth, RSS)
  kMaterialize = 4 ///< a named feature/label gather
};

/// Direction of a recorded copy.
enum class Direction : std::uint8_t { kH2D = 0, kD2H = 1, kD2D = 2, kH2H = 3 };
/// Host memory of the copy's host side: pinned (page-locked) or pageable.
enum class HostMemory : std::uint8_t { kPageable = 0, kPinned = 1, kNone = 2 };
/// Whether the host waited for the copy to finish.
enum class CopyMode : std::uint8_t { kSync = 0, kAsync = 1 };

const char* to_string(Direction d) noexcept;
const char* to_string(HostMemory m) noexcept;
const char* to_string(CopyMode m) noexcept;
/// The names above back to the enums (file readers); false for any other text.
bool from_string(std::string_view text, Direction& out) noexcept;
bool from_string(std::string_view text, HostMemory& out) noexcept;
bool from_string(std::string_view text, CopyMode& out) noexcept;

namespace detail {

/// Static description of one instrumented place in the source. Fields point to literals.
struct SourceSite {
  SiteKind kind;
  const char* name;      ///< stage/counter name; nullptr for lines
  const char* category;  ///< stage category; nullptr lets gnnprof derive it from the name
  const char* file;
  const char* function;
  const char* code;      ///< statement text of GNNPROF_LINE, else nullptr
  std::uint32_t line;
  std::atomic<std::uint32_t> id{0};  ///< 0 until registered
};

/// Registers a site and returns its id (never 0 on success; 0 if registration failed).
std::uint32_t register_site(SourceSite& site) noexcept;

/// The id of a site, registering it on first use. One relaxed load when warm.
inline std::uint32_t site_id(SourceSite& site) noexcept {
  std::uint32_t id = site.id.load(std::memory_order_relaxed);
  return id != 0 ? id : register_site(site);
}

}  // namespace detail
}  // namespace gnnprof
