# SPDX-License-Identifier: Apache-2.0
# Finds what the Python package's module (python/, ferry._ferry) is built with: a Python 3
# interpreter with its headers (Debian: python3-dev) and pybind11's CMake package (Debian:
# pybind11-dev). Name the interpreter the package is for with -DPython3_EXECUTABLE=...
# (setup.sh: Debian's /usr/bin/python3, which has numpy and torch); otherwise FindPython3 takes
# the first python3 it finds. Python3 is found before pybind11 so that pybind11 uses it
# (its "FindPython mode"). Used by python/CMakeLists.txt only: nothing installed reads it.
include_guard(GLOBAL)
include("${CMAKE_CURRENT_LIST_DIR}/ferry-dependency.cmake")

find_package(Python3 3.8 QUIET COMPONENTS Interpreter Development.Module)
if(NOT Python3_FOUND)
  ferry_dependency_missing(python "a Python 3 interpreter and its headers (Debian: python3-dev)")
else()
  find_package(pybind11 2.6 CONFIG QUIET)
  if(NOT pybind11_FOUND)
    ferry_dependency_missing(python "pybind11's CMake package (Debian: pybind11-dev)")
  endif()
endif()
