// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::detail::redact_url, escape_controls and redact_text: every store's credential
/// parameters, tokens in the user part, URLs inside free text, and control characters.
#include <boost/test/unit_test.hpp>
#include <ferry/detail/redact.hpp>
#include <ferry/error.hpp>
#include <ferry/input.hpp>
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

// A query written inside HTML/XML (`&amp;`, `&#38;`, `&#x26;`) or a JSON string (`\u0026`) is
// split where its reader splits it: each credential is redacted, the other parameters kept.
BOOST_AUTO_TEST_CASE(query_separators_written_as_entities_or_escapes_are_seen_through) {
    BOOST_TEST(redact_text("<URL>https://h/o?a=1&amp;X-Amz-Credential=AKIDAMP&amp;"
                           "X-Amz-Signature=SIGAMP&amp;b=2</URL>") ==
               "<URL>https://h/o?a=1&amp;X-Amz-Credential=REDACTED&amp;"
               "X-Amz-Signature=REDACTED&amp;b=2</URL>");
    BOOST_TEST(redact_url("https://h/o?a=1&#38;sig=SIGDEC&#x26;token=TOKHEX&#X26;b=2") ==
               "https://h/o?a=1&#38;sig=REDACTED&#x26;token=REDACTED&#X26;b=2");
    BOOST_TEST(
        redact_text(R"({"url":"https:\/\/h\/o?a=1\u0026X-Amz-Signature=SIGJSON\u0026b=2"})") ==
        R"({"url":"https:\/\/h\/o?a=1\u0026X-Amz-Signature=REDACTED\u0026b=2"})");
    // A URL inside another URL's query: its %26 and %3D are structure to the inner URL's reader.
    BOOST_TEST(redact_url("https://h/login?next=https%3A%2F%2Fs%2Fo%3Fa%3D1%26X-Amz-Signature%3D"
                          "SIGNESTED%26b%3D2") ==
               "https://h/login?next=https%3A%2F%2Fs%2Fo%3Fa%3D1%26X-Amz-Signature%3DREDACTED");
}

// A percent-encoded & or space inside a value is the value's own byte to a URL's reader: the
// whole value is redacted, not only what stands before it.
BOOST_AUTO_TEST_CASE(percent_encoded_separators_inside_a_value_do_not_end_it) {
    BOOST_TEST(redact_url("https://h/o?sig=PART1%26PART2%20PART3&a=1") ==
               "https://h/o?sig=REDACTED&a=1");
}

// `=` written as %3D, \u003d, &#61; or &equals; still joins a credential's name to its value.
BOOST_AUTO_TEST_CASE(encoded_equals_signs_are_seen_through) {
    const std::string r = redact_text(
        "a X-Amz-Signature%3DSIGPCT b x-amz-signature%3dSIGLOW c access_token\\u003dTOKJS "
        "d password&#61;PWDEC e client_secret&#x3D;CSHEX f sig&equals;SIGNAMED g");
    BOOST_TEST(r ==
               "a X-Amz-Signature%3DREDACTED b x-amz-signature%3dREDACTED c "
               "access_token\\u003dREDACTED d password&#61;REDACTED e "
               "client_secret&#x3D;REDACTED f sig&equals;REDACTED g");
    for (const char* secret : {"SIGPCT", "SIGLOW", "TOKJS", "PWDEC", "CSHEX", "SIGNAMED"}) {
        BOOST_TEST(r.find(secret) == std::string::npos, secret);
    }
}

// Names written with escapes or double percent-encoding read the same to their reader.
BOOST_AUTO_TEST_CASE(encoded_parameter_names_are_seen_through) {
    BOOST_TEST(redact_url("https://h/o?X&#45;Amz&#45;Signature=SIGENT&X%252DAmz%252DCredential="
                          "AKIDDOUBLE&a=1") ==
               "https://h/o?X&#45;Amz&#45;Signature=REDACTED&X%252DAmz%252DCredential=REDACTED"
               "&a=1");
    BOOST_TEST(ferry::detail::parameter_name("X%2DAmz&#45;Signature\\u002D") == "x-amz-signature-");
}

// Every URL form curl reads a user part from without `://`: the password is hidden.
BOOST_AUTO_TEST_CASE(user_parts_of_urls_without_scheme_slashes_are_redacted) {
    BOOST_TEST(redact_url("https:/u:PWONESLASH@h/x") == "https:/u:REDACTED@h/x");
    BOOST_TEST(redact_url("http:u:PWNOSLASH@h/x") == "http:u:REDACTED@h/x");
    BOOST_TEST(redact_url("//u:PWRELATIVE@h/x") == "//u:REDACTED@h/x");
    BOOST_TEST(redact_url("alice:PASSWORD123@127.0.0.1:8080/x") ==
               "alice:REDACTED@127.0.0.1:8080/x");
    BOOST_TEST(redact_url("//ghp_TOKENREL@h/x") == "//REDACTED@h/x");
    BOOST_TEST(redact_url("ghp_TOKENBARE@h/x") == "REDACTED@h/x");
    BOOST_TEST(redact_url("https://u:p@SS%40WORD@h/x") == "https://u:REDACTED@h/x");
    BOOST_TEST(redact_text("fetch https:/u:PW1@h, then http:u:PW2@h and u:PW3@h:81/x") ==
               "fetch https:/u:REDACTED@h, then http:u:REDACTED@h and u:REDACTED@h:81/x");
}

// OAuth's implicit flow puts the token in the fragment: it is redacted there too.
BOOST_AUTO_TEST_CASE(credentials_in_the_fragment_are_redacted) {
    BOOST_TEST(redact_url("https://app/cb#access_token=TOKFRAG&token_type=bearer&state=s1") ==
               "https://app/cb#access_token=REDACTED&token_type=bearer&state=s1");
    BOOST_TEST(redact_url("https://app/cb?x=1#id_token=IDFRAG") ==
               "https://app/cb?x=1#id_token=REDACTED");
}

// Names that say credential beyond the list: *_token, *-token, key, x-api-key, *secret*,
// *password*, *signature*, *credential*.
BOOST_AUTO_TEST_CASE(credential_shaped_names_are_redacted) {
    BOOST_TEST(redact_url("https://h/o?auth_token=A1&session_token=S1&key=K1&x-api-key=X1"
                          "&db_password=P1&clientSecret=C1&oauth_signature=O1&my.credential=M1"
                          "&page=2") ==
               "https://h/o?auth_token=REDACTED&session_token=REDACTED&key=REDACTED"
               "&x-api-key=REDACTED&db_password=REDACTED&clientSecret=REDACTED"
               "&oauth_signature=REDACTED&my.credential=REDACTED&page=2");
    // Presigning's other parameters are no secret and stay readable.
    BOOST_TEST(redact_url("https://h/o?X-Amz-Date=20260101T000000Z&X-Amz-SignedHeaders=host"
                          "&X-Amz-Expires=60&X-Amz-Algorithm=AWS4-HMAC-SHA256") ==
               "https://h/o?X-Amz-Date=20260101T000000Z&X-Amz-SignedHeaders=host"
               "&X-Amz-Expires=60&X-Amz-Algorithm=AWS4-HMAC-SHA256");
}

// A credential header echoed in free text (a server's error body, a log): its value is hidden,
// the scheme word kept; S3's own error codes, which name keys and signatures, are not touched.
BOOST_AUTO_TEST_CASE(header_shaped_credentials_in_text_are_redacted) {
    const std::string r = redact_text(
        "echo: Authorization: Basic QWxhZGRpbjpvcGVuU2VzYW1l\r\n"
        "Proxy-Authorization: Bearer PROXYTOK\r\nCookie: session=COOKIEVAL; theme=dark\r\n"
        "X-Amz-Security-Token: AMZTOK\r\nHost: h\r\n{\"x-api-key\": \"JSONKEY\", \"n\": 1}");
    BOOST_TEST(r ==
               "echo: Authorization: Basic REDACTED\\r\\nProxy-Authorization: Bearer "
               "REDACTED\\r\\nCookie: REDACTED\\r\\nX-Amz-Security-Token: REDACTED\\r\\n"
               "Host: h\\r\\n{\"x-api-key\": \"REDACTED\", \"n\": 1}");
    const std::string s3 =
        "read_url: 's3://b/k': HTTP 403 Forbidden: SignatureDoesNotMatch: The request signature "
        "we calculated does not match; NoSuchKey: The specified key does not exist.; "
        "InvalidAccessKeyId: The AWS Access Key Id you provided does not exist; ExpiredToken: "
        "The provided token has expired.";
    BOOST_TEST(redact_text(s3) == s3);
}

// Ordinary text keeps its words: an e-mail address, a time, paths, a sentence with `key`.
BOOST_AUTO_TEST_CASE(text_without_credentials_is_kept) {
    const std::string t =
        "sample key 'a/b.jpg' missing at 12:30 for alice@example.com (https://h/a@b?c=d@e)";
    BOOST_TEST(redact_text(t) == t);
}

// A source item's name (what failures and the quarantine file record) is redacted whatever form
// its credential takes, also without a `?` or an `@` in it.
BOOST_AUTO_TEST_CASE(item_names_are_redacted_in_every_form) {
    BOOST_TEST(ferry::input_name(std::string("https://app/cb#access_token=TOKNAME")) ==
               "https://app/cb#access_token=REDACTED");
    BOOST_TEST(ferry::input_name(std::string("u:PWNAME@h:81/x")) == "u:REDACTED@h:81/x");
    BOOST_TEST(ferry::input_name(std::string("data/train/a.jpg")) == "data/train/a.jpg");
}

BOOST_AUTO_TEST_SUITE_END()  // redact
BOOST_AUTO_TEST_SUITE_END()  // ops
