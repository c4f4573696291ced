# SPDX-License-Identifier: Apache-2.0
# Finds what ferry::http links: libcurl (7.68 or newer), as CMake's FindCURL imported target
#   CURL::libcurl
# Used by ferry's own build and by the installed ferryConfig.cmake (static builds).
include_guard(GLOBAL)

if(NOT TARGET CURL::libcurl)
  find_package(CURL 7.68 QUIET)
  if(NOT CURL_FOUND)
    message(FATAL_ERROR "ferry::http needs libcurl 7.68 or newer "
      "(Debian: libcurl4-openssl-dev; `bash setup.sh deps`)")
  endif()
endif()
