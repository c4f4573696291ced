# SPDX-License-Identifier: Apache-2.0
# The find_package test (included from tests/CMakeLists.txt): installs this build tree into a
# prefix under the build directory, then configures, builds and runs tests/package/ — a separate
# CMake project that only knows `find_package(ferry)` — against that prefix. It tests whatever
# this build is: static (the default) or shared (-DBUILD_SHARED_LIBS=ON), any build type.
#
# Seven ctest entries chained by fixtures, so `ctest -R package.run` alone still runs them all:
#   package.clean -> package.install -> package.configure -> package.build -> package.run
#                                    -> package.links
#                                    -> package.headers
# package.links configures tests/package/links/, which fails when an installed library other
# than ferry::ferry depends on the engine or on oneTBB; package.headers compiles each installed
# public header alone and fails on any TBB, FFmpeg, OpenCV, codec, curl, CUDA or DLPack include.

set(_ferry_pkg_root "${PROJECT_BINARY_DIR}/package-test")
set(_ferry_pkg_prefix "${_ferry_pkg_root}/prefix")
set(_ferry_pkg_build "${_ferry_pkg_root}/consumer")
set(_ferry_pkg_links "${_ferry_pkg_root}/links")

# The consumer uses this build's compiler and flags; a sanitized libferry needs the sanitizer
# runtime in the consumer's link too.
set(_ferry_pkg_cxx_flags "${CMAKE_CXX_FLAGS}")
set(_ferry_pkg_link_flags "${CMAKE_EXE_LINKER_FLAGS}")
if(FERRY_SANITIZE)
  string(REPLACE ";" "," _ferry_pkg_san "${FERRY_SANITIZE}")
  string(APPEND _ferry_pkg_cxx_flags " -fsanitize=${_ferry_pkg_san} -fno-omit-frame-pointer")
  string(APPEND _ferry_pkg_link_flags " -fsanitize=${_ferry_pkg_san}")
endif()

set(_ferry_pkg_generator_args -G "${CMAKE_GENERATOR}")
if(CMAKE_GENERATOR_PLATFORM)
  list(APPEND _ferry_pkg_generator_args -A "${CMAKE_GENERATOR_PLATFORM}")
endif()
if(CMAKE_GENERATOR_TOOLSET)
  list(APPEND _ferry_pkg_generator_args -T "${CMAKE_GENERATOR_TOOLSET}")
endif()
if(CMAKE_MAKE_PROGRAM)
  list(APPEND _ferry_pkg_generator_args "-DCMAKE_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}")
endif()

add_test(NAME package.clean
  COMMAND ${CMAKE_COMMAND} -E rm -rf "${_ferry_pkg_prefix}" "${_ferry_pkg_build}"
          "${_ferry_pkg_links}")
add_test(NAME package.install
  COMMAND ${CMAKE_COMMAND} --install "${PROJECT_BINARY_DIR}" --config $<CONFIG>
          --prefix "${_ferry_pkg_prefix}")
add_test(NAME package.configure
  COMMAND ${CMAKE_COMMAND}
          -S "${CMAKE_CURRENT_LIST_DIR}" -B "${_ferry_pkg_build}"
          ${_ferry_pkg_generator_args}
          "-DCMAKE_BUILD_TYPE=$<CONFIG>"
          "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
          "-DCMAKE_CXX_FLAGS=${_ferry_pkg_cxx_flags}"
          "-DCMAKE_EXE_LINKER_FLAGS=${_ferry_pkg_link_flags}"
          "-DCMAKE_PREFIX_PATH=${_ferry_pkg_prefix}"
          "-DFERRY_EXPECTED_PREFIX=${_ferry_pkg_prefix}"
          "-DFERRY_EXPECT_HTTP=${FERRY_HTTP_ENABLED}"
          -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
          -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON)
# The components this build made, which the links check requires find_package to find.
set(_ferry_pkg_components "")
foreach(_c IN ITEMS IMAGE VIDEO HTTP_ENABLED CUDA_ENABLED)
  if(FERRY_${_c})
    string(REGEX REPLACE "_ENABLED$" "" _c "${_c}")
    string(TOLOWER "${_c}" _c)
    list(APPEND _ferry_pkg_components ${_c})
  endif()
endforeach()
string(REPLACE ";" "," _ferry_pkg_components "${_ferry_pkg_components}")
add_test(NAME package.links
  COMMAND ${CMAKE_COMMAND}
          -S "${CMAKE_CURRENT_LIST_DIR}/links" -B "${_ferry_pkg_links}"
          ${_ferry_pkg_generator_args}
          "-DCMAKE_BUILD_TYPE=$<CONFIG>"
          "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
          "-DCMAKE_PREFIX_PATH=${_ferry_pkg_prefix}"
          "-DFERRY_EXPECTED_PREFIX=${_ferry_pkg_prefix}"
          "-DFERRY_EXPECT_COMPONENTS=${_ferry_pkg_components}"
          -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
          -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON)
add_test(NAME package.headers
  COMMAND ${CMAKE_COMMAND} "-DCXX=${CMAKE_CXX_COMPILER}"
          "-DINCLUDE_DIR=${_ferry_pkg_prefix}/${CMAKE_INSTALL_INCLUDEDIR}"
          -P "${CMAKE_CURRENT_LIST_DIR}/check_headers.cmake")
add_test(NAME package.build
  COMMAND ${CMAKE_COMMAND} --build "${_ferry_pkg_build}" --config $<CONFIG>)
add_test(NAME package.run
  COMMAND ${CMAKE_CTEST_COMMAND} --test-dir "${_ferry_pkg_build}" -C $<CONFIG>
          --output-on-failure --no-tests=error)

set_tests_properties(package.clean PROPERTIES
  FIXTURES_SETUP ferry_pkg_clean)
set_tests_properties(package.install PROPERTIES
  FIXTURES_REQUIRED ferry_pkg_clean FIXTURES_SETUP ferry_pkg_installed)
set_tests_properties(package.configure PROPERTIES
  FIXTURES_REQUIRED ferry_pkg_installed FIXTURES_SETUP ferry_pkg_configured)
set_tests_properties(package.links package.headers PROPERTIES
  FIXTURES_REQUIRED ferry_pkg_installed)
set_tests_properties(package.build PROPERTIES
  FIXTURES_REQUIRED ferry_pkg_configured FIXTURES_SETUP ferry_pkg_built)
set_tests_properties(package.run PROPERTIES
  FIXTURES_REQUIRED ferry_pkg_built)
set_tests_properties(package.clean package.install package.configure package.links
  package.headers package.build package.run PROPERTIES LABELS "package" TIMEOUT 300)

include(${CMAKE_CURRENT_LIST_DIR}/pkgconfig.cmake)  # pkg-config: .pc files, plain command lines
include(${CMAKE_CURRENT_LIST_DIR}/deb.cmake)        # cpack -G DEB: Depends and contents
