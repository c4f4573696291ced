# SPDX-License-Identifier: Apache-2.0
"""conan.errors, as Conan 2 names them (see conan_stub/conan/__init__.py)."""


class ConanException(Exception):
    pass


class ConanInvalidConfiguration(ConanException):
    pass
