# Thin wrapper over scripts/ and CMake. Quick start:  make demo   |   make test
BUILD ?= build
CORE_BUILD ?= build-core
GENERATOR := $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")

.PHONY: all deps build demo test test-core tsan asan fuzz stress bench clean

all: build

deps:
	@scripts/deps.sh

# Configure once (or when the cache is gone), then build incrementally.
build: deps
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Release
	@cmake --build $(BUILD)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j2

# The core alone: libtorch and CUDA switched off (as CI also checks).
test-core: deps
	@test -f $(CORE_BUILD)/CMakeCache.txt || cmake -S . -B $(CORE_BUILD) -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Release \
	  -DGNNPROF_WITH_CUDA=OFF -DGNNPROF_WITH_TORCH=OFF -DGNNPROF_BUILD_BENCH=OFF -DGNNPROF_WITH_PYTHON=OFF
	@cmake --build $(CORE_BUILD)
	@cd $(CORE_BUILD) && ctest -L core --output-on-failure -j2

# ThreadSanitizer over the collector and the prefetch runtime (core only: Debian's libtorch is
# not TSan-instrumented, so its OpenMP threads would report false races).
TSAN_TESTS := buffer_test aggregation_test api_test prefetcher_test staging_ring_test
tsan: deps
	@test -f build-tsan/CMakeCache.txt || cmake -S . -B build-tsan -G "$(GENERATOR)" -DGNNPROF_SANITIZE=thread \
	  -DGNNPROF_WITH_CUDA=OFF -DGNNPROF_WITH_TORCH=OFF -DGNNPROF_BUILD_BENCH=OFF -DGNNPROF_WITH_PYTHON=OFF
	@cmake --build build-tsan --target $(TSAN_TESTS)
	@cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ctest --output-on-failure -R "^(Buffers|Aggregation|Histogram|Api|Prefetcher|PrefetchDepth|StagingRing)\."

# AddressSanitizer + UndefinedBehaviorSanitizer over every test that needs no libtorch (core,
# reports, prefetch, the sample's data layer, the CLI and app tests). UB aborts.
asan: deps
	@test -f build-asan/CMakeCache.txt || cmake -S . -B build-asan -G "$(GENERATOR)" -DGNNPROF_SANITIZE=address \
	  -DGNNPROF_WITH_CUDA=OFF -DGNNPROF_WITH_TORCH=OFF -DGNNPROF_BUILD_BENCH=OFF -DGNNPROF_WITH_PYTHON=OFF
	@cmake --build build-asan
	@# Left to the normal builds: the install test (an outside project cannot link the
	@# instrumented libraries without the sanitizer runtime) and the fault tests (ASan turns
	@# SIGSEGV into exit 1, and LeakSanitizer cannot run in a forked child of a threaded
	@# process: the runtime, not gnnprof, would change the fates they compare), and the dlsym
	@# trampoline test (LD_PRELOAD puts the preload ahead of the ASan runtime, which ASan refuses).
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest -L core -E '^(install\.|app\.faults$$|instrument\.dlsym_next$$)' --output-on-failure -j2

# libFuzzer over the profile and comparison readers, the Cora loader and argument parsing
# (clang, ASan + UBSan); FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 60
fuzz: deps
	@scripts/fuzz.sh $(FUZZ_SECONDS)

# Load: 16 threads x 10M events, the prefetcher at K=1..16 for 100k batches, a soak with RSS.
stress: build
	@$(BUILD)/tests/stress

bench: build
	@/usr/bin/python3 bench/run_overhead.py $(BUILD)/bench/bench_overhead

clean:
	rm -rf $(BUILD) $(CORE_BUILD) build-tsan build-asan build-fuzz
