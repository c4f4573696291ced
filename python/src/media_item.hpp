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

/// The options a media op runs `item` with: `options`, or where the item gives its own window a
/// copy of them in `scratch` with that window set by `set_window(copy, start, end)`.
template <class Options, class SetWindow>
[[nodiscard]] const Options& item_options(const media_item& item, const Options& options,
                                          Options& scratch, SetWindow&& set_window) {
    if (!item.windowed) return options;
    scratch = options;
    set_window(scratch, item.start, item.end);
    return scratch;
}

}  // namespace ferry::python
