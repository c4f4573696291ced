# SPDX-License-Identifier: Apache-2.0
# The pkg-config tests (included from package_test.cmake, whose variables they use): after
# package.install, check the installed .pc files and build and run small programs against them
# with a plain compiler command line (pkgconfig/check_pkgconfig.cmake):
#   package.pkgconfig.files   exactly ferry-core, ferry, ferry-cuda and the components built
#   package.pkgconfig.ferry   a pipeline (main.cpp) with `pkg-config ferry`
#   package.pkgconfig.image   decode_image (image_main.cpp) with `pkg-config ferry-image`
#   package.pkgconfig.video   demux_video (pkgconfig/video_main.cpp) with `pkg-config ferry-video`
#   package.pkgconfig.http    read_url over file:// (http_main.cpp) with `pkg-config ferry-http`
#   package.pkgconfig.shards  tar_samples over a tar it writes (shards_main.cpp), `pkg-config ferry-shards`
#   package.pkgconfig.mpi     a one-rank MPI session (mpi_main.cpp) with `pkg-config ferry-mpi`
#   package.pkgconfig.torch   to_torch and back (pkgconfig/torch_main.cpp), `pkg-config ferry-torch`
#                             (libtorch's include folders and -D flags come from ferry-torch.pc)
# A static build links with `pkg-config --static` (every private dependency must be listed), a
# shared one without.

find_program(FERRY_PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf)
mark_as_advanced(FERRY_PKG_CONFIG_EXECUTABLE)
if(BUILD_SHARED_LIBS)
  set(_ferry_pc_static OFF)
else()
  set(_ferry_pc_static ON)
endif()
set(_ferry_pc_args
  "-DPKG_CONFIG=${FERRY_PKG_CONFIG_EXECUTABLE}"
  "-DPREFIX=${_ferry_pkg_prefix}"
  "-DLIBDIR=${CMAKE_INSTALL_LIBDIR}"
  "-DSTATIC=${_ferry_pc_static}")

set(_ferry_pc_modules ferry-core ferry ferry-cuda)
foreach(_c IN ITEMS image video http shards mpi torch)
  if(TARGET ferry_${_c})
    list(APPEND _ferry_pc_modules ferry-${_c})
  endif()
endforeach()
add_test(NAME package.pkgconfig.files
  COMMAND ${CMAKE_COMMAND} ${_ferry_pc_args} -DMODE=files "-DEXPECT=${_ferry_pc_modules}"
          "-DVERSION=${PROJECT_VERSION}" -P "${CMAKE_CURRENT_LIST_DIR}/pkgconfig/check_pkgconfig.cmake")
set(_ferry_pc_tests package.pkgconfig.files)

# _ferry_pc_program(<name> <module> <source>): package.pkgconfig.<name>.
function(_ferry_pc_program name module source)
  add_test(NAME package.pkgconfig.${name}
    COMMAND ${CMAKE_COMMAND} ${_ferry_pc_args} -DMODE=program "-DMODULE=${module}"
            "-DSOURCE=${CMAKE_CURRENT_FUNCTION_LIST_DIR}/${source}"
            "-DCXX=${CMAKE_CXX_COMPILER}"
            "-DCXX_FLAGS=${_ferry_pkg_cxx_flags}" "-DLINK_FLAGS=${_ferry_pkg_link_flags}"
            "-DWORK_DIR=${_ferry_pkg_root}/pkgconfig-${name}"
            -P "${CMAKE_CURRENT_FUNCTION_LIST_DIR}/pkgconfig/check_pkgconfig.cmake")
  set(_ferry_pc_tests ${_ferry_pc_tests} package.pkgconfig.${name} PARENT_SCOPE)
endfunction()
_ferry_pc_program(ferry ferry main.cpp)
if(TARGET ferry_image)
  _ferry_pc_program(image ferry-image image_main.cpp)
endif()
if(TARGET ferry_video)
  _ferry_pc_program(video ferry-video pkgconfig/video_main.cpp)
endif()
if(TARGET ferry_http)
  _ferry_pc_program(http ferry-http http_main.cpp)
endif()
if(TARGET ferry_shards)
  _ferry_pc_program(shards ferry-shards shards_main.cpp)
endif()
if(TARGET ferry_mpi)
  _ferry_pc_program(mpi ferry-mpi mpi_main.cpp)
endif()
if(TARGET ferry_torch)
  _ferry_pc_program(torch ferry-torch pkgconfig/torch_main.cpp)
endif()
set_tests_properties(${_ferry_pc_tests} PROPERTIES
  FIXTURES_REQUIRED ferry_pkg_installed LABELS "package;pkgconfig" TIMEOUT 300)
