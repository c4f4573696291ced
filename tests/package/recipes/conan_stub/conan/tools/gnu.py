# SPDX-License-Identifier: Apache-2.0
"""conan.tools.gnu: PkgConfigDeps records that it ran."""

import conan


class PkgConfigDeps:
    def __init__(self, conanfile):
        pass

    def generate(self):
        conan.recorded["generators"].append("PkgConfigDeps")
