// SPDX-License-Identifier: Apache-2.0
/// \file
/// map_async: at most `concurrency` calls outstanding per stage (its `async_node`'s gate, whose
/// limit a tuned stage's tuner moves: `gated_node::set_limit`), completed from any thread
/// through a sink (directly, or by the monitor polling a future), results passed on through the
/// async_node's gateway.

#include <mutex>

#include "call_hook.hpp"
#include "call_nodes.hpp"
#include "ferry/this_call.hpp"
#include "flow.hpp"

namespace ferry::detail {
namespace {

/// The sink handed to a map_async call: routes its one result back into the graph.
class sink_impl final : public async_sink, public std::enable_shared_from_this<sink_impl> {
  public:
    sink_impl(async_node& node, msg m)
        : node_(node),
          host_(node.host()),
          m_(m),
          w_(node.stage().counters.shared()),
          hook_(w_, span_log::no_item, call_hook::timing::detached) {}

    void complete(any_value&& v) noexcept override {
        if (done_.exchange(true)) return;
        m_->value = std::move(v);
        finish(nullptr);
    }
    void fail(std::exception_ptr e) noexcept override {
        if (done_.exchange(true)) return;
        finish(std::move(e));
    }
    /// Settles a call that is not started: its item is cancelled.
    void drop() noexcept {
        if (done_.exchange(true)) return;
        dropped_ = true;
        finish(nullptr);
    }
    bool stop_requested() const noexcept override {
        // finish() marks the call finished under this mutex before it lets the graph go on:
        // while it is not marked, the runtime (which waits for the call) is alive to be asked.
        const std::lock_guard lock(finish_mutex_);
        return finished_ || host_.cancelling();
    }
    void poll(std::function<bool(any_value&)> try_take) noexcept override {
        try {
            host_.poll_later(std::move(try_take),
                             [self = shared_from_this()](any_value* v, std::exception_ptr e) {
                                 if (v != nullptr) {
                                     self->complete(std::move(*v));
                                 } else {
                                     self->fail(std::move(e));
                                 }
                             });
        } catch (...) {
            fail(std::current_exception());
        }
    }

    /// The stage has a timeout: a call not completed by then fails with `timeout_error` (the
    /// watchdog completes it; a later result is ignored).
    void arm() {
        std::weak_ptr<sink_impl> self = shared_from_this();
        const stage_runtime& st = node_.stage();
        deadline_ = node_.deadlines()->add(
            std::chrono::steady_clock::now() + st.spec.options.timeout, [self] {
                auto s = self.lock();
                if (s == nullptr) return;
                stage_runtime& sst = s->node_.stage();
                sst.counters.shared().add(&counter_shard::timeouts);
                s->fail(std::make_exception_ptr(
                    timeout_error(sst.name, s->m_->source_index, sst.spec.options.timeout)));
            });
    }

  private:
    void finish(std::exception_ptr e) noexcept {
        {
            const std::lock_guard lock(finish_mutex_);
            finished_ = true;
        }
        if (deadline_) node_.deadlines()->remove(deadline_);
        hook_.end();
        w_.active(-1);
        node_.finish(m_, w_, e, dropped_);
    }

    async_node& node_;
    stage_host host_;
    msg m_;
    // Any thread may complete a call (the user's, the monitor's poller): shared counters. The
    // call's time runs from the sink's making to its one completion.
    shard_writer w_;
    call_hook hook_;
    std::atomic<bool> done_{false};
    bool dropped_ = false;
    mutable std::mutex finish_mutex_;
    bool finished_ = false;  // under finish_mutex_
    deadline_list::token deadline_;
};

}  // namespace

async_node::async_node(stage_host host, stage_runtime& st) : gated_node(host, st) {
    if (st.spec.options.timeout.count() > 0) deadlines_ = std::make_unique<deadline_list>();
}

void async_node::accept(msg m, gateway& gw, const shard_writer& w) {
    w.add(&counter_shard::arrived);
    if (m->kind == msg_kind::value && host_.should_drop(m)) host_.drop_unprocessed(m);
    if (m->kind != msg_kind::value) {
        host_.pass_on(st_, m, gw, w);
        return;
    }
    gw.reserve_wait();  // released when the call's result has been passed on
    tsan_release(m);    // what this thread read of m happens before a later reclaim
    // The gate's limit: the concurrency, or a tuned stage's now (set_limit moves it).
    if (calls_.try_enter(m)) start(m, w);
}

void async_node::start(msg m, const shard_writer& w) {
    stage_runtime& st = st_;
    w.add(&counter_shard::in);
    w.active(1);
    auto sink = std::make_shared<sink_impl>(*this, m);
    if (host_.should_drop(m)) {
        // Stopping, cancelled, or after an item that failed the pipeline: no call; the slot is
        // settled and the item cancelled.
        sink->drop();
        return;
    }
    try {
        if (deadlines_) sink->arm();
        const call_scope scope(&host_.stopping_flag(), &host_.aborting_flag(), nullptr,
                               &st.counters.truncated, &st.counters.named);
        st.spec.start_fn(std::move(m->value), sink);
    } catch (...) {
        sink->fail(std::current_exception());
    }
}

void async_node::finish(msg m, const shard_writer& w, const std::exception_ptr& err, bool dropped) {
    if (dropped) {
        host_.drop_unprocessed(m);  // not started: its work would be wasted
    } else {
        host_.finish_call(st_, m, w, err);
    }
    gateway& gw = *gw_;
    host_.pass_on(st_, m, gw, w);
    next_call();
    gw.release_wait();
}

void async_node::next_call() {
    // Start the next waiting call in this slot. Calls that complete synchronously would recurse
    // here once per waiting item; past a small depth, hand the start to the arena instead.
    thread_local int depth = 0;
    // A lowered limit takes effect as calls end: the slot then closes.
    const auto waiting = calls_.leave();
    if (!waiting) return;
    msg next = *waiting;
    if (depth >= 8) {
        host_.launch(st_, [this, next] { start(next, st_.counters.owned()); });
        return;
    }
    ++depth;
    start(next, st_.counters.shared());  // a completion, on any thread
    --depth;
}

}  // namespace ferry::detail
