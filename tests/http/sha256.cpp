// SPDX-License-Identifier: Apache-2.0
/// \file
/// ops/http's SHA-256 (sha256.hpp, OpenSSL's EVP) against FIPS 180-4's known answers: the cache
/// names its files with it, so a wrong digest would orphan every entry a user has.
#include <boost/test/unit_test.hpp>
#include <string>

#include "../../ops/http/sha256.hpp"

using ferry::ops::detail::sha256_hex;

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(sha256)

// The digests of FIPS 180-2's examples (one block, two blocks, a million bytes) and of nothing.
BOOST_AUTO_TEST_CASE(digests_are_the_standards_known_answers) {
    BOOST_TEST(sha256_hex("") ==
               "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    BOOST_TEST(sha256_hex("abc") ==
               "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    BOOST_TEST(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    BOOST_TEST(sha256_hex(std::string(1'000'000, 'a')) ==
               "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Bytes are hashed as bytes: NULs and bytes above 0x7f count, and a string_view's end is where
// the data ends.
BOOST_AUTO_TEST_CASE(digests_cover_every_byte_and_only_the_view) {
    const std::string with_nul("a\0b", 3);
    BOOST_TEST(sha256_hex(with_nul) != sha256_hex("ab"));
    BOOST_TEST(sha256_hex(std::string_view("abcdef").substr(0, 3)) == sha256_hex("abc"));
    BOOST_TEST(sha256_hex("\xff") ==
               "a8100ae6aa1940d0b663bb31cd466142ebbdbd5187131b92d93818987832eb89");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
