// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for redaction (`ferry::detail::redact_text` and `redact_url`, ferry/detail/
/// redact.hpp): any text with secrets planted in it must come out with none of them. The input's
/// last bytes choose up to eight plantings (where, which form, which secret); the rest is the
/// text they go into. A secret (`S3CR3T` and ten letters or digits, each planting its own) is
/// planted as a credential parameter's value (23 names, plain, percent-encoded, as character
/// references, upper case) after every separator a reader splits at (`?`, `&`, `&amp;`, `&#38;`,
/// `&#x26;`, `\u0026`, `%26`, `%2526`, `#`, ...) and with every `=` (`%3D`, `\u003d`, `&#61;`,
/// `&equals;`, ...), as a password or a token in the user part of every URL form curl reads, as
/// a credential header's value echoed in text (`Authorization: Basic ...`), and as a JSON key's.
/// A secret left in either function's output, a control character left in `redact_text`'s, a
/// crash, a leak or an out-of-bounds access is a finding.
#include <fuzzer/FuzzedDataProvider.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/detail/redact.hpp"

namespace {

constexpr std::string_view marker = "S3CR3T";

constexpr std::array<std::string_view, 23> parameter_names{"X-Amz-Signature",
                                                           "X-Amz-Credential",
                                                           "X-Amz-Security-Token",
                                                           "Signature",
                                                           "AWSAccessKeyId",
                                                           "X-Goog-Signature",
                                                           "X-Goog-Credential",
                                                           "sig",
                                                           "access_token",
                                                           "id_token",
                                                           "refresh_token",
                                                           "token",
                                                           "auth_token",
                                                           "session_token",
                                                           "key",
                                                           "api_key",
                                                           "apikey",
                                                           "x-api-key",
                                                           "client_secret",
                                                           "password",
                                                           "accessToken",
                                                           "db_password",
                                                           "oauth_signature"};

constexpr std::array<std::string_view, 15> separators{
    "?",     "&",         "&amp;", "&#38;", "&#x26;", "&#X26;", "\\u0026", "%26",
    "%2526", "&amp;amp;", "#",     " ",     "\n",     ";",      ","};

constexpr std::array<std::string_view, 10> equals{
    "=", "%3D", "%3d", "\\u003d", "\\u003D", "&#61;", "&#x3d;", "&#x3D;", "&equals;", "%253D"};

/// `{}` stands for the secret; each is planted after a space or a line break.
constexpr std::array<std::string_view, 24> shaped{"https://u:{}@h/",
                                                  "https:/u:{}@h/",
                                                  "http:u:{}@h/",
                                                  "//u:{}@h/",
                                                  "u:{}@h:8080/",
                                                  "https://{}@h/",
                                                  "//{}@h/",
                                                  "s3://u:{}@b/",
                                                  "HTTPS://user:{}%40x@h/",
                                                  "ftp://u:p@ss:{}@h/",
                                                  "Authorization: Basic {}",
                                                  "Authorization: Bearer {}",
                                                  "authorization:Bearer {}",
                                                  "Proxy-Authorization: Bearer {}",
                                                  "Cookie: session={}; theme=dark",
                                                  "Set-Cookie: id={}; Path=/",
                                                  "X-Amz-Security-Token: {}",
                                                  "X-Api-Key: {}",
                                                  "x-auth-token: {}",
                                                  "{\"password\":\"{}\"}",
                                                  "{\"access_token\": \"{}\"}",
                                                  "{\"accessToken\":\"{}\"}",
                                                  "{'client_secret': '{}'}",
                                                  "\"Authorization\": \"Bearer {}\""};

/// `name` as a reader still reads it: as is, in upper case, its `-` and `_` percent-encoded or
/// written as character references.
std::string written(std::string_view name, unsigned how) {
    std::string out;
    for (const char c : name) {
        if ((c == '-' || c == '_') && how == 1) {
            out += c == '-' ? "%2D" : "%5F";
        } else if ((c == '-' || c == '_') && how == 2) {
            out += c == '-' ? "&#45;" : "&#95;";
        } else if (how == 3 && c >= 'a' && c <= 'z') {
            out += static_cast<char>(c - 'a' + 'A');
        } else {
            out += c;
        }
    }
    return out;
}

std::string planted_text(FuzzedDataProvider& in, const std::string& secret) {
    const auto kind = in.ConsumeIntegralInRange<unsigned>(0, 3);
    if (kind == 3) {
        std::string form(shaped[in.ConsumeIntegralInRange<std::size_t>(0, shaped.size() - 1)]);
        form.replace(form.find("{}"), 2, secret);
        return (in.ConsumeBool() ? " " : "\r\n") + form;
    }
    std::string out(separators[in.ConsumeIntegralInRange<std::size_t>(0, separators.size() - 1)]);
    out += written(
        parameter_names[in.ConsumeIntegralInRange<std::size_t>(0, parameter_names.size() - 1)],
        in.ConsumeIntegralInRange<unsigned>(0, 3));
    out += equals[in.ConsumeIntegralInRange<std::size_t>(0, equals.size() - 1)];
    return out + secret;
}

[[noreturn]] void leaked(const std::string& what, const std::string& secret,
                         const std::string& text, const std::string& out) {
    std::fprintf(stderr, "%s left '%s' in:\n--- text ---\n%s\n--- out ---\n%s\n", what.c_str(),
                 secret.c_str(), text.c_str(), out.c_str());
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    FuzzedDataProvider in(data, size);
    const auto plantings = in.ConsumeIntegralInRange<unsigned>(1, 8);
    struct planting {
        std::size_t at;
        std::string text;
    };
    std::vector<planting> plan;
    std::vector<std::string> secrets;
    for (unsigned i = 0; i < plantings; ++i) {
        std::string secret(marker);
        secret += static_cast<char>('A' + i);
        for (int k = 0; k < 9; ++k) {
            constexpr std::string_view alnum =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
            secret += alnum[in.ConsumeIntegralInRange<std::size_t>(0, alnum.size() - 1)];
        }
        const auto at = in.ConsumeIntegral<std::uint16_t>();
        plan.push_back({at, planted_text(in, secret)});
        secrets.push_back(std::move(secret));
    }
    // The text: the rest of the input, with no secret of its own (the marker broken wherever it
    // stands), so that whatever of a secret comes out came from a planting.
    std::string filler = in.ConsumeRemainingBytesAsString();
    for (auto p = filler.find(marker); p != std::string::npos; p = filler.find(marker, p)) {
        filler[p + 5] = 't';
    }
    std::string text;
    std::size_t from = 0;
    for (const auto& p : plan) {
        const std::size_t at = filler.empty() ? 0 : p.at % (filler.size() + 1);
        if (at > from) text += filler.substr(from, at - from);
        from = std::max(from, at);
        // A backslash right before a planting would escape its first character as JSON reads
        // it: the planting is then no separator to any reader. A space keeps it one.
        if (!text.empty() && text.back() == '\\') text += ' ';
        text += p.text;
    }
    text += filler.substr(std::min(from, filler.size()));

    const std::string shown = ferry::detail::redact_text(text);
    const std::string url = ferry::detail::redact_url(text);
    for (const auto& s : secrets) {
        if (shown.find(s) != std::string::npos) leaked("redact_text", s, text, shown);
        if (url.find(s) != std::string::npos) leaked("redact_url", s, text, url);
    }
    for (const char c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            leaked("redact_text (a control character)", "", text, shown);
        }
    }
    (void)ferry::detail::parameter_name(text);
    return 0;
}
