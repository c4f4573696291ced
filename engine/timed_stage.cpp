// SPDX-License-Identifier: Apache-2.0
/// \file
/// Stages with a `timeout`: each item's calls run apart from its box, so that when a call runs
/// past its deadline the watchdog (the monitor thread) can fail the item, or start a retry, and
/// pass the box on while the call runs on. Ordered output then never waits for a stuck call.
///
/// Who owns what: an item's input moves out of its box into a `timed_item` that the item's
/// attempts share; each attempt writes its own output. The box belongs to whichever side settles
/// the item first (`timed_node::settle_item`): the attempt that returns in time, the watchdog that
/// expires the last attempt, or an abort. The others touch neither the box nor the graph
/// afterwards; a call that returns after it lost just drops its result. Every attempt is counted in
/// the runtime's `timed_jobs` until it returns, and destruction waits for them (they use the
/// runtime and this node).

#include <optional>

#include "attempts.hpp"
#include "call_hook.hpp"
#include "call_nodes.hpp"
#include "flow.hpp"
#include "invoke.hpp"

namespace ferry::detail {

struct timed_attempt;

/// One item of a timed stage, from its arrival until every attempt on it has returned.
struct timed_item {
    msg m = nullptr;  ///< ours until settled
    gateway* gw = nullptr;
    std::uint64_t item = 0;
    std::optional<item_info> info;  ///< for a stage whose callable takes it
    any_value input;
    std::atomic<bool> settled{false};
    std::atomic<int> running{0};  ///< attempts inside the user's call
    // Under the node's mutex (the timed items' list):
    std::list<std::shared_ptr<timed_item>>::iterator where;  ///< in the node's items
    bool listed = false;
    /// Its attempts so far (their flags are raised when the item is settled).
    std::vector<std::shared_ptr<timed_attempt>> attempts;
};

/// One attempt (one call) on a timed item.
struct timed_attempt {
    /// this_call::stop_requested() for the call: raised when its deadline passes or its item is
    /// settled without it.
    std::atomic<bool> give_up{false};
    // On an I/O stage, whether a spare thread took this call's place (it then leaves the pool
    // once the call returns); decided under `mutex` by whichever comes first: the call returning
    // or the watchdog.
    std::mutex mutex;
    bool returned = false;
    bool replaced = false;
};

void timed_node::accept(msg m, gateway& gw, const shard_writer& w) {
    stage_runtime& st = st_;
    w.add(&counter_shard::arrived);
    if (m->kind == msg_kind::value && host_.should_drop(m)) host_.drop_unprocessed(m);
    if (m->kind != msg_kind::value) {
        host_.pass_on(st, m, gw, w);
        return;
    }
    auto it = std::make_shared<timed_item>();
    it->m = m;
    it->gw = &gw;
    it->item = m->source_index;
    if (st.spec.wants_item) it->info = host_.item_of(*m);
    it->input = std::move(m->value);
    w.add(&counter_shard::in);
    bool aborted = false;
    {
        std::lock_guard lock(mutex_);
        // An abort lets go of the items listed when it looks (let_go, under this mutex, after
        // raising the epoch's `aborting`): an item that comes later is not listed, holds up no
        // wait for the graph, and is cancelled here.
        if (host_.aborting()) {
            aborted = true;
        } else {
            gw.reserve_wait();  // released when the item has been passed on, or let go by an abort
            it->where = items_.insert(items_.end(), it);
            it->listed = true;
        }
    }
    if (aborted) {
        host_.drop_unprocessed(m);
        host_.pass_on(st, m, gw, w);
        return;
    }
    tsan_release(it.get());
    // A compute stage's calls take one of its `concurrency` slots (the gate queues the rest); an
    // I/O stage's threads are its slots.
    if (st.io || slots_.try_enter(it)) launch_attempt(std::move(it), 1, 0.0);
}

void timed_node::launch_attempt(std::shared_ptr<timed_item> it, int attempt, double backoff_ms) {
    host_.timed_calls().begin();
    auto job = [this, it = std::move(it), attempt, backoff_ms] {
        tsan_acquire(it.get());
        // The runtime's count last: destruction waits for it before this node goes.
        timed_jobs& jobs = host_.timed_calls();
        run(it, attempt, backoff_ms);
        jobs.end();
    };
    host_.launch(st_, std::move(job));
}

void timed_node::run(const std::shared_ptr<timed_item>& it, int attempt, double backoff_ms) {
    stage_runtime& st = st_;
    const shard_writer w =
        st.io ? st.counters.owned(io_pool::current_index()) : st.counters.owned();
    const error_policy& policy = st.spec.options.on_error;
    const auto timeout = st.spec.options.timeout;
    for (;;) {
        auto at = std::make_shared<timed_attempt>();
        {
            std::lock_guard lock(mutex_);
            it->attempts.push_back(at);
        }
        if (backoff_ms > 0) {
            const call_scope scope(&host_.stopping_flag(), &host_.aborting_flag(), &at->give_up,
                                   &st.counters.truncated, &st.counters.named);
            wait_unless_stopped(std::chrono::duration<double, std::milli>(backoff_ms));
        }
        if (it->settled || host_.cancelling()) return;  // an abort lets go of the item
        const bool last = attempt >= policy.attempts;
        // A timed-out attempt may still be reading the input: then no attempt may move from it.
        const bool consume = last && it->running.load() == 0;
        it->running.fetch_add(1);
        const auto token = deadlines_.add(clock::now() + timeout, [this, it, attempt, at] {
            at->give_up.store(true, std::memory_order_relaxed);
            if (st_.pool) {
                // The call holds its I/O thread: start one in its place, unless it returned.
                std::lock_guard lock(at->mutex);
                if (!at->returned) at->replaced = st_.pool->add_spare();
            }
            expired(it, attempt);
        });
        call_result r;
        std::exception_ptr err;
        w.active(1);
        {
            // Every attempt timed: the watchdog reads how long it has run.
            const call_hook hook(w, it->item, call_hook::timing::every);
            try {
                const call_scope scope(&host_.stopping_flag(), &host_.aborting_flag(), &at->give_up,
                                       &st.counters.truncated, &st.counters.named);
                const call_share share(host_.threads_now(), st.concurrency);
                const item_scope item(it->info ? &*it->info : nullptr);
                r.keep = invoke(st, it->input, r.out, r.children, consume);
            } catch (...) {
                err = std::current_exception();
            }
        }
        w.active(-1);
        it->running.fetch_sub(1);
        if (!deadlines_.remove(token)) {
            // Timed out: the watchdog decided the item's fate. If a spare thread took this one's
            // place, this one leaves the pool.
            std::lock_guard lock(at->mutex);
            at->returned = true;
            if (at->replaced) io_pool::leave_after_this_job();
            return;
        }
        if (err && retry_allowed(policy, attempt, err, it->input.has_value(), host_.cancelling())) {
            w.add(&counter_shard::retries);
            backoff_ms = pause_before_retry(policy, attempt, err).count();
            ++attempt;
            continue;
        }
        if (!settle_item(*it)) return;
        msg m = it->m;
        // A filter's kept input moves back: no other attempt reads it (see expired).
        if (!err && r.keep) settle(st, *m, it->input, r);
        host_.finish_call(st, m, w, err, r.keep);
        pass_on(*it, w);
        return;
    }
}

void timed_node::expired(const std::shared_ptr<timed_item>& it, int attempt) {
    stage_runtime& st = st_;
    const shard_writer w = st.counters.shared();  // the monitor thread
    w.add(&counter_shard::timeouts);
    if (it->settled) return;
    const stage_options& o = st.spec.options;
    const auto err = std::make_exception_ptr(timeout_error(st.name, it->item, o.timeout));
    // A retry runs beside the expired call, on the same input: only where the call leaves its
    // input alone (and never for a filter, whose kept input moves back into the box).
    if (retry_allowed(o.on_error, attempt, err, st.retries_beside, host_.cancelling())) {
        w.add(&counter_shard::retries);
        const double next = pause_before_retry(o.on_error, attempt, err).count();
        launch_attempt(it, attempt + 1, next);  // takes over the expired call's slot
        return;
    }
    if (!settle_item(*it)) return;
    host_.fail_item(st, it->m, err);
    pass_on(*it, w);
}

void timed_node::pass_on(timed_item& it, const shard_writer& w) {
    gateway& gw = *it.gw;
    host_.pass_on(st_, it.m, gw, w);
    if (!st_.io) {
        // A compute stage's slot is free: start the next waiting item.
        if (auto next = slots_.leave()) launch_attempt(std::move(*next), 1, 0.0);
    }
    gw.release_wait();
}

bool timed_node::settle_item(timed_item& it) {
    if (it.settled.exchange(true)) return false;
    std::lock_guard lock(mutex_);
    if (it.listed) {
        items_.erase(it.where);
        it.listed = false;
    }
    // Attempts still running (expired ones) learn that their item has moved on.
    for (auto& a : it.attempts) a->give_up.store(true, std::memory_order_relaxed);
    return true;
}

void timed_node::let_go() noexcept {
    std::vector<std::shared_ptr<timed_item>> items;
    {
        std::lock_guard lock(mutex_);
        items.assign(items_.begin(), items_.end());
    }
    for (auto& it : items) {
        if (settle_item(*it)) it->gw->release_wait();
    }
}

void timed_node::forget_epoch() noexcept {
    slots_.clear();
    const std::lock_guard lock(mutex_);
    items_.clear();
}

}  // namespace ferry::detail
