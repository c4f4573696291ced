// SPDX-License-Identifier: Apache-2.0
/// \file
/// The core suite's module: Boost.Test's main with the hang watchdog (tests/support/).
#define BOOST_TEST_MODULE ferry_core
#include "../support/watchdog_main.hpp"
