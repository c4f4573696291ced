// SPDX-License-Identifier: Apache-2.0
/// \file
/// Counts which entropy decoder each JPEG decode used (jpeg_huffman.hpp's `count`): once for
/// the process, for `ops::jpeg_huffman_use()`, and once in the running stage's counters.
#include <array>
#include <atomic>
#include <cstdint>
#include <string_view>

#include "ferry/image.hpp"
#include "ferry/this_call.hpp"
#include "jpeg_huffman.hpp"

namespace ferry::ops {
namespace {

using codec::jpeg::entropy_choice;

constexpr std::size_t choices = 7;
std::array<std::atomic<std::uint64_t>, choices> counted{};

/// The stage counter of each choice, in entropy_choice's order.
constexpr std::array<std::string_view, choices> names = {
    "jpeg huffman: ferry",
    "jpeg huffman: libjpeg, switched off",
    "jpeg huffman: libjpeg, not baseline",
    "jpeg huffman: libjpeg, library mismatch",
    "jpeg huffman: libjpeg, table refused",
    "jpeg huffman: ferry, several scans",
    "jpeg huffman: libjpeg, scan refused",
};

std::uint64_t of(entropy_choice c) noexcept {
    return counted[static_cast<std::size_t>(c)].load(std::memory_order_relaxed);
}

}  // namespace

jpeg_huffman_counts jpeg_huffman_use() noexcept {
    jpeg_huffman_counts out;
    out.several_scans = of(entropy_choice::ferry_scans);
    out.ferry = of(entropy_choice::ferry) + out.several_scans;
    out.switched_off = of(entropy_choice::switched_off);
    out.not_baseline = of(entropy_choice::not_baseline);
    out.library_mismatch = of(entropy_choice::library_mismatch);
    out.table_refused = of(entropy_choice::table_refused);
    out.scan_refused = of(entropy_choice::scan_refused);
    out.libjpeg = out.switched_off + out.not_baseline + out.library_mismatch + out.table_refused +
                  out.scan_refused;
    return out;
}

namespace codec::jpeg {

void count(entropy_choice choice) noexcept {
    const auto i = static_cast<std::size_t>(choice);
    counted[i].fetch_add(1, std::memory_order_relaxed);
    if (choice == entropy_choice::ferry_scans) {
        this_call::count(names[static_cast<std::size_t>(entropy_choice::ferry)]);
    } else if (choice != entropy_choice::ferry) {
        this_call::count("jpeg huffman: libjpeg");
    }
    this_call::count(names[i]);
}

}  // namespace codec::jpeg
}  // namespace ferry::ops
