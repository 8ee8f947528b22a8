// preload_dlsym.cpp — the dlsym hook: threadless mode's only way to see libtorch arrive
// without a thread of its own.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "preload_state.h"

using namespace gnnprof::instrument::preload;

namespace {
std::atomic<void*> g_real_dlsym{nullptr};
}  // namespace

// The dlsym hook (threadless mode's only way to see libtorch arrive without a thread).
// `dlsym` below is an assembly trampoline: it calls gnnprof_dlsym_hook with the arguments,
// restores them and *jumps* to the real dlsym that the hook returned. Because it jumps, the
// real dlsym sees the host's own return address, so RTLD_NEXT and RTLD_DEFAULT resolve exactly
// as without gnnprof (glibc takes the caller from the return address; a C wrapper that called
// it would make gnnprof the caller). dlopen is not hooked: it must run before the hook could
// act, and a wrapper around it would change how the host's relative names resolve.
namespace {
void* no_dlsym(void*, const char*) { return nullptr; }
}  // namespace

extern "C" __attribute__((visibility("hidden"), used)) void* gnnprof_dlsym_hook(void* /*handle*/, const char* name) {
  void* real = g_real_dlsym.load(std::memory_order_acquire);
  if (real == nullptr) {
    real = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (real == nullptr) real = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (real == nullptr) return reinterpret_cast<void*>(&no_dlsym);
    g_real_dlsym.store(real, std::memory_order_release);
  }
  // Python resolves PyInit_<module> right after loading an extension module.
  if (name != nullptr && name[0] == 'P' && std::strncmp(name, "PyInit_", 7) == 0 &&
      g_threadless.load(std::memory_order_relaxed)) {
    try {
      on_extension_loaded();
    } catch (...) {
    }
  }
  return real;
}

#if defined(__x86_64__) && defined(__linux__)
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  .cfi_startproc
  endbr64
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  call gnnprof_dlsym_hook
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  jmp *%rax
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#endif
