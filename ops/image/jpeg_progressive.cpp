// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's decoder of JPEG files of several scans (jpeg_huffman.hpp): progressive Huffman files
/// (T.81 G.1.2: DC and AC bands, first scans and successive-approximation refinements), and
/// sequential files whose components come in scans of their own.
///
/// libjpeg reads such a file whole inside jpeg_start_decompress, scan by scan, into its buffer
/// of coefficients, and starts each scan with its entropy decoder's start_pass. So ferry's
/// decoder goes in place from the progress monitor, which jpeg_start_decompress calls before it
/// reads any scan data, and its start_pass first hands each scan to libjpeg's own decoder's
/// start_pass: libjpeg checks the scan (Ss, Se, Ah, Al), updates `coef_bits` (the progression
/// status that block smoothing reads) and warns about a bogus progression exactly as it does
/// alone, whatever its version; then ferry's decoder takes the scan. Block smoothing, the
/// inverse DCT and the rest stay libjpeg's, on the same coefficients: the same pixels.
///
/// The four progressive routines follow jdphuff.c's decode_mcu_DC_first, _AC_first, _DC_refine
/// and _AC_refine step for step (the bits read, the coefficients written, EOB runs, corrupt
/// runs past the band, the warnings). What changes is the cost per code: one lookup of the next
/// 10 bits gives the code, its value bits and the zero run where they fit (libjpeg looks up 8
/// bits, then reads the value bits apart), and the reader loads 8 bytes at a time.
#include <climits>

#include "jpeg_bit_reader.hpp"

namespace ferry::ops::codec::jpeg {
namespace {

constexpr int look = huffman_table::lookahead;
using table_entry::complete;
using table_entry::end_of_block;
using table_entry::kind_mask;

/// The symbol of a look-ahead entry that is not complete; a code in no table warns as libjpeg
/// warns, there and then.
int slow_symbol(reader_t& r, std::int32_t e, const huffman_table& t, j_decompress_ptr cinfo) {
    bool bad = false;
    const int rs = symbol_of(r, e, t, bad);
    if (bad) WARNMS(cinfo, JWRN_HUFF_BAD_CODE);
    return rs;
}

/// decode_mcu_DC_first: each block's DC difference, added to its component's last DC value
/// (an overflow of int is libjpeg's JERR_BAD_DCT_COEF), shifted left by Al.
void dc_first(huffman_decoder& h, j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    reader_t r = h.reader;
    bool bad = false;
    for (int b = 0; b < h.blocks_in_mcu; ++b) {
        const huffman_decoder::block_plan& plan = h.blocks[b];
        refill(r, cinfo);
        const int diff = dc_difference(r, *plan.dc, bad);
        int& last = h.last_dc[plan.component];
        if ((last >= 0 && diff > INT_MAX - last) || (last < 0 && diff < INT_MIN - last)) {
            end_mcu(h, r, cinfo, bad);
            ERREXIT(cinfo, JERR_BAD_DCT_COEF);
        }
        last += diff;
        mcu[b][0][0] = static_cast<JCOEF>(static_cast<unsigned>(last) << h.al);
    }
    end_mcu(h, r, cinfo, bad);
}

/// decode_mcu_AC_first: the band Ss..Se of one block, each value shifted left by Al, or one
/// block of an EOB run (nothing read).
void ac_first(huffman_decoder& h, j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    if (h.eob_run > 0) {
        --h.eob_run;
        return;
    }
    reader_t r = h.reader;
    JCOEF* block = mcu[0][0];
    const huffman_table& t = *h.blocks[0].ac;
    const int se = h.se;
    const int al = h.al;
    for (int k = h.ss; k <= se; ++k) {
        refill(r, cinfo);
        const std::int32_t e = t.fast[r.acc >> (64 - look)];
        if ((e & kind_mask) == complete) {
            // A value with its code, or ZRL (value 0: 16 zeros, nothing stored).
            drop(r, e & 0xFF);
            k += (e >> 8) & 15;
            const int v = e >> 16;
            if (v != 0) block[natural[k]] = static_cast<JCOEF>(static_cast<unsigned>(v) << al);
            continue;
        }
        int rs = 0;
        if ((e & kind_mask) == end_of_block) {
            drop(r, e & 0xFF);
            rs = ((e >> 8) & 15) << 4;
        } else {
            rs = slow_symbol(r, e, t, cinfo);
        }
        const int s = rs & 15;
        const int run = rs >> 4;
        if (s != 0) {
            k += run;
            const int v = extend(take(r, s), s);
            block[natural[k]] = static_cast<JCOEF>(static_cast<unsigned>(v) << al);
        } else if (run == 15) {
            k += 15;
        } else {
            // EOBr: this block and 2^r - 1 + (r appended bits) more end here.
            unsigned int eob = 1U << run;
            if (run != 0) eob += static_cast<unsigned int>(take(r, run));
            h.eob_run = eob - 1;
            break;
        }
    }
    end_mcu(h, r, cinfo, false);
}

/// decode_mcu_DC_refine: the next bit of each block's DC value.
void dc_refine(huffman_decoder& h, j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    reader_t r = h.reader;
    const auto p1 = static_cast<JCOEF>(1 << h.al);
    refill(r, cinfo);  // 32 bits: one per block, D_MAX_BLOCKS_IN_MCU at most
    for (int b = 0; b < h.blocks_in_mcu; ++b) {
        if (take(r, 1) != 0) mcu[b][0][0] = static_cast<JCOEF>(mcu[b][0][0] | p1);
    }
    end_mcu(h, r, cinfo, false);
}

/// A correction bit for the already-nonzero coefficient `c`: 1 adds p1 to its magnitude,
/// unless that bit is set already.
inline void correct(reader_t& r, j_decompress_ptr cinfo, JCOEF& c, int p1) {
    refill(r, cinfo);
    if (take(r, 1) != 0 && (c & p1) == 0) c = static_cast<JCOEF>(c >= 0 ? c + p1 : c - p1);
}

/// decode_mcu_AC_refine: in the band Ss..Se of one block, newly nonzero coefficients (+-p1,
/// after `run` zeros that are still zero) and a correction bit for each coefficient that was
/// nonzero already, passed on the way or after the band's end (an EOB run).
void ac_refine(huffman_decoder& h, j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    reader_t r = h.reader;
    JCOEF* block = mcu[0][0];
    const huffman_table& t = *h.blocks[0].ac;
    const int se = h.se;
    const int p1 = 1 << h.al;
    unsigned int eob = h.eob_run;
    int k = h.ss;
    if (eob == 0) {
        for (; k <= se; ++k) {
            refill(r, cinfo);
            const std::int32_t e = t.fast[r.acc >> (64 - look)];
            int run = 0;
            int s = 0;  // the new coefficient: +-p1, or 0 for ZRL
            const int v = e >> 16;
            if ((e & kind_mask) == complete && (v == 1 || v == -1 || v == 0)) {
                // A category-1 code and its sign bit, or ZRL.
                drop(r, e & 0xFF);
                run = (e >> 8) & 15;
                s = v * p1;
            } else {
                int rs = 0;
                if ((e & kind_mask) == end_of_block) {
                    drop(r, e & 0xFF);
                    rs = ((e >> 8) & 15) << 4;
                } else if ((e & kind_mask) == complete) {
                    // A category above 1, which a refinement scan never has: libjpeg warns,
                    // then reads one sign bit, not the category's value bits.
                    bool bad = false;
                    rs = decode_from(r, t, 1, bad);
                } else {
                    rs = slow_symbol(r, e, t, cinfo);
                }
                run = rs >> 4;
                if ((rs & 15) != 0) {
                    if ((rs & 15) != 1) WARNMS(cinfo, JWRN_HUFF_BAD_CODE);
                    s = take(r, 1) != 0 ? p1 : -p1;
                } else if (run != 15) {
                    eob = 1U << run;
                    if (run != 0) eob += static_cast<unsigned int>(take(r, run));
                    break;  // the rest of the block is the EOB run's
                }
            }
            // Past nonzero coefficients (a correction bit each) and `run` zero ones, to the
            // zero coefficient that becomes s.
            do {
                JCOEF& c = block[natural[k]];
                if (c != 0) {
                    correct(r, cinfo, c, p1);
                } else if (--run < 0) {
                    break;
                }
                ++k;
            } while (k <= se);
            if (s != 0) block[natural[k]] = static_cast<JCOEF>(s);
        }
    }
    if (eob > 0) {
        for (; k <= se; ++k) {
            JCOEF& c = block[natural[k]];
            if (c != 0) correct(r, cinfo, c, p1);
        }
        --eob;
    }
    h.eob_run = eob;
    end_mcu(h, r, cinfo, false);
}

/// Sets `h` up for the progressive scan `d` has just started (libjpeg checked it): the tables
/// it uses, its blocks, its routine. False where ferry's decoder does not take it.
bool plan_progressive_scan(jpeg_decompress_struct& d, huffman_decoder& h) {
    if (d.comps_in_scan < 1 || d.comps_in_scan > MAX_COMPS_IN_SCAN || d.blocks_in_MCU < 1 ||
        d.blocks_in_MCU > D_MAX_BLOCKS_IN_MCU || d.Ss < 0 || d.Se < d.Ss || d.Se >= DCTSIZE2 ||
        d.Al < 0 || d.Al > 13) {
        return false;
    }
    const bool dc_band = d.Ss == 0;
    if (!dc_band && (d.comps_in_scan != 1 || d.blocks_in_MCU != 1)) return false;
    for (int b = 0; b < d.blocks_in_MCU; ++b) {
        const int ci = d.MCU_membership[b];
        if (ci < 0 || ci >= d.comps_in_scan) return false;
        const jpeg_component_info* c = d.cur_comp_info[ci];
        auto& plan = h.blocks[b];
        plan = {};
        plan.component = ci;
        // The tables libjpeg's start_pass has just built from the same DHT tables: it refuses
        // what build_table refuses, so these build.
        if (dc_band && d.Ah == 0) {
            const int t = c->dc_tbl_no;
            if (t < 0 || t >= NUM_HUFF_TBLS || d.dc_huff_tbl_ptrs[t] == nullptr ||
                !build_table(*d.dc_huff_tbl_ptrs[t], true, h.dc[t])) {
                return false;
            }
            plan.dc = &h.dc[t];
        } else if (!dc_band) {
            const int t = c->ac_tbl_no;
            if (t < 0 || t >= NUM_HUFF_TBLS || d.ac_huff_tbl_ptrs[t] == nullptr ||
                !build_table(*d.ac_huff_tbl_ptrs[t], false, h.ac[t])) {
                return false;
            }
            plan.ac = &h.ac[t];
        }
    }
    h.blocks_in_mcu = d.blocks_in_MCU;
    h.ss = d.Ss;
    h.se = d.Se;
    h.al = d.Al;
    if (dc_band) {
        h.pub.decode_mcu = d.Ah == 0 ? decode_mcu_with<dc_first> : decode_mcu_with<dc_refine>;
    } else {
        h.pub.decode_mcu = d.Ah == 0 ? decode_mcu_with<ac_first> : decode_mcu_with<ac_refine>;
    }
    reset_scan(h, &d);
    return true;
}

/// Sets `h` up for the scan `d` has just started; where ferry's decoder does not take it,
/// libjpeg's keeps this scan and the rest of the file.
void plan_scan(jpeg_decompress_struct& d, huffman_decoder& h) {
    const bool taken = d.progressive_mode != FALSE
                           ? plan_progressive_scan(d, h)
                           : plan_sequential_scan(d, h) == entropy_choice::ferry;
    if (!taken) {
        h.scans_choice = entropy_choice::scan_refused;
        d.entropy = h.library;
        return;
    }
    d.entropy = reinterpret_cast<jpeg_entropy_decoder*>(&h);
}

/// Each scan after the first: libjpeg's own decoder starts it (checks, `coef_bits`, warnings),
/// then ferry's takes it.
void start_scan(j_decompress_ptr cinfo) {
    auto& h = *reinterpret_cast<huffman_decoder*>(cinfo->entropy);
    cinfo->entropy = h.library;
    (*reinterpret_cast<entropy_decoder_header*>(h.library)->start_pass)(cinfo);
    plan_scan(*cinfo, h);
}

}  // namespace

entropy_choice prepare_scans(jpeg_decompress_struct& d, huffman_decoder& h) {
    h.take_over_pending = false;
    if (huffman_switched_off()) return entropy_choice::switched_off;
    if (d.arith_code != FALSE || d.data_precision != 8 || d.src == nullptr) {
        return entropy_choice::not_baseline;
    }
    if (!loaded_layout_matches()) return entropy_choice::library_mismatch;
    h.take_over_pending = true;
    h.scans_choice = entropy_choice::ferry_scans;
    return entropy_choice::ferry_scans;
}

void take_over_scans(jpeg_decompress_struct& d, huffman_decoder& h) {
    h.take_over_pending = false;
    if (d.entropy == nullptr ||
        reinterpret_cast<entropy_decoder_header*>(d.entropy)->start_pass == nullptr) {
        h.scans_choice = entropy_choice::not_baseline;
        return;
    }
    // libjpeg has started the first scan already (jinit_master_decompress): ferry's decoder
    // takes it as it is, and starts the later ones through libjpeg's start_pass.
    h.library = d.entropy;
    h.pub.start_pass = start_scan;
    plan_scan(d, h);
}

}  // namespace ferry::ops::codec::jpeg
