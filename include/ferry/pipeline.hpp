// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::pipeline<T>`: the built, running pipeline — an input range of `T` with stats.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ferry/detail/spec.hpp"
#include "ferry/stats.hpp"

namespace ferry {

/// A running loading pipeline that yields `T`s; built by `ferry::from(...)....build()`.
///
/// Move-only. Iterate it with range-for (one epoch per loop) or `next()`. Leaving a loop early
/// ends that epoch's work promptly; the next loop starts a new epoch (the source is opened again
/// and told the epoch number) on the same graph and threads. Destroying the pipeline stops all
/// work and joins every thread it started. In a process forked after it was built, its threads
/// are not there: `next()`, `state()`, `stats()`, `failures()` and `write_trace()` throw
/// `ferry::invalid_argument` saying so, `stop()` returns, and destroying it leaves it as it is.
/// \code
///   auto pipe = ferry::from(paths).map(load, 8).batch(32).build({.threads = 4});
///   for (int epoch = 0; epoch < 3; ++epoch)
///       for (auto& batch : pipe) train_step(batch);
///   std::cout << pipe.stats();
/// \endcode
template <class T>
class pipeline {
  public:
    using value_type = T;

    /// Input iterator over one epoch. Move-only; destroying it before the end of the epoch
    /// (break, return, an exception in the loop body) ends the epoch's work.
    class iterator {
      public:
        using value_type = T;
        using difference_type = std::ptrdiff_t;
        using iterator_concept = std::input_iterator_tag;

        iterator() = default;
        iterator(iterator&& o) noexcept
            : owner_(std::exchange(o.owner_, nullptr)), current_(std::move(o.current_)) {
            o.current_.reset();
        }
        iterator& operator=(iterator&& o) noexcept {
            if (this != &o) {
                release();
                owner_ = std::exchange(o.owner_, nullptr);
                current_ = std::move(o.current_);
                o.current_.reset();
            }
            return *this;
        }
        iterator(const iterator&) = delete;
        iterator& operator=(const iterator&) = delete;
        ~iterator() { release(); }

        T& operator*() const { return *current_; }
        T* operator->() const { return &*current_; }
        iterator& operator++() {
            current_.reset();
            current_ = owner_->next();
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
            return !it.current_.has_value();
        }

      private:
        friend class pipeline;
        explicit iterator(pipeline* owner) : owner_(owner) { current_ = owner_->next(); }
        void release() noexcept {
            if (owner_ != nullptr && current_.has_value()) owner_->runtime_->abandon_epoch();
            owner_ = nullptr;
            current_.reset();
        }

        pipeline* owner_ = nullptr;
        mutable std::optional<T> current_;
    };

    pipeline(pipeline&&) noexcept = default;
    pipeline& operator=(pipeline&&) noexcept = default;
    pipeline(const pipeline&) = delete;
    pipeline& operator=(const pipeline&) = delete;
    ~pipeline() = default;

    /// The next element of the current epoch (a new epoch starts if none is running), or
    /// `std::nullopt` at the epoch's end or after `stop()`. Throws `ferry::stage_error` when a
    /// stage failed under the `fail` policy; every later call throws it again.
    [[nodiscard]] std::optional<T> next() {
        detail::any_value v;
        if (!runtime_->next(v)) return std::nullopt;
        return std::optional<T>(v.take_as<T>());
    }

    /// Continues the running epoch, or starts a new one.
    [[nodiscard]] iterator begin() { return iterator(this); }
    [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

    /// Stops for good; callable from any thread. A `next()` in progress returns promptly.
    void stop() noexcept { runtime_->stop(); }

    /// Where the epoch stands, between two `next()` calls (or two loop iterations): the state to
    /// save with a checkpoint and pass to `build({.resume_from = ...})` after a restart (see
    /// `ferry::pipeline_state`). Outside an epoch, the start of the next one. An unordered
    /// pipeline's state also lists the items done past its position. Throws
    /// `ferry::invalid_argument` for an unordered pipeline with a flat_map or unbatch, which
    /// cannot tell which outputs of an item were delivered.
    [[nodiscard]] pipeline_state state() const { return runtime_->state(); }

    /// Per-stage counters and timings, and the whole pipeline's accounting.
    [[nodiscard]] pipeline_stats stats() const { return runtime_->stats(); }
    /// Every item a stage skipped (or that failed the pipeline): stage, item, message.
    [[nodiscard]] std::vector<failure> failures() const { return runtime_->failures(); }
    /// Writes the spans recorded so far — every stage call, by thread, and the waits of the
    /// thread taking the outputs — as Chrome trace-event JSON, to open in https://ui.perfetto.dev
    /// or chrome://tracing. Needs `pipeline_options::trace_spans` > 0 (else throws
    /// `ferry::invalid_argument`); callable at any time, from any thread.
    void write_trace(std::ostream& os) const { runtime_->write_trace(os); }

  private:
    template <class U>
    friend class builder;
    explicit pipeline(std::unique_ptr<detail::runtime> rt) : runtime_(rt.release()) {}

    /// Leaks the runtime in a process forked after it was built (`orphaned()`): its threads
    /// stayed in the parent, and destroying it would wait for them for ever.
    struct runtime_deleter {
        void operator()(detail::runtime* rt) const noexcept {
            if (rt != nullptr && !rt->orphaned()) delete rt;
        }
    };
    std::unique_ptr<detail::runtime, runtime_deleter> runtime_;
};

}  // namespace ferry
