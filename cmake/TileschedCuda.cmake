# Find a CUDA compiler (PATH, then /usr/local/cuda) and enable the language if there is one.
# Sets TILESCHED_HAVE_CUDA and TILESCHED_CUDA_GENCODE. Says once when the GPU half is off.
set(TILESCHED_HAVE_CUDA OFF)
if(TILESCHED_ENABLE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_ts_nvcc nvcc)
    if(NOT _ts_nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Architecture flags are given explicitly below (sm_90a needs the -gencode form).
    set(CMAKE_CUDA_ARCHITECTURES OFF)
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(TILESCHED_HAVE_CUDA ON)
  endif()
endif()
set(TILESCHED_CUDA_GENCODE "-gencode=arch=compute_90a,code=sm_90a" CACHE STRING
    "nvcc code generation flags for the GPU half (Hopper: wgmma/TMA need sm_90a)")
if(TILESCHED_HAVE_CUDA)
  message(STATUS "tilesched: GPU half ON (${CMAKE_CUDA_COMPILER}, ${TILESCHED_CUDA_GENCODE})")
else()
  message(STATUS "tilesched: no CUDA compiler found, GPU half OFF (CPU half builds and tests fully)")
endif()

# CuTe/CUTLASS 4.2 headers for the sm90 kernel: tools/install-deps.sh unpacks the pinned wheel into
# third_party/; point this variable elsewhere to use another copy of the same version.
set(TILESCHED_CUTLASS_INCLUDE_DIR "${PROJECT_SOURCE_DIR}/third_party/cutlass-4.2.0.0/include"
    CACHE PATH "Include directory of CUTLASS 4.2 (holds cute/ and cutlass/)")
if(TILESCHED_HAVE_CUDA)
  if(NOT EXISTS "${TILESCHED_CUTLASS_INCLUDE_DIR}/cute/tensor.hpp" OR
     NOT EXISTS "${TILESCHED_CUTLASS_INCLUDE_DIR}/cutlass/version.h")
    message(FATAL_ERROR
      "tilesched: the GPU half needs the CuTe/CUTLASS 4.2 headers, but "
      "TILESCHED_CUTLASS_INCLUDE_DIR (${TILESCHED_CUTLASS_INCLUDE_DIR}) has no cute/tensor.hpp. "
      "Run tools/install-deps.sh, point TILESCHED_CUTLASS_INCLUDE_DIR at a CUTLASS 4.2 include "
      "directory, or configure with -DTILESCHED_ENABLE_CUDA=OFF.")
  endif()
  file(STRINGS "${TILESCHED_CUTLASS_INCLUDE_DIR}/cutlass/version.h" _ts_cutlass_version
       REGEX "^#define CUTLASS_(MAJOR|MINOR) [0-9]+")
  if(NOT _ts_cutlass_version MATCHES "CUTLASS_MAJOR 4;#define CUTLASS_MINOR 2")
    message(FATAL_ERROR "tilesched: ${TILESCHED_CUTLASS_INCLUDE_DIR} is not CUTLASS 4.2 "
                        "(cutlass/version.h: ${_ts_cutlass_version})")
  endif()
endif()
