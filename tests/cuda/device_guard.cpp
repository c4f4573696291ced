// SPDX-License-Identifier: Apache-2.0
/// \file
/// The device guard's rules (ops/cuda/device_guard.hpp) on a fake device API (label `cuda`,
/// every machine): the caller's device comes back, a fresh thread gets no context on device 0,
/// and a failed switch is reported.
#include "ops/cuda/device_guard.hpp"

#include <boost/test/unit_test.hpp>
#include <set>
#include <thread>
#include <vector>

namespace {

/// A per-thread current device, as the CUDA runtime keeps it: 0 on a fresh thread, without a
/// context until a device is made current (CUDA 12+ makes the context at cudaSetDevice).
struct fake_devices {
    static thread_local int current;
    static thread_local std::vector<int> sets;  ///< every set() this thread made
    static std::set<int> contexts;              ///< devices with a primary context
    static int broken;                          ///< set() of this device fails

    static bool get(int& device) {
        device = current;
        return true;
    }
    static int set(int device) {
        sets.push_back(device);
        if (device == broken) return 101;  // cudaErrorInvalidDevice
        current = device;
        contexts.insert(device);
        return 0;
    }
    static bool has_context(int device) { return contexts.count(device) != 0; }
};
thread_local int fake_devices::current = 0;
thread_local std::vector<int> fake_devices::sets;
std::set<int> fake_devices::contexts;
int fake_devices::broken = -1;

using guard = ferry::cuda::detail::basic_device_guard<fake_devices>;

/// Runs `f` on a fresh thread (current device 0, no calls made yet).
template <class F>
void on_fresh_thread(F f) {
    std::thread t(f);
    t.join();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(device_guard)

// A caller that chose device 1 (so it has a context there) gets it back after a call on 0.
BOOST_AUTO_TEST_CASE(gives_the_caller_its_device_back) {
    fake_devices::contexts = {1};
    on_fresh_thread([] {
        fake_devices::current = 1;
        {
            const guard g(0);
            BOOST_TEST(g.error() == 0);
            BOOST_TEST(fake_devices::current == 0);
        }
        BOOST_TEST(fake_devices::current == 1);
        BOOST_TEST(fake_devices::sets == std::vector<int>({0, 1}));
    });
}

// Already on the device: no switch at all (cudaSetDevice is not free).
BOOST_AUTO_TEST_CASE(makes_no_call_when_the_device_is_current) {
    fake_devices::contexts = {2};
    on_fresh_thread([] {
        fake_devices::current = 2;
        { const guard g(2); }
        BOOST_TEST(fake_devices::sets.empty());
        BOOST_TEST(fake_devices::current == 2);
    });
}

// A fresh worker thread (device 0, no context) that works for device 1 is not switched back to
// 0: that would create a context on GPU 0 in every rank of a multi-GPU job.
BOOST_AUTO_TEST_CASE(creates_no_context_on_device_0_for_a_fresh_thread) {
    fake_devices::contexts = {};
    on_fresh_thread([] {
        { const guard g(1); }
        BOOST_TEST(fake_devices::sets == std::vector<int>({1}));
        BOOST_TEST(fake_devices::contexts.count(0) == 0U);
    });
}

// A switch that fails is reported (the backend turns it into a cuda_error) and nothing is put
// back, since nothing was changed.
BOOST_AUTO_TEST_CASE(reports_a_failed_switch_and_restores_nothing) {
    fake_devices::contexts = {0};
    fake_devices::broken = 3;
    on_fresh_thread([] {
        {
            const guard g(3);
            BOOST_TEST(g.error() == 101);
        }
        BOOST_TEST(fake_devices::current == 0);
        BOOST_TEST(fake_devices::sets == std::vector<int>({3}));
    });
    fake_devices::broken = -1;
}

BOOST_AUTO_TEST_SUITE_END()
