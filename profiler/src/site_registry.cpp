#include "site_registry.h"

#include "gnnprof/internal/enum_names.h"
#include "gnnprof/profile.h"

#include <pthread.h>

#include <array>
#include <string_view>

namespace gnnprof::detail {

const char* default_category(const std::string& n) noexcept {
  struct Entry {
    std::string_view name;
    const char* category;
  };
  // The pipeline stages of docs/architecture.md; analysis uses the category to tell data time
  // from compute time, so these spellings are part of the interface.
  static constexpr std::array<Entry, 16> kKnown{{{"sample", "data"},
                                                 {"materialize", "data"},
                                                 {"gather", "data"},
                                                 {"pin_memory", "data"},
                                                 {"h2d", "data"},
                                                 {"collate", "data"},
                                                 {"load", "data"},
                                                 {"loader_wait", "data"},
                                                 {"forward", "compute"},
                                                 {"backward", "compute"},
                                                 {"optimizer", "compute"},
                                                 {"loss", "compute"},
                                                 {"sync", "sync"},
                                                 {"comm", "comm"},
                                                 {"eval", "eval"},
                                                 {"validate", "eval"}}};
  for (const auto& e : kKnown)
    if (e.name == n) return e.category;
  // torch's DataLoader wraps each batch it hands out in a record_function of this name
  // ("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"): the loop waiting for data.
  if (n.rfind("enumerate(DataLoader)", 0) == 0) return "data";
  return "user";
}

namespace {
/// Between SiteInfo (std::string) and the registry's stored form (std::pmr::string).
template <class To, class From>
void copy_site(To& to, const From& from) {
  to.kind = from.kind;
  to.name = from.name;
  to.category = from.category;
  to.file = from.file;
  to.function = from.function;
  to.code = from.code;
  to.line = from.line;
  to.callee_file = from.callee_file;
  to.callee_function = from.callee_function;
}
}  // namespace

std::uint32_t SiteRegistry::intern(const SiteInfo& info) {
  std::lock_guard<std::mutex> lock(mu_);
  std::pmr::string key(heap_.resource());
  key.reserve(64);
  key += static_cast<char>('0' + static_cast<int>(info.kind));
  key += '\x1f';
  if (info.kind == SiteKind::kStage || info.kind == SiteKind::kCounter) {
    key += info.name;
    key += '\x1f';
    key += info.category;
  } else {
    key += info.file;
    key += '\x1f';
    key += std::to_string(info.line);
    key += '\x1f';
    key += info.function;
    key += '\x1f';
    key += info.name;
  }
  auto it = by_key_.find(key);
  if (it != by_key_.end()) return it->second;
  auto id = static_cast<std::uint32_t>(sites_.size());
  copy_site(sites_.emplace_back(heap_.resource()), info);
  by_key_.emplace(std::move(key), id);
  return id;
}

std::vector<SiteInfo> SiteRegistry::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<SiteInfo> out;
  out.reserve(sites_.size());
  for (const Stored& s : sites_) copy_site(out.emplace_back(), s);
  return out;
}

namespace {
SiteRegistry* g_registry = nullptr;
void fork_prepare() { g_registry->mutex().lock(); }
void fork_release() { g_registry->mutex().unlock(); }
}  // namespace

SiteRegistry& site_registry() {
  // Leaked on purpose: sites are used by threads and atexit handlers that may outlive static
  // destruction order.
  static auto* registry = [] {
    g_registry = new SiteRegistry();
    // Sites are interned with or without a session (GNNPROF_ENABLED=0 too): a fork while
    // another thread held this lock would leave it held in the child, whose first site would
    // then wait forever. The session's own handlers are registered after this one (start()
    // creates the registry first), so this leaf lock is taken last at fork.
    pthread_atfork(fork_prepare, fork_release, fork_release);
    return g_registry;
  }();
  return *registry;
}

std::uint32_t register_site(SourceSite& site) noexcept {
  try {
    SiteInfo info;
    info.kind = site.kind;
    if (site.name != nullptr) info.name = site.name;
    if (site.file != nullptr) info.file = site.file;
    if (site.function != nullptr) info.function = site.function;
    if (site.code != nullptr) info.code = site.code;
    info.line = site.line;
    if (site.kind == SiteKind::kStage)
      info.category = site.category != nullptr ? site.category : default_category(info.name);
    std::uint32_t id = site_registry().intern(info);
    site.id.store(id, std::memory_order_relaxed);
    return id;
  } catch (...) {
    return 0;  // out of memory: the site records nothing
  }
}

std::string SiteRegistry::name_of(std::uint32_t site) const {
  std::lock_guard<std::mutex> lock(mu_);
  return site < sites_.size() ? std::string(sites_[site].name) : std::string();
}

std::string SiteRegistry::category_of(std::uint32_t site) const {
  std::lock_guard<std::mutex> lock(mu_);
  return site < sites_.size() ? std::string(sites_[site].category) : std::string();
}

bool SiteRegistry::info_of(std::uint32_t site, SiteInfo& out) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (site == 0 || site >= sites_.size()) return false;
  copy_site(out, sites_[site]);
  return true;
}

bool SiteRegistry::line_after(std::uint32_t site, std::uint32_t anchor) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (site == 0 || anchor == 0 || site >= sites_.size() || anchor >= sites_.size()) return false;
  const Stored& a = sites_[site];
  const Stored& b = sites_[anchor];
  if (a.kind != SiteKind::kLine || b.kind != SiteKind::kLine || a.line <= b.line || a.file != b.file || a.function != b.function)
    return false;
  for (const LoopExtent& l : loops_)
    if (l.file == a.file && l.function == a.function) return b.line >= l.first && a.line <= l.last;
  return true;
}

void SiteRegistry::set_loop_extent(const std::string& file, const std::string& function, std::uint32_t first,
                                   std::uint32_t last) {
  std::lock_guard<std::mutex> lock(mu_);
  for (LoopExtent& l : loops_)
    if (std::string_view(l.file) == file && std::string_view(l.function) == function) {
      l.first = first;
      l.last = last;
      return;
    }
  if (loops_.size() >= 16) return;
  LoopExtent& l = loops_.emplace_back(heap_.resource());
  l.file = file;
  l.function = function;
  l.first = first;
  l.last = last;
}

void SiteRegistry::set_line_callee(std::uint32_t site, const char* file, const char* function) {
  std::lock_guard<std::mutex> lock(mu_);
  if (site == 0 || site >= sites_.size()) return;
  Stored& s = sites_[site];
  if (s.kind != SiteKind::kLine || !s.callee_file.empty()) return;
  s.callee_file = file;
  s.callee_function = function;
}

}  // namespace gnnprof::detail

namespace gnnprof {
const char* to_string(Direction d) noexcept {
  switch (d) {
    case Direction::kH2D: return "h2d";
    case Direction::kD2H: return "d2h";
    case Direction::kD2D: return "d2d";
    case Direction::kH2H: return "h2h";
  }
  return "h2d";
}
const char* to_string(HostMemory m) noexcept {
  switch (m) {
    case HostMemory::kPageable: return "pageable";
    case HostMemory::kPinned: return "pinned";
    case HostMemory::kNone: return "none";
  }
  return "none";
}
const char* to_string(CopyMode m) noexcept { return m == CopyMode::kAsync ? "async" : "sync"; }
using detail::enum_from_name;
bool from_string(std::string_view text, Direction& out) noexcept {
  return enum_from_name(text, {Direction::kH2D, Direction::kD2H, Direction::kD2D, Direction::kH2H}, out);
}
bool from_string(std::string_view text, HostMemory& out) noexcept {
  return enum_from_name(text, {HostMemory::kPageable, HostMemory::kPinned, HostMemory::kNone}, out);
}
bool from_string(std::string_view text, CopyMode& out) noexcept {
  return enum_from_name(text, {CopyMode::kSync, CopyMode::kAsync}, out);
}
const char* to_string(Severity s) noexcept {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "info";
}
bool from_string(std::string_view text, Severity& out) noexcept {
  return enum_from_name(text, {Severity::kInfo, Severity::kWarning, Severity::kError}, out);
}
const char* to_string(TimelineKind k) noexcept {
  static const char* kNames[kTimelineKinds] = {"stage", "line", "transfer", "materialize", "counter", "step", "step_end"};
  const auto i = static_cast<int>(k);
  return i >= 0 && i < kTimelineKinds ? kNames[i] : "unknown";
}
}  // namespace gnnprof
