// SPDX-License-Identifier: Apache-2.0
/// \file
/// SHA-256 (see sha256.hpp) with OpenSSL's EVP: a well-kept implementation, not one of ferry's.

#include "sha256.hpp"

#include <openssl/evp.h>

#include "ferry/error.hpp"

namespace ferry::ops::detail {

std::string sha256_hex(std::string_view data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) != 1 ||
        length != 32) {
        throw error(errc::internal, "sha256_hex: OpenSSL's EVP_Digest failed");
    }
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * length);
    for (unsigned int i = 0; i < length; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 0x0F];
    }
    return out;
}

}  // namespace ferry::ops::detail
