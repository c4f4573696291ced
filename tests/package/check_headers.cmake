# SPDX-License-Identifier: Apache-2.0
# ctest package.headers (cmake -P): every installed public header compiles on its own, with
# nothing but the C++ standard library and ferry's include directory, and includes no TBB,
# FFmpeg, OpenCV, image codec, curl, CUDA, MPI, DLPack or libtorch header, directly or not
# (STYLE.md: public headers include none of them; ferry/cuda.hpp and ferry/mpi.hpp neither, they
# declare what they need).
#
# And the layers (core <- components <- engine): a header of ferry::core or of a component
# (every header but the engine's own, listed in _engine_side) opens none of the engine's API
# headers ferry/{builder,options,stats,state}.hpp, directly or not, so that a component sees
# core only. ferry/cuda.hpp is on the engine's side by design: its `to_cuda` extends the builder.
# The device values it delivers are in ferry/cuda_tensor.hpp, a component header like the others:
# ferry/torch.hpp includes that one (for to_torch of a cuda_tensor), never ferry/cuda.hpp, and is
# held to the rule like any component header (with ferry/cuda.hpp it fails: "ferry/torch.hpp
# (ferry::core or a component) includes the engine's ferry/builder.hpp").
#
# One deliberate exception: ferry/torch.hpp exists to expose libtorch (its functions take and
# return torch::Tensor, which cannot be declared without libtorch's headers), so it is compiled
# with libtorch's include directories as well, and may include libtorch's headers (torch/,
# ATen/, c10/, caffe2/), but still none of the others: not through libtorch either (a CPU
# libtorch's <torch/types.h> opens no CUDA runtime header). It is installed only by a build with
# ferry::torch; then TORCH_INCLUDE_DIRS is set, and the header must be there.
#   -DCXX=<compiler> -DINCLUDE_DIR=<prefix>/include
#   [-DTORCH_INCLUDE_DIRS=<dir>|<dir>...]   libtorch's, for ferry/torch.hpp only ('|'-separated)
cmake_minimum_required(VERSION 3.25)
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
set(_libtorch "/(torch|ATen|c10|caffe2)/")
# The engine's API, and the headers that may include it (the engine's own, the umbrella, the
# sources built on from() — mix and zip —, the builder's compile-time checks and ferry/cuda.hpp's
# builder extension).
set(_engine_api "^ferry/(builder|options|stats|state)\\.hpp$")
set(_engine_side ferry/builder.hpp ferry/options.hpp ferry/stats.hpp ferry/state.hpp
    ferry/pipeline.hpp ferry/from.hpp ferry/ferry.hpp ferry/cuda.hpp ferry/detail/spec.hpp
    ferry/detail/stage_calls.hpp ferry/detail/builder_checks.hpp ferry/merge.hpp ferry/mix.hpp
    ferry/zip.hpp)
set(_torch_header "ferry/torch.hpp")
string(REPLACE "|" ";" _torch_dirs "${TORCH_INCLUDE_DIRS}")
set(_failed "")
if(_torch_dirs AND NOT _torch_header IN_LIST _headers)
  list(APPEND _failed "${_torch_header} is not installed, but ferry was built with ferry::torch")
endif()
foreach(_h IN LISTS _headers)
  set(_extra "")
  set(_not_allowed "${_forbidden}|${_libtorch}")
  if(_h STREQUAL _torch_header)
    if(NOT _torch_dirs)
      list(APPEND _failed "${_h} is installed by a ferry built without ferry::torch")
      continue()
    endif()
    foreach(_d IN LISTS _torch_dirs)
      list(APPEND _extra -I "${_d}")
    endforeach()
    set(_not_allowed "${_forbidden}")
  endif()
  # -H lists every header the compiler opens, one per line, dots for the depth.
  execute_process(
    COMMAND "${CXX}" -std=c++20 -fsyntax-only -H -I "${INCLUDE_DIR}" ${_extra}
            -x c++ "${INCLUDE_DIR}/${_h}"
    RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_QUIET)
  if(NOT _rc EQUAL 0)
    list(APPEND _failed "${_h} does not compile on its own:\n${_err}")
    continue()
  endif()
  string(REGEX MATCHALL "(^|\n)\\.+ [^\n]+" _opened "${_err}")
  set(_layer_checked FALSE)
  if(_h IN_LIST _engine_side)
    set(_layer_checked TRUE)  # may include the engine's API
  endif()
  foreach(_line IN LISTS _opened)
    string(REGEX REPLACE "^\n?\\.+ " "" _path "${_line}")
    cmake_path(IS_PREFIX INCLUDE_DIR "${_path}" NORMALIZE _ours)
    if(NOT _ours AND _path MATCHES "${_not_allowed}")
      list(APPEND _failed "${_h} includes ${_path}")
      break()  # the first is enough to act on
    endif()
    if(_ours AND NOT _layer_checked)
      cmake_path(RELATIVE_PATH _path BASE_DIRECTORY "${INCLUDE_DIR}" OUTPUT_VARIABLE _rel)
      if(_rel MATCHES "${_engine_api}")
        list(APPEND _failed "${_h} (ferry::core or a component) includes the engine's ${_rel}: "
                            "move what it needs into a core header")
        set(_layer_checked TRUE)  # once is enough
      endif()
    endif()
  endforeach()
endforeach()
if(_failed)
  list(JOIN _failed "\n  " _text)
  message(FATAL_ERROR "public headers:\n  ${_text}")
endif()
list(LENGTH _headers _n)
set(_but "")
if(_torch_dirs)
  set(_but " (${_torch_header}: but libtorch's)")
endif()
message(STATUS "ok: ${_n} public headers compile alone and include no TBB, FFmpeg, OpenCV, "
               "codec, curl, CUDA, MPI, DLPack or libtorch header${_but}; no core or component "
               "header includes the engine's builder, options, stats or state header")
