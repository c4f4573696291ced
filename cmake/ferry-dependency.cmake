# SPDX-License-Identifier: Apache-2.0
# ferry_dependency_missing(<component> <what>): what a deps file (ferry-<component>-deps.cmake)
# calls for a dependency it did not find. While ferry's own build decides an AUTO option
# (FERRY_PROBING_DEPENDENCIES, see ferry-components.cmake) the dependency is recorded in
# FERRY_MISSING_DEPENDENCY and the component is left out; anywhere else (the option ON, or a
# project's find_package(ferry COMPONENTS <component>)) it stops the configuration, naming what
# to install. Installed beside the deps files.
include_guard(GLOBAL)

macro(ferry_dependency_missing component what)
  if(FERRY_PROBING_DEPENDENCIES)
    list(APPEND FERRY_MISSING_DEPENDENCY "${what}")
  else()
    message(FATAL_ERROR "ferry::${component} needs ${what}")
  endif()
endmacro()
