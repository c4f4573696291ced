// SPDX-License-Identifier: Apache-2.0
/// \file
/// The lookup tables of ferry's Huffman decoder (jpeg_huffman.hpp), built from a DHT table.
#include <cstring>

#include "jpeg_huffman.hpp"

namespace ferry::ops::codec::jpeg {
namespace {

constexpr int table_look = huffman_table::lookahead;
using table_entry::complete;
using table_entry::end_of_block;
using table_entry::long_code;
using table_entry::partial;

constexpr std::int32_t entry(int len, int run, std::int32_t kind, int value) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(value) << 16) | kind | (run << 8) |
           len;
}

}  // namespace

/// Refuses what libjpeg's jpeg_make_d_derived_tbl refuses (more than 256 symbols, a code that
/// does not fit its length or is all ones, a DC symbol above 15) by itself: libjpeg checks a
/// table when a scan starts, but this decoder must not depend on that order.
bool build_table(const JHUFF_TBL& t, bool is_dc, huffman_table& out) {
    static_assert(sizeof out.made_from == sizeof t.bits + sizeof t.huffval);
    if (out.made && std::memcmp(out.made_from, t.bits, sizeof t.bits) == 0 &&
        std::memcmp(out.made_from + sizeof t.bits, t.huffval, sizeof t.huffval) == 0) {
        return true;
    }
    out.made = false;
    for (std::int32_t& e : out.fast) e = long_code;
    std::memcpy(out.symbols, t.huffval, sizeof out.symbols);
    int p = 0;
    std::uint32_t code = 0;
    for (int l = 1; l <= 16; ++l) {
        const int n = t.bits[l];
        if (p + n > 256) return false;
        out.valoffset[l] = p - static_cast<std::int32_t>(code);
        out.maxcode[l] = n == 0 ? -1 : static_cast<std::int32_t>(code + n - 1);
        for (int i = 0; i < n; ++i, ++p, ++code) {
            // No code is all ones (T.81 C), and none is longer than its length.
            if (code + 1 >= (1U << l)) return false;
            const int sym = t.huffval[p];
            // A DC symbol is the category of the difference: 0 to 15 in libjpeg, which 11 bits
            // cover for 8-bit data; 16 or more would be read as that many value bits.
            if (is_dc && sym > 15) return false;
            if (l > table_look) continue;
            const int run = is_dc ? 0 : sym >> 4;
            const int s = is_dc ? sym : sym & 15;
            const int spare = table_look - l;  // bits after the code in a look-ahead
            for (int j = 0; j < (1 << spare); ++j) {
                std::int32_t e = 0;
                if (s == 0 && !is_dc && run != 15) {
                    e = entry(l, run, end_of_block, 0);  // EOBr: r for progressive scans
                } else if (s == 0) {
                    e = entry(l, run, complete, 0);  // DC difference 0, or ZRL (16 zeros)
                } else if (s <= spare) {
                    const int v = (j >> (spare - s)) & ((1 << s) - 1);
                    e = entry(l + s, run, complete, extend(v, s));
                } else {
                    e = entry(l, 0, partial, sym);
                }
                out.fast[(code << spare) | static_cast<std::uint32_t>(j)] = e;
            }
        }
        code <<= 1;
    }
    out.maxcode[17] = 0x7FFFFFFF;  // every 17-bit code ends the search: a bad code
    out.valoffset[17] = 0;
    std::memcpy(out.made_from, t.bits, sizeof t.bits);
    std::memcpy(out.made_from + sizeof t.bits, t.huffval, sizeof t.huffval);
    out.made = true;
    return true;
}

}  // namespace ferry::ops::codec::jpeg
