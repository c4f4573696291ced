#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Builds ferry with exactly the options a recipe passes, installs it, and builds and runs the
recipe's consumer against that install: what `vcpkg install ferry[...]` and `conan create .`
would do, without vcpkg or Conan (neither can be installed on ferry's test machines).

  build_with_recipe.py --work DIR [--configure-only] -- vcpkg cmake/vcpkg/ports/ferry --features default
  build_with_recipe.py --work DIR -- conan conanfile.py -o video=False -o http=False

After `--` come read_recipe.py's arguments. The consumer is, for Conan, the test package
(tests/package/conan/, also checking that every target package_info() names exists), for vcpkg
a project made of the port's `usage` snippet and the test package's main.cpp. Fails when the
recipe leaves one of ferry's AUTO options (FERRY_HTTP, FERRY_TORCH, ...) unset or AUTO (the
package would then hold whatever the build machine has), when ferry's configure warns that a
FERRY_* variable the recipe passes is not used (a misspelled or removed option, which CMake
otherwise only warns about), when the installed libraries are not
the ones the options ask for, or when the consumer does not build or its pipeline is wrong."""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

# Run from the source tree: leave no __pycache__ there.
sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import read_recipe  # noqa: E402


def fail(msg):
    print(f"build_with_recipe.py: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


def run(cmd, **kwargs):
    print("+ " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          **kwargs)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        fail(f"{os.path.basename(cmd[0])} exited with {proc.returncode}")
    return proc.stdout


def unused_variables(configure_output):
    """The names under CMake's 'Manually-specified variables were not used by the project:'."""
    match = re.search(r"Manually-specified variables were not used by the project:\n\n"
                      r"((?:    \S+\n)+)", configure_output)
    return match.group(1).split() if match else []


def auto_options():
    """ferry's AUTO|ON|OFF options, from CMakeLists.txt: set(FERRY_X AUTO CACHE STRING ...)."""
    with open(os.path.join(SOURCE, "CMakeLists.txt"), encoding="utf-8") as f:
        return re.findall(r"^set\((FERRY_\w+) AUTO CACHE STRING", f.read(), re.M)


def undecided_options(recipe):
    """The AUTO options the recipe does not pass as ON or OFF."""
    values = dict(a[2:].split("=", 1) for a in recipe["cmake_args"])
    return [o for o in auto_options()
            if values.get(o, "AUTO").upper() not in ("ON", "OFF", "TRUE", "FALSE", "1", "0")]


def installed_ferry_libs(prefix):
    libs = set()
    for libdir in ("lib", "lib64"):
        folder = os.path.join(prefix, libdir)
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            m = re.fullmatch(r"lib(ferry(?:_\w+)?)\.(?:a|so)", name)
            if m:
                libs.add(m.group(1))
    return libs


def expected_libs(recipe):
    """The libraries the recipe's FERRY_* options ask for (CMake's defaults where it says none)."""
    values = dict(a[2:].split("=", 1) for a in recipe["cmake_args"])
    libs = {"ferry_core", "ferry", "ferry_cuda"}  # always built
    for option, lib in (("FERRY_IMAGE", "ferry_image"), ("FERRY_VIDEO", "ferry_video"),
                        ("FERRY_HTTP", "ferry_http"), ("FERRY_SHARDS", "ferry_shards"),
                        ("FERRY_MPI", "ferry_mpi"), ("FERRY_TORCH", "ferry_torch")):
        if values.get(option, "ON").upper() in ("ON", "TRUE", "1", "YES"):
            libs.add(lib)
    return libs


def vcpkg_consumer(port_dir, folder):
    """A consumer project from the port's usage file: its CMake lines, verbatim, on `main`."""
    with open(os.path.join(port_dir, "usage"), encoding="utf-8") as f:
        snippet = [line.strip() for line in f if line.startswith("  ") and "(" in line]
    if not any(line.startswith("find_package(ferry") for line in snippet):
        fail(f"{port_dir}/usage shows no find_package(ferry ...)")
    os.makedirs(folder)
    shutil.copy(os.path.join(SOURCE, "tests", "package", "conan", "main.cpp"), folder)
    with open(os.path.join(folder, "CMakeLists.txt"), "w", encoding="utf-8") as f:
        f.write("cmake_minimum_required(VERSION 3.25)\nproject(vcpkg_usage LANGUAGES CXX)\n"
                "add_executable(main main.cpp)\n" + "\n".join(snippet) + "\n")
    return folder, "main"


def main(argv):
    if "--" not in argv:
        fail("usage: build_with_recipe.py [options] -- <read_recipe.py arguments>")
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", required=True, help="folder for the build, prefix and consumer")
    parser.add_argument("--generator", default="Ninja")
    parser.add_argument("--cxx", help="C++ compiler")
    parser.add_argument("--launcher", help="compiler launcher (ccache)")
    parser.add_argument("--configure-only", action="store_true")
    parser.add_argument("--replace", metavar="OLD=NEW",
                        help="vcpkg: read a copy of the port with OLD replaced by NEW (the test "
                             "that a misspelled option fails)")
    args = parser.parse_args(argv[:split])
    recipe_args = argv[split + 1:]
    work = os.path.abspath(args.work)
    shutil.rmtree(work, ignore_errors=True)
    if args.replace:
        old, new = args.replace.split("=", 1)
        copy = os.path.join(work, "port")
        shutil.copytree(recipe_args[1], copy)
        with open(os.path.join(copy, "portfile.cmake"), encoding="utf-8") as f:
            text = f.read()
        if old not in text:
            fail(f"{old} is not in {recipe_args[1]}/portfile.cmake")
        with open(os.path.join(copy, "portfile.cmake"), "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))
        recipe_args[1] = copy

    # read_recipe prints JSON and exits 1 with its message on a recipe it cannot follow.
    proc = subprocess.run([sys.executable, os.path.join(HERE, "read_recipe.py")] + recipe_args,
                          stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        fail("the recipe could not be read (above)")
    recipe = json.loads(proc.stdout)
    print(f"{recipe['recipe']} recipe passes: {' '.join(recipe['cmake_args'])}", flush=True)
    if not auto_options():
        fail("found no `set(FERRY_<X> AUTO CACHE STRING` in CMakeLists.txt: the check is blind")
    undecided = undecided_options(recipe)
    if undecided:
        fail(f"the {recipe['recipe']} recipe leaves {', '.join(undecided)} to ferry's AUTO "
             "detection: pass each as ON or OFF (a feature or option, or OFF)")

    build, prefix = os.path.join(work, "build"), os.path.join(work, "prefix")
    tools = ["-G", args.generator]
    if args.cxx:
        tools.append(f"-DCMAKE_CXX_COMPILER={args.cxx}")
    if args.launcher:
        tools.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={args.launcher}")

    out = run(["cmake", "-S", SOURCE, "-B", build, f"-DCMAKE_INSTALL_PREFIX={prefix}"] + tools +
              recipe["cmake_args"])
    ours = [v for v in unused_variables(out) if v.startswith("FERRY_")]
    if ours:
        fail(f"the {recipe['recipe']} recipe passes {', '.join(ours)}, which ferry's "
             "CMakeLists.txt does not use (a misspelled or removed option?)")
    if args.configure_only:
        print("build_with_recipe.py: configure OK")
        return 0
    run(["cmake", "--build", build])
    run(["cmake", "--install", build])

    got, want = installed_ferry_libs(prefix), expected_libs(recipe)
    if got != want:
        fail(f"installed libraries {sorted(got)}, but the recipe's options ask for {sorted(want)}")
    if recipe["recipe"] == "conan" and set(recipe["libs"]) != got:
        fail(f"package_info() names the libraries {recipe['libs']}, the install has {sorted(got)}")

    if recipe["recipe"] == "conan":
        consumer_src, exe = os.path.join(SOURCE, "tests", "package", "conan"), "test_package"
        extra = ["-DFERRY_EXPECT_TARGETS=" + ";".join(recipe["targets"])]
    else:
        consumer_src, exe = vcpkg_consumer(recipe_args[1], os.path.join(work, "consumer-src"))
        extra = []
    consumer = os.path.join(work, "consumer")
    run(["cmake", "-S", consumer_src, "-B", consumer, f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON",
         "-DCMAKE_FIND_PACKAGE_NO_SYSTEM_PACKAGE_REGISTRY=ON"] + tools + extra)
    with open(os.path.join(consumer, "CMakeCache.txt"), encoding="utf-8") as f:
        found = re.search(r"^ferry_DIR:PATH=(.*)$", f.read(), re.M).group(1)
    if not os.path.abspath(found).startswith(prefix + os.sep):
        fail(f"the consumer found ferry in {found}, not in {prefix}")
    run(["cmake", "--build", consumer])
    run([os.path.join(consumer, exe)])
    print(f"build_with_recipe.py: {recipe['recipe']} OK")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
