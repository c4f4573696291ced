# SPDX-License-Identifier: Apache-2.0
# vcpkg overlay port for ferry, kept in ferry's own tree and built from it:
#   vcpkg install ferry --overlay-ports=<ferry>/cmake/vcpkg/ports
# A port for a registry would fetch a release instead (vcpkg_from_github with REF and SHA512);
# everything after SOURCE_PATH stays as it is. tests/package/recipes/ reads the FEATURES map and
# the OPTIONS below and builds ferry with exactly those, so keep both literal.
cmake_path(SET SOURCE_PATH NORMALIZE "${CURRENT_PORT_DIR}/../../../..")

# Each feature turns its FERRY_* option ON, its absence OFF: vcpkg never leaves HTTP, shards,
# CUDA or libtorch to ferry's AUTO detection, so a build depends only on the features asked for.
# ferry::mpi has no feature yet: always off.
vcpkg_check_features(OUT_FEATURE_OPTIONS FEATURE_OPTIONS
    FEATURES
        image FERRY_IMAGE
        video FERRY_VIDEO
        http  FERRY_HTTP
        shards FERRY_SHARDS
        cuda  FERRY_CUDA
        torch FERRY_TORCH
)

if("video" IN_LIST FEATURES)
    # ferry finds FFmpeg with pkg-config, at build time and again in ferryConfig.cmake.
    vcpkg_find_acquire_program(PKGCONFIG)
    set(ENV{PKG_CONFIG} "${PKGCONFIG}")
endif()

vcpkg_cmake_configure(
    SOURCE_PATH "${SOURCE_PATH}"
    OPTIONS
        ${FEATURE_OPTIONS}
        -DFERRY_MPI=OFF
        # The Python package is not part of the C++ package (a port of its own could be).
        -DFERRY_PYTHON=OFF
        -DFERRY_BUILD_TESTS=OFF
        -DFERRY_BUILD_EXAMPLES=OFF
        -DFERRY_BUILD_PERF=OFF
)
vcpkg_cmake_install()
vcpkg_cmake_config_fixup(CONFIG_PATH lib/cmake/ferry)
vcpkg_copy_pdbs()
if(EXISTS "${CURRENT_PACKAGES_DIR}/lib/pkgconfig")
    vcpkg_fixup_pkgconfig()
endif()

file(REMOVE_RECURSE "${CURRENT_PACKAGES_DIR}/debug/include" "${CURRENT_PACKAGES_DIR}/debug/share")
file(INSTALL "${CMAKE_CURRENT_LIST_DIR}/usage" DESTINATION "${CURRENT_PACKAGES_DIR}/share/${PORT}")
vcpkg_install_copyright(FILE_LIST "${SOURCE_PATH}/LICENSE")
