# SPDX-License-Identifier: Apache-2.0
# Finds what ferry::mpi links: an MPI library (Open MPI, MPICH), as CMake's FindMPI imported
# target
#   MPI::MPI_CXX
# ferry calls only MPI's C API, so the MPI C++ bindings (removed in MPI 3, still built by some
# distributions) are neither needed nor linked: MPI_CXX_SKIP_MPICXX, unless the project set it.
# Used by ferry's own build and by the installed ferryConfig.cmake, static and shared alike: a
# shared libferry_mpi.so names MPI::MPI_CXX for the linker's -rpath-link.
include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/ferry-dependency.cmake")

if(NOT TARGET MPI::MPI_CXX)
  if(NOT DEFINED MPI_CXX_SKIP_MPICXX)
    set(MPI_CXX_SKIP_MPICXX ON)
    set(_ferry_mpi_unset_skip ON)
  endif()
  find_package(MPI QUIET COMPONENTS CXX)
  if(_ferry_mpi_unset_skip)
    unset(MPI_CXX_SKIP_MPICXX)
    unset(_ferry_mpi_unset_skip)
  endif()
  if(NOT MPI_CXX_FOUND)
    ferry_dependency_missing(mpi
      "an MPI library (Debian: libopenmpi-dev openmpi-bin; `bash setup.sh deps`)")
  endif()
endif()
