// SPDX-License-Identifier: Apache-2.0
/// \file
/// tuner_policy::step: judge the last raise, keep the memory and CPU budgets, back off when the
/// consumer sets the pace, else make the raise the measurements say pays most.

#include "tuner_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace ferry::detail {
namespace {

std::string tuner_pct(double f) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", std::max(0.0, f) * 100.0);
    return buf;
}

std::string tuner_cores(double cpu, double budget) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "CPU %.1f of %g cores", cpu, budget);
    return buf;
}

std::string tuner_room(double gain) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "room for %.2fx", gain);
    return buf;
}

/// An I/O stage grows by half (1, 2, 3, 5, 8, 12, ...), a compute stage by one, up to `hi`; a
/// step that would stop within a tenth of `hi` goes to it.
int tuner_step_up(bool io, int k, int hi) {
    const int to = std::min(hi, io ? std::max(k + 1, (k * 3 + 1) / 2) : k + 1);
    return (hi - to) * 10 < to ? hi : to;
}

}  // namespace

tuner_policy::tuner_policy(std::vector<tuned_stage_range> stages, tuner_budget budget)
    : stages_(std::move(stages)),
      budget_(std::move(budget)),
      in_flight_(budget_.max_in_flight),
      threads_(std::max(1, budget_.threads)) {
    for (auto& s : stages_) {
        if (!s.tuned) s.lo = s.hi = s.start;
        limits_.push_back(std::clamp(s.start, s.lo, s.hi));
    }
    held_.assign(stages_.size() + 1, 0);
    hold_next_.assign(stages_.size() + 1, hold);
}

const std::string& tuner_policy::knob_name(std::size_t i) const {
    static const std::string threads = "threads";
    return i < stages_.size() ? stages_[i].name : threads;
}

double tuner_policy::utilization(std::size_t i, const tuner_sample& s) const {
    // A compute stage uses at most the arena's threads, whatever its limit.
    const int slots = stages_[i].io ? limits_[i] : std::min(limits_[i], threads_);
    if (slots <= 0 || s.interval_s <= 0 || i >= s.busy_s.size()) return 0;
    return s.busy_s[i] / (slots * s.interval_s);
}

double tuner_policy::bound(const tuner_sample& s, const setting& x, std::size_t* by) const {
    constexpr double none = std::numeric_limits<double>::infinity();
    double b = none;
    std::size_t which = std::string::npos;
    const auto at_most = [&](double v, std::size_t i) {
        if (v < b) {
            b = v;
            which = i;
        }
    };
    for (std::size_t i = 0; i < stages_.size() && i < s.busy_s.size(); ++i) {
        if (s.busy_s[i] <= 0) continue;
        const int slots = stages_[i].io ? x.k[i] : std::min(x.k[i], x.threads);
        at_most(slots * s.interval_s / s.busy_s[i], i);
    }
    if (s.arena_busy_s > 0) at_most(x.threads * s.interval_s / s.arena_busy_s, stages_.size());
    const double waited = s.interval_s > 0 ? s.consumer_wait_s / s.interval_s : 1;
    if (waited < 1) at_most(1 / (1 - waited), std::string::npos);
    if (by != nullptr) *by = which;
    return b;
}

double tuner_policy::gain(const tuner_sample& s, const setting& to) const {
    const double at = bound(s, now(), nullptr);
    if (!std::isfinite(at) || at <= 0) return 1;  // nothing measured: nothing to predict
    return bound(s, to, nullptr) / at;
}

void tuner_policy::add(tuning_decision d, bool judged) {
    if (log_.size() == max_kept) {
        log_.erase(log_.begin());
        for (auto& p : pending_) {
            if (p.index > 0) --p.index;
        }
    }
    log_.push_back(std::move(d));
    ++added_;
    if (judged) pending_.push_back({0, log_.size() - 1});
}

void tuner_policy::move(std::size_t i, int to, std::string why, double rate, bool judged) {
    tuning_decision d;
    d.at = std::chrono::nanoseconds(static_cast<std::int64_t>(now_ * 1e9));
    d.stage = knob_name(i);
    d.from = knob(i);
    d.to = to;
    d.why = std::move(why);
    d.rate_before = rate;
    knob(i) = to;
    add(std::move(d), judged);
    if (judged) pending_.back().knob = i;
}

void tuner_policy::rest(std::size_t i) {
    held_[i] = hold_next_[i];
    hold_next_[i] = std::min(max_hold, 2 * hold_next_[i]);
}

std::vector<tuning_decision> tuner_policy::step(const tuner_sample& s) {
    added_ = 0;
    now_ = s.at_s;
    // The rate is the interval's delivered rate: source items the consumer took, over its length.
    const double rate = s.interval_s > 0 ? s.items / s.interval_s : 0;
    const double cpu = s.interval_s > 0 ? s.cpu_s / s.interval_s : 0;
    for (auto& h : held_) h = std::max(0, h - 1);
    memory_rest_ = std::max(0, memory_rest_ - 1);
    const auto made = [this] {
        return std::vector<tuning_decision>(log_.end() - static_cast<std::ptrdiff_t>(added_),
                                            log_.end());
    };
    if (memory_error_) return made();  // the pipeline fails with it: nothing more to decide

    if (judge(s, rate, cpu)) return made();   // 1. the last raise, kept or undone
    if (keep_memory(s, rate)) return made();  // 2. in_flight within the memory budget
    if (memory_error_) return made();
    if (keep_cpu(s, rate, cpu)) return made();  // 3. within the CPU budget
    if (back_off(s, rate)) return made();       // 4. the consumer sets the pace
    raise(s, rate, cpu);                        // 5. the raise that pays most, if any
    return made();
}

bool tuner_policy::judge(const tuner_sample& s, double rate, double cpu) {
    if (pending_.empty()) return false;
    const auto moved = std::exchange(pending_, {});
    // A new epoch's first interval is the pipeline filling: no judge of the last move.
    if (s.first) return false;
    for (const auto& p : moved) {
        if (p.index >= log_.size()) return false;  // dropped from the log: too old to judge
        log_[p.index].rate_after = rate;
    }
    const tuning_decision& lead = log_[moved.front().index];
    const double before = lead.rate_before;
    // A rate counted in batches moves by a batch at random: two outputs' worth is noise.
    const double noise = s.outputs > 0 ? 2.0 / s.outputs : 0.0;
    const bool fell = before > 0 && rate < before * (1 - std::max(tolerance, noise));
    const bool within = cpu <= budget_.cpu_cores * (1 + cpu_slack);
    bool still = true;
    for (const auto& p : moved) still = still && knob(p.knob) == log_[p.index].to;
    if ((fell || !within) && still) {
        char buf[160];
        if (fell) {
            std::snprintf(buf, sizeof buf, "undo: the rate fell from %.0f to %.0f items/s", before,
                          rate);
        } else {
            std::snprintf(buf, sizeof buf, "undo: over budget: CPU %.1f of %g cores", cpu,
                          budget_.cpu_cores);
        }
        // Marked first: moving back adds to the log, which may drop its oldest entries.
        std::vector<std::pair<std::size_t, int>> back;
        for (const auto& p : moved) {
            log_[p.index].undone = true;
            back.emplace_back(p.knob, log_[p.index].from);
        }
        for (const auto& [knob_index, from] : back) {
            move(knob_index, from, buf, rate, false);
            rest(knob_index);
        }
        return true;
    }
    // Kept. A raise that did not pay half of what a raise must promise rests its knob, so that
    // a bound the policy does not measure does not draw it up step by step; one that paid
    // halves the knob's next rest.
    const bool paid = before <= 0 || rate >= before * (1 + min_gain / 2);
    for (const auto& p : moved) {
        if (!paid) {
            rest(p.knob);
        } else {
            hold_next_[p.knob] = std::max(hold, hold_next_[p.knob] / 2);
        }
    }
    return false;
}

bool tuner_policy::keep_cpu(const tuner_sample& s, double rate, double cpu) {
    if (cpu <= budget_.cpu_cores * (1 + cpu_slack)) return false;
    // The knob whose lowering keeps the most rate with the CPU it predicts within the budget;
    // where none can, the one that cuts most.
    const double within = budget_.cpu_cores / cpu;
    std::optional<std::size_t> best;
    int best_to = 0;
    double best_gain = 0;
    bool best_fits = false;
    for (std::size_t i = 0; i <= stages_.size(); ++i) {
        const bool is_stage = i < stages_.size();
        if (is_stage && !stages_[i].tuned) continue;
        const int lo = is_stage ? stages_[i].lo : 1;
        if (knob(i) <= lo) continue;
        setting to = now();
        int& v = is_stage ? to.k[i] : to.threads;
        double g = 1;
        for (v = knob(i) - 1; v >= lo; --v) {
            g = gain(s, to);
            if (g <= within || v == lo) break;
        }
        const bool fits = g <= within;
        if (!best || (fits && (!best_fits || g > best_gain)) ||
            (!fits && !best_fits && g < best_gain)) {
            best = i;
            best_to = v;
            best_gain = g;
            best_fits = fits;
        }
    }
    if (!best) return false;
    const std::string over = "over budget: " + tuner_cores(cpu, budget_.cpu_cores);
    move(*best, best_to,
         *best < stages_.size() ? "busy " + tuner_pct(utilization(*best, s)) + ", " + over : over,
         rate, false);
    // The knob lowered rests, for longer each time, so that measurements on either side of the
    // budget do not swing it.
    rest(*best);
    return true;
}

bool tuner_policy::back_off(const tuner_sample& s, double rate) {
    // The consumer hardly waits: loading keeps up with it, and more concurrency would only fill
    // the pipeline sooner. Raise nothing; when it stays full for a few intervals, a stage that
    // is mostly idle gives a slot back.
    const double waited = s.interval_s > 0 ? s.consumer_wait_s / s.interval_s : 0;
    if (waited >= consumer_waits) {
        consumer_bound_ = 0;
        return false;
    }
    consumer_bound_ = s.full >= 0.5 ? consumer_bound_ + 1 : 0;
    if (consumer_bound_ < consumer_streak) return true;
    std::optional<std::size_t> least;
    double least_util = idle;
    for (std::size_t i = 0; i < stages_.size(); ++i) {
        if (!stages_[i].tuned || limits_[i] <= stages_[i].lo) continue;
        const double u = utilization(i, s);
        if (u < least_util) {
            least = i;
            least_util = u;
        }
    }
    if (least) {
        const std::size_t i = *least;
        const int to = std::max(stages_[i].lo, stages_[i].io ? limits_[i] * 2 / 3 : limits_[i] - 1);
        move(i, to,
             "busy " + tuner_pct(least_util) + ", the consumer sets the pace (pipeline full " +
                 tuner_pct(s.full) + ", consumer waited " + tuner_pct(waited) + ")",
             rate, false);
        consumer_bound_ = 0;
    }
    return true;
}

void tuner_policy::raise(const tuner_sample& s, double rate, double cpu) {
    // Each knob busy enough to grow, alone and with each stage that bounds it next (a pipeline
    // whose two stages are both at their limit gains only when both grow): the setting whose
    // predicted gain is the most, with the CPU it predicts within the budget. One that would
    // pass the budget is held within it by another knob grown less or lowered (an I/O stage's
    // slots set the rate finely where a compute stage's or the arena's step is coarse).
    const auto may_grow = [&](std::size_t i) {
        if (held_[i] > 0) return false;
        if (i == stages_.size()) return threads_ < budget_.threads;
        return stages_[i].tuned && limits_[i] < stages_[i].hi;
    };
    const auto grow = [&](std::size_t i, setting& to) {
        if (i == stages_.size()) {
            to.threads = threads_ + 1;
        } else {
            to.k[i] = tuner_step_up(stages_[i].io, limits_[i], stages_[i].hi);
        }
    };
    // The CPU predicted in proportion to the rate (the engine's own fixed share too, which
    // makes it a little high): within a fifth of the slack over the budget.
    const auto fits = [&](double g) { return cpu * g <= budget_.cpu_cores * (1 + cpu_slack / 5); };
    std::optional<setting> best;
    double best_gain = 1 + min_gain;
    const auto consider = [&](const setting& to) {
        const double g = gain(s, to);
        if (fits(g)) {
            if (g >= best_gain) {
                best = to;
                best_gain = g;
            }
            return;
        }
        // Held within the budget by a knob that is not resting; lowering one that was raised
        // before is a reversal, so it must promise twice the gain.
        for (std::size_t j = 0; j <= stages_.size(); ++j) {
            if ((j < stages_.size() && !stages_[j].tuned) || held_[j] > 0) continue;
            setting held = to;
            int& v = j < stages_.size() ? held.k[j] : held.threads;
            const int lo = j < stages_.size() ? stages_[j].lo : 1;
            while (v > lo) {
                --v;
                const double h = gain(s, held);
                if (!fits(h)) continue;
                const bool reverses = v < knob(j);
                if (h >= best_gain && (!reverses || h >= 1 + 2 * min_gain)) {
                    best = held;
                    best_gain = h;
                }
                break;
            }
        }
    };
    // A stage's calls over its slots, or the arena's calls over its working threads.
    const auto busy_of = [&](std::size_t i) {
        if (i < stages_.size()) return utilization(i, s);
        return s.interval_s > 0 ? s.arena_busy_s / (threads_ * s.interval_s) : 0.0;
    };
    for (std::size_t i = 0; i <= stages_.size(); ++i) {
        if (!may_grow(i) || busy_of(i) < busy_enough) continue;
        setting to = now();
        grow(i, to);
        std::vector<std::size_t> knobs{i};
        for (;;) {
            consider(to);
            std::size_t by = 0;
            (void)bound(s, to, &by);
            if (by == std::string::npos || !may_grow(by) ||
                std::find(knobs.begin(), knobs.end(), by) != knobs.end()) {
                break;
            }
            grow(by, to);
            knobs.push_back(by);
        }
    }
    if (!best) return;
    const std::string why = tuner_cores(cpu, budget_.cpu_cores) + ", " + tuner_room(best_gain);
    for (std::size_t i = 0; i <= stages_.size(); ++i) {
        const int to = i < stages_.size() ? best->k[i] : best->threads;
        if (to == knob(i)) continue;
        std::string says =
            (i < stages_.size() ? "busy " : "arena busy ") + tuner_pct(busy_of(i)) + ", ";
        if (to < knob(i)) says += "holds the rest within the budget: ";
        move(i, to, says + why, rate, true);
    }
}

}  // namespace ferry::detail
