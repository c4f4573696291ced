// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::detail::redact_url, escape_controls and redact_text: every store's credential
/// parameters, tokens in the user part, URLs inside free text, and control characters.
#include <boost/test/unit_test.hpp>
#include <ferry/detail/redact.hpp>
#include <ferry/error.hpp>
#include <stdexcept>
#include <string>

using ferry::detail::escape_controls;
using ferry::detail::redact_text;
using ferry::detail::redact_url;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(redact)

// AWS SigV4 and SigV2 presigned URLs keep their path and their other parameters.
BOOST_AUTO_TEST_CASE(aws_presigned_parameters_are_redacted) {
    BOOST_TEST(redact_url("https://h/x.tar?X-Amz-Credential=AKID%2F2026&X-Amz-Date=20261205T0000Z"
                          "&X-Amz-Signature=SIG") ==
               "https://h/x.tar?X-Amz-Credential=REDACTED&X-Amz-Date=20261205T0000Z"
               "&X-Amz-Signature=REDACTED");
    BOOST_TEST(redact_url("https://h/o?AWSAccessKeyId=AKID&Expires=1&Signature=SIG") ==
               "https://h/o?AWSAccessKeyId=REDACTED&Expires=1&Signature=REDACTED");
}

// Google Cloud Storage's signed URLs, Azure SAS tokens and OAuth/API tokens are credentials too.
BOOST_AUTO_TEST_CASE(gcs_azure_and_token_parameters_are_redacted) {
    BOOST_TEST(redact_url("https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256"
                          "&X-Goog-Credential=sa%40p.iam&X-Goog-Signature=abcdef") ==
               "https://storage.googleapis.com/b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256"
               "&X-Goog-Credential=REDACTED&X-Goog-Signature=REDACTED");
    BOOST_TEST(redact_url("https://a.blob.core.windows.net/c/b?sv=2022-11-02&se=2026&sp=r"
                          "&sig=AZSIG%3D") ==
               "https://a.blob.core.windows.net/c/b?sv=2022-11-02&se=2026&sp=r&sig=REDACTED");
    BOOST_TEST(redact_url("https://h/f?access_token=ya29.T&alt=media") ==
               "https://h/f?access_token=REDACTED&alt=media");
    BOOST_TEST(redact_url("https://h/f?token=T1&x=1") == "https://h/f?token=REDACTED&x=1");
    BOOST_TEST(redact_url("https://h/f?API_KEY=K") == "https://h/f?API_KEY=REDACTED");
}

// A parameter name written with percent-escapes reads the same to the server: still redacted.
BOOST_AUTO_TEST_CASE(percent_encoded_parameter_names_are_redacted) {
    BOOST_TEST(redact_url("https://h/o?X%2DAmz%2DSignature=SIG&a=1") ==
               "https://h/o?X%2DAmz%2DSignature=REDACTED&a=1");
}

// %XX escapes decode; a % without two hex digits after it stays as it is.
BOOST_AUTO_TEST_CASE(percent_escapes_decode) {
    BOOST_TEST(ferry::detail::percent_decode("a%2Fb%2fc%41") == "a/b/cA");
    BOOST_TEST(ferry::detail::percent_decode("100%") == "100%");
    BOOST_TEST(ferry::detail::percent_decode("%zz%4") == "%zz%4");
}

// user:password@ keeps the user; a token as the whole user part (no colon) is hidden whole.
BOOST_AUTO_TEST_CASE(user_part_passwords_and_tokens_are_redacted) {
    BOOST_TEST(redact_url("https://alice:pw@h/x") == "https://alice:REDACTED@h/x");
    BOOST_TEST(redact_url("https://ghp_TOKEN123@github.example/o/r.tar") ==
               "https://REDACTED@github.example/o/r.tar");
    // An @ in the path or query is no user part.
    BOOST_TEST(redact_url("https://h/a@b?c=d@e") == "https://h/a@b?c=d@e");
}

// Control characters cannot start a log line or reach a terminal as escapes.
BOOST_AUTO_TEST_CASE(control_characters_are_escaped) {
    BOOST_TEST(escape_controls("a\nb\r\tc\x1b[31md\x7f") == "a\\nb\\r\\tc\\x1b[31md\\x7f");
    BOOST_TEST(escape_controls(std::string("nul\0end", 7)) == "nul\\x00end");
    BOOST_TEST(escape_controls("caf\xc3\xa9") == "caf\xc3\xa9");  // UTF-8 is kept
}

// A message that names URLs its author did not redact is made safe word by word.
BOOST_AUTO_TEST_CASE(urls_inside_messages_are_redacted) {
    const std::string m =
        "tar_samples: shard 'https://h/x.tar?X-Amz-Credential=AKID&X-Amz-Signature=SIG': "
        "truncated\nnext https://ghp_TOK@h/y and \"https://u:PW@h/z?sig=S2\"";
    const std::string r = redact_text(m);
    BOOST_TEST(r ==
               "tar_samples: shard 'https://h/x.tar?X-Amz-Credential=REDACTED"
               "&X-Amz-Signature=REDACTED': truncated\\nnext https://REDACTED@h/y and "
               "\"https://u:REDACTED@h/z?sig=REDACTED\"");
    for (const char* secret : {"AKID", "SIG'", "ghp_TOK", "PW@", "S2"}) {
        BOOST_TEST(r.find(secret) == std::string::npos, secret);
    }
    BOOST_TEST(redact_text("plain text, no URL") == "plain text, no URL");
}

// ferry::describe, which makes every failure's message, gives the safe text.
BOOST_AUTO_TEST_CASE(describe_redacts_and_escapes) {
    const auto e = std::make_exception_ptr(
        std::runtime_error("GET https://h/o?X-Goog-Signature=GSIG failed:\x1b[2J\nforged"));
    BOOST_TEST(ferry::describe(e) ==
               "GET https://h/o?X-Goog-Signature=REDACTED failed:\\x1b[2J\\nforged");
}

BOOST_AUTO_TEST_SUITE_END()  // redact
BOOST_AUTO_TEST_SUITE_END()  // ops
