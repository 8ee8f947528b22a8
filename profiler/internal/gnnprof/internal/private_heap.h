// gnnprof/internal/private_heap.h — memory for gnnprof's long-lived tables that never comes from the host's
// malloc heap.
//
// The aggregator, the site registry and the torch observer keep small nodes alive for the
// whole run (a map entry per stage and iteration, histogram buckets, names), and most of them
// are created while the host's first iterations run, on the host's thread. As malloc blocks
// they landed in the host's main arena between the host's own chunks: a 48-byte node carved
// out of a tensor's freed block keeps that block from being reused whole, so the heap grows
// and the host's next tensors touch fresh pages (docs/performance.md, "Whose page faults?").
// A pool over anonymous mappings keeps these tables out of the host's heap. Transient
// allocations (a flush building the profile) still use malloc and are freed at once.
//
// Under AddressSanitizer (`make asan`) both come from malloc instead, one block per
// allocation, so that ASan checks every access to them (it intercepts malloc, not mmap).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory_resource>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define GNNPROF_PRIVATE_HEAP_ON_MALLOC 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GNNPROF_PRIVATE_HEAP_ON_MALLOC 1
#endif
#endif
#ifndef GNNPROF_PRIVATE_HEAP_ON_MALLOC
#define GNNPROF_PRIVATE_HEAP_ON_MALLOC 0
#endif

namespace gnnprof::detail {

/// True in an ASan build: the private heap and the rings are malloc blocks there.
inline constexpr bool kPrivateHeapOnMalloc = GNNPROF_PRIVATE_HEAP_ON_MALLOC != 0;

namespace private_heap_detail {
inline std::size_t page() {
  static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return size;
}
inline std::size_t round_up(std::size_t bytes) {
  const std::size_t b = bytes == 0 ? 1 : bytes;
  return (b + page() - 1) / page() * page();
}
}  // namespace private_heap_detail

/// `bytes` (rounded up to pages) of zeroed anonymous memory aligned to `alignment`; throws
/// std::bad_alloc. Released with unmap_pages(p, bytes).
inline void* map_pages(std::size_t bytes, std::size_t alignment = 1) {
  using private_heap_detail::page;
  const std::size_t size = private_heap_detail::round_up(bytes);
  if constexpr (kPrivateHeapOnMalloc) {
    const std::size_t align = alignment > page() ? alignment : page();
    void* p = std::aligned_alloc(align, (size + align - 1) / align * align);
    if (p == nullptr) throw std::bad_alloc();
    return std::memset(p, 0, size);
  }
  // A mapping is page-aligned; a pool asks for more (its chunks are aligned to their block
  // size): map the excess, then unmap what lies outside the aligned range.
  const std::size_t extra = alignment > page() ? alignment : 0;
  void* p = ::mmap(nullptr, size + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  if (extra == 0) return p;
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t aligned = (base + alignment - 1) & ~(static_cast<std::uintptr_t>(alignment) - 1);
  if (aligned > base) ::munmap(p, aligned - base);
  const std::uintptr_t end = base + size + extra;
  if (end > aligned + size) ::munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  return reinterpret_cast<void*>(aligned);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

/// Faults in the first `bytes` of a mapping from map_pages now, in one call, instead of one
/// page fault each when first written: for memory that will be written during the host's
/// loop, made ready while it is set up. A kernel without MADV_POPULATE_WRITE leaves them lazy.
inline void populate_pages(void* p, std::size_t bytes) noexcept {
  if constexpr (kPrivateHeapOnMalloc) return;
  if (p == nullptr || bytes == 0) return;
  (void)::madvise(p, private_heap_detail::round_up(bytes), MADV_POPULATE_WRITE);
}

/// How much of a region that fills during the run (a ring, the timeline) populate_pages faults
/// in when it is made; the rest on first write.
inline constexpr std::size_t kPopulateAheadBytes = 256 * 1024;

inline void unmap_pages(void* p, std::size_t bytes) noexcept {
  if constexpr (kPrivateHeapOnMalloc) {
    std::free(p);
  } else {
    ::munmap(p, private_heap_detail::round_up(bytes));
  }
}

/// Anonymous mappings, aligned as asked, for a pool's chunks: the first ones (up to the slab's
/// size, chunks of up to kSlabChunk) come from one slab faulted in when the heap is first
/// used, while the host is still setting up; later and larger ones are each their own
/// mapping (pages touched only when written, unmapped when freed). A pool's chunks grow
/// geometrically, so a table of n entries costs O(log n) mappings per block size.
class MappedResource final : public std::pmr::memory_resource {
 public:
  static constexpr std::size_t kSlab = 256 * 1024;  // the default slab
  static constexpr std::size_t kSlabChunk = 64 * 1024;
  explicit MappedResource(std::size_t slab_bytes = kSlab) : slab_bytes_(slab_bytes) {}
  MappedResource(const MappedResource&) = delete;
  MappedResource& operator=(const MappedResource&) = delete;
  ~MappedResource() override {
    if (slab_ != nullptr) unmap_pages(slab_, slab_bytes_);
  }

 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override {
    if (void* p = from_slab(bytes, alignment)) return p;
    return map_pages(bytes, alignment);
  }
  void do_deallocate(void* p, std::size_t bytes, std::size_t) override {
    if (in_slab(p)) return;  // a slab chunk stays with the slab until the heap goes
    unmap_pages(p, bytes);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  void* from_slab(std::size_t bytes, std::size_t alignment) {
    if constexpr (kPrivateHeapOnMalloc) return nullptr;
    if (bytes > kSlabChunk || slab_failed_ || slab_bytes_ == 0) return nullptr;
    if (slab_ == nullptr) {
      void* p = ::mmap(nullptr, slab_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) {
        slab_failed_ = true;
        return nullptr;
      }
      slab_ = static_cast<char*>(p);
      populate_pages(slab_, slab_bytes_);
    }
    const std::uintptr_t align = alignment == 0 ? 1 : alignment;
    const auto base = reinterpret_cast<std::uintptr_t>(slab_);
    const std::size_t at = static_cast<std::size_t>((base + used_ + align - 1) / align * align - base);
    if (at + bytes > slab_bytes_) return nullptr;
    used_ = at + bytes;
    return slab_ + at;
  }
  bool in_slab(const void* p) const noexcept {
    const char* c = static_cast<const char*>(p);
    return slab_ != nullptr && c >= slab_ && c < slab_ + slab_bytes_;
  }

  std::size_t slab_bytes_;
  char* slab_ = nullptr;
  std::size_t used_ = 0;
  bool slab_failed_ = false;
};

/// A single-threaded pool over MappedResource: the owner serializes access (the aggregator is
/// used under the session's drain lock).
class PrivateHeap {
 public:
  /// slab_bytes: how much of its first chunks is faulted in at first use (MappedResource).
  explicit PrivateHeap(std::size_t slab_bytes = MappedResource::kSlab)
      : mapped_(slab_bytes), pool_(pool_options(), &mapped_) {}
  PrivateHeap(const PrivateHeap&) = delete;
  PrivateHeap& operator=(const PrivateHeap&) = delete;
  std::pmr::memory_resource* resource() {
    if constexpr (kPrivateHeapOnMalloc) return std::pmr::new_delete_resource();  // ASan sees each node
    return &pool_;
  }

 private:
  static std::pmr::pool_options pool_options() {
    std::pmr::pool_options o;
    o.largest_required_pool_block = 16384;  // larger blocks (timeline, iteration list) map directly
    return o;
  }
  MappedResource mapped_;
  std::pmr::unsynchronized_pool_resource pool_;
};

}  // namespace gnnprof::detail
