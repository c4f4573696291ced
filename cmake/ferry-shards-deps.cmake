# SPDX-License-Identifier: Apache-2.0
# Finds what ferry::shards links: libarchive (3.3 or newer), as CMake's FindLibArchive imported
# target LibArchive::LibArchive.
# Used by ferry's own build and by the installed ferryConfig.cmake (static builds).
include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/ferry-dependency.cmake")

if(NOT TARGET LibArchive::LibArchive)
  find_package(LibArchive 3.3 QUIET)
  if(NOT LibArchive_FOUND)
    ferry_dependency_missing(shards
      "libarchive 3.3 or newer (Debian: libarchive-dev; `bash setup.sh deps`)")
  endif()
endif()
