# SPDX-License-Identifier: Apache-2.0
# ctest package.headers (cmake -P): every installed public header compiles on its own, with
# nothing but the C++ standard library and ferry's include directory, and includes no TBB,
# FFmpeg, OpenCV, image codec, curl, CUDA, MPI or DLPack header, directly or not (STYLE.md: public
# headers include none of them; ferry/cuda.hpp and ferry/mpi.hpp neither, they declare what they
# need).
#   -DCXX=<compiler> -DINCLUDE_DIR=<prefix>/include
foreach(_v CXX INCLUDE_DIR)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "check_headers.cmake needs -D${_v}=...")
  endif()
endforeach()
file(GLOB_RECURSE _headers RELATIVE "${INCLUDE_DIR}" "${INCLUDE_DIR}/ferry/*.hpp")
list(SORT _headers)
if(NOT _headers)
  message(FATAL_ERROR "no headers under ${INCLUDE_DIR}/ferry")
endif()
set(_forbidden "tbb|libav|libsw|opencv|curl|cuda_runtime|/cuda\\.h|/cuda/|dlpack|jpeglib|turbojpeg|/png\\.h|webp|/mpi\\.h|openmpi|mpich|expat|openssl")
set(_failed "")
foreach(_h IN LISTS _headers)
  # -H lists every header the compiler opens, one per line, dots for the depth.
  execute_process(
    COMMAND "${CXX}" -std=c++20 -fsyntax-only -H -I "${INCLUDE_DIR}" -x c++ "${INCLUDE_DIR}/${_h}"
    RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_QUIET)
  if(NOT _rc EQUAL 0)
    list(APPEND _failed "${_h} does not compile on its own:\n${_err}")
    continue()
  endif()
  string(REGEX MATCHALL "(^|\n)\\.+ [^\n]+" _opened "${_err}")
  foreach(_line IN LISTS _opened)
    string(REGEX REPLACE "^\n?\\.+ " "" _path "${_line}")
    cmake_path(IS_PREFIX INCLUDE_DIR "${_path}" NORMALIZE _ours)
    if(NOT _ours AND _path MATCHES "${_forbidden}")
      list(APPEND _failed "${_h} includes ${_path}")
      break()  # the first is enough to act on
    endif()
  endforeach()
endforeach()
if(_failed)
  list(JOIN _failed "\n  " _text)
  message(FATAL_ERROR "public headers:\n  ${_text}")
endif()
list(LENGTH _headers _n)
message(STATUS "ok: ${_n} public headers compile alone and include no TBB, FFmpeg, OpenCV, "
               "codec, curl, CUDA, MPI or DLPack header")
