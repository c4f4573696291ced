// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::completion<U>`: the callback through which an asynchronous call (`map_async`,
/// `ferry::ops::http_client`) delivers its result, and the `detail::async_sink` it delivers to.
/// Part of ferry::core: components complete calls without knowing the engine that implements
/// the sink.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "ferry/detail/any_value.hpp"
#include "ferry/error.hpp"
#include "ferry/export.hpp"

namespace ferry {
namespace detail {

/// Where an asynchronous call delivers its result; implemented by the engine. Exactly one of
/// `complete`, `fail`, or `poll` (whose `try_take` eventually returns true or throws) is used.
class FERRY_API async_sink {
  public:
    virtual ~async_sink() = default;
    virtual void complete(any_value&& value) noexcept = 0;
    virtual void fail(std::exception_ptr error) noexcept = 0;
    /// Asks the engine's poller to call `try_take` until it yields the value (returns true).
    virtual void poll(std::function<bool(any_value&)> try_take) noexcept = 0;
    /// True once the call's result is no longer wanted: it is settled already (delivered,
    /// failed, past its stage's timeout), or its pipeline is stopping or abandoning the epoch.
    /// Any thread may ask, as long as it holds the sink.
    [[nodiscard]] virtual bool stop_requested() const noexcept { return false; }
};

}  // namespace detail

/// The callback handed to a `map_async<U>` callable: call it once with the result, or `fail`.
/// Copyable (so it fits callback APIs that take `std::function`); if every copy is destroyed
/// without a result the item fails with "completion dropped without a result" — nothing is lost.
template <class U>
class completion {
  public:
    explicit completion(std::shared_ptr<detail::async_sink> sink)
        : state_(std::make_shared<state>(std::move(sink))) {}

    /// Delivers the result. Later calls are ignored.
    void operator()(U value) const {
        if (auto sink = state_->claim()) {
            detail::any_value v;
            v.emplace<U>(std::move(value));
            sink->complete(std::move(v));
        }
    }
    /// Fails the item with `e`. Later calls are ignored.
    void fail(std::exception_ptr e) const {
        if (auto sink = state_->claim()) sink->fail(std::move(e));
    }
    /// True once the result is no longer wanted, so that the work behind it can stop early: the
    /// call is settled already (a result was given, or its stage's timeout failed it), or its
    /// pipeline is stopping, being destroyed or abandoning the epoch. A pipeline waits for its
    /// outstanding completions when it stops or is destroyed: an operation that can take long
    /// (a network request) should poll this and then `fail` with `errc::cancelled`, as
    /// `ferry::ops::http_client` does. Safe from any thread.
    [[nodiscard]] bool stop_requested() const noexcept {
        std::lock_guard lock(state_->mutex);
        return state_->sink == nullptr || state_->sink->stop_requested();
    }

  private:
    struct state {
        explicit state(std::shared_ptr<detail::async_sink> s) : sink(std::move(s)) {}
        state(const state&) = delete;
        state& operator=(const state&) = delete;
        ~state() {
            if (sink) {
                sink->fail(std::make_exception_ptr(
                    error(errc::internal, "completion dropped without a result")));
            }
        }
        std::shared_ptr<detail::async_sink> claim() {
            std::lock_guard lock(mutex);
            return std::exchange(sink, nullptr);
        }
        std::mutex mutex;
        std::shared_ptr<detail::async_sink> sink;
    };
    std::shared_ptr<state> state_;
};

}  // namespace ferry
