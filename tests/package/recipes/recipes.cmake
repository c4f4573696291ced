# SPDX-License-Identifier: Apache-2.0
# The recipe tests (included from tests/CMakeLists.txt): ferry built, installed and
# consumed with exactly the options cmake/vcpkg/ports/ferry/ and conanfile.py pass, read from
# those files (read_recipe.py, with a stand-in `conan` module for conanfile.py), since neither
# vcpkg nor Conan can be installed here. Each build is from this source tree into
# package-test/recipes/; labels "package" and "recipes". The vcpkg build is static or shared as
# this build is (x64-linux, vcpkg's default triplet, is static); the Conan build is always
# shared=True, so that one build folder covers both linkages and a shared-library pass
# (setup.sh's FERRY_SHARED=1) need not rebuild ferry twice more.
#   package.recipes.vcpkg                      the port's default features (image, video)
#   package.recipes.conan                      conanfile.py with video=False, http=False, shared=True
#   package.recipes.catches_misspelled_option  a port passing FERRY_VIDOE must fail
#   package.recipes.catches_auto_option        a port leaving FERRY_MPI to AUTO must fail
#   package.recipes.conan_requires_cxx20       validate() must reject compiler.cppstd=17
find_package(Python3 3.8 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "package.recipes.*: no Python 3.8+, the recipe tests are not added")
  return()
endif()

set(_ferry_recipes_dir "${CMAKE_CURRENT_LIST_DIR}")
set(_ferry_recipes_work "${PROJECT_BINARY_DIR}/package-test/recipes")
set(_ferry_recipes_build_args --generator "${CMAKE_GENERATOR}" --cxx "${CMAKE_CXX_COMPILER}")
if(CMAKE_CXX_COMPILER_LAUNCHER)
  list(APPEND _ferry_recipes_build_args --launcher "${CMAKE_CXX_COMPILER_LAUNCHER}")
endif()
set(_ferry_recipes_shared "")
if(BUILD_SHARED_LIBS)
  set(_ferry_recipes_shared --shared)  # a dynamic triplet, shared=True
endif()
set(_ferry_recipes_builder "${_ferry_recipes_dir}/build_with_recipe.py")
set(_ferry_recipes_port "${PROJECT_SOURCE_DIR}/cmake/vcpkg/ports/ferry")
set(_ferry_recipes_conanfile "${PROJECT_SOURCE_DIR}/conanfile.py")

add_test(NAME package.recipes.vcpkg
  COMMAND ${Python3_EXECUTABLE} "${_ferry_recipes_builder}" ${_ferry_recipes_build_args}
          --work "${_ferry_recipes_work}/vcpkg"
          -- vcpkg "${_ferry_recipes_port}" --features default ${_ferry_recipes_shared})
add_test(NAME package.recipes.conan
  COMMAND ${Python3_EXECUTABLE} "${_ferry_recipes_builder}" ${_ferry_recipes_build_args}
          --work "${_ferry_recipes_work}/conan"
          -- conan "${_ferry_recipes_conanfile}" -o video=False -o http=False --shared)
# The guard itself: CMake only warns about a -D variable nobody reads, so without the check a
# recipe that misspells an option would build ferry with that option's default, silently.
add_test(NAME package.recipes.catches_misspelled_option
  COMMAND ${Python3_EXECUTABLE} "${_ferry_recipes_builder}" ${_ferry_recipes_build_args}
          --work "${_ferry_recipes_work}/misspelled" --configure-only
          --replace "video FERRY_VIDEO=video FERRY_VIDOE"
          -- vcpkg "${_ferry_recipes_port}" --features image ${_ferry_recipes_shared})
set_tests_properties(package.recipes.catches_misspelled_option PROPERTIES
  PASS_REGULAR_EXPRESSION "passes FERRY_VIDOE, which ferry's CMakeLists.txt does not use")
# And a recipe must decide every AUTO option (FERRY_HTTP, FERRY_TORCH, ...): one it does not pass
# (here FERRY_MPI, renamed away) would make the package hold whatever the build machine has.
add_test(NAME package.recipes.catches_auto_option
  COMMAND ${Python3_EXECUTABLE} "${_ferry_recipes_builder}" ${_ferry_recipes_build_args}
          --work "${_ferry_recipes_work}/auto" --configure-only
          "--replace=-DFERRY_MPI=-DFERRY_NOT_MPI"
          -- vcpkg "${_ferry_recipes_port}" --features image ${_ferry_recipes_shared})
set_tests_properties(package.recipes.catches_auto_option PROPERTIES
  PASS_REGULAR_EXPRESSION "leaves FERRY_MPI to ferry's AUTO detection")
add_test(NAME package.recipes.conan_requires_cxx20
  COMMAND ${Python3_EXECUTABLE} "${_ferry_recipes_dir}/read_recipe.py"
          conan "${_ferry_recipes_conanfile}" -s compiler.cppstd=17)
set_tests_properties(package.recipes.conan_requires_cxx20 PROPERTIES
  PASS_REGULAR_EXPRESSION "ConanInvalidConfiguration: .*lower than the required C\\+\\+ standard \\(20\\)")

set_tests_properties(package.recipes.vcpkg package.recipes.conan
  package.recipes.catches_misspelled_option package.recipes.catches_auto_option
  package.recipes.conan_requires_cxx20 PROPERTIES
  LABELS "package;recipes" TIMEOUT 1500)
