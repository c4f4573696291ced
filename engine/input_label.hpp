// SPDX-License-Identifier: Apache-2.0
/// \file
/// How messages name a failed item: its index, how many source items it stood for, its input.
#pragma once

#include <cstdint>
#include <string>

namespace ferry::detail {

/// `'data/a.jpg'`: a description quoted for a message. One past 160 characters keeps its head
/// and its tail (a URL's file name) around "...": a log line stays readable, and
/// `failure::input` keeps the whole.
inline std::string quote_input(const std::string& input) {
    constexpr std::size_t longest = 160;
    constexpr std::size_t head = 60;
    if (input.size() <= longest) return "'" + input + "'";
    return "'" + input.substr(0, head) + "..." + input.substr(input.size() - (longest - head - 3)) +
           "'";
}

/// ` ('data/a.jpg')` for an item with a description, nothing for one without.
inline std::string quoted_input(const std::string& input) {
    return input.empty() ? std::string() : " (" + quote_input(input) + ")";
}

/// `item 17 ('data/a.jpg')`, or for an element standing for several source items (a batch)
/// `8 items from item 16 (the first 'data/a.jpg')`.
inline std::string item_label(std::uint64_t index, std::uint64_t items, const std::string& input) {
    if (items > 1) {
        std::string label = std::to_string(items) + " items from item " + std::to_string(index);
        if (!input.empty()) label += " (the first " + quote_input(input) + ")";
        return label;
    }
    return "item " + std::to_string(index) + quoted_input(input);
}

}  // namespace ferry::detail
