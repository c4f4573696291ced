// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::zip`: two sources paired item by item into one source of `std::pair<A, B>`.
#pragma once

#include <cstdint>
#include <memory>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>

#include "ferry/error.hpp"
#include "ferry/from.hpp"

namespace ferry {
namespace detail {

/// What `ferry::zip` checks of each of its sources `S` (one condition per message, each true
/// when the one before failed, so that a mistake gives one error).
template <class S>
struct zip_part {
    using D = std::remove_cvref_t<S>;
    /// Not a builder with stages (a `source_builder` has none).
    static constexpr bool no_stages = !is_builder<D>;
    /// Something `ferry::from` takes.
    static constexpr bool source = !no_stages || is_source_builder<D> ||
                                   std::ranges::input_range<S> || generator_source<D> ||
                                   epoch_source<D>;
    static constexpr bool ok = no_stages && source;
};

template <class A, class B>
source_builder<std::pair<A, B>> make_zip(source_spec a, source_spec b) {
    for (const source_spec* s : {&a, &b}) {
        if (s->excluded) {
            throw invalid_argument(
                "ferry::zip: a source with exclude() cannot be zipped (its items would leave "
                "their partners unpaired); call exclude() on the zip's result");
        }
    }
    auto parts =
        std::make_shared<const std::pair<source_spec, source_spec>>(std::move(a), std::move(b));
    auto open_at = [parts](std::uint64_t epoch, std::uint64_t position) -> source_cursor {
        auto first = std::make_shared<source_cursor>(open_source_at(parts->first, epoch, position));
        auto second =
            std::make_shared<source_cursor>(open_source_at(parts->second, epoch, position));
        return [first, second](any_value& out) {
            any_value x, y;
            if (!(*first)(x) || !(*second)(y)) return false;
            out.emplace<std::pair<A, B>>(x.take_as<A>(), y.take_as<B>());
            return true;
        };
    };
    source_spec spec;
    spec.open = [open_at](std::uint64_t epoch) { return open_at(epoch, 0); };
    spec.open_at = std::move(open_at);
    spec.value_bytes = &output_bytes_of<std::pair<A, B>>;
    spec.index_of = parts->first.index_of;
    spec.seed = parts->first.seed;
    const auto& da = parts->first.describe;
    const auto& db = parts->second.describe;
    if (da || db) {
        spec.describe = [parts](any_value& v, std::string& out) {
            auto& pair = v.get<std::pair<A, B>>();
            std::string left, right;
            // Each part described as its own source describes it, in a value of its own type.
            // The part is moved out for the call and back (no copy of an element).
            if (parts->first.describe) {
                any_value x;
                x.emplace<A>(std::move(pair.first));
                parts->first.describe(x, left);
                pair.first = x.take_as<A>();
            }
            if (parts->second.describe) {
                any_value y;
                y.emplace<B>(std::move(pair.second));
                parts->second.describe(y, right);
                pair.second = y.take_as<B>();
            }
            out = left.empty() ? right : right.empty() ? left : left + " + " + right;
        };
    }
    return source_builder<std::pair<A, B>>(std::move(spec));
}

}  // namespace detail

/// Pairs two sources item by item: the `i`-th element is `{a's i-th, b's i-th}`, and an epoch
/// ends with the shorter source's. `a` and `b` are anything `ferry::from` takes (a range, a
/// generator, an epoch factory, a `from(dataset, sampling)` or another `mix` or `zip`) without
/// stages; each keeps its own order and epochs. The result is a `source_builder` whose state is
/// a position, so a pipeline over it resumes exactly (each source reopened at that position).
/// Elements are described by both parts' descriptions (`"a.jpg + a.txt"`); `item_info` is `a`'s.
/// \code
///   auto pairs = ferry::zip(ferry::sources::files("images"), ferry::sources::files("captions"))
///                    .map([](const auto& p) { return load(p.first, p.second); }, 8)
///                    .build();
/// \endcode
/// Throws `ferry::invalid_argument` for a source with `exclude()` (exclude on the result). A
/// builder with stages, or something `ferry::from` does not take, does not compile: the call's
/// first error is a static_assert naming `a` or `b` and what it must be.
template <class SA, class SB>
[[nodiscard]] auto zip(SA&& a, SB&& b) {
    using part_a = detail::zip_part<SA>;
    using part_b = detail::zip_part<SB>;
    static_assert(part_a::no_stages,
                  "ferry::zip(a, b): a is a builder with stages; zip takes sources (what "
                  "ferry::from takes, or a from()/mix()/zip() result before any stage): zip first, "
                  "then add the stages");
    static_assert(part_a::source,
                  "ferry::zip(a, b): a is not a source: give an input range, a generator "
                  "returning std::optional<T>, a callable (std::uint64_t epoch) -> range, or a "
                  "from()/mix()/zip() result");
    static_assert(part_b::no_stages,
                  "ferry::zip(a, b): b is a builder with stages; zip takes sources (what "
                  "ferry::from takes, or a from()/mix()/zip() result before any stage): zip first, "
                  "then add the stages");
    static_assert(part_b::source,
                  "ferry::zip(a, b): b is not a source: give an input range, a generator "
                  "returning std::optional<T>, a callable (std::uint64_t epoch) -> range, or a "
                  "from()/mix()/zip() result");
    if constexpr (!(part_a::ok && part_b::ok)) {
        // The assertion above is the error to read; later calls on the result add none.
        return source_builder<detail::rejected_element>(detail::source_spec{});
    } else {
        auto sa = ferry::from(std::forward<SA>(a));
        auto sb = ferry::from(std::forward<SB>(b));
        using A = typename decltype(sa)::element_type;
        using B = typename decltype(sb)::element_type;
        return detail::make_zip<A, B>(detail::source_access::source(sa),
                                      detail::source_access::source(sb));
    }
}

}  // namespace ferry
