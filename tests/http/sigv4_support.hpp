// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the S3 tests share to check a request's SigV4 signature: an independent implementation
/// (tools/sigv4_check.py, Python's hashlib and hmac) run on the request as the server saw it.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "../support/http_server.hpp"
#include "../support/temp_folder.hpp"

namespace ferry_test {

/// `s` as a JSON string literal (quotes and backslashes escaped; the tests' values hold no
/// control characters).
inline std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

/// What tools/sigv4_check.py says of `r`'s signature, signed by `access_key` with `secret_key`
/// for `region`: "ok", else what differs (with the canonical request it expected). The
/// canonical URI is `r.target`'s path as it arrived, as S3 takes it.
inline std::string check_signature(const http_request& r, const std::string& access_key,
                                   const std::string& secret_key, const std::string& region) {
    const temp_folder dir("ferry-sigv4");
    const auto file = dir / "request.json";
    {
        std::ofstream out(file);
        out << "{\"method\": " << json_string(r.method) << ", \"target\": " << json_string(r.target)
            << ", \"secret\": " << json_string(secret_key)
            << ", \"access_key\": " << json_string(access_key)
            << ", \"region\": " << json_string(region) << ", \"headers\": [";
        for (std::size_t i = 0; i < r.headers.size(); ++i) {
            out << (i ? ", " : "") << "[" << json_string(r.headers[i].first) << ", "
                << json_string(r.headers[i].second) << "]";
        }
        out << "]}";
    }
    const std::string cmd = "python3 '" FERRY_TEST_SOURCE_DIR
                            "/tests/http/tools/sigv4_check.py' '" +
                            file.string() + "'";
    std::string result;
    if (std::FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        while (const auto n = std::fread(buf, 1, sizeof buf, p)) result.append(buf, n);
        ::pclose(p);
    }
    std::filesystem::remove(file);
    while (!result.empty() && result.back() == '\n') result.pop_back();
    return result;
}

}  // namespace ferry_test
