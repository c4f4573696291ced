// SPDX-License-Identifier: Apache-2.0
/// \file
/// Exactly-once delivery through every stage kind and executor, swept over stage concurrency and
/// pipeline threads; and the concurrency cap each stage promises.
#include <oneapi/tbb/parallel_for.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <memory>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ferry_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace delivery_test {

constexpr int n_items = 500;

std::vector<int> mapped(int n, int (*f)(int)) {
    std::vector<int> out;
    for (int i = 0; i < n; ++i) out.push_back(f(i));
    return out;
}

int times3(int x) {
    return 3 * x;
}
bool keep(int x) {
    return x % 3 != 0;
}

/// flat_map body: 0 to 3 outputs per input (every 4th input yields none and counts as filtered).
std::vector<int> spread(int x) {
    std::vector<int> out;
    for (int k = 0; k < x % 4; ++k) out.push_back(x * 10 + k);
    return out;
}

std::vector<int> spread_all(int n) {
    std::vector<int> out;
    for (int i = 0; i < n; ++i) {
        for (int y : spread(i)) out.push_back(y);
    }
    return out;
}

std::vector<int> kept(int n) {
    std::vector<int> out;
    for (int i = 0; i < n; ++i)
        if (keep(i)) out.push_back(i);
    return out;
}

}  // namespace delivery_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(delivery)
using namespace delivery_test;

// Every source item reaches the consumer exactly once through a compute map.
BOOST_DATA_TEST_CASE(map_delivers_every_item_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    auto p = ferry::from(iota(n_items)).map(times3, conc).build({.threads = threads});
    BOOST_TEST(sorted(drain(p)) == mapped(n_items, times3), boost::test_tools::per_element());
    const auto s = p.stats();
    BOOST_TEST(s.produced == std::uint64_t{n_items});
    BOOST_TEST(s.delivered == std::uint64_t{n_items});
    check_complete_accounting(s);
}

// A filter keeps exactly the items its predicate accepts, each once; the rest count as filtered.
BOOST_DATA_TEST_CASE(filter_delivers_kept_items_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    auto p = ferry::from(iota(n_items)).filter(keep, conc).build({.threads = threads});
    const auto want = kept(n_items);
    BOOST_TEST(sorted(drain(p)) == want, boost::test_tools::per_element());
    const auto s = p.stats();
    BOOST_TEST(s.delivered == want.size());
    BOOST_TEST(s.filtered == n_items - want.size());
    check_complete_accounting(s);
}

// flat_map emits every output of every input exactly once; empty expansions count as filtered.
BOOST_DATA_TEST_CASE(flat_map_delivers_every_output_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    auto p = ferry::from(iota(n_items)).flat_map(spread, conc).build({.threads = threads});
    BOOST_TEST(sorted(drain(p)) == spread_all(n_items), boost::test_tools::per_element());
    const auto s = p.stats();
    BOOST_TEST(s.filtered == std::uint64_t{n_items / 4});
    check_complete_accounting(s);
}

// batch then unbatch around concurrent maps neither loses nor repeats an item, and every batch
// but the last is full.
BOOST_DATA_TEST_CASE(batch_and_unbatch_deliver_every_item_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    std::vector<std::size_t> sizes;
    std::mutex sizes_mutex;
    auto p = ferry::from(iota(n_items))
                 .map(times3, conc)
                 .batch(7)
                 .map(
                     [&](std::vector<int> b) {
                         std::lock_guard lock(sizes_mutex);
                         sizes.push_back(b.size());
                         return b;
                     },
                     conc)
                 .unbatch()
                 .build({.threads = threads});
    BOOST_TEST(sorted(drain(p)) == mapped(n_items, times3), boost::test_tools::per_element());
    BOOST_TEST(sizes.size() == std::size_t{(n_items + 6) / 7});
    BOOST_TEST(std::count(sizes.begin(), sizes.end(), std::size_t{7}) == n_items / 7);
    BOOST_TEST(std::count(sizes.begin(), sizes.end(), std::size_t{n_items % 7}) == 1);
    check_complete_accounting(p.stats());
}

// Batches delivered to the consumer hold every item exactly once, and count as source items.
BOOST_DATA_TEST_CASE(batches_deliver_every_item_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    auto p = ferry::from(iota(n_items)).map(times3, conc).batch(16).build({.threads = threads});
    BOOST_TEST(sorted(drain_flat(p)) == mapped(n_items, times3), boost::test_tools::per_element());
    const auto s = p.stats();
    BOOST_TEST(s.delivered == std::uint64_t{n_items});
    BOOST_TEST(s.outputs == std::uint64_t{(n_items + 15) / 16});
    check_complete_accounting(s);
}

// map, filter and flat_map on I/O threads deliver exactly what their compute versions do.
BOOST_DATA_TEST_CASE(io_stages_deliver_every_item_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    const ferry::stage_options io{.concurrency = conc, .executor = ferry::io};
    {
        auto p = ferry::from(iota(n_items)).map(times3, io).build({.threads = threads});
        BOOST_TEST(sorted(drain(p)) == mapped(n_items, times3), boost::test_tools::per_element());
        check_complete_accounting(p.stats());
        BOOST_TEST(p.stats().stages.at(1).io);
    }
    {
        auto p = ferry::from(iota(n_items)).filter(keep, io).build({.threads = threads});
        BOOST_TEST(sorted(drain(p)) == kept(n_items), boost::test_tools::per_element());
        check_complete_accounting(p.stats());
    }
    {
        auto p = ferry::from(iota(n_items)).flat_map(spread, io).build({.threads = threads});
        BOOST_TEST(sorted(drain(p)) == spread_all(n_items), boost::test_tools::per_element());
        check_complete_accounting(p.stats());
    }
}

// map_async with std::future results fulfilled by another thread, out of order.
BOOST_DATA_TEST_CASE(map_async_future_delivers_every_item_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    async_service service(2, std::chrono::microseconds(200));
    auto p = ferry::from(iota(n_items))
                 .map_async(
                     [&](int x) {
                         auto promise = std::make_shared<std::promise<int>>();
                         auto result = promise->get_future();
                         service.post([promise, x] { promise->set_value(times3(x)); });
                         return result;
                     },
                     conc)
                 .build({.threads = threads});
    BOOST_TEST(sorted(drain(p)) == mapped(n_items, times3), boost::test_tools::per_element());
    check_complete_accounting(p.stats());
}

// map_async<U> with a ferry::completion called from another thread, out of order.
BOOST_DATA_TEST_CASE(map_async_completion_delivers_every_item_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    async_service service(2, std::chrono::microseconds(200));
    auto p = ferry::from(iota(n_items))
                 .map_async<int>(
                     [&](int x, ferry::completion<int> done) {
                         service.post([done, x] { done(times3(x)); });
                     },
                     conc)
                 .build({.threads = threads});
    BOOST_TEST(sorted(drain(p)) == mapped(n_items, times3), boost::test_tools::per_element());
    check_complete_accounting(p.stats());
}

// A chain of every stage kind (compute, io, async) delivers exactly the composed result.
BOOST_DATA_TEST_CASE(mixed_chain_delivers_every_item_exactly_once,
                     bdata::make(concurrencies) * bdata::make(thread_counts), conc, threads) {
    async_service service(2);
    auto p =
        ferry::from(iota(n_items))
            .map(times3, {.concurrency = conc, .executor = ferry::io})
            .filter([](int x) { return x % 2 == 0; }, conc)
            .flat_map(
                [](int x) {
                    return std::vector<int>{x, -x - 1};
                },
                conc)
            .batch(5)
            .unbatch()
            // a data test case body is a template: the member template needs `template`
            .template map_async<int>(
                [&](int x, ferry::completion<int> done) { service.post([done, x] { done(x); }); },
                conc)
            .build({.threads = threads});
    std::vector<int> want;
    for (int i = 0; i < n_items; ++i) {
        if (times3(i) % 2 == 0) {
            want.push_back(times3(i));
            want.push_back(-times3(i) - 1);
        }
    }
    BOOST_TEST(sorted(drain(p)) == sorted(want), boost::test_tools::per_element());
    check_complete_accounting(p.stats());
}

// A compute map runs exactly as many calls at once as it may: calls wait until that many are
// inside, then the peak must equal it. The rule: min(concurrency, threads) — a compute call
// holds one of the arena's `threads` workers.
BOOST_DATA_TEST_CASE(map_runs_exactly_its_concurrency_calls_at_once,
                     bdata::make({1, 2, 4}) * bdata::make({1, 2, 4}), conc, threads) {
    const int cap = std::min(conc, threads);
    concurrency_probe probe(cap);
    auto p = ferry::from(iota(60))
                 .map(
                     [&](int x) {
                         const concurrency_probe::scope in(probe);
                         std::this_thread::sleep_for(200us);  // room for a call over the cap
                         return x;
                     },
                     conc)
                 .build({.threads = threads, .fast_start = false});
    BOOST_TEST(drain(p).size() == 60u);
    BOOST_TEST(probe.filled());
    BOOST_TEST(probe.peak() == cap);
}

// A compute call that waits for TBB work of its own (a parallel_for, as an op built on TBB runs)
// gets no other call of its stage on its thread meanwhile: while it waits, its thread runs only
// its own work (a map whose concurrency is at least its threads runs isolated, graph.cpp), so no
// more than min(concurrency, threads) calls run at once, and every item comes out once.
BOOST_DATA_TEST_CASE(a_call_waiting_on_nested_tbb_work_shares_no_slot,
                     bdata::make({1, 2}) * bdata::make({1, 2}), conc, threads) {
    const int cap = std::min(conc, threads);
    concurrency_probe probe;
    auto p = ferry::from(iota(40))
                 .map(
                     [&](int x) {
                         const concurrency_probe::scope in(probe);
                         tbb::parallel_for(0, 16, [](int) { std::this_thread::sleep_for(100us); });
                         return x;
                     },
                     conc)
                 .build({.threads = threads});
    BOOST_TEST(drain(p) == iota(40), boost::test_tools::per_element());
    BOOST_TEST(probe.peak() <= cap);
}

// An io map runs exactly `concurrency` calls at once (one thread per slot), whatever the
// pipeline's threads.
BOOST_DATA_TEST_CASE(io_map_runs_exactly_its_concurrency_calls_at_once, bdata::make({1, 3, 8}),
                     conc) {
    concurrency_probe probe(conc);
    auto p = ferry::from(iota(60))
                 .map(
                     [&](int x) {
                         const concurrency_probe::scope in(probe);
                         std::this_thread::sleep_for(200us);  // room for a call over the cap
                         return x;
                     },
                     {.concurrency = conc, .executor = ferry::io})
                 .build({.threads = 1, .fast_start = false});
    BOOST_TEST(drain(p).size() == 60u);
    BOOST_TEST(probe.filled());
    BOOST_TEST(probe.peak() == conc);
}

// map_async has exactly `concurrency` calls outstanding at its peak: no completion comes before
// that many calls were made (a bounded wait), and the peak must equal it.
BOOST_DATA_TEST_CASE(map_async_keeps_exactly_its_concurrency_calls_outstanding,
                     bdata::make({1, 3, 8}), conc) {
    std::atomic<int> outstanding{0};
    std::atomic<int> peak{0};
    waitable_count started;
    std::atomic<bool> filled{true};
    const auto deadline = steady::now() + bounded_wait;
    async_service service(4, std::chrono::microseconds(300));
    auto p = ferry::from(iota(100))
                 .map_async<int>(
                     [&](int x, ferry::completion<int> done) {
                         const int now = outstanding.fetch_add(1) + 1;
                         int seen = peak.load();
                         while (now > seen && !peak.compare_exchange_weak(seen, now)) {
                         }
                         started.add();
                         service.post([&, done, x] {
                             if (!started.wait_for(conc, deadline)) filled = false;
                             outstanding.fetch_sub(1);
                             done(x);
                         });
                     },
                     conc)
                 .build({.threads = 2, .fast_start = false});
    BOOST_TEST(sorted(drain(p)) == iota(100), boost::test_tools::per_element());
    BOOST_TEST(filled.load());
    BOOST_TEST(peak.load() == conc);
}

// Two pipelines of different sizes, consumed at the same time from two threads, each deliver
// everything exactly once (they share TBB's worker limit).
BOOST_AUTO_TEST_CASE(two_pipelines_side_by_side_deliver_everything) {
    auto small = ferry::from(iota(n_items)).map(times3, 2).build({.threads = 1});
    auto big = ferry::from(iota(n_items))
                   .map(times3, {.concurrency = 8, .executor = ferry::io})
                   .filter(keep, 4)
                   .build({.threads = 4});
    std::vector<int> from_small;
    std::thread other([&] { from_small = drain(small); });
    const auto from_big = drain(big);
    other.join();
    BOOST_TEST(from_small == mapped(n_items, times3), boost::test_tools::per_element());
    std::vector<int> want;
    for (int i = 0; i < n_items; ++i)
        if (keep(times3(i))) want.push_back(times3(i));
    BOOST_TEST(from_big == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
