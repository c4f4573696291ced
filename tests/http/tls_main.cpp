// SPDX-License-Identifier: Apache-2.0
/// \file
/// The http suite's cases over TLS in a process of their own (see tests/http/CMakeLists.txt):
/// Boost.Test's main with the hang watchdog (tests/support/).
#define BOOST_TEST_MODULE ferry_http_tls
#include "../support/watchdog_main.hpp"
