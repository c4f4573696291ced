// SPDX-License-Identifier: Apache-2.0
/// \file
/// How the builder turns what users pass it (ranges, generators, epoch factories, callables of
/// an element or of an element and its `item_info`) into the engine's type-erased cursors and
/// calls. Users never touch this.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <future>
#include <iterator>
#include <memory>
#include <optional>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/detail/any_value.hpp"
#include "ferry/detail/spec.hpp"
#include "ferry/item.hpp"

namespace ferry::detail {

template <class T>
struct optional_value {};
template <class T>
struct optional_value<std::optional<T>> {
    using type = T;
};

template <class G>
concept generator_source = std::invocable<G&> && requires {
    typename optional_value<std::remove_cvref_t<std::invoke_result_t<G&>>>::type;
};

template <class G>
concept epoch_source = std::invocable<G&, std::uint64_t> &&
    std::ranges::input_range<std::invoke_result_t<G&, std::uint64_t>>;

/// An epoch factory that can also open an epoch at a position: `(epoch, position) -> range` of
/// the same elements.
template <class G>
concept positioned_epoch_source =
    epoch_source<G> && std::invocable<G&, std::uint64_t, std::uint64_t> &&
    std::ranges::input_range<std::invoke_result_t<G&, std::uint64_t, std::uint64_t>> &&
    std::same_as<
        std::ranges::range_value_t<std::invoke_result_t<G&, std::uint64_t>>,
        std::ranges::range_value_t<std::invoke_result_t<G&, std::uint64_t, std::uint64_t>>>;

template <class T>
struct future_value {};
template <class T>
struct future_value<std::future<T>> {
    using type = T;
};

/// Stores an element read from a range iterator: copies when it can (so an owned range can be
/// read again next epoch), moves otherwise.
template <class T, class It>
void emplace_from(any_value& out, It& it) {
    if constexpr (std::is_constructible_v<T, std::iter_reference_t<It>>) {
        out.emplace<T>(*it);
    } else {
        out.emplace<T>(std::ranges::iter_move(it));
    }
}

/// A cursor over one pass of `*holder`.
template <class R>
source_cursor range_cursor(std::shared_ptr<R> holder) {
    using T = std::ranges::range_value_t<R>;
    struct state {
        state(std::shared_ptr<R> h, std::ranges::iterator_t<R> i, std::ranges::sentinel_t<R> e)
            : holder(std::move(h)), it(std::move(i)), end(std::move(e)) {}
        std::shared_ptr<R> holder;
        std::ranges::iterator_t<R> it;
        std::ranges::sentinel_t<R> end;
    };
    auto st =
        std::make_shared<state>(holder, std::ranges::begin(*holder), std::ranges::end(*holder));
    return [st](any_value& out) {
        if (st->it == st->end) return false;
        emplace_from<T>(out, st->it);
        ++st->it;
        return true;
    };
}

/// Calls `f` on the element in `v` and returns the result. When this is not the last attempt the
/// input is left intact (passed as an lvalue, or copied) so that a retry can use it again.
template <class T, class F>
std::remove_cvref_t<std::invoke_result_t<F&, T&&>> call_on(F& f, any_value& v, bool last_attempt) {
    T& in = v.get<T>();
    if constexpr (std::invocable<F&, T&>) {
        if (!last_attempt) return std::invoke(f, in);
    } else if constexpr (std::copy_constructible<T>) {
        if (!last_attempt) return std::invoke(f, T(in));
    }
    // The call may move from the input: whatever happens, it is gone afterwards (so a failure is
    // never retried with a moved-from element).
    struct consumed {
        any_value& v;
        ~consumed() { v.reset(); }
    } guard{v};
    return std::invoke(f, std::move(in));
}

/// A callable of `(T, const item_info&)` as one of `(T)`: the engine tells it the item of the call
/// running on this thread (a stage built from it asks the engine to, `stage_spec::wants_item`).
template <class F>
struct with_item {
    F f;
    template <class X>
    requires std::invocable<F&, X, const item_info&>
    decltype(auto) operator()(X&& x) {
        static const item_info none{};
        const item_info* info = current_item();
        return std::invoke(f, std::forward<X>(x), info != nullptr ? *info : none);
    }
};

/// Whether `F` takes the element and its `item_info` (and not the element alone).
template <class F, class T>
concept takes_item = !std::invocable<F&, T> && std::invocable<F&, T, const item_info&>;

/// Packs `items` (in order) into one `std::vector<T>`: batch's and batch_by's `pack_fn`.
template <class T>
void pack_vector(std::vector<any_value>& items, any_value& out) {
    std::vector<T> b;
    b.reserve(items.size());
    for (auto& a : items) b.push_back(a.take_as<T>());
    out.emplace<std::vector<T>>(std::move(b));
}

}  // namespace ferry::detail
