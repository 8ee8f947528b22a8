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

inline void unmap_pages(void* p, std::size_t bytes) noexcept {
  if constexpr (kPrivateHeapOnMalloc) {
    std::free(p);
  } else {
    ::munmap(p, private_heap_detail::round_up(bytes));
  }
}

/// Each allocation is its own anonymous mapping (pages are touched only when written, and
/// unmapped when freed), aligned as asked. Meant as the upstream of a pool: a pool's chunks
/// grow geometrically, so a table of n entries costs O(log n) mappings per block size.
class MappedResource final : public std::pmr::memory_resource {
 private:
  void* do_allocate(std::size_t bytes, std::size_t alignment) override { return map_pages(bytes, alignment); }
  void do_deallocate(void* p, std::size_t bytes, std::size_t) override { unmap_pages(p, bytes); }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }
};

/// A single-threaded pool over MappedResource: the owner serializes access (the aggregator is
/// used under the session's drain lock).
class PrivateHeap {
 public:
  PrivateHeap() : pool_(pool_options(), &mapped_) {}
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
