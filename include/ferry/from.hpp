// SPDX-License-Identifier: Apache-2.0
/// \file
/// Where a pipeline starts: `ferry::from(src)` and `ferry::from(dataset, sampling)`, and what only
/// a source can say (how to name its items, which to leave out).
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "ferry/builder.hpp"
#include "ferry/error.hpp"
#include "ferry/input.hpp"
#include "ferry/quarantine.hpp"
#include "ferry/sampling.hpp"
#include "ferry/state.hpp"

namespace ferry {

/// What `ferry::from()` returns: a `builder<T>` that can still say, before its first stage, how
/// its source items are named in failure records (`describe`) and which of them to leave out
/// (`exclude`). Every other builder method works as on `builder<T>` and returns a plain builder.
template <class T>
class source_builder : public builder<T> {
  public:
    using builder<T>::builder;

    /// Names each source item by `f(const T&)` (returning a `std::string`, `std::string_view`,
    /// `const char*` or `std::filesystem::path`) in `failure::input`, in error messages and log
    /// lines, and in the quarantine file. `f` is called once per item, on the source's thread,
    /// when the item is pulled (before any stage transforms it); keep it cheap. It replaces the
    /// path ferry uses by itself for `describable` elements. A throwing `f` fails the source.
    /// A returned URL's credentials are `REDACTED` (`ferry::input_name`'s rule) before ferry
    /// keeps it, so the quarantine file and exclusion by name both see the redacted form.
    /// \code
    ///   struct job { std::string url; int label; };
    ///   auto pipe = ferry::from(jobs)
    ///                   .describe([](const job& j) { return j.url; })
    ///                   .map(fetch, {.concurrency = 16, .on_error = ferry::skip})
    ///                   .build();
    /// \endcode
    template <class F>
    [[nodiscard]] source_builder describe(F f) const {
        static_assert(std::invocable<const F&, const T&>,
                      "ferry::source_builder<T>::describe(f): f must be callable with const T& "
                      "(the source's element type)");
        using R = std::remove_cvref_t<std::invoke_result_t<const F&, const T&>>;
        static_assert(describable<R>,
                      "ferry::source_builder<T>::describe(f): f must return std::string, "
                      "std::string_view, const char* or std::filesystem::path");
        source_builder next = *this;
        next.spec_.source.describe = [fn = std::make_shared<F>(std::move(f))](detail::any_value& v,
                                                                              std::string& out) {
            if constexpr (std::same_as<R, std::string>) {
                out = std::invoke(std::as_const(*fn), std::as_const(v.get<T>()));
                if (detail::may_hold_credentials(out)) out = detail::redact_url(out);
            } else {
                detail::describe_into(std::invoke(std::as_const(*fn), std::as_const(v.get<T>())),
                                      out);
            }
        };
        return next;
    }

    /// Leaves out the source items whose description (their path or URL, or the `describe` text)
    /// is on `list`: each is pulled, counted as filtered at the source (so delivered + filtered +
    /// failed == produced still holds) and goes no further. Calls add up: an item on any of the
    /// lists is left out. Throws `ferry::invalid_argument` when the elements have no description
    /// (not `describable`, and no `describe(f)` before).
    /// \code
    ///   auto pipe = ferry::from(files)
    ///                   .exclude(ferry::load_quarantine("bad.jsonl"))
    ///                   .map(ferry::ops::read_file, {.concurrency = 4, .executor = ferry::io})
    ///                   .build();
    /// \endcode
    [[nodiscard]] source_builder exclude(quarantine_list list) const {
        if (!this->spec_.source.describe) {
            throw invalid_argument(
                "exclude(): the source's elements have no description to match the list "
                "against; name them first with from(src).describe(f)");
        }
        source_builder next = *this;
        auto shared = std::make_shared<const quarantine_list>(std::move(list));
        auto before = std::move(next.spec_.source.excluded);
        next.spec_.source.excluded = [shared, before](const std::string& input) {
            return shared->contains(input) || (before && before(input));
        };
        return next;
    }
};

namespace detail {

template <class S>
inline constexpr bool is_source_builder = false;
template <class T>
inline constexpr bool is_source_builder<source_builder<T>> = true;
template <class S>
inline constexpr bool is_builder = false;
template <class T>
inline constexpr bool is_builder<builder<T>> = true;

/// A source of `T` opened by `open(epoch)`; elements that are paths or URLs describe themselves.
template <class T, class Open>
source_builder<T> make_source(
    Open open, std::function<std::uint64_t(std::uint64_t, std::uint64_t)> index_of = {},
    std::uint64_t seed = 0, std::function<source_cursor(std::uint64_t, std::uint64_t)> open_at = {},
    std::optional<sampler_identity> identity = std::nullopt,
    std::function<source_cursor(const pipeline_state&)> open_resumed = {}) {
    source_spec spec{std::move(open),         {},      {},
                     std::move(index_of),     seed,    std::move(open_at),
                     std::move(open_resumed), identity};
    if constexpr (describable<T>) {
        spec.describe = [](any_value& v, std::string& out) { describe_into(v.get<T>(), out); };
    }
    spec.value_bytes = &output_bytes_of<T>;
    return source_builder<T>(std::move(spec));
}

/// Holds a range as `from()` does: an lvalue by reference (the caller keeps it alive), an rvalue
/// by value.
template <class S>
std::shared_ptr<std::remove_reference_t<S>> hold_range(S&& src) {
    using H = std::remove_reference_t<S>;
    if constexpr (std::is_lvalue_reference_v<S>) {
        return std::shared_ptr<H>(std::shared_ptr<void>(), &src);
    } else {
        return std::make_shared<H>(std::move(src));
    }
}

/// A cursor over this rank's elements of `*holder` in `epoch`, in the sampler's order, from
/// position `from` on.
template <class R>
source_cursor sampled_cursor(std::shared_ptr<R> holder, const sampler& order, std::uint64_t epoch,
                             std::uint64_t from = 0) {
    using T = std::ranges::range_value_t<R>;
    struct state {
        std::shared_ptr<R> holder;
        sampler order;
        std::uint64_t epoch;
        std::uint64_t next;
    };
    if (from > order.size()) {
        // A state made in code (parse refuses such a text): resuming would end the epoch at once.
        throw invalid_argument("resume_from: the saved position " + std::to_string(from) +
                               " is past the end of the sampled epoch, which has " +
                               std::to_string(order.size()) + " items for this rank");
    }
    auto st = std::make_shared<state>(state{std::move(holder), order, epoch, from});
    return [st](any_value& out) {
        if (st->next == st->order.size()) return false;
        const auto i = st->order.index(st->epoch, st->next);
        out.emplace<T>(
            std::ranges::begin(*st->holder)[static_cast<std::ranges::range_difference_t<R>>(i)]);
        ++st->next;
        return true;
    };
}

/// A cursor over this rank's share of the rest of a merged epoch, from position `from` on.
template <class R>
source_cursor resumed_cursor(std::shared_ptr<R> holder,
                             std::shared_ptr<const resumed_sampler> share, std::uint64_t from) {
    using T = std::ranges::range_value_t<R>;
    auto next = std::make_shared<std::uint64_t>(std::min(from, share->size()));
    return [holder = std::move(holder), share = std::move(share), next](any_value& out) {
        if (*next == share->size()) return false;
        const auto i = share->index(*next);
        out.emplace<T>(
            std::ranges::begin(*holder)[static_cast<std::ranges::range_difference_t<R>>(i)]);
        ++*next;
        return true;
    };
}

}  // namespace detail

/// Starts a pipeline description from a source:
///  * an input range — an lvalue is read in place (keep it alive), an rvalue is owned; each epoch
///    reads it again from `begin()`;
///  * a generator `() -> std::optional<T>`, called until it returns `std::nullopt` (each epoch
///    calls it again from where it is; an endless generator is fine);
///  * an epoch factory `(std::uint64_t epoch) -> range`, called at the start of every epoch (the
///    place to reshuffle). A factory that can also be called as `(std::uint64_t epoch,
///    std::uint64_t position) -> range` is *positioned*: a pipeline resumed from a state `st`
///    opens the saved epoch with `(st.epoch(), st.position())`, which must yield what `(epoch)`
///    yields after its first `position` elements (`position` counts this rank's source items of
///    the epoch, those that failed or were left out included). Without it the resume calls
///    `(epoch)` and pulls and drops the first `position` elements; a seekable source (shards, a
///    file of records, a database cursor) saves that reading by being positioned, as
///    `ferry::sources::tar_samples` is;
///  * a `source_builder` (what `from`, `ferry::mix` and `ferry::zip` return), returned as it is.
///
/// Elements that are paths or URLs (`ferry::describable`) name themselves in failure records;
/// others can be named with `.describe(f)` right after `from()`.
/// \code
///   auto a = ferry::from(std::vector{1, 2, 3});
///   auto b = ferry::from([i = 0]() mutable -> std::optional<int> { return i++; });
///   auto c = ferry::from([&](std::uint64_t epoch) { return shuffled(files, epoch); });
///   struct records {   // positioned: a resume seeks instead of reading what came before
///       auto operator()(std::uint64_t epoch) const { return (*this)(epoch, 0); }
///       auto operator()(std::uint64_t epoch, std::uint64_t position) const {
///           return read_records(path, epoch, /*first=*/position);
///       }
///       std::string path;
///   };
///   auto d = ferry::from(records{"train.rec"});
/// \endcode
template <class S>
[[nodiscard]] auto from(S&& src) {
    using D = std::remove_cvref_t<S>;
    const auto make = [](auto tag, auto open) {
        return detail::make_source<typename decltype(tag)::type>(std::move(open));
    };
    if constexpr (detail::is_source_builder<D>) {
        return D(std::forward<S>(src));
    } else if constexpr (std::ranges::input_range<S>) {
        using T = std::ranges::range_value_t<S>;
        auto holder = detail::hold_range(std::forward<S>(src));
        return make(std::type_identity<T>{},
                    [holder](std::uint64_t) { return detail::range_cursor(holder); });
    } else if constexpr (detail::generator_source<D>) {
        using T =
            typename detail::optional_value<std::remove_cvref_t<std::invoke_result_t<D&>>>::type;
        auto gen = std::make_shared<D>(std::forward<S>(src));
        return make(std::type_identity<T>{}, [gen](std::uint64_t) -> detail::source_cursor {
            return [gen](detail::any_value& out) {
                auto v = std::invoke(*gen);
                if (!v) return false;
                out.emplace<T>(std::move(*v));
                return true;
            };
        });
    } else {
        static_assert(detail::epoch_source<D>,
                      "ferry::from(src): src must be an input range, a generator returning "
                      "std::optional<T>, or a callable (std::uint64_t epoch) -> range");
        using R = std::remove_cvref_t<std::invoke_result_t<D&, std::uint64_t>>;
        using T = std::ranges::range_value_t<R>;
        auto factory = std::make_shared<D>(std::forward<S>(src));
        auto open = [factory](std::uint64_t epoch) {
            return detail::range_cursor(std::make_shared<R>(std::invoke(*factory, epoch)));
        };
        if constexpr (detail::positioned_epoch_source<D>) {
            // A resume opens the epoch at its position instead of pulling and dropping the
            // items before it.
            using P = std::remove_cvref_t<std::invoke_result_t<D&, std::uint64_t, std::uint64_t>>;
            return detail::make_source<T>(
                std::move(open), {}, 0, [factory](std::uint64_t epoch, std::uint64_t position) {
                    return detail::range_cursor(
                        std::make_shared<P>(std::invoke(*factory, epoch, position)));
                });
        } else {
            return make(std::type_identity<T>{}, std::move(open));
        }
    }
}

/// Starts a pipeline description from a dataset that is visited by index: each epoch yields
/// this rank's elements of `dataset`, in `ferry::sampler(size(dataset), options)`'s order —
/// shuffled per epoch with `.shuffle`, split over `.world_size` ranks with the same count on
/// each (see `ferry::sampling` and `ferry::sampler` for the order and the remainder rules).
///
/// `dataset` is a sized random-access range (a `std::vector`, a `ferry::sources::labelled_files`,
/// a `std::span`, ...) whose elements can be copied (an element may come again, in a later epoch
/// or as padding). As with `from(range)`, an lvalue is read in place (keep it alive), an rvalue
/// is owned; its size is read again at the start of every epoch. The result is the same
/// `source_builder` as `from(range)`'s, so `describe` and `exclude` work on it.
///
/// Throws `ferry::invalid_argument` at once for options `ferry::sampler` rejects (`world_size`
/// 0, `rank >= world_size`).
/// \code
///   auto train = ferry::sources::image_folder("data/train");
///   const auto w = ferry::world::from_environment();
///   auto pipe = ferry::from(train, ferry::sampling{.shuffle = true, .seed = 42,
///                                                  .rank = w.rank, .world_size = w.size,
///                                                  .remainder = ferry::remainder::pad})
///                   .map(load, {.concurrency = 8})
///                   .batch(32)
///                   .build();
///   for (int epoch = 0; epoch < 10; ++epoch) {
///       for (auto& batch : pipe) train_step(batch);   // a new permutation each epoch
///   }
/// \endcode
template <class R>
[[nodiscard]] auto from(R&& dataset, const sampling& options) {
    static_assert(std::ranges::random_access_range<R> && std::ranges::sized_range<R>,
                  "ferry::from(dataset, sampling): dataset must be a sized random-access range "
                  "(e.g. a std::vector or ferry::sources::labelled_files); for other sources "
                  "use from(src) with an epoch factory");
    using T = std::ranges::range_value_t<R>;
    static_assert(std::is_constructible_v<T, std::ranges::range_reference_t<R>>,
                  "ferry::from(dataset, sampling): the elements must be copyable: an element can "
                  "be delivered again (next epoch, or as padding)");
    auto holder = detail::hold_range(std::forward<R>(dataset));
    // Checks the options now rather than at the first epoch.
    (void)sampler(static_cast<std::uint64_t>(std::ranges::size(*holder)), options);
    auto order = [holder, options] {
        return sampler(static_cast<std::uint64_t>(std::ranges::size(*holder)), options);
    };
    // The rest of a merged epoch, when the pipeline resumes from one (set once, when that
    // epoch opens, before any stage runs).
    auto resumed = std::make_shared<std::shared_ptr<const resumed_sampler>>();
    // item_info::index: the sampler's index of each position (only for stages that ask).
    auto index_of = [order, resumed](std::uint64_t epoch, std::uint64_t position) {
        if (*resumed && (*resumed)->epoch() == epoch) return (*resumed)->index(position);
        return order().index(epoch, position);
    };
    auto open_resumed = [holder, options, resumed](const pipeline_state& st) {
        auto share = std::make_shared<const resumed_sampler>(st, options.rank, options.world_size);
        *resumed = share;
        return detail::resumed_cursor(holder, std::move(share), st.position());
    };
    // A resume opens the epoch at its position in O(1); the identity lets it check that the
    // saved state is this dataset's.
    auto open_at = [holder, order](std::uint64_t epoch, std::uint64_t position) {
        return detail::sampled_cursor(holder, order(), epoch, position);
    };
    return detail::make_source<T>(
        [holder, order](std::uint64_t epoch) {
            return detail::sampled_cursor(holder, order(), epoch);
        },
        std::move(index_of), options.seed, std::move(open_at), order().identity(),
        std::move(open_resumed));
}

}  // namespace ferry
