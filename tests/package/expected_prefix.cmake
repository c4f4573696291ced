# SPDX-License-Identifier: Apache-2.0
# Included by the package consumer projects right after find_package(ferry): fails when the ferry
# found is not the one under test (a stale or system-wide install), where FERRY_EXPECTED_PREFIX
# says where that one is.
if(DEFINED FERRY_EXPECTED_PREFIX)
  cmake_path(IS_PREFIX FERRY_EXPECTED_PREFIX "${ferry_DIR}" NORMALIZE _ferry_from_expected)
  if(NOT _ferry_from_expected)
    message(FATAL_ERROR "found ferry in ${ferry_DIR}, expected it under ${FERRY_EXPECTED_PREFIX}")
  endif()
endif()
