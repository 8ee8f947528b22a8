// A shared library with NVTX ranges for a Python program that loads it with ctypes: an
// NVTX-only Python host (no torch), whose NVTX calls are threadless mode's only poll points.
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <thread>

/// n ranges "py_step", each around a sleep of ms milliseconds.
extern "C" __attribute__((visibility("default"))) int nvtx_steps(int n, int ms) {
  for (int i = 0; i < n; ++i) {
    nvtxRangePushA("py_step");
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    nvtxRangePop();
  }
  return n;
}
