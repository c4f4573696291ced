// SPDX-License-Identifier: Apache-2.0
/// \file
/// A pipeline whose throughput for any setting is computed, not timed: stages with given CPU
/// costs and waits, a consumer of given speed, cores, a CPU and a memory budget, items of a given
/// size. tuner_simulator.cpp drives the engine's own tuner policy (engine/tuner_policy.hpp) with
/// the measurements this model gives for each setting it chooses, and compares where it ends with
/// the best setting found by trying every one. No clock and no thread: the same seed gives the
/// same workloads, measurements and decisions.
///
/// The model, for a setting (each tuned stage's concurrency k, the arena's working threads T and
/// in_flight F), is the least of these rates (items/s):
///  * each stage: its slots over its call time (cpu + wait), where a compute stage's slots are
///    min(k, T) (its calls run on the arena) and an I/O stage's are k (its own threads);
///  * the arena: T over the summed call time of the compute stages (they share its threads);
///  * the machine: its cores over the CPU time an item costs (every stage's cpu and the
///    engine's own per-item cost);
///  * the consumer: its own speed;
///  * in flight (Little's law): an item is in flight for the stages' summed call time and, in a
///    batch of B, half the batch's filling, so F credits carry at most (F - (B - 1) / 2) / L.
/// The CPU the pipeline uses is that rate times the CPU an item costs, plus a fixed share for the
/// engine's own threads. The measurements are what the runtime would read over one interval:
/// items delivered, each stage's summed call time, the arena's, the consumer's wait, the CPU
/// time, the bytes of the items in flight, each with a seeded relative noise.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tuner_policy.hpp"

namespace tuner_simulator_test {

/// splitmix64: a seeded stream of numbers that is the same on every standard library.
class seeded {
  public:
    explicit seeded(std::uint64_t seed) : state_(seed) {}
    std::uint64_t next() {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
    /// Uniform in [0, 1).
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    double between(double lo, double hi) { return lo + (hi - lo) * unit(); }
    /// Log-uniform in [lo, hi): costs spread over decades.
    double spread(double lo, double hi) { return lo * std::pow(hi / lo, unit()); }
    int pick(int lo, int hi) {
        return lo + static_cast<int>(next() % static_cast<unsigned>(hi - lo + 1));
    }
    bool chance(double p) { return unit() < p; }

  private:
    std::uint64_t state_;
};

/// One stage of a simulated pipeline.
struct sim_stage {
    std::string name;
    bool io = false;    ///< on its own threads (io, map_async), else on the arena's
    double cpu = 0;     ///< CPU seconds a call costs
    double wait = 0;    ///< seconds a call waits (I/O, or a thread held idle)
    bool tuned = true;  ///< the tuner moves its concurrency between lo and hi
    int lo = 1;
    int hi = 1;
    int fixed = 1;  ///< an untuned stage's concurrency

    [[nodiscard]] double call() const { return cpu + wait; }
};

/// A simulated pipeline and what it runs on.
struct sim_workload {
    std::uint64_t seed = 0;
    std::vector<sim_stage> stages;
    int cores = 4;             ///< the machine's
    double cpu_budget = 4;     ///< autotune.cpu_budget
    int threads = 4;           ///< the arena's threads (the most the tuner may use)
    double consumer = 0;       ///< items/s the consumer takes at most (0: no limit)
    std::size_t batch = 1;     ///< source items an output holds (the shape's minimum in flight)
    double item_bytes = 1e5;   ///< bytes a source item holds
    std::uint64_t memory = 0;  ///< autotune.memory_budget (0: none)
    std::size_t max_in_flight = 64;
    double engine_cpu = 2e-6;   ///< the engine's own CPU seconds per item
    double engine_base = 0.02;  ///< cores the engine's own threads use whatever the rate
    double noise = 0.02;        ///< relative noise of each measurement
};

/// A setting the tuner may choose.
struct sim_setting {
    std::vector<int> k;  ///< each stage's concurrency (an untuned one's own), in order
    int threads = 1;
    std::size_t in_flight = 1;
};

/// What a setting gives in the steady state.
struct sim_outcome {
    double rate = 0;         ///< items/s delivered
    double cpu = 0;          ///< cores used
    std::string_view limit;  ///< what sets the rate (a stage's name, "arena", ...)
};

/// The rate and CPU of `s` on `w`.
inline sim_outcome evaluate(const sim_workload& w, const sim_setting& s) {
    sim_outcome o;
    o.rate = std::numeric_limits<double>::infinity();
    const auto bound = [&](double r, std::string_view why) {
        if (r < o.rate) {
            o.rate = r;
            o.limit = why;
        }
    };
    double compute_time = 0;
    double cpu_per_item = w.engine_cpu;
    double latency = 1e-4;
    for (std::size_t i = 0; i < w.stages.size(); ++i) {
        const sim_stage& st = w.stages[i];
        const int k = s.k[i];
        const int slots = st.io ? k : std::min(k, s.threads);
        bound(slots / st.call(), st.name);
        if (!st.io) compute_time += st.call();
        cpu_per_item += st.cpu;
        latency += st.call();
    }
    if (compute_time > 0) bound(s.threads / compute_time, "arena");
    bound(w.cores / cpu_per_item, "cores");
    if (w.consumer > 0) bound(w.consumer, "consumer");
    const double carried =
        static_cast<double>(s.in_flight) - (static_cast<double>(w.batch) - 1) / 2;
    bound(std::max(carried, 0.5) / latency, "in_flight");
    o.cpu = o.rate * cpu_per_item + w.engine_base;
    return o;
}

/// The most items in flight the memory budget allows (as the tuner counts them), within the
/// plan's most.
inline std::size_t memory_in_flight(const sim_workload& w) {
    if (w.memory == 0) return w.max_in_flight;
    const double fits = std::floor(static_cast<double>(w.memory) / w.item_bytes);
    return fits >= static_cast<double>(w.max_in_flight) ? w.max_in_flight
                                                        : static_cast<std::size_t>(fits);
}

/// The best setting within the budgets, found by trying every one the tuner may choose: each
/// tuned stage from lo to hi, the arena's threads from 1 to all, in_flight the most the memory
/// budget allows (more never lowers the rate). Rate 0: no setting keeps the CPU budget.
inline sim_outcome brute_force(const sim_workload& w, sim_setting* best_setting = nullptr) {
    sim_setting s;
    s.in_flight = memory_in_flight(w);
    for (const auto& st : w.stages) s.k.push_back(st.tuned ? st.lo : st.fixed);
    sim_outcome best;
    for (int threads = 1; threads <= w.threads; ++threads) {
        s.threads = threads;
        for (;;) {
            const auto o = evaluate(w, s);
            if (o.cpu <= w.cpu_budget && o.rate > best.rate) {
                best = o;
                if (best_setting != nullptr) *best_setting = s;
            }
            // The next setting, as an odometer counts (untuned stages stay).
            std::size_t i = 0;
            for (; i < w.stages.size(); ++i) {
                const sim_stage& st = w.stages[i];
                if (st.tuned && s.k[i] < st.hi) break;
                if (st.tuned) s.k[i] = st.lo;
            }
            if (i == w.stages.size()) break;
            ++s.k[i];
        }
    }
    return best;
}

/// A random workload of seed `seed`: 1 to 4 stages, each an I/O stage (a wait of 0.5 to 40 ms,
/// a little CPU) or a compute stage (0.1 to 8 ms of CPU, sometimes a thread held waiting too),
/// mostly tuned; 2 to 16 cores, a CPU budget of 1 to all of them; a consumer of no limit or
/// 30 to 30000 items/s; batches of 1 to 128 items; items of 1 KB to 4 MB, and a memory budget
/// (or none) that leaves in_flight between the batch and the plan's most.
inline sim_workload random_workload(std::uint64_t seed) {
    seeded r(seed * 0x2545F4914F6CDD1DULL + 17);
    sim_workload w;
    w.seed = seed;
    w.cores = r.pick(2, 16);
    w.cpu_budget = std::max(1.0, std::round(r.between(1, w.cores) * 2) / 2);
    w.threads = static_cast<int>(std::floor(w.cpu_budget));
    const int n = r.pick(1, 4);
    bool any_tuned = false;
    std::size_t slots = 0;
    for (int i = 0; i < n; ++i) {
        sim_stage st;
        st.name = "s" + std::to_string(i);
        st.io = r.chance(0.5);
        if (st.io) {
            st.wait = r.spread(0.5e-3, 40e-3);
            st.cpu = r.chance(0.5) ? r.spread(5e-6, 0.5e-3) : 0.0;
            st.hi = r.chance(0.5) ? 64 : r.pick(4, 48);
            st.fixed = r.pick(1, 16);
        } else {
            st.cpu = r.spread(0.1e-3, 8e-3);
            st.wait = r.chance(0.25) ? r.spread(0.05e-3, 2e-3) : 0.0;
            st.hi = w.threads;
            st.fixed = r.pick(1, w.threads);
        }
        st.tuned = r.chance(0.8);
        if (st.tuned) st.lo = r.chance(0.8) ? 1 : std::min(st.hi, r.pick(1, 3));
        any_tuned = any_tuned || st.tuned;
        slots += static_cast<std::size_t>(st.tuned ? st.hi : st.fixed);
        w.stages.push_back(st);
    }
    if (!any_tuned) w.stages.front().tuned = true;
    w.consumer = r.chance(0.4) ? 0.0 : r.spread(30, 30000);
    const std::size_t batches[] = {1, 1, 8, 32, 64, 128};
    w.batch = batches[r.pick(0, 5)];
    // The plan's default (plan.cpp's default_in_flight).
    w.max_in_flight = std::max<std::size_t>(
        {64, 4 * slots + 4 * static_cast<std::size_t>(w.threads), 2 * w.batch});
    w.item_bytes = std::round(r.spread(1e3, 4e6));
    if (r.chance(0.5)) {
        const double items =
            r.between(static_cast<double>(w.batch), 1.5 * static_cast<double>(w.max_in_flight));
        w.memory = static_cast<std::uint64_t>(std::ceil(items * w.item_bytes));
    }
    return w;
}

/// The ranges and budgets the runtime hands the policy for `w` (tuning.cpp's make_tuner): every
/// map-like stage, an untuned one as a range of one value.
inline std::vector<ferry::detail::tuned_stage_range> ranges_of(const sim_workload& w) {
    std::vector<ferry::detail::tuned_stage_range> r;
    for (const auto& st : w.stages) {
        if (st.tuned) {
            r.push_back({st.name, st.io, st.lo, st.hi, st.lo, true});
        } else {
            r.push_back({st.name, st.io, st.fixed, st.fixed, st.fixed, false});
        }
    }
    return r;
}

inline ferry::detail::tuner_budget budget_of(const sim_workload& w) {
    ferry::detail::tuner_budget b;
    b.cpu_cores = w.cpu_budget;
    b.threads = w.threads;
    b.memory_bytes = w.memory;
    b.min_in_flight = w.batch;
    b.max_in_flight = w.max_in_flight;
    return b;
}

/// One interval's measurements of `s` on `w`, as the runtime reads them, each off by up to
/// `w.noise` of itself.
inline ferry::detail::tuner_sample measure(const sim_workload& w, const sim_setting& s, double at,
                                           double interval, seeded& noise) {
    const auto o = evaluate(w, s);
    const auto off = [&] { return 1 + noise.between(-w.noise, w.noise); };
    ferry::detail::tuner_sample m;
    m.at_s = at;
    m.interval_s = interval;
    m.items = o.rate * interval * off();
    m.outputs = m.items / static_cast<double>(w.batch);
    const double consumer_busy = w.consumer > 0 ? o.rate / w.consumer : 0.0;
    m.consumer_wait_s = std::clamp((1 - consumer_busy) * off(), 0.0, 1.0) * interval;
    // The source costs nothing: it fills in_flight, and the items wait in front of whatever
    // sets the rate.
    m.full = 1;
    m.cpu_s = o.cpu * interval * off();
    for (const auto& st : w.stages) {
        const double busy = o.rate * st.call() * interval * off();
        m.busy_s.push_back(busy);
        if (!st.io) m.arena_busy_s += busy;
    }
    m.items_in_flight = static_cast<double>(s.in_flight);
    m.item_bytes = w.item_bytes;
    m.largest_output_bytes = static_cast<double>(w.batch) * w.item_bytes;
    m.in_flight = s.in_flight;
    return m;
}

}  // namespace tuner_simulator_test
