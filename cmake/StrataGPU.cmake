# Finds the GPU compilers. Sets STRATA_HAVE_CUDA / STRATA_HAVE_HIP and says at configure time what was found
# and what will be built. plugins/cuda and plugins/hip add themselves only when these are ON.

# ---- CUDA ---------------------------------------------------------------------------------------------------
set(STRATA_HAVE_CUDA OFF)
if(NOT STRATA_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # The local GPU's arch when one is there, else sm_90 plus the consumer archs nvcc 13 supports.
      set(_arch "")
      find_program(STRATA_NVIDIA_SMI nvidia-smi)
      if(STRATA_NVIDIA_SMI)
        execute_process(COMMAND ${STRATA_NVIDIA_SMI} --query-gpu=compute_cap --format=csv,noheader
                        OUTPUT_VARIABLE _caps RESULT_VARIABLE _rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
        if(_rc EQUAL 0 AND _caps)
          string(REPLACE "." "" _caps "${_caps}")
          string(REPLACE "\n" ";" _caps "${_caps}")
          list(REMOVE_DUPLICATES _caps)
          set(_arch ${_caps})
        endif()
      endif()
      if(NOT _arch)
        set(_arch 90 86 89 120)
      endif()
      set(CMAKE_CUDA_ARCHITECTURES ${_arch} CACHE STRING "CUDA archs to build for")
    endif()
    enable_language(CUDA)
    set(STRATA_HAVE_CUDA ON)
    message(STATUS "CUDA: nvcc ${CMAKE_CUDA_COMPILER_VERSION} found, archs ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(STRATA_CUDA STREQUAL "ON")
    message(FATAL_ERROR "STRATA_CUDA=ON but no CUDA compiler was found (install the CUDA toolkit or pass "
                        "-DCMAKE_CUDA_COMPILER=/path/to/nvcc)")
  else()
    message(STATUS "CUDA: no nvcc found, the cuda plugin is skipped")
  endif()
else()
  message(STATUS "CUDA: off (STRATA_CUDA=OFF)")
endif()

# ---- HIP (Debian's ROCm 5.2 layout: clang++-15 and hip-lang under /usr/lib/x86_64-linux-gnu) ----------------
# CMake's check_language(HIP) cannot find Debian's layout; this points CMake at it through a small shim folder.
set(STRATA_HAVE_HIP OFF)
if(NOT STRATA_HIP STREQUAL "OFF")
  find_program(STRATA_HIP_CLANG NAMES clang++-15)
  find_path(STRATA_HIP_LANG_DIR hip-lang-config.cmake PATHS /usr/lib/x86_64-linux-gnu/cmake/hip-lang NO_DEFAULT_PATH)
  find_path(STRATA_HIP_BITCODE_DIR oclc_isa_version_90a.bc
            PATHS /usr/lib/x86_64-linux-gnu/amdgcn/bitcode /usr/share/amdgcn/bitcode NO_DEFAULT_PATH)
  if(STRATA_HIP_CLANG AND STRATA_HIP_LANG_DIR AND STRATA_HIP_BITCODE_DIR)
    set(_shim ${CMAKE_BINARY_DIR}/rocm-shim)
    file(MAKE_DIRECTORY ${_shim}/lib/cmake)
    file(CREATE_LINK ${STRATA_HIP_LANG_DIR} ${_shim}/lib/cmake/hip-lang SYMBOLIC)
    set(CMAKE_HIP_COMPILER ${STRATA_HIP_CLANG})
    set(CMAKE_HIP_COMPILER_ROCM_ROOT ${_shim})
    # try_compile sees the environment, not our variables.
    set(ENV{CMAKE_PREFIX_PATH} "/usr/lib/x86_64-linux-gnu/cmake:$ENV{CMAKE_PREFIX_PATH}")
    set(ENV{HIPFLAGS} "--rocm-path=/usr --rocm-device-lib-path=${STRATA_HIP_BITCODE_DIR}")
    if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
      # Required: the default probes rocm_agent_enumerator, which fails without /dev/kfd.
      set(CMAKE_HIP_ARCHITECTURES gfx90a CACHE STRING "HIP archs to build for")
    endif()
    enable_language(HIP)
    set(STRATA_HAVE_HIP ON)
    message(STATUS "HIP: clang++-15 with Debian's ROCm found, archs ${CMAKE_HIP_ARCHITECTURES}")
  elseif(STRATA_HIP STREQUAL "ON")
    message(FATAL_ERROR "STRATA_HIP=ON but Debian's HIP toolchain was not found "
                        "(apt-get install hipcc libamdhip64-dev rocm-device-libs)")
  else()
    message(STATUS "HIP: no clang++-15/hip-lang found, the hip plugin is skipped")
  endif()
else()
  message(STATUS "HIP: off (STRATA_HIP=OFF)")
endif()
