// SPDX-License-Identifier: Apache-2.0
/// \file
/// batch_by: batches by cost and bucket, worked out by hand; the padding and oversized counts in
/// stats; bad costs failing their element, named; bad options refused; every element accounted
/// for; and exact resume from any output, alone and after a mix.

#include <boost/test/unit_test.hpp>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cost_groups.hpp"
#include "ferry/mix.hpp"
#include "resume_support.hpp"

namespace batch_by_test {

using namespace resume_test;

using index_lists = std::vector<std::vector<std::size_t>>;

/// Index lists as text: "[4][0,1]".
std::string listed(const index_lists& lists) {
    std::string out;
    for (const auto& l : lists) {
        out += "[";
        for (std::size_t i = 0; i < l.size(); ++i) out += (i ? "," : "") + std::to_string(l[i]);
        out += "]";
    }
    return out;
}

/// Batches as text, for comparing and printing.
std::vector<std::string> shown(const std::vector<std::vector<int>>& batches) {
    std::vector<std::string> out;
    for (const auto& b : batches) out.push_back(text(b));
    return out;
}

}  // namespace batch_by_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(batch_by)
using namespace batch_by_test;

// The grouping, worked out by hand: buckets [0, 2), [2, 5), [5, inf) and a max cost of 4. An
// element above 4 is a batch of its own at once; a bucket is emitted when the next element would
// take it past 4; what is left goes out at the end in the order the buckets were started.
BOOST_AUTO_TEST_CASE(groups_by_bucket_and_cost_as_worked_out_by_hand) {
    const auto g = ferry::detail::group_by_cost({1, 1, 3, 1, 6, 2, 9}, {2, 5}, 4);
    BOOST_TEST(listed(g.batches) == "[4][2][6][0,1,3][5]");
    BOOST_TEST(g.closed == (std::vector<bool>{true, true, true, false, false}));
    BOOST_TEST(g.oversized == 2U);
    // One bucket: plain cost-bounded batches in order.
    const auto one = ferry::detail::group_by_cost({2, 2, 1, 3, 4, 0}, {}, 4);
    BOOST_TEST(listed(one.batches) == "[0,1][2,3][4,5]");
    BOOST_TEST(one.closed == (std::vector<bool>{true, true, false}));
    // A cost equal to a bound goes to the bucket above it.
    const auto edge = ferry::detail::group_by_cost({2, 1.5, 2}, {2}, 10);
    BOOST_TEST(listed(edge.batches) == "[0,2][1]");
}

// In a pipeline: windows of `buffer` elements, each grouped alone; the batches hold the
// elements themselves, and the window's last partial buckets come out unless drop_last.
BOOST_AUTO_TEST_CASE(batches_a_pipeline_by_cost_window_by_window) {
    const std::vector<int> items{1, 1, 3, 1, 6, 2, 9, 2, 2, 1};
    for (const int concurrency : {1, 4}) {
        auto p =
            ferry::from(items)
                .map([](int x) { return x; }, concurrency)
                .batch_by([](int x) { return x; }, {.max_cost = 4, .buckets = {2, 5}, .buffer = 7})
                .build({.threads = 2});
        // Window 1 as above; window 2: {2, 2, 1}: buckets [2, 2] and [1], both left open.
        const std::vector<std::vector<int>> want{{6}, {3}, {9}, {1, 1, 1}, {2}, {2, 2}, {1}};
        BOOST_TEST(shown(drain(p)) == shown(want), boost::test_tools::per_element());
        BOOST_TEST(shown(drain(p)) == shown(want));  // every epoch alike
    }
    auto q = ferry::from(items)
                 .batch_by([](int x) { return x; },
                           {.max_cost = 4, .buckets = {2, 5}, .buffer = 7, .drop_last = true})
                 .build();
    // The last window's open buckets are left out; earlier windows keep theirs.
    const std::vector<std::vector<int>> kept{{6}, {3}, {9}, {1, 1, 1}, {2}};
    BOOST_TEST(shown(drain(q)) == shown(kept), boost::test_tools::per_element());
    const auto s = settled_stats(q);
    check_complete_accounting(s);
    BOOST_TEST(s.filtered == 3U);
    BOOST_TEST(s.delivered == 7U);
}

// stats() reports the batches' cost against their padded cost, and the oversized batches; the
// report prints the padding.
BOOST_AUTO_TEST_CASE(stats_show_the_padding_and_the_oversized_batches) {
    const std::vector<int> items{1, 1, 3, 1, 6, 2, 9};
    auto p = ferry::from(items)
                 .batch_by([](int x) { return x; },
                           {.max_cost = 4, .buckets = {2, 5}, .buffer = 7, .name = "by length"})
                 .build();
    (void)drain(p);
    const auto s = p.stats();
    const auto& row = row_named(s, "by length");
    BOOST_TEST(row.kind == "batch_by");
    BOOST_TEST(row.items_in == 7U);
    BOOST_TEST(row.items_out == 5U);
    BOOST_TEST(row.cost == 23.0);
    // {6}, {3}, {9}, {1, 1, 1} and {2}: every batch is as long as its largest element.
    BOOST_TEST(row.padded_cost == 23.0);
    bool counted = false;
    for (const auto& [name, n] : row.counters)
        counted = counted || (name == "oversized batches" && n == 2U);
    BOOST_TEST(counted);
    // Without buckets, one cost-bounded batch mixes short and long elements: padding.
    auto q = ferry::from(std::vector<int>{1, 3, 1, 3})
                 .batch_by([](int x) { return x; }, {.max_cost = 4, .name = "plain"})
                 .build();
    BOOST_TEST(shown(drain(q)) == shown({{1, 3}, {1, 3}}));
    const auto qs = q.stats();
    const auto& plain = row_named(qs, "plain");
    BOOST_TEST(plain.cost == 8.0);
    BOOST_TEST(plain.padded_cost == 12.0);
    std::ostringstream report;
    report << q.stats();
    BOOST_TEST(report.str().find("batches cost 8 of 12 padded to their largest element (padding "
                                 "33") != std::string::npos,
               report.str());
}

// A negative, NaN or infinite cost, or a cost function that throws, fails that element under
// the stage's policy, named, and the others are batched as if it were not there.
BOOST_AUTO_TEST_CASE(a_bad_cost_fails_its_element_named) {
    const std::vector<int> items{1, -1, 2, 7, 3, 8};
    const auto cost = [](int x) {
        if (x == 7) throw ferry::decode_error("no length for 7");
        if (x == 8) return std::numeric_limits<double>::quiet_NaN();
        return static_cast<double>(x);
    };
    auto p = ferry::from(items)
                 .batch_by(cost, {.max_cost = 10, .on_error = ferry::skip, .name = "by length"})
                 .build({.logger = quiet});
    BOOST_TEST(shown(drain(p)) == shown({{1, 2, 3}}));
    const auto s = settled_stats(p);
    check_complete_accounting(s);
    BOOST_TEST(s.failed == 3U);
    const auto failures = p.failures();
    BOOST_TEST_REQUIRE(failures.size() == 3U);
    BOOST_TEST(failures[0].stage == "by length");
    BOOST_TEST(failures[0].item == 1U);
    BOOST_TEST(failures[0].message.find("returned -1.0") != std::string::npos, failures[0].message);
    BOOST_TEST(failures[0].message.find("a cost must be a finite number >= 0") !=
               std::string::npos);
    BOOST_TEST(failures[1].message.find("no length for 7") != std::string::npos);
    BOOST_TEST(failures[2].message.find("returned nan") != std::string::npos, failures[2].message);
    // Under fail (the default) the first bad cost ends the epoch with a stage_error.
    auto q = ferry::from(items).batch_by(cost, {.max_cost = 10}).build({.logger = quiet});
    expect_saying<ferry::stage_error>([&] { (void)drain(q); }, "a cost must be a finite number");
}

// Options that cannot work are refused when the stage is added (or built), saying which.
BOOST_AUTO_TEST_CASE(refuses_options_that_cannot_work) {
    const auto b = ferry::from(std::vector<int>{1, 2});
    const auto cost = [](int x) { return x; };
    expect_saying<ferry::invalid_argument>([&] { (void)b.batch_by(cost, {}); },
                                           "max_cost must be a finite number above 0, got 0");
    expect_saying<ferry::invalid_argument>(
        [&] { (void)b.batch_by(cost, {.max_cost = std::nan("")}); },
        "max_cost must be a finite number above 0");
    expect_saying<ferry::invalid_argument>([&] { (void)b.batch_by(cost, {.max_cost = HUGE_VAL}); },
                                           "max_cost must be a finite number above 0");
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)b.batch_by(cost, {.max_cost = 5, .buckets = {2, 2}});
        },
        "bucket bounds must be finite and ascending; bound 1 is 2");
    expect_saying<ferry::invalid_argument>(
        [&] { (void)b.batch_by(cost, {.max_cost = 5, .buffer = 0}); }, "buffer must be at least 1");
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)b.batch_by(cost, {.max_cost = 5, .on_error = ferry::retry{.attempts = 2}})
                .build();
        },
        "retry does not apply to batch_by");
    // An in_flight below the window cannot fill it.
    expect_saying<ferry::invalid_argument>(
        [&] { (void)b.batch_by(cost, {.max_cost = 5, .buffer = 100}).build({.in_flight = 10}); },
        "is too small");
}

// A state taken after any output, written out and read back, resumes batch_by exactly (skips and
// filters before it, two epochs, concurrency 1 and 4): the window is gathered again and the
// batches of it already delivered are skipped.
BOOST_AUTO_TEST_CASE(resumes_exactly_from_any_output) {
    const auto cost = [](int x) { return static_cast<double>(x / 1000 % 7) + 0.5; };
    std::vector<std::vector<int>> want_epochs;
    std::vector<std::string> want;
    for (std::uint64_t e = 0; e < resume_test::epochs; ++e) {
        auto items = positioned_numbers{.n = 157}.numbers(e);
        std::erase_if(items, [](int x) { return x % 11 == 5 || x % 5 == 2; });
        for (const auto& b : by_cost(
                 items, [](int x) { return static_cast<double>(x % 7) + 0.5; }, {2, 4}, 9, 25)) {
            want.push_back(text(b));
        }
    }
    const positioned_numbers numbers{.n = 157};
    for (const int concurrency : {1, 4}) {
        const factory make = [numbers, cost, concurrency](const ferry::pipeline_options& o) {
            auto po = o;
            po.logger = quiet;
            return ferry::from(numbers)
                .map(noisy, {.concurrency = concurrency, .on_error = ferry::skip})
                .filter([](int x) { return x / 1000 % 5 != 2; })
                .batch_by(cost, {.max_cost = 9, .buckets = {2, 4}, .buffer = 25})
                .map([](const std::vector<int>& v) { return text(v); })
                .build(po);
        };
        check_resume("batch_by, concurrency " + std::to_string(concurrency), make, want,
                     without_noise);
    }
}

// drop_last over a stream that fills its last window exactly, resumed from a state taken after
// any output (inside the first window, at the edge between the windows, inside the last): the
// last window's open buckets are left out before and after the break. Worked out by hand: 12
// items, windows of 6, cost x % 3 in buckets of their own, max_cost 3; window 1 gives [2]
// closed, then [0,3], [1,4], [5] open; window 2 gives [8] closed, its open [6,9], [7,10], [11]
// left out.
BOOST_AUTO_TEST_CASE(drop_last_resumes_exactly_at_an_exactly_filled_last_window) {
    const std::vector<std::string> epoch{"[2,]", "[0,3,]", "[1,4,]", "[5,]", "[8,]"};
    std::vector<std::string> want;
    for (int e = 0; e < resume_test::epochs; ++e)
        want.insert(want.end(), epoch.begin(), epoch.end());
    for (const int concurrency : {1, 4}) {
        const factory make = [concurrency](const ferry::pipeline_options& o) {
            return ferry::from(iota_vec(12))
                .map([](int x) { return x; }, concurrency)
                .batch_by([](int x) { return static_cast<double>(x % 3); },
                          {.max_cost = 3, .buckets = {1, 2}, .buffer = 6, .drop_last = true})
                .map([](const std::vector<int>& v) { return text(v); })
                .build(o);
        };
        check_resume("drop_last, concurrency " + std::to_string(concurrency), make, want);
    }
}

// With drop_last a full window waits for the element after it (or the epoch's end) to know
// whether it was the last: in_flight must leave room for that element, and with just that room
// every epoch is delivered.
BOOST_AUTO_TEST_CASE(drop_last_needs_room_for_the_element_after_a_window) {
    const auto make = [](bool drop_last, std::size_t in_flight) {
        return ferry::from(iota_vec(12))
            .batch_by([](int) { return 1.0; }, {.max_cost = 4, .buffer = 6, .drop_last = drop_last})
            .build({.in_flight = in_flight});
    };
    expect_saying<ferry::invalid_argument>(
        [&] { (void)make(true, 6); },
        "in_flight = 6 is too small: the batch stages need at least 7 source items in flight");
    auto p = make(true, 7);
    for (int e = 0; e < 2; ++e) {
        // [0..3] closed, [4 5] open; [6..9] closed, [10 11] open and left out.
        BOOST_TEST(shown(drain(p)) == shown({{0, 1, 2, 3}, {4, 5}, {6, 7, 8, 9}}),
                   boost::test_tools::per_element());
    }
    // Without drop_last a window goes out as soon as it is full: the window's room is enough.
    auto q = make(false, 6);
    BOOST_TEST(shown(drain(q)) == shown({{0, 1, 2, 3}, {4, 5}, {6, 7, 8, 9}, {10, 11}}),
               boost::test_tools::per_element());
}

// A mix batched by cost resumes exactly too.
BOOST_AUTO_TEST_CASE(a_mix_batched_by_cost_resumes_exactly) {
    const auto a = numbered_source(0, 60), b = numbered_source(1, 25);
    const ferry::mix_options o{.seed = 4, .stop = ferry::mix_stop::all_exhausted};
    const std::vector<ferry::mix_sampler::source> numbers{
        {.size = 60, .weight = 2, .options = {.shuffle = true, .seed = 1}},
        {.size = 25, .weight = 1, .options = {.shuffle = true, .seed = 2}}};
    const auto cost = [](int x) { return static_cast<double>(x % 13); };
    std::vector<std::string> want;
    for (std::uint64_t e = 0; e < resume_test::epochs; ++e) {
        for (const auto& batch : by_cost(mixed_items(numbers, o, e), cost, {4, 8}, 20, 16)) {
            want.push_back(text(batch));
        }
    }
    for (const int concurrency : {1, 4}) {
        const factory make = [&, concurrency](const ferry::pipeline_options& po) {
            return ferry::mix<int>(
                       {{a, 2, {.shuffle = true, .seed = 1}}, {b, 1, {.shuffle = true, .seed = 2}}},
                       o)
                .map([](int x) { return x; }, concurrency)
                .batch_by(cost, {.max_cost = 20, .buckets = {4, 8}, .buffer = 16})
                .map([](const std::vector<int>& v) { return text(v); })
                .build(po);
        };
        check_resume("mix + batch_by, concurrency " + std::to_string(concurrency), make, want);
    }
}

// An unordered pipeline forms windows in completion order: it has no state to resume from,
// and says so.
BOOST_AUTO_TEST_CASE(an_unordered_batch_by_has_no_state) {
    auto p = ferry::from(std::vector<int>{1, 2, 3})
                 .map([](int x) { return x; }, {.concurrency = 2, .ordered = false})
                 .batch_by([](int x) { return x; }, {.max_cost = 4})
                 .build();
    (void)p.next();
    expect_saying<ferry::invalid_argument>([&] { (void)p.state(); }, "unordered pipeline");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
