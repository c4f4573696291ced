// SPDX-License-Identifier: Apache-2.0
/// \file
/// A plain struct's fields, counted and visited without naming them: what lets `collate` take
/// an aggregate field by field.
#pragma once

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ferry::detail {

/// The most fields `visit_aggregate_fields` can visit.
inline constexpr std::size_t max_aggregate_fields = 8;

/// Converts to any type: counts an aggregate's fields in an unevaluated `T{any_field{}, ...}`.
/// Declared, never defined.
struct any_field {
    template <class U>
    operator U() const;  // implicit: converting to whatever a field is, is its job
};

/// Whether `T{...}` takes `N` initialisers.
template <class T, std::size_t N>
consteval bool takes_initializers() {
    return []<std::size_t... I>(std::index_sequence<I...>) {
        return requires {
            T{(static_cast<void>(I), any_field{})...};
        };
    }
    (std::make_index_sequence<N>{});
}

/// The number of fields of the aggregate `T`: the most initialisers `T{...}` takes, counted
/// down from `max_aggregate_fields + 1` (which means "too many"). A field that is itself an
/// aggregate counts once (`any_field` converts to it). A C array field (its elements take the
/// initialisers) or a base class makes the count differ from what a structured binding sees:
/// such a struct fails to compile in `visit_aggregate_fields`.
template <class T, std::size_t N = max_aggregate_fields + 1>
consteval std::size_t aggregate_field_count() {
    if constexpr (N == 0) {
        return 0;
    } else if constexpr (takes_initializers<T, N>()) {
        return N;
    } else {
        return aggregate_field_count<T, N - 1>();
    }
}

/// Calls `f` with the `N` fields of the aggregate `x`, in declaration order, each forwarded as
/// its declared type: a field held by value as an rvalue (`f` may move from it), a reference
/// field as an lvalue.
template <std::size_t N, class T, class F>
decltype(auto) visit_aggregate_fields(T& x, F&& f) {
    static_assert(N >= 1 && N <= max_aggregate_fields);
    if constexpr (N == 1) {
        auto& [a] = x;
        return std::forward<F>(f)(std::forward<decltype(a)>(a));
    } else if constexpr (N == 2) {
        auto& [a, b] = x;
        return std::forward<F>(f)(std::forward<decltype(a)>(a), std::forward<decltype(b)>(b));
    } else if constexpr (N == 3) {
        auto& [a, b, c] = x;
        return std::forward<F>(f)(std::forward<decltype(a)>(a), std::forward<decltype(b)>(b),
                                  std::forward<decltype(c)>(c));
    } else if constexpr (N == 4) {
        auto& [a, b, c, d] = x;
        return std::forward<F>(f)(std::forward<decltype(a)>(a), std::forward<decltype(b)>(b),
                                  std::forward<decltype(c)>(c), std::forward<decltype(d)>(d));
    } else if constexpr (N == 5) {
        auto& [a, b, c, d, e] = x;
        return std::forward<F>(f)(std::forward<decltype(a)>(a), std::forward<decltype(b)>(b),
                                  std::forward<decltype(c)>(c), std::forward<decltype(d)>(d),
                                  std::forward<decltype(e)>(e));
    } else if constexpr (N == 6) {
        auto& [a, b, c, d, e, g] = x;
        return std::forward<F>(f)(std::forward<decltype(a)>(a), std::forward<decltype(b)>(b),
                                  std::forward<decltype(c)>(c), std::forward<decltype(d)>(d),
                                  std::forward<decltype(e)>(e), std::forward<decltype(g)>(g));
    } else if constexpr (N == 7) {
        auto& [a, b, c, d, e, g, h] = x;
        return std::forward<F>(f)(std::forward<decltype(a)>(a), std::forward<decltype(b)>(b),
                                  std::forward<decltype(c)>(c), std::forward<decltype(d)>(d),
                                  std::forward<decltype(e)>(e), std::forward<decltype(g)>(g),
                                  std::forward<decltype(h)>(h));
    } else {
        auto& [a, b, c, d, e, g, h, k] = x;
        return std::forward<F>(f)(std::forward<decltype(a)>(a), std::forward<decltype(b)>(b),
                                  std::forward<decltype(c)>(c), std::forward<decltype(d)>(d),
                                  std::forward<decltype(e)>(e), std::forward<decltype(g)>(g),
                                  std::forward<decltype(h)>(h), std::forward<decltype(k)>(k));
    }
}

/// What `visit_aggregate_fields` with it returns: a `std::tuple` type of the fields' value types.
struct aggregate_field_types_fn {
    template <class... F>
    std::type_identity<std::tuple<std::remove_cvref_t<F>...>> operator()(F&&...) const {
        return {};
    }
};

/// `std::tuple` of the value types (cv and references dropped) of the aggregate `T`'s `N`
/// fields.
template <class T, std::size_t N>
using aggregate_field_types = typename decltype(visit_aggregate_fields<N>(
    std::declval<T&>(), aggregate_field_types_fn{}))::type;

}  // namespace ferry::detail
