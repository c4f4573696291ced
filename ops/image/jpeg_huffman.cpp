// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's baseline Huffman decoder in libjpeg-turbo's place (jpeg_huffman.hpp).
///
/// It follows libjpeg's decoding (ITU-T T.81 F.2.2) step for step, so that the coefficients,
/// and the bytes it reads, are libjpeg's: DC differences added to the component's last DC
/// value, AC coefficients stored in natural order (a corrupt run past the 64th is clamped to
/// the last, as libjpeg's extended order table does), a code not in the table read as 17 bits
/// and the symbol 0, after a marker, zero bits, and at the end of a restart interval, its
/// process_restart (with libjpeg's own resync_to_restart for a marker out of order). What changes
/// is the cost per coefficient: one lookup of the next 11 bits gives the bits to consume, the zero
/// runs and the values of one or two AC coefficients whose codes and value bits fit in them
/// (huffman_pairs: most coefficients of a photograph, two at a time where codes are short);
/// otherwise one lookup of the next 10 bits gives the code's length, the zero run and the value of
/// one coefficient whose code and value bits fit in 10 bits, and the rest goes symbol by symbol.
#include <cstdlib>
#include <cstring>

#include "jpeg_bit_reader.hpp"

namespace ferry::ops::codec::jpeg {
namespace {

using table_entry::complete;
using table_entry::end_of_block;
using table_entry::kind_mask;

void decode_blocks(huffman_decoder& h, j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    reader_t r = h.reader;
    bool bad = false;
    JCOEF discard[64];
    for (int b = 0; b < h.blocks_in_mcu; ++b) {
        const huffman_decoder::block_plan& plan = h.blocks[b];
        JCOEF* block = mcu != nullptr ? mcu[b][0] : nullptr;

        refill(r, cinfo);
        const int diff = dc_difference(r, *plan.dc, bad);
        if (plan.dc_needed) {
            // Unsigned: damaged data can add up past int (libjpeg lets it wrap).
            const auto dc = static_cast<int>(static_cast<unsigned>(h.last_dc[plan.component]) +
                                             static_cast<unsigned>(diff));
            h.last_dc[plan.component] = dc;
            if (block != nullptr) block[0] = static_cast<JCOEF>(dc);
        }

        JCOEF* out = block != nullptr && plan.ac_needed ? block : discard;
        const std::int32_t* fast = plan.ac->fast;
        const std::uint32_t* pairs = plan.pairs;
        for (int k = 1; k < 64;) {
            refill(r, cinfo);
            // One or two symbols, with no branch on how many: one is stored twice (pair_entry).
            // An EOB first stores 0 at k, not yet decoded: libjpeg hands over zeroed blocks.
            const std::uint32_t p = pairs[r.acc >> (64 - huffman_pairs::lookahead)];
            if (k + pair_entry::run(p) <= 62) {
                r.acc <<= pair_entry::bits(p);
                r.bits -= pair_entry::bits(p);
                k += pair_entry::run(p);
                out[natural[k]] = static_cast<JCOEF>(pair_entry::value(p));
                k += pair_entry::step(p);
                out[natural[k]] = static_cast<JCOEF>(pair_entry::value2(p));
                k = (k + 1) | (pair_entry::ends(p) ? 64 : 0);
                continue;
            }
            const std::int32_t e = fast[r.acc >> (64 - huffman_table::lookahead)];
            if ((e & kind_mask) == complete) {
                r.acc <<= e & 0xFF;
                r.bits -= e & 0xFF;
                k += (e >> 8) & 15;
                out[natural[k]] = static_cast<JCOEF>(e >> 16);
                ++k;
                continue;
            }
            if ((e & kind_mask) == end_of_block) {
                r.acc <<= e & 0xFF;
                r.bits -= e & 0xFF;
                break;
            }
            const int rs = symbol_of(r, e, *plan.ac, bad);
            const int s = rs & 15;
            if (s == 0) {
                if ((rs >> 4) != 15) break;
                k += 16;
                continue;
            }
            k += rs >> 4;
            out[natural[k]] = static_cast<JCOEF>(extend(take(r, s), s));
            ++k;
        }
    }
    end_mcu(h, r, cinfo, bad);
}

/// libjpeg starts a pass only per scan, and this decoder is set up for one-scan files after
/// the first has started; should it be called, it starts over from where the source is.
void start_pass(j_decompress_ptr cinfo) {
    reset_scan(*reinterpret_cast<huffman_decoder*>(cinfo->entropy), cinfo);
}

}  // namespace

/// `FERRY_JPEG_HUFFMAN=libjpeg` turns ferry's decoder off; read at each decode (a lookup in a
/// few dozen variables, against a decode's hundreds of microseconds), so that it can be
/// switched within a process.
bool huffman_switched_off() {
    const char* v = std::getenv("FERRY_JPEG_HUFFMAN");
    return v != nullptr && std::strcmp(v, "libjpeg") == 0;
}

// libjpeg sees the decoder through `cinfo->entropy`: its header must come first.
static_assert(offsetof(huffman_decoder, pub) == 0);

entropy_choice plan_sequential_scan(jpeg_decompress_struct& d, huffman_decoder& h) {
    if (d.Ss != 0 || d.Se != DCTSIZE2 - 1 || d.Ah != 0 || d.Al != 0 || d.unread_marker != 0 ||
        d.comps_in_scan < 1 || d.comps_in_scan > MAX_COMPS_IN_SCAN || d.blocks_in_MCU < 1 ||
        d.blocks_in_MCU > D_MAX_BLOCKS_IN_MCU) {
        return entropy_choice::not_baseline;
    }
    bool dc_built[NUM_HUFF_TBLS] = {};
    bool ac_built[NUM_HUFF_TBLS] = {};
    for (int ci = 0; ci < d.comps_in_scan; ++ci) {
        const jpeg_component_info* c = d.cur_comp_info[ci];
        const int dt = c->dc_tbl_no;
        const int at = c->ac_tbl_no;
        if (dt < 0 || dt >= NUM_HUFF_TBLS || at < 0 || at >= NUM_HUFF_TBLS ||
            d.dc_huff_tbl_ptrs[dt] == nullptr || d.ac_huff_tbl_ptrs[at] == nullptr) {
            return entropy_choice::not_baseline;
        }
        if ((!dc_built[dt] && !build_table(*d.dc_huff_tbl_ptrs[dt], true, h.dc[dt])) ||
            (!ac_built[at] && !build_table(*d.ac_huff_tbl_ptrs[at], false, h.ac[at]))) {
            return entropy_choice::table_refused;
        }
        if (!ac_built[at]) build_pairs(h.ac[at], h.ac_pairs[at]);
        dc_built[dt] = ac_built[at] = true;
    }
    h.blocks_in_mcu = d.blocks_in_MCU;
    for (int b = 0; b < d.blocks_in_MCU; ++b) {
        const int ci = d.MCU_membership[b];
        if (ci < 0 || ci >= d.comps_in_scan) return entropy_choice::not_baseline;
        const jpeg_component_info* c = d.cur_comp_info[ci];
        auto& plan = h.blocks[b];
        plan.dc = &h.dc[c->dc_tbl_no];
        plan.ac = &h.ac[c->ac_tbl_no];
        plan.pairs = h.ac_pairs[c->ac_tbl_no].entry;
        plan.component = ci;
        // As libjpeg-turbo: no AC coefficients for a 1/8 scale (DC only), nothing for a
        // component the output does not use.
        plan.dc_needed = c->component_needed != FALSE;
#if JPEG_LIB_VERSION >= 70
        plan.ac_needed = plan.dc_needed && c->DCT_h_scaled_size > 1;
#else
        plan.ac_needed = plan.dc_needed && c->DCT_scaled_size > 1;
#endif
    }
    h.pub.decode_mcu = decode_mcu_with<decode_blocks>;
    reset_scan(h, &d);
    return entropy_choice::ferry;
}

entropy_choice use_ferry_huffman(jpeg_decompress_struct& d, huffman_decoder& h) {
    if (huffman_switched_off()) return entropy_choice::switched_off;
    if (d.progressive_mode != FALSE || d.arith_code != FALSE ||
        jpeg_has_multiple_scans(&d) != FALSE || d.data_precision != 8 || d.src == nullptr) {
        return entropy_choice::not_baseline;
    }
    if (!loaded_layout_matches()) return entropy_choice::library_mismatch;
    const entropy_choice c = plan_sequential_scan(d, h);
    if (c != entropy_choice::ferry) return c;
    h.pub.start_pass = start_pass;
    d.entropy = reinterpret_cast<jpeg_entropy_decoder*>(&h);
    return entropy_choice::ferry;
}

}  // namespace ferry::ops::codec::jpeg
