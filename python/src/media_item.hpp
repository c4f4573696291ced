// SPDX-License-Identifier: Apache-2.0
/// \file
/// What a media op (`load_video`, `decode_audio`) reads from its input: a path or bytes, or a
/// tuple `(source, start, end)` naming the item's own window in seconds (an annotated segment of
/// a long recording, a clip's interval in a Kinetics-style list). Three elements, always: a pair
/// `(path, label)` is a labelled item, which the stage maps keeping its label (ops.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>
#include <variant>

#include "value.hpp"

namespace ferry::python {

/// A media op's input: the source, and the window the item gives where it is a tuple.
struct media_item {
    std::variant<std::filesystem::path, ferry::bytes> source;
    bool windowed = false;      ///< the item was a tuple: `start` and `end` replace the op's
    double start = 0.0;         ///< seconds, 0 or more
    std::optional<double> end;  ///< seconds after `start`; none: to the stream's end
};

/// `v` as a media op's input: a path or bytes (`take_path_or_bytes`), or a tuple of three (a
/// source's native tuple, or a Python one): the source, the start in seconds (an int or a float,
/// finite, 0 or more), and the end (None: to the stream's end; else finite and after the
/// start). The GIL is taken only to read Python objects. Throws `ferry::invalid_argument`
/// naming `op` and what was wrong ("load_video: the item's window (source, start, end) ends at
/// 2 s, not after its start 3 s").
[[nodiscard]] media_item take_media_item(value&& v, std::string_view op);

/// `call(source, options)` for a media op `op` on `v` (`take_media_item`): with `options`, or
/// where the item gives its own window, with a copy of them whose window `set_window(copy,
/// start, end)` sets (the item's window replaces the op's).
template <class Options, class SetWindow, class Call>
[[nodiscard]] auto call_on_media_item(value&& v, std::string_view op, const Options& options,
                                      SetWindow&& set_window, Call&& call) {
    media_item item = take_media_item(std::move(v), op);
    const auto on = [&](const Options& o) {
        return std::visit([&](const auto& in) { return call(in, o); }, item.source);
    };
    if (!item.windowed) return on(options);
    Options windowed = options;
    set_window(windowed, item.start, item.end);
    return on(windowed);
}

}  // namespace ferry::python
