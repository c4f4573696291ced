// SPDX-License-Identifier: Apache-2.0
/// \file
/// How a case that cannot run here says so: a Boost.Test precondition that fails with the reason
/// (the report counts the case as skipped) and prints `SKIPPED <case>: <reason>` on stdout, which
/// ctest's output shows:
/// \code
///   boost::test_tools::assertion_result runs_as_root(boost::unit_test::test_unit_id id) {
///       if (::geteuid() == 0) return true;
///       return ferry_test::skipped(id, "needs root to chown a file to uid 65534");
///   }
///   BOOST_AUTO_TEST_CASE(x, *boost::unit_test::precondition(runs_as_root)) { ... }
/// \endcode
#pragma once

#include <boost/test/unit_test.hpp>

#include <cstdio>
#include <string>

namespace ferry_test {

/// The precondition's answer for case `id`, which is skipped because of `why`.
inline boost::test_tools::assertion_result skipped(boost::unit_test::test_unit_id id,
                                                   const std::string& why) {
    std::printf("SKIPPED %s: %s\n",
                boost::unit_test::framework::get(id, boost::unit_test::TUT_ANY).full_name().c_str(),
                why.c_str());
    std::fflush(stdout);
    boost::test_tools::assertion_result r(false);
    r.message() << why;
    return r;
}

}  // namespace ferry_test
