#include "gnnprof/gnn/feature_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>
#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "gnnprof/gnn/half.h"
#include "gnnprof/profile_io.h"

namespace gnnprof::gnn {

namespace {

constexpr char kMagic[8] = {'G', 'N', 'N', 'P', 'F', 'E', 'A', 'T'};

struct Header {
  char magic[8];
  std::int64_t rows;
  std::int64_t dim;
  std::uint32_t dtype;  // 1 = fp16
};

Status check_header(const std::string& path, const Header& h, std::int64_t file_bytes) {
  if (std::memcmp(h.magic, kMagic, 8) != 0) return Status::error(path + ": not a gnnprof feature file");
  if (h.dtype != 1 || h.rows < 0 || h.dim <= 0) return Status::error(path + ": unsupported or corrupt header");
  const std::int64_t want = kFeatureHeaderBytes + h.rows * h.dim * 2;
  if (file_bytes != want)
    return Status::error(path + ": truncated or corrupt (" + std::to_string(file_bytes) + " bytes, expected " +
                         std::to_string(want) + " for " + std::to_string(h.rows) + " x " + std::to_string(h.dim) + " fp16)");
  return Status::ok();
}

#if defined(__x86_64__)
__attribute__((target("f16c,avx"))) void convert_row_f16c(const std::uint16_t* src, float* dst, std::int64_t n) {
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(dst + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j))));
  for (; j < n; ++j) dst[j] = half_to_float(src[j]);
}
#endif

void convert_row_scalar(const std::uint16_t* src, float* dst, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) dst[j] = half_to_float(src[j]);
}

using ConvertFn = void (*)(const std::uint16_t*, float*, std::int64_t);
ConvertFn pick_convert() {
#if defined(__x86_64__)
  // CPUID leaf 1: ECX bit 29 F16C, bit 28 AVX, bit 27 OSXSAVE; XCR0 bits 1-2: the OS saves
  // SSE and AVX state. (Read directly: clang 14's __builtin_cpu_supports has no "f16c".)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) != 0 && (c & (1u << 29)) != 0 && (c & (1u << 28)) != 0 && (c & (1u << 27)) != 0) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6u) == 6u) return convert_row_f16c;
  }
#endif
  return convert_row_scalar;
}
const ConvertFn g_convert = pick_convert();

}  // namespace

Result<FeatureFileInfo> read_feature_header(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  Header h{};
  bool ok = ::fstat(fd, &st) == 0 && ::pread(fd, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h));
  ::close(fd);
  if (!ok) return Status::error(path + ": truncated (no header)");
  if (Status s = check_header(path, h, static_cast<std::int64_t>(st.st_size)); !s) return s;
  return FeatureFileInfo{h.rows, h.dim};
}

Status write_feature_file(const std::string& path, std::int64_t rows, std::int64_t dim,
                          const std::function<void(std::int64_t, std::int64_t, std::uint16_t*)>& fill) {
  auto w = AtomicFileWriter::open(path);
  if (!w) return w.status();
  std::vector<char> header(kFeatureHeaderBytes, 0);
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.rows = rows;
  h.dim = dim;
  h.dtype = 1;
  std::memcpy(header.data(), &h, sizeof(h));
  if (Status st = w->write(header.data(), header.size()); !st) return st;
  constexpr std::int64_t kChunk = 65536;
  std::vector<std::uint16_t> buf(static_cast<std::size_t>(std::min(rows, kChunk) * dim));
  for (std::int64_t r = 0; r < rows; r += kChunk) {
    const std::int64_t cnt = std::min(kChunk, rows - r);
    fill(r, cnt, buf.data());
    if (Status st = w->write(buf.data(), static_cast<std::size_t>(cnt * dim) * 2); !st) return st;
  }
  return w->commit();
}

Result<std::unique_ptr<MappedFeatures>> MappedFeatures::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  Header h{};
  if (::fstat(fd, &st) != 0 || ::pread(fd, &h, sizeof(h), 0) != static_cast<ssize_t>(sizeof(h))) {
    ::close(fd);
    return Status::error(path + ": truncated (no header)");
  }
  if (Status s = check_header(path, h, static_cast<std::int64_t>(st.st_size)); !s) {
    ::close(fd);
    return s;
  }
  void* m = ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  ::close(fd);  // the mapping keeps the file alive
  if (m == MAP_FAILED) return Status::error(path + ": cannot map: " + std::strerror(err));
  std::unique_ptr<MappedFeatures> f(new MappedFeatures());
  f->path_ = path;
  f->map_ = m;
  f->map_bytes_ = static_cast<std::size_t>(st.st_size);
  f->data_ = reinterpret_cast<const std::uint16_t*>(static_cast<const char*>(m) + kFeatureHeaderBytes);
  f->rows_ = h.rows;
  f->dim_ = h.dim;
  return f;
}

MappedFeatures::~MappedFeatures() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
}

void MappedFeatures::gather(const std::int64_t* ids, std::int64_t begin, std::int64_t end, float* out) const noexcept {
  for (std::int64_t i = begin; i < end; ++i) g_convert(data_ + ids[i] * dim_, out + i * dim_, dim_);
}

}  // namespace gnnprof::gnn
