// dlsym_next: the first of two libraries that define which() (see dlsym_next.cpp).
extern "C" const char* which() { return "first"; }
