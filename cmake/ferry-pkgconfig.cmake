# SPDX-License-Identifier: Apache-2.0
# pkg-config files for an installed ferry, included from CMakeLists.txt's install section:
# ferry-core.pc (the value types), ferry.pc (the engine) and one ferry-<component>.pc per
# component this build made, into ${CMAKE_INSTALL_LIBDIR}/pkgconfig (COMPONENT dev).
#
#   c++ -std=c++20 main.cpp $(pkg-config --cflags --libs ferry)           # shared build
#   c++ -std=c++20 main.cpp $(pkg-config --static --cflags --libs ferry)  # static build
#
# A file lists what the libraries of *this* install need. A static library's own dependencies
# go in Libs.private, which `pkg-config --static` adds; a shared library names them itself
# (DT_NEEDED), so its file lists none. The dependencies are named by their pkg-config modules
# (Debian's names: tbb, libjpeg, libcurl, ...), but written as those modules' Libs,
# resolved here, not as Requires.private: under --static, pkg-config would follow
# Requires.private into each dependency's own Libs.private (libcurl's -lpsl -lgssapi_krb5 ...,
# FFmpeg's codecs), asking for a fully static link and -dev packages that a static libferry,
# which links the system's shared libcurl like ferry's own build does, does not need (and
# pkgconf resolves Requires.private even for --cflags). ferry's headers include none of those
# libraries, so no dependency adds Cflags, but for ferry-torch.pc: ferry/torch.hpp exists to
# expose libtorch, whose headers and libraries every user of it needs (Cflags and Libs, below).
# The prefix is ${pcfiledir}-relative: the installed
# tree can move (cmake --install --prefix, a .deb under /usr) and the files stay right.
include_guard(GLOBAL)

set(_ferry_pc_dest "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(FERRY_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(FERRY_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  # A dummy root: only the number of folders between the .pc and the prefix matters.
  file(RELATIVE_PATH _ferry_pc_up "/ferry-prefix/${_ferry_pc_dest}" "/ferry-prefix")
  string(REGEX REPLACE "/$" "" _ferry_pc_up "${_ferry_pc_up}")
  set(FERRY_PC_PREFIX "\${pcfiledir}/${_ferry_pc_up}")
  set(FERRY_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(FERRY_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(FERRY_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()

# _ferry_pc_link_flags(<out> <library file>...): -L<dir> (left out for the compiler's own
# search folders) and -l<name> for each library file, for Libs.private of a dependency that has
# no .pc file.
function(_ferry_pc_link_flags out)
  set(flags "")
  foreach(lib IN LISTS ARGN)
    cmake_path(GET lib PARENT_PATH dir)
    cmake_path(GET lib FILENAME name)
    string(REGEX REPLACE "^lib" "" name "${name}")
    string(REGEX REPLACE "\\.(so|a)(\\..*)?$" "" name "${name}")
    if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
      list(APPEND flags "-L${dir}")
    endif()
    list(APPEND flags "-l${name}")
  endforeach()
  list(REMOVE_DUPLICATES flags)
  list(JOIN flags " " flags)
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# _ferry_pc_module_libs(<out> <module>...): the modules' Libs (pkg-config --libs, not --static),
# as a list of flags; stops the configuration when a module is missing, since the .pc would
# not link.
function(_ferry_pc_module_libs out)
  find_package(PkgConfig QUIET)
  if(NOT PKG_CONFIG_FOUND)
    message(FATAL_ERROR "a static ferry's pkg-config files need pkg-config to resolve "
      "${ARGN} (Debian: pkgconf; `bash setup.sh deps`)")
  endif()
  string(MAKE_C_IDENTIFIER "_ferry_pc_${ARGN}" var)
  pkg_check_modules(${var} QUIET ${ARGN})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR "pkg-config did not find ${ARGN}, which a static ferry's .pc files name")
  endif()
  set(flags "")
  foreach(f IN LISTS ${var}_LDFLAGS)
    # FindPkgConfig keeps the system's -L; the compiler searches there anyway.
    string(REGEX REPLACE "^-L" "" dir "${f}")
    if(NOT (f MATCHES "^-L" AND dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES))
      list(APPEND flags "${f}")
    endif()
  endforeach()
  set(${out} ${flags} PARENT_SCOPE)
endfunction()

# ferry_pkgconfig_file(<name> TARGET <target> DESCRIPTION <text> [REQUIRES <module>...]
#                      [CFLAGS <flag>...] [LIBS <flag>...] [STATIC_REQUIRES <module>...]
#                      [STATIC_MODULES <module>...] [STATIC_LIBS <flag>...] [NOTE <text>])
# Writes and installs <name>.pc for <target>. REQUIRES, CFLAGS and LIBS are public (what the
# target's INTERFACE needs; they may hold generator expressions); STATIC_REQUIRES (ferry's own
# modules), STATIC_MODULES (other pkg-config modules, resolved to their Libs) and STATIC_LIBS
# are the target's private dependencies, written as Requires.private and Libs.private only
# where the target is a static library.
function(ferry_pkgconfig_file name)
  cmake_parse_arguments(PC "" "TARGET;DESCRIPTION;NOTE"
    "REQUIRES;CFLAGS;LIBS;STATIC_REQUIRES;STATIC_MODULES;STATIC_LIBS" ${ARGN})
  set(FERRY_PC_NAME "${name}")
  set(FERRY_PC_TARGET "${PC_TARGET}")
  set(FERRY_PC_DESCRIPTION "${PC_DESCRIPTION}")
  set(FERRY_PC_NOTE "")
  if(PC_NOTE)
    set(FERRY_PC_NOTE "\n# ${PC_NOTE}")
  endif()
  get_target_property(type ${PC_TARGET} TYPE)
  if(type STREQUAL "STATIC_LIBRARY")
    set(FERRY_PC_LINKAGE "static")
  else()
    set(FERRY_PC_LINKAGE "shared")
    unset(PC_STATIC_REQUIRES)
    unset(PC_STATIC_MODULES)
    unset(PC_STATIC_LIBS)
  endif()
  if(PC_STATIC_MODULES)
    _ferry_pc_module_libs(module_libs ${PC_STATIC_MODULES})
    list(PREPEND PC_STATIC_LIBS ${module_libs})
    list(JOIN PC_STATIC_MODULES ", " v)
    string(APPEND FERRY_PC_NOTE "\n# Libs.private holds the Libs of these modules (a fully static link"
      " also needs\n# theirs: pkg-config --static --libs <module>):\n#   ${v}")
  endif()
  set(FERRY_PC_FIELDS "")
  if(PC_REQUIRES)
    list(JOIN PC_REQUIRES ", " v)
    string(APPEND FERRY_PC_FIELDS "Requires: ${v}\n")
  endif()
  if(PC_STATIC_REQUIRES)
    list(JOIN PC_STATIC_REQUIRES ", " v)
    string(APPEND FERRY_PC_FIELDS "Requires.private: ${v}\n")
  endif()
  if(PC_STATIC_LIBS)
    list(JOIN PC_STATIC_LIBS " " v)
    string(APPEND FERRY_PC_FIELDS "Libs.private: ${v}\n")
  endif()
  set(FERRY_PC_CFLAGS "")
  if(PC_CFLAGS)
    list(JOIN PC_CFLAGS "" v)
    set(FERRY_PC_CFLAGS "${v}")
  endif()
  set(FERRY_PC_LIBS "")
  if(PC_LIBS)
    list(JOIN PC_LIBS " " v)
    set(FERRY_PC_LIBS " ${v}")
  endif()
  # Two passes: configure_file for the @variables@, file(GENERATE) for the library's file name
  # ($<TARGET_LINKER_FILE_BASE_NAME>: libferry_core.a -> ferry_core, whatever OUTPUT_NAME says).
  configure_file("${CMAKE_CURRENT_FUNCTION_LIST_DIR}/pkgconfig/ferry.pc.in"
    "${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc.in" @ONLY)
  file(GENERATE OUTPUT "${PROJECT_BINARY_DIR}/pkgconfig/$<CONFIG>/${name}.pc"
    INPUT "${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc.in")
  install(FILES "${PROJECT_BINARY_DIR}/pkgconfig/$<CONFIG>/${name}.pc"
    DESTINATION "${_ferry_pc_dest}" COMPONENT dev)
endfunction()

ferry_pkgconfig_file(ferry-core TARGET ferry_core
  DESCRIPTION "ferry's value types: errors, bytes, tensors, host memory")
ferry_pkgconfig_file(ferry TARGET ferry
  DESCRIPTION "ferry, C++20 data loading for ML training: the pipeline engine"
  REQUIRES "ferry-core = ${PROJECT_VERSION}"
  LIBS ${CMAKE_THREAD_LIBS_INIT}
  STATIC_MODULES "tbb >= 2021")

if(TARGET ferry_image)
  # Debian's per-module OpenCV packages (libopencv-imgproc-dev) ship no opencv4.pc (only the full
  # libopencv-dev does, and it lists every module): the two libraries by file.
  _ferry_pc_link_flags(_ferry_pc_opencv
    "${FERRY_OPENCV_imgproc_LIBRARY}" "${FERRY_OPENCV_core_LIBRARY}")
  ferry_pkgconfig_file(ferry-image TARGET ferry_image
    DESCRIPTION "ferry's image decode and transforms (ferry::image)"
    REQUIRES "ferry-core = ${PROJECT_VERSION}"
    STATIC_MODULES "libjpeg >= 2.1" "libpng >= 1.6" "libwebp"
    STATIC_LIBS "${_ferry_pc_opencv}")
endif()

if(TARGET ferry_video)
  # The versions cmake/ferry-video-deps.cmake asks for (FFmpeg 5.1).
  ferry_pkgconfig_file(ferry-video TARGET ferry_video
    DESCRIPTION "ferry's video and audio decode on FFmpeg (ferry::video)"
    REQUIRES "ferry-core = ${PROJECT_VERSION}"
    STATIC_MODULES "libavformat >= 59.27" "libavcodec >= 59.37" "libswscale >= 6.7"
                    "libswresample >= 4.7" "libavutil >= 57.28")
endif()

if(TARGET ferry_http)
  ferry_pkgconfig_file(ferry-http TARGET ferry_http
    DESCRIPTION "ferry's read_url over HTTP(S) on libcurl (ferry::http)"
    REQUIRES "ferry-core = ${PROJECT_VERSION}"
    STATIC_MODULES "libcurl >= 7.68" "expat >= 2.2" "libcrypto >= 1.1.1")
endif()

if(TARGET ferry_shards)
  ferry_pkgconfig_file(ferry-shards TARGET ferry_shards
    DESCRIPTION "ferry's tar shards in the WebDataset layout on libarchive (ferry::shards)"
    REQUIRES "ferry-core = ${PROJECT_VERSION}"
    STATIC_MODULES "libarchive >= 3.3")
endif()

if(TARGET ferry_mpi)
  # MPI implementations name their .pc files differently (ompi-cxx, mpich): libmpi by file.
  _ferry_pc_link_flags(_ferry_pc_mpi ${MPI_CXX_LIBRARIES})
  ferry_pkgconfig_file(ferry-mpi TARGET ferry_mpi
    DESCRIPTION "ferry's ranks over MPI: session, world, agree_seed, gather_states (ferry::mpi)"
    REQUIRES "ferry-core = ${PROJECT_VERSION}"
    STATIC_LIBS "${_ferry_pc_mpi}"
    NOTE "MPI has no one .pc name: Libs.private names the MPI library ferry was built with.")
endif()

# ferry::cuda always exists (without CUDA, a stub whose to_cuda() fails at build()). The CUDA
# runtime has no .pc file on Debian (nor in NVIDIA's toolkit): a static libferry_cuda.a lists
# -lcudart with the toolkit's library folder it was built against.
if(FERRY_CUDA_ENABLED)
  ferry_pkgconfig_file(ferry-cuda TARGET ferry_cuda
    DESCRIPTION "ferry's CUDA transfer, device tensors and pools (ferry::cuda, CUDA ${CUDAToolkit_VERSION})"
    REQUIRES "ferry-core = ${PROJECT_VERSION}"
    STATIC_LIBS "-L${CUDAToolkit_LIBRARY_DIR}" "-lcudart"
    NOTE "The CUDA runtime has no .pc file: Libs.private names libcudart by folder.")
else()
  ferry_pkgconfig_file(ferry-cuda TARGET ferry_cuda
    DESCRIPTION "ferry's CUDA transfer (ferry::cuda), built without CUDA: to_cuda() fails at build()"
    REQUIRES "ferry-core = ${PROJECT_VERSION}")
endif()

# ferry::torch. ferry/torch.hpp includes libtorch's headers and its users call libtorch, so
# ferry-torch.pc gives libtorch's Cflags and Libs as its own (public, static or shared).
# libtorch ships no .pc file (neither Debian's libtorch-dev nor PyTorch's libtorch zip), only
# TorchConfig.cmake, and Debian's headers need -I<prefix>/include/torch/csrc/api/include and
# -D_GLIBCXX_USE_CXX11_ABI=1: what the `torch` target asks of a CMake user is written here,
# resolved when ferry is configured. Cflags: its include folders (less the compiler's own),
# compile definitions and options, transitively (generator expressions evaluated by
# file(GENERATE)); Libs: libtorch, libtorch_cpu and libc10 by file, the libraries its headers'
# inline code and users' code call. A static libferry_torch.a also needs libferry_cuda
# (Requires.private: ferry-cuda) and, where libtorch has CUDA, libc10_cuda.
if(TARGET ferry_torch)
  # CMake's INTERFACE_INCLUDE_DIRECTORIES repeats /usr/include as /usr/lib/../include: normalise,
  # then drop the compiler's own folders (pkg-config would not, and -I/usr/include breaks
  # #include_next in libstdc++).
  set(_ferry_pc_implicit "")
  foreach(_d IN LISTS CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
    string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" _d "${_d}")
    list(APPEND _ferry_pc_implicit "${_d}")
  endforeach()
  list(JOIN _ferry_pc_implicit "|" _ferry_pc_implicit)
  set(_inc "$<PATH:NORMAL_PATH,$<TARGET_PROPERTY:torch,INTERFACE_INCLUDE_DIRECTORIES>>")
  set(_inc "$<FILTER:$<REMOVE_DUPLICATES:${_inc}>,EXCLUDE,^(${_ferry_pc_implicit})/?$>")
  set(_defs "$<REMOVE_DUPLICATES:$<TARGET_PROPERTY:torch,INTERFACE_COMPILE_DEFINITIONS>>")
  set(_opts "$<REMOVE_DUPLICATES:$<TARGET_PROPERTY:torch,INTERFACE_COMPILE_OPTIONS>>")
  set(_ferry_pc_torch_cflags
    "$<$<BOOL:${_inc}>: -I$<JOIN:${_inc}, -I>>"
    "$<$<BOOL:${_defs}>: -D$<JOIN:${_defs}, -D>>"
    "$<$<BOOL:${_opts}>: $<JOIN:${_opts}, >>")
  # _ferry_pc_imported_file(<out> <target>): an imported library's file, whatever configuration
  # its package was built in (Debian's libtorch: RelWithDebInfo).
  function(_ferry_pc_imported_file out target)
    get_target_property(file ${target} IMPORTED_LOCATION)
    if(NOT file)
      get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
      list(GET configs 0 config)
      get_target_property(file ${target} IMPORTED_LOCATION_${config})
    endif()
    if(NOT file)
      message(FATAL_ERROR "ferry-torch.pc: no library file for libtorch's target ${target}")
    endif()
    set(${out} "${file}" PARENT_SCOPE)
  endfunction()
  set(_ferry_pc_torch_files "")
  foreach(_t IN ITEMS torch torch_cpu c10)
    _ferry_pc_imported_file(_f ${_t})
    list(APPEND _ferry_pc_torch_files "${_f}")
  endforeach()
  _ferry_pc_link_flags(_ferry_pc_torch_libs ${_ferry_pc_torch_files})
  set(_ferry_pc_torch_private "")
  if(TARGET c10_cuda)
    _ferry_pc_imported_file(_f c10_cuda)
    _ferry_pc_link_flags(_ferry_pc_torch_private "${_f}")
  endif()
  ferry_pkgconfig_file(ferry-torch TARGET ferry_torch
    DESCRIPTION "ferry's to_torch and from_torch with libtorch ${Torch_VERSION} (ferry::torch)"
    REQUIRES "ferry-core = ${PROJECT_VERSION}"
    CFLAGS ${_ferry_pc_torch_cflags}
    LIBS "${_ferry_pc_torch_libs}"
    STATIC_REQUIRES "ferry-cuda = ${PROJECT_VERSION}"
    STATIC_LIBS "${_ferry_pc_torch_private}"
    NOTE "libtorch has no .pc file: Cflags and Libs are its CMake target's, resolved when ferry was configured.")
endif()
