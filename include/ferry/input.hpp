// SPDX-License-Identifier: Apache-2.0
/// \file
/// How ferry names a source item in failure records: `ferry::describable` and `input_name`.
#pragma once

#include <concepts>
#include <filesystem>
#include <string>
#include <string_view>
#include <type_traits>

#include "ferry/detail/redact.hpp"

namespace ferry {

namespace detail {

template <class T>
concept path_or_text = std::same_as<std::remove_cvref_t<T>, std::filesystem::path> ||
    std::convertible_to<const T&, std::string_view>;

}  // namespace detail

/// An element ferry names by itself in `ferry::failure::input` (and in error messages and the
/// quarantine file): a path or URL held as `std::string`, `std::string_view`, `const char*` or
/// `std::filesystem::path`, or a struct whose `.path` member is one of those (a labelled file):
/// \code
///   struct labelled_file { std::filesystem::path path; int label; };
///   static_assert(ferry::describable<labelled_file>);
///   auto p = ferry::from(files);   // failures() name each failed file's path
/// \endcode
/// Other elements are named by `ferry::from(src).describe(f)`, or not at all.
template <class T>
concept describable = detail::path_or_text<T> || requires(const T& t) {
    requires detail::path_or_text<decltype(t.path)>;
};

namespace detail {

/// Writes `v`'s name into `out`, reusing its storage (the engine calls this once per item).
template <describable T>
void describe_into(const T& v, std::string& out) {
    if constexpr (std::same_as<std::remove_cvref_t<T>, std::filesystem::path>) {
        out = v.generic_string();
    } else if constexpr (std::is_pointer_v<std::decay_t<T>>) {
        if (v == nullptr) {
            out.clear();
        } else {
            out.assign(std::string_view(v));
        }
        if (may_hold_credentials(out)) out = redact_url(out);
    } else if constexpr (path_or_text<T>) {
        out.assign(std::string_view(v));
        // A URL's credentials (presigned query, user:password@) never reach a failure record.
        if (may_hold_credentials(out)) out = redact_url(out);
    } else {
        describe_into(v.path, out);
    }
}

}  // namespace detail

/// The name ferry gives a `describable` element: the path or URL itself (a path in its generic
/// form, e.g. `data/a.jpg`), a URL's credentials replaced by `REDACTED` (a presigned URL's
/// `X-Amz-Signature`, `X-Amz-Credential`, `X-Amz-Security-Token`, `Signature`, `AWSAccessKeyId`
/// values, the password of a `user:password@`).
/// \code
///   ferry::input_name(std::filesystem::path("data/a.jpg"));   // "data/a.jpg"
/// \endcode
template <describable T>
[[nodiscard]] std::string input_name(const T& v) {
    std::string out;
    detail::describe_into(v, out);
    return out;
}

}  // namespace ferry
