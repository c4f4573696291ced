// SPDX-License-Identifier: Apache-2.0
/// \file
/// The examples' self-checks: `check` prints what failed, `checks_verdict` ends `main` with the
/// line and exit status the example's ctest test looks for (see CMakeLists.txt).
#pragma once

#include <iostream>
#include <string>

namespace ferry_examples {

/// False once any check has failed.
inline bool all_ok = true;

/// Prints "CHECK FAILED: <what>" when `cond` is false, and remembers that it did.
inline void check(bool cond, const std::string& what) {
    if (!cond) {
        std::cout << "CHECK FAILED: " << what << '\n';
        all_ok = false;
    }
}

/// Prints whether every check passed and returns `main`'s exit status: 0 if so, else 1.
/// \code
///   int main() {
///       check(got == want, "items in order");
///       return checks_verdict();
///   }
/// \endcode
inline int checks_verdict() {
    std::cout << '\n' << (all_ok ? "all checks passed" : "CHECK FAILED: see above") << '\n';
    return all_ok ? 0 : 1;
}

}  // namespace ferry_examples
