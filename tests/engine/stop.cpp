// SPDX-License-Identifier: Apache-2.0
/// \file
/// Ending work early: stop() from another thread, destroying a pipeline over an endless source,
/// and many randomized early breaks — each without a hang or a leaked element.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <future>
#include <memory>
#include <optional>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ferry_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace stop_test {

/// An endless generator of 0, 1, 2, ... that takes `pause` per item and counts its pulls in
/// `pulls` (if any): what the pipeline's `produced` must equal.
auto endless(std::chrono::microseconds pause = std::chrono::microseconds(0),
             std::atomic<std::uint64_t>* pulls = nullptr) {
    return [i = 0, pause, pulls]() mutable -> std::optional<int> {
        if (pause.count() > 0) std::this_thread::sleep_for(pause);
        if (pulls != nullptr) ++*pulls;
        return i++;
    };
}

/// Calls `p.stop()` from another thread after `delay` (or once `ready` reaches `ready_count`),
/// noting when the call began and that it returned.
class stopper {
  public:
    template <class P>
    stopper(P& p, std::chrono::milliseconds delay)
        : thread_([this, &p, delay] {
              std::this_thread::sleep_for(delay);
              stop(p);
          }) {}
    /// Also adds 1 to `then` (if any) once stop() has returned.
    template <class P>
    stopper(P& p, waitable_count& ready, int ready_count, waitable_count* then = nullptr)
        : thread_([this, &p, &ready, ready_count, then] {
              (void)ready.wait_for(ready_count);
              stop(p);
              if (then != nullptr) then->add();
          }) {}
    ~stopper() { join(); }
    stopper(const stopper&) = delete;
    stopper& operator=(const stopper&) = delete;

    void join() {
        if (thread_.joinable()) thread_.join();
    }
    /// When stop() was called (read it after join()).
    [[nodiscard]] steady::time_point called() const { return called_; }
    /// Set once stop() has returned.
    [[nodiscard]] bool returned() const { return returned_.load(); }

  private:
    template <class P>
    void stop(P& p) {
        called_ = steady::now();
        p.stop();
        returned_ = true;
    }

    steady::time_point called_{};
    std::atomic<bool> returned_{false};
    std::thread thread_;  // last: it starts once the members above exist
};

/// How long (ms) a loop may take to end after stop() is called, when the longest call it could
/// be waiting for takes `longest_call`: that call plus the margin "promptly" allows.
long stop_bound(std::chrono::milliseconds longest_call) {
    return (longest_call + prompt_margin).count();
}

/// Milliseconds from `from` to `to`.
long ms_between(steady::time_point from, steady::time_point to) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(to - from).count();
}

/// What stop_with_every_slot_held saw.
struct held_stop {
    long loop_end_ms = 0;        ///< from the stop() call to the loop's end
    int started_after_stop = 0;  ///< calls that started after stop() returned
    int started = 0;             ///< calls in all
};

/// Runs an endless pipeline whose one stage (compute or io, 2 slots) holds each call until it is
/// let go; once both slots are held, another thread calls stop(). The calls are let go as soon
/// as stop() returns, or (`after_loop`) once the loop has ended.
held_stop stop_with_every_slot_held(bool on_io, bool after_loop) {
    constexpr int conc = 2;
    waitable_count entered;
    waitable_count let_go;
    std::atomic<int> started_after_stop{0};
    std::optional<stopper> s;
    auto ended = steady::now();
    {
        auto p = ferry::from(endless())
                     .map(
                         [&](int x) {
                             if (s->returned()) ++started_after_stop;
                             entered.add();
                             (void)let_go.wait_for(1);
                             return x;
                         },
                         {.concurrency = conc, .executor = on_io ? ferry::io : ferry::compute})
                     .build({.threads = 4, .in_flight = 16, .fast_start = false});
        s.emplace(p, entered, conc, after_loop ? nullptr : &let_go);
        int n = 0;
        for (int x : p) n += 1 + x * 0;
        ended = steady::now();
        let_go.add();
        s->join();
        BOOST_TEST(n == 0);
    }
    return {ms_between(s->called(), ended), started_after_stop.load(), entered.value()};
}

}  // namespace stop_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(stop)
using namespace stop_test;

// stop() from another thread makes a next() blocked on a slow source return nullopt promptly.
BOOST_AUTO_TEST_CASE(stop_unblocks_a_waiting_next) {
    std::atomic<std::uint64_t> pulls{0};
    auto p = ferry::from(endless(std::chrono::microseconds(2000), &pulls))
                 .filter([](int) { return false; })  // nothing ever reaches the consumer
                 .build({.threads = 2});
    stopper s(p, 30ms);
    const std::optional<int> got = p.next();
    const auto ended = steady::now();
    s.join();
    BOOST_TEST(!got.has_value());
    BOOST_TEST(ms_between(s.called(), ended) <= stop_bound(2ms));  // the source's 2 ms pull
    BOOST_TEST(!p.next().has_value());
    const auto st = settled_stats(p);
    check_accounting(st);
    BOOST_TEST(st.produced == pulls.load());
    BOOST_TEST(st.cancelled <= st.in_flight);
}

// stop() from another thread ends a range-for over an endless source; what arrived before is
// the source's prefix, in order; the pipeline stays stopped.
BOOST_AUTO_TEST_CASE(stop_ends_a_loop_over_an_endless_source) {
    std::atomic<std::uint64_t> pulls{0};
    auto p = ferry::from(endless(std::chrono::microseconds(0), &pulls))
                 .map([](int x) { return x; }, 4)
                 .build({.threads = 2});
    std::vector<int> got;
    stopper s(p, 20ms);
    for (int x : p) got.push_back(x);
    const auto ended = steady::now();
    s.join();
    BOOST_TEST(ms_between(s.called(), ended) <= stop_bound(0ms));
    BOOST_TEST(got == iota(static_cast<int>(got.size())), boost::test_tools::per_element());
    BOOST_TEST(!p.next().has_value());
    int after = 0;
    for (int x : p) after += 1 + x * 0;
    BOOST_TEST(after == 0);
    const auto st = settled_stats(p);
    check_accounting(st);
    BOOST_TEST(st.produced == pulls.load());
    BOOST_TEST(st.delivered == got.size());
    BOOST_TEST(st.cancelled <= st.in_flight);
}

// After stop(), the items of calls still running are pending, not cancelled: a lost item cannot
// hide in a count made up as the remainder. Once the calls return, ferry counts them (and what
// was queued behind them) as cancelled where it drops them: pending reaches 0 without the
// pipeline being destroyed, and produced equals the source's own count of pulls.
BOOST_AUTO_TEST_CASE(items_of_calls_running_after_stop_are_pending_until_they_return) {
    constexpr int conc = 2;
    waitable_count entered;
    waitable_count let_go;
    std::atomic<std::uint64_t> pulls{0};
    auto p = ferry::from(endless(std::chrono::microseconds(0), &pulls))
                 .map(
                     [&](int x) {
                         entered.add();
                         (void)let_go.wait_for(1);  // ignores stop(): runs on after it
                         return x;
                     },
                     conc)
                 .build({.threads = 4, .in_flight = 16, .fast_start = false});
    stopper s(p, entered, conc);
    int n = 0;
    for (int x : p) n += 1 + x * 0;
    s.join();
    BOOST_TEST(n == 0);
    const auto during = p.stats();
    BOOST_TEST(during.pending >= std::uint64_t{conc});  // at least the held calls' items
    BOOST_TEST(during.pending <= during.in_flight);
    BOOST_TEST(during.produced == during.delivered + during.filtered + during.failed +
                                      during.cancelled + during.pending);
    let_go.add();
    const auto after = settled_stats(p);
    check_accounting(after);
    BOOST_TEST(after.produced == pulls.load());
    BOOST_TEST(after.cancelled == after.produced);  // nothing was delivered, filtered or failed
    BOOST_TEST(after.cancelled <= after.in_flight);
}

// stop() before the first next() means the pipeline yields nothing.
BOOST_AUTO_TEST_CASE(stop_before_reading_yields_nothing) {
    auto p = ferry::from(iota(100)).map([](int x) { return x; }, 2).build({.threads = 2});
    p.stop();
    BOOST_TEST(!p.next().has_value());
    BOOST_TEST(p.stats().delivered == 0u);
}

// stop() while a slow I/O stage has calls running returns the consumer promptly.
BOOST_AUTO_TEST_CASE(stop_during_slow_io_calls_returns_promptly) {
    auto p = ferry::from(endless())
                 .map(
                     [](int x) {
                         std::this_thread::sleep_for(5ms);
                         return x;
                     },
                     {.concurrency = 8, .executor = ferry::io})
                 .build({.threads = 2});
    int n = 0;
    stopper s(p, 30ms);
    for (int x : p) n += 1 + x * 0;
    const auto ended = steady::now();
    s.join();
    BOOST_TEST(ms_between(s.called(), ended) <= stop_bound(5ms));  // the calls' 5 ms
    BOOST_TEST(!p.next().has_value());
}

// No call starts once stop() has ended the loop: with every slot of the stage held by a call
// when stop() is called and items queued behind them, the loop ends within the margin of stop()
// while those calls are still held (it does not wait for them), and letting them end then
// starts no other, up to the pipeline's destruction. On compute and io stages.
BOOST_DATA_TEST_CASE(no_call_starts_once_stop_has_ended_the_loop, bdata::make({false, true}),
                     on_io) {
    const held_stop r = stop_with_every_slot_held(on_io, true);
    BOOST_TEST(r.loop_end_ms <= stop_bound(0ms));
    BOOST_TEST(r.started_after_stop == 0);
    BOOST_TEST(r.started == 2);
}

// The same, with the held calls let go as soon as stop() returns, before the consumer's thread
// has woken: no call may start after stop() returned.
BOOST_DATA_TEST_CASE(no_call_starts_after_stop_returns, bdata::make({false, true}), on_io) {
    const held_stop r = stop_with_every_slot_held(on_io, false);
    BOOST_TEST(r.loop_end_ms <= stop_bound(0ms));
    BOOST_TEST(r.started_after_stop == 0);
    BOOST_TEST(r.started == 2);
}

// stop() from another thread ends a resume that pulls a generator to a far saved position: the
// generator is pulled a handful of times after the call, next() returns nothing, nothing is
// recorded as failed, and state() still names the saved position (saved again, it resumes there).
BOOST_AUTO_TEST_CASE(stop_ends_a_resume_pulling_an_endless_generator_to_its_position) {
    constexpr std::uint64_t far = 1'000'000'000'000'000ULL;
    std::atomic<std::uint64_t> pulls{0};
    std::atomic<bool> stop_called{false};
    std::atomic<std::uint64_t> pulls_after_stop{0};
    // A replay that ignored the stop would run for days: the generator ends its epoch itself
    // once it has been pulled for a while after stop(), so that such a run fails its checks
    // instead of hanging the suite.
    auto generator = [&, i = std::uint64_t{0},
                      since = steady::time_point{}]() mutable -> std::optional<std::uint64_t> {
        ++pulls;
        if (stop_called.load()) {
            if (pulls_after_stop.fetch_add(1) == 0) since = steady::now();
            if (steady::now() - since > bounded_wait) return std::nullopt;
        }
        return i++;
    };
    auto p = ferry::from(std::move(generator))
                 .map([](std::uint64_t x) { return x; })
                 .build({.threads = 2,
                         .logger = quiet,
                         .resume_from = ferry::pipeline_state::parse(
                             "ferry-state 1 epoch=0 position=" + std::to_string(far) +
                             " children= failed=0 shape=map")});
    steady::time_point called{};
    std::thread stopper_thread([&] {
        (void)wait_until([&] { return pulls.load() > 10'000; });
        called = steady::now();
        stop_called = true;
        p.stop();
    });
    std::optional<std::uint64_t> got;
    BOOST_CHECK_NO_THROW(got = p.next());
    const auto ended = steady::now();
    stopper_thread.join();
    BOOST_TEST(!got.has_value());
    BOOST_TEST(pulls_after_stop.load() < 1000U);
    BOOST_TEST(ms_between(called, ended) <= stop_bound(0ms));
    const auto st = p.stats();
    BOOST_TEST(st.failed == 0U);
    BOOST_TEST(p.failures().empty());
    BOOST_TEST(p.state().position() == far);
    BOOST_TEST(!p.next().has_value());
}

// A resume whose position lies past the source's epoch is refused, naming the position and
// the items the epoch has, where an empty epoch would have hidden the mismatch: a generator
// pulled to its end, a sampled dataset (a state made in code), a mix.
BOOST_AUTO_TEST_CASE(a_resume_past_the_end_of_the_source_is_refused) {
    const auto message = [](auto&& pipeline) {
        try {
            (void)pipeline.next();
        } catch (const ferry::stage_error& e) {
            return std::string(e.what());
        }
        return std::string("no stage_error");
    };
    const auto state_at = [](std::uint64_t position) {
        return ferry::pipeline_state::parse(
            "ferry-state 1 epoch=0 position=" + std::to_string(position) +
            " children= failed=0 shape=map");
    };
    const auto thirty = [i = 0]() mutable -> std::optional<int> {
        if (i == 30) return std::nullopt;
        return i++;
    };
    auto generated = ferry::from(thirty)
                         .map([](int x) { return x; })
                         .build({.threads = 1, .logger = quiet, .resume_from = state_at(40)});
    BOOST_TEST(message(generated).find("resume_from: the saved position 40 is past the end of "
                                       "the source's epoch 0, which has 30 items") !=
               std::string::npos);
    // At the end exactly: an empty rest, no error.
    auto at_end = ferry::from(thirty)
                      .map([](int x) { return x; })
                      .build({.threads = 1, .logger = quiet, .resume_from = state_at(30)});
    BOOST_TEST(!at_end.next().has_value());

    const std::vector<int> data = iota(10);
    ferry::pipeline_state sampled(0, 11);
    sampled.set_shape("map");
    sampled.set_sampler(ferry::sampler(10, {.seed = 3}).identity());
    auto over_dataset = ferry::from(data, ferry::sampling{.seed = 3})
                            .map([](int x) { return x; })
                            .build({.threads = 1, .logger = quiet, .resume_from = sampled});
    BOOST_TEST(message(over_dataset)
                   .find("resume_from: the saved position 11 is past the end of "
                         "the sampled epoch, which has 10 items for this rank") !=
               std::string::npos);

    // A mix of 10 + 10 items whose epoch ends with its first exhausted source: at most 19 draws.
    const std::vector<int> evens{0, 2, 4, 6, 8, 10, 12, 14, 16, 18};
    const std::vector<int> odds{1, 3, 5, 7, 9, 11, 13, 15, 17, 19};
    const auto mixed = [&](std::uint64_t position) {
        auto m = ferry::mix<int>({{evens, 0.5}, {odds, 0.5}}, {.seed = 5});
        auto probe = m.map([](int x) { return x; }).build({.threads = 1});
        ferry::pipeline_state st(0, position);
        st.set_shape("map");
        st.set_sampler(probe.state().sampler());
        return m.map([](int x) { return x; })
            .build({.threads = 1, .logger = quiet, .resume_from = std::move(st)});
    };
    auto whole = ferry::mix<int>({{evens, 0.5}, {odds, 0.5}}, {.seed = 5})
                     .map([](int x) { return x; })
                     .build({.threads = 1});
    const auto drawn = drain(whole).size();
    BOOST_TEST_REQUIRE(drawn < 20U);
    auto rest = mixed(drawn);
    BOOST_TEST(!rest.next().has_value());
    auto past = mixed(drawn + 1);
    BOOST_TEST(message(past).find("mix: the saved position " + std::to_string(drawn + 1) +
                                  " is past the end of epoch 0, which has " +
                                  std::to_string(drawn) + " items") != std::string::npos);
}

// Destroying a pipeline over an endless generator returns promptly, read or not.
BOOST_AUTO_TEST_CASE(destroying_a_pipeline_over_an_endless_generator_returns_promptly) {
    {
        const auto t0 = steady::now();
        {
            auto p = ferry::from(endless()).map([](int x) { return x; }, 4).build({.threads = 2});
        }
        BOOST_TEST(since(t0) < prompt);
    }
    {
        const auto t0 = steady::now();
        {
            auto p = ferry::from(endless()).map([](int x) { return x; }, 4).build({.threads = 2});
            for (int i = 0; i < 3; ++i) BOOST_TEST(p.next().value() == i);
        }
        BOOST_TEST(since(t0) < prompt);
    }
    {
        const auto t0 = steady::now();
        {
            auto p = ferry::from(endless(std::chrono::microseconds(500)))
                         .map([](int x) { return x; }, {.concurrency = 4, .executor = ferry::io})
                         .batch(4)
                         .build({.threads = 2});
            const auto b = p.next();
            BOOST_TEST((b.value() == std::vector<int>{0, 1, 2, 3}));
        }
        BOOST_TEST(since(t0) < prompt);
    }
}

// Destroying a pipeline with asynchronous calls outstanding waits for them, promptly, and
// leaves no element alive.
BOOST_AUTO_TEST_CASE(destroying_with_async_calls_outstanding_returns_promptly) {
    const long before = live_instances.load();
    async_service service(2, std::chrono::microseconds(2000));
    const auto t0 = steady::now();
    {
        auto p = ferry::from(endless())
                     .map_async<counted>(
                         [&](int x, ferry::completion<counted> done) {
                             service.post([done, x] { done(counted(x)); });
                         },
                         8)
                     .build({.threads = 2});
        BOOST_TEST(p.next().value().value == 0);
    }
    BOOST_TEST(since(t0) < prompt);
    // The completion's caller, on the service's thread, may still be destroying its (moved-
    // from) argument just after the wait it released has returned.
    BOOST_TEST(wait_until([&] { return live_instances.load() == before; }));
}

namespace {

/// Reads one epoch of `p`, breaking once `limit` items have arrived. Returns how many arrived,
/// or -1 if they were not counted(0), counted(1), ... in order.
template <class P>
int read_prefix(P& p, int limit) {
    int n = 0;
    for (auto& out : p) {
        if constexpr (std::is_same_v<std::remove_cvref_t<decltype(out)>, counted>) {
            if (out.value != n++) return -1;
        } else {
            for (const counted& c : out)
                if (c.value != n++) return -1;
        }
        if (n >= limit) break;
    }
    return n;
}

/// A pipeline of one of four shapes over `source`, behind a function that runs one epoch.
template <class B>
std::function<int(int)> random_pipeline(const B& source, int shape, int conc, int threads) {
    const auto to_counted = [](int x) { return counted(x); };
    auto wrap = [](auto&& pipe) {
        auto p = std::make_shared<std::remove_cvref_t<decltype(pipe)>>(std::move(pipe));
        return std::function<int(int)>([p](int limit) { return read_prefix(*p, limit); });
    };
    switch (shape) {
        case 0:
            return wrap(source.map(to_counted, conc).build({.threads = threads}));
        case 1:
            return wrap(source.map(to_counted, conc).batch(3).build({.threads = threads}));
        case 2:
            return wrap(source.map(to_counted, {.concurrency = conc, .executor = ferry::io})
                            .filter([](const counted&) { return true; }, conc)
                            .build({.threads = threads}));
        default:
            return wrap(
                source
                    .template map_async<counted>(
                        [](int x, ferry::completion<counted> done) { done(counted(x)); }, conc)
                    .flat_map([](counted c) { return std::vector<counted>{c}; }, conc)
                    .build({.threads = threads}));
    }
}

}  // namespace

// 1000 early breaks, after a random number of items, through randomly shaped and sized
// pipelines: each epoch delivers the source's prefix in order, nothing hangs, and no element
// outlives its pipeline.
BOOST_AUTO_TEST_CASE(randomized_early_breaks_neither_hang_nor_leak) {
    constexpr int epoch_size = 120;
    const long before = live_instances.load();
    std::mt19937 rng(20240611);
    const auto pick = [&](int lo, int hi) {
        return std::uniform_int_distribution<int>(lo, hi)(rng);
    };
    const auto source = ferry::from([](std::uint64_t) { return iota(epoch_size); });
    const auto t0 = steady::now();
    int breaks = 0;
    int completed = 0;
    while (breaks < 1000) {
        const int conc = pick(1, 16);
        const int threads = pick(1, 4);
        const int shape = pick(0, 3);
        BOOST_TEST_CONTEXT("conc " << conc << ", threads " << threads << ", shape " << shape) {
            {
                auto epoch = random_pipeline(source, shape, conc, threads);
                for (int i = 0; i < 5 && breaks < 1000; ++i) {
                    const int limit = pick(1, epoch_size + 10);
                    const int seen = epoch(limit);
                    // A batch may overshoot the limit by up to 2 items.
                    BOOST_TEST(seen >= std::min(limit, epoch_size));
                    BOOST_TEST(seen <= std::min(limit + 2, epoch_size));
                    if (limit < epoch_size) {
                        ++breaks;
                    } else {
                        ++completed;
                    }
                }
            }
            BOOST_TEST(live_instances.load() == before);
        }
    }
    BOOST_TEST(since(t0) < std::chrono::seconds(150));
    BOOST_TEST_MESSAGE("1000 early breaks and " << completed << " whole epochs in "
                                                << since(t0).count() << " ms");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
