// dlsym_next: a library between the two which() definitions that asks for the next one.
#include <dlfcn.h>

extern "C" const char* next_which() {
  auto f = reinterpret_cast<const char* (*)()>(dlsym(RTLD_NEXT, "which"));
  return f != nullptr ? f() : "none";
}
