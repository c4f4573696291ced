# SPDX-License-Identifier: Apache-2.0
# Finds what ferry::video links: FFmpeg's libavformat, libavcodec, libswscale, libswresample and
# libavutil (5.1 or newer: the AVChannelLayout API), through pkg-config as imported targets:
#   PkgConfig::FERRY_FFMPEG
# Used by ferry's own build and by the installed ferryConfig.cmake (static builds).
include_guard(GLOBAL)

find_package(PkgConfig REQUIRED)
if(NOT TARGET PkgConfig::FERRY_FFMPEG)
  pkg_check_modules(FERRY_FFMPEG QUIET IMPORTED_TARGET GLOBAL
    libavformat>=59.27 libavcodec>=59.37 libswscale>=6.7 libswresample>=4.7 libavutil>=57.28)
  if(NOT FERRY_FFMPEG_FOUND)
    message(FATAL_ERROR "ferry::video needs FFmpeg 5.1 or newer: libavformat, libavcodec, "
      "libswscale, libswresample, libavutil (Debian: libavformat-dev libavcodec-dev "
      "libswscale-dev libswresample-dev libavutil-dev; `bash setup.sh deps`)")
  endif()
endif()
