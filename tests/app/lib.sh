# Shared by the app-level test scripts: a temp dir removed at exit, and check NAME EXPR, which
# prints ok/FAIL per assertion and makes the script exit 1 at the end if any failed.
tmp=$(mktemp -d)
trap 'umount "$tmp"/* 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
# Debian's Python (the one with torch; GNNPROF_TEST_PYTHON names another, e.g. a GPU machine's),
# and json FILE EXPR: prints EXPR over the parsed file `p`.
py=${GNNPROF_TEST_PYTHON:-/usr/bin/python3}
json() { $py -c "import json,sys; p=json.load(open(sys.argv[1])); print($2)" "$1"; }
# An AddressSanitizer build (`make asan`): LD_PRELOAD puts the preload ahead of the ASan
# runtime, which ASan refuses, so a test's `gnnprof run` sections are left to the normal builds.
asan_build() { ldd "$1" 2>/dev/null | grep -q libasan; }
