# SPDX-License-Identifier: Apache-2.0
# How ferry's optional libraries are decided and declared (included from CMakeLists.txt). Each
# ops/<name>/CMakeLists.txt declares its library with ferry_add_component(); the top level says,
# per component, ferry_component(<name> ...), which decides whether it is built and only then
# adds ops/<name>/.

# What the deps files call for a dependency they do not find (cmake/ferry-dependency.cmake),
# beside them in the build tree's and the installed package.
configure_file(${CMAKE_CURRENT_LIST_DIR}/ferry-dependency.cmake
               ${PROJECT_BINARY_DIR}/ferry-dependency.cmake COPYONLY)
if(FERRY_INSTALL)
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/ferry-dependency.cmake
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry COMPONENT dev)
endif()

# ferry_add_component(<name> SOURCES ... [LIBS ...] [DEPS_FILE file]): the optional library
# ferry::<name> (target ferry_<name>) on top of ferry::core (not the engine: an op is a plain
# function that knows nothing of the graph), a ferry_library() in its own export set
# ferry-<name>-targets.cmake, installed with the rest (and its deps file, which
# ferryConfig.cmake includes when the component is asked for).
function(ferry_add_component name)
  cmake_parse_arguments(C "" "DEPS_FILE" "SOURCES;LIBS" ${ARGN})
  add_library(ferry_${name} ${C_SOURCES})
  add_library(ferry::${name} ALIAS ferry_${name})
  target_link_libraries(ferry_${name} PUBLIC ferry_core PRIVATE ${C_LIBS})
  ferry_library(ferry_${name} ${name} ferry-${name}-targets)
  if(C_DEPS_FILE)
    # Beside the build tree's ferryConfig.cmake too (find_package against a build folder).
    get_filename_component(_deps_name ${C_DEPS_FILE} NAME)
    configure_file(${C_DEPS_FILE} ${PROJECT_BINARY_DIR}/${_deps_name} COPYONLY)
    if(FERRY_INSTALL)
      install(FILES ${C_DEPS_FILE} DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/ferry COMPONENT dev)
    endif()
  endif()
endfunction()

# ferry_tristate(<option> <out>): the option's value as AUTO, ON or OFF (TRUE/YES/1 and
# FALSE/NO/0 accepted, any case); anything else stops the configuration.
function(ferry_tristate option out)
  string(TOUPPER "${${option}}" v)
  if(v STREQUAL "AUTO")
    set(${out} AUTO PARENT_SCOPE)
  elseif(v MATCHES "^(ON|TRUE|YES|1)$")
    set(${out} ON PARENT_SCOPE)
  elseif(v MATCHES "^(OFF|FALSE|NO|0)$")
    set(${out} OFF PARENT_SCOPE)
  else()
    message(FATAL_ERROR "${option} must be AUTO, ON or OFF (got '${${option}}')")
  endif()
endfunction()

# ferry_component(<name> OPTION <FERRY_X> DEPS_FILE <file>): decides ferry::<name> once, the same
# way for every component, and adds ops/<name>/ when it is built. FERRY_<X>_ENABLED says which.
#   ON (or a plain option that is on): the deps file finds what the library links; a missing
#        dependency stops the configuration, naming the package to install.
#   AUTO: the same deps file, asked only (FERRY_PROBING_DEPENDENCIES): a missing dependency
#        leaves the component out, and a status line says which and why.
#   OFF: nothing is looked for.
# A macro, not a function: the imported targets and version variables the deps file's
# find_package() calls make stay visible to the whole build (tests, examples, messages).
macro(ferry_component name)
  cmake_parse_arguments(_FC "" "OPTION;DEPS_FILE" "" ${ARGN})
  ferry_tristate(${_FC_OPTION} _fc_mode)
  set(${_FC_OPTION}_ENABLED OFF)
  if(_fc_mode STREQUAL "AUTO")
    set(FERRY_PROBING_DEPENDENCIES ON)
    set(FERRY_MISSING_DEPENDENCY "")
    include(${_FC_DEPS_FILE})
    unset(FERRY_PROBING_DEPENDENCIES)
    if(FERRY_MISSING_DEPENDENCY)
      message(STATUS "ferry::${name}: not built: it needs ${FERRY_MISSING_DEPENDENCY}")
    else()
      set(${_FC_OPTION}_ENABLED ON)
    endif()
  elseif(_fc_mode STREQUAL "ON")
    include(${_FC_DEPS_FILE})
    set(${_FC_OPTION}_ENABLED ON)
  endif()
  if(${_FC_OPTION}_ENABLED)
    add_subdirectory(${PROJECT_SOURCE_DIR}/ops/${name} ${PROJECT_BINARY_DIR}/ops/${name})
  endif()
endmacro()
