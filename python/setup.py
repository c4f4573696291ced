# SPDX-License-Identifier: Apache-2.0
"""pip's way in: builds ferry's C++ tree with CMake and installs the package `ferry` as
`cmake --install --component python` does (python/README.md, "Building and installing").

    pip install --no-build-isolation <checkout>/python

Environment:
  FERRY_BUILD_DIR    a configured build folder to reuse: pip builds only the module's target
                     there and installs it (default: pip configures <checkout>/build-python)
  FERRY_CMAKE_ARGS   extra CMake arguments, split like a shell's (-DFERRY_VIDEO=ON ...); with
                     FERRY_BUILD_DIR they reconfigure that folder
  CMAKE_BUILD_PARALLEL_LEVEL, CMAKE_GENERATOR   read by CMake itself

setuptools' own files (build/, ferry.egg-info) go to <build folder>/pip, never into the checkout.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# pip builds in place (pip >= 21.3): this file is run from <checkout>/python.
ROOT = Path(__file__).resolve().parent.parent
# The configuration pip makes when FERRY_BUILD_DIR is not given: a Release build of the module
# and what it links, for this interpreter (FERRY_CMAKE_ARGS come after, and win).
DEFAULT_CMAKE_ARGS = [
    "-DCMAKE_BUILD_TYPE=Release", "-DFERRY_PYTHON=ON", "-DFERRY_INSTALL=ON",
    "-DFERRY_BUILD_TESTS=OFF", "-DFERRY_BUILD_EXAMPLES=OFF", "-DFERRY_BUILD_PERF=OFF",
    # Components that need more than the module's own dependencies (FFmpeg, MPI, libtorch, a CUDA
    # Toolkit): off unless FERRY_CMAKE_ARGS turns them on.
    "-DFERRY_VIDEO=OFF", "-DFERRY_MPI=OFF", "-DFERRY_TORCH=OFF", "-DFERRY_CUDA=OFF",
]


def fail(message):
    sys.exit(f"ferry's setup.py: {message}")


def checkout_version():
    """ferry's version, as include/ferry/version.hpp says it (CMake checks that the project's
    VERSION agrees, and the module reports this string as ferry.__version__)."""
    header = ROOT / "include" / "ferry" / "version.hpp"
    if not (ROOT / "CMakeLists.txt").is_file() or not header.is_file():
        fail(f"{ROOT} is not ferry's checkout (no CMakeLists.txt or include/ferry/version.hpp): "
             "run pip on <checkout>/python, in place (pip 21.3 or later)")
    found = re.search(r'version = "([0-9]+\.[0-9]+\.[0-9]+)";', header.read_text())
    if not found:
        fail(f"{header} does not say ferry's version (version = \"X.Y.Z\";)")
    return found.group(1)


def cmake_cache(build_dir):
    """The build folder's CMakeCache.txt as {name: value}."""
    cache = {}
    for line in (build_dir / "CMakeCache.txt").read_text().splitlines():
        name_type, sep, value = line.partition("=")
        if sep and not line.startswith(("#", "//")):
            cache[name_type.partition(":")[0]] = value
    return cache


def run(cmd, **kwargs):
    print("ferry:", shlex.join(str(c) for c in cmd), flush=True)
    result = subprocess.run([str(c) for c in cmd], **kwargs)
    if result.returncode != 0:
        fail(f"`{shlex.join(str(c) for c in cmd)}` failed (exit {result.returncode}); its "
             "output is above (pip shows it with -v)")


def build_folder():
    """(the CMake build folder, whether it is the user's FERRY_BUILD_DIR)."""
    given = os.environ.get("FERRY_BUILD_DIR")
    if not given:
        return ROOT / "build-python", False
    build_dir = Path(given).expanduser().resolve()
    if not (build_dir / "CMakeCache.txt").is_file():
        fail(f"FERRY_BUILD_DIR={given} is not a configured CMake build folder (no "
             "CMakeCache.txt): configure one (python/README.md) or unset FERRY_BUILD_DIR, and "
             f"pip configures {ROOT / 'build-python'}")
    return build_dir, True


BUILD_DIR, REUSED = build_folder()
# setuptools' scratch (build/, ferry.egg-info) and the staged install.
SCRATCH = BUILD_DIR / "pip"


class cmake_build_ext(build_ext):
    """Builds the module's target with CMake, installs the package's component into a staging
    folder and copies the package from there to setuptools' build_lib (what the wheel holds)."""

    def run(self):
        if self.inplace or getattr(self, "editable_mode", False):
            fail("an editable install is not supported: PYTHONPATH=<build folder>/python "
                 "imports a build tree's package (python/README.md)")
        self.configure()
        self.check_cache(cmake_cache(BUILD_DIR))
        run(["cmake", "--build", BUILD_DIR, "--target", "ferry_python"])
        package = self.stage()
        dest = Path(self.build_lib) / "ferry"
        shutil.rmtree(dest, ignore_errors=True)  # no file left from an earlier build
        shutil.copytree(package, dest)

    def configure(self):
        extra = shlex.split(os.environ.get("FERRY_CMAKE_ARGS", ""))
        if REUSED and not extra:
            return
        cmd = ["cmake", "-S", ROOT, "-B", BUILD_DIR]
        if not REUSED:
            # Ninja where there is one (CMake's default, Makefiles, builds one file at a time);
            # an existing folder keeps its generator, and CMAKE_GENERATOR is CMake's to read.
            if (not (BUILD_DIR / "CMakeCache.txt").is_file()
                    and "CMAKE_GENERATOR" not in os.environ and shutil.which("ninja")):
                cmd += ["-G", "Ninja"]
            cmd += DEFAULT_CMAKE_ARGS + [f"-DPython3_EXECUTABLE={sys.executable}"]
        run(cmd + extra)

    def check_cache(self, cache):
        where = f"FERRY_BUILD_DIR={BUILD_DIR}" if REUSED else str(BUILD_DIR)
        if cache.get("FERRY_INSTALL", "ON").upper() in ("OFF", "0", "FALSE", "NO"):
            fail(f"{where} is configured with FERRY_INSTALL=OFF: it has no rule that installs "
                 "the package; reconfigure it with -DFERRY_INSTALL=ON")
        if cache.get("BUILD_SHARED_LIBS", "OFF").upper() in ("ON", "1", "TRUE", "YES"):
            fail(f"{where} builds ferry's shared libraries (BUILD_SHARED_LIBS=ON): the module "
                 "would need them, and pip installs the package alone; use a static build")
        if not (BUILD_DIR / "python" / "ferry" / "__init__.py").is_file():
            fail(f"{where} does not build the Python package (FERRY_PYTHON is OFF, or AUTO "
                 "found no pybind11 or a sanitized build): reconfigure it with -DFERRY_PYTHON=ON")

    def stage(self):
        """`cmake --install --component python` into <scratch>/stage (DESTDIR: a relative or an
        absolute FERRY_PYTHON_INSTALL_DIR both land there); returns the package's folder."""
        stage = SCRATCH / "stage"
        shutil.rmtree(stage, ignore_errors=True)
        run(["cmake", "--install", BUILD_DIR, "--component", "python", "--prefix", "/prefix"],
            env=dict(os.environ, DESTDIR=str(stage)))
        found = [p.parent for p in stage.rglob("__init__.py") if p.parent.name == "ferry"]
        if len(found) != 1:
            fail(f"`cmake --install {BUILD_DIR} --component python` installed "
                 f"{len(found)} packages named ferry, not 1")
        module = f"_ferry{sysconfig.get_config_var('EXT_SUFFIX')}"
        if not (found[0] / module).is_file():
            built = sorted(p.name for p in found[0].glob("_ferry*")) or ["no module"]
            fail(f"{BUILD_DIR} built {', '.join(built)}, not {module} for {sys.executable} "
                 f"(pip's interpreter): configure it with -DPython3_EXECUTABLE={sys.executable}")
        return found[0]


SCRATCH.mkdir(parents=True, exist_ok=True)  # egg_info wants its folder to exist
setup(
    version=checkout_version(),
    # The module is CMake's to build; the Extension makes the wheel one for this interpreter and
    # platform. The .py files come with it from the staged install (packages=[]: no discovery).
    ext_modules=[Extension("ferry._ferry", sources=[])],
    packages=[],
    py_modules=[],
    cmdclass={"build_ext": cmake_build_ext},
    options={
        "build": {"build_base": str(SCRATCH / "build")},
        "egg_info": {"egg_base": str(SCRATCH)},
    },
    zip_safe=False,
)
