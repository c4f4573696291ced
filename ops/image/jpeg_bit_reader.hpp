// SPDX-License-Identifier: Apache-2.0
/// \file
/// The bit reader and the steps that ferry's Huffman decoders share (jpeg_huffman.hpp): the
/// sequential decoder (jpeg_huffman.cpp) and the progressive one (jpeg_progressive.cpp). What
/// runs per code is inline here; what runs per restart interval or per scan is in
/// jpeg_bit_reader.cpp.
///
/// The reader follows libjpeg's jpeg_fill_bit_buffer: 0xFF 0x00 is a 0xFF byte, 0xFF then
/// anything else is a marker, which ends the data (libjpeg gets it as `unread_marker`) and is
/// followed by zero bits; using any of those zeros is what libjpeg warns about once per segment
/// (JWRN_HIT_MARKER), after which it leaves the segment's remaining blocks alone.
#pragma once

#include <jerror.h>

#include <cstdint>
#include <cstring>

#include "jpeg_huffman.hpp"

namespace ferry::ops::codec::jpeg {

using reader_t = huffman_decoder::bit_reader;

/// Zigzag position to natural (row-major) position, with 16 extra entries for a corrupt run
/// that passes the end (libjpeg's jpeg_natural_order does the same).
inline constexpr std::uint8_t natural[80] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33,
    40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36,
    29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

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

/// Refills `r` byte by byte to more than 56 bits, as libjpeg's jpeg_fill_bit_buffer does.
reader_t refill_slow(reader_t r, j_decompress_ptr cinfo);

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

inline void drop(reader_t& r, int n) {
    r.acc <<= n;
    r.bits -= n;
}

/// The symbol of the code at the front of `r`, searched from length `first` on (T.81 F.16), or
/// 0 for a code that is in no table (after 17 bits, as libjpeg).
inline int decode_from(reader_t& r, const huffman_table& t, int first, bool& bad) {
    const auto top = static_cast<std::int32_t>(r.acc >> 47);  // 17 bits
    int l = first;
    std::int32_t code = top >> (17 - l);
    while (code > t.maxcode[l]) {
        ++l;
        code = top >> (17 - l);
    }
    drop(r, l);
    if (l > 16) {
        bad = true;
        return 0;
    }
    return t.symbols[(code + t.valoffset[l]) & 0xFF];
}

/// The symbol of a look-ahead entry that is not complete (partial or long).
inline int symbol_of(reader_t& r, std::int32_t e, const huffman_table& t, bool& bad) {
    if ((e & table_entry::kind_mask) == table_entry::partial) {
        drop(r, e & 0xFF);
        return (e >> 16) & 0xFF;
    }
    return decode_from(r, t, huffman_table::lookahead + 1, bad);
}

/// A DC difference (T.81 F.2.2.1), from a refilled `r`.
inline int dc_difference(reader_t& r, const huffman_table& t, bool& bad) {
    const std::int32_t e = t.fast[r.acc >> (64 - huffman_table::lookahead)];
    if ((e & table_entry::kind_mask) == table_entry::complete) {
        drop(r, e & 0xFF);
        return e >> 16;
    }
    const int s = symbol_of(r, e, t, bad);
    return s == 0 ? 0 : extend(take(r, s), s);
}

/// Hands the position of `r` back to libjpeg's source.
inline void sync_source(const reader_t& r, j_decompress_ptr cinfo) {
    cinfo->src->next_input_byte = r.next;
    cinfo->src->bytes_in_buffer = static_cast<std::size_t>(r.end - r.next);
}

/// After an MCU: the reader back in `h`, the source in step, then the warnings libjpeg gives,
/// with the state saved (in strict mode they do not return): a code in no table (`bad`), and
/// zero bits used after a marker, which also leaves the segment's remaining MCUs alone.
inline void end_mcu(huffman_decoder& h, reader_t r, j_decompress_ptr cinfo, bool bad) {
    const bool ran_out = r.at_marker && r.bits < r.fake;
    if (ran_out) r.fake = r.bits;
    h.reader = r;
    sync_source(r, cinfo);
    if (bad) WARNMS(cinfo, JWRN_HUFF_BAD_CODE);
    if (ran_out) {
        h.pub.insufficient_data = TRUE;
        WARNMS(cinfo, JWRN_HIT_MARKER);
    }
}

/// libjpeg's process_restart and read_restart_marker, at the end of a restart interval: the
/// bits left are dropped (whole bytes among them are extraneous data), the RSTn marker that
/// should come next is read, or libjpeg's resync_to_restart decides what to do when another
/// one comes; then the DC predictions and the EOB run start again from 0.
reader_t restart(huffman_decoder& h, reader_t r, j_decompress_ptr cinfo);

/// After a scan's last MCU: the whole bytes left in the reader and any before the next marker
/// are extraneous data (JWRN_EXTRANEOUS_DATA), and the marker is handed to libjpeg.
reader_t end_scan(reader_t r, j_decompress_ptr cinfo);

/// The reader and the per-scan state at the start of a scan, from where libjpeg's source is.
void reset_scan(huffman_decoder& h, j_decompress_ptr cinfo);

/// An MCU as libjpeg's decode_mcu takes it: a restart first where an interval ends, then the
/// blocks (`Decode`) unless the segment's data ran out (libjpeg leaves those blocks as they are:
/// grey, or what earlier scans made them), then the end of the scan after its last MCU.
template <void (*Decode)(huffman_decoder&, j_decompress_ptr, JBLOCKROW*)>
boolean decode_mcu_with(j_decompress_ptr cinfo, JBLOCKROW* mcu) {
    auto& h = *reinterpret_cast<huffman_decoder*>(cinfo->entropy);
    if (cinfo->restart_interval != 0 && h.restarts_to_go == 0) {
        h.reader = restart(h, h.reader, cinfo);
    }
    if (h.pub.insufficient_data == FALSE) Decode(h, cinfo, mcu);
    if (cinfo->restart_interval != 0) --h.restarts_to_go;
    if (--h.mcus_left == 0 && h.pub.insufficient_data == FALSE) {
        h.reader = end_scan(h.reader, cinfo);
    }
    return TRUE;
}

}  // namespace ferry::ops::codec::jpeg
