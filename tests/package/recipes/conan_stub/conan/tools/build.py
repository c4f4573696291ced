# SPDX-License-Identifier: Apache-2.0
"""conan.tools.build: check_min_cppstd against settings' compiler.cppstd, and can_run."""

from conan.errors import ConanInvalidConfiguration


def check_min_cppstd(conanfile, cppstd, gnu_extensions=False):
    value = conanfile.settings.get_safe("compiler.cppstd")
    if value is None:
        return  # Conan would check the compiler's default standard; GCC 12 needs -std=c++20
    number = int(str(value).replace("gnu", ""))
    if number < int(cppstd):
        raise ConanInvalidConfiguration(
            f"Current cppstd ({value}) is lower than the required C++ standard ({cppstd}).")


def can_run(conanfile):
    return True
