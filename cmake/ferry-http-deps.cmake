# SPDX-License-Identifier: Apache-2.0
# Finds what ferry::http links, as CMake's imported targets:
#   CURL::libcurl    libcurl 7.68 or newer (FindCURL): the transfers, and SigV4 signing
#   EXPAT::EXPAT     expat 2.2 or newer (FindEXPAT): S3's XML answers (listings, error documents)
#   OpenSSL::Crypto  OpenSSL 1.1.1 or newer's libcrypto (FindOpenSSL): SHA-256 for the cache
# Used by ferry's own build and by the installed ferryConfig.cmake (static builds).
include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/ferry-dependency.cmake")

if(NOT TARGET CURL::libcurl)
  find_package(CURL 7.68 QUIET)
  if(NOT CURL_FOUND)
    ferry_dependency_missing(http
      "libcurl 7.68 or newer (Debian: libcurl4-openssl-dev; `bash setup.sh deps`)")
  endif()
endif()
if(NOT TARGET EXPAT::EXPAT)
  find_package(EXPAT 2.2 QUIET)
  if(NOT EXPAT_FOUND)
    ferry_dependency_missing(http "expat 2.2 or newer (Debian: libexpat1-dev; `bash setup.sh deps`)")
  endif()
endif()
if(NOT TARGET OpenSSL::Crypto)
  find_package(OpenSSL 1.1.1 QUIET COMPONENTS Crypto)
  if(NOT OpenSSL_FOUND)
    ferry_dependency_missing(http
      "OpenSSL 1.1.1 or newer's libcrypto (Debian: libssl-dev; `bash setup.sh deps`)")
  endif()
endif()
