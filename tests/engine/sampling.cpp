// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::from(range, sampling) through real pipelines: each rank's epochs in exactly the
/// sampler's order at concurrency > 1, describe/exclude on a sampled source, owned and borrowed
/// ranges, options checked at once.
#include <boost/test/unit_test.hpp>
#include <set>
#include <string>
#include <vector>

#include "support.hpp"

using namespace ferry_test;

namespace sampling_test {

/// What a rank's pipeline should deliver in `epoch`: the sampled elements of `data`.
template <class T>
std::vector<T> expected(const std::vector<T>& data, const ferry::sampling& o, std::uint64_t epoch) {
    const ferry::sampler s(data.size(), o);
    std::vector<T> out;
    for (std::uint64_t i = 0; i < s.size(); ++i) out.push_back(data[s.index(epoch, i)]);
    return out;
}

}  // namespace sampling_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(sampling)
using namespace sampling_test;

// Four ranks, pad and drop, three epochs, a map at concurrency 4 on 2 threads: each epoch
// delivers exactly sampler.index(epoch, i) in order; the ranks' epochs are disjoint (drop) or
// cover the data (pad), with equal counts; each epoch's order differs.
BOOST_AUTO_TEST_CASE(each_rank_gets_the_samplers_order_every_epoch) {
    const std::vector<int> data = iota(103);
    for (const auto rem : {ferry::remainder::pad, ferry::remainder::drop}) {
        std::vector<std::vector<int>> epochs_of_rank0;
        for (std::uint64_t epoch = 0; epoch < 3; ++epoch) epochs_of_rank0.emplace_back();
        std::vector<std::set<int>> union_per_epoch(3);
        for (std::size_t rank = 0; rank < 4; ++rank) {
            const ferry::sampling o{
                .shuffle = true, .seed = 42, .rank = rank, .world_size = 4, .remainder = rem};
            auto p = ferry::from(data, o)
                         .map([](int x) { return x * 10; }, 4)
                         .build({.threads = 2, .logger = quiet});
            for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
                BOOST_TEST_CONTEXT("rank " << rank << ", epoch " << epoch << ", "
                                           << (rem == ferry::remainder::pad ? "pad" : "drop")) {
                    std::vector<int> want = expected(data, o, epoch);
                    for (int& x : want) x *= 10;
                    const auto got = drain(p);
                    BOOST_TEST(got == want, boost::test_tools::per_element());
                    BOOST_TEST(got.size() == (rem == ferry::remainder::pad ? 26u : 25u));
                    union_per_epoch[epoch].insert(got.begin(), got.end());
                    if (rank == 0) epochs_of_rank0[epoch] = got;
                }
            }
            const auto s = p.stats();
            BOOST_TEST(s.epochs == 3u);
            check_complete_accounting(s);
        }
        for (std::uint64_t epoch = 0; epoch < 3; ++epoch) {
            // pad covers all 103; drop leaves out 3 (4 * 25 = 100 distinct items).
            BOOST_TEST(union_per_epoch[epoch].size() ==
                       (rem == ferry::remainder::pad ? 103u : 100u));
        }
        BOOST_TEST((epochs_of_rank0[0] != epochs_of_rank0[1]));
        BOOST_TEST((epochs_of_rank0[1] != epochs_of_rank0[2]));
    }
}

// describe and exclude work on a sampled source: excluded items count as filtered, failures
// name the element's path.
BOOST_AUTO_TEST_CASE(describe_and_exclude_work_on_a_sampled_source) {
    std::vector<std::string> names;
    for (int i = 0; i < 20; ++i) names.push_back("item/" + std::to_string(i));
    const ferry::sampling o{.shuffle = true, .seed = 9, .rank = 1, .world_size = 2};
    auto p = ferry::from(names, o)
                 .exclude({"item/3", "item/4"})
                 .map(
                     [](const std::string& s) {
                         if (s == "item/5") throw ferry::io_error("unreadable");
                         return s;
                     },
                     {.concurrency = 4, .on_error = ferry::skip})
                 .build({.threads = 2, .logger = quiet});
    std::vector<std::string> want;
    for (auto& s : expected(names, o, 0)) {
        if (s != "item/3" && s != "item/4" && s != "item/5") want.push_back(s);
    }
    BOOST_TEST(drain(p) == want, boost::test_tools::per_element());
    const auto mine = expected(names, o, 0);
    const auto on_mine = [&](const char* n) {
        return std::count(mine.begin(), mine.end(), std::string(n));
    };
    const auto s = p.stats();
    BOOST_TEST(s.filtered == static_cast<std::uint64_t>(on_mine("item/3") + on_mine("item/4")));
    const auto failures = p.failures();
    BOOST_REQUIRE_EQUAL(failures.size(), static_cast<std::size_t>(on_mine("item/5")));
    for (const auto& f : failures) BOOST_TEST(f.input == "item/5");
}

// Elements with a .path (labelled files) name themselves in failure records, as from(range)'s do.
BOOST_AUTO_TEST_CASE(labelled_files_name_their_path_in_failures) {
    const ferry::sources::labelled_files files(
        {{"a/0.png", 0}, {"a/1.png", 0}, {"b/2.png", 1}, {"b/3.png", 1}}, {"a", "b"});
    auto p = ferry::from(files, ferry::sampling{.shuffle = true, .seed = 1})
                 .map(
                     [](const ferry::sources::labelled_file& f) {
                         if (f.label == 1) throw ferry::decode_error("bad");
                         return f.label;
                     },
                     {.on_error = ferry::skip})
                 .build({.threads = 1, .logger = quiet});
    BOOST_TEST(drain(p) == (std::vector<int>{0, 0}), boost::test_tools::per_element());
    std::set<std::string> failed;
    for (const auto& f : p.failures()) failed.insert(f.input);
    BOOST_TEST(failed == (std::set<std::string>{"b/2.png", "b/3.png"}),
               boost::test_tools::per_element());
}

// An rvalue range is owned (the temporary is gone before the first epoch); an lvalue is read in
// place, its size again each epoch.
BOOST_AUTO_TEST_CASE(owns_rvalues_and_rereads_lvalues_each_epoch) {
    const ferry::sampling o{.shuffle = true, .seed = 3};
    auto owned = ferry::from(iota(50), o).build({.threads = 1});
    BOOST_TEST(drain(owned) == expected(iota(50), o, 0), boost::test_tools::per_element());

    std::vector<int> grows = iota(10);
    auto borrowed = ferry::from(grows, o).build({.threads = 1});
    BOOST_TEST(drain(borrowed) == expected(grows, o, 0), boost::test_tools::per_element());
    grows = iota(12);
    BOOST_TEST(drain(borrowed) == expected(grows, o, 1), boost::test_tools::per_element());
}

// Options the sampler rejects fail at from(), before anything is built.
BOOST_AUTO_TEST_CASE(bad_options_fail_at_from) {
    const auto e = expect_throw<ferry::invalid_argument>(
        [] { (void)ferry::from(iota(5), ferry::sampling{.rank = 2, .world_size = 2}); });
    BOOST_TEST(e.what().find("rank 2 is not below world_size 2") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
