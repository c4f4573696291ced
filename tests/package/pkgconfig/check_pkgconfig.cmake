# SPDX-License-Identifier: Apache-2.0
# The pkg-config checks, run with `cmake -P` by tests/package/pkgconfig.cmake against the tree
# package.install made. Two modes:
#
#   -DMODE=files    the installed .pc files are exactly EXPECT (a list of module names); each
#                   validates, has Version VERSION and resolves its prefix to PREFIX (so the
#                   ${pcfiledir}-relative prefix is right), and `pkg-config [--static] --cflags
#                   --libs` works for it.
#   -DMODE=program  compiles SOURCE with a plain compiler command line,
#                     CXX -std=c++20 SOURCE -o app $(pkg-config [--static] --cflags --libs MODULE)
#                   (--static where STATIC is true; a shared build adds an rpath to the libdir),
#                   and runs it: a .pc whose Libs or Libs.private miss a library fails the link.
#
# Other variables: PKG_CONFIG (the executable), PREFIX, LIBDIR (relative to PREFIX), WORK_DIR,
# CXX_FLAGS and LINK_FLAGS (this build's, e.g. sanitizers).
cmake_minimum_required(VERSION 3.25)

foreach(v PKG_CONFIG PREFIX LIBDIR MODE)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_pkgconfig.cmake: ${v} is not set")
  endif()
endforeach()
if(NOT EXISTS "${PKG_CONFIG}")
  message(FATAL_ERROR "pkg-config not found (Debian: pkgconf; `bash setup.sh deps`)")
endif()
set(pc_dir "${PREFIX}/${LIBDIR}/pkgconfig")
# Only the tree under test, then the system's .pc files (tbb.pc, libpng.pc, ...).
set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
set(static_flag "")
if(STATIC)
  set(static_flag --static)
endif()

# pc(<out> <args>...): pkg-config's stdout; stops the test with pkg-config's words on failure.
function(pc out)
  execute_process(COMMAND "${PKG_CONFIG}" ${ARGN} RESULT_VARIABLE rc
    OUTPUT_VARIABLE o ERROR_VARIABLE e OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${ARGN} failed (PKG_CONFIG_PATH=${pc_dir}):\n${o}${e}")
  endif()
  set(${out} "${o}" PARENT_SCOPE)
endfunction()

if(MODE STREQUAL "files")
  file(GLOB found RELATIVE "${pc_dir}" "${pc_dir}/*.pc")
  list(TRANSFORM found REPLACE "\\.pc$" "")
  list(SORT found)
  set(want ${EXPECT})
  list(SORT want)
  if(NOT found STREQUAL want)
    message(FATAL_ERROR "${pc_dir} holds [${found}], expected [${want}]")
  endif()
  file(REAL_PATH "${PREFIX}" real_prefix)
  foreach(m IN LISTS want)
    pc(ignored --validate ${m})
    pc(version --modversion ${m})
    if(NOT version STREQUAL VERSION)
      message(FATAL_ERROR "${m}.pc: Version ${version}, expected ${VERSION}")
    endif()
    pc(prefix --variable=prefix ${m})
    file(REAL_PATH "${prefix}" real)
    if(NOT real STREQUAL real_prefix)
      message(FATAL_ERROR "${m}.pc: prefix ${prefix} is ${real}, expected ${real_prefix}")
    endif()
    pc(flags ${static_flag} --cflags --libs ${m})
    message(STATUS "${m}: ${flags}")
  endforeach()
  return()
endif()

if(NOT MODE STREQUAL "program")
  message(FATAL_ERROR "check_pkgconfig.cmake: MODE must be files or program (got '${MODE}')")
endif()
foreach(v CXX SOURCE MODULE WORK_DIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "check_pkgconfig.cmake: ${v} is not set")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(rpath "")
if(NOT STATIC)
  # No ldconfig for a prefix under the build tree: the program finds libferry*.so by rpath.
  set(rpath " -Wl,-rpath,$(${PKG_CONFIG} --variable=libdir ${MODULE})")
endif()
# A plain command line, as a user would type it (shell word splitting of pkg-config's output).
set(cmd "\"${CXX}\" -std=c++20 ${CXX_FLAGS} \"${SOURCE}\" -o app ${LINK_FLAGS}"
        " $(${PKG_CONFIG} ${static_flag} --cflags --libs ${MODULE})${rpath}")
string(JOIN "" cmd ${cmd})
message(STATUS "PKG_CONFIG_PATH=${pc_dir}\n   ${cmd}")
execute_process(COMMAND sh -ec "${cmd}" WORKING_DIRECTORY "${WORK_DIR}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building against ${MODULE}.pc failed (exit ${rc})")
endif()
execute_process(COMMAND "${WORK_DIR}/app" RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the program built against ${MODULE}.pc failed (exit ${rc})")
endif()
