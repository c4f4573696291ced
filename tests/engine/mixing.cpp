// SPDX-License-Identifier: Apache-2.0
/// \file
/// Many sources in one pipeline: `ferry::mix` (weighted datasets) and `ferry::zip` (two sources
/// paired) deliver what their numbers say at any concurrency, account for every item, and resume
/// exactly from a state taken anywhere.

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ferry/mix.hpp"
#include "ferry/zip.hpp"
#include "resume_support.hpp"

namespace mixing_test {

using namespace resume_test;

/// `o` without warnings on stderr (the resume cases skip items on purpose).
ferry::pipeline_options hushed(ferry::pipeline_options o) {
    o.logger = quiet;
    return o;
}

/// Three sources of unequal length, shuffled, the smallest repeating.
struct three_sources {
    std::vector<int> a = numbered_source(0, 40), b = numbered_source(1, 17),
                     c = numbered_source(2, 6);
    std::vector<ferry::mix_sampler::source> numbers() const {
        return {{.size = 40, .weight = 5, .options = {.shuffle = true, .seed = 1}},
                {.size = 17, .weight = 3, .options = {.shuffle = true, .seed = 2}},
                {.size = 6, .weight = 2, .options = {.shuffle = true, .seed = 3, .repeat = true}}};
    }
    ferry::source_builder<int> mixed(const ferry::mix_options& o) const {
        const auto n = numbers();
        return ferry::mix<int>({{a, n[0].weight, n[0].options},
                                {b, n[1].weight, n[1].options},
                                {c, n[2].weight, n[2].options}},
                               o);
    }
    /// The elements of `epoch`, worked out from the numbers alone.
    std::vector<int> expected(const ferry::mix_options& o, std::uint64_t epoch) const {
        return mixed_items(numbers(), o, epoch);
    }
};

}  // namespace mixing_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(mixing)
using namespace mixing_test;

// A small mix written out by hand: weight 0 is never drawn, and a source of weight 1 with
// the other at 0 is the source itself, in its order, then the epoch ends.
BOOST_AUTO_TEST_CASE(a_one_sided_mix_is_its_source) {
    const std::vector<int> a{10, 11, 12}, b{20, 21};
    auto p =
        ferry::mix<int>({{a, 0.0}, {b, 1.0}}, {.stop = ferry::mix_stop::first_exhausted}).build();
    BOOST_TEST(drain(p) == (std::vector<int>{20, 21}));
    BOOST_TEST(drain(p) == (std::vector<int>{20, 21}));  // the next epoch, the same
    auto q = ferry::mix({ferry::mix_input{a, 1.0, {.repeat = true}}, ferry::mix_input{b, 0.0}},
                        {.stop = ferry::mix_stop::never, .epoch_length = 7})
                 .build();
    BOOST_TEST(drain(q) == (std::vector<int>{10, 11, 12, 10, 11, 12, 10}));
}

// The pipeline delivers the mix's numbers exactly, in order, at every concurrency and thread
// count, for each stop rule.
BOOST_AUTO_TEST_CASE(delivers_the_mix_in_the_same_order_at_any_concurrency) {
    const three_sources s;
    for (const auto stop : {ferry::mix_stop::first_exhausted, ferry::mix_stop::all_exhausted,
                            ferry::mix_stop::never}) {
        const ferry::mix_options o{.seed = 42, .stop = stop, .epoch_length = 90};
        const auto want0 = s.expected(o, 0);
        const auto want1 = s.expected(o, 1);
        BOOST_TEST_REQUIRE(want0.size() > 20U);
        BOOST_TEST(want0 != want1);
        for (const int concurrency : {1, 8}) {
            for (const int threads : {1, 4}) {
                BOOST_TEST_CONTEXT("stop " << static_cast<int>(stop) << ", concurrency "
                                           << concurrency << ", threads " << threads) {
                    auto p = ferry::from(s.mixed(o))
                                 .map([](int x) { return x; }, concurrency)
                                 .build({.threads = threads});
                    BOOST_TEST(drain(p) == want0, boost::test_tools::per_element());
                    BOOST_TEST(drain(p) == want1, boost::test_tools::per_element());
                }
            }
        }
    }
}

// With ranks, every rank's pipeline delivers the same number of items, and the ranks' items of
// the sources that do not repeat are disjoint.
BOOST_AUTO_TEST_CASE(every_rank_gets_the_same_count) {
    const three_sources s;
    std::vector<int> all;
    std::size_t count = 0;
    for (std::size_t r = 0; r < 3; ++r) {
        auto p =
            s.mixed({.seed = 5, .stop = ferry::mix_stop::all_exhausted, .rank = r, .world_size = 3})
                .build();
        const auto got = drain(p);
        if (r == 0) count = got.size();
        BOOST_TEST(got.size() == count);
        for (const int x : got) {
            if (x < 2000) all.push_back(x);
        }
    }
    // pad: 14 of the 40 and 6 of the 17 a rank; 2 and 1 items come twice.
    std::sort(all.begin(), all.end());
    BOOST_TEST(all.size() == 42U + 18U);
    all.erase(std::unique(all.begin(), all.end()), all.end());
    BOOST_TEST(all.size() == 40U + 17U);
}

// A state taken after any output, written out and read back, resumes a mix (shuffled, one
// source repeating, skips and filters on the way, batches) exactly, over two epochs, at
// concurrency 1 and 4.
BOOST_AUTO_TEST_CASE(a_mix_resumes_exactly_from_any_output) {
    const three_sources s;
    const ferry::mix_options o{.seed = 7, .stop = ferry::mix_stop::all_exhausted};
    std::vector<std::vector<int>> kept;
    for (std::uint64_t e = 0; e < resume_test::epochs; ++e) {
        kept.push_back(s.expected(o, e));
        std::erase_if(kept.back(), [](int x) { return x % 11 == 5 || x % 5 == 2; });
    }
    for (const int concurrency : {1, 4}) {
        const factory make = [&s, o, concurrency](const ferry::pipeline_options& po) {
            return ferry::from(s.mixed(o))
                .map(noisy, {.concurrency = concurrency, .on_error = ferry::skip})
                .filter([](int x) { return x / 1000 % 5 != 2; })
                .batch(3)
                .map([](const std::vector<int>& v) { return text(v); })
                .build(hushed(po));
        };
        check_resume("mix, concurrency " + std::to_string(concurrency), make, texts(kept, 3),
                     without_noise);
    }
}

// A state refused for another source says so in a mix's terms (another mix; a mix against a
// sampled dataset, both ways), never as "a dataset of <the mix's fingerprint> items"; a state
// saved before the source was recorded resumes the same mix, and is read as a mix, saying so.
BOOST_AUTO_TEST_CASE(a_state_of_another_mix_or_a_dataset_is_refused_in_mix_terms) {
    const three_sources s;
    const ferry::mix_options o{.seed = 7, .stop = ferry::mix_stop::all_exhausted};
    const auto data = iota_vec(100);
    using state = std::optional<ferry::pipeline_state>;
    const auto over = [](auto source, state st) {
        return ferry::from(std::move(source))
            .map([](int x) { return x; })
            .build(hushed({.threads = 1, .resume_from = std::move(st)}));
    };
    const auto this_mix = [&](state st) { return over(s.mixed(o), std::move(st)); };
    const auto other_mix = [&](state st) {
        return over(ferry::mix<int>({{s.a, 1.0}, {s.b, 1.0}}, o), std::move(st));
    };
    const auto dataset = [&](state st) {
        return over(ferry::from(data, ferry::sampling{.shuffle = true, .seed = 7}), std::move(st));
    };
    auto p = this_mix(std::nullopt);
    BOOST_TEST_REQUIRE(p.next().has_value());
    const auto saved = ferry::pipeline_state::parse(p.state().serialize());
    const std::string fingerprint = std::to_string(saved.sampler()->n);
    const auto refused = [&](const auto& make, const ferry::pipeline_state& st,
                             const std::string& says) {
        const auto e = expect_throw<ferry::invalid_argument>([&] { (void)make(st); }, says);
        BOOST_TEST(e.what().find(says) != std::string::npos,
                   "'" << e.what() << "' does not say '" << says << "'");
        BOOST_TEST(e.what().find(fingerprint) == std::string::npos, e.what());
    };
    refused(other_mix, saved,
            "resume_from: the state was saved by another mix (other sources, sizes, weights or "
            "rules)");
    refused(dataset, saved,
            "resume_from: the state was saved by a pipeline over a ferry::mix, this one samples "
            "a dataset of 100 items");
    auto d = dataset(std::nullopt);
    BOOST_TEST_REQUIRE(d.next().has_value());
    refused(this_mix, ferry::pipeline_state::parse(d.state().serialize()),
            "resume_from: the state was saved by a pipeline over a sampled dataset of 100 items, "
            "this one is over a ferry::mix");
    // The text names the source; one saved before it did is read as this pipeline's.
    std::string old = saved.serialize();
    const auto at = old.find(",source:mix");
    BOOST_TEST_REQUIRE(at != std::string::npos, old);
    old.erase(at, std::string(",source:mix").size());
    const auto unrecorded = ferry::pipeline_state::parse(old);
    BOOST_TEST((unrecorded.sampler()->source == ferry::sampled_source::unrecorded));
    auto resumed = this_mix(unrecorded);
    auto rest = s.expected(o, 0);
    rest.erase(rest.begin());
    BOOST_TEST(drain(resumed) == rest, boost::test_tools::per_element());
    refused(other_mix, unrecorded,
            "resume_from: the state was saved by another mix (other sources, sizes, weights or "
            "rules); the state does not say whether it sampled a dataset or a mix: read as a "
            "mix, as this pipeline samples one");
}

// Zip pairs two sources item by item and ends with the shorter; each part keeps its own order
// (here one sampled and shuffled), and the pairs are described by both parts.
BOOST_AUTO_TEST_CASE(zip_pairs_items_and_ends_with_the_shorter) {
    const std::vector<std::string> names{"a.jpg", "b.jpg", "c.jpg", "d.jpg"};
    const std::vector<int> labels{0, 1, 2, 3, 4, 5};
    auto p = ferry::zip(names, labels).build();
    const auto got = drain(p);
    BOOST_TEST_REQUIRE(got.size() == 4U);
    for (std::size_t i = 0; i < 4; ++i) {
        BOOST_TEST(got[i].first == names[i]);
        BOOST_TEST(got[i].second == static_cast<int>(i));
    }
    // A sampled, shuffled part: its pairs follow its sampler, epoch by epoch.
    const auto order = ferry::sampling{.shuffle = true, .seed = 3};
    auto q = ferry::zip(ferry::from(labels, order), ferry::from(names)).build();
    for (std::uint64_t e = 0; e < 2; ++e) {
        const auto pairs = drain(q);
        BOOST_TEST_REQUIRE(pairs.size() == 4U);
        const ferry::sampler want(labels.size(), order);
        for (std::uint64_t i = 0; i < 4; ++i) {
            BOOST_TEST(pairs[i].first == static_cast<int>(want.index(e, i)));
            BOOST_TEST(pairs[i].second == names[i]);
        }
    }
    // Failure records name both parts.
    const std::vector<std::string> captions{"a.txt", "b.txt"};
    auto r = ferry::zip(names, captions)
                 .map(
                     [](std::pair<std::string, std::string> x) -> int {
                         if (x.first == "b.jpg") throw ferry::decode_error("unreadable");
                         return 1;
                     },
                     {.on_error = ferry::skip})
                 .build({.logger = quiet});
    BOOST_TEST(drain(r).size() == 1U);
    const auto failures = r.failures();
    BOOST_TEST_REQUIRE(failures.size() == 1U);
    BOOST_TEST(failures[0].input == "b.jpg + b.txt");
}

// Zip refuses a part with exclude() (its items would leave their partners unpaired).
BOOST_AUTO_TEST_CASE(zip_refuses_a_part_with_exclusions) {
    const std::vector<std::string> names{"a.jpg", "b.jpg"};
    ferry::quarantine_list bad;
    expect_saying<ferry::invalid_argument>(
        [&] { (void)ferry::zip(ferry::from(names).exclude(bad), names); },
        "a source with exclude() cannot be zipped");
}

// A zip of a mix and a plain source, and a zip of two positioned sources, resume exactly from
// any output.
BOOST_AUTO_TEST_CASE(zip_and_mix_together_resume_exactly) {
    const three_sources s;
    const ferry::mix_options o{.seed = 3, .stop = ferry::mix_stop::first_exhausted};
    const positioned_numbers numbers{.n = 500};
    std::vector<std::vector<int>> kept;
    for (std::uint64_t e = 0; e < resume_test::epochs; ++e) {
        const auto m = s.expected(o, e);
        const auto n = numbers.numbers(e);
        kept.emplace_back();
        for (std::size_t i = 0; i < m.size(); ++i) {
            const int x = m[i] + n[i];
            if (x % 11 != 5) kept.back().push_back(x);
        }
    }
    for (const int concurrency : {1, 4}) {
        const factory make = [&s, o, numbers, concurrency](const ferry::pipeline_options& po) {
            return ferry::zip(s.mixed(o), numbers)
                .map([](std::pair<int, int> p) { return p.first + p.second; })
                .map(noisy, {.concurrency = concurrency, .on_error = ferry::skip})
                .batch(4)
                .map([](const std::vector<int>& v) { return text(v); })
                .build(hushed(po));
        };
        check_resume("zip(mix, numbers), concurrency " + std::to_string(concurrency), make,
                     texts(kept, 4), without_noise);
    }
}

// Every item of a mix is accounted for: delivered, filtered or failed, with failures in one
// source's items only; the failures name the items' mix positions' elements.
BOOST_AUTO_TEST_CASE(every_item_of_a_mix_is_accounted_for) {
    const three_sources s;
    const ferry::mix_options o{.seed = 9, .stop = ferry::mix_stop::all_exhausted};
    const auto want = s.expected(o, 0);
    auto p = ferry::from(s.mixed(o))
                 .map(
                     [](int x) {
                         if (x / 1000 == 1 && x % 3 == 0) throw ferry::decode_error("bad");
                         return x;
                     },
                     {.concurrency = 4, .on_error = ferry::skip})
                 .filter([](int x) { return x / 1000 != 2 || x % 2 == 0; })
                 .build({.threads = 2, .logger = quiet});
    const auto got = drain(p);
    std::vector<int> kept = want;
    std::erase_if(
        kept, [](int x) { return (x / 1000 == 1 && x % 3 == 0) || (x / 1000 == 2 && x % 2 != 0); });
    BOOST_TEST(got == kept, boost::test_tools::per_element());
    const auto st = settled_stats(p);
    check_complete_accounting(st);
    BOOST_TEST(st.produced == want.size());
    const auto failed = static_cast<std::uint64_t>(
        std::count_if(want.begin(), want.end(), [](int x) { return x / 1000 == 1 && x % 3 == 0; }));
    BOOST_TEST(st.failed == failed);
    BOOST_TEST(failed > 0U);
}

// Bad weights are refused when the mix is made, naming the source and the reason.
BOOST_AUTO_TEST_CASE(a_mix_refuses_bad_weights_at_once) {
    const std::vector<int> a{1}, b{2};
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::mix<int>({{a, 1.0}, {b, -1.0}});
        },
        "source 1 has a negative weight");
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::mix<int>({{a, 0.0}, {b, 0.0}});
        },
        "every weight is 0");
    expect_saying<ferry::invalid_argument>(
        [&] { (void)ferry::mix<int>(std::vector<ferry::mix_input<int>>{}); }, "no sources");
}

// Elastic: four ranks save a mix at uneven steps, the states are merged, and 1, 3 or 5 ranks
// take the rest of the epoch: every rank of the new world gets the same count, every item of
// every source comes at least once over both runs and again only as padding, and the epoch after
// is the new world's usual one.
BOOST_AUTO_TEST_CASE(a_mix_resumes_on_another_world_size) {
    const three_sources s;
    const auto options = [](std::size_t r, std::size_t w) {
        return ferry::mix_options{
            .seed = 5, .stop = ferry::mix_stop::all_exhausted, .rank = r, .world_size = w};
    };
    // Sources 0 and 1 do not repeat: each of their items once an epoch, up to the padding.
    const auto second_epoch = [&](std::size_t r, std::size_t w) {
        auto p = s.mixed(options(r, w)).build();
        (void)drain(p);
        return drain(p);
    };
    const std::size_t saved_world = 4;
    const std::vector<std::size_t> steps{3, 9, 0, 6};
    std::vector<int> before;
    std::vector<ferry::pipeline_state> states;
    for (std::size_t r = 0; r < saved_world; ++r) {
        auto p = s.mixed(options(r, saved_world)).build();
        for (std::size_t i = 0; i < steps[r]; ++i) before.push_back(*p.next());
        states.push_back(ferry::pipeline_state::parse(p.state().serialize()));
    }
    const auto merged =
        ferry::pipeline_state::parse(ferry::pipeline_state::merge(states).serialize());
    for (const std::size_t world : {1U, 3U, 5U}) {
        BOOST_TEST_CONTEXT("resumed on " << world << " ranks") {
            std::vector<int> all = before;
            std::size_t count = 0;
            for (std::size_t r = 0; r < world; ++r) {
                auto p = s.mixed(options(r, world)).build({.resume_from = merged});
                const auto rest = drain(p);
                if (r == 0) count = rest.size();
                BOOST_TEST(rest.size() == count);  // the same count on every new rank
                all.insert(all.end(), rest.begin(), rest.end());
                // The next epoch is the new world's usual one.
                BOOST_TEST(drain(p) == second_epoch(r, world), boost::test_tools::per_element());
            }
            for (const auto& [k, n] : {std::pair{0, 40}, std::pair{1, 17}}) {
                std::map<int, int> seen;
                for (const int x : all) {
                    if (x / 1000 == k) ++seen[x % 1000];
                }
                BOOST_TEST(seen.size() == static_cast<std::size_t>(n));  // every item
                int extra = 0;
                for (const auto& [item, times] : seen) extra += times - 1;
                // Padding only: the saved world's (under 4) and the new world's (under `world`).
                BOOST_TEST(extra < static_cast<int>(saved_world + world), "source " << k);
            }
        }
    }
}

// A state taken while the rest of a merged epoch runs resumes it exactly again on that world.
BOOST_AUTO_TEST_CASE(a_resumed_rest_resumes_again_on_its_world) {
    const three_sources s;
    std::vector<ferry::pipeline_state> states;
    for (std::size_t r = 0; r < 2; ++r) {
        auto p = s.mixed({.seed = 2, .rank = r, .world_size = 2}).build();
        for (std::size_t i = 0; i < 4 + 3 * r; ++i) (void)p.next();
        states.push_back(p.state());
    }
    const auto merged = ferry::pipeline_state::merge(states);
    const ferry::mix_options here{.seed = 2, .rank = 1, .world_size = 3};
    auto whole = s.mixed(here).build({.resume_from = merged});
    const auto rest = drain(whole);
    BOOST_TEST_REQUIRE(rest.size() > 6U);
    auto first = s.mixed(here).build({.resume_from = merged});
    std::vector<int> got;
    for (int i = 0; i < 5; ++i) got.push_back(*first.next());
    const auto mid = ferry::pipeline_state::parse(first.state().serialize());
    auto second = s.mixed(here).build({.resume_from = mid});
    for (const int x : drain(second)) got.push_back(x);
    BOOST_TEST(got == rest, boost::test_tools::per_element());
}

// A mix state is checked against the pipeline it resumes: another mix, or another rank, is
// refused naming what differs.
BOOST_AUTO_TEST_CASE(a_mix_state_resumes_only_its_own_mix) {
    const three_sources s;
    auto p = s.mixed({.seed = 1}).build();
    (void)p.next();
    const auto st = p.state();
    const std::vector<int> other{1, 2, 3};
    expect_saying<ferry::invalid_argument>(
        [&] {
            (void)ferry::mix<int>({{other, 1.0}}, {.seed = 1}).build({.resume_from = st});
        },
        "another mix");
    expect_saying<ferry::invalid_argument>(
        [&] { (void)s.mixed({.seed = 1, .rank = 1, .world_size = 2}).build({.resume_from = st}); },
        "merge the ranks' states");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
