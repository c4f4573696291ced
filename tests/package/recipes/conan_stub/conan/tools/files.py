# SPDX-License-Identifier: Apache-2.0
"""conan.tools.files: load reads a file; copy and rmdir belong to package() and do nothing."""


def load(conanfile, path, encoding="utf-8"):
    with open(path, encoding=encoding) as f:
        return f.read()


def copy(conanfile, pattern, src, dst, *args, **kwargs):
    pass


def rmdir(conanfile, path):
    pass
