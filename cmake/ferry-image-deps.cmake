# SPDX-License-Identifier: Apache-2.0
# Finds what ferry::image links: libjpeg-turbo (TurboJPEG and libjpeg APIs), libpng, libwebp and
# OpenCV's core and imgproc modules. Debian's per-module OpenCV packages (libopencv-imgproc-dev,
# ...) ship no OpenCVConfig.cmake (only the full libopencv-dev does), so OpenCV is found by its
# headers and libraries here and wrapped in imported targets:
#   ferry_deps::opencv_core, ferry_deps::opencv_imgproc, ferry_deps::opencv_imgcodecs (if
#   present; tests only), ferry_deps::webp
# Used by ferry's own build and by the installed ferryConfig.cmake (static builds).
include_guard(GLOBAL)

find_package(libjpeg-turbo 2.1 CONFIG REQUIRED)
# Whole images decode through the TurboJPEG API, regions (decode_options::crop) through the
# libjpeg API (jpeg_crop_scanline, jpeg_skip_scanlines), which libturbojpeg does not export:
# ferry::image links both (Debian: libturbojpeg0-dev and libjpeg62-turbo-dev).
if(NOT TARGET libjpeg-turbo::jpeg OR NOT TARGET libjpeg-turbo::turbojpeg)
  message(FATAL_ERROR "ferry::image needs libjpeg-turbo's libjpeg and TurboJPEG libraries "
                      "(Debian: libjpeg62-turbo-dev and libturbojpeg0-dev; `bash setup.sh deps`)")
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
