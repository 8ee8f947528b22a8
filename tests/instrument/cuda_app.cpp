// A CUDA program with no torch and no kernels of its own (so no nvcc): pinned async and
// pageable sync host-to-device copies on a non-blocking stream and on the default stream, and
// a device-to-host read-back, each inside an NVTX range. Under `gnnprof run` the CUPTI backend
// turns the copies into GPU ranges and transfers (tests/app/gpu_test.sh, label "gpu").
//
//   cuda_app --probe   prints the device count and exits 0, or the runtime's reason and 77
//   cuda_app           the copies; exits 77 when no CUDA device can be used (ctest: skipped)
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr std::size_t kPinnedBytes = 8u << 20, kPageableBytes = 4u << 20;
constexpr int kReps = 5;

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "cuda_app: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    std::printf("no usable CUDA device: %s\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 77;
  }
  if (argc > 1 && std::strcmp(argv[1], "--probe") == 0) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) std::printf("%d CUDA device(s), device 0: %s\n", devices, prop.name);
    return 0;
  }
  void* pinned = nullptr;
  void* dev = nullptr;
  cudaStream_t side = nullptr;
  std::vector<char> pageable(kPageableBytes, 1);
  if (!ok(cudaMallocHost(&pinned, kPinnedBytes), "cudaMallocHost") || !ok(cudaMalloc(&dev, kPinnedBytes), "cudaMalloc") ||
      !ok(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"))
    return 1;
  std::memset(pinned, 2, kPinnedBytes);
  for (int i = 0; i < kReps; ++i) {
    nvtxRangePushA("pinned_copy");
    if (!ok(cudaMemcpyAsync(dev, pinned, kPinnedBytes, cudaMemcpyHostToDevice, side), "cudaMemcpyAsync") ||
        !ok(cudaStreamSynchronize(side), "cudaStreamSynchronize"))
      return 1;
    nvtxRangePop();
    nvtxRangePushA("pageable_copy");
    if (!ok(cudaMemcpy(dev, pageable.data(), kPageableBytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D")) return 1;
    nvtxRangePop();
    nvtxRangePushA("readback");
    if (!ok(cudaMemcpy(pageable.data(), dev, kPageableBytes, cudaMemcpyDeviceToHost), "cudaMemcpy D2H")) return 1;
    nvtxRangePop();
  }
  if (!ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return 1;
  cudaStreamDestroy(side);
  cudaFree(dev);
  cudaFreeHost(pinned);
  std::printf("cuda_app done: %d x (8 MiB pinned H2D async, 4 MiB pageable H2D, 4 MiB D2H)\n", kReps);
  return 0;
}
