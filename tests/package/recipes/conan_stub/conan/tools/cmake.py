# SPDX-License-Identifier: Apache-2.0
"""conan.tools.cmake: CMakeToolchain and CMakeDeps record what generate() gives them; the
CMake build helper and cmake_layout are no-ops (the test runs CMake itself)."""

import conan


class CMakeToolchain:
    def __init__(self, conanfile, generator=None):
        self.cache_variables = {}
        self.variables = {}
        self.preprocessor_definitions = {}

    def generate(self):
        conan.recorded["cache_variables"].update(self.cache_variables)
        conan.recorded["variables"].update(self.variables)
        conan.recorded["generators"].append("CMakeToolchain")


class CMakeDeps:
    def __init__(self, conanfile):
        self._properties = {}

    def set_property(self, dep, prop, value):
        self._properties[(dep, prop)] = value

    def generate(self):
        conan.recorded["deps_properties"].update(self._properties)
        conan.recorded["generators"].append("CMakeDeps")


class CMake:
    def __init__(self, conanfile):
        pass

    def configure(self, *args, **kwargs):
        pass

    def build(self, *args, **kwargs):
        pass

    def install(self, *args, **kwargs):
        pass


def cmake_layout(conanfile, *args, **kwargs):
    pass
