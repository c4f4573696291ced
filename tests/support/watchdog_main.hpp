// SPDX-License-Identifier: Apache-2.0
/// \file
/// Every suite's module main: Boost.Test's main, and a watchdog that turns a hung test case into
/// a named failure (exit with the case's name) instead of a silent CI timeout. Include it from
/// exactly one file per test executable, after defining BOOST_TEST_MODULE:
/// \code
///   #define BOOST_TEST_MODULE ferry_engine
///   #include "../support/watchdog_main.hpp"
/// \endcode
#pragma once

#ifndef BOOST_TEST_MODULE
#error "define BOOST_TEST_MODULE before including watchdog_main.hpp"
#endif

#include <boost/test/tree/observer.hpp>
#include <boost/test/tree/test_unit.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

/// Ends the process when one test case runs past `limit`: a hang in a data-loading engine or a
/// decoder would otherwise stall the whole run without saying where. The limit is for hang
/// detection only (sanitizer builds are slow); tests that promise promptness check their own
/// bounds.
class hang_watchdog : public boost::unit_test::test_observer {
  public:
    static constexpr auto limit = std::chrono::seconds(180);

    hang_watchdog() : thread_([this] { run(); }) {}
    ~hang_watchdog() override {
        {
            std::lock_guard lock(mutex_);
            closing_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }
    hang_watchdog(const hang_watchdog&) = delete;
    hang_watchdog& operator=(const hang_watchdog&) = delete;

    void test_unit_start(const boost::unit_test::test_unit& tu) override {
        if (tu.p_type != boost::unit_test::TUT_CASE) return;
        {
            std::lock_guard lock(mutex_);
            name_ = tu.full_name();
            deadline_ = std::chrono::steady_clock::now() + limit;
            armed_ = true;
        }
        cv_.notify_all();
    }
    void test_unit_finish(const boost::unit_test::test_unit& tu, unsigned long) override {
        if (tu.p_type != boost::unit_test::TUT_CASE) return;
        std::lock_guard lock(mutex_);
        armed_ = false;
    }

  private:
    void run() {
        std::unique_lock lock(mutex_);
        while (!closing_) {
            if (!armed_) {
                cv_.wait(lock);
                continue;
            }
            const auto deadline = deadline_;
            if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && armed_ &&
                deadline_ == deadline) {
                std::fprintf(stderr, "\nwatchdog: test case '%s' still running after %llds: hang\n",
                             name_.c_str(), static_cast<long long>(limit.count()));
                std::fflush(stderr);
                // Not abort(): Boost.Test turns SIGABRT into a longjmp onto the test's stack,
                // which from this thread would deadlock instead of ending the run.
                std::_Exit(EXIT_FAILURE);
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable cv_;
    std::string name_;
    std::chrono::steady_clock::time_point deadline_{};
    bool armed_ = false;
    bool closing_ = false;
    std::thread thread_;
};

struct watchdog_fixture {
    watchdog_fixture() { boost::unit_test::framework::register_observer(watchdog); }
    ~watchdog_fixture() { boost::unit_test::framework::deregister_observer(watchdog); }
    hang_watchdog watchdog;
};

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(watchdog_fixture);
