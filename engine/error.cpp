// SPDX-License-Identifier: Apache-2.0
/// \file
/// Error code names and exception descriptions.

#include "ferry/error.hpp"

namespace ferry {

const char* to_string(errc code) noexcept {
    switch (code) {
        case errc::stage_failed:
            return "stage_failed";
        case errc::io:
            return "io";
        case errc::decode:
            return "decode";
        case errc::invalid_argument:
            return "invalid_argument";
        case errc::cancelled:
            return "cancelled";
        case errc::cuda:
            return "cuda";
        case errc::internal:
            return "internal";
    }
    return "unknown";
}

std::string describe(const std::exception_ptr& e) {
    if (!e) return "no error";
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    } catch (...) {
        return "unknown exception (not derived from std::exception)";
    }
}

}  // namespace ferry
