// dlsym_next: the second of two libraries that define which() (see dlsym_next.cpp).
extern "C" const char* which() { return "second"; }
