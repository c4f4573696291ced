// SPDX-License-Identifier: Apache-2.0
/// \file
/// The two-symbol lookup table of ferry's Huffman decoder (jpeg_huffman.hpp, huffman_pairs),
/// built from an AC table that build_table has made.
#include <algorithm>
#include <array>
#include <cstring>

#include "jpeg_huffman.hpp"

namespace ferry::ops::codec::jpeg {
namespace {

constexpr int pair_look = huffman_pairs::lookahead;
constexpr std::uint32_t pair_mask = (1U << pair_look) - 1;

using pair_entry::widest_value;

/// one[x] (see fill_one_symbol) where the symbol at the top of x does not fit: a code longer
/// than the look-ahead, value bits past it, a value wider than an entry holds. As bits to
/// consume, more than any room.
constexpr std::uint32_t no_fit = 63;

/// Sets one[x], for every `pair_look`-bit pattern x, to what the symbol at its top decodes to,
/// as a pair entry of that symbol alone: the bits it needs (code and value bits; no_fit), its
/// run, its value, and the end of block for an EOB. Filled by ranges of patterns with the same
/// code and value bits; the pairs are then made from it with no branch that depends on the
/// pattern. Files with their own (optimized) tables build them per image: so built, a table takes
/// about 4 µs on the 2-core EPYC of perf/media/README.md, against 15 µs decoding two symbols of
/// each pattern with branches.
void fill_one_symbol(const huffman_table& t, std::uint32_t* one) {
    std::fill(one, one + (1 << pair_look), no_fit);
    const std::uint8_t* counts = t.made_from;
    const std::uint8_t* symbols = t.made_from + 17;
    int p = 0;
    std::uint32_t code = 0;
    for (int l = 1; l <= pair_look; ++l) {
        for (int i = 0; i < counts[l]; ++i, ++p, ++code) {
            const int run = symbols[p] >> 4;
            const int s = symbols[p] & 15;
            std::uint32_t* first = one + (code << (pair_look - l));
            if (s == 0 && run != 15) {
                std::fill(first, first + (1 << (pair_look - l)),
                          pair_entry::make(l, 0, 0, 0, 0, true));
                continue;
            }
            if (s > widest_value || l + s > pair_look) continue;  // stays no_fit
            const int spare = pair_look - l - s;
            for (int v = 0; v < (1 << s); ++v) {
                const int value = s == 0 ? 0 : extend(v, s);  // ZRL: run 15, value 0
                std::fill(first + (v << spare), first + ((v + 1) << spare),
                          pair_entry::make(l + s, run, value, 0, 0, false));
            }
        }
        code <<= 1;
    }
}

}  // namespace

void build_pairs(const huffman_table& t, huffman_pairs& out) {
    static_assert(sizeof out.made_from == sizeof t.made_from);
    if (out.made && std::memcmp(out.made_from, t.made_from, sizeof t.made_from) == 0) return;
    out.made = false;
    std::array<std::uint32_t, 1 << pair_look> one;
    fill_one_symbol(t, one.data());
    constexpr std::uint32_t ends = 1U << 17;
    for (std::uint32_t x = 0; x <= pair_mask; ++x) {
        const std::uint32_t a = one[x];
        const std::uint32_t used = a & 63;
        // After an EOB, nothing: the next bits are the next block's.
        const std::uint32_t room = (a & ends) != 0 ? 0 : pair_look - used;
        // The second symbol's bits follow the first's; what is shifted in below them is not data,
        // and a symbol that fits in `room` reads none of it. (`& 15`: no_fit shifts by 15, not
        // past the word; that entry is a fallback anyway.)
        const std::uint32_t b = one[(x << (used & 15)) & pair_mask];
        const std::uint32_t b_used = b & 63;
        const bool second = b_used <= room;
        const bool b_ends = (b & ends) != 0;
        // The second's bits, its run + 1 as the step, and its value (one[]'s bits 25-31 are 0);
        // or, with no second or an EOB for one, the first value again (stored twice in place).
        const std::uint32_t v1 = (a >> 18) & 0x7F;
        std::uint32_t e = a;
        if (second) e += b_used | (b_ends ? ends : ((((b >> 6) & 63) + 1) << 12 | (b >> 18) << 25));
        if (!second || b_ends) e |= v1 << 25;
        out.entry[x] = used == no_fit ? pair_entry::fallback : e;
    }
    std::memcpy(out.made_from, t.made_from, sizeof out.made_from);
    out.made = true;
}

}  // namespace ferry::ops::codec::jpeg
