// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::ops::collate`: a batch of equally shaped tensors (or images) stacked into one
/// contiguous tensor, allocated where the next step wants it; a batch of numbers as a 1-D tensor;
/// a batch of pairs, tuples or plain structs (an image and its label) collated field by field.
#pragma once

#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ferry/detail/aggregate_fields.hpp"
#include "ferry/export.hpp"
#include "ferry/tensor.hpp"

namespace ferry {

class image;       // <ferry/image.hpp>
class image_slot;  // <ferry/batch_slots.hpp>

/// Options for `collate`.
struct collate_options {
    /// Where the batch is allocated: the CUDA transfer hands in pinned memory here. A batch of
    /// pairs, tuples or structs allocates each field's tensor with it.
    allocator alloc{};
};

namespace ops {
namespace detail {

/// The element types `collate_fn` stacks itself (its non-template overloads).
template <class T>
concept collate_leaf =
    std::same_as<T, tensor> || std::same_as<T, image> || std::same_as<T, image_slot>;

/// One function object for every kind of batch, so that `map(ferry::ops::collate)` works on
/// each. The tensor overload lives in `ferry::core` (every ferry library links it); the image
/// and slot overloads in `ferry::image`, with `ferry::image` itself (`#include
/// <ferry/image.hpp>`, `<ferry/batch_slots.hpp>`).
struct FERRY_API collate_fn {
    tensor operator()(std::vector<image> images, const collate_options& options = {}) const;
    tensor operator()(std::vector<tensor> tensors, const collate_options& options = {}) const;
    /// Slots of `ferry::batch_slots`: their batch's tensor itself where they are its slots 0,
    /// 1, ... in order (`options.alloc` unused: the batch is where batch_slots allocated it),
    /// else a copy allocated with `options.alloc`.
    tensor operator()(std::vector<image_slot> slots, const collate_options& options = {}) const;
    /// Numbers, pairs, tuples and plain structs: see `ferry::ops::collate`. A template in the
    /// header, so that the result's type (a pair or tuple of the fields' batches) is known where
    /// the pipeline is built; the stacking is done by the overloads above and `collate_numbers`.
    template <class T>
    requires(!collate_leaf<T>) auto operator()(std::vector<T> items,
                                               const collate_options& options = {}) const;
};

/// A 1-D tensor of the `count` elements of `type` at `values` (contiguous, in `type`'s
/// representation), allocated with `options.alloc`: collate of numbers. Throws
/// `ferry::invalid_argument` for an empty batch, as collate of tensors does.
[[nodiscard]] FERRY_API tensor collate_numbers(dtype type, const void* values, std::size_t count,
                                               const collate_options& options);

/// Whether `T` is a character type (whose signedness and meaning are not a number's).
template <class T>
inline constexpr bool is_character_v =
    std::is_same_v<T, char> || std::is_same_v<T, wchar_t> || std::is_same_v<T, char8_t> ||
    std::is_same_v<T, char16_t> || std::is_same_v<T, char32_t>;

/// Whether the arithmetic type `T` has a ferry dtype (`number_dtype<T>()`).
template <class T>
inline constexpr bool has_number_dtype =
    !std::is_same_v<T, bool> && !is_character_v<T> &&
    ((std::is_integral_v<T> && std::is_signed_v<T> && sizeof(T) <= 8) ||
     (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) <= 2) ||
     std::is_same_v<T, float> || std::is_same_v<T, double>);

/// The dtype of a 1-D tensor of `T`s: integers by size and signedness (`long` and `long long`
/// are both i64), f32 for `float`, f64 for `double`.
template <class T>
requires has_number_dtype<T>
consteval dtype number_dtype() {
    if constexpr (std::is_same_v<T, float>) {
        return dtype::f32;
    } else if constexpr (std::is_same_v<T, double>) {
        return dtype::f64;
    } else if constexpr (std::is_unsigned_v<T>) {
        return sizeof(T) == 1 ? dtype::u8 : dtype::u16;
    } else if constexpr (sizeof(T) == 1) {
        return dtype::i8;
    } else if constexpr (sizeof(T) == 2) {
        return dtype::i16;
    } else if constexpr (sizeof(T) == 4) {
        return dtype::i32;
    } else {
        return dtype::i64;
    }
}

/// The value types of a pair's or tuple's elements as a `std::tuple`; `void` for other types.
template <class T>
struct tuple_fields {
    using type = void;
};
template <class A, class B>
struct tuple_fields<std::pair<A, B>> {
    using type = std::tuple<std::remove_cvref_t<A>, std::remove_cvref_t<B>>;
};
template <class... E>
struct tuple_fields<std::tuple<E...>> {
    using type = std::tuple<std::remove_cvref_t<E>...>;
};

/// `std::pair` or `std::tuple`: collated element by element, with `std::apply`.
template <class T>
concept pair_or_tuple = !std::is_void_v<typename tuple_fields<T>::type>;

template <class T>
inline constexpr bool is_pair_v = false;
template <class A, class B>
inline constexpr bool is_pair_v<std::pair<A, B>> = true;

/// What a batch of pairs (`Pair`) or of tuples or structs gives: the fields' batches `X...`.
template <bool Pair, class... X>
struct collated_fields {
    using type = std::tuple<X...>;
};
template <class X, class Y>
struct collated_fields<true, X, Y> {
    using type = std::pair<X, Y>;
};

/// A plain struct collated field by field: an aggregate class that is no union, array or
/// tuple-like type (`std::array`).
template <class T>
concept collate_struct =
    std::is_aggregate_v<T> && std::is_class_v<T> && !std::is_union_v<T> && !requires {
    std::tuple_size<T>::value;
};

template <class>
inline constexpr bool collate_dependent_false = false;

template <class T>
auto collate_column(std::vector<T>&& items, const collate_options& options);

/// What `collate` gives for a `std::vector<T>`.
template <class T>
using collated_t = decltype(collate_column(std::declval<std::vector<T>>(),
                                           std::declval<const collate_options&>()));

/// Collates `items` (pairs, tuples or structs whose fields' value types are `F...`) field by
/// field: each field's values moved (a reference field's copied) into a batch of their own, and
/// that batch collated, first field first. A pair gives a pair, a tuple or struct a tuple.
template <class T, class... F, std::size_t... I>
auto collate_fields(std::vector<T>&& items, const collate_options& options,
                    std::type_identity<std::tuple<F...>> /*fields*/,
                    std::index_sequence<I...> /*indices*/) {
    std::tuple<std::vector<F>...> columns;
    (std::get<I>(columns).reserve(items.size()), ...);
    const auto take = [&columns](auto&&... field) {
        (std::get<I>(columns).push_back(std::forward<decltype(field)>(field)), ...);
    };
    for (T& item : items) {
        if constexpr (pair_or_tuple<T>) {
            std::apply(take, std::move(item));
        } else {
            ferry::detail::visit_aggregate_fields<sizeof...(F)>(item, take);
        }
    }
    using result = typename collated_fields<is_pair_v<T>, collated_t<F>...>::type;
    // Braces: the fields are collated in order, so of two bad fields the first is named.
    return result{collate_column(std::move(std::get<I>(columns)), options)...};
}

/// `collate` of a batch of `T`s: what `collate_fn`'s template overload does, and what it does
/// for each field of a pair, tuple or struct.
template <class T>
auto collate_column(std::vector<T>&& items, const collate_options& options) {
    if constexpr (collate_leaf<T>) {
        return collate_fn{}(std::move(items), options);
    } else if constexpr (std::is_arithmetic_v<T>) {
        static_assert(!std::is_same_v<T, bool>,
                      "ferry::ops::collate: bool has no ferry dtype; collate flags as "
                      "std::uint8_t (0 or 1)");
        static_assert(!is_character_v<T>,
                      "ferry::ops::collate: a character type (char, wchar_t, char8_t, char16_t, "
                      "char32_t) has no ferry dtype; collate it as std::int8_t, std::uint8_t or "
                      "std::int32_t");
        static_assert(!std::is_integral_v<T> || std::is_signed_v<T> || sizeof(T) <= 2 ||
                          std::is_same_v<T, bool> || is_character_v<T>,
                      "ferry::ops::collate: ferry has no u32 or u64 dtype; collate unsigned 32- "
                      "and 64-bit integers as std::int64_t");
        static_assert(!std::is_integral_v<T> || sizeof(T) <= 8,
                      "ferry::ops::collate: ferry has no 128-bit integer dtype");
        static_assert(
            std::is_integral_v<T> || std::is_same_v<T, float> || std::is_same_v<T, double>,
            "ferry::ops::collate: of the floating-point types ferry has float (f32) and "
            "double (f64); collate others as one of those");
        if constexpr (has_number_dtype<T>) {
            return collate_numbers(number_dtype<T>(), items.data(), items.size(), options);
        } else {
            return tensor{};  // never compiled to code: a static_assert above has failed
        }
    } else if constexpr (pair_or_tuple<T>) {
        using fields = typename tuple_fields<T>::type;
        return collate_fields(std::move(items), options, std::type_identity<fields>{},
                              std::make_index_sequence<std::tuple_size_v<fields>>{});
    } else if constexpr (collate_struct<T>) {
        constexpr std::size_t n = ferry::detail::aggregate_field_count<T>();
        static_assert(n >= 1 && n <= ferry::detail::max_aggregate_fields,
                      "ferry::ops::collate: a struct is collated field by field, and this one has "
                      "no field or more than 8; collate a std::tuple instead");
        if constexpr (n >= 1 && n <= ferry::detail::max_aggregate_fields) {
            return collate_fields(std::move(items), options,
                                  std::type_identity<ferry::detail::aggregate_field_types<T, n>>{},
                                  std::make_index_sequence<n>{});
        } else {
            return std::tuple<>{};  // never compiled to code: the static_assert has failed
        }
    } else {
        static_assert(collate_dependent_false<T>,
                      "ferry::ops::collate: collate takes a std::vector of ferry::tensor, "
                      "ferry::image, ferry::image_slot, numbers (integers, float, double), or "
                      "std::pair, std::tuple or plain structs of those; the batch's element type "
                      "(T in the instantiation above) is none of these");
        return std::tuple<>{};
    }
}

template <class T>
requires(!collate_leaf<T>) auto collate_fn::operator()(std::vector<T> items,
                                                       const collate_options& options) const {
    return collate_column(std::move(items), options);
}

}  // namespace detail

/// Stacks equally sized images into one contiguous `u8` N x H x W x C tensor (or equally shaped
/// tensors into an N x ... tensor), allocated with `options.alloc`. Different sizes, formats,
/// dtypes or shapes throw `ferry::invalid_argument` naming the first mismatching element; an
/// empty batch too, and so does a tensor on a CUDA device (collate works on host memory).
/// \code
///   auto pipe = ferry::from(paths)
///                   .map(load_features)              // -> ferry::tensor f32 [128]
///                   .batch(32)
///                   .map(ferry::ops::collate)        // -> ferry::tensor f32 [32, 128]
///                   .build();
/// \endcode
///
/// **Labels.** A batch of numbers becomes a 1-D tensor [N] of their dtype: `std::int64_t`
/// (and `long long`) i64, `std::int32_t` i32, `std::int16_t` i16, `std::int8_t` i8,
/// `std::uint8_t` u8, `std::uint16_t` u16, `float` f32, `double` f64. Types without a dtype
/// (`bool`, character types, unsigned 32- and 64-bit integers, `long double`) do not compile,
/// with a message saying what to use. A batch of `std::pair<A, B>` becomes `std::pair<X, Y>`,
/// where X and Y are what collate gives for the A's and for the B's; a `std::tuple` becomes a
/// `std::tuple` likewise, and a plain struct (an aggregate of 1 to 8 fields held by value, no
/// base class or C array) a `std::tuple` of its fields' batches in declaration order. Fields
/// nest (a pair of a tensor and a pair, ...), every field's tensor is allocated with
/// `options.alloc`, and a mismatch among a field's tensors throws what collate of those tensors
/// throws. `ferry::to_torch` takes the pair or tuple that results, tensor by tensor:
/// \code
///   auto pipe = ferry::from(train)
///                   .map(load_sample, 8)      // -> std::pair<ferry::image, std::int64_t>
///                   .batch(64)
///                   .map(ferry::ops::collate) // -> std::pair<ferry::tensor, ferry::tensor>:
///                                             //    u8 [64, H, W, C], i64 [64]
///                   .map(ferry::to_torch)     // -> std::pair<torch::Tensor, torch::Tensor>
///                   .build();
///   for (auto& [images, labels] : pipe) { ... }
/// \endcode
inline constexpr detail::collate_fn collate{};

}  // namespace ops
}  // namespace ferry
