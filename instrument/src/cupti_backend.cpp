// cupti_backend.cpp — libgnnprof_cupti.so: CUPTI activity collection for the preload library.
//
// dlopened by the preload library when the process loads the CUDA runtime (or with
// GNNPROF_CUPTI=1). Enables MEMCPY, CONCURRENT_KERNEL, SYNCHRONIZATION and
// EXTERNAL_CORRELATION records, and RUNTIME and DRIVER: CUPTI writes an external correlation
// record only in front of an API record (seen on an H200, 2026-11-26: without them no kernel
// found its launching op). Timestamps are host CLOCK_MONOTONIC
// (cuptiActivityRegisterTimestampCallback), converts each completed buffer
// (cupti_convert.h) and records it through the C ABI. Without a driver or device, or with
// another CUPTI subscriber, start fails with the reason noted in the profile's collectors.
#include <cupti.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

#include "cupti_convert.h"
#include "mono_clock.h"
#include "plugin_abi.h"
#include "gnnprof/gnnprof_c.h"

namespace {

constexpr std::size_t kBufferBytes = 4u << 20;
constexpr const char* kKindsNote = "MEMCPY, CONCURRENT_KERNEL, SYNCHRONIZATION, EXTERNAL_CORRELATION (RUNTIME, DRIVER)";
// The collector's detail, set at start. A plain array: the exit flush runs after this library's
// static destructors (it was dlopen'ed after the preload registered its exit handler).
char g_note[512] = {};
constexpr std::size_t kAlign = 8;

std::mutex g_mu;  // CUPTI may complete buffers on several threads
gnnprof::instrument::CuptiConverter* g_converter = nullptr;
gnnprof::instrument::GpuEventEmitter* g_emitter = nullptr;
bool g_started = false;

std::uint64_t CUPTIAPI host_timestamp() { return static_cast<std::uint64_t>(gnnprof::instrument::mono_ns()); }

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  try {
    std::vector<const CUpti_Activity*> records;
    CUpti_Activity* rec = nullptr;
    while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) records.push_back(rec);
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_converter != nullptr && g_emitter != nullptr)
      for (const auto& ev : g_converter->convert(records)) g_emitter->emit(ev);
  } catch (...) {
  }
  std::free(buffer);
}

std::string result_text(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s != nullptr ? s : std::to_string(static_cast<int>(r));
}

}  // namespace

extern "C" {

int gnnprof_cupti_start(char* reason, unsigned long reason_size) {
  std::string why;
  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
  const char* names[] = {"CONCURRENT_KERNEL", "MEMCPY", "SYNCHRONIZATION"};
  // Correlation with the launching op: wanted, not required (kernels and copies still count).
  const CUpti_ActivityKind correlation[] = {CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME,
                                            CUPTI_ACTIVITY_KIND_DRIVER};
  const char* correlation_names[] = {"EXTERNAL_CORRELATION", "RUNTIME", "DRIVER"};
  constexpr int kKinds = static_cast<int>(std::size(kinds));
  try {
    std::int64_t offset = 0;
    if (cuptiActivityRegisterTimestampCallback(host_timestamp) != CUPTI_SUCCESS) {
      // Older CUPTI: align its clock to CLOCK_MONOTONIC once (drift over a run is small).
      uint64_t gpu = 0;
      cuptiGetTimestamp(&gpu);
      offset = static_cast<std::int64_t>(host_timestamp()) - static_cast<std::int64_t>(gpu);
    }
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
      why = "cuptiActivityRegisterCallbacks: " + result_text(r);
    } else {
      int enabled = 0;
      for (int i = 0; i < kKinds && why.empty(); ++i) {
        r = cuptiActivityEnable(kinds[i]);
        if (r == CUPTI_SUCCESS) {
          ++enabled;
        } else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
          why = "another profiler is attached to CUPTI (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)";
        } else {
          why = std::string("no usable GPU (cuptiActivityEnable(") + names[i] + "): " + result_text(r) + ")";
        }
      }
      if (!why.empty()) {
        for (int i = 0; i < enabled; ++i) cuptiActivityDisable(kinds[i]);
      } else {
        std::snprintf(g_note, sizeof(g_note), "%s", kKindsNote);
        int on = 0;
        for (; on < static_cast<int>(std::size(correlation)); ++on) {
          r = cuptiActivityEnable(correlation[on]);
          if (r != CUPTI_SUCCESS) break;
        }
        if (on < static_cast<int>(std::size(correlation))) {
          for (int i = 0; i < on; ++i) cuptiActivityDisable(correlation[i]);
          std::snprintf(g_note, sizeof(g_note), "%s; kernels not linked to their op (cuptiActivityEnable(%s): %s)",
                        kKindsNote, correlation_names[on], result_text(r).c_str());
        }
      }
    }
    if (why.empty()) {
      std::lock_guard<std::mutex> lock(g_mu);
      g_converter = new gnnprof::instrument::CuptiConverter(offset);  // leaked: buffers may
      g_emitter = new gnnprof::instrument::GpuEventEmitter();          // complete at exit
      g_started = true;
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (!why.empty()) {
    gnnprof_note_collector("cupti", 0, why.c_str());
    if (reason != nullptr && reason_size > 0) std::snprintf(reason, reason_size, "%s", why.c_str());
    return -1;
  }
  gnnprof_note_collector("cupti", 1, g_note);
  return 0;
}

void gnnprof_cupti_flush(void) {
  if (!g_started) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  // How many kernels found the op that launched them: the check that correlation works.
  try {
    // At exit too: never wait on a buffer being converted on another thread; the note waits.
    std::unique_lock<std::mutex> lock(g_mu, std::try_to_lock);
    if (!lock.owns_lock() || g_converter == nullptr || g_converter->kernels() == 0) return;
    char note[sizeof(g_note) + 96];
    std::snprintf(note, sizeof(note), "%s; %llu kernels, %llu with their launching torch op", g_note,
                  static_cast<unsigned long long>(g_converter->kernels()),
                  static_cast<unsigned long long>(g_converter->kernels_correlated()));
    gnnprof_note_collector("cupti", 1, note);
  } catch (...) {
  }
}

void gnnprof_cupti_push_external(unsigned long long id) {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void gnnprof_cupti_pop_external(void) {
  uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

}  // extern "C"
