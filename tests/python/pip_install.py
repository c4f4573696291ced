# SPDX-License-Identifier: Apache-2.0
"""`pip install` of the package from the checkout (python/setup.py, python/pyproject.toml).

Run by ctest as `python.pip`, which names this build tree (FERRY_TEST_BUILD_DIR), the checkout
(FERRY_TEST_SOURCE_DIR) and the project's version (FERRY_TEST_VERSION). pip reuses the build tree
through FERRY_BUILD_DIR, so it builds only the module's target there (already built) and
installs it. Not a test_*.py file: the suite's own pytest run does not collect it."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

# A hang bound for pip, not a speed check: with the module already built, pip zips and unzips it.
PIP_TIMEOUT = 240


def ctest_env(name):
    value = os.environ.get(name)
    if not value:
        pytest.fail(f"{name} is not set: run this file through ctest (ctest -R '^python\\.pip$')")
    return value


def tree(folder):
    """Every file and folder under `folder`, with each file's size and modification time."""
    out = {}
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(parent, name)
            st = os.lstat(path)
            out[os.path.relpath(path, folder)] = (st.st_size, st.st_mtime_ns)
    return out


def pip_install(target, build_dir, source):
    """`pip install --no-build-isolation` of `source`/python into `target` (--target), with no
    registry, no cache and no dependencies; returns the CompletedProcess, its output as text."""
    env = dict(os.environ, FERRY_BUILD_DIR=build_dir, PIP_NO_INDEX="1")
    cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
           "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--target", target,
           os.path.join(source, "python")]
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"pip hung (killed after {PIP_TIMEOUT} s); its output: {e.stdout!r} "
                    f"{e.stderr!r}")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """One pip install into a fresh --target: {"site", "pip", "before", "after"}, the last two
    the python/ folder's files before and after it."""
    source = ctest_env("FERRY_TEST_SOURCE_DIR")
    build_dir = ctest_env("FERRY_TEST_BUILD_DIR")
    site = tmp_path_factory.mktemp("site")
    before = tree(os.path.join(source, "python"))
    pip = pip_install(str(site), build_dir, source)
    after = tree(os.path.join(source, "python"))
    return {"site": str(site), "pip": pip, "before": before, "after": after}


# What a user gets from `pip install --target`: a fresh interpreter with only the target on its
# path imports ferry from there, at the project's version (the module's and pip's record of it),
# and runs a native pipeline.
def test_pip_install_target_gives_an_importable_package(installed, tmp_path):
    pip = installed["pip"]
    assert pip.returncode == 0, f"pip failed:\n{pip.stdout}\n{pip.stderr}"
    site = installed["site"]
    code = textwrap.dedent("""
        import importlib.metadata, json
        import ferry
        print(json.dumps({
            "file": ferry.__file__,
            "module": ferry._ferry.__file__,
            "version": ferry.__version__,
            "dist_version": importlib.metadata.version("ferry"),
            "batches": list(ferry.source(range(10)).batch(3).build(threads=1)),
        }))
    """)
    # Only the target on the path: not the build tree's package, not ~/.local, not the cwd's.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": site,
           "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "HOME": str(tmp_path)}
    child = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    got = json.loads(child.stdout)
    assert got["file"] == os.path.join(site, "ferry", "__init__.py")
    assert os.path.dirname(got["module"]) == os.path.join(site, "ferry")
    version = ctest_env("FERRY_TEST_VERSION")
    assert got["version"] == version
    assert got["dist_version"] == version
    assert got["batches"] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


# pip builds in the source folder (in-tree): setup.py must send setuptools' build/ and
# *.egg-info to the build tree, so that no file under python/ appears or changes.
def test_pip_install_leaves_the_python_folder_unchanged(installed):
    assert installed["pip"].returncode == 0, installed["pip"].stderr
    before, after = installed["before"], installed["after"]
    assert sorted(set(after) - set(before)) == []
    assert sorted(p for p in before if before[p] != after.get(p)) == []


# A FERRY_BUILD_DIR that is not a configured build folder is refused by name, before anything
# is written there.
def test_pip_install_refuses_an_unconfigured_build_dir(tmp_path):
    source = ctest_env("FERRY_TEST_SOURCE_DIR")
    empty = tmp_path / "not-a-build"
    empty.mkdir()
    pip = pip_install(str(tmp_path / "site"), str(empty), source)
    assert pip.returncode != 0
    assert (f"FERRY_BUILD_DIR={empty} is not a configured CMake build folder (no CMakeCache.txt)"
            in pip.stdout + pip.stderr)
    assert list(empty.iterdir()) == []
    assert not (tmp_path / "site").exists() or list((tmp_path / "site").iterdir()) == []
