// SPDX-License-Identifier: Apache-2.0
/// \file
/// Credentials out of URLs (ferry/detail/redact.hpp).

#include "ferry/detail/redact.hpp"

namespace ferry::detail {

bool credential_parameter(std::string_view name) noexcept {
    return name == "x-amz-signature" || name == "x-amz-credential" ||
           name == "x-amz-security-token" || name == "signature" || name == "awsaccesskeyid";
}

std::string redact_url(std::string_view url) {
    std::string out = rewrite_query(url, [](const std::string& name) {
        return credential_parameter(name) ? query_item::redact : query_item::keep;
    });
    // A password in the authority: scheme://user:password@host/...
    if (const auto scheme = out.find("://"); scheme != std::string::npos) {
        const auto authority_end = out.find_first_of("/?#", scheme + 3);
        const auto at = out.substr(0, authority_end).rfind('@');
        if (at != std::string::npos && at > scheme) {
            const auto colon = out.find(':', scheme + 3);
            if (colon != std::string::npos && colon < at) {
                out.replace(colon + 1, at - colon - 1, "REDACTED");
            }
        }
    }
    return out;
}

}  // namespace ferry::detail
