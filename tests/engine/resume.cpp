// SPDX-License-Identifier: Apache-2.0
/// \file
/// pipeline_state and resume_from, the way tf.data tests its checkpoints: run a pipeline for
/// several epochs without a break; then for many break points, run it to the point, take the
/// state, destroy the pipeline, build it again from the parsed state and run to the same end.
/// The outputs before the break followed by those after it must be the uninterrupted run's:
/// the same items, order and batches.

#include <boost/test/unit_test.hpp>

#include <sstream>

#include "resume_support.hpp"

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(resume)
using namespace resume_test;

BOOST_AUTO_TEST_CASE(map_and_filter_with_skips_resume_exactly) {
    for (const int c : {1, 4}) {
        const factory make = [c](const ferry::pipeline_options& o) {
            return ferry::from(iota_vec(60))
                .map(noisy, {.concurrency = c, .on_error = ferry::skip})
                .filter([](int x) { return x / 1000 % 7 != 3; }, c)
                .map([](int x) { return text(x); }, c)
                .build(o);
        };
        std::vector<int> kept;  // noisy skips x % 11 == 5, the filter drops x % 7 == 3
        for (int x = 0; x < 60; ++x) {
            if (x % 11 != 5 && x % 7 != 3) kept.push_back(x);
        }
        check_resume("map+filter, concurrency " + std::to_string(c), make, texts({kept, kept}),
                     without_noise);
    }
}

BOOST_AUTO_TEST_CASE(flat_map_resumes_between_the_outputs_of_one_item) {
    for (const int c : {1, 4}) {
        // Item x has x % 4 outputs (none for multiples of 4): a state falls between the outputs
        // of one item, after an item with none, and after the last output of an item.
        const factory make = [c](const ferry::pipeline_options& o) {
            return ferry::from(iota_vec(40))
                .flat_map(
                    [](int x) {
                        std::vector<int> v;
                        for (int j = 0; j < x % 4; ++j) v.push_back(x * 10 + j);
                        return v;
                    },
                    c)
                .filter([](int x) { return x % 10 != 2; }, c)
                .map([](int x) { return text(x); }, c)
                .build(o);
        };
        std::vector<int> out;
        for (int x = 0; x < 40; ++x) {
            for (int j = 0; j < x % 4; ++j) {
                if (j != 2) out.push_back(x * 10 + j);
            }
        }
        check_resume("flat_map, concurrency " + std::to_string(c), make, texts({out, out}));
    }
}

BOOST_AUTO_TEST_CASE(batches_after_flat_map_and_nested_expansions_resume_exactly) {
    for (const int c : {1, 4}) {
        const factory batched = [c](const ferry::pipeline_options& o) {
            return ferry::from(iota_vec(50))
                .flat_map(
                    [](int x) { return std::vector<int>(static_cast<std::size_t>(x % 3), x); }, c)
                .map([](int x) { return x + 1; }, {.concurrency = c, .executor = ferry::io})
                .batch(4)
                .map([](const std::vector<int>& b) { return text(b); })
                .build(o);
        };
        std::vector<int> copies;  // x % 3 copies of x + 1
        for (int x = 0; x < 50; ++x) copies.insert(copies.end(), std::size_t(x % 3), x + 1);
        check_resume("flat_map+batch, concurrency " + std::to_string(c), batched,
                     texts({copies, copies}, 4));
        // batch -> unbatch -> flat_map: two nested expansions of one batch of source items.
        const factory nested = [c](const ferry::pipeline_options& o) {
            return ferry::from(iota_vec(30))
                .filter([](int x) { return x % 5 != 1; }, c)
                .batch(3)
                .unbatch()
                .flat_map(
                    [](int x) {
                        return std::vector<int>{x, -x};
                    },
                    c)
                .map([](int x) { return text(x); }, c)
                .build(o);
        };
        std::vector<int> signs;
        for (int x = 0; x < 30; ++x) {
            if (x % 5 == 1) continue;
            signs.push_back(x);
            signs.push_back(-x);
        }
        check_resume("batch+unbatch+flat_map, concurrency " + std::to_string(c), nested,
                     texts({signs, signs}));
    }
}

BOOST_AUTO_TEST_CASE(sampled_shuffled_ranks_resume_with_the_same_augmentation) {
    const auto data = iota_vec(45);
    for (const int c : {1, 4}) {
        const factory make = [&data, c](const ferry::pipeline_options& o) {
            return ferry::from(data, ferry::sampling{.shuffle = true,
                                                     .seed = 7,
                                                     .rank = 1,
                                                     .world_size = 4,
                                                     .remainder = ferry::remainder::pad})
                .map(noisy, {.concurrency = c, .on_error = ferry::skip})
                .batch(3)
                .map([](const std::vector<int>& b) { return text(b); }, c)
                .build(o);
        };
        // Rank 1 of 4's share of epochs 0 and 1 (pinned in tests/core/sampler.cpp), less
        // what noisy skips (x % 11 == 5), in batches of 3.
        std::vector<std::vector<int>> shares{{25, 28, 39, 27, 40, 35, 11, 17, 37, 24, 29, 41},
                                             {30, 35, 17, 27, 25, 15, 39, 28, 42, 16, 9, 7}};
        for (auto& e : shares) std::erase_if(e, [](int x) { return x % 11 == 5; });
        check_resume("sampled, concurrency " + std::to_string(c), make, texts(shares, 3),
                     without_noise);
    }
}

// Resumes against sequences written out by hand, not against another ferry run: in order, and
// shuffled with the pinned permutation of 10 items, seed 42 (tests/core/sampler.cpp).
BOOST_AUTO_TEST_CASE(resumes_give_the_hand_written_sequences) {
    using batches = std::vector<std::vector<int>>;
    const auto data = iota_vec(10);
    std::string saved;
    {
        auto p = ferry::from(data).batch(3).build({.threads = 2});
        for (auto& b : p) {
            BOOST_TEST(b == (std::vector<int>{0, 1, 2}), boost::test_tools::per_element());
            saved = p.state().serialize();
            break;
        }
    }
    auto rest = ferry::from(data).batch(3).build(
        {.threads = 2, .resume_from = ferry::pipeline_state::parse(saved)});
    BOOST_TEST((drain(rest) == (batches{{3, 4, 5}, {6, 7, 8}, {9}})));

    const ferry::sampling shuffled{.shuffle = true, .seed = 42};
    std::vector<int> got;
    {
        auto p = ferry::from(data, shuffled).build({.threads = 2});
        for (const int x : p) {
            got.push_back(x);
            if (got.size() == 4) {
                saved = p.state().serialize();
                break;
            }
        }
    }
    BOOST_TEST(got == (std::vector<int>{1, 8, 3, 2}), boost::test_tools::per_element());
    auto q = ferry::from(data, shuffled)
                 .build({.threads = 2, .resume_from = ferry::pipeline_state::parse(saved)});
    BOOST_TEST(drain(q) == (std::vector<int>{4, 0, 6, 5, 9, 7}), boost::test_tools::per_element());
    BOOST_TEST(drain(q) == (std::vector<int>{1, 3, 4, 0, 9, 7, 2, 6, 8, 5}),  // epoch 1
               boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(state_says_where_the_epoch_stands) {
    auto p = ferry::from(iota_vec(10))
                 .flat_map([](int x) {
                     return std::vector<int>{x, x};
                 })
                 .batch(3)
                 .build({.threads = 2});
    // Before any output: the start of epoch 0.
    BOOST_TEST(p.state().epoch() == 0U);
    BOOST_TEST(p.state().position() == 0U);
    BOOST_TEST(p.state().children().empty());
    auto b = p.next();  // {0, 0, 1}: item 1 has one output left
    BOOST_REQUIRE(b.has_value());
    BOOST_TEST(p.state().epoch() == 0U);
    BOOST_TEST(p.state().position() == 1U);
    BOOST_TEST(p.state().children() == std::vector<std::uint64_t>{1},
               boost::test_tools::per_element());
    BOOST_TEST(p.state().shape() == "flat_map,batch:3");
    BOOST_TEST(!p.state().sampler().has_value());
    b = p.next();  // {1, 2, 2}: item 2 done
    BOOST_TEST(p.state().position() == 3U);
    BOOST_TEST(p.state().children().empty());
    while (p.next()) {
    }
    // The epoch ended: the state is the next one's start.
    BOOST_TEST(p.state().epoch() == 1U);
    BOOST_TEST(p.state().position() == 0U);
}

BOOST_AUTO_TEST_CASE(state_counts_the_failures_before_its_position) {
    auto p = ferry::from(iota_vec(40))
                 .map(
                     [](int x) {
                         if (x % 10 == 3) throw ferry::io_error("down");
                         return x;
                     },
                     {.on_error = ferry::skip})
                 .build({.threads = 1, .logger = quiet});
    std::optional<ferry::pipeline_state> st;
    for (const int x : p) {
        if (x == 25) {
            st = p.state();
            break;
        }
    }
    BOOST_REQUIRE(st.has_value());
    BOOST_TEST(st->position() == 26U);
    BOOST_TEST(st->failed() == 3U);  // items 3, 13, 23
    // The resumed run goes on from item 26: 4 of the epoch's 40 items failed (10%, 1 of them
    // after the resume), under its 15% budget.
    auto q =
        ferry::from(iota_vec(40))
            .map(
                [](int x) {
                    if (x % 10 == 3) throw ferry::io_error("down");
                    return x;
                },
                {.on_error = ferry::skip})
            .build(
                {.threads = 1, .logger = quiet, .max_epoch_failure_rate = 0.15, .resume_from = st});
    std::vector<int> rest;
    for (const int x : q) rest.push_back(x);
    BOOST_TEST(rest.front() == 26);
    BOOST_TEST(rest.size() == 13U);  // 26..39 but 33
    BOOST_TEST(q.stats().failed == 1U);
}

BOOST_AUTO_TEST_CASE(failure_budget_counts_the_failures_before_the_save) {
    const auto make = [](double limit, std::optional<ferry::pipeline_state> st) {
        return ferry::from(iota_vec(20))
            .map(
                [](int x) {
                    if (x < 8) throw ferry::io_error("down");  // 8 of the first 10 fail
                    return x;
                },
                {.on_error = ferry::skip})
            .build({.threads = 1,
                    .logger = quiet,
                    .max_epoch_failure_rate = limit,
                    .resume_from = std::move(st)});
    };
    ferry::pipeline_state st(0, 10);
    st.set_failed(8);
    st.set_shape("map");
    // 8 of 20 failed over the epoch: 40%, over a 30% budget although the resumed part had none.
    auto p = make(0.3, st);
    expect_saying<ferry::error>([&] { drain(p); }, "8 of 20 items failed");
    auto q = make(0.5, st);
    BOOST_TEST(drain(q).size() == 10U);
}

BOOST_AUTO_TEST_CASE(serialize_and_parse_round_trip) {
    ferry::pipeline_state st(3, 1234, {2, 0, 7});
    st.set_failed(5);
    st.set_shape("map,flat_map,batch:32:drop_last,unbatch,flat_map");
    st.set_sampler(ferry::sampler_identity{.n = 1000000000,
                                           .seed = 42,
                                           .rank = 3,
                                           .world_size = 8,
                                           .remainder = ferry::remainder::drop,
                                           .shuffle = true});
    const std::string text = st.serialize();
    BOOST_TEST(text.rfind("ferry-state 1 ", 0) == 0U);
    BOOST_TEST(text.find('\n') == std::string::npos);
    BOOST_TEST((ferry::pipeline_state::parse(text) == st));
    BOOST_TEST((ferry::pipeline_state::parse(text + "\n") == st));
    const ferry::pipeline_state start;
    BOOST_TEST((ferry::pipeline_state::parse(start.serialize()) == start));
}

BOOST_AUTO_TEST_CASE(parse_rejects_what_is_not_a_state) {
    using ferry::pipeline_state;
    const auto rejects = [](const std::string& blob, const std::string& says) {
        BOOST_TEST_CONTEXT("blob '" << blob << "'") {
            expect_saying<ferry::invalid_argument>([&] { (void)pipeline_state::parse(blob); },
                                                   says);
        }
    };
    rejects("", "the text is empty");
    rejects("{\"epoch\": 3}", "not a ferry pipeline state");
    rejects("ferry-state 2 epoch=0", "version 2 is not one this ferry reads (1)");
    rejects("ferry-state 1 epoch=1 children= failed=0 shape=map", "field 'position' is missing");
    rejects("ferry-state 1 epoch=x position=0 children= failed=0 shape=map",
            "field 'epoch' is not a number: 'x'");
    rejects("ferry-state 1 epoch=1 position=0 children=1,,2 failed=0 shape=map",
            "field 'children' is not a number: ''");
    rejects("ferry-state 1 epoch=1 position=0 children= failed=0 shape=map colour=red",
            "unknown field 'colour'");
    rejects(
        "ferry-state 1 epoch=1 position=0 children= failed=0 shape=map "
        "sampler=n:10,seed:1,rank:0,world:1,remainder:keep,shuffle:1",
        "the sampler's remainder is 'keep', not pad or drop");
    rejects(
        "ferry-state 1 epoch=1 position=0 children= failed=0 shape=map "
        "sampler=n:10,seed:1,rank:0,world:1,remainder:pad,shuffle:1,source:zip",
        "the sampler's source is 'zip', not dataset or mix");
}

BOOST_AUTO_TEST_CASE(a_state_of_another_dataset_or_pipeline_is_refused) {
    const auto data100 = iota_vec(100);
    const auto data99 = iota_vec(99);
    const auto sampled = [](const std::vector<int>& d, std::uint64_t seed, std::size_t rank,
                            std::optional<ferry::pipeline_state> st) {
        return ferry::from(
                   d, ferry::sampling{.shuffle = true, .seed = seed, .rank = rank, .world_size = 2})
            .map([](int x) { return x; })
            .build({.threads = 1, .resume_from = std::move(st)});
    };
    auto p = sampled(data100, 1, 0, std::nullopt);
    (void)p.next();
    const auto st = ferry::pipeline_state::parse(p.state().serialize());
    BOOST_TEST(st.sampler()->n == 100U);
    expect_saying<ferry::invalid_argument>(
        [&] { (void)sampled(data99, 1, 0, st); },
        "resume_from: the state was saved with a dataset of 100 items, this pipeline's has 99");
    expect_saying<ferry::invalid_argument>(
        [&] { (void)sampled(data100, 2, 0, st); },
        "resume_from: the state was saved with seed 1, this pipeline's is 2");
    expect_saying<ferry::invalid_argument>([&] { (void)sampled(data100, 1, 1, st); },
                                           "rank 0 of 2, this pipeline is rank 1 of 2");
    // Another shape of stages.
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::from(data100, ferry::sampling{.shuffle = true, .seed = 1, .world_size = 2})
                .map([](int x) { return x; })
                .batch(4)
                .build({.resume_from = st});
        },
        "the state was saved by a pipeline of stages 'map', this one has 'map,batch:4'");
    // A shape made in code (parse refuses it) is quoted escaped: it cannot start a log line.
    auto forged = st;
    forged.set_shape("map\n[error] forged\x1b[2J");
    expect_saying<ferry::invalid_argument>(
        [&] { (void)sampled(data100, 1, 0, forged); },
        "pipeline of stages 'map\\n[error] forged\\x1b[2J', this one has 'map'");
    // No sampling now.
    expect_saying<ferry::invalid_argument>(
        [&] { (void)ferry::from(data100).map([](int x) { return x; }).build({.resume_from = st}); },
        "this one has no sampling");
}

BOOST_AUTO_TEST_CASE(unordered_pipelines_resume_with_each_item_once) {
    // Items finish out of order (a sleep that varies per item); the state is the first
    // position not done and the done ones past it. Per epoch, the items before the break and
    // after the resume are the uninterrupted run's, each once.
    using items = std::vector<std::string>;  // "epoch:item"
    const auto at = [](std::uint64_t e, int x) { return std::to_string(e) + ":" + text(x); };
    for (const int c : {1, 4}) {
        const auto make = [c](std::optional<ferry::pipeline_state> st) {
            return ferry::from(iota_vec(60))
                .map(
                    [](int x) {
                        std::this_thread::sleep_for(std::chrono::microseconds(x % 7 * 150));
                        if (x % 13 == 4) throw ferry::decode_error("bad");
                        return x;
                    },
                    {.concurrency = c, .on_error = ferry::skip})
                .filter([](int x) { return x % 5 != 2; }, c)
                .batch(3)
                .build({.threads = 2,
                        .ordered = false,
                        .logger = quiet,
                        .resume_from = std::move(st)});
        };
        items whole;
        {
            auto p = make(std::nullopt);
            for (std::uint64_t e = 0; e < resume_test::epochs; ++e) {
                for (const auto& b : p) {
                    for (const int x : b) whole.push_back(at(e, x));
                }
            }
        }
        std::sort(whole.begin(), whole.end());
        const std::size_t batches = (whole.size() + 2) / 3;
        for (std::size_t k = 1; k <= batches; k += 1 + batches / 22) {
            BOOST_TEST_CONTEXT("concurrency " << c << ", break after batch " << k) {
                items got;
                std::string saved;
                {
                    auto p = make(std::nullopt);
                    std::size_t taken = 0;
                    for (std::uint64_t e = 0; e < resume_test::epochs && saved.empty(); ++e) {
                        for (const auto& b : p) {
                            for (const int x : b) got.push_back(at(e, x));
                            if (++taken == k) {
                                saved = p.state().serialize();
                                break;
                            }
                        }
                    }
                }
                BOOST_REQUIRE(!saved.empty());
                const auto st = ferry::pipeline_state::parse(saved);
                auto p = make(st);
                for (auto e = st.epoch(); e < resume_test::epochs; ++e) {
                    for (const auto& b : p) {
                        for (const int x : b) got.push_back(at(e, x));
                    }
                }
                std::sort(got.begin(), got.end());
                BOOST_TEST(got == whole, boost::test_tools::per_element());
            }
        }
    }
}

BOOST_AUTO_TEST_CASE(unordered_with_flat_map_has_no_state) {
    auto p = ferry::from(iota_vec(10))
                 .flat_map([](int x) {
                     return std::vector<int>{x, x};
                 })
                 .build({.ordered = false});
    expect_saying<ferry::invalid_argument>([&] { (void)p.state(); },
                                           "cannot tell which outputs of an item were delivered");
    // An unordered state does not resume an ordered pipeline.
    ferry::pipeline_state st(0, 3);
    st.set_done({5, 6});
    st.set_shape("map");
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::from(iota_vec(10)).map([](int x) { return x; }).build({.resume_from = st});
        },
        "saved by an unordered pipeline");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
