// dlsym_next: libgnnprof_preload.so's dlsym trampoline must leave RTLD_NEXT as it was. The
// program links libdlsym_first, libdlsym_caller and libdlsym_second in that order; the caller's
// dlsym(RTLD_NEXT, "which") must find libdlsym_second's. Were gnnprof's wrapper taken for the
// caller (a C wrapper that calls the real dlsym), the search would start after the preload and
// find libdlsym_first's. Run with LD_PRELOAD=libgnnprof_preload.so; exits 0 when both hold:
// the trampoline is the process's dlsym, and RTLD_NEXT resolved as without it.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>

extern "C" const char* next_which();

int main() {
  Dl_info info{};
  void* first_dlsym = dlsym(RTLD_DEFAULT, "dlsym");
  const bool hooked = first_dlsym != nullptr && dladdr(first_dlsym, &info) != 0 && info.dli_fname != nullptr &&
                      std::strstr(info.dli_fname, "gnnprof_preload") != nullptr;
  const char* got = next_which();
  std::printf("dlsym from %s; RTLD_NEXT found which() in the %s library\n",
              info.dli_fname != nullptr ? info.dli_fname : "?", got);
  if (!hooked) {
    std::printf("FAIL: the process's dlsym is not gnnprof's trampoline (run with LD_PRELOAD)\n");
    return 1;
  }
  return std::strcmp(got, "second") == 0 ? 0 : 1;
}
