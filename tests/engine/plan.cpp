// SPDX-License-Identifier: Apache-2.0
/// \file
/// The plan on its own (engine/plan.hpp): names, concurrency, ordering and the in-flight limit
/// that make_plan() decides, and the option checks it makes, without building a graph.

#include "engine/plan.hpp"

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <chrono>
#include <ferry/error.hpp>
#include <string>
#include <thread>

#include "../support/expect.hpp"

namespace plan_test {

using ferry::detail::make_plan;
using ferry::detail::pipeline_spec;
using ferry::detail::stage_kind;
using ferry::detail::stage_spec;
using ferry_test::expect_throw;

pipeline_spec with_source() {
    pipeline_spec spec;
    spec.source.open = [](std::uint64_t) {
        return ferry::detail::source_cursor([](ferry::detail::any_value&) { return false; });
    };
    return spec;
}

stage_spec stage(stage_kind kind, ferry::stage_options options = {}, std::size_t batch = 0) {
    stage_spec s;
    s.kind = kind;
    s.options = std::move(options);
    s.batch_size = batch;
    return s;
}

/// The message of the invalid_argument that make_plan must throw for `spec` and `options` ("" and
/// a recorded failure when it accepts them or throws anything else).
std::string rejection(pipeline_spec spec, const ferry::pipeline_options& options = {}) {
    return expect_throw<ferry::invalid_argument>([&] { (void)make_plan(std::move(spec), options); })
        .what();
}

}  // namespace plan_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(plan)
using namespace plan_test;

// Unnamed stages are named by kind and position; batch and unbatch run one call at a time.
BOOST_AUTO_TEST_CASE(names_stages_by_kind_and_position) {
    auto spec = with_source();
    spec.stages.push_back(stage(stage_kind::map, {.concurrency = 3}));
    spec.stages.push_back(stage(stage_kind::filter, {.name = "keep"}));
    spec.stages.push_back(stage(stage_kind::batch, {.concurrency = 8}, 4));
    const auto p = make_plan(std::move(spec), {.threads = 2});
    BOOST_REQUIRE_EQUAL(p.stages.size(), 3u);
    BOOST_TEST(p.stages[0].name == "map#1");
    BOOST_TEST(p.stages[0].concurrency == 3);
    BOOST_TEST(p.stages[1].name == "keep");
    BOOST_TEST(p.stages[1].kind == "filter");
    BOOST_TEST(p.stages[2].name == "batch#3");
    BOOST_TEST(p.stages[2].concurrency == 1);
    BOOST_TEST(p.stages[2].renumbers);
    BOOST_TEST(!p.stages[0].renumbers);
}

// The default thread count leaves half the machine to the trainer; the default in_flight keeps
// every call slot busy (at least 64), and the credit batch and burst are a quarter of it.
BOOST_AUTO_TEST_CASE(defaults_leave_half_the_machine_and_fill_every_slot) {
    auto spec = with_source();
    spec.stages.push_back(stage(stage_kind::map, {.concurrency = 20}));
    const auto p = make_plan(std::move(spec), {});
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    BOOST_TEST(p.threads == std::max(1, hw / 2));
    const std::size_t expect = std::max<std::size_t>(64, 4 * 20 + 4 * p.threads);
    BOOST_TEST(p.in_flight == expect);
    BOOST_TEST(p.credit_batch == expect / 4);
    BOOST_TEST(p.burst == std::min<std::size_t>(16, expect / 4));
}

// Nested batches need the product of their sizes before the first output; unbatch undoes one.
BOOST_AUTO_TEST_CASE(first_output_needs_the_product_of_nested_batches) {
    auto spec = with_source();
    spec.stages.push_back(stage(stage_kind::batch, {}, 4));
    spec.stages.push_back(stage(stage_kind::batch, {}, 8));
    spec.stages.push_back(stage(stage_kind::unbatch));
    spec.stages.push_back(stage(stage_kind::batch, {}, 3));
    const auto p = make_plan(std::move(spec), {.threads = 1, .in_flight = 32});
    BOOST_TEST(p.first_output_items == 32u);
    BOOST_TEST(p.in_flight == 32u);
    BOOST_TEST(p.credit_batch == 8u);
}

// Once a stage gives up source order, every renumbering point after it does too.
BOOST_AUTO_TEST_CASE(order_given_up_stays_given_up_downstream) {
    auto spec = with_source();
    spec.stages.push_back(stage(stage_kind::map));
    spec.stages.push_back(stage(stage_kind::map, {.ordered = false}));
    spec.stages.push_back(stage(stage_kind::batch, {}, 2));
    const auto p = make_plan(std::move(spec), {.threads = 1});
    BOOST_TEST(p.stages[0].ordered);
    BOOST_TEST(!p.stages[1].ordered);
    BOOST_TEST(!p.stages[2].ordered);
    BOOST_TEST(!p.output_ordered);
}

// Every option that cannot work is refused with a message naming the stage and the option.
BOOST_AUTO_TEST_CASE(refuses_options_that_cannot_work_and_says_which) {
    BOOST_TEST(rejection(pipeline_spec{}) == "pipeline has no source");
    BOOST_TEST(rejection(with_source(), {.threads = -1}) ==
               "threads must be 0 (default) or positive, got -1");

    auto zero = with_source();
    zero.stages.push_back(stage(stage_kind::map, {.concurrency = 0}));
    BOOST_TEST(rejection(std::move(zero)) ==
               "stage 'map#1': concurrency must be at least 1, got 0");

    auto io_batch = with_source();
    io_batch.stages.push_back(stage(stage_kind::batch, {.executor = ferry::executor::io}, 2));
    BOOST_TEST(rejection(std::move(io_batch)) ==
               "stage 'batch#1': executor io applies to map, filter and flat_map stages");

    auto async_retry = with_source();
    async_retry.stages.push_back(
        stage(stage_kind::map_async, {.name = "fetch", .on_error = ferry::retry{.attempts = 3}}));
    BOOST_TEST(rejection(std::move(async_retry))
                   .starts_with("stage 'fetch': retry does not apply to map_async"));

    auto small = with_source();
    small.stages.push_back(stage(stage_kind::batch, {}, 16));
    BOOST_TEST(rejection(std::move(small), {.in_flight = 15}) ==
               "in_flight = 15 is too small: the batch stages need at least 16 source items in "
               "flight");
}

// What each kind means at run time is decided here, so that the runtime reads flags rather than
// asking the kind: renumbering, what the tuner may move and measure, calls that run apart.
BOOST_AUTO_TEST_CASE(says_what_each_kind_means_at_run_time) {
    auto spec = with_source();
    spec.stages.push_back(stage(stage_kind::map));
    spec.stages.push_back(stage(stage_kind::filter, {.timeout = std::chrono::milliseconds(50)}));
    spec.stages.push_back(stage(stage_kind::flat_map));
    spec.stages.push_back(stage(stage_kind::map_async, {.timeout = std::chrono::milliseconds(50)}));
    spec.stages.push_back(stage(stage_kind::batch, {}, 2));
    spec.stages.push_back(stage(stage_kind::unbatch));
    spec.stages.push_back(stage(stage_kind::batch_by, {}, 4));
    const auto p = make_plan(std::move(spec), {.threads = 1});
    BOOST_REQUIRE_EQUAL(p.stages.size(), 7u);
    const auto flags = [&](std::size_t i) {
        const auto& st = p.stages[i];
        return std::string(st.renumbers ? "R" : "-") + (st.tunable ? "T" : "-") +
               (st.timed ? "W" : "-") + (st.expands ? "E" : "-") + (st.applies ? "A" : "-");
    };
    BOOST_TEST(flags(0) == "-T--A");  // map
    BOOST_TEST(flags(1) == "-TW-A");  // filter with a timeout: its calls run apart
    BOOST_TEST(flags(2) == "RT-EA");  // flat_map
    BOOST_TEST(flags(3) == "-T---");  // map_async: a timeout arms its sink, no timed call
    BOOST_TEST(flags(4) == "R----");  // batch
    BOOST_TEST(flags(5) == "R--E-");  // unbatch
    BOOST_TEST(flags(6) == "R--E-");  // batch_by
}

// batch_by's batches list their items' positions (for an elastic resume's window) only where
// those are source positions: it is the first stage to renumber, and the output keeps order.
BOOST_AUTO_TEST_CASE(a_window_lists_its_items_only_where_they_are_source_positions) {
    auto first = with_source();
    first.stages.push_back(stage(stage_kind::map));
    first.stages.push_back(stage(stage_kind::batch_by, {}, 4));
    const auto p1 = make_plan(std::move(first), {.threads = 1});
    BOOST_TEST(p1.stages[1].lists_window);
    BOOST_TEST(!p1.stages[0].lists_window);

    auto after_batch = with_source();
    after_batch.stages.push_back(stage(stage_kind::batch, {}, 2));
    after_batch.stages.push_back(stage(stage_kind::batch_by, {}, 4));
    const auto p2 = make_plan(std::move(after_batch), {.threads = 1});
    BOOST_TEST(!p2.stages[1].lists_window);

    auto unordered = with_source();
    unordered.stages.push_back(stage(stage_kind::batch_by, {}, 4));
    const auto p3 = make_plan(std::move(unordered), {.threads = 1, .ordered = false});
    BOOST_TEST(!p3.stages[0].lists_window);
}

// A memory budget too small for the pipeline's shape is refused naming the stage that holds the
// first output's items, and how many each of its elements stands for.
BOOST_AUTO_TEST_CASE(names_the_stage_that_holds_the_first_output) {
    auto one = with_source();
    one.stages.push_back(stage(stage_kind::batch, {.name = "b"}, 4));
    BOOST_TEST(make_plan(std::move(one), {.threads = 1}).first_output_holds ==
               "batch 'b' fills batches of 4 elements");

    auto nested = with_source();
    nested.stages.push_back(stage(stage_kind::batch, {}, 4));
    nested.stages.push_back(stage(stage_kind::batch, {.name = "outer"}, 8));
    BOOST_TEST(make_plan(std::move(nested), {.threads = 1}).first_output_holds ==
               "batch 'outer' fills batches of 8 elements of 4 source items each");

    auto window = with_source();
    window.stages.push_back(stage(stage_kind::batch_by, {.name = "w"}, 16));
    BOOST_TEST(make_plan(std::move(window), {.threads = 1}).first_output_holds ==
               "batch_by 'w' holds a window of 16 elements");

    auto plain = with_source();
    plain.stages.push_back(stage(stage_kind::map));
    BOOST_TEST(make_plan(std::move(plain), {.threads = 1}).first_output_holds == "");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
