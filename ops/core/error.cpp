// SPDX-License-Identifier: Apache-2.0
/// \file
/// Error code names and exception descriptions.

#include "ferry/error.hpp"
#include "ferry/detail/redact.hpp"

#include <cerrno>

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
        case errc::timeout:
            return "timeout";
    }
    return "unknown";
}

bool is_transient(const std::exception& e) noexcept {
    if (const auto* se = dynamic_cast<const stage_error*>(&e)) {
        // A pipeline inside a stage failed: its cause says.
        if (const std::exception_ptr cause = se->nested_ptr()) {
            try {
                std::rethrow_exception(cause);
            } catch (const std::exception& c) {
                return is_transient(c);
            } catch (...) {
                return true;
            }
        }
        return se->transient();
    }
    if (const auto* fe = dynamic_cast<const error*>(&e)) return fe->transient();
    return true;
}

bool transient_errno(int err) noexcept {
    switch (err) {
        case ENOENT:
        case ENOTDIR:
        case EISDIR:
        case EACCES:
        case EPERM:
        case ELOOP:
        case ENAMETOOLONG:
        case EINVAL:
        case EBADF:
        case EROFS:
        case ENXIO:
        case ENODEV:
        case EFBIG:
        case EOVERFLOW:
            return false;
        default:
            return true;
    }
}

std::string describe(const std::exception_ptr& e) {
    if (!e) return "no error";
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        // The last line of defence: a message that names a URL its thrower did not redact, or
        // that carries a server's text with control characters, is made safe here, before the
        // engine records, logs, quarantines or rethrows it.
        return detail::redact_text(x.what());
    } catch (...) {
        return "unknown exception (not derived from std::exception)";
    }
}

}  // namespace ferry
