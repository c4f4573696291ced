# SPDX-License-Identifier: Apache-2.0
# Finds what ferry::image links: libjpeg-turbo's libjpeg API, libpng, libwebp and
# OpenCV's core and imgproc modules. Debian's per-module OpenCV packages (libopencv-imgproc-dev,
# ...) ship no OpenCVConfig.cmake (only the full libopencv-dev does), so OpenCV is found by its
# headers and libraries here and wrapped in imported targets:
#   libjpeg-turbo::jpeg (where libjpeg-turbo's own CMake package does not define it),
#   ferry_deps::opencv_core, ferry_deps::opencv_imgproc, ferry_deps::opencv_imgcodecs (if
#   present; tests only), ferry_deps::webp
# Used by ferry's own build and by the installed ferryConfig.cmake (static builds).
include_guard(GLOBAL)

# JPEG decoding (whole images, regions with jpeg_crop_scanline and jpeg_skip_scanlines, DCT
# scaling) uses libjpeg-turbo's libjpeg API, 2.1 or later, and not its TurboJPEG API. Its CMake
# package where there is one (vcpkg, Conan, a source build; Debian ships it only with
# libturbojpeg0-dev, which ferry does not need), else pkg-config's libjpeg (Debian:
# libjpeg62-turbo-dev).
find_package(libjpeg-turbo 2.1 CONFIG QUIET)
if(NOT TARGET libjpeg-turbo::jpeg AND TARGET libjpeg-turbo::jpeg-static)
  # vcpkg's static triplets name the static library only.
  add_library(libjpeg-turbo::jpeg INTERFACE IMPORTED)
  set_property(TARGET libjpeg-turbo::jpeg PROPERTY
    INTERFACE_LINK_LIBRARIES libjpeg-turbo::jpeg-static)
endif()
if(NOT TARGET libjpeg-turbo::jpeg)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(FERRY_LIBJPEG QUIET IMPORTED_TARGET "libjpeg >= 2.1")
  endif()
  if(NOT TARGET PkgConfig::FERRY_LIBJPEG)
    message(FATAL_ERROR "ferry::image needs libjpeg-turbo's libjpeg, 2.1 or later "
                        "(Debian: libjpeg62-turbo-dev; `bash setup.sh deps`)")
  endif()
  add_library(libjpeg-turbo::jpeg INTERFACE IMPORTED)
  set_property(TARGET libjpeg-turbo::jpeg PROPERTY
    INTERFACE_LINK_LIBRARIES PkgConfig::FERRY_LIBJPEG)
endif()
find_package(PNG 1.6 REQUIRED)

find_path(FERRY_OPENCV_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4)
find_path(FERRY_WEBP_INCLUDE_DIR webp/decode.h)
find_library(FERRY_WEBP_LIBRARY webp)
if(NOT FERRY_WEBP_INCLUDE_DIR OR NOT FERRY_WEBP_LIBRARY)
  message(FATAL_ERROR "ferry::image needs libwebp (Debian: libwebp-dev; `bash setup.sh deps`)")
endif()
if(NOT TARGET ferry_deps::webp)
  add_library(ferry_deps::webp UNKNOWN IMPORTED)
  set_target_properties(ferry_deps::webp PROPERTIES
    IMPORTED_LOCATION "${FERRY_WEBP_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${FERRY_WEBP_INCLUDE_DIR}")
endif()

foreach(_module core imgproc imgcodecs)
  find_library(FERRY_OPENCV_${_module}_LIBRARY opencv_${_module})
  if(FERRY_OPENCV_INCLUDE_DIR AND FERRY_OPENCV_${_module}_LIBRARY
     AND NOT TARGET ferry_deps::opencv_${_module})
    add_library(ferry_deps::opencv_${_module} UNKNOWN IMPORTED)
    set_target_properties(ferry_deps::opencv_${_module} PROPERTIES
      IMPORTED_LOCATION "${FERRY_OPENCV_${_module}_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${FERRY_OPENCV_INCLUDE_DIR}")
  endif()
endforeach()
if(NOT TARGET ferry_deps::opencv_core OR NOT TARGET ferry_deps::opencv_imgproc)
  message(FATAL_ERROR
    "ferry::image needs OpenCV core and imgproc (Debian: libopencv-imgproc-dev; `bash setup.sh deps`)")
endif()
set_property(TARGET ferry_deps::opencv_imgproc APPEND PROPERTY
  INTERFACE_LINK_LIBRARIES ferry_deps::opencv_core)
if(TARGET ferry_deps::opencv_imgcodecs)
  set_property(TARGET ferry_deps::opencv_imgcodecs APPEND PROPERTY
    INTERFACE_LINK_LIBRARIES ferry_deps::opencv_imgproc)
endif()
