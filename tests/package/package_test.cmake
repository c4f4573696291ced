# SPDX-License-Identifier: Apache-2.0
# The package tests (included from tests/CMakeLists.txt), label "package": they install this
# build tree into a prefix under the build directory and build and run projects that use ferry
# the ways a user's project would. They test whatever this build is: static (the default) or
# shared (-DBUILD_SHARED_LIBS=ON), any build type.
#
# Chained by fixtures, so `ctest -R package.run` alone still runs what it needs:
#   package.clean -> package.install -> package.configure -> package.build -> package.run
#                                    -> package.links
#                                    -> package.headers
#                                    -> package.find.<set>      (one per component set)
#                                    -> package.find.unknown_component
#                 package.build_tree                            (this build folder, no install)
#                 package.build_tree.torch, package.find.torch  (ferry::torch, where built)
#                 package.subdirectory -> package.find.not_built
#                 package.fetchcontent
# package.configure/build/run: tests/package/, a project that only knows find_package(ferry),
# with every component this build made. package.links configures tests/package/links/, which
# fails when an installed library other than ferry::ferry depends on the engine or on oneTBB
# (by its link interface, and by nm: a symbol only the engine defines), or one other than
# ferry::torch on libtorch; package.headers compiles each installed public header alone and fails
# on any TBB, FFmpeg, OpenCV, codec, curl, CUDA, MPI, DLPack or libtorch include (but
# ferry/torch.hpp's libtorch ones: check_headers.cmake says why), and on a core or component
# header that reaches the engine's API (builder, options, stats, state; cuda.hpp's to_cuda
# extends the builder by design).
# package.find.<set>: tests/package/components/ asks for one set of components (none, i.e. core
# and the engine; image; video; http; mpi; "ferry,torch"), with CMake's finding of TBB, CUDA and
# MPI disabled where the set does not need them, and builds and runs a program for each. package.find.unknown_component
# asks for one that does not exist and must fail naming it; package.find.not_built asks the
# minimal ferry package.subdirectory built for a component it was built without.
# package.build_tree: the same project against this build folder's own export;
# package.build_tree.torch likewise with "ferry,torch" (a pipeline ending in to_torch).
# package.subdirectory, package.fetchcontent: tests/package/subproject/ builds ferry's core and
# engine inside its own build by add_subdirectory (and runs both apps), and its core by
# FetchContent from this source tree (and runs core_app).
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

add_test(NAME package.clean COMMAND ${CMAKE_COMMAND} -E rm -rf "${_ferry_pkg_root}")
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
foreach(_c IN ITEMS IMAGE VIDEO HTTP_ENABLED SHARDS_ENABLED MPI_ENABLED CUDA_ENABLED TORCH_ENABLED)
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
# ferry/torch.hpp, the header that exists to expose libtorch, compiles with libtorch's include
# directories (those of this build's `torch` target); every other header with ferry's alone.
set(_ferry_pkg_torch_dirs "")
if(FERRY_TORCH_ENABLED)
  set(_ferry_pkg_torch_dirs
    "-DTORCH_INCLUDE_DIRS=$<JOIN:$<TARGET_PROPERTY:torch,INTERFACE_INCLUDE_DIRECTORIES>,|>")
endif()
add_test(NAME package.headers
  COMMAND ${CMAKE_COMMAND} "-DCXX=${CMAKE_CXX_COMPILER}"
          "-DINCLUDE_DIR=${_ferry_pkg_prefix}/${CMAKE_INSTALL_INCLUDEDIR}"
          ${_ferry_pkg_torch_dirs}
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

# --- one project per way of using ferry ------------------------------------------------------
# What every consumer is configured with: this build's compiler and flags, no package registry
# (and no warning that a set without TBB left CMAKE_DISABLE_FIND_PACKAGE_TBB unused: it should).
set(_ferry_pkg_options --no-warn-unused-cli
  "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}"
  "-DCMAKE_CXX_FLAGS=${_ferry_pkg_cxx_flags}"
  "-DCMAKE_EXE_LINKER_FLAGS=${_ferry_pkg_link_flags}"
  -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON
  -DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON)
# A subproject rebuilds ferry: through this build's compiler launcher (ccache), if it has one.
set(_ferry_pkg_sub_options ${_ferry_pkg_options} "-DBUILD_SHARED_LIBS=${BUILD_SHARED_LIBS}")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  list(APPEND _ferry_pkg_sub_options "-DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER}")
endif()

# _ferry_pkg_project(<test> <source> <build> <options>...): one ctest that configures, builds
# and runs (the project's own ctest) a consumer project.
function(_ferry_pkg_project name source build)
  add_test(NAME ${name}
    COMMAND ${CMAKE_CTEST_COMMAND} --build-and-test "${source}" "${build}"
            --build-generator "${CMAKE_GENERATOR}"
            --build-makeprogram "${CMAKE_MAKE_PROGRAM}"
            --build-options ${ARGN}
            --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure --no-tests=error)
  set_tests_properties(${name} PROPERTIES LABELS "package" TIMEOUT 300)
endfunction()

set(_ferry_pkg_components_src "${CMAKE_CURRENT_LIST_DIR}/components")
set(_ferry_pkg_find_options ${_ferry_pkg_options} "-DCMAKE_BUILD_TYPE=$<CONFIG>"
  "-DCMAKE_PREFIX_PATH=${_ferry_pkg_prefix}" "-DFERRY_EXPECTED_PREFIX=${_ferry_pkg_prefix}")
# No COMPONENTS: core and the engine, and neither CUDA nor MPI looked for (they would be found
# here, and a static CUDA build's config once always looked for it). image, video, http, shards, mpi
# alone: neither TBB nor CUDA looked for, nor MPI but for mpi.
set(_ferry_pkg_sets core_engine)
foreach(_c IN ITEMS IMAGE VIDEO HTTP_ENABLED SHARDS_ENABLED MPI_ENABLED)
  if(FERRY_${_c})
    string(REGEX REPLACE "_ENABLED$" "" _c "${_c}")
    string(TOLOWER "${_c}" _c)
    list(APPEND _ferry_pkg_sets ${_c})
  endif()
endforeach()
foreach(_set IN LISTS _ferry_pkg_sets)
  if(_set STREQUAL "core_engine")
    set(_asked "" )
    set(_disabled -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON)
  else()
    set(_asked ${_set})
    set(_disabled -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON -DCMAKE_DISABLE_FIND_PACKAGE_TBB=ON)
  endif()
  if(NOT _set STREQUAL "mpi")
    list(APPEND _disabled -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON)
  endif()
  _ferry_pkg_project(package.find.${_set} "${_ferry_pkg_components_src}"
    "${_ferry_pkg_root}/find-${_set}" ${_ferry_pkg_find_options} ${_disabled}
    "-DFERRY_COMPONENTS=${_asked}")
  set_tests_properties(package.find.${_set} PROPERTIES FIXTURES_REQUIRED ferry_pkg_installed)
endforeach()

# ferry::torch, with the engine (torch_main.cpp runs a pipeline that ends in to_torch), against
# the install and against this build folder: libtorch and TBB looked for, MPI not, CUDA only
# where a static ferry with CUDA needs it (ferry::torch links ferry::cuda, which links cudart).
if(FERRY_TORCH_ENABLED)
  set(_disabled -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON)
  if(BUILD_SHARED_LIBS OR NOT FERRY_CUDA_ENABLED)
    list(APPEND _disabled -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON)
  endif()
  _ferry_pkg_project(package.find.torch "${_ferry_pkg_components_src}"
    "${_ferry_pkg_root}/find-torch" ${_ferry_pkg_find_options} ${_disabled}
    "-DFERRY_COMPONENTS=ferry,torch")
  set_tests_properties(package.find.torch PROPERTIES FIXTURES_REQUIRED ferry_pkg_installed)
  _ferry_pkg_project(package.build_tree.torch "${_ferry_pkg_components_src}"
    "${_ferry_pkg_root}/build-tree-torch" ${_ferry_pkg_options} "-DCMAKE_BUILD_TYPE=$<CONFIG>"
    "-Dferry_DIR=${PROJECT_BINARY_DIR}" "-DFERRY_EXPECTED_PREFIX=${PROJECT_BINARY_DIR}"
    ${_disabled} "-DFERRY_COMPONENTS=ferry,torch")
  set_tests_properties(package.build_tree.torch PROPERTIES FIXTURES_REQUIRED ferry_pkg_clean)
endif()

# A component no ferry has: find_package fails and says which. CMake wraps the message it
# prints at spaces, so the expected words may be a line apart.
set(_ferry_pkg_sp "[ \n]+")
add_test(NAME package.find.unknown_component
  COMMAND ${CMAKE_COMMAND} -S "${_ferry_pkg_components_src}"
          -B "${_ferry_pkg_root}/find-unknown" ${_ferry_pkg_generator_args}
          ${_ferry_pkg_find_options} -DFERRY_COMPONENTS=ferry,nccl)
set_tests_properties(package.find.unknown_component PROPERTIES
  LABELS "package" TIMEOUT 120 FIXTURES_REQUIRED ferry_pkg_installed
  FAIL_REGULAR_EXPRESSION "Configuring done" PASS_REGULAR_EXPRESSION "ferry${_ferry_pkg_sp}has${_ferry_pkg_sp}no${_ferry_pkg_sp}component${_ferry_pkg_sp}'nccl'")

# This build folder's own export: find_package(ferry) with -Dferry_DIR=<build>, nothing installed.
set(_ferry_pkg_tree_components ferry)
if(FERRY_IMAGE)
  list(APPEND _ferry_pkg_tree_components image)
endif()
string(REPLACE ";" "," _ferry_pkg_tree_components "${_ferry_pkg_tree_components}")
_ferry_pkg_project(package.build_tree "${_ferry_pkg_components_src}"
  "${_ferry_pkg_root}/build-tree" ${_ferry_pkg_options} "-DCMAKE_BUILD_TYPE=$<CONFIG>"
  "-Dferry_DIR=${PROJECT_BINARY_DIR}" "-DFERRY_EXPECTED_PREFIX=${PROJECT_BINARY_DIR}"
  "-DFERRY_COMPONENTS=${_ferry_pkg_tree_components}")
set_tests_properties(package.build_tree PROPERTIES FIXTURES_REQUIRED ferry_pkg_clean)

# ferry inside another project's build (tests/package/subproject/). add_subdirectory with no build
# type (ferry must not set one for its parent; nothing is optimised) builds and runs core_app
# only; FetchContent, with this build's build type, builds and runs the engine's app too. The
# flags are then this build's, so with a compiler launcher (setup.sh's ccache) its compiles are
# this build's objects again: one unoptimised rebuild of ferry's core here, not of the engine.
add_test(NAME package.subdirectory
  COMMAND ${CMAKE_CTEST_COMMAND} --build-and-test "${CMAKE_CURRENT_LIST_DIR}/subproject"
          "${_ferry_pkg_root}/subdirectory"
          --build-generator "${CMAKE_GENERATOR}"
          --build-makeprogram "${CMAKE_MAKE_PROGRAM}"
          --build-target core_app
          --build-options ${_ferry_pkg_sub_options}
                          "-DFERRY_SOURCE_DIR=${PROJECT_SOURCE_DIR}" -DFERRY_HOW=add_subdirectory
          --test-command ${CMAKE_CTEST_COMMAND} --output-on-failure --no-tests=error
                         -R "^core_app$")
_ferry_pkg_project(package.fetchcontent "${CMAKE_CURRENT_LIST_DIR}/subproject"
  "${_ferry_pkg_root}/fetchcontent" ${_ferry_pkg_sub_options} "-DCMAKE_BUILD_TYPE=$<CONFIG>"
  "-DFERRY_SOURCE_DIR=${PROJECT_SOURCE_DIR}" -DFERRY_HOW=fetchcontent
  -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
set_tests_properties(package.subdirectory PROPERTIES LABELS "package")
set_tests_properties(package.subdirectory package.fetchcontent PROPERTIES
  FIXTURES_REQUIRED ferry_pkg_clean TIMEOUT 900)
set_tests_properties(package.subdirectory PROPERTIES FIXTURES_SETUP ferry_pkg_minimal)

# That minimal ferry's build-tree export, asked for a component it was built without: find_package
# fails and says which, and how to build it.
add_test(NAME package.find.not_built
  COMMAND ${CMAKE_COMMAND} -S "${_ferry_pkg_components_src}"
          -B "${_ferry_pkg_root}/find-not-built" ${_ferry_pkg_generator_args}
          ${_ferry_pkg_options} "-Dferry_DIR=${_ferry_pkg_root}/subdirectory/ferry"
          -DFERRY_COMPONENTS=ferry,image)
set_tests_properties(package.find.not_built PROPERTIES
  LABELS "package" TIMEOUT 120 FIXTURES_REQUIRED ferry_pkg_minimal
  FAIL_REGULAR_EXPRESSION "Configuring done" PASS_REGULAR_EXPRESSION "built${_ferry_pkg_sp}without${_ferry_pkg_sp}component${_ferry_pkg_sp}'image'${_ferry_pkg_sp}\\(configure${_ferry_pkg_sp}ferry${_ferry_pkg_sp}with${_ferry_pkg_sp}FERRY_IMAGE=ON\\)")

include(${CMAKE_CURRENT_LIST_DIR}/pkgconfig.cmake)  # pkg-config: .pc files, plain command lines
include(${CMAKE_CURRENT_LIST_DIR}/deb.cmake)        # cpack -G DEB: Depends and contents
