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
/// bits, then reads the value bits apart), and the reader loads 8 bytes at a time. In AC
/// refinement, which is most of a progressive decode, masks of the block's zero and nonzero
/// coefficients replace libjpeg's walk position by position (see ac_refine).
#include <algorithm>
#include <atomic>
#include <bit>
#include <climits>

#include "jpeg_bit_reader.hpp"
#include "x86_cpu.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ferry::ops::codec::jpeg {
namespace {

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
        const std::int32_t e = t.fast[r.acc >> (64 - huffman_table::lookahead)];
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

/// Bits 0..n-1 (n up to 64).
using decode_mcu_fn = boolean (*)(j_decompress_ptr, JBLOCKROW*);

constexpr std::uint64_t bits_below(int n) {
    return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
}

/// By a row of a block (0-7) and which of its 8 coefficients are nonzero (bit c: column c), the
/// zigzag positions of those coefficients as bits of a mask: eight lookups turn a block's
/// nonzero coefficients into zigzag order (16 KiB).
struct zigzag_rows {
    std::uint64_t mask[8][256];
};
constexpr zigzag_rows make_zigzag_rows() {
    std::uint8_t zigzag_of[64] = {};
    for (int k = 0; k < 64; ++k) zigzag_of[natural[k]] = static_cast<std::uint8_t>(k);
    zigzag_rows t{};
    for (int row = 0; row < 8; ++row) {
        for (int bits = 0; bits < 256; ++bits) {
            std::uint64_t m = 0;
            for (int c = 0; c < 8; ++c) {
                if ((bits >> c) & 1) m |= std::uint64_t{1} << zigzag_of[8 * row + c];
            }
            t.mask[row][bits] = m;
        }
    }
    return t;
}
constexpr zigzag_rows zigzag_mask = make_zigzag_rows();

/// The positions k in Ss..Se (zigzag order) of the coefficients of `block` that are nonzero, as
/// bits k of a mask: a refinement scan reads a correction bit for each of them, and counts only
/// the zero ones in its runs.
inline std::uint64_t nonzero_in_band(const JCOEF* block, int ss, int se) {
    std::uint64_t m = 0;
#if defined(__SSE2__)
    const __m128i zero = _mm_setzero_si128();
    for (int row = 0; row < 8; ++row) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 8 * row));
        const __m128i is_zero = _mm_packs_epi16(_mm_cmpeq_epi16(v, zero), zero);
        const auto zeros = static_cast<unsigned>(_mm_movemask_epi8(is_zero));
        m |= zigzag_mask.mask[row][~zeros & 0xFFU];
    }
#else
    for (int row = 0; row < 8; ++row) {
        unsigned bits = 0;
        for (int c = 0; c < 8; ++c) bits |= static_cast<unsigned>(block[8 * row + c] != 0) << c;
        m |= zigzag_mask.mask[row][bits];
    }
#endif
    return m & bits_below(se + 1) & ~bits_below(ss);
}

/// A correction bit for each nonzero coefficient in `positions`, in order: 1 adds p1 to its
/// magnitude, unless that bit is set already. Up to 32 bits per refill.
inline void correct(reader_t& r, j_decompress_ptr cinfo, JCOEF* block, std::uint64_t positions,
                    int p1) {
    while (positions != 0) {
        refill(r, cinfo);
        std::uint64_t acc = r.acc;
        int n = 0;
        do {
            JCOEF& c = block[natural[std::countr_zero(positions)]];
            positions &= positions - 1;
            const bool add = (acc >> 63) != 0 && (c & p1) == 0;
            acc <<= 1;
            c = static_cast<JCOEF>(c + (add ? (c >= 0 ? p1 : -p1) : 0));
        } while (positions != 0 && ++n < 32);
        drop(r, positions != 0 ? 32 : n + 1);
    }
}

/// The symbol of a refinement scan's code that is neither category 1 nor ZRL nor EOB (out of the
/// decoding loop: rare in valid data). A category above 1, which a refinement scan never has,
/// libjpeg warns about; it then reads one sign bit, not the category's value bits.
[[gnu::noinline]] int rare_refine_symbol(reader_t& r, std::int32_t e, const huffman_table& t,
                                         j_decompress_ptr cinfo) {
    int rs = 0;
    if ((e & kind_mask) == complete) {
        bool bad = false;
        rs = decode_from(r, t, 1, bad);  // a complete entry's code is in the table
    } else {
        rs = slow_symbol(r, e, t, cinfo);
    }
    if ((rs & 15) > 1) WARNMS(cinfo, JWRN_HUFF_BAD_CODE);
    return rs;
}

/// By a byte and k (0-7), the position of the byte's k-th set bit (8 where it has fewer).
struct byte_select {
    std::uint8_t at[256][8];
};
constexpr byte_select make_byte_select() {
    byte_select t{};
    for (int b = 0; b < 256; ++b) {
        int k = 0;
        for (int i = 0; i < 8; ++i) t.at[b][i] = 8;
        for (int i = 0; i < 8; ++i) {
            if ((b >> i) & 1) t.at[b][k++] = static_cast<std::uint8_t>(i);
        }
    }
    return t;
}
constexpr byte_select select_in_byte = make_byte_select();

/// Where a run of `run` zero coefficients ends: the bit of `zeros`'s run-th set bit (counting
/// from 0), 0 when it has no more than `run`. Without a branch on `run`: the set bits of each
/// byte counted at once (SWAR), summed byte by byte with one multiplication, the byte where the
/// sum passes `run` found by a compare of all eight, and the bit in it from a table.
struct skip_by_select {
    static std::uint64_t after(std::uint64_t zeros, int run) {
        constexpr std::uint64_t ones = 0x0101010101010101ULL;
        constexpr std::uint64_t highs = 0x8080808080808080ULL;
        std::uint64_t c = zeros - ((zeros >> 1) & 0x5555555555555555ULL);
        c = (c & 0x3333333333333333ULL) + ((c >> 2) & 0x3333333333333333ULL);
        c = (c + (c >> 4)) & 0x0F0F0F0F0F0F0F0FULL;  // set bits per byte
        const std::uint64_t upto = c * ones;         // byte i: set bits in bytes 0..i
        // Bytes whose running count is above `run` (each count is at most 64: no borrow).
        const std::uint64_t past =
            ((upto | highs) - static_cast<std::uint64_t>(run + 1) * ones) & highs;
        if (past == 0) return 0;
        const int byte = std::countr_zero(past) >> 3;
        const int before = byte == 0 ? 0 : static_cast<int>((upto >> (8 * byte - 8)) & 0xFF);
        const auto bits = static_cast<std::size_t>((zeros >> (8 * byte)) & 0xFF);
        const int bit = select_in_byte.at[bits][run - before];
        return std::uint64_t{1} << (8 * byte + bit);
    }
};

#if defined(__x86_64__) && defined(__GNUC__)
/// The same with BMI2's PDEP, which deposits bit `run` at the run-th set bit of `zeros` in one
/// instruction, no loop and no branch to mispredict (inline assembly: the library is built for
/// baseline x86-64, and this runs only where x86::has_fast_pdep()).
struct skip_by_pdep {
    static std::uint64_t after(std::uint64_t zeros, int run) {
        std::uint64_t out = 0;
        asm("pdepq %2, %1, %0" : "=r"(out) : "r"(std::uint64_t{1} << run), "rm"(zeros));
        return out;
    }
};
#endif

/// decode_mcu_AC_refine: in the band Ss..Se of one block, newly nonzero coefficients (+-p1,
/// after `run` zeros that are still zero) and a correction bit for each coefficient that was
/// nonzero already, passed on the way or after the band's end (an EOB run). libjpeg walks the
/// band position by position; here masks of the zero and the nonzero positions not yet passed
/// find each run's target and the corrections on the way.
template <class Skip>
void ac_refine(huffman_decoder& h, j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    reader_t r = h.reader;
    JCOEF* block = mcu[0][0];
    const huffman_table& t = *h.blocks[0].ac;
    const int se = h.se;
    const int p1 = 1 << h.al;
    std::uint64_t ahead = nonzero_in_band(block, h.ss, se);  // nonzero, not yet passed
    std::uint64_t zeros = ~ahead & bits_below(se + 1) & ~bits_below(h.ss);
    unsigned int eob = h.eob_run;
    if (eob == 0) {
        for (int k = h.ss; k <= se;) {
            refill(r, cinfo);
            const std::int32_t e = t.fast[r.acc >> (64 - huffman_table::lookahead)];
            int run = 0;
            int s = 0;  // the new coefficient: +-p1, or 0 for ZRL
            const int v = e >> 16;
            if ((e & kind_mask) == complete && (v == 1 || v == -1 || v == 0)) {
                // A category-1 code and its sign bit, or ZRL.
                drop(r, e & 0xFF);
                run = (e >> 8) & 15;
                s = v * p1;
            } else if ((e & kind_mask) == end_of_block) {
                drop(r, e & 0xFF);
                run = (e >> 8) & 15;
                eob = 1U << run;
                if (run != 0) eob += static_cast<unsigned int>(take(r, run));
                break;  // the rest of the block is the EOB run's
            } else {
                const int rs = rare_refine_symbol(r, e, t, cinfo);
                run = rs >> 4;
                if ((rs & 15) != 0) {
                    s = take(r, 1) != 0 ? p1 : -p1;
                } else if (run != 15) {
                    eob = 1U << run;
                    if (run != 0) eob += static_cast<unsigned int>(take(r, run));
                    break;
                }
            }
            // The target: past `run` zero coefficients, the next zero one (or past the band,
            // Se + 1, where the zeros run out); a correction bit for each nonzero on the way.
            const std::uint64_t at = Skip::after(zeros, run);  // the target's bit, or 0
            int target = se + 1;
            std::uint64_t passed = ahead;
            if (at != 0) {
                target = std::countr_zero(at);
                zeros &= ~(at | (at - 1));  // the zeros passed and the target
                passed &= at - 1;
            }
            ahead ^= passed;
            correct(r, cinfo, block, passed, p1);
            if (s != 0) block[natural[target]] = static_cast<JCOEF>(s);
            k = target + 1;
        }
    }
    if (eob > 0) {
        correct(r, cinfo, block, ahead, p1);
        --eob;
    }
    h.eob_run = eob;
    end_mcu(h, r, cinfo, false);
}

/// For tests: AC refinement without PDEP even where it is fast.
std::atomic<bool> pdep_refused{false};

/// AC refinement with PDEP where it is fast, else with the select of skip_by_select.
decode_mcu_fn refine_routine() {
#if defined(__x86_64__) && defined(__GNUC__)
    if (x86::has_fast_pdep() && !pdep_refused.load(std::memory_order_relaxed)) {
        return decode_mcu_with<ac_refine<skip_by_pdep>>;
    }
#endif
    return decode_mcu_with<ac_refine<skip_by_select>>;
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
        h.pub.decode_mcu = d.Ah == 0 ? decode_mcu_with<ac_first> : refine_routine();
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

bool refine_with_pdep(bool allowed) noexcept {
    pdep_refused.store(!allowed, std::memory_order_relaxed);
#if defined(__x86_64__) && defined(__GNUC__)
    return allowed && x86::has_fast_pdep();
#else
    return false;
#endif
}

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
