// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image suite's module: Boost.Test's main with the hang watchdog (tests/support/).
#define BOOST_TEST_MODULE ferry_image
#include "../support/watchdog_main.hpp"
