# SPDX-License-Identifier: Apache-2.0
# Finds what ferry::torch links: libtorch (PyTorch's C++ frontend), through its own CMake package
# (TorchConfig.cmake), as the imported target
#   torch
# ferry/torch.hpp includes libtorch's headers, so every consumer of ferry::torch needs them
# (ferry::torch links `torch` PUBLIC). Used by ferry's own build and by the installed
# ferryConfig.cmake, static and shared alike.
include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/ferry-dependency.cmake")

if(NOT TARGET torch)
  find_package(Torch QUIET)
  if(NOT Torch_FOUND AND NOT TORCH_FOUND)
    ferry_dependency_missing(torch "libtorch's CMake package (TorchConfig.cmake; Debian: \
libtorch-dev; elsewhere set Torch_DIR to <libtorch>/share/cmake/Torch)")
  endif()
endif()
