#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) and runs each for $1 seconds (default 60)
# over its checked-in seed corpus. New interesting inputs go to a scratch corpus, not the repo;
# a crash leaves its input in build-fuzz/ and fails the script (add it to fuzz/corpus/ as a
# regression input once fixed).
set -euo pipefail
seconds=${1:-60}
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: needs clang and libFuzzer: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi
test -f build-fuzz/CMakeCache.txt || CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DGNNPROF_FUZZ=ON -DGNNPROF_SANITIZE=address -DGNNPROF_WITH_TORCH=OFF -DGNNPROF_WITH_CUDA=OFF \
  -DGNNPROF_BUILD_TESTS=OFF -DGNNPROF_BUILD_BENCH=OFF -DGNNPROF_WITH_PYTHON=OFF >/dev/null
cmake --build build-fuzz --target profile_reader_fuzzer comparison_reader_fuzzer cora_loader_fuzzer cli_args_fuzzer
rm -f build-fuzz/crash-* build-fuzz/leak-* build-fuzz/timeout-* build-fuzz/oom-*
for target in profile_reader comparison_reader cora_loader cli_args; do
  corpus=fuzz/corpus/${target%_*}
  scratch=build-fuzz/corpus-$target
  mkdir -p "$scratch"
  echo "fuzz: $target for ${seconds}s over $corpus ($(ls "$corpus" | wc -l) seeds)"
  # -close_fd_mask=3: the CLI prints help and usage errors; nothing else writes.
  (cd build-fuzz && ASAN_OPTIONS=detect_leaks=1 "./fuzz/${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -close_fd_mask=3 \
     -rss_limit_mb=2048 -print_final_stats=1 "../$scratch" "../$corpus" 2>&1 | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|INFO: Seed|==[0-9]+==ERROR|SUMMARY)" || true)
  found=$(find build-fuzz -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) -print)
  if [ -n "$found" ]; then
    echo "fuzz: $target found a failing input: $found" >&2
    exit 1
  fi
done
echo "fuzz: no crash, leak or timeout"
