// SPDX-License-Identifier: Apache-2.0
/// \file
/// `runtime::try_next`, the consumer's call that never waits (the Python package takes ready
/// outputs with it before it waits on a thread of its own): it takes what `next()` would, in
/// the same order and with the same accounting (a tuned pipeline's too), says `not_ready` where
/// `next()` would wait, start an epoch, stop or throw the tuner's verdict, ends the epoch as
/// `next()` does, and throws a stage's error.
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "support.hpp"

using namespace ferry_test;

namespace try_next_test {

/// The runtime `b.build(options)` would wrap, for its detail-level calls.
template <class T>
std::unique_ptr<ferry::detail::runtime> compile(const ferry::builder<T>& b,
                                                ferry::pipeline_options options) {
    ferry::detail::pipeline_spec spec;
    spec.source = ferry::detail::source_access::source(b);
    spec.stages = ferry::detail::source_access::stages(b);
    spec.output_bytes = &ferry::detail::output_bytes_of<T>;
    return ferry::detail::compile(std::move(spec), std::move(options));
}

/// try_next until it gives something other than `not_ready`, within `bound` (the graph fills
/// its hand-off without the consumer; the bound only turns a hang into a failure).
ferry::detail::next_poll poll(ferry::detail::runtime& rt, ferry::detail::any_value& out,
                              std::chrono::seconds bound = std::chrono::seconds(30)) {
    const auto until = std::chrono::steady_clock::now() + bound;
    for (;;) {
        const auto got = rt.try_next(out);
        if (got != ferry::detail::next_poll::not_ready ||
            std::chrono::steady_clock::now() > until) {
            return got;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
}

/// An epoch of `rt` (a pipeline giving 2 * i for each i < n) taken with next() for its first
/// output and try_next for the rest: every output in order, then the end.
void takes_the_doubles(ferry::detail::runtime& rt, int n) {
    ferry::detail::any_value v;
    BOOST_REQUIRE(rt.next(v));
    std::vector<int> got{v.take_as<int>()};
    auto last = ferry::detail::next_poll::value;
    while ((last = poll(rt, v)) == ferry::detail::next_poll::value) {
        got.push_back(v.take_as<int>());
    }
    BOOST_TEST((last == ferry::detail::next_poll::end));
    std::vector<int> want;
    for (int i = 0; i < n; ++i) want.push_back(2 * i);
    BOOST_TEST(got == want, boost::test_tools::per_element());
}

}  // namespace try_next_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(try_next)
using namespace try_next_test;
using ferry::detail::next_poll;

// Two epochs taken with try_next alone once next() has started each: every output in order,
// the end as `end`, the stats' accounting whole; before an epoch runs (and after its end)
// try_next is `not_ready`, as next() would have to start one.
BOOST_AUTO_TEST_CASE(takes_every_output_in_order_and_ends_the_epoch) {
    const int n = 500;
    auto rt = compile(ferry::from(iota(n)).map([](int x) { return 2 * x; }, {.concurrency = 2}),
                      {.threads = 2, .logger = quiet});
    ferry::detail::any_value v;
    for (int epoch = 0; epoch < 2; ++epoch) {
        BOOST_TEST((rt->try_next(v) == next_poll::not_ready));  // no epoch runs
        takes_the_doubles(*rt, n);                              // next() starts one
        const auto s = rt->stats();
        BOOST_TEST(s.delivered == static_cast<std::uint64_t>((epoch + 1) * n));  // all epochs'
        check_accounting(s);
        BOOST_TEST(!rt->epoch_running());
    }
}

// A stage's error under `fail` comes out of try_next as out of next(): the outputs before the
// failing item, then the stage_error; afterwards try_next is `not_ready` and next() rethrows it.
BOOST_AUTO_TEST_CASE(throws_a_stage_error_as_next_does) {
    auto rt = compile(ferry::from(iota(100)).map(
                          [](int x) {
                              if (x == 40) throw std::runtime_error("bad record");
                              return x;
                          },
                          {.name = "decode"}),
                      {.threads = 2, .logger = quiet});
    ferry::detail::any_value v;
    BOOST_REQUIRE(rt->next(v));
    std::vector<int> got{v.take_as<int>()};
    const auto e = expect_throw<ferry::stage_error>([&] {
        while (poll(*rt, v) == next_poll::value) got.push_back(v.take_as<int>());
    });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(std::string(e->what()) == "stage 'decode' failed on item 40: bad record");
    BOOST_TEST(got == iota(40), boost::test_tools::per_element());
    BOOST_TEST((rt->try_next(v) == next_poll::not_ready));
    BOOST_CHECK_THROW(rt->next(v), ferry::stage_error);
}

// A tuned pipeline is taken with try_next too (in order, to its end), and this thread's CPU
// time between consumer_leaves and consumer_enters counts as the consumer's; a verdict of the tuner
// (a memory budget one output breaks, found at the first output) is left to next(), which throws
// it.
BOOST_AUTO_TEST_CASE(takes_a_tuned_pipelines_outputs_and_leaves_the_tuners_verdict_to_next) {
    const int n = 300;
    auto rt = compile(
        ferry::from(iota(n)).map([](int x) { return 2 * x; }, {.concurrency = ferry::tuned(1, 2)}),
        {.threads = 2, .logger = quiet});
    BOOST_TEST(rt->tuning());
    takes_the_doubles(*rt, n);
    check_accounting(rt->stats());
    rt->consumer_leaves();  // as a caller taking outputs for this thread does
    spin_thread_cpu(std::chrono::milliseconds(5));
    rt->consumer_enters();
    BOOST_TEST((rt->stats().consumer_cpu >= std::chrono::milliseconds(5)));

    auto bad = compile(
        ferry::from(iota(1000))
            .map([](int x) { return std::vector<char>(100'000, char(x)); },
                 {.concurrency = ferry::tuned(1, 2)})
            .batch(8),
        {.threads = 2, .logger = quiet, .autotune = ferry::autotune{.memory_budget = 500'000}});
    ferry::detail::any_value v;
    BOOST_REQUIRE(bad->next(v));  // the first output, whose measurement breaks the budget
    BOOST_TEST((bad->try_next(v) == next_poll::not_ready));
    BOOST_CHECK_THROW(bad->next(v), ferry::invalid_argument);

    auto plain = compile(ferry::from(iota(3)), {.threads = 1, .logger = quiet});
    BOOST_TEST(!plain->tuning());
}

// After stop(), try_next leaves the stop to next(), which returns false.
BOOST_AUTO_TEST_CASE(leaves_a_stop_to_next) {
    auto rt = compile(ferry::from(iota(1000)), {.threads = 1, .logger = quiet});
    ferry::detail::any_value v;
    BOOST_REQUIRE(rt->next(v));
    rt->stop();
    BOOST_TEST((rt->try_next(v) == next_poll::not_ready));
    BOOST_TEST(!rt->next(v));
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
