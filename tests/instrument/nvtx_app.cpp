// A program with NVTX ranges and no torch and no GPU: under the preload library its ranges
// become stages. Exits with the status given as argv[1] (default 0).
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

static void spin(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

int main(int argc, char** argv) {
  nvtxDomainHandle_t dom = nvtxDomainCreateA("loader");
  for (int i = 0; i < 5; ++i) {
    nvtxRangePushA("epoch_step");
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "fetch";
    nvtxDomainRangePushEx(dom, &a);
    spin(2);
    nvtxDomainRangePop(dom);
    nvtxRangeId_t r = nvtxRangeStartA("async_io");
    spin(1);
    nvtxRangeEnd(r);
    nvtxMarkA("checkpoint");
    nvtxRangePop();
  }
  std::printf("nvtx_app done\n");
  return argc > 1 ? std::atoi(argv[1]) : 0;
}
