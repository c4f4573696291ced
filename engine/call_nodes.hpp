// SPDX-License-Identifier: Apache-2.0
/// \file
/// The nodes of the stages whose calls pass a gate of their own rather than the graph's: tuned
/// stages (tuned_stage.cpp), map_async (async_stage.cpp) and stages with a timeout
/// (timed_stage.cpp). Each owns its `call_gate` and, with a timeout, its deadlines. No TBB's flow
/// graph.
#pragma once

#include <chrono>
#include <list>
#include <memory>
#include <mutex>

#include "box.hpp"
#include "call_gate.hpp"
#include "counters.hpp"
#include "deadlines.hpp"
#include "stage_host.hpp"
#include "stage_runtime.hpp"

namespace ferry::detail {

/// A stage whose `call_gate` of messages lets `limit` calls run and queues the rest: a tuned
/// stage or a map_async. The tuner moves the limit (`set_limit`).
class gated_node : public stage_node {
  public:
    gated_node(stage_host host, stage_runtime& st) : host_(host), st_(st), calls_(st.concurrency) {}

    /// The calls it may run at once now.
    [[nodiscard]] int limit() const noexcept { return calls_.limit(); }
    /// Calls waiting for a slot (the monitor's queue in front of a tuned stage).
    [[nodiscard]] std::size_t waiting() const { return calls_.waiting(); }
    /// The tuner moves the limit; a raised one starts queued calls now (on the monitor's thread).
    void set_limit(int limit) {
        for (msg m : calls_.set_limit(limit)) start_admitted(m);
    }
    /// The node's way back into the graph (graph.cpp binds it).
    void bind(gateway& gw) noexcept { gw_ = &gw; }

    void forget_epoch() noexcept override { calls_.clear(); }

  protected:
    /// Starts the call of `m`, which `set_limit` let through (it holds a slot).
    virtual void start_admitted(msg m) = 0;

    stage_host host_;
    stage_runtime& st_;
    call_gate<msg> calls_;
    gateway* gw_ = nullptr;
};

/// A tuned stage (`ferry::tuned`): an admission node hands each item to `accept`, which starts
/// its call (`launch_call`) on the arena or the stage's I/O threads, or queues it; a call's end
/// starts the next queued one while under the limit.
class tuned_node final : public gated_node {
  public:
    using gated_node::gated_node;

    /// The admission node's body: starts `m`'s call, or queues it while `limit` calls run.
    void accept(msg m, gateway& gw, const shard_writer& w);

  private:
    void start_admitted(msg m) override { launch_call(m); }
    void launch_call(msg m);
    /// A call ended: the next queued one takes its place while under the limit.
    void call_ended();
};

/// map_async: at most `limit` calls outstanding, each completed from any thread through a sink
/// (async_stage.cpp), which passes the box on through the gateway.
class async_node final : public gated_node {
  public:
    async_node(stage_host host, stage_runtime& st);

    /// The admission node's body: starts `m`'s call, or queues it while `limit` run.
    void accept(msg m, gateway& gw, const shard_writer& w);
    /// Hands `m`'s value to the user's call with a sink (it holds a slot).
    void start(msg m, const shard_writer& w);
    /// A call's sink settled it: the box is passed on, then the slot goes to the next waiting.
    void finish(msg m, const shard_writer& w, const std::exception_ptr& err, bool dropped);
    [[nodiscard]] stage_host host() const noexcept { return host_; }
    [[nodiscard]] stage_runtime& stage() const noexcept { return st_; }
    /// The deadlines of its calls with a timeout (null without one).
    [[nodiscard]] deadline_list* deadlines() const noexcept { return deadlines_.get(); }

    void expire(std::chrono::steady_clock::time_point now) override {
        if (deadlines_) deadlines_->expire(now);
    }
    [[nodiscard]] bool watched() const noexcept override { return deadlines_ != nullptr; }

  private:
    void start_admitted(msg m) override {
        start(m, st_.counters.shared());  // the monitor's thread: shared
    }
    /// The next waiting call takes the slot of one that ended.
    void next_call();

    std::unique_ptr<deadline_list> deadlines_;
};

struct timed_item;  // timed_stage.cpp

/// A map, filter or flat_map with a timeout (`stage_plan::timed`): its calls run apart from
/// their boxes, so that the watchdog can settle an item whose call runs past its deadline
/// (timed_stage.cpp says who owns what).
class timed_node final : public stage_node {
  public:
    timed_node(stage_host host, stage_runtime& st) : host_(host), st_(st), slots_(st.concurrency) {}

    /// The admission node's body: moves `m`'s input into a timed item and starts its first
    /// attempt, or (a compute stage at its `concurrency`) queues it.
    void accept(msg m, gateway& gw, const shard_writer& w);

    void forget_epoch() noexcept override;
    /// An abort: lets go of every item still in the graph, so that waiting for the graph does
    /// not wait for calls that may never return; their boxes are reclaimed with the rest.
    void let_go() noexcept override;
    void expire(std::chrono::steady_clock::time_point now) override { deadlines_.expire(now); }
    [[nodiscard]] bool watched() const noexcept override { return true; }

  private:
    /// Runs attempt `attempt` (and the retries after it) of `it` on an I/O thread or the arena.
    void launch_attempt(std::shared_ptr<timed_item> it, int attempt, double backoff_ms);
    void run(const std::shared_ptr<timed_item>& it, int attempt, double backoff_ms);
    /// The watchdog's side: attempt `attempt` of `it` ran past the stage's timeout.
    void expired(const std::shared_ptr<timed_item>& it, int attempt);
    /// Takes `it`'s box from whoever else might settle it (once: false when an abort or a
    /// timeout took it).
    bool settle_item(timed_item& it);
    /// Passes `it`'s box on with its outcome and frees its slot.
    void pass_on(timed_item& it, const shard_writer& w);

    stage_host host_;
    stage_runtime& st_;
    deadline_list deadlines_;
    /// A compute stage's items waiting for a slot, `concurrency` at once (an I/O stage's threads
    /// are its slots).
    call_gate<std::shared_ptr<timed_item>> slots_;
    /// Its items not yet passed on (for an abort), under `mutex_`, which also guards each item's
    /// list of attempts.
    std::mutex mutex_;
    std::list<std::shared_ptr<timed_item>> items_;
};

inline int stage_runtime::limit() const noexcept {
    return gate != nullptr ? gate->limit() : concurrency;
}

}  // namespace ferry::detail
