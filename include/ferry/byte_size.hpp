// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::byte_size`: the bytes an element holds, as the tuner's memory budget counts them.
#pragma once

#include <cstddef>
#include <ranges>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ferry {

template <class T>
[[nodiscard]] std::size_t byte_size(const T& v);

namespace detail {

template <class T>
concept has_own_byte_size = requires(const T& t) {
    { ferry_byte_size(t) } -> std::convertible_to<std::size_t>;
};
template <class T>
concept has_nbytes = requires(const T& t) {
    { t.nbytes() } -> std::convertible_to<std::size_t>;
};
template <class T>
concept has_data_span = requires(const T& t) {
    { t.data().size_bytes() } -> std::convertible_to<std::size_t>;
};
template <class T>
concept flat_range = std::ranges::contiguous_range<const T> && std::ranges::sized_range<const T> &&
    std::is_trivially_copyable_v<std::ranges::range_value_t<const T>>;
template <class T>
concept tuple_like = requires {
    std::tuple_size<T>::value;
};

}  // namespace detail

/// The bytes `v` holds: `ferry_byte_size(v)` when one is found by argument-dependent lookup
/// (give your own types one), else `v.nbytes()` (tensors), else `v.data().size_bytes()` (images,
/// spans), else size × element size for a contiguous range of trivially copyable elements
/// (`std::vector<float>`, `std::string`, `ferry::bytes`), else the sum over a range's or a
/// pair's or tuple's elements, else `sizeof(T)`. The object itself (`sizeof`) counts too.
template <class T>
std::size_t byte_size(const T& v) {
    if constexpr (detail::has_own_byte_size<T>) {
        return ferry_byte_size(v);
    } else if constexpr (detail::has_nbytes<T>) {
        return sizeof(T) + v.nbytes();
    } else if constexpr (detail::has_data_span<T>) {
        return sizeof(T) + v.data().size_bytes();
    } else if constexpr (detail::flat_range<T>) {
        return sizeof(T) + std::ranges::size(v) * sizeof(std::ranges::range_value_t<const T>);
    } else if constexpr (std::ranges::input_range<const T>) {
        std::size_t n = sizeof(T);
        for (const auto& e : v) n += byte_size(e);
        return n;
    } else if constexpr (detail::tuple_like<T>) {
        return std::apply([](const auto&... e) { return (std::size_t{0} + ... + byte_size(e)); },
                          v);
    } else {
        return sizeof(T);
    }
}

}  // namespace ferry
