// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the builder checks of the callables and branches it is given: at compile time, the
/// conditions (`*_check`) and the `static_assert`s that state them in words (`accept_*()`); at
/// build time, the branches of a route or merge. Users never touch this.
///
/// Each builder call evaluates its `accept_*()` before anything else, so that a mistake's first
/// error is a `static_assert` there, naming the call and what it needs, and the compiler's note
/// on it names the types (the `*_check` struct's arguments). The conditions are plain `bool`s (not
/// concepts), so that GCC's note under a failed assertion is one line, not a walk through the
/// standard library's concepts; each condition is true when an earlier one failed, so that one
/// mistake gives one message. A call whose check fails compiles nothing more and returns a
/// builder of `rejected_element` (or of the type the call would have given, where that is
/// known), on which later calls check nothing: the first error is the one to read.
#pragma once

#include <concepts>
#include <cstddef>
#include <functional>
#include <ranges>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ferry/completion.hpp"
#include "ferry/detail/spec.hpp"
#include "ferry/detail/stage_calls.hpp"
#include "ferry/error.hpp"
#include "ferry/item.hpp"

namespace ferry {

template <class T>
class builder;

namespace detail {

/// The element type of a builder after a call that did not compile: calls on such a builder
/// add no errors of their own.
struct rejected_element {};

/// Whether `T` is `rejected_element` (or a batch of them).
template <class T>
inline constexpr bool is_rejected = false;
template <>
inline constexpr bool is_rejected<rejected_element> = true;
template <class T>
inline constexpr bool is_rejected<std::vector<T>> = is_rejected<T>;

/// What `F` returns when called with `A...`; `rejected_element` when it cannot be called so.
template <class F, class... A>
struct call_result {
    using type = rejected_element;
};
template <class F, class... A>
requires std::invocable<F, A...>
struct call_result<F, A...> {
    using type = std::invoke_result_t<F, A...>;
};

/// What a stage callable `F` of a `T` returns: called with `X` (the element as the stage passes
/// it), or with `X` and the item's `item_info`.
template <class F, class X>
using element_call_result = typename std::conditional_t<std::invocable<F&, X>, call_result<F&, X>,
                                                        call_result<F&, X, const item_info&>>::type;

/// Whether `F` can be called with `X`, or with `X` and the item's `item_info`.
template <class F, class X>
inline constexpr bool takes_element =
    std::invocable<F&, X> || std::invocable<F&, X, const item_info&>;

/// `map(f)` on a builder of `T`.
template <class F, class T>
struct map_check {
    static constexpr bool takes_t = takes_element<F, T&&>;
    static constexpr bool returns_element =
        !takes_t || !std::is_void_v<element_call_result<F, T&&>>;
    static constexpr bool ok = takes_t && returns_element;
};

/// Asserts, in words, what `map` needs (`map_check`'s conditions); true when the
/// stage can be built.
template <class F, class T>
consteval bool accept_map() {
    if constexpr (is_rejected<T>) {
        return false;  // an earlier call's error is the one to read
    } else {
        using check = map_check<F, T>;
        static_assert(
            check::takes_t,
            "ferry::builder<T>::map(f): f cannot be called with T, the pipeline's element "
            "type at this call, nor with (T, const ferry::item_info&); the compiler's notes "
            "name T and f");
        static_assert(check::returns_element,
                      "ferry::builder<T>::map(f): f must return the new element (it returns void); "
                      "use filter() to drop elements");
        return check::ok;
    }
}

/// `filter(pred)` on a builder of `T`.
template <class P, class T>
struct filter_check {
    static constexpr bool takes_t = takes_element<P, const T&>;
    static constexpr bool returns_bool =
        !takes_t || std::predicate<P&, const T&> || std::predicate<P&, const T&, const item_info&>;
    static constexpr bool ok = takes_t && returns_bool;
};

/// Asserts, in words, what `filter` needs (`filter_check`'s conditions); true when the
/// stage can be built.
template <class P, class T>
consteval bool accept_filter() {
    if constexpr (is_rejected<T>) {
        return false;  // an earlier call's error is the one to read
    } else {
        using check = filter_check<P, T>;
        static_assert(check::takes_t,
                      "ferry::builder<T>::filter(pred): pred cannot be called with const T&, T the "
                      "pipeline's element type at this call, nor with (const T&, const "
                      "ferry::item_info&); the compiler's notes name T and pred");
        static_assert(check::returns_bool,
                      "ferry::builder<T>::filter(pred): pred must return bool (or something "
                      "convertible to bool): true keeps the element");
        return check::ok;
    }
}

/// `flat_map(g)` on a builder of `T`.
template <class G, class T>
struct flat_map_check {
    static constexpr bool takes_t = takes_element<G, T&&>;
    static constexpr bool returns_range =
        !takes_t || std::ranges::input_range<element_call_result<G, T&&>>;
    static constexpr bool ok = takes_t && returns_range;
};

/// Asserts, in words, what `flat_map` needs (`flat_map_check`'s conditions); true when the
/// stage can be built.
template <class G, class T>
consteval bool accept_flat_map() {
    if constexpr (is_rejected<T>) {
        return false;  // an earlier call's error is the one to read
    } else {
        using check = flat_map_check<G, T>;
        static_assert(check::takes_t,
                      "ferry::builder<T>::flat_map(g): g cannot be called with T, the pipeline's "
                      "element type at this call, nor with (T, const ferry::item_info&); the "
                      "compiler's notes name T and g");
        static_assert(
            check::returns_range,
            "ferry::builder<T>::flat_map(g): g must return a range (e.g. a std::vector) of "
            "the new elements; map() gives one element out per element in");
        return check::ok;
    }
}

/// `batch_by(cost, options)` on a builder of `T`.
template <class C, class T>
struct batch_by_check {
    static constexpr bool takes_t = std::invocable<const C&, const T&>;
    static constexpr bool returns_number =
        !takes_t ||
        std::is_arithmetic_v<std::remove_cvref_t<typename call_result<const C&, const T&>::type>>;
    static constexpr bool ok = takes_t && returns_number;
};

/// Asserts, in words, what `batch_by` needs (`batch_by_check`'s conditions); true when the
/// stage can be built.
template <class C, class T>
consteval bool accept_batch_by() {
    if constexpr (is_rejected<T>) {
        return false;  // an earlier call's error is the one to read
    } else {
        using check = batch_by_check<C, T>;
        static_assert(
            check::takes_t,
            "ferry::builder<T>::batch_by(cost, options): cost cannot be called with const "
            "T&, T the pipeline's element type at this call; the compiler's notes name T "
            "and cost");
        static_assert(check::returns_number,
                      "ferry::builder<T>::batch_by(cost, options): cost must return a number (an "
                      "integer or floating-point cost: tokens, pixels, seconds)");
        return check::ok;
    }
}

/// Whether `B` is a `builder` (or a class derived from one, such as `source_builder`).
template <class B>
concept some_builder = std::derived_from<B, builder<typename B::element_type>>;

/// A route branch's result: the builder its callable returns (`rejected_element` when it is
/// not callable with a `builder<T>`).
template <class B, class T>
using branch_result = std::remove_cvref_t<typename call_result<B&, builder<T>>::type>;

/// The elements of a branch's result `R`; void when `R` is no builder.
template <class R>
struct element_of {
    using type = void;
};
template <some_builder R>
struct element_of<R> {
    using type = typename R::element_type;
};

/// Stands for the first branch of a route given none.
struct no_branch {};

/// `route(select, branches...)` on a builder of `T`.
template <class S, class T, class... B>
struct route_check {
    using first_branch = std::tuple_element_t<0, std::tuple<B..., no_branch>>;
    /// The elements of the first branch; the others must end with the same.
    using U = typename element_of<branch_result<first_branch, T>>::type;
    /// A branch's own stage was refused (its error is the one to read).
    static constexpr bool quiet =
        (is_rejected<typename element_of<branch_result<B, T>>::type> || ...);
    static constexpr bool has_branches = sizeof...(B) >= 1;
    static constexpr bool select_takes_t = quiet || std::invocable<const S&, const T&>;
    static constexpr bool select_returns_index =
        !select_takes_t || quiet ||
        std::is_integral_v<std::remove_cvref_t<typename call_result<const S&, const T&>::type>>;
    static constexpr bool branches_take_builder = quiet || (std::invocable<B&, builder<T>> && ...);
    static constexpr bool branches_return_builders =
        !branches_take_builder || quiet || (some_builder<branch_result<B, T>> && ...);
    static constexpr bool same_elements =
        !branches_return_builders || quiet ||
        (std::same_as<typename element_of<branch_result<B, T>>::type, U> && ...);
    static constexpr bool ok = !quiet && has_branches && select_takes_t && select_returns_index &&
                               branches_take_builder && branches_return_builders && same_elements;
};

/// Asserts, in words, what `route` needs (`route_check`'s conditions); true when the
/// stage can be built.
template <class S, class T, class... B>
consteval bool accept_route() {
    if constexpr (is_rejected<T>) {
        return false;  // an earlier call's error is the one to read
    } else {
        using check = route_check<S, T, B...>;
        static_assert(check::has_branches,
                      "ferry::builder<T>::route(select, branches...): give at least one branch");
        static_assert(
            check::select_takes_t,
            "ferry::builder<T>::route(select, ...): select cannot be called with const T&, "
            "T the pipeline's element type at this call; the compiler's notes name T and "
            "select");
        static_assert(check::select_returns_index,
                      "ferry::builder<T>::route(select, ...): select must return an integer, the "
                      "index of the branch");
        static_assert(check::branches_take_builder,
                      "ferry::builder<T>::route(select, branches...): each branch must be callable "
                      "with a builder<T> and return the builder with its stages, e.g. "
                      "[](auto b) { return b.map(f, 4); }");
        static_assert(check::branches_return_builders,
                      "ferry::builder<T>::route(select, branches...): each branch must return the "
                      "builder it is given with its stages added, e.g. "
                      "[](auto b) { return b.map(f, 4); }");
        static_assert(
            check::same_elements,
            "ferry::builder<T>::route(select, branches...): every branch must end with the "
            "same element type (the first branch's), which the route's elements have; map "
            "the branches to one type");
        return check::ok;
    }
}

/// Whether `F` is a `std::future`.
template <class F>
concept some_future = requires {
    typename future_value<F>::type;
};

/// Whether `F` can be called as `f(T, completion<U>)` (true for `U` void, which needs none).
template <class U, class F, class T>
inline constexpr bool calls_back = std::invocable<F&, T&&, completion<U>>;
template <class F, class T>
inline constexpr bool calls_back<void, F, T> = true;

/// `map_async(f)` (`U` void: `f(T) -> std::future<V>`) or `map_async<U>(f)` (`f(T,
/// completion<U>)`) on a builder of `T`.
template <class U, class F, class T>
struct map_async_check {
    static constexpr bool takes_t = !std::is_void_v<U> || std::invocable<F&, T&&>;
    static constexpr bool returns_future =
        !takes_t || !std::is_void_v<U> ||
        some_future<std::remove_cvref_t<typename call_result<F&, T&&>::type>>;
    static constexpr bool takes_completion = calls_back<U, F, T>;
    static constexpr bool ok = takes_t && returns_future && takes_completion;
};

/// Asserts, in words, what `map_async` needs (`map_async_check`'s conditions); true when the
/// stage can be built.
template <class U, class F, class T>
consteval bool accept_map_async() {
    if constexpr (is_rejected<T>) {
        return false;  // an earlier call's error is the one to read
    } else {
        using check = map_async_check<U, F, T>;
        static_assert(check::takes_t,
                      "ferry::builder<T>::map_async(f): f cannot be called with T, the pipeline's "
                      "element type at this call (f(T) returns a std::future<U>; or use "
                      "map_async<U>(f) with f(T, ferry::completion<U>))");
        static_assert(check::returns_future,
                      "ferry::builder<T>::map_async(f): f(T) must return a std::future<U>; a "
                      "callable that reports back uses map_async<U>(f) with f(T, "
                      "ferry::completion<U>)");
        static_assert(check::takes_completion,
                      "ferry::builder<T>::map_async<U>(f): f must be callable as "
                      "f(T, ferry::completion<U>)");
        return check::ok;
    }
}

/// `unbatch()` on a builder of `T`.
template <class T>
struct unbatch_check {
    static constexpr bool takes_range = std::ranges::input_range<T>;
    static constexpr bool ok = takes_range;
};

/// Asserts, in words, what `unbatch` needs (`unbatch_check`'s conditions); true when the
/// stage can be built.
template <class T>
consteval bool accept_unbatch() {
    if constexpr (is_rejected<T>) {
        return false;  // an earlier call's error is the one to read
    } else {
        using check = unbatch_check<T>;
        static_assert(check::takes_range,
                      "ferry::builder<T>::unbatch(): T, the pipeline's element type at this call, "
                      "must be a range (e.g. the std::vector<T> of batch(n))");
        return check::ok;
    }
}

/// Refuses a branch of a route or merge (`what`) with a stage that cannot run inside one: a
/// branch may map, filter, map_async, flat_map and unbatch; batch, batch_by and route go after
/// it.
inline void check_branches(const char* what, const std::vector<std::vector<stage_spec>>& branches) {
    for (std::size_t b = 0; b < branches.size(); ++b) {
        for (const auto& st : branches[b]) {
            if (st.kind == stage_kind::batch || st.kind == stage_kind::batch_by ||
                st.kind == stage_kind::route) {
                throw invalid_argument(std::string(what) + ": branch " + std::to_string(b) +
                                       " has a batch, batch_by or route; a branch may map, "
                                       "filter, map_async, flat_map and unbatch (batch after the " +
                                       what + ")");
            }
        }
    }
}

}  // namespace detail
}  // namespace ferry
