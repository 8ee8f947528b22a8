# Dependencies. Required ones fail at configure time with the Debian package to install;
# optional ones (libtorch, CUDA) switch their targets off and say so.

find_package(Threads REQUIRED)
find_package(fmt REQUIRED)            # libfmt-dev
find_package(nlohmann_json 3 REQUIRED) # nlohmann-json3-dev
find_package(Boost 1.74 REQUIRED)    # libboost-dev: Boost.Math's Student's t (header-only, not exported)
find_package(CLI11 QUIET)             # libcli11-dev
if(NOT CLI11_FOUND)
  message(FATAL_ERROR "CLI11 not found: apt-get install libcli11-dev")
endif()
if(GNNPROF_BUILD_TESTS)
  find_package(GTest REQUIRED)        # libgtest-dev
endif()
if(GNNPROF_BUILD_BENCH)
  find_package(benchmark QUIET)       # libbenchmark-dev
endif()

set(GNNPROF_HAVE_TORCH OFF)
if(GNNPROF_WITH_TORCH)
  find_package(Torch QUIET PATHS /usr/lib/x86_64-linux-gnu/cmake/Torch)
  if(Torch_FOUND)
    set(GNNPROF_HAVE_TORCH ON)
  else()
    message(STATUS "gnnprof: libtorch not found (apt-get install libtorch-dev); torch targets off")
  endif()
endif()

set(GNNPROF_HAVE_CUDA OFF)
if(GNNPROF_WITH_CUDA)
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(GNNPROF_HAVE_CUDA ON)
  else()
    message(STATUS "gnnprof: CUDA toolkit not found; CUDA targets off")
  endif()
endif()

# Warnings for gnnprof's own code.
add_library(gnnprof_warnings INTERFACE)
target_compile_options(gnnprof_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
