# SPDX-License-Identifier: Apache-2.0
# The .deb test, run with `cmake -P` by tests/package/deb.cmake: runs `cpack -G DEB` on the build
# tree (what it has built: the shared libraries) into OUT_DIR, then checks with dpkg-deb that
#   * there are exactly two packages, RUNTIME_PACKAGE (libferry<SOVERSION>) and libferry-dev,
#     both of VERSION;
#   * the runtime package's Depends (dpkg-shlibdeps') name the Debian runtime packages of
#     oneTBB and of each component built, and the -dev package's Depends name the runtime
#     package at the same version and the -dev packages find_package(ferry) needs;
#   * every package named in a Depends is known to dpkg on this machine (a misspelt name
#     would make `apt install` fail), where dpkg-query exists;
#   * the runtime package holds the versioned shared libraries and nothing else, and the -dev
#     package the headers, the CMake package, the .pc files and the .so links, and no
#     versioned library.
# Variables: CPACK, DPKG_DEB, BUILD_DIR, OUT_DIR, VERSION, SOVERSION, LIBDIR, COMPONENTS (the
# components built: image, video, http, shards, mpi, torch).
cmake_minimum_required(VERSION 3.25)

foreach(v CPACK DPKG_DEB BUILD_DIR OUT_DIR VERSION SOVERSION LIBDIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_deb.cmake: ${v} is not set")
  endif()
endforeach()
set(runtime "libferry${SOVERSION}")
set(dev "libferry-dev")
set(failures "")
macro(fail what)
  string(APPEND failures "\n  ${what}")
endmacro()

file(REMOVE_RECURSE "${OUT_DIR}")
execute_process(COMMAND "${CPACK}" -G DEB --config "${BUILD_DIR}/CPackConfig.cmake" -B "${OUT_DIR}"
  WORKING_DIRECTORY "${BUILD_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out
  TIMEOUT 240)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack -G DEB failed (${rc}):\n${out}")
endif()
file(GLOB debs RELATIVE "${OUT_DIR}" "${OUT_DIR}/*.deb")
list(SORT debs)
set(want_debs "${dev}_${VERSION}_" "${runtime}_${VERSION}_")
list(TRANSFORM debs REPLACE "[^_]+\\.deb$" "" OUTPUT_VARIABLE got_debs)
if(NOT got_debs STREQUAL want_debs)
  message(FATAL_ERROR "cpack made [${debs}], expected ${dev}_${VERSION}_<arch>.deb and "
                      "${runtime}_${VERSION}_<arch>.deb")
endif()
file(GLOB runtime_deb "${OUT_DIR}/${runtime}_*.deb")
file(GLOB dev_deb "${OUT_DIR}/${dev}_*.deb")

# depends(<out> <deb>): the Depends field as a list of entries ("a (>= 1) | b").
function(depends out deb)
  execute_process(COMMAND "${DPKG_DEB}" --field "${deb}" Depends RESULT_VARIABLE rc
    OUTPUT_VARIABLE d OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb --field ${deb} Depends failed")
  endif()
  string(REGEX REPLACE ",[ \n]*" ";" d "${d}")
  set(${out} "${d}" PARENT_SCOPE)
endfunction()
# expect_depends(<package> <entries> <regex>...): each regex matches a whole entry, a version
# constraint after any package name allowed.
function(expect_depends package entries)
  foreach(re IN LISTS ARGN)
    set(hit OFF)
    foreach(e IN LISTS entries)
      string(REGEX REPLACE " \\([^)]*\\)" "" bare "${e}")
      if(bare MATCHES "^(${re})$" OR e MATCHES "^(${re})$")
        set(hit ON)
      endif()
    endforeach()
    if(NOT hit)
      set(failures "${failures}\n  ${package}: no Depends entry matches '${re}'" PARENT_SCOPE)
    endif()
  endforeach()
endfunction()

set(want_runtime "libc6" "libstdc\\+\\+6" "libtbb[0-9]+")
set(want_dev "${runtime} \\(= ${VERSION}\\)" "libtbb-dev")
if("image" IN_LIST COMPONENTS)
  list(APPEND want_runtime "libjpeg62-turbo" "libpng16-16" "libwebp[0-9]+"
    "libopencv-imgproc[0-9.]+" "libopencv-core[0-9.]+")
  list(APPEND want_dev "libjpeg62-turbo-dev( \\| libjpeg-dev)?" "libpng-dev" "libwebp-dev"
    "libopencv-imgproc-dev")
endif()
if("video" IN_LIST COMPONENTS)
  foreach(lib avformat avcodec swscale swresample avutil)
    list(APPEND want_runtime "lib${lib}[0-9]+")
    list(APPEND want_dev "lib${lib}-dev")
  endforeach()
  list(APPEND want_dev "pkgconf \\| pkg-config")
endif()
if("http" IN_LIST COMPONENTS)
  list(APPEND want_runtime "libcurl(4|3-gnutls|3-nss)" "libexpat1" "libssl3( \\| libssl3t64)?")
  list(APPEND want_dev "libcurl4-openssl-dev \\| libcurl-dev" "libexpat1-dev" "libssl-dev")
endif()
if("shards" IN_LIST COMPONENTS)
  list(APPEND want_runtime "libarchive[0-9]+")
  list(APPEND want_dev "libarchive-dev")
endif()
if("mpi" IN_LIST COMPONENTS)
  list(APPEND want_runtime "libopenmpi[0-9]+")
  list(APPEND want_dev "libopenmpi-dev")
endif()
if("torch" IN_LIST COMPONENTS)
  list(APPEND want_runtime "libtorch[0-9.]+")
  list(APPEND want_dev "libtorch-dev")
endif()
depends(runtime_depends "${runtime_deb}")
depends(dev_depends "${dev_deb}")
expect_depends(${runtime} "${runtime_depends}" ${want_runtime})
expect_depends(${dev} "${dev_depends}" ${want_dev})

# Each entry needs one alternative that dpkg knows (installed here: ferry was built against it),
# apart from the runtime package, which only the .deb next to it provides.
find_program(DPKG_QUERY dpkg-query)
if(DPKG_QUERY)
  foreach(e IN LISTS runtime_depends dev_depends)
    string(REGEX REPLACE " \\([^)]*\\)" "" e "${e}")
    string(REPLACE " | " ";" alternatives "${e}")
    if(e STREQUAL runtime)
      continue()
    endif()
    set(known OFF)
    foreach(p IN LISTS alternatives)
      execute_process(COMMAND "${DPKG_QUERY}" -W -f=\${Status} "${p}" RESULT_VARIABLE rc
        OUTPUT_VARIABLE status ERROR_QUIET)
      if(rc EQUAL 0 AND status MATCHES "installed")
        set(known ON)
      endif()
    endforeach()
    if(NOT known)
      fail("Depends '${e}': no such package installed on this machine (dpkg-query -W)")
    endif()
  endforeach()
endif()

# contents(<out> <deb>): the package's paths, without the leading "./" and folders.
function(contents out deb)
  execute_process(COMMAND "${DPKG_DEB}" --contents "${deb}" RESULT_VARIABLE rc
    OUTPUT_VARIABLE listing)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb --contents ${deb} failed")
  endif()
  string(REGEX REPLACE "\n$" "" listing "${listing}")
  string(REPLACE "\n" ";" lines "${listing}")
  set(paths "")
  foreach(l IN LISTS lines)
    if(l MATCHES " \\./([^ ]*[^/])( -> .*)?$")
      list(APPEND paths "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${paths}" PARENT_SCOPE)
endfunction()
contents(runtime_files "${runtime_deb}")
contents(dev_files "${dev_deb}")

set(lib "usr/${LIBDIR}")
set(libs ferry ferry_core ferry_cuda)
foreach(c IN LISTS COMPONENTS)
  list(APPEND libs ferry_${c})
endforeach()
set(want_runtime_files "")
set(want_dev_files usr/include/ferry/ferry.hpp usr/include/ferry/tensor.hpp
  usr/include/ferry/cuda.hpp "${lib}/cmake/ferry/ferryConfig.cmake"
  "${lib}/cmake/ferry/ferryConfigVersion.cmake" "${lib}/cmake/ferry/ferry-targets.cmake"
  "${lib}/pkgconfig/ferry.pc" "${lib}/pkgconfig/ferry-core.pc" "${lib}/pkgconfig/ferry-cuda.pc")
foreach(l IN LISTS libs)
  list(APPEND want_runtime_files "${lib}/lib${l}.so.${SOVERSION}" "${lib}/lib${l}.so.${VERSION}")
  list(APPEND want_dev_files "${lib}/lib${l}.so")
endforeach()
foreach(c IN LISTS COMPONENTS)
  list(APPEND want_dev_files "usr/include/ferry/${c}.hpp" "${lib}/pkgconfig/ferry-${c}.pc"
    "${lib}/cmake/ferry/ferry-${c}-deps.cmake")
endforeach()
foreach(f IN LISTS want_runtime_files)
  if(NOT f IN_LIST runtime_files)
    fail("${runtime}: missing /${f}")
  endif()
endforeach()
foreach(f IN LISTS want_dev_files)
  if(NOT f IN_LIST dev_files)
    fail("${dev}: missing /${f}")
  endif()
endforeach()
# The runtime package holds the libraries and nothing a build needs; -dev no versioned library.
foreach(f IN LISTS runtime_files)
  if(NOT f IN_LIST want_runtime_files)
    fail("${runtime}: holds /${f}, which belongs in ${dev} (or nowhere)")
  endif()
endforeach()
foreach(f IN LISTS dev_files)
  if(f MATCHES "\\.so\\.[0-9]")
    fail("${dev}: holds /${f}, which belongs in ${runtime}")
  endif()
endforeach()

list(JOIN runtime_depends ", " runtime_depends)
list(JOIN dev_depends ", " dev_depends)
if(failures)
  message(FATAL_ERROR "the .deb packages are wrong:${failures}\n"
    "${runtime} Depends: ${runtime_depends}\n${dev} Depends: ${dev_depends}")
endif()
list(LENGTH runtime_files nr)
list(LENGTH dev_files nd)
message(STATUS "${runtime} (${nr} files) Depends: ${runtime_depends}")
message(STATUS "${dev} (${nd} files) Depends: ${dev_depends}")
