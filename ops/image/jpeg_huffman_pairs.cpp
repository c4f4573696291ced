// SPDX-License-Identifier: Apache-2.0
/// \file
/// The two-symbol lookup table of ferry's Huffman decoder (jpeg_huffman.hpp, huffman_pairs),
/// built from an AC table that build_table has made.
#include <array>
#include <cstring>

#include "jpeg_huffman.hpp"

namespace ferry::ops::codec::jpeg {
namespace {

constexpr int pair_look = huffman_pairs::lookahead;
constexpr std::uint32_t pair_mask = (1U << pair_look) - 1;

/// The code at the top of a `pair_look`-bit pattern: its length (0 when it is longer) and its
/// symbol.
struct top_code {
    std::uint8_t length = 0;
    std::uint8_t symbol = 0;
};

using pair_entry::widest_value;

/// What one symbol at the top of `bits` decodes to, when its code and value bits fit in the
/// `room` bits there.
struct one_symbol {
    bool fits = false;
    bool end_of_block = false;
    int used = 0;  ///< code and value bits
    int run = 0;
    int value = 0;
};

one_symbol symbol_at(const std::array<top_code, 1 << pair_look>& codes, std::uint32_t bits,
                     int room) {
    const top_code c = codes[bits & pair_mask];
    one_symbol out;
    if (c.length == 0 || c.length > room) return out;
    const int run = c.symbol >> 4;
    const int s = c.symbol & 15;
    if (s == 0 && run != 15) {
        out.fits = true;
        out.end_of_block = true;
        out.used = c.length;
        return out;
    }
    if (s > widest_value || c.length + s > room) return out;
    out.fits = true;
    out.used = c.length + s;
    out.run = run;  // ZRL: 16 zeros, the last of them stored
    if (s != 0) {
        const auto v = static_cast<int>((bits >> (pair_look - c.length - s)) & ((1U << s) - 1));
        out.value = extend(v, s);
    }
    return out;
}

}  // namespace

void build_pairs(const huffman_table& t, huffman_pairs& out) {
    static_assert(sizeof out.made_from == sizeof t.made_from);
    if (out.made && std::memcmp(out.made_from, t.made_from, sizeof t.made_from) == 0) return;
    out.made = false;
    // The codes of up to pair_look bits, from the DHT table's counts and symbols (valid:
    // build_table has checked them).
    std::array<top_code, 1 << pair_look> codes{};
    const std::uint8_t* counts = t.made_from;
    const std::uint8_t* symbols = t.made_from + 17;
    int p = 0;
    std::uint32_t code = 0;
    for (int l = 1; l <= pair_look; ++l) {
        for (int i = 0; i < counts[l]; ++i, ++p, ++code) {
            const int spare = pair_look - l;
            for (std::uint32_t j = 0; j < (1U << spare); ++j) {
                codes[(code << spare) | j] = {static_cast<std::uint8_t>(l), symbols[p]};
            }
        }
        code <<= 1;
    }
    using pair_entry::make;
    for (std::uint32_t x = 0; x <= pair_mask; ++x) {
        const one_symbol a = symbol_at(codes, x, pair_look);
        std::uint32_t e = pair_entry::fallback;
        if (a.fits && a.end_of_block) {
            e = make(a.used, 0, 0, 0, 0, true);
        } else if (a.fits) {
            // The second symbol's bits follow the first's; zeros shifted in below them are not
            // data, and symbol_at reads none of them within `room`.
            const one_symbol b = symbol_at(codes, x << a.used, pair_look - a.used);
            if (!b.fits) {
                e = make(a.used, a.run, a.value, 0, a.value, false);
            } else if (b.end_of_block) {
                e = make(a.used + b.used, a.run, a.value, 0, a.value, true);
            } else {
                e = make(a.used + b.used, a.run, a.value, b.run + 1, b.value, false);
            }
        }
        out.entry[x] = e;
    }
    std::memcpy(out.made_from, t.made_from, sizeof out.made_from);
    out.made = true;
}

}  // namespace ferry::ops::codec::jpeg
