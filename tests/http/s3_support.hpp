// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the S3 tests share: the example credentials, and environment variables set for one test
/// and restored after it.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ferry_test {

/// The example credentials of AWS's documentation, which the S3 tests sign with.
inline constexpr const char* key_id = "AKIDEXAMPLE";
inline constexpr const char* secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/// Sets (or, with nullopt, unsets) environment variables for its lifetime; restores them after.
/// Every AWS_* variable read_url looks at is cleared first, so the machine's own setting never
/// leaks into a test.
class scoped_env {
  public:
    explicit scoped_env(std::vector<std::pair<std::string, std::optional<std::string>>> vars) {
        for (const char* name :
             {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
              "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE",
              "AWS_SHARED_CREDENTIALS_FILE"}) {
            vars.insert(vars.begin(), {name, std::nullopt});
        }
        for (const auto& [name, value] : vars) {
            const char* old = std::getenv(name.c_str());
            saved_.emplace_back(name,
                                old != nullptr ? std::optional<std::string>(old) : std::nullopt);
            if (value) {
                ::setenv(name.c_str(), value->c_str(), 1);
            } else {
                ::unsetenv(name.c_str());
            }
        }
    }
    ~scoped_env() {
        for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
            if (it->second) {
                ::setenv(it->first.c_str(), it->second->c_str(), 1);
            } else {
                ::unsetenv(it->first.c_str());
            }
        }
    }
    scoped_env(const scoped_env&) = delete;
    scoped_env& operator=(const scoped_env&) = delete;

  private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace ferry_test
