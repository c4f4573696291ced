// SPDX-License-Identifier: Apache-2.0
/// \file
/// The two-symbol lookup of ferry's Huffman decoder (ops/image/jpeg_huffman_pairs.cpp,
/// huffman_pairs): every entry of the table, for libjpeg's standard tables, optimized ones and
/// made-up ones, against a plain decode of its bits one symbol at a time; and files whose AC codes
/// are short, long (none within the look-ahead) or shuffled over the lengths, made by recoding
/// the same coefficients with those tables, decoded exactly as libjpeg decodes them, whole and
/// damaged.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include <algorithm>
#include <array>
#include <csetjmp>
#include <cstdlib>
#include <functional>
#include <opencv2/imgcodecs.hpp>
#include <random>
#include <string>
#include <vector>

#include "ferry/ferry.hpp"
#include "libjpeg_reference.hpp"
#include "ops/image/jpeg_huffman.hpp"
#include "support.hpp"

namespace bdata = boost::unit_test::data;
namespace jpeg = ferry::ops::codec::jpeg;
using namespace ops_test;

namespace jpeg_huffman_pairs_test {

/// A DHT table from its code lengths' counts (1 to 16) and its symbols.
JHUFF_TBL table(const std::vector<int>& counts, const std::vector<int>& symbols) {
    JHUFF_TBL t{};
    for (std::size_t l = 0; l < counts.size(); ++l) t.bits[l + 1] = static_cast<UINT8>(counts[l]);
    for (std::size_t i = 0; i < symbols.size(); ++i) t.huffval[i] = static_cast<UINT8>(symbols[i]);
    return t;
}

/// libjpeg's standard AC tables (T.81 K.3): 0 luminance, 1 chrominance.
JHUFF_TBL standard_ac(int which) {
    jpeg_compress_struct c{};
    jpeg_error_mgr err{};
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    const JHUFF_TBL t = *c.ac_huff_tbl_ptrs[which];
    jpeg_destroy_compress(&c);
    return t;
}

/// The standard luminance AC table with its symbols shuffled over its code lengths: large values
/// and long runs behind short codes, EOB and ZRL anywhere.
JHUFF_TBL shuffled_ac(std::uint32_t seed) {
    JHUFF_TBL t = standard_ac(0);
    int n = 0;
    for (int l = 1; l <= 16; ++l) n += t.bits[l];
    std::shuffle(t.huffval, t.huffval + n, std::mt19937(seed));
    return t;
}

/// All 162 AC symbols at 16 bits: no code within the look-ahead.
JHUFF_TBL long_ac() {
    JHUFF_TBL t = standard_ac(0);
    std::fill(std::begin(t.bits), std::end(t.bits), 0);
    t.bits[16] = 162;
    return t;
}

/// A made-up table with codes of every length 1 to 16: EOB at 1 bit, ZRL at 2, then runs and
/// sizes up to 10 value bits.
JHUFF_TBL every_length_ac() {
    return table({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1},
                 {0x00, 0xF0, 0x01, 0x11, 0x02, 0x07, 0x08, 0x0A, 0x21, 0x33, 0x15, 0xF1, 0x03,
                  0x09, 0x05, 0x06});
}

/// A decode of `bits` (the top `room` of them) one symbol at a time from position k0 of a
/// block, as a single-symbol decoder makes it, for up to `most` symbols: positions in zigzag
/// order (past 63 kept apart), the bits used, the next position (64 or more: the block ended).
struct decoded {
    std::array<int, 80> coef{};
    int bits = 0;
    int k = 0;
    int symbols = 0;
    /// The effect on the block and the bits, whatever the count of symbols.
    bool operator==(const decoded& o) const { return coef == o.coef && bits == o.bits && k == o.k; }
};

/// The symbol whose code starts `bits` (of `room`), from the table's canonical codes (T.81 C):
/// its length, or 0 when no code of at most `room` bits starts them.
int code_at(const JHUFF_TBL& t, std::uint32_t bits, int room, int& symbol) {
    std::uint32_t code = 0;
    int p = 0;
    for (int l = 1; l <= room; ++l) {
        for (int i = 0; i < t.bits[l]; ++i, ++p, ++code) {
            if ((bits >> (room - l)) == code) {
                symbol = t.huffval[p];
                return l;
            }
        }
        code <<= 1;
    }
    return 0;
}

/// Decodes whole symbols from the top of `bits` (`room` of them valid) while they fit, up to
/// `most`, each value of a category the pair table holds, stopping after an EOB or at the block's
/// end.
decoded decode_symbols(const JHUFF_TBL& t, std::uint32_t bits, int room, int k0, int most) {
    decoded d;
    d.k = k0;
    while (d.symbols < most && d.k < 64) {
        const int left = room - d.bits;
        const std::uint32_t rest = bits & ((1U << left) - 1);
        int symbol = 0;
        const int l = left == 0 ? 0 : code_at(t, rest, left, symbol);
        if (l == 0) break;
        const int run = symbol >> 4;
        const int s = symbol & 15;
        if (s == 0 && run != 15) {
            d.bits += l;
            d.k = 64;
            ++d.symbols;
            break;
        }
        if (s > jpeg::pair_entry::widest_value || l + s > left) break;
        const auto v = static_cast<int>((rest >> (left - l - s)) & ((1U << s) - 1));
        d.k += run;
        d.coef[static_cast<std::size_t>(std::min(d.k, 79))] = s == 0 ? 0 : jpeg::extend(v, s);
        ++d.k;
        d.bits += l + s;
        ++d.symbols;
    }
    return d;
}

/// What a pair entry does at position k0, as the decoder applies it.
decoded apply(std::uint32_t e, int k0) {
    decoded d;
    int k = k0 + jpeg::pair_entry::run(e);
    d.coef[static_cast<std::size_t>(k)] = jpeg::pair_entry::value(e);
    k += jpeg::pair_entry::step(e);
    d.coef[static_cast<std::size_t>(std::min(k, 79))] = jpeg::pair_entry::value2(e);
    d.k = std::min((k + 1) | (jpeg::pair_entry::ends(e) ? 64 : 0), 64);
    d.bits = jpeg::pair_entry::bits(e);
    return d;
}

struct named_table {
    std::string name;
    JHUFF_TBL table;
};

/// The AC tables of `f` (as libjpeg reads them).
std::vector<named_table> ac_tables_of(const std::string& name, const file_bytes& f) {
    jpeg_decompress_struct d{};
    jpeg_error_mgr err{};
    d.err = jpeg_std_error(&err);
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, f.data(), static_cast<unsigned long>(f.size()));
    jpeg_read_header(&d, TRUE);
    std::vector<named_table> out;
    for (int i = 0; i < NUM_HUFF_TBLS; ++i) {
        if (d.ac_huff_tbl_ptrs[i] != nullptr) {
            out.push_back({name + " AC " + std::to_string(i), *d.ac_huff_tbl_ptrs[i]});
        }
    }
    jpeg_destroy_decompress(&d);
    return out;
}

std::vector<named_table> all_tables() {
    std::vector<named_table> out{
        {"standard luminance", standard_ac(0)},
        {"standard chrominance", standard_ac(1)},
        {"every length", every_length_ac()},
        {"all 16 bits", long_ac()},
        {"codes of 1 and 2 bits", table({1, 1}, {0x01, 0x00})},
        {"one short code", table({1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, {0x01, 0x00})}};
    for (std::uint32_t seed : {1U, 2U, 3U}) {
        out.push_back({"shuffled " + std::to_string(seed), shuffled_ac(seed)});
    }
    const cv::Mat pic = photo(200, 150, 3, 5);
    for (const named_table& t : ac_tables_of(
             "optimized q95",
             encode(".jpg", pic, {cv::IMWRITE_JPEG_QUALITY, 95, cv::IMWRITE_JPEG_OPTIMIZE, 1}))) {
        out.push_back(t);
    }
    for (const named_table& t : ac_tables_of(
             "optimized q50",
             encode(".jpg", pic, {cv::IMWRITE_JPEG_QUALITY, 50, cv::IMWRITE_JPEG_OPTIMIZE, 1}))) {
        out.push_back(t);
    }
    return out;
}

std::vector<std::string> table_names() {
    std::vector<std::string> names;
    for (const named_table& t : all_tables()) names.push_back(t.name);
    return names;
}

JHUFF_TBL table_named(const std::string& name) {
    for (const named_table& t : all_tables()) {
        if (t.name == name) return t.table;
    }
    throw std::logic_error("no table " + name);
}

/// libjpeg transcoding state with an error handler that jumps back (no exit()).
struct transcoder {
    jpeg_decompress_struct d{};
    jpeg_compress_struct c{};
    jpeg_error_mgr err{};
    std::jmp_buf jump{};
    unsigned char* buf = nullptr;
    unsigned long size = 0;
};

[[noreturn]] void on_transcode_error(j_common_ptr c) {
    std::longjmp(*static_cast<std::jmp_buf*>(c->client_data), 1);
}

bool recode(transcoder& t, const file_bytes& f, const std::function<void(JHUFF_TBL&)>& ac,
            bool optimize) {
    if (setjmp(t.jump)) return false;
    jpeg_mem_src(&t.d, f.data(), static_cast<unsigned long>(f.size()));
    jpeg_read_header(&t.d, TRUE);
    jvirt_barray_ptr* coefs = jpeg_read_coefficients(&t.d);
    jpeg_mem_dest(&t.c, &t.buf, &t.size);
    jpeg_copy_critical_parameters(&t.d, &t.c);
    t.c.optimize_coding = optimize ? TRUE : FALSE;
    if (ac) {
        for (int i = 0; i < NUM_HUFF_TBLS; ++i) {
            if (t.c.ac_huff_tbl_ptrs[i] != nullptr) ac(*t.c.ac_huff_tbl_ptrs[i]);
        }
    }
    jpeg_write_coefficients(&t.c, coefs);
    jpeg_finish_compress(&t.c);
    jpeg_finish_decompress(&t.d);
    return true;
}

/// `f`'s coefficients recoded with every AC table replaced by `ac` (or libjpeg's optimized
/// tables): the same pixels, other codes.
file_bytes recoded(const file_bytes& f, const std::function<void(JHUFF_TBL&)>& ac, bool optimize) {
    transcoder t;
    t.d.err = jpeg_std_error(&t.err);
    t.c.err = t.d.err;
    t.err.error_exit = on_transcode_error;
    t.d.client_data = &t.jump;
    t.c.client_data = &t.jump;
    jpeg_create_decompress(&t.d);
    jpeg_create_compress(&t.c);
    const bool ok = recode(t, f, ac, optimize);
    file_bytes out;
    if (ok) out.assign(t.buf, t.buf + t.size);
    jpeg_destroy_compress(&t.c);
    jpeg_destroy_decompress(&t.d);
    std::free(t.buf);
    if (!ok) throw std::runtime_error("libjpeg could not recode the test JPEG");
    return out;
}

std::function<void(JHUFF_TBL&)> replace_with(const JHUFF_TBL& with) {
    return [with](JHUFF_TBL& t) {
        std::copy(std::begin(with.bits), std::end(with.bits), std::begin(t.bits));
        std::copy(std::begin(with.huffval), std::end(with.huffval), std::begin(t.huffval));
    };
}

struct coded_sample {
    std::string name;
    file_bytes file;
};

/// A q85 photo and noise (large values, long codes), recoded with short (optimized), long
/// (16-bit) and shuffled codes.
std::vector<coded_sample> coded_samples() {
    const file_bytes pic = write_jpeg(photo(181, 127, 3, 9), jpeg_subsampling::s420, 85);
    cv::Mat hiss(45, 67, CV_8UC3);
    std::mt19937 rng(5);
    for (auto it = hiss.begin<cv::Vec3b>(); it != hiss.end<cv::Vec3b>(); ++it) {
        const auto v = static_cast<std::uint32_t>(rng());
        *it = cv::Vec3b(static_cast<uchar>(v), static_cast<uchar>(v >> 8),
                        static_cast<uchar>(v >> 16));
    }
    const file_bytes noise = write_jpeg(hiss, jpeg_subsampling::s444, 95);
    std::vector<coded_sample> out;
    for (const auto& [what, f] : {std::pair{"photo", pic}, std::pair{"noise", noise}}) {
        const std::string name = what;
        out.push_back({name + " standard", f});
        out.push_back({name + " short codes", recoded(f, nullptr, true)});
        out.push_back({name + " long codes", recoded(f, replace_with(long_ac()), false)});
        for (std::uint32_t seed : {1U, 2U}) {
            out.push_back({name + " shuffled codes " + std::to_string(seed),
                           recoded(f, replace_with(shuffled_ac(seed)), false)});
        }
    }
    return out;
}

const std::vector<coded_sample>& all_coded() {
    static const std::vector<coded_sample> s = coded_samples();
    return s;
}

std::vector<std::string> coded_names() {
    std::vector<std::string> names;
    for (const coded_sample& s : all_coded()) names.push_back(s.name);
    return names;
}

const file_bytes& coded_named(const std::string& name) {
    for (const coded_sample& s : all_coded()) {
        if (s.name == name) return s.file;
    }
    throw std::logic_error("no sample " + name);
}

/// ferry's RGB decode of `f` at 1/`denom`.
cv::Mat ferry_decode(const file_bytes& f, int denom, bool strict) {
    const ferry::image_info info = ferry::ops::probe_image(as_span(f));
    return to_mat(ferry::ops::decode_image(
        as_span(f),
        {.reduce_to = {(info.width + denom - 1) / denom, (info.height + denom - 1) / denom},
         .strict = strict}));
}

}  // namespace jpeg_huffman_pairs_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(jpeg_huffman_pairs)
using namespace jpeg_huffman_pairs_test;

// Each entry of the pair table, for every pattern of its look-ahead bits, does what decoding
// those bits one symbol at a time does (the same values at the same positions, the same bits
// used, the block ended or not), for as many whole symbols as fit (two at most): none (the
// single-symbol path decodes it) only where not even one fits.
BOOST_DATA_TEST_CASE(every_pair_entry_is_the_symbol_by_symbol_decode_of_its_bits,
                     bdata::make(table_names()), name) {
    const JHUFF_TBL dht = table_named(name);
    jpeg::huffman_table t;
    BOOST_TEST_REQUIRE(jpeg::build_table(dht, false, t));
    jpeg::huffman_pairs p;
    jpeg::build_pairs(t, p);
    constexpr int room = jpeg::huffman_pairs::lookahead;
    int pairs = 0;
    int failures = 0;
    for (std::uint32_t x = 0; x < (1U << room) && failures < 5; ++x) {
        const std::uint32_t e = p.entry[x];
        const decoded want = decode_symbols(dht, x, room, 1, 2);
        if (want.symbols == 0) {
            BOOST_TEST(e == jpeg::pair_entry::fallback, name << ", bits " << x);
            failures += e == jpeg::pair_entry::fallback ? 0 : 1;
            continue;
        }
        const bool same = apply(e, 1) == want;
        BOOST_TEST(same, name << ", bits " << x << ": " << want.symbols << " symbols, " << want.bits
                              << " bits, entry " << std::hex << e);
        failures += same ? 0 : 1;
        pairs += want.symbols == 2 && want.k < 64 ? 1 : 0;
    }
    // Where the table has short codes, most patterns hold two of them.
    if (name.starts_with("standard")) BOOST_TEST(pairs > (1 << room) / 4, name);
}

// The pair table is built again for another table in the same place, and kept for the same.
BOOST_AUTO_TEST_CASE(the_pair_table_follows_its_huffman_table) {
    jpeg::huffman_table t;
    jpeg::huffman_pairs p;
    BOOST_TEST_REQUIRE(jpeg::build_table(standard_ac(0), false, t));
    jpeg::build_pairs(t, p);
    BOOST_TEST_REQUIRE(jpeg::build_table(long_ac(), false, t));
    jpeg::build_pairs(t, p);
    for (std::uint32_t e : p.entry) {
        BOOST_TEST_REQUIRE(e == jpeg::pair_entry::fallback);
    }
    BOOST_TEST_REQUIRE(jpeg::build_table(standard_ac(0), false, t));
    jpeg::build_pairs(t, p);
    jpeg::huffman_pairs fresh;
    jpeg::build_pairs(t, fresh);
    BOOST_TEST(std::equal(std::begin(p.entry), std::end(p.entry), std::begin(fresh.entry)));
}

// Files whose AC codes are all short, all long or shuffled over the lengths (the same
// coefficients recoded): exactly libjpeg's pixels at every DCT scale, decoded by ferry's decoder.
BOOST_DATA_TEST_CASE(files_with_short_long_and_shuffled_codes_decode_as_libjpeg_does,
                     bdata::make(coded_names()), name) {
    const file_bytes& f = coded_named(name);
    for (int denom : {1, 2, 4, 8}) {
        const reference want = libjpeg_decode(f, denom, 0, true);
        BOOST_TEST_REQUIRE(!want.pixels.empty(), name);
        BOOST_TEST(want.warnings == 0, name);
        const auto before = ferry::ops::jpeg_huffman_use().ferry;
        BOOST_TEST(max_abs_diff(ferry_decode(f, denom, true), want.pixels) == 0.0,
                   name << " at 1/" << denom);
        BOOST_TEST(ferry::ops::jpeg_huffman_use().ferry == before + 1, name);
    }
}

// The same files cut short or with bytes changed: a lenient decode is libjpeg's (its slow
// path's, byte for byte), and a strict one fails wherever libjpeg warns.
BOOST_DATA_TEST_CASE(damaged_files_with_other_codes_decode_as_libjpeg_decodes_them,
                     bdata::make(coded_names()), name) {
    const file_bytes& good = coded_named(name);
    const std::size_t from = jpeg_header_length(good);
    const std::size_t to = good.size() - 2;
    std::mt19937 rng(41);
    std::vector<std::pair<std::string, file_bytes>> damaged;
    for (int i = 1; i <= 5; ++i) {
        const std::size_t at = from + (to - from) * static_cast<std::size_t>(i) / 6;
        damaged.emplace_back("cut at " + std::to_string(at),
                             file_bytes(good.begin(), good.begin() + static_cast<long>(at)));
    }
    for (int i = 0; i < 12; ++i) {
        file_bytes f = good;
        const std::size_t at = from + rng() % (to - from);
        f[at] = i % 3 == 0 ? 0xFF : static_cast<std::uint8_t>(rng());
        damaged.emplace_back("byte " + std::to_string(at) + " changed", std::move(f));
    }
    for (const auto& [what, f] : damaged) {
        const reference want = libjpeg_decode(f, 1, 5, false);
        if (want.pixels.empty()) {
            BOOST_CHECK_THROW(ferry_decode(f, 1, false), ferry::decode_error);
            continue;
        }
        BOOST_TEST(max_abs_diff(ferry_decode(f, 1, false), want.pixels) == 0.0,
                   name << ", " << what);
        if (want.warnings > 0) {
            BOOST_CHECK_THROW(ferry_decode(f, 1, true), ferry::decode_error);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
