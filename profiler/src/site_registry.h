// site_registry.h — id <-> site metadata, shared by the hot path (registration, once per
// site) and the drainer (names when building a profile).
#pragma once

#include <cstdint>
#include <memory_resource>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gnnprof/site.h"
#include "gnnprof/internal/private_heap.h"

namespace gnnprof::detail {

struct SiteInfo {
  SiteKind kind = SiteKind::kStage;
  std::string name;
  std::string category;
  std::string file;
  std::string function;
  std::string code;
  std::uint32_t line = 0;
  std::string callee_file, callee_function;  ///< a line's first untraced user callee (set_line_callee)
};

/// Stage category derived from well-known stage names (docs/architecture.md, "Stages").
const char* default_category(const std::string& stage_name) noexcept;

class SiteRegistry {
 public:
  SiteRegistry() { sites_.emplace_back(heap_.resource()); }  // id 0: the placeholder
  /// Returns the id for this metadata, creating it if new. Stages and counters are keyed by
  /// (kind, name, category), so call sites sharing a stage name share one row; lines and
  /// materializations by (kind, file, line, function, name).
  std::uint32_t intern(const SiteInfo& info);
  /// Copy of all sites, indexed by id (index 0 is a placeholder).
  std::vector<SiteInfo> snapshot() const;
  /// The name of one site, "" for an unknown id.
  std::string name_of(std::uint32_t site) const;
  /// The category of one stage site, "" for an unknown id.
  std::string category_of(std::uint32_t site) const;
  /// One site's metadata; false for an unknown id.
  bool info_of(std::uint32_t site, SiteInfo& out) const;
  /// Whether two line sites are in one function of one file, `site` below `anchor` in it and,
  /// when that function's loop is known (set_loop_extent), both inside the loop.
  bool line_after(std::uint32_t site, std::uint32_t anchor) const;
  void set_loop_extent(const std::string& file, const std::string& function, std::uint32_t first, std::uint32_t last);
  /// The first user function a line site called that was not traced (kept once set).
  void set_line_callee(std::uint32_t site, const char* file, const char* function);
  std::mutex& mutex() { return mu_; }

 private:
  // The registry grows while the host's first iterations run: its entries live on a private
  // heap, not between the host's own allocations (private_heap.h).
  struct Stored {
    explicit Stored(std::pmr::memory_resource* mr)
        : name(mr), category(mr), file(mr), function(mr), code(mr), callee_file(mr), callee_function(mr) {}
    SiteKind kind = SiteKind::kStage;
    std::pmr::string name, category, file, function, code;
    std::uint32_t line = 0;
    std::pmr::string callee_file, callee_function;
  };
  mutable std::mutex mu_;
  PrivateHeap heap_;  // guarded by mu_, like the tables it holds
  std::pmr::vector<Stored> sites_{heap_.resource()};
  std::pmr::unordered_map<std::pmr::string, std::uint32_t> by_key_{heap_.resource()};
  struct LoopExtent {
    explicit LoopExtent(std::pmr::memory_resource* mr) : file(mr), function(mr) {}
    std::pmr::string file, function;
    std::uint32_t first = 0, last = 0;
  };
  std::pmr::vector<LoopExtent> loops_{heap_.resource()};  // a few: the selected loops
};

SiteRegistry& site_registry();

}  // namespace gnnprof::detail
