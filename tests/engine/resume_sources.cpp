// SPDX-License-Identifier: Apache-2.0
/// \file
/// How each kind of source resumes: a generator is pulled to the saved position, an epoch
/// factory that also takes `(epoch, position)` is opened there.

#include <boost/test/unit_test.hpp>

#include <algorithm>

#include "resume_support.hpp"

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(resume)
using namespace resume_test;

// A generator cannot seek: the resumed run pulls and drops the items before the position and
// delivers exactly the rest.
BOOST_AUTO_TEST_CASE(a_generator_source_resumes_by_pulling_to_the_position) {
    const auto make = [](std::optional<ferry::pipeline_state> st) {
        return ferry::from([i = 0]() mutable -> std::optional<int> {
                   if (i == 30) return std::nullopt;
                   return i++;
               })
            .map([](int x) { return x * 2; })
            .build({.threads = 1, .resume_from = std::move(st)});
    };
    auto p = make(std::nullopt);
    for (int k = 0; k < 12; ++k) (void)p.next();
    const auto st = p.state();
    BOOST_TEST(st.position() == 12U);
    auto q = make(st);
    const auto rest = drain(q);
    BOOST_REQUIRE(rest.size() == 18U);
    BOOST_TEST(rest.front() == 24);
    BOOST_TEST(rest.back() == 58);
}

// A positioned epoch factory resumes exactly (skips, filters and batches included) by opening
// the saved epoch at its position; a plain factory, which cannot, still resumes exactly.
BOOST_AUTO_TEST_CASE(a_positioned_epoch_factory_resumes_exactly) {
    for (const bool positioned : {true, false}) {
        const positioned_numbers numbers{.n = 41};
        const factory make = [numbers, positioned](const ferry::pipeline_options& o) {
            const auto shaped = [&o](auto b) {
                return b.map(noisy, {.concurrency = 2, .on_error = ferry::skip})
                    .filter([](int x) { return x / 1000 % 5 != 2; })
                    .batch(3)
                    .map([](const std::vector<int>& v) { return text(v); })
                    .build(o);
            };
            if (positioned) return shaped(ferry::from(numbers));
            return shaped(ferry::from([numbers](std::uint64_t e) { return numbers(e); }));
        };
        std::vector<std::vector<int>> kept;  // each epoch's rotation, less skips and filtered
        for (std::uint64_t e = 0; e < resume_test::epochs; ++e) {
            kept.push_back(positioned_numbers{.n = 41}.numbers(e));
            std::erase_if(kept.back(), [](int x) { return x % 11 == 5 || x % 5 == 2; });
        }
        check_resume(positioned ? "positioned factory" : "plain factory", make, texts(kept, 3),
                     without_noise);
        const bool called_at =
            std::any_of(numbers.calls->begin(), numbers.calls->end(),
                        [](const std::string& c) { return c.find('@') != std::string::npos; });
        BOOST_TEST(called_at == positioned);
    }
}

// A resume calls the positioned factory once, with the saved epoch and the state's position
// (the count of source items before it), and the next epoch with the one-argument call.
BOOST_AUTO_TEST_CASE(a_positioned_epoch_factory_is_opened_at_the_state_position) {
    const positioned_numbers numbers{.n = 30};
    std::optional<ferry::pipeline_state> st;
    {
        auto p = ferry::from(numbers)
                     .filter([](int x) { return x % 4 != 0; })
                     .batch(5)
                     .build({.threads = 2});
        std::size_t batches = 0;
        for (auto& b : p) {
            (void)b;
            if (++batches == 3) {
                st = p.state();
                break;
            }
        }
    }
    BOOST_TEST_REQUIRE(st.has_value());
    // 15 outputs: the 20 numbers 0..19 less the 5 multiples of 4 of them.
    BOOST_TEST(st->position() == 20U);
    numbers.calls->clear();
    auto q = ferry::from(numbers)
                 .filter([](int x) { return x % 4 != 0; })
                 .batch(5)
                 .build({.threads = 2, .resume_from = st});
    std::vector<int> rest;
    for (auto& b : q) rest.insert(rest.end(), b.begin(), b.end());
    const std::vector<int> expected{21, 22, 23, 25, 26, 27, 29};
    BOOST_TEST(rest == expected, boost::test_tools::per_element());
    for (auto& b : q) (void)b;  // epoch 1
    const std::vector<std::string> calls{"0@20", "1"};
    BOOST_TEST(*numbers.calls == calls, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
