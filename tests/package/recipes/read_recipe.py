#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads ferry's vcpkg port and Conan recipe the way vcpkg and Conan would, and says which CMake
cache variables each passes to ferry's build for a given set of features or options.

  read_recipe.py vcpkg cmake/vcpkg/ports/ferry [--features image,video | default] [--shared]
  read_recipe.py conan conanfile.py [-o video=False ...] [-s compiler.cppstd=20] [--shared]

Prints JSON: "cmake_args" (the -D arguments), and for Conan the package_info() components
("targets", "libs"). Fails (exit 1, a message on stderr) on a recipe it cannot follow literally
or that contradicts itself: a vcpkg feature in the FEATURES map but not in vcpkg.json (or the
reverse), a Conan component requiring a package requirements() does not ask for, validate()
rejecting the configuration. vcpkg and Conan cannot be installed on ferry's test machines; see
cmake/README.md ("vcpkg and Conan") for what this does and does not stand in for."""

import argparse
import importlib.util
import json
import os
import re
import sys

# Run from the source tree: leave no __pycache__ there.
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))


class RecipeError(Exception):
    pass


# --- vcpkg -------------------------------------------------------------------------------------

def _cmake_tokens(text):
    """CMake arguments of a file, comments dropped: words, "quoted strings", ( and )."""
    text = re.sub(r"#[^\n]*", "", text)  # ferry's portfile has no '#' inside a string
    return [t.strip('"') for t in re.findall(r'"[^"]*"|[()]|[^\s()"]+', text)]


def _call_args(tokens, command):
    """The argument tokens of the one call to `command`."""
    starts = [i for i, t in enumerate(tokens) if t == command and tokens[i + 1] == "("]
    if len(starts) != 1:
        raise RecipeError(f"portfile.cmake: expected one {command}() call, found {len(starts)}")
    args, depth = [], 0
    for t in tokens[starts[0] + 1:]:
        depth += {"(": 1, ")": -1}.get(t, 0)
        if depth == 0:
            return args[1:]
        args.append(t)
    raise RecipeError(f"portfile.cmake: unterminated {command}()")


def _keyword_section(args, keyword, keywords):
    if keyword not in args:
        return []
    out = []
    for t in args[args.index(keyword) + 1:]:
        if t in keywords:
            break
        out.append(t)
    return out


CHECK_FEATURES_KEYWORDS = {"OUT_FEATURE_OPTIONS", "PREFIX", "FEATURES", "INVERTED_FEATURES"}
CONFIGURE_KEYWORDS = {"SOURCE_PATH", "OPTIONS", "OPTIONS_RELEASE", "OPTIONS_DEBUG",
                      "MAYBE_UNUSED_VARIABLES", "GENERATOR", "LOGFILE_BASE", "WINDOWS_USE_MSBUILD",
                      "NO_CHARSET_FLAG", "DISABLE_PARALLEL_CONFIGURE", "Z_CMAKE_GET_VARS_USAGE"}


def read_vcpkg(port_dir, features, shared):
    with open(os.path.join(port_dir, "vcpkg.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    with open(os.path.join(port_dir, "portfile.cmake"), encoding="utf-8") as f:
        tokens = _cmake_tokens(f.read())

    check = _call_args(tokens, "vcpkg_check_features")
    out_var = _keyword_section(check, "OUT_FEATURE_OPTIONS", CHECK_FEATURES_KEYWORDS)
    pairs = _keyword_section(check, "FEATURES", CHECK_FEATURES_KEYWORDS)
    inverted = _keyword_section(check, "INVERTED_FEATURES", CHECK_FEATURES_KEYWORDS)
    if len(out_var) != 1 or len(pairs) % 2 or len(inverted) % 2:
        raise RecipeError("portfile.cmake: vcpkg_check_features() needs OUT_FEATURE_OPTIONS <var> "
                          "and FEATURES given as <feature> <variable> pairs")
    mapping = [(f, v, False) for f, v in zip(pairs[::2], pairs[1::2])]
    mapping += [(f, v, True) for f, v in zip(inverted[::2], inverted[1::2])]

    declared = set(manifest.get("features", {}))
    mapped = {f for f, _, _ in mapping}
    if declared != mapped:
        raise RecipeError("vcpkg.json's features and portfile.cmake's FEATURES map differ: "
                          f"only in vcpkg.json {sorted(declared - mapped)}, "
                          f"only in portfile.cmake {sorted(mapped - declared)}")
    if features == ["default"]:
        features = list(manifest.get("default-features", []))
    unknown = set(features) - declared
    if unknown:
        raise RecipeError(f"no such vcpkg feature: {sorted(unknown)}")

    feature_options = [f"-D{var}={'OFF' if (f in features) == inv else 'ON'}"
                       for f, var, inv in mapping]
    configure = _call_args(tokens, "vcpkg_cmake_configure")
    options = []
    for t in (_keyword_section(configure, "OPTIONS", CONFIGURE_KEYWORDS) +
              _keyword_section(configure, "OPTIONS_RELEASE", CONFIGURE_KEYWORDS)):
        if t == "${" + out_var[0] + "}":
            options += feature_options
        elif "${" in t:
            raise RecipeError(f"portfile.cmake: the test follows literal OPTIONS only, not {t}")
        else:
            options.append(t)
    # What vcpkg_cmake_configure adds for a Linux triplet's release build.
    options += ["-DCMAKE_BUILD_TYPE=Release",
                f"-DBUILD_SHARED_LIBS={'ON' if shared else 'OFF'}"]
    return {"recipe": "vcpkg", "version": manifest["version"], "features": sorted(features),
            "cmake_args": options}


# --- Conan -------------------------------------------------------------------------------------

def _cmake_value(value):
    if isinstance(value, bool):
        return "ON" if value else "OFF"
    return str(value)


def _parse_value(text):
    return {"True": True, "False": False}.get(text, text)


def read_conan(conanfile_path, options, settings):
    sys.path.insert(0, os.path.join(HERE, "conan_stub"))
    import conan  # the stub, first on sys.path
    from conan.errors import ConanException

    spec = importlib.util.spec_from_file_location("ferry_conanfile", conanfile_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    recipes = [c for c in vars(module).values()
               if isinstance(c, type) and issubclass(c, conan.ConanFile) and c is not conan.ConanFile]
    if len(recipes) != 1:
        raise RecipeError(f"{conanfile_path}: expected one ConanFile class, found {len(recipes)}")

    recipe = recipes[0](settings, options, os.path.dirname(os.path.abspath(conanfile_path)))
    try:
        # The order `conan create` calls them in.
        if hasattr(recipe, "set_version"):
            recipe.set_version()
        recipe.ref = f"{recipe.name}/{recipe.version}"
        for step in ("config_options", "configure", "layout", "requirements", "validate",
                     "generate", "package_info"):
            if hasattr(recipe, step):
                getattr(recipe, step)()
    except ConanException as e:
        raise RecipeError(f"conanfile.py: {type(e).__name__}: {e}")

    required = {ref.split("/")[0] for ref, _ in recipe.requirements_list}
    components = recipe.cpp_info.components
    for name, comp in components.items():
        for req in comp.requires:
            dep = req.split("::")[0] if "::" in req else None
            if dep is not None and dep not in required:
                raise RecipeError(f"conanfile.py: component '{name}' requires {req}, "
                                  f"but requirements() does not ask for {dep}")
            if dep is None and req not in components:
                raise RecipeError(f"conanfile.py: component '{name}' requires '{req}', "
                                  "which is no component")

    variables = dict(conan.recorded["variables"])
    variables.update(conan.recorded["cache_variables"])
    # What CMakeToolchain itself adds: the build type (single-config generators), shared, fPIC.
    variables["CMAKE_BUILD_TYPE"] = recipe.settings.build_type or "Release"
    shared = recipe.options.get_safe("shared")
    if shared is not None:
        variables["BUILD_SHARED_LIBS"] = bool(shared)
    if recipe.options.get_safe("fPIC") is not None:
        variables["CMAKE_POSITION_INDEPENDENT_CODE"] = bool(recipe.options.fPIC)
    return {
        "recipe": "conan",
        "version": recipe.version,
        "options": {k: _cmake_value(v) for k, v in recipe.options.items()},
        "cmake_args": [f"-D{k}={_cmake_value(v)}" for k, v in variables.items()],
        "generators": conan.recorded["generators"],
        "targets": sorted({c.properties.get("cmake_target_name", f"ferry::{n}")
                           for n, c in components.items()}),
        "libs": sorted({lib for c in components.values() for lib in c.libs}),
    }


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recipe", choices=["vcpkg", "conan"])
    parser.add_argument("path", help="the port folder (vcpkg) or conanfile.py (Conan)")
    parser.add_argument("--features", default="default",
                        help="vcpkg: comma-separated features, or 'default'")
    parser.add_argument("-o", dest="options", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("-s", dest="settings", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--shared", action="store_true", help="a dynamic triplet / shared=True")
    args = parser.parse_args(argv)
    try:
        if args.recipe == "vcpkg":
            features = [f for f in args.features.split(",") if f]
            result = read_vcpkg(args.path, features, args.shared)
        else:
            settings = {"os": "Linux", "arch": "x86_64", "compiler": "gcc",
                        "compiler.cppstd": "20", "build_type": "Release"}
            settings.update(dict(s.split("=", 1) for s in args.settings))
            options = {k: _parse_value(v) for k, v in (o.split("=", 1) for o in args.options)}
            options.setdefault("shared", args.shared)
            result = read_conan(args.path, options, settings)
    except RecipeError as e:
        print(f"read_recipe.py: {e}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
