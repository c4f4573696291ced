// SPDX-License-Identifier: Apache-2.0
/// \file
/// fork() after a pipeline was built: in the child, building a pipeline and taking from one
/// built before the fork throw `ferry::invalid_argument` saying why, and destroying the inherited
/// one returns (it is left, not joined); the parent's pipeline goes on. The child reports by its
/// exit status, waited for within a bound.
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include "support.hpp"

using namespace ferry_test;

namespace fork_test {

/// The child's exit status, or nullopt if it ran past `bound` (then it is killed).
std::optional<int> wait_for(pid_t pid, std::chrono::seconds bound = std::chrono::seconds(30)) {
    const auto until = std::chrono::steady_clock::now() + bound;
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > until) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return WIFEXITED(status) ? std::optional<int>(WEXITSTATUS(status)) : std::optional<int>(-1);
}

/// Whether `f` throws ferry::invalid_argument whose message starts with `start`.
template <class F>
bool refused(F&& f, const std::string& start) {
    try {
        f();
    } catch (const ferry::invalid_argument& e) {
        return std::string(e.what()).rfind(start, 0) == 0;
    } catch (...) {
    }
    return false;
}

}  // namespace fork_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(fork)
using namespace fork_test;

BOOST_AUTO_TEST_CASE(a_child_is_refused_and_the_parent_goes_on) {
    const auto make = [] {
        return ferry::from(iota(100))
            .map([](int x) { return x + 1; }, {.concurrency = 2})
            .build({.threads = 2, .logger = quiet});
    };
    std::optional<decltype(make())> p(make());
    BOOST_REQUIRE((p->next() == std::optional<int>(1)));
    const pid_t pid = ::fork();
    BOOST_REQUIRE(pid >= 0);
    if (pid == 0) {
        // The child: no Boost.Test here, only the exit status (bit per failed check).
        int failed = 0;
        if (!refused([&] { (void)make(); },
                     "ferry: this process was forked after its parent built a pipeline")) {
            failed |= 1;
        }
        if (!refused([&] { (void)p->next(); }, "ferry: pipeline::next() in a process forked")) {
            failed |= 2;
        }
        // What reads the pipeline's counters takes locks a parent's thread may have held.
        if (!refused([&] { (void)p->stats(); }, "ferry: pipeline::stats() in a process forked")) {
            failed |= 4;
        }
        if (!refused([&] { (void)p->failures(); },
                     "ferry: pipeline::failures() in a process forked")) {
            failed |= 8;
        }
        if (!refused([&] { (void)p->state(); }, "ferry: pipeline::state() in a process forked")) {
            failed |= 16;
        }
        p.reset();  // left, not joined: returns
        _exit(failed);
    }
    const std::optional<int> child = wait_for(pid);
    BOOST_REQUIRE_MESSAGE(child.has_value(), "the child hung");
    // bits: 1 a new pipeline, 2 next() on the inherited one, 4 stats(), 8 failures(), 16 state()
    BOOST_TEST(*child == 0);
    int sum = 0;
    while (auto x = p->next()) sum += *x;
    BOOST_TEST(sum == 5050 - 1);
    p.reset();
    auto again = make();  // the parent still builds pipelines
    sum = 0;
    while (auto x = again.next()) sum += *x;
    BOOST_TEST(sum == 5050);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
