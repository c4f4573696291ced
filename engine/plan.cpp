// SPDX-License-Identifier: Apache-2.0
/// \file
/// make_plan(): a pipeline_spec and its options -> a validated pipeline_plan.

#include "plan.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

#include "ferry/error.hpp"

namespace ferry::detail {
namespace {

/// Source items the batch stages need in flight: a batch of n holds n elements before it emits;
/// each element stands for `scale` source items (the product of the batch sizes before it, undone
/// by unbatch).
std::size_t min_in_flight(const std::vector<stage_plan>& stages) {
    std::size_t need = 1;
    std::size_t scale = 1;
    std::vector<std::size_t> scales;
    for (const auto& st : stages) {
        if (st.spec.kind == stage_kind::batch_by) {
            // A window of `buffer` elements is held before its batches go out (with drop_last,
            // until the element after it comes: cost_batch.cpp); its batches stand for any
            // number of elements, so what comes after is not scaled.
            const std::size_t held = st.spec.batch_size + (st.spec.drop_last ? 1 : 0);
            need = std::max(need, held * scale);
        } else if (st.spec.kind == stage_kind::batch) {
            need = std::max(need, st.spec.batch_size * scale);
            scales.push_back(scale);
            scale *= st.spec.batch_size;
        } else if (st.spec.kind == stage_kind::unbatch && !scales.empty()) {
            scale = scales.back();
            scales.pop_back();
        }
    }
    return need;
}

/// What holds the `need` source items the pipeline's shape holds at once (min_in_flight's walk),
/// for the memory budget's error (tuner_policy::memory_check): "" when no batch-like stage does.
std::string first_output_holds(const std::vector<stage_plan>& stages, std::size_t need) {
    std::size_t scale = 1;
    std::vector<std::size_t> scales;
    const auto per = [&] {
        return scale > 1 ? " of " + std::to_string(scale) + " source items each" : std::string();
    };
    for (const auto& st : stages) {
        const std::size_t n = st.spec.batch_size * scale;
        if (st.spec.kind == stage_kind::batch_by && n == need) {
            return "batch_by '" + st.name + "' holds a window of " +
                   std::to_string(st.spec.batch_size) + " elements" + per();
        }
        if (st.spec.kind == stage_kind::batch) {
            if (n == need) {
                return "batch '" + st.name + "' fills batches of " +
                       std::to_string(st.spec.batch_size) + " elements" + per();
            }
            scales.push_back(scale);
            scale = n;
        } else if (st.spec.kind == stage_kind::unbatch && !scales.empty()) {
            scale = scales.back();
            scales.pop_back();
        }
    }
    return "";
}

std::size_t default_in_flight(const std::vector<stage_plan>& stages, int threads,
                              std::size_t need) {
    std::size_t sum = 0;
    for (const auto& st : stages) {
        sum += static_cast<std::size_t>(st.tuned ? st.tuned_hi : st.concurrency);
    }
    // Enough to keep every slot busy while the consumer works through a burst, and two batches.
    return std::max<std::size_t>({64, 4 * sum + 4 * static_cast<std::size_t>(threads), 2 * need});
}

stage_plan plan_stage(stage_spec spec, int index, bool& ordered) {
    stage_plan st;
    st.spec = std::move(spec);
    st.kind = kind_name(st.spec.kind);
    st.name =
        st.spec.options.name.empty() ? st.kind + "#" + std::to_string(index) : st.spec.options.name;
    st.concurrency = st.spec.options.concurrency;
    if (tuned_concurrency::is_tuned(st.concurrency)) {
        const int lo = tuned_concurrency::lo_of(st.concurrency);
        const int hi = tuned_concurrency::hi_of(st.concurrency);
        const bool applies =
            st.spec.kind == stage_kind::map || st.spec.kind == stage_kind::filter ||
            st.spec.kind == stage_kind::flat_map || st.spec.kind == stage_kind::map_async;
        // A map_async call with a timeout is settled by the watchdog; a timed map's call runs on
        // past it: neither goes through the tuned stage's gate.
        const bool timed =
            st.spec.options.timeout.count() > 0 && st.spec.kind != stage_kind::map_async;
        if (!applies || timed) {
            throw invalid_argument("stage '" + st.name +
                                   "': ferry::tuned applies to map, filter and flat_map stages "
                                   "without a timeout and to map_async; give this one a number");
        }
        // hi 0: the kind's default (resolved by make_plan, which knows the threads).
        if (lo < 1 || (hi != 0 && hi < lo) || hi > max_concurrency) {
            throw invalid_argument("stage '" + st.name + "': ferry::tuned(" + std::to_string(lo) +
                                   ", " + std::to_string(hi) +
                                   ") needs 1 <= lo <= hi <= " + std::to_string(max_concurrency));
        }
        st.tuned = true;
        st.tuned_lo = lo;
        st.tuned_hi = hi;
        st.concurrency = lo;  // a cold start: the tuner raises it
    }
    if (st.spec.kind == stage_kind::batch || st.spec.kind == stage_kind::unbatch ||
        st.spec.kind == stage_kind::batch_by || st.spec.kind == stage_kind::route) {
        st.concurrency = 1;
    }
    if (st.concurrency < 1) {
        throw invalid_argument("stage '" + st.name + "': concurrency must be at least 1, got " +
                               std::to_string(st.concurrency));
    }
    if (st.concurrency > max_concurrency) {
        throw invalid_argument("stage '" + st.name + "': concurrency " +
                               std::to_string(st.concurrency) + " is more than " +
                               std::to_string(max_concurrency) +
                               " (an I/O stage has a thread per slot; use map_async for many "
                               "requests outstanding)");
    }
    const bool wants_io = st.spec.options.executor == executor::io;
    st.applies = st.spec.kind == stage_kind::map || st.spec.kind == stage_kind::filter ||
                 st.spec.kind == stage_kind::flat_map;
    st.counted_after = st.spec.kind == stage_kind::flat_map;
    // batch_by expands a window into its batches: the state counts the batches delivered.
    st.expands = st.spec.kind == stage_kind::flat_map || st.spec.kind == stage_kind::unbatch ||
                 st.spec.kind == stage_kind::batch_by;
    st.retries_beside = st.spec.retry_reads_input && st.spec.kind != stage_kind::filter;
    st.renumbers = st.expands || st.spec.kind == stage_kind::batch;
    st.tunable = st.applies || st.spec.kind == stage_kind::map_async;
    st.timed = st.applies && st.spec.options.timeout.count() > 0;
    st.io = wants_io && st.applies;
    st.own_slots = st.io || st.spec.kind == stage_kind::map_async;
    if (wants_io && !st.io) {
        throw invalid_argument("stage '" + st.name +
                               "': executor io applies to map, filter and flat_map stages");
    }
    if (st.spec.kind == stage_kind::route && st.spec.options.on_error.attempts > 1) {
        throw invalid_argument("stage '" + st.name +
                               "': retry does not apply to route (its selector is called once); "
                               "use fail or skip");
    }
    if (st.spec.kind == stage_kind::batch_by && st.spec.options.on_error.attempts > 1) {
        throw invalid_argument("stage '" + st.name +
                               "': retry does not apply to batch_by (a cost is computed once); "
                               "use fail or skip");
    }
    if (st.spec.kind == stage_kind::map_async && st.spec.options.on_error.attempts > 1) {
        throw invalid_argument("stage '" + st.name +
                               "': retry does not apply to map_async (its input is handed "
                               "over); retry inside the asynchronous call instead");
    }
    if (st.spec.options.on_error.attempts < 1) {
        throw invalid_argument("stage '" + st.name + "': retry attempts must be at least 1");
    }
    const double rate = st.spec.options.max_failure_rate;
    if (!(rate >= 0.0 && rate <= 1.0)) {
        throw invalid_argument("stage '" + st.name + "': max_failure_rate must be in [0, 1], got " +
                               std::to_string(rate));
    }
    if (rate > 0 && st.spec.options.failure_window == 0) {
        throw invalid_argument("stage '" + st.name +
                               "': failure_window must be at least 1 with a max_failure_rate");
    }
    const auto timeout = st.spec.options.timeout;
    if (timeout.count() < 0) {
        throw invalid_argument("stage '" + st.name +
                               "': timeout must be 0 (none) or positive, got " +
                               std::to_string(timeout.count()) + " ms");
    }
    if (timeout.count() > 0 &&
        (st.spec.kind == stage_kind::batch || st.spec.kind == stage_kind::unbatch ||
         st.spec.kind == stage_kind::batch_by)) {
        throw invalid_argument("stage '" + st.name +
                               "': timeout applies to map, filter, flat_map and map_async stages");
    }
    // Once a stage gives up order, every renumbering point after it does too.
    if (!st.spec.options.ordered) ordered = false;
    st.ordered = ordered;
    return st;
}

}  // namespace

const char* kind_name(stage_kind k) noexcept {
    switch (k) {
        case stage_kind::map:
            return "map";
        case stage_kind::filter:
            return "filter";
        case stage_kind::flat_map:
            return "flat_map";
        case stage_kind::batch:
            return "batch";
        case stage_kind::unbatch:
            return "unbatch";
        case stage_kind::batch_by:
            return "batch_by";
        case stage_kind::route:
            return "route";
        case stage_kind::map_async:
            return "map_async";
    }
    return "?";
}

pipeline_plan make_plan(pipeline_spec spec, const pipeline_options& options) {
    if (!spec.source.open) throw invalid_argument("pipeline has no source");
    pipeline_plan plan;
    plan.source = std::move(spec.source);
    plan.output_bytes = spec.output_bytes;
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (options.threads < 0) {
        throw invalid_argument("threads must be 0 (default) or positive, got " +
                               std::to_string(options.threads));
    }
    if (options.threads > max_threads) {
        throw invalid_argument("threads = " + std::to_string(options.threads) + " is more than " +
                               std::to_string(max_threads) + " (this machine has " +
                               std::to_string(hw) + " hardware threads)");
    }
    if (!(options.max_epoch_failure_rate >= 0.0 && options.max_epoch_failure_rate <= 1.0)) {
        throw invalid_argument("max_epoch_failure_rate must be in [0, 1] (1 = off), got " +
                               std::to_string(options.max_epoch_failure_rate));
    }
    if (options.in_flight > max_in_flight) {
        throw invalid_argument("in_flight = " + std::to_string(options.in_flight) +
                               " is more than " + std::to_string(max_in_flight));
    }
    // The default leaves half the machine to the training loop (the "noisy neighbour").
    plan.threads = options.threads > 0 ? options.threads : std::max(1, hw / 2);
    if (options.autotune) {
        const auto& a = *options.autotune;
        if (!(a.cpu_budget == 0 || (std::isfinite(a.cpu_budget) && a.cpu_budget >= 1))) {
            throw invalid_argument("autotune.cpu_budget = " + std::to_string(a.cpu_budget) +
                                   " cores: give at least 1 core (or 0: the arena's threads)");
        }
        if (a.interval < std::chrono::milliseconds(10)) {
            throw invalid_argument("autotune.interval = " + std::to_string(a.interval.count()) +
                                   " ms: at least 10 ms (each interval's rate judges a move)");
        }
        if (a.cpu_budget > 0) {
            const int cores = static_cast<int>(std::floor(a.cpu_budget));
            if (options.threads > cores) {
                throw invalid_argument("threads = " + std::to_string(options.threads) +
                                       " is more than autotune.cpu_budget = " +
                                       std::to_string(a.cpu_budget) + " cores");
            }
            if (options.threads == 0) plan.threads = std::min(cores, max_threads);
        }
        plan.cpu_budget = a.cpu_budget > 0 ? a.cpu_budget : plan.threads;
        plan.memory_budget = a.memory_budget;
        plan.tune_every = a.interval;
        plan.tuning = true;
    }

    bool ordered = options.ordered;
    int index = 1;
    plan.stages.reserve(spec.stages.size());
    for (auto& s : spec.stages) {
        auto branches = std::move(s.branches);
        const auto branch_names = std::move(s.branch_names);
        plan.stages.push_back(plan_stage(std::move(s), index++, ordered));
        // A route's branches follow it, flattened, each stage marked with its route and branch.
        const int route = static_cast<int>(plan.stages.size()) - 1;
        plan.stages.back().branches = branches.size();
        const std::string prefix = plan.stages.back().name + "/";
        for (std::size_t b = 0; b < branches.size(); ++b) {
            for (auto& bs : branches[b]) {
                const bool named = !bs.options.name.empty();
                stage_plan st = plan_stage(std::move(bs), index++, ordered);
                const bool labelled = b < branch_names.size() && !branch_names[b].empty();
                if (!named) {
                    st.name =
                        prefix + (labelled ? branch_names[b] : std::to_string(b)) + " " + st.name;
                }
                st.route = route;
                st.branch = b;
                if (st.spec.kind == stage_kind::batch || st.spec.kind == stage_kind::batch_by ||
                    st.spec.kind == stage_kind::route) {
                    throw invalid_argument("stage '" + st.name +
                                           "': a branch may map, filter, map_async, flat_map "
                                           "and unbatch; batch, batch_by and route go after it");
                }
                if (st.expands) plan.stages[static_cast<std::size_t>(route)].rejoins = true;
                plan.stages.push_back(std::move(st));
            }
        }
        if (plan.stages[static_cast<std::size_t>(route)].rejoins) {
            // The join takes each element's outputs in the branch's order: keep it.
            for (auto it = plan.stages.begin() + route + 1; it != plan.stages.end(); ++it) {
                it->ordered = true;
            }
        }
    }
    plan.output_ordered = ordered;
    // A window's items' positions are source positions only before any other renumbering.
    const auto first_renumbering = std::find_if(plan.stages.begin(), plan.stages.end(),
                                                [](const stage_plan& st) { return st.renumbers; });
    if (ordered && first_renumbering != plan.stages.end() &&
        first_renumbering->spec.kind == stage_kind::batch_by) {
        first_renumbering->lists_window = true;
    }
    for (auto& st : plan.stages) {
        if (!st.tuned) continue;
        // Calls that hold no arena thread (io, map_async) may go up to 64 at once.
        if (st.tuned_hi == 0) st.tuned_hi = st.own_slots ? std::max(st.tuned_lo, 64) : plan.threads;
        st.tuned_hi = std::max(st.tuned_hi, st.tuned_lo);
        if (!plan.tuning) {
            // A tuned stage without autotune options: the defaults.
            plan.tuning = true;
            plan.cpu_budget = plan.threads;
        }
    }
    for (std::size_t i = 0; i < plan.stages.size(); ++i) {
        const auto& st = plan.stages[i];
        if (st.route >= 0) continue;  // in its route's part
        if (!plan.shape.empty()) plan.shape += ',';
        plan.shape += st.kind;
        if (st.spec.kind == stage_kind::batch || st.spec.kind == stage_kind::batch_by) {
            plan.shape += ':' + std::to_string(st.spec.batch_size);
            if (st.spec.drop_last) plan.shape += ":drop_last";
        }
        if (st.spec.kind == stage_kind::route) {
            // route(map,filter|map): each branch's kinds.
            plan.shape += '(';
            for (std::size_t b = 0; b < st.branches; ++b) {
                if (b > 0) plan.shape += '|';
                bool first = true;
                for (const auto& bs : plan.stages) {
                    if (bs.route != static_cast<int>(i) || bs.branch != b) continue;
                    if (!first) plan.shape += ',';
                    plan.shape += bs.kind;
                    first = false;
                }
            }
            plan.shape += ')';
        }
    }
    if (plan.shape.empty()) plan.shape = "none";
    // A stage that wants its input in particular memory gets it from the map right before.
    for (std::size_t i = 1; i < plan.stages.size(); ++i) {
        auto& prev = plan.stages[i - 1];
        const bool same_line =
            prev.route == plan.stages[i].route && prev.branch == plan.stages[i].branch;
        if (plan.stages[i].spec.input_allocator && prev.spec.kind == stage_kind::map && same_line) {
            prev.output_allocator = plan.stages[i].spec.input_allocator;
        }
    }

    const std::size_t need = min_in_flight(plan.stages);
    plan.first_output_items = need;
    plan.first_output_holds = first_output_holds(plan.stages, need);
    if (options.in_flight == 0) {
        plan.in_flight = std::max(default_in_flight(plan.stages, plan.threads, need), need);
    } else {
        plan.in_flight = options.in_flight;
        if (plan.in_flight < need) {
            throw invalid_argument("in_flight = " + std::to_string(plan.in_flight) +
                                   " is too small: the batch stages need at least " +
                                   std::to_string(need) + " source items in flight");
        }
    }
    // Returning credits is an atomic add, and wakes a worker when the source is parked for lack
    // of them; doing it per quarter of the limit rather than per item keeps both rare.
    plan.credit_batch = std::max<std::uint64_t>(1, plan.in_flight / 4);
    plan.burst = std::clamp<std::size_t>(plan.in_flight / 4, 1, 16);
    return plan;
}

}  // namespace ferry::detail
