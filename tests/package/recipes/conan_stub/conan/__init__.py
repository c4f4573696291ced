# SPDX-License-Identifier: Apache-2.0
"""A stand-in for Conan 2's `conan` module, enough to load ferry's conanfile.py and run its
configure, validate, requirements, generate and package_info steps outside Conan.

Conan cannot be installed on ferry's test machines. tests/package/recipes/read_recipe.py imports
the recipe with this module first on sys.path and reads what those steps record (the cache
variables CMakeToolchain would write, the requirements, the components), so ferry's test builds
with exactly what the recipe says. Only what ferry's recipe uses is here; anything else fails
loudly with AttributeError rather than being guessed."""

from conan.errors import ConanException

# What the recipe's steps hand to Conan's generators, filled in as they run.
recorded = {"cache_variables": {}, "variables": {}, "deps_properties": {}, "generators": []}


class _Options:
    """Recipe options: attribute access, `del`, rm_safe and get_safe, as in Conan."""

    def __init__(self, values):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name not in values:
            raise ConanException(f"option '{name}' doesn't exist")
        return values[name]

    def __setattr__(self, name, value):
        self._values[name] = value

    def __delattr__(self, name):
        del self._values[name]

    def rm_safe(self, name):
        self._values.pop(name, None)

    def get_safe(self, name, default=None):
        return self._values.get(name, default)

    def items(self):
        return self._values.items()


class _Settings:
    """Settings as dotted names ('compiler.cppstd'); attributes give the top-level values."""

    def __init__(self, values):
        object.__setattr__(self, "_values", dict(values))

    def __getattr__(self, name):
        return object.__getattribute__(self, "_values").get(name)

    def get_safe(self, name, default=None):
        return self._values.get(name, default)


class _Component:
    def __init__(self):
        self.libs = []
        self.requires = []
        self.system_libs = []
        self.properties = {}

    def set_property(self, name, value):
        self.properties[name] = value


class _CppInfo(_Component):
    def __init__(self):
        super().__init__()
        self.components = _Components()


class _Components(dict):
    def __missing__(self, name):
        self[name] = _Component()
        return self[name]


class _Output:
    def info(self, msg):
        pass

    warning = warn = info


class ConanFile:
    """The base class: holds settings, options and what requirements() asks for."""

    def __init__(self, settings, options, recipe_folder):
        self.settings = _Settings(settings)
        values = dict(getattr(type(self), "default_options", {}))
        for name, value in options.items():
            if name not in getattr(type(self), "options", {}):
                raise ConanException(f"option '{name}' doesn't exist in {type(self).__name__}")
            values[name] = value
        self.options = _Options(values)
        self.recipe_folder = recipe_folder
        self.source_folder = recipe_folder
        self.cpp_info = _CppInfo()
        self.output = _Output()
        self.conf = {}
        self.requirements_list = []
        self.ref = f"{getattr(self, 'name', 'pkg')}/{getattr(self, 'version', None)}"

    def requires(self, ref, **traits):
        self.requirements_list.append((ref, traits))
