# SPDX-License-Identifier: Apache-2.0
# The .deb test (included from package_test.cmake): package.deb runs `cpack -G DEB` on this build
# tree and checks the packages' Depends and contents with dpkg-deb (deb/check_deb.cmake).
# Registered for shared builds only: the runtime package ships the shared libraries, and a
# static build's single libferry-dev package (libferry*.a) is not what a Debian user installs.
# Needs dpkg-deb (Debian's dpkg); the Depends come from dpkg-shlibdeps (dpkg-dev) where it is
# installed.

get_target_property(_ferry_deb_type ferry TYPE)
find_program(FERRY_DPKG_DEB_EXECUTABLE dpkg-deb)
mark_as_advanced(FERRY_DPKG_DEB_EXECUTABLE)
if(_ferry_deb_type STREQUAL "SHARED_LIBRARY" AND FERRY_DPKG_DEB_EXECUTABLE)
  get_target_property(_ferry_deb_soversion ferry SOVERSION)
  set(_ferry_deb_components "")
  foreach(_c IN ITEMS image video http shards mpi torch)
    if(TARGET ferry_${_c})
      list(APPEND _ferry_deb_components ${_c})
    endif()
  endforeach()
  add_test(NAME package.deb
    COMMAND ${CMAKE_COMMAND} "-DCPACK=${CMAKE_CPACK_COMMAND}"
            "-DDPKG_DEB=${FERRY_DPKG_DEB_EXECUTABLE}" "-DBUILD_DIR=${PROJECT_BINARY_DIR}"
            "-DOUT_DIR=${_ferry_pkg_root}/deb" "-DVERSION=${PROJECT_VERSION}"
            "-DSOVERSION=${_ferry_deb_soversion}" "-DLIBDIR=${CMAKE_INSTALL_LIBDIR}"
            "-DCOMPONENTS=${_ferry_deb_components}"
            -P "${CMAKE_CURRENT_LIST_DIR}/deb/check_deb.cmake")
  set_tests_properties(package.deb PROPERTIES LABELS "package;deb" TIMEOUT 300)
endif()
