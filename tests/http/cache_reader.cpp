// SPDX-License-Identifier: Apache-2.0
/// \file
/// cache_reader: the other process of tests/http/cache_sharing.cpp. Reads URL through an object
/// cache of its own on DIR and exits 0 when the bytes are `random_body(SIZE, SEED)`, 1 when they
/// differ, 2 when the read throws. A program of its own, started with posix_spawn, rather than a
/// fork of the multi-threaded test process (which ThreadSanitizer cannot follow).
///
///   cache_reader URL DIR SIZE SEED
#include <cstdlib>
#include <ferry/cache.hpp>
#include <ferry/http.hpp>
#include <string>

#include "../support/http_bodies.hpp"

int main(int argc, char** argv) {
    if (argc != 5) return 64;
    try {
        const auto cache = ferry::ops::open_cache({.dir = argv[2]});
        const std::string want =
            ferry_test::random_body(std::strtoull(argv[3], nullptr, 10),
                                    static_cast<std::uint32_t>(std::strtoul(argv[4], nullptr, 10)));
        return ferry_test::as_string(ferry::ops::read_url(argv[1], {.cache = cache})) == want ? 0
                                                                                              : 1;
    } catch (...) {
        return 2;
    }
}
