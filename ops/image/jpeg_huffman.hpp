// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's decoder of baseline Huffman-coded JPEG data, put in the place of libjpeg-turbo's own
/// (jpeg_huffman.cpp). libjpeg keeps doing everything else (markers, inverse DCT, upsampling,
/// colour conversion, cropping and skipping); only the step from entropy-coded bytes to each
/// block's quantized coefficients is ours, so the pixels are libjpeg's, bit for bit.
///
/// Why: that step is two thirds of the CPU of a decode + crop + resize of a photo, and
/// libjpeg-turbo 2.1's decoder takes several data-dependent branches per coefficient. Ours
/// decodes a coefficient's code and its value bits with one table lookup (10 bits of
/// look-ahead), and refills its bit buffer 8 bytes at a time where no 0xFF byte is near. What
/// bounds it then is the chain from one lookup to the next (look up, shift the bits, look up:
/// some 7-8 cycles): so AC coefficients are first looked up two at a time (huffman_pairs, 11 bits
/// of look-ahead), which halves the steps where codes are short, as most are in a photograph at
/// quality 75-90; what does not fit there (long codes, large values, the end of a block) takes
/// the one-symbol lookup. On perf/jpeg_decode's q90 set, 53% of the AC lookups decode two
/// coefficients, and there are 37% fewer lookups than with one coefficient each (counted once,
/// by hand); a whole decode takes 10% less time (perf/media/README.md).
///
/// How it is plugged in: `cinfo->entropy` points to an object that starts with libjpeg-turbo's
/// `struct jpeg_entropy_decoder` as the version built against lays it out (jpeg_abi.hpp: 2.x
/// and 3.x differ), when the libjpeg loaded at run time has that layout. libjpeg reaches the
/// entropy decoder only through those members. For a file of one sequential Huffman scan (8-bit,
/// with or without restart markers) it is done after `jpeg_start_decompress`. A file of several
/// scans (progressive, or sequential with components in scans of their own) is read whole
/// inside `jpeg_start_decompress`: there the progress monitor puts it in place, and each scan is
/// started by libjpeg's own decoder first (jpeg_progressive.cpp). Arithmetic coding, lossless
/// and 12-bit files keep libjpeg's decoder. `FERRY_JPEG_HUFFMAN=libjpeg` in the environment
/// turns it off. Which decoder each decode used is counted (jpeg_counts.cpp).
///
/// Damage is reported as libjpeg reports it, through its warnings (so that `strict` decoding
/// fails and lenient decoding goes on with the same grey blocks): running into a marker
/// (JWRN_HIT_MARKER), the data ending (the memory source's JWRN_JPEG_EOF), bytes before a
/// restart marker (JWRN_EXTRANEOUS_DATA), a restart marker out of sequence (libjpeg's own
/// resync_to_restart decides, and warns), and a code that is not in the table
/// (JWRN_HUFF_BAD_CODE, which libjpeg-turbo's fast path does not report). Two more than libjpeg
/// reports: that code, and any byte between the scan's last block and the marker after it
/// (JWRN_EXTRANEOUS_DATA; libjpeg-turbo warns only about those its look-ahead of up to 7 bytes
/// has not read, so up to 6 such bytes pass it silently in the tests).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

#include <jpeglib.h>

#include "jpeg_abi.hpp"

namespace ferry::ops::codec::jpeg {

/// One Huffman table as this decoder reads it.
struct huffman_table {
    static constexpr int lookahead = 10;
    /// By the next `lookahead` bits: bits 0-7 the bits to consume; bits 8-11 the zero run;
    /// bits 12-13 the kind (see jpeg_huffman.cpp); bits 16-31 the coefficient's value (a
    /// complete entry) or the symbol (a code whose value bits do not fit).
    std::int32_t fast[1 << lookahead];
    std::int32_t maxcode[18];    ///< largest code of each length, -1 if none (17: sentinel)
    std::int32_t valoffset[18];  ///< symbol index of a code of each length, minus the code
    std::uint8_t symbols[256];
    /// The libjpeg table these were made from (counts by length, then symbols): most files of
    /// a dataset share their tables, and the next file with the same ones reuses these.
    std::uint8_t made_from[17 + 256];
    bool made = false;
};

/// The kinds of huffman_table::fast entries (bits 12-13).
namespace table_entry {
inline constexpr std::int32_t kind_mask = 3 << 12;
/// Code and value bits: consume, skip the run, store.
inline constexpr std::int32_t complete = 0;
/// EOB (any AC symbol with no value bits but ZRL); the run field holds its r (EOBr, which a
/// progressive scan reads as the start of a run of 2^r blocks).
inline constexpr std::int32_t end_of_block = 1 << 12;
/// Code only: the value bits follow.
inline constexpr std::int32_t partial = 2 << 12;
/// Longer than the look-ahead.
inline constexpr std::int32_t long_code = 3 << 12;
}  // namespace table_entry

/// Two AC coefficients in one lookup (jpeg_huffman_pairs.cpp): by the next `lookahead` bits, the
/// first one or two symbols they hold when their codes and value bits all fit in them (and each
/// value in 7 signed bits). The decoder's chain from one lookup to the next (look up, shift,
/// look up) is its bound; where codes are short, half as many steps cover a block. 11 bits: the
/// two AC tables of an image take 16 KiB of L1; 12 bits (32 KiB, a whole L1 of many x86 cores)
/// measured no faster on perf/jpeg_decode.
struct huffman_pairs {
    static constexpr int lookahead = 11;
    /// See pair_entry for the layout.
    std::uint32_t entry[1 << lookahead];
    /// The DHT table these were made from (huffman_table::made_from).
    std::uint8_t made_from[17 + 256];
    bool made = false;
};

/// The fields of a huffman_pairs entry. At position k of a block, an entry stores its first value
/// at k + run, its second `step` positions further on (0: the first again, for an entry of one
/// symbol), and goes on after the second, or ends the block. Only where k + run <= 62, so that the
/// first symbol leaves the block unfinished, as the second (or its EOB) needs; elsewhere, and for
/// `fallback` entries, the decoder takes one symbol from huffman_table::fast instead.
///  * bits 0-5: the bits to consume (codes and value bits of both; at most 12, so bits 4-5 are 0:
///    the shift by them needs no mask, x86 masks a 64-bit shift's count to 6 bits);
///  * bits 6-11: the first symbol's zero run (ZRL: 15, value 0), or 63 (`fallback`): a first
///    symbol whose code or value bits do not fit, or whose value needs more than 7 bits;
///  * bits 12-16: `step`, the second symbol's run + 1 (ZRL: 16), or 0 when there is none;
///  * bit 17: the block ends after these (EOB first, or after the first symbol);
///  * bits 18-24, 25-31: the two values (signed, 7 bits: categories up to 6, which leaves out
///    almost nothing, as a category-7 value and a code rarely fit in the look-ahead at all), 0
///    for EOB and ZRL.
/// An EOB first stores 0 where it stands: a coefficient not yet decoded, which is 0 already.
namespace pair_entry {
inline constexpr std::uint32_t fallback = 63U << 6;
/// The largest category (value bits) of a value an entry holds.
inline constexpr int widest_value = 6;
constexpr std::uint32_t make(int bits, int run, int value, int step, int value2, bool ends) {
    return static_cast<std::uint32_t>(bits) | static_cast<std::uint32_t>(run) << 6 |
           static_cast<std::uint32_t>(step) << 12 | static_cast<std::uint32_t>(ends) << 17 |
           (static_cast<std::uint32_t>(value) & 0x7F) << 18 |
           (static_cast<std::uint32_t>(value2) & 0x7F) << 25;
}
constexpr int bits(std::uint32_t e) {
    return static_cast<int>(e & 63);
}
constexpr int run(std::uint32_t e) {
    return static_cast<int>((e >> 6) & 63);
}
constexpr int step(std::uint32_t e) {
    return static_cast<int>((e >> 12) & 31);
}
constexpr bool ends(std::uint32_t e) {
    return ((e >> 17) & 1) != 0;
}
constexpr int value(std::uint32_t e) {
    return static_cast<std::int32_t>(e << 7) >> 25;
}
constexpr int value2(std::uint32_t e) {
    return static_cast<std::int32_t>(e) >> 25;
}
}  // namespace pair_entry

/// The signed value of the `s` bits `v` of a category-`s` coefficient (T.81 F.12; libjpeg's
/// HUFF_EXTEND).
constexpr int extend(int v, int s) {
    return v < (1 << (s - 1)) ? v - (1 << s) + 1 : v;
}

/// Fills `out` from the DHT table `t` (jpeg_huffman_table.cpp), or keeps it when `out` was made
/// from the same table. False for a table T.81 forbids (as libjpeg refuses it): more than 256
/// symbols, a code that does not fit its length or is all ones, a DC symbol above 15.
bool build_table(const JHUFF_TBL& t, bool is_dc, huffman_table& out);

/// Fills `out` from the AC table `t`, made by build_table (jpeg_huffman_pairs.cpp), or keeps it
/// when `out` was made from the same DHT table.
void build_pairs(const huffman_table& t, huffman_pairs& out);

/// Which entropy decoder a decode got: ferry's, or libjpeg's and why.
enum class entropy_choice : std::uint8_t {
    ferry,
    switched_off,      ///< FERRY_JPEG_HUFFMAN=libjpeg
    not_baseline,      ///< a scan ferry's decoder does not cover (arithmetic, lossless, ...)
    library_mismatch,  ///< the loaded libjpeg's layout is not the one built for (jpeg_abi.hpp)
    table_refused,     ///< a Huffman table build_table refuses
    ferry_scans,       ///< ferry's, for every scan of a file of several (progressive ones)
    /// a file of several scans, one of which ferry's decoder did not take: libjpeg's decoded it
    /// and the rest
    scan_refused,
};

/// The decoder's state: the entropy-decoder header libjpeg calls, then ours. One per thread's
/// decompressor (decoder_state), reused from image to image.
struct huffman_decoder {
    /// What libjpeg calls: must stay first.
    entropy_decoder_header pub;

    huffman_table dc[NUM_HUFF_TBLS];
    huffman_table ac[NUM_HUFF_TBLS];
    huffman_pairs ac_pairs[NUM_HUFF_TBLS];
    /// Per block of an MCU: its tables, its component in the scan, what libjpeg needs of it.
    struct block_plan {
        const huffman_table* dc = nullptr;
        const huffman_table* ac = nullptr;
        const std::uint32_t* pairs = nullptr;  ///< ac's huffman_pairs::entry
        int component = 0;
        bool dc_needed = false;
        bool ac_needed = false;
    } blocks[D_MAX_BLOCKS_IN_MCU];
    int blocks_in_mcu = 0;
    int last_dc[MAX_COMPS_IN_SCAN] = {};
    unsigned int restarts_to_go = 0;  ///< MCUs left in this restart interval
    std::uint64_t mcus_left = 0;      ///< MCUs left in the scan
    int next_restart = 0;             ///< the number (0-7) of the next RSTn marker expected

    /// The bit reader (copied to locals while an MCU is decoded).
    struct bit_reader {
        std::uint64_t acc = 0;  ///< `bits` valid bits at the top, the next to read first
        int bits = 0;
        int fake = 0;  ///< the lowest `fake` valid bits are zeros put after a marker
        bool at_marker = false;
        const std::uint8_t* next = nullptr;      ///< the next byte to read
        const std::uint8_t* end = nullptr;       ///< the end of the source's buffer
        const std::uint8_t* fast_end = nullptr;  ///< 8-byte loads stay before this
    } reader;
    bool bad_code = false;  ///< a code not in its table, in the MCU being decoded

    // Files of several scans (jpeg_progressive.cpp).
    unsigned int eob_run = 0;  ///< blocks left in an EOB run of a progressive AC scan
    int ss = 0;                ///< the scan's spectral band, Ss..Se
    int se = 0;
    int al = 0;  ///< the scan's point transform
    /// libjpeg's own entropy decoder of the file, which starts each scan (its start_pass).
    jpeg_entropy_decoder* library = nullptr;
    /// Set by prepare_scans: the progress monitor's next call puts ferry's decoder in place.
    bool take_over_pending = false;
    entropy_choice scans_choice = entropy_choice::ferry_scans;  ///< what the file got
};

/// Puts `h` in the place of libjpeg's entropy decoder on `d`, just started
/// (`jpeg_start_decompress`), when the scan is one it decodes and the loaded libjpeg has the
/// layout ferry was built for. Returns what it chose.
entropy_choice use_ferry_huffman(jpeg_decompress_struct& d, huffman_decoder& h);

/// Sets `h` up for the sequential Huffman scan `d` is at (tables, blocks, reader, its
/// decode_mcu), or says why ferry's decoder does not take it (jpeg_huffman.cpp).
entropy_choice plan_sequential_scan(jpeg_decompress_struct& d, huffman_decoder& h);

/// Whether `FERRY_JPEG_HUFFMAN=libjpeg` is set (read at each call).
bool huffman_switched_off();

/// For a file of several scans (progressive, or sequential with components in scans of their
/// own), whose header `d` has read and which jpeg_start_decompress reads whole: `ferry_scans`
/// when ferry's decoder is to take its scans (then the progress monitor calls take_over_scans
/// at its first call, from jpeg_start_decompress, before any scan data is read), else why not
/// (jpeg_progressive.cpp). After jpeg_start_decompress, `h.scans_choice` says what it got.
entropy_choice prepare_scans(jpeg_decompress_struct& d, huffman_decoder& h);

/// Puts `h` in the place of libjpeg's entropy decoder of `d`, from the progress monitor, once
/// after prepare_scans: it takes the scan libjpeg has started, and starts each later one through
/// libjpeg's own start_pass (its scan checks, its `coef_bits`), then decodes it.
void take_over_scans(jpeg_decompress_struct& d, huffman_decoder& h);

/// For tests: whether AC refinement scans may use BMI2's PDEP where the CPU runs it fast (the
/// default), or must take the portable select; returns whether PDEP is used from now on.
bool refine_with_pdep(bool allowed) noexcept;

/// Counts `choice` (jpeg_counts.cpp): process-wide (`ops::jpeg_huffman_use()`) and in the
/// running stage call's counters (`stage_stats::counters`).
void count(entropy_choice choice) noexcept;

}  // namespace ferry::ops::codec::jpeg
