# SPDX-License-Identifier: Apache-2.0
# Debian packages from CPack, included from CMakeLists.txt's install section. In the build
# folder:
#
#   cpack -G DEB     ->  libferry0_<version>_<arch>.deb     the shared libraries (COMPONENT runtime)
#                        libferry-dev_<version>_<arch>.deb  headers, CMake config, .pc files and
#                                                           the .so links or static libs (dev)
#   apt install ./libferry0_*.deb ./libferry-dev_*.deb
#
# A static build (the default) makes libferry-dev alone: there is no shared library to ship.
# libferry0's Depends come from dpkg-shlibdeps (dpkg-dev) where it exists, else from the list
# below; libferry-dev depends on libferry0 of the same version and on the -dev packages that
# ferryConfig.cmake's find_dependency calls need. The packages install under /usr
# (CPACK_PACKAGING_INSTALL_PREFIX); configure with -DCMAKE_INSTALL_PREFIX=/usr to get Debian's
# multiarch library folder (lib/x86_64-linux-gnu) instead of lib/.
include_guard(GLOBAL)

set(CPACK_PACKAGE_NAME ferry)
set(CPACK_PACKAGE_VENDOR ferry)
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
if(NOT DEFINED CPACK_PACKAGE_CONTACT)
  # The Maintainer field; a distributor passes -DCPACK_PACKAGE_CONTACT="Name <email>".
  set(CPACK_PACKAGE_CONTACT "ferry maintainers")
endif()
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # <package>_<version>_<arch>.deb
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)

get_target_property(_ferry_deb_type ferry TYPE)
get_target_property(_ferry_deb_soversion ferry SOVERSION)
set(_ferry_deb_runtime "libferry${_ferry_deb_soversion}")

# What each part needs at run time, by Debian 12's package names: libferry0's Depends where
# dpkg-shlibdeps is missing. (ferry::cuda's libcudart is in no list: NVIDIA's toolkit is often
# not a Debian package; where it is, dpkg-shlibdeps names it.)
set(_ferry_deb_run_depends libc6 libstdc++6 libgcc-s1 libtbb12)
# The -dev packages a consumer's find_package(ferry) needs (ferryConfig.cmake and the
# ferry-*-deps.cmake files it includes), the same for static and shared builds.
set(_ferry_deb_dev_depends libtbb-dev)
if(TARGET ferry_image)
  list(APPEND _ferry_deb_run_depends libjpeg62-turbo libpng16-16 libwebp7
    libopencv-imgproc406 libopencv-core406)
  list(APPEND _ferry_deb_dev_depends "libjpeg62-turbo-dev | libjpeg-dev" libpng-dev libwebp-dev
    libopencv-imgproc-dev)
endif()
if(TARGET ferry_video)
  list(APPEND _ferry_deb_run_depends libavformat59 libavcodec59 libswscale6 libswresample4
    libavutil57)
  # ferry-video-deps.cmake finds FFmpeg through pkg-config.
  list(APPEND _ferry_deb_dev_depends "pkgconf | pkg-config" libavformat-dev libavcodec-dev
    libswscale-dev libswresample-dev libavutil-dev)
endif()
if(TARGET ferry_http)
  list(APPEND _ferry_deb_run_depends libcurl4 libexpat1 "libssl3 | libssl3t64")
  list(APPEND _ferry_deb_dev_depends "libcurl4-openssl-dev | libcurl-dev" libexpat1-dev libssl-dev)
endif()
if(TARGET ferry_shards)
  list(APPEND _ferry_deb_run_depends libarchive13)
  list(APPEND _ferry_deb_dev_depends libarchive-dev)
endif()
if(TARGET ferry_mpi)
  # Open MPI, Debian's default MPI (mpi-default-dev would also admit MPICH, which a libferry_mpi
  # built against Open MPI's libmpi.so.40 does not run with).
  list(APPEND _ferry_deb_run_depends libopenmpi3)
  list(APPEND _ferry_deb_dev_depends libopenmpi-dev)
endif()
if(TARGET ferry_torch)
  # Debian names libtorch's runtime package by its version (libtorch1.13 holds libtorch.so.1.13,
  # libc10.so.1.13, ...; dpkg-shlibdeps finds it through that package's shlibs). libferry-dev
  # Depends on libtorch-dev, not Suggests it: ferry/torch.hpp includes libtorch's headers and
  # find_package(ferry COMPONENTS torch) reads TorchConfig.cmake, both from libtorch-dev, as
  # the other components need their -dev packages.
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _ferry_deb_torch "${Torch_VERSION}")
  if(_ferry_deb_torch)
    list(APPEND _ferry_deb_run_depends "libtorch${_ferry_deb_torch}")
  endif()
  list(APPEND _ferry_deb_dev_depends libtorch-dev)
endif()

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libferry-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
# The first line of each Description is CPACK_PACKAGE_DESCRIPTION_SUMMARY.
set(CPACK_DEBIAN_DEV_DESCRIPTION "Development files: the headers, the CMake package
 (find_package(ferry)), the pkg-config files (ferry.pc, ferry-<component>.pc) and the
 libraries to link.")
if(_ferry_deb_type STREQUAL "SHARED_LIBRARY")
  set(CPACK_COMPONENTS_ALL runtime dev)
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME "${_ferry_deb_runtime}")
  set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
  set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "Shared libraries: the engine (libferry), the value
 types (libferry_core) and the components built (libferry_image, ...).")
  find_program(FERRY_DPKG_SHLIBDEPS dpkg-shlibdeps)
  mark_as_advanced(FERRY_DPKG_SHLIBDEPS)
  if(FERRY_DPKG_SHLIBDEPS)
    set(CPACK_DEBIAN_RUNTIME_PACKAGE_SHLIBDEPS ON)
  else()
    list(JOIN _ferry_deb_run_depends ", " CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS)
  endif()
  # A shlibs file, so packages built against libferry0 depend on it; "=" because a 0.x minor
  # release may change the ABI.
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
  set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
  list(PREPEND _ferry_deb_dev_depends "${_ferry_deb_runtime} (= ${PROJECT_VERSION})")
else()
  set(CPACK_COMPONENTS_ALL dev)
endif()
list(JOIN _ferry_deb_dev_depends ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS)

include(CPack)
