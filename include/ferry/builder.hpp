// SPDX-License-Identifier: Apache-2.0
/// \file
/// The fluent builder: `ferry::from(src).map(f, 8).filter(p).batch(32).build()`.
#pragma once

#include <chrono>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/byte_size.hpp"
#include "ferry/completion.hpp"
#include "ferry/detail/builder_checks.hpp"
#include "ferry/detail/spec.hpp"
#include "ferry/detail/stage_calls.hpp"
#include "ferry/error.hpp"
#include "ferry/item.hpp"
#include "ferry/options.hpp"
#include "ferry/pipeline.hpp"

namespace ferry {

template <class T>
class builder;
template <class T>
class source_builder;

namespace detail {

template <class>
inline constexpr bool dependent_false = false;

/// What `ferry::zip`, `ferry::merge` and `ferry::from` read of a builder: its source and its
/// stages.
struct source_access {
    template <class T>
    static const source_spec& source(const builder<T>& b) noexcept {
        return b.spec_.source;
    }
    template <class T>
    static bool has_stages(const builder<T>& b) noexcept {
        return !b.spec_.stages.empty();
    }
    template <class T>
    static const std::vector<stage_spec>& stages(const builder<T>& b) noexcept {
        return b.spec_.stages;
    }
    /// `b` with stage `s` appended, whose elements are `U` (`ferry::merge` adds its route).
    template <class U, class T>
    static builder<U> with_stage(const builder<T>& b, stage_spec s) {
        return b.template then<U>(std::move(s));
    }
};

/// `pipeline_spec::output_bytes` for elements of type `T`.
template <class T>
std::size_t output_bytes_of(any_value& v) {
    return byte_size(v.get<T>());
}

/// Makes `to_cuda()`'s stage (`Enable` is always void): defined in <ferry/cuda.hpp>, so that a
/// builder carries no CUDA names until a user asks for the transfer.
template <class T, class Enable>
struct cuda_stage {
    static_assert(dependent_false<Enable>,
                  "ferry::builder<T>::to_cuda(): #include <ferry/cuda.hpp> (and link ferry::cuda) "
                  "to copy a pipeline's elements to a CUDA device");
    struct unavailable {};
    using options = unavailable;
};

}  // namespace detail

/// Describes a pipeline whose elements are `T`. Each call returns a new builder (the element
/// type follows the callables' return types); `build()` compiles it to a TBB flow graph.
/// A callable that does not fit its call does not compile: the first error is a static_assert
/// naming the call and what it needs (`ferry::builder<T>::map(f): f cannot be called with T,
/// ...`), and the calls after it add none (detail/builder_checks.hpp).
template <class T>
class builder {
  public:
    using element_type = T;

    /// Applies `f` to every element; up to `options.concurrency` calls run at once (so `f`
    /// must be safe to call concurrently when that is above 1). Calls start in the order their
    /// inputs reach the stage (input order, unless an earlier stage finishes out of order), on
    /// any executor.
    ///
    /// `f` may take the element's `ferry::item_info` as a second parameter, e.g. to seed its
    /// augmentations with `ferry::item_rng(info)`.
    template <class F>
    [[nodiscard]] auto map(F f, stage_options options = {}) const {
        // A mistake's first error is the check's static_assert (detail/builder_checks.hpp).
        if constexpr (!detail::accept_map<F, T>()) {
            return refused<detail::rejected_element>();
        } else if constexpr (detail::takes_item<F, T&&>) {
            return map_stage(detail::with_item<F>{std::move(f)}, std::move(options), true);
        } else {
            return map_stage(std::move(f), std::move(options), false);
        }
    }
    /// `map(f, n)`: shorthand for `map(f, {.concurrency = n})`.
    template <class F>
    [[nodiscard]] auto map(F f, int concurrency) const {
        return map(std::move(f), stage_options{.concurrency = concurrency});
    }

  private:
    template <class F>
    [[nodiscard]] auto map_stage(F f, stage_options options, bool wants_item) const {
        using U = std::remove_cvref_t<std::invoke_result_t<F&, T&&>>;
        auto fn = std::make_shared<F>(std::move(f));
        detail::stage_spec s;
        s.kind = detail::stage_kind::map;
        s.options = std::move(options);
        s.map_fn = [fn](detail::any_value& in, detail::any_value& out, bool last_attempt) {
            U result = detail::call_on<T>(*fn, in, last_attempt);
            out.emplace<U>(std::move(result));
        };
        s.retry_reads_input = std::invocable<F&, T&> || std::copy_constructible<T>;
        s.wants_item = wants_item;
        return then<U>(std::move(s));
    }

  public:
    /// Keeps the elements for which `pred(const T&)` is true; the others count as filtered.
    /// `pred` may take the element's `ferry::item_info` as a second parameter.
    template <class P>
    [[nodiscard]] builder<T> filter(P pred, stage_options options = {}) const {
        if constexpr (!detail::accept_filter<P, T>()) {
            return *this;
        } else if constexpr (detail::takes_item<P, const T&>) {
            return filter_stage(detail::with_item<P>{std::move(pred)}, std::move(options), true);
        } else {
            return filter_stage(std::move(pred), std::move(options), false);
        }
    }

  private:
    template <class P>
    [[nodiscard]] builder<T> filter_stage(P pred, stage_options options, bool wants_item) const {
        auto fn = std::make_shared<P>(std::move(pred));
        detail::stage_spec s;
        s.kind = detail::stage_kind::filter;
        s.options = std::move(options);
        s.filter_fn = [fn](detail::any_value& v) {
            return static_cast<bool>(std::invoke(*fn, std::as_const(v.get<T>())));
        };
        s.wants_item = wants_item;
        return then<T>(std::move(s));
    }

  public:
    /// `filter(pred, n)`: shorthand for `filter(pred, {.concurrency = n})`.
    template <class P>
    [[nodiscard]] builder<T> filter(P pred, int concurrency) const {
        return filter(std::move(pred), stage_options{.concurrency = concurrency});
    }

    /// One in, many out: `g(T)` returns a range; each of its elements becomes an element. In an
    /// ordered pipeline the outputs of one input stay together and in input order. An input whose
    /// range is empty counts as filtered. `g` may take the element's `ferry::item_info` as a
    /// second parameter.
    template <class G>
    [[nodiscard]] auto flat_map(G g, stage_options options = {}) const {
        if constexpr (!detail::accept_flat_map<G, T>()) {
            return refused<detail::rejected_element>();
        } else if constexpr (detail::takes_item<G, T&&>) {
            return flat_map_stage(detail::with_item<G>{std::move(g)}, std::move(options), true);
        } else {
            return flat_map_stage(std::move(g), std::move(options), false);
        }
    }

  private:
    template <class G>
    [[nodiscard]] auto flat_map_stage(G g, stage_options options, bool wants_item) const {
        using R = std::invoke_result_t<G&, T&&>;
        using U = std::ranges::range_value_t<R>;
        auto fn = std::make_shared<G>(std::move(g));
        detail::stage_spec s;
        s.kind = detail::stage_kind::flat_map;
        s.options = std::move(options);
        s.expand_fn = [fn](detail::any_value& v, std::vector<detail::any_value>& out,
                           bool last_attempt) {
            R r = detail::call_on<T>(*fn, v, last_attempt);
            for (auto it = std::ranges::begin(r); it != std::ranges::end(r); ++it) {
                detail::emplace_from<U>(out.emplace_back(), it);
            }
        };
        s.retry_reads_input = std::invocable<G&, T&> || std::copy_constructible<T>;
        s.wants_item = wants_item;
        return then<U>(std::move(s));
    }

  public:
    /// `flat_map(g, n)`: shorthand for `flat_map(g, {.concurrency = n})`.
    template <class G>
    [[nodiscard]] auto flat_map(G g, int concurrency) const {
        return flat_map(std::move(g), stage_options{.concurrency = concurrency});
    }

    /// Groups `n` consecutive elements into a `std::vector<T>`. The last batch of an epoch may be
    /// short unless `{.drop_last = true}`.
    [[nodiscard]] builder<std::vector<T>> batch(std::size_t n, batch_options options = {}) const {
        if (n == 0) throw invalid_argument("batch(n): n must be at least 1");
        detail::stage_spec s;
        s.kind = detail::stage_kind::batch;
        s.options.name = std::move(options.name);
        s.batch_size = n;
        s.drop_last = options.drop_last;
        s.pack_fn = &detail::pack_vector<T>;
        return then<std::vector<T>>(std::move(s));
    }

    /// Groups elements into `std::vector<T>` batches by cost (tokens, pixels, seconds) instead of
    /// count: `cost(const T&)` returns a number; elements of one bucket (`options.buckets`) are
    /// batched together, and a bucket's batch is closed when the next element would take its
    /// summed cost past `options.max_cost`. The stage gathers `options.buffer` elements at a
    /// time (a window, in input order), groups them so, and emits the window's batches in the
    /// order they closed, then the window's partly filled buckets in the order they were
    /// started. The grouping depends only on the elements' costs and order: the same input
    /// gives the same batches on every run, and a pipeline with it resumes exactly
    /// (`pipeline::state()` names the window's first element and the batches of it delivered).
    ///
    /// `stats()` shows the batches' summed cost and what they would cost padded to their largest
    /// element (`stage_stats::cost`, `padded_cost`), and `oversized batches`: elements that cost
    /// more than `max_cost` alone, each a batch of its own. An element whose cost is negative,
    /// NaN or infinite, or whose `cost` throws, fails under `options.on_error`, named.
    /// Throws `ferry::invalid_argument` for a `max_cost` that is not a finite number above 0,
    /// bucket bounds that are not finite and ascending, or a `buffer` of 0.
    /// \code
    ///   .batch_by([](const clip& c) { return c.seconds; },
    ///             {.max_cost = 600.0, .buckets = {2, 5, 10, 30}, .buffer = 2000})
    /// \endcode
    template <class C>
    [[nodiscard]] builder<std::vector<T>> batch_by(C cost, batch_by_options options) const {
        if constexpr (!detail::accept_batch_by<C, T>()) {
            return refused<std::vector<T>>();
        } else {
            return batch_by_stage(std::move(cost), std::move(options));
        }
    }

  private:
    template <class C>
    [[nodiscard]] builder<std::vector<T>> batch_by_stage(C cost, batch_by_options options) const {
        const auto say = [](const std::string& what) {
            throw invalid_argument("batch_by: " + what);
        };
        if (!(options.max_cost > 0) || options.max_cost == HUGE_VAL) {
            say("max_cost must be a finite number above 0, got " +
                std::to_string(options.max_cost));
        }
        for (std::size_t i = 0; i < options.buckets.size(); ++i) {
            const double b = options.buckets[i];
            if (!(b > -HUGE_VAL && b < HUGE_VAL) || (i > 0 && !(options.buckets[i - 1] < b))) {
                say("bucket bounds must be finite and ascending; bound " + std::to_string(i) +
                    " is " + std::to_string(b));
            }
        }
        if (options.buffer == 0) say("buffer must be at least 1 element");
        auto fn = std::make_shared<C>(std::move(cost));
        detail::stage_spec s;
        s.kind = detail::stage_kind::batch_by;
        s.options.name = std::move(options.name);
        s.options.on_error = options.on_error;
        s.batch_size = options.buffer;
        s.drop_last = options.drop_last;
        s.max_cost = options.max_cost;
        s.cost_bounds = std::move(options.buckets);
        s.cost_fn = [fn](detail::any_value& v) {
            return static_cast<double>(std::invoke(std::as_const(*fn), std::as_const(v.get<T>())));
        };
        s.pack_fn = &detail::pack_vector<T>;
        return then<std::vector<T>>(std::move(s));
    }

  public:
    /// Sends each element down one of several branches and joins them again: `select(const T&)`
    /// returns the branch's index (0 for the first `branch`), and `branch_i(builder<T>)` adds
    /// that branch's stages (map, filter, map_async, flat_map, unbatch), each with its own
    /// concurrency. Every branch must end with the same element type `U`; the route's elements
    /// are `U`. The branches are compiled into the pipeline's one graph (no thread per branch),
    /// input order is kept across them unless `options.ordered` is false (a branch with a
    /// flat_map or unbatch rejoins in input order always: all outputs of an element, in their
    /// order, at the element's place), and every element is counted once: by the route, then by
    /// the stages of its branch. A selector that throws or returns an index with no branch fails
    /// the element under `options.on_error`, naming the index. Throws `ferry::invalid_argument`
    /// for a branch with a batch, batch_by or route (those go after the route).
    /// \code
    ///   .route([](const sample& s) { return s.is_video ? 1 : 0; },
    ///          [](auto b) { return b.map(decode_image_sample, 8); },
    ///          [](auto b) { return b.map(decode_video_sample, 2); })
    /// \endcode
    template <class S, class... B>
    requires(!std::same_as<S, route_options>)
        [[nodiscard]] auto route(S select, B... branches) const {
        return route(route_options{}, std::move(select), std::move(branches)...);
    }
    /// `route` with options: `.route({.name = "by kind", .on_error = ferry::skip}, select, ...)`.
    template <class S, class... B>
    [[nodiscard]] auto route(route_options options, S select, B... branches) const {
        if constexpr (!detail::accept_route<S, T, B...>()) {
            return refused<detail::rejected_element>();
        } else {
            return route_stage<typename detail::route_check<S, T, B...>::U>(
                std::move(options), std::move(select), std::move(branches)...);
        }
    }

  private:
    template <class U, class S, class... B>
    [[nodiscard]] builder<U> route_stage(route_options options, S select, B... branches) const {
        auto fn = std::make_shared<S>(std::move(select));
        detail::stage_spec s;
        s.kind = detail::stage_kind::route;
        s.options.name = std::move(options.name);
        s.options.on_error = options.on_error;
        s.options.ordered = options.ordered;
        s.select_fn = [fn](detail::any_value& v) {
            return static_cast<std::int64_t>(
                std::invoke(std::as_const(*fn), std::as_const(v.get<T>())));
        };
        const builder<T> start{detail::source_spec{}};
        (s.branches.push_back(detail::source_access::stages(std::invoke(branches, start))), ...);
        detail::check_branches("route", s.branches);
        return then<U>(std::move(s));
    }

  public:
    /// The inverse of `batch`: each element of a range-valued element becomes an element (on
    /// elements that are not ranges it does not compile).
    [[nodiscard]] auto unbatch() const {
        if constexpr (!detail::accept_unbatch<T>()) {
            return refused<detail::rejected_element>();
        } else {
            return unbatch_stage();
        }
    }

  private:
    [[nodiscard]] auto unbatch_stage() const {
        using U = std::ranges::range_value_t<T>;
        detail::stage_spec s;
        s.kind = detail::stage_kind::unbatch;
        s.expand_fn = [](detail::any_value& v, std::vector<detail::any_value>& out, bool) {
            T whole = v.take_as<T>();
            for (auto it = std::ranges::begin(whole); it != std::ranges::end(whole); ++it) {
                out.emplace_back().emplace<U>(std::ranges::iter_move(it));
            }
        };
        return then<U>(std::move(s));
    }

  public:
    /// Asynchronous calls, with up to `options.concurrency` outstanding and no thread blocked
    /// while they wait. Two forms:
    ///  * `f(T) -> std::future<U>`: ferry polls the futures from one thread of its own;
    ///  * `map_async<U>(f)` with `f(T, ferry::completion<U> done)`: call `done(u)` (or
    ///    `done.fail(e)`) from any thread when the result is ready.
    /// Retry policies do not apply (the input has been handed over); skip and fail do. `f` is
    /// called in the order the inputs reach the stage; it should hand the work over and
    /// return, since a call that waits holds up the calls for the inputs after it.
    template <class U = void, class F>
    [[nodiscard]] auto map_async(F f, stage_options options = {}) const {
        if constexpr (!detail::accept_map_async<U, F, T>()) {
            return refused<detail::rejected_element>();
        } else {
            return map_async_stage<U>(std::move(f), std::move(options));
        }
    }

  private:
    template <class U, class F>
    [[nodiscard]] auto map_async_stage(F f, stage_options options) const {
        auto fn = std::make_shared<F>(std::move(f));
        detail::stage_spec s;
        s.kind = detail::stage_kind::map_async;
        s.options = std::move(options);
        if constexpr (std::is_void_v<U>) {
            using Fut = std::remove_cvref_t<std::invoke_result_t<F&, T&&>>;
            using V = typename detail::future_value<Fut>::type;
            s.start_fn = [fn](detail::any_value&& v, std::shared_ptr<detail::async_sink> sink) {
                auto fut = std::make_shared<Fut>(std::invoke(*fn, v.take_as<T>()));
                sink->poll([fut](detail::any_value& out) {
                    // `deferred` counts as ready: get() runs it here, on the poller thread.
                    if (fut->wait_for(std::chrono::seconds(0)) == std::future_status::timeout)
                        return false;
                    out.emplace<V>(fut->get());
                    return true;
                });
            };
            return then<V>(std::move(s));
        } else {
            s.start_fn = [fn](detail::any_value&& v, std::shared_ptr<detail::async_sink> sink) {
                completion<U> done(std::move(sink));
                try {
                    std::invoke(*fn, v.take_as<T>(), done);
                } catch (...) {
                    done.fail(std::current_exception());  // the real cause, not "dropped"
                }
            };
            return then<U>(std::move(s));
        }
    }

  public:
    /// `map_async(f, n)`: shorthand for `map_async(f, {.concurrency = n})`.
    template <class U = void, class F>
    [[nodiscard]] auto map_async(F f, int concurrency) const {
        return map_async<U>(std::move(f), stage_options{.concurrency = concurrency});
    }

    /// Copies every element to a CUDA device (#include <ferry/cuda.hpp>, link `ferry::cuda`): a
    /// serial, ordered stage named "to_cuda" that applies `ferry::cuda_transfer<T>`, with pinned
    /// staging, asynchronous copies on its own stream and a caching device allocator. The element
    /// type becomes what the transfer returns (`ferry::cuda_tensor` for a `ferry::tensor`):
    /// \code
    ///   .batch(32).map(ferry::ops::collate).to_cuda({.device = 0})   // -> ferry::cuda_tensor
    /// \endcode
    /// `build()` throws `ferry::error` (`errc::cuda`, "no CUDA device: ...") on a machine without
    /// a usable device, and "ferry was built without CUDA" when it was.
    template <class Enable = void>
    [[nodiscard]] auto to_cuda(typename detail::cuda_stage<T, Enable>::options options = {}) const {
        return detail::cuda_stage<T, Enable>::append(*this, std::move(options));
    }

    /// Compiles the description into a running pipeline (its graph and threads start now; items
    /// flow when the first element is asked for). Throws `ferry::invalid_argument` on options
    /// that cannot work (e.g. an `in_flight` smaller than a batch), and what a stage's build-time
    /// check throws (`to_cuda()` without a device: `ferry::error` with `errc::cuda`).
    [[nodiscard]] pipeline<T> build(pipeline_options options = {}) const {
        detail::pipeline_spec spec = spec_;
        spec.output_bytes = &detail::output_bytes_of<T>;
        for (auto& s : spec.stages) {
            if (s.on_build) s.on_build(s);
            for (auto& branch : s.branches) {
                for (auto& b : branch) {
                    if (b.on_build) b.on_build(b);
                }
            }
        }
        return pipeline<T>(detail::compile(std::move(spec), std::move(options)));
    }

    /// For `from()`: a builder over a type-erased source.
    explicit builder(detail::source_spec source) { spec_.source = std::move(source); }

  private:
    template <class U>
    friend class builder;
    template <class U>
    friend class source_builder;

    template <class, class>
    friend struct detail::cuda_stage;
    friend struct detail::source_access;

    /// What a call refused at compile time returns: its `static_assert` is the error to read,
    /// and calls on a builder of `detail::rejected_element` add none of their own.
    template <class U>
    builder<U> refused() const {
        return builder<U>(spec_.source);
    }

    template <class U>
    builder<U> then(detail::stage_spec s) const {
        if (s.value_bytes == nullptr) s.value_bytes = &detail::output_bytes_of<U>;
        builder<U> next(spec_.source);
        next.spec_.stages = spec_.stages;
        next.spec_.stages.push_back(std::move(s));
        return next;
    }

    detail::pipeline_spec spec_;
};

}  // namespace ferry
