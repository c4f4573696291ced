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
#include "jpeg_huffman.hpp"

#include <jerror.h>

#include <cstdlib>
#include <cstring>

namespace ferry::ops::codec::jpeg {
namespace {

constexpr int look = huffman_table::lookahead;
constexpr int pair_look = huffman_pairs::lookahead;
using table_entry::complete;
using table_entry::end_of_block;
using table_entry::kind_mask;
using table_entry::partial;

/// Zigzag position to natural (row-major) position, with 16 extra entries for a corrupt run
/// that passes the end (libjpeg's jpeg_natural_order does the same).
constexpr std::uint8_t natural[80] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33,
    40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36,
    29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

using reader_t = huffman_decoder::bit_reader;

/// Whether any byte of `w` is 0xFF.
inline bool has_ff(std::uint64_t w) {
    const std::uint64_t v = ~w;
    return ((v - 0x0101010101010101ULL) & w & 0x8080808080808080ULL) != 0;
}

inline std::uint64_t load_be64(const std::uint8_t* p) {
    std::uint64_t w = 0;
    std::memcpy(&w, p, 8);
    return __builtin_bswap64(w);
}

/// The next byte of the source, asking it for more when its buffer is used up (the memory
/// source then warns JWRN_JPEG_EOF and gives a fake EOI marker). -1 when it has none.
int source_byte(reader_t& r, j_decompress_ptr cinfo) {
    if (r.next == r.end) {
        cinfo->src->next_input_byte = r.next;
        cinfo->src->bytes_in_buffer = 0;
        if ((*cinfo->src->fill_input_buffer)(cinfo) == FALSE || cinfo->src->bytes_in_buffer == 0) {
            return -1;
        }
        r.next = cinfo->src->next_input_byte;
        r.end = r.next + cinfo->src->bytes_in_buffer;
        r.fast_end = r.next;  // no 8-byte loads from a source's refilled buffer
    }
    return *r.next++;
}

/// Refills `r` byte by byte to more than 56 bits, as libjpeg's jpeg_fill_bit_buffer does:
/// 0xFF 0x00 is a 0xFF byte (after any number of padding 0xFF), 0xFF then anything else is a
/// marker, which ends the data: libjpeg gets it as `unread_marker`, and zeros follow.
reader_t refill_slow(reader_t r, j_decompress_ptr cinfo) {
    while (r.bits <= 56) {
        if (r.at_marker) {
            r.bits += 8;
            r.fake += 8;
            continue;
        }
        int c = source_byte(r, cinfo);
        if (c == 0xFF) {
            do {
                c = source_byte(r, cinfo);
            } while (c == 0xFF);
            if (c > 0) cinfo->unread_marker = c;
            c = c == 0 ? 0xFF : -1;  // a data byte, or the end of the data
        }
        if (c < 0) {
            r.at_marker = true;
            r.fast_end = r.next;
            // Nothing but zeros below the valid bits from here on.
            r.acc = r.bits == 0 ? 0 : r.acc & (~std::uint64_t{0} << (64 - r.bits));
            continue;
        }
        r.acc |= static_cast<std::uint64_t>(c) << (56 - r.bits);
        r.bits += 8;
    }
    return r;
}

/// At least 32 valid bits in `r` (a code of up to 17 bits and 15 value bits).
inline void refill(reader_t& r, j_decompress_ptr cinfo) {
    if (r.bits >= 32) return;
    if (r.fast_end - r.next >= 8) {
        const std::uint64_t w = load_be64(r.next);
        if (!has_ff(w)) {
            // Whole bytes up to 56-63 bits; the bits below are the next bytes' own, which the
            // next refill ORs in at the same place again.
            r.acc |= w >> r.bits;
            r.next += (63 - r.bits) >> 3;
            r.bits |= 56;
            return;
        }
    }
    r = refill_slow(r, cinfo);
}

inline int take(reader_t& r, int n) {
    const auto v = static_cast<int>(r.acc >> (64 - n));
    r.acc <<= n;
    r.bits -= n;
    return v;
}

/// The symbol of a code longer than the look-ahead (T.81 F.16), or 0 for a code that is in no
/// table (after 17 bits, as libjpeg).
inline int decode_long(reader_t& r, const huffman_table& t, bool& bad) {
    const auto top = static_cast<std::int32_t>(r.acc >> 47);  // 17 bits
    int l = look + 1;
    std::int32_t code = top >> (17 - l);
    while (code > t.maxcode[l]) {
        ++l;
        code = top >> (17 - l);
    }
    r.acc <<= l;
    r.bits -= l;
    if (l > 16) {
        bad = true;
        return 0;
    }
    return t.symbols[(code + t.valoffset[l]) & 0xFF];
}

/// The symbol of a look-ahead entry that is not complete (partial or long).
inline int symbol_of(reader_t& r, std::int32_t e, const huffman_table& t, bool& bad) {
    if ((e & kind_mask) == partial) {
        r.acc <<= e & 0xFF;
        r.bits -= e & 0xFF;
        return (e >> 16) & 0xFF;
    }
    return decode_long(r, t, bad);
}

void sync_source(const reader_t& r, j_decompress_ptr cinfo) {
    cinfo->src->next_input_byte = r.next;
    cinfo->src->bytes_in_buffer = static_cast<std::size_t>(r.end - r.next);
}

/// libjpeg's next_marker: the next marker's code, skipping (and counting in `discarded`)
/// anything else; -1 when the source has nothing more.
int next_marker(reader_t& r, j_decompress_ptr cinfo, unsigned int& discarded) {
    for (;;) {
        int c = source_byte(r, cinfo);
        while (c != 0xFF) {
            if (c < 0) return -1;
            ++discarded;
            c = source_byte(r, cinfo);
        }
        do {
            c = source_byte(r, cinfo);
        } while (c == 0xFF);
        if (c != 0) return c;
        discarded += 2;  // 0xFF 0x00: data, not a marker
    }
}

/// Drops the bits left in `r` and reads on to the next marker (cinfo->unread_marker, unless
/// libjpeg holds one already): the whole bytes passed over, which are extraneous data.
unsigned int drop_to_marker(reader_t& r, j_decompress_ptr cinfo) {
    const int real = r.at_marker ? r.bits - r.fake : r.bits;
    unsigned int discarded = real > 0 ? static_cast<unsigned int>(real) / 8 : 0;
    r.acc = 0;
    r.bits = 0;
    r.fake = 0;
    if (cinfo->unread_marker == 0) {
        const int c = next_marker(r, cinfo, discarded);
        if (c > 0) cinfo->unread_marker = c;
    }
    return discarded;
}

/// libjpeg's process_restart and read_restart_marker, at the end of a restart interval: the
/// bits left are dropped (whole bytes among them are extraneous data), the RSTn marker that
/// should come next is read, or libjpeg's resync_to_restart decides what to do when another
/// one comes; then the DC predictions start again from 0.
reader_t restart(huffman_decoder& h, reader_t r, j_decompress_ptr cinfo) {
    const unsigned int discarded = drop_to_marker(r, cinfo);
    if (discarded != 0) {
        sync_source(r, cinfo);
        WARNMS2(cinfo, JWRN_EXTRANEOUS_DATA, static_cast<int>(discarded), cinfo->unread_marker);
    }
    if (cinfo->unread_marker == JPEG_RST0 + h.next_restart) {
        cinfo->unread_marker = 0;
    } else {
        sync_source(r, cinfo);
        (void)(*cinfo->src->resync_to_restart)(cinfo, h.next_restart);
        r.next = cinfo->src->next_input_byte;
        r.end = r.next + cinfo->src->bytes_in_buffer;
    }
    h.next_restart = (h.next_restart + 1) & 7;
    for (int& v : h.last_dc) v = 0;
    h.restarts_to_go = cinfo->restart_interval;
    if (cinfo->unread_marker == 0) {
        // On with the next interval's data (after a marker it stays out: zeros, warned once).
        h.pub.insufficient_data = FALSE;
        r.at_marker = false;
        r.fast_end = r.end;
    } else {
        r.at_marker = true;
        r.fast_end = r.next;
    }
    sync_source(r, cinfo);
    return r;
}

/// After the scan's last MCU, libjpeg's marker reader takes over, and its next_marker warns
/// about bytes before the marker that follows (JWRN_EXTRANEOUS_DATA). Those it sees are the ones
/// its own look-ahead (up to 7 bytes) has not read; this decoder's reads further ahead, and would
/// hide what libjpeg reports. So, as at a restart marker, the whole bytes left in the bit buffer
/// and any before the next marker are counted here, and the marker is handed to libjpeg. A valid
/// scan leaves only the padding bits of its last byte: this warns wherever libjpeg does, and also
/// about the few (up to 6 in the tests) that libjpeg-turbo's look-ahead swallows silently.
reader_t end_scan(reader_t r, j_decompress_ptr cinfo) {
    const unsigned int discarded = drop_to_marker(r, cinfo);
    // Nothing more is read: should libjpeg ask for another block, it gets zero bits.
    r.at_marker = true;
    r.fast_end = r.next;
    sync_source(r, cinfo);
    if (discarded != 0) {
        WARNMS2(cinfo, JWRN_EXTRANEOUS_DATA, static_cast<int>(discarded), cinfo->unread_marker);
    }
    return r;
}

void decode_blocks(huffman_decoder& h, j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    reader_t r = h.reader;
    bool bad = false;
    JCOEF discard[64];
    for (int b = 0; b < h.blocks_in_mcu; ++b) {
        const huffman_decoder::block_plan& plan = h.blocks[b];
        JCOEF* block = mcu != nullptr ? mcu[b][0] : nullptr;

        refill(r, cinfo);
        std::int32_t e = plan.dc->fast[r.acc >> (64 - look)];
        int diff = 0;
        if ((e & kind_mask) == complete) {
            r.acc <<= e & 0xFF;
            r.bits -= e & 0xFF;
            diff = e >> 16;
        } else {
            const int s = symbol_of(r, e, *plan.dc, bad);
            if (s != 0) diff = extend(take(r, s), s);
        }
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
            const std::uint32_t p = pairs[r.acc >> (64 - pair_look)];
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
            e = fast[r.acc >> (64 - look)];
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
    const bool ran_out = r.at_marker && r.bits < r.fake;
    if (ran_out) r.fake = r.bits;
    h.reader = r;
    sync_source(r, cinfo);
    // Warnings last, with the state saved: in strict mode they do not return.
    if (bad) WARNMS(cinfo, JWRN_HUFF_BAD_CODE);
    if (ran_out) {
        h.pub.insufficient_data = TRUE;
        WARNMS(cinfo, JWRN_HIT_MARKER);
    }
}

boolean decode_mcu(j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    auto& h = *reinterpret_cast<huffman_decoder*>(cinfo->entropy);
    if (cinfo->restart_interval != 0 && h.restarts_to_go == 0) {
        h.reader = restart(h, h.reader, cinfo);
    }
    // After the data ran out, libjpeg leaves the remaining blocks zero (grey).
    if (h.pub.insufficient_data == FALSE) decode_blocks(h, cinfo, mcu);
    if (cinfo->restart_interval != 0) --h.restarts_to_go;
    if (--h.mcus_left == 0 && h.pub.insufficient_data == FALSE) {
        h.reader = end_scan(h.reader, cinfo);
    }
    return TRUE;
}

void reset(huffman_decoder& h, j_decompress_ptr cinfo) {
    h.pub.insufficient_data = FALSE;
    h.mcus_left = std::uint64_t{cinfo->MCUs_per_row} * cinfo->MCU_rows_in_scan;
    h.reader = {};
    h.reader.next = cinfo->src->next_input_byte;
    h.reader.end = h.reader.next + cinfo->src->bytes_in_buffer;
    h.reader.fast_end = h.reader.end;
    for (int& v : h.last_dc) v = 0;
    h.restarts_to_go = cinfo->restart_interval;
    h.next_restart = 0;  // as libjpeg's marker reader sets it at each SOS
}

/// libjpeg starts a pass only per scan, and this decoder is set up for one-scan files after
/// the first has started; should it be called, it starts over from where the source is.
void start_pass(j_decompress_ptr cinfo) {
    reset(*reinterpret_cast<huffman_decoder*>(cinfo->entropy), cinfo);
}

/// `FERRY_JPEG_HUFFMAN=libjpeg` turns ferry's decoder off; read at each decode (a lookup in a
/// few dozen variables, against a decode's hundreds of microseconds), so that it can be
/// switched within a process.
bool switched_off() {
    const char* v = std::getenv("FERRY_JPEG_HUFFMAN");
    return v != nullptr && std::strcmp(v, "libjpeg") == 0;
}

}  // namespace

// libjpeg sees the decoder through `cinfo->entropy`: its header must come first.
static_assert(offsetof(huffman_decoder, pub) == 0);

entropy_choice use_ferry_huffman(jpeg_decompress_struct& d, huffman_decoder& h) {
    if (switched_off()) return entropy_choice::switched_off;
    if (d.progressive_mode != FALSE || d.arith_code != FALSE ||
        jpeg_has_multiple_scans(&d) != FALSE || d.data_precision != 8 || d.Ss != 0 ||
        d.Se != DCTSIZE2 - 1 || d.Ah != 0 || d.Al != 0 || d.unread_marker != 0 ||
        d.comps_in_scan < 1 || d.comps_in_scan > MAX_COMPS_IN_SCAN || d.blocks_in_MCU < 1 ||
        d.blocks_in_MCU > D_MAX_BLOCKS_IN_MCU || d.src == nullptr) {
        return entropy_choice::not_baseline;
    }
    if (!loaded_layout_matches()) return entropy_choice::library_mismatch;
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
    h.pub.start_pass = start_pass;
    h.pub.decode_mcu = decode_mcu;
    reset(h, &d);
    d.entropy = reinterpret_cast<jpeg_entropy_decoder*>(&h);
    return entropy_choice::ferry;
}

}  // namespace ferry::ops::codec::jpeg
