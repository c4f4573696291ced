// SPDX-License-Identifier: Apache-2.0
/// \file
/// tuner_policy::step: judge the last raise, keep the CPU and memory budgets, back off when the
/// consumer sets the pace, else raise the busiest tuned stage (or free a slot for it).

#include "tuner_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace ferry::detail {
namespace {

std::string pct(double f) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", std::max(0.0, f) * 100.0);
    return buf;
}

std::string cores(double cpu, double budget) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "CPU %.1f of %g cores", cpu, budget);
    return buf;
}

}  // namespace

tuner_policy::tuner_policy(std::vector<tuned_stage_range> stages, tuner_budget budget)
    : stages_(std::move(stages)),
      budget_(std::move(budget)),
      in_flight_(budget_.max_in_flight),
      threads_(std::max(1, budget_.threads)) {
    for (const auto& s : stages_) limits_.push_back(std::clamp(s.start, s.lo, s.hi));
    held_.assign(stages_.size() + 1, 0);
}

const std::string& tuner_policy::knob_name(std::size_t i) const {
    static const std::string threads = "threads";
    return i < stages_.size() ? stages_[i].name : threads;
}

double tuner_policy::utilization(std::size_t i, const tuner_sample& s) const {
    // A compute stage uses at most the arena's threads, whatever its limit.
    const int slots = stages_[i].io ? limits_[i] : std::min(limits_[i], threads_);
    if (slots <= 0 || s.interval_s <= 0) return 0;
    return s.busy_s[i] / (slots * s.interval_s);
}

void tuner_policy::add(tuning_decision d, bool judged) {
    if (log_.size() == max_kept) {
        log_.erase(log_.begin());
        if (pending_index_ > 0) --pending_index_;
    }
    log_.push_back(std::move(d));
    ++added_;
    if (judged) pending_index_ = log_.size() - 1;
}

std::vector<tuning_decision> tuner_policy::step(const tuner_sample& s) {
    added_ = 0;
    const double rate = s.interval_s > 0 ? s.items / s.interval_s : 0;
    const double cpu = s.interval_s > 0 ? s.cpu_s / s.interval_s : 0;
    const auto now = std::chrono::nanoseconds(static_cast<std::int64_t>(s.at_s * 1e9));
    const auto made = [this] {
        return std::vector<tuning_decision>(log_.end() - static_cast<std::ptrdiff_t>(added_),
                                            log_.end());
    };
    for (auto& h : held_) h = std::max(0, h - 1);
    memory_rest_ = std::max(0, memory_rest_ - 1);
    if (memory_error_) return made();  // the pipeline fails with it: nothing more to decide

    // 1. The last raise: kept when the rate held, undone when it fell.
    if (pending_stage_) {
        const std::size_t i = *pending_stage_;
        pending_stage_.reset();
        if (pending_index_ < log_.size()) {
            auto& last = log_[pending_index_];
            last.rate_after = rate;
            const double noise = s.outputs > 0 ? 2.0 / s.outputs : 0.0;
            if (last.rate_before > 0 &&
                rate < last.rate_before * (1 - std::max(tolerance, noise)) && knob(i) == last.to) {
                last.undone = true;
                tuning_decision d;
                d.at = now;
                d.stage = knob_name(i);
                d.from = last.to;
                d.to = last.from;
                char buf[160];
                std::snprintf(buf, sizeof buf, "undo: the rate fell from %.0f to %.0f items/s",
                              last.rate_before, rate);
                d.why = buf;
                d.rate_before = rate;
                knob(i) = last.from;
                held_[i] = hold;
                add(std::move(d), false);
                return made();
            }
        }
    }

    // 2. Memory: in_flight within the budget, at the bytes per item measured.
    if (keep_memory(s, rate) || memory_error_) return made();

    std::vector<double> util(stages_.size());
    for (std::size_t i = 0; i < stages_.size(); ++i) util[i] = utilization(i, s);
    const auto lower = [&](std::size_t i, std::string why) {
        tuning_decision d;
        d.at = now;
        d.stage = stages_[i].name;
        d.from = limits_[i];
        d.to = stages_[i].io ? std::max(stages_[i].lo, limits_[i] * 2 / 3) : limits_[i] - 1;
        d.to = std::max(d.to, stages_[i].lo);
        d.why = "busy " + pct(util[i]) + ", " + std::move(why);
        d.rate_before = rate;
        limits_[i] = d.to;
        add(std::move(d), false);
    };
    const auto move_threads = [&](int to, const std::string& why, bool judged) {
        tuning_decision d;
        d.at = now;
        d.stage = knob_name(stages_.size());
        d.from = threads_;
        d.to = to;
        d.why = why;
        d.rate_before = rate;
        threads_ = to;
        add(std::move(d), judged);
        if (judged) pending_stage_ = stages_.size();
    };
    // The least busy tuned stage that can give a slot (compute first: they cost cores), or none.
    const auto least_busy = [&](bool compute_only, double below) -> std::optional<std::size_t> {
        std::optional<std::size_t> best;
        for (std::size_t i = 0; i < stages_.size(); ++i) {
            if (limits_[i] <= stages_[i].lo || util[i] >= below) continue;
            if (compute_only && stages_[i].io) continue;
            if (!best || util[i] < util[*best]) best = i;
        }
        return best;
    };

    // 3. Over the CPU budget: the least busy compute stage gives a slot back; with none above
    // its range's bottom, the arena a thread (untuned compute stages use them too); then an I/O
    // stage.
    if (cpu > budget_.cpu_cores * 1.05) {
        const std::string why = "over budget: " + cores(cpu, budget_.cpu_cores);
        if (const auto i = least_busy(true, 2.0)) {
            lower(*i, why);
        } else if (threads_ > 1) {
            move_threads(threads_ - 1, why, false);
        } else if (const auto j = least_busy(false, 2.0)) {
            lower(*j, why);
        }
        return made();
    }

    // 4. The consumer hardly waits: loading keeps up with it, and more concurrency would only
    // fill the pipeline sooner. Raise nothing; when it stays full for a few intervals, a stage
    // that is mostly idle gives a slot back.
    const double waited = s.interval_s > 0 ? s.consumer_wait_s / s.interval_s : 0;
    if (waited < consumer_waits) {
        consumer_bound_ = s.full >= 0.5 ? consumer_bound_ + 1 : 0;
        if (consumer_bound_ >= consumer_streak) {
            if (const auto i = least_busy(false, 0.25)) {
                lower(*i, "the consumer sets the pace (pipeline full " + pct(s.full) +
                              ", consumer waited " + pct(waited) + ")");
                consumer_bound_ = 0;
            }
        }
        return made();
    }
    consumer_bound_ = 0;

    // 5. The busiest tuned stage that may grow: raised, within the CPU budget and the arena.
    std::optional<std::size_t> busiest;
    for (std::size_t i = 0; i < stages_.size(); ++i) {
        if (limits_[i] >= stages_[i].hi || held_[i] > 0 || util[i] < busy_enough) continue;
        if (!stages_[i].io && limits_[i] >= budget_.threads) continue;
        if (!busiest || util[i] > util[*busiest]) busiest = i;
    }
    if (!busiest) return made();  // nothing is held up by a tuned stage: stay
    const std::size_t i = *busiest;
    // Compute work runs on the arena, whose threads the budget sized: a compute stage may grow
    // while the tuned compute stages' slots leave the arena a thread. An I/O stage's calls run
    // off the arena: it grows while the measured CPU leaves room.
    int compute_slots = 0;
    for (std::size_t k = 0; k < stages_.size(); ++k) {
        if (!stages_[k].io) compute_slots += limits_[k];
    }
    const bool cpu_room = cpu < budget_.cpu_cores * 0.95;
    const bool room = stages_[i].io ? cpu_room : compute_slots < threads_;
    if (!room) {
        // No room: move a slot from a compute stage that is mostly idle, if any; else give the
        // arena back a thread the CPU budget took, where a whole core is free under it (so that
        // the thread does not take the CPU over the budget again).
        if (const auto j = least_busy(true, idle); j && *j != i) {
            lower(*j, "a slot moves to " + stages_[i].name + " (busy " + pct(util[i]) + ", " +
                          cores(cpu, budget_.cpu_cores) + ")");
        } else if (!stages_[i].io && cpu + 1 <= budget_.cpu_cores && threads_ < budget_.threads &&
                   held_[stages_.size()] == 0) {
            move_threads(
                threads_ + 1,
                stages_[i].name + " busy " + pct(util[i]) + ", " + cores(cpu, budget_.cpu_cores),
                true);
        }
        return made();
    }
    tuning_decision d;
    d.at = now;
    d.stage = stages_[i].name;
    d.from = limits_[i];
    d.to = stages_[i].io ? std::max(limits_[i] + 1, (limits_[i] * 3 + 1) / 2) : limits_[i] + 1;
    d.to = std::min(d.to, stages_[i].hi);
    d.why = "busy " + pct(util[i]) + ", " + cores(cpu, budget_.cpu_cores);
    d.rate_before = rate;
    limits_[i] = d.to;
    add(std::move(d), true);
    pending_stage_ = i;
    return made();
}

}  // namespace ferry::detail
