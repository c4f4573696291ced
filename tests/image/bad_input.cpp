// SPDX-License-Identifier: Apache-2.0
/// \file
/// Bad input to decode_image: empty, truncated, foreign and oversized files each give a
/// ferry::decode_error naming the cause, promptly and before any large allocation; lenient
/// decoding of a truncated JPEG; and a corruption matrix (every sample truncated and
/// byte-flipped) that must only ever fail cleanly or return a valid image.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <climits>
#include <functional>
#include <map>
#include <opencv2/imgcodecs.hpp>
#include <random>

#include "../support/damaged_copies.hpp"
#include "samples.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;
using ferry::ops::decode_image;
using ferry::ops::probe_image;

// Named, not anonymous: data test cases are templates with external linkage.
namespace bad_input_test {

/// Generous bound for "refused before decoding": a header check takes microseconds, allocating
/// and touching gigabytes takes seconds (sanitizer builds are slower, this still separates them).
constexpr auto prompt = std::chrono::seconds(2);

/// Words a message about a truncated file should contain (one of).
const std::vector<std::string_view> truncation_words{"truncat", "premature", "end of"};
/// Words a message about an unknown format should contain (one of).
const std::vector<std::string_view> unsupported_words{"unsupported", "not a supported"};
/// Words a message about a too-large image should contain (one of).
const std::vector<std::string_view> size_limit_words{"max_pixels", "megapixel"};

file_bytes prefix(const file_bytes& f, std::size_t n) {
    return {f.begin(), f.begin() + static_cast<std::ptrdiff_t>(n)};
}

/// A file whose header declares `width x height` for the format of `name`'s sample.
file_bytes oversized(const std::string& format, std::uint32_t width, std::uint32_t height) {
    if (format == "jpeg") {
        return jpeg_declaring(sample_named("jpeg_baseline").file, static_cast<int>(width),
                              static_cast<int>(height));
    }
    if (format == "png") return png_declaring(sample_named("png_rgb").file, width, height);
    if (format == "webp") {
        return webp_lossless_declaring(sample_named("webp_lossless").file, static_cast<int>(width),
                                       static_cast<int>(height));
    }
    return bmp_declaring(sample_named("bmp_24bit").file, static_cast<std::int32_t>(width),
                         static_cast<std::int32_t>(height));
}

/// One decode of damaged bytes: what happened.
enum class outcome { image, decode_error, other };

/// Decodes `f`; anything but a decode_error or a valid image (right format, sane size within
/// `options.max_pixels`) is recorded as a failure naming `what`.
outcome decode_damaged(const file_bytes& f, const ferry::decode_options& options,
                       const std::string& what) {
    try {
        const ferry::image img = decode_image(as_span(f), options);
        const bool valid =
            !img.empty() && img.width() > 0 && img.height() > 0 && img.format() == options.format &&
            static_cast<std::uint64_t>(img.width()) * static_cast<std::uint64_t>(img.height()) <=
                options.max_pixels &&
            img.data().size() == static_cast<std::size_t>(img.height()) * img.row_bytes();
        BOOST_TEST(valid, what << ": returned an invalid image " << img.width() << "x"
                               << img.height() << "x" << img.channels());
        return outcome::image;
    } catch (const ferry::decode_error&) {
        return outcome::decode_error;
    } catch (const std::exception& e) {
        BOOST_ERROR(what << ": threw " << typeid(e).name() << ": " << e.what());
    } catch (...) {
        BOOST_ERROR(what << ": threw a non-std exception");
    }
    return outcome::other;
}

/// Probes `f`: only a decode_error or a result may come out.
outcome probe_damaged(const file_bytes& f, const std::string& what) {
    try {
        (void)probe_image(as_span(f));
        return outcome::image;
    } catch (const ferry::decode_error&) {
        return outcome::decode_error;
    } catch (const std::exception& e) {
        BOOST_ERROR(what << ": probe threw " << typeid(e).name() << ": " << e.what());
    } catch (...) {
        BOOST_ERROR(what << ": probe threw a non-std exception");
    }
    return outcome::other;
}

}  // namespace bad_input_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(bad_input)
using namespace bad_input_test;

// Zero bytes are a decode_error that says the input is empty.
BOOST_AUTO_TEST_CASE(empty_input_is_a_decode_error_saying_empty) {
    BOOST_CHECK_THROW((void)decode_image({}), ferry::decode_error);
    const std::string msg =
        expect_throw<ferry::decode_error>([] { (void)decode_image({}); }, "empty input").what();
    BOOST_TEST(mentions(msg, {"empty"}), "message: " << msg);
    const std::string probe_msg =
        expect_throw<ferry::decode_error>([] { (void)probe_image({}); }, "probe of empty input")
            .what();
    BOOST_TEST(mentions(probe_msg, {"empty"}), "message: " << probe_msg);
}

// A file cut anywhere, including inside its header, is a decode_error that says so.
BOOST_DATA_TEST_CASE(truncated_files_are_decode_errors_saying_truncated, bdata::make(all_samples),
                     name) {
    const sample& s = sample_named(name);
    std::vector<std::size_t> cuts{12, 20};  // inside every format's header
    // Into the pixel data; not the last few bytes, where a PNG only loses its IEND chunk.
    for (int k = 1; k <= 9; ++k) cuts.push_back(s.file.size() * static_cast<std::size_t>(k) / 10);
    for (const std::size_t n : cuts) {
        const file_bytes cut = prefix(s.file, n);
        const std::string what = name + " cut to " + std::to_string(n) + " of " +
                                 std::to_string(s.file.size()) + " bytes";
        BOOST_CHECK_THROW((void)decode_image(as_span(cut)), ferry::decode_error);
        const std::string msg =
            expect_throw<ferry::decode_error>([&] { (void)decode_image(as_span(cut)); }, what)
                .what();
        if (!msg.empty()) {
            BOOST_TEST(mentions(msg, truncation_words), what << ": message: " << msg);
        }
    }
}

// A damaged file leaves nothing behind: good files of the same format decode afterwards, on
// the same thread (decoders that keep per-thread state must reset it after an error).
BOOST_DATA_TEST_CASE(a_bad_file_does_not_break_later_decodes,
                     bdata::make(std::vector<std::string>{"jpeg_baseline", "jpeg_progressive",
                                                          "jpeg_cmyk", "png_rgb", "webp_lossy",
                                                          "bmp_24bit"}),
                     name) {
    const sample& s = sample_named(name);
    const cv::Mat want = reference_decode(s.file, cv::IMREAD_COLOR);
    // Cuts inside the header (for JPEG: inside its quantization and Huffman tables, where the
    // header parser itself fails) and inside the pixel data; and a header overwritten with 0xFF.
    std::vector<std::pair<std::string, file_bytes>> bad;
    for (const std::size_t n : {std::size_t{20}, std::size_t{30}, std::size_t{60}, std::size_t{100},
                                std::size_t{150}, std::size_t{300}, s.file.size() / 2}) {
        bad.emplace_back("its first " + std::to_string(n) + " bytes", prefix(s.file, n));
    }
    file_bytes smeared = s.file;
    std::fill(smeared.begin() + 16, smeared.begin() + 48, std::uint8_t{0xFF});
    bad.emplace_back("it with bytes 16-47 set to 0xFF", std::move(smeared));

    for (const auto& [how, bytes] : bad) {
        const std::string what = name + " after decoding " + how;
        BOOST_CHECK_THROW((void)decode_image(as_span(bytes)), ferry::decode_error);
        try {
            check_pixels(decode_image(as_span(s.file)), want, 1.0, -1, what);
            BOOST_TEST(probe_image(as_span(s.file)).width == s.width, what);
        } catch (const ferry::decode_error& e) {
            BOOST_ERROR(what << ": the good file failed: " << e.what());
        }
    }
}

// A header cut short is a decode_error for probe_image too (not a 0 x 0 answer).
BOOST_DATA_TEST_CASE(probe_of_a_cut_header_is_a_decode_error, bdata::make(all_samples), name) {
    const file_bytes cut = prefix(sample_named(name).file, 20);
    try {
        const ferry::image_info info = probe_image(as_span(cut));
        BOOST_ERROR(name << " cut to 20 bytes probed as " << info.format << " " << info.width << "x"
                         << info.height);
    } catch (const ferry::decode_error&) {
    }
}

// Sniffing is by content: PNG bytes in a file named x.jpg (and JPEG bytes named x.png) decode.
BOOST_AUTO_TEST_CASE(format_comes_from_the_bytes_not_the_file_name) {
    const temp_folder dir;
    const sample& png = sample_named("png_rgb");
    const sample& jpeg = sample_named("jpeg_baseline");
    const ferry::bytes png_bytes = ferry::ops::read_file(dir.write("x.jpg", png.file));
    check_pixels(decode_image(png_bytes), png.source, 0, 0, "png named x.jpg");
    BOOST_TEST(probe_image(png_bytes).format == "png");
    const ferry::bytes jpeg_bytes = ferry::ops::read_file(dir.write("x.png", jpeg.file));
    check_pixels(decode_image(jpeg_bytes), reference_decode(jpeg.file, cv::IMREAD_COLOR), 1.0, -1,
                 "jpeg named x.png");
}

// Text, random bytes and formats ferry does not read are decode_errors saying "unsupported".
BOOST_AUTO_TEST_CASE(foreign_bytes_are_unsupported) {
    std::mt19937 rng(7);
    file_bytes noise(4096);
    for (auto& b : noise) b = static_cast<std::uint8_t>(rng());
    const std::string gif = "GIF89a\x01\x00\x01\x00\x80\x00\x00";
    const std::string tiff("II*\0\x08\0\0\0", 8);
    const std::vector<std::pair<std::string, file_bytes>> inputs{
        {"text",
         [] {
             const std::string t = "Lorem ipsum dolor sit amet, this is not a picture.\n";
             return file_bytes(t.begin(), t.end());
         }()},
        {"random bytes", noise},
        {"GIF header", file_bytes(gif.begin(), gif.end())},
        {"TIFF header", file_bytes(tiff.begin(), tiff.end())},
        {"one byte", file_bytes{0xFF}},
    };
    for (const auto& [what, bytes] : inputs) {
        const std::string msg =
            expect_throw<ferry::decode_error>([&] { (void)decode_image(as_span(bytes)); }, what)
                .what();
        BOOST_TEST(mentions(msg, unsupported_words), what << ": message: " << msg);
        BOOST_CHECK_THROW((void)probe_image(as_span(bytes)), ferry::decode_error);
    }
}

// A header declaring more than max_pixels is refused promptly (no giant allocation), saying why.
BOOST_DATA_TEST_CASE(oversized_header_is_refused_before_decoding,
                     bdata::make({"jpeg", "png", "webp", "bmp"}), format) {
    // 60000 x 60000 = 3.6 gigapixels; lossless WebP headers stop at 16384 x 16384 (268 Mpx),
    // still over the default max_pixels of 128 M.
    const std::uint32_t side = std::string(format) == "webp" ? 16384 : 60000;
    const file_bytes f = oversized(format, side, side);
    const auto start = std::chrono::steady_clock::now();
    const std::string msg =
        expect_throw<ferry::decode_error>(
            [&] { (void)decode_image(as_span(f)); },
            std::string(format) + " declaring " + std::to_string(side) + "x" + std::to_string(side))
            .what();
    const auto took = std::chrono::steady_clock::now() - start;
    BOOST_TEST(mentions(msg, size_limit_words), format << ": message: " << msg);
    BOOST_TEST(took < prompt,
               format << ": took " << std::chrono::duration<double>(took).count() << " s");
}

// probe_image reports an oversized image's declared size (so it can be filtered out early).
BOOST_DATA_TEST_CASE(probe_reports_the_declared_size_of_an_oversized_image,
                     bdata::make({"jpeg", "png", "webp"}), format) {
    const std::uint32_t side = std::string(format) == "webp" ? 16384 : 60000;
    const ferry::image_info info = probe_image(as_span(oversized(format, side, side)));
    BOOST_TEST(info.format == format);
    BOOST_TEST(info.width == static_cast<int>(side));
    BOOST_TEST(info.height == static_cast<int>(side));
}

// max_pixels applies to every format and counts the declared size: over it is an error, at it
// decodes.
BOOST_DATA_TEST_CASE(max_pixels_is_enforced_for_small_images, bdata::make(all_samples), name) {
    const sample& s = sample_named(name);
    const std::string msg = expect_throw<ferry::decode_error>(
                                [&] { (void)decode_image(as_span(s.file), {.max_pixels = 100}); },
                                name + " max_pixels 100")
                                .what();
    BOOST_TEST(mentions(msg, size_limit_words), name << ": message: " << msg);
    const auto exact = static_cast<std::uint64_t>(s.width) * static_cast<std::uint64_t>(s.height);
    BOOST_CHECK_NO_THROW((void)decode_image(as_span(s.file), {.max_pixels = exact}));
    BOOST_CHECK_THROW((void)decode_image(as_span(s.file), {.max_pixels = exact - 1}),
                      ferry::decode_error);
}

// A BMP height of INT32_MIN (no positive counterpart in 32 bits; found by the fuzzer through
// decode_random_resized_crop, which trusted the probe's size) is a bad size, not a negative one.
BOOST_AUTO_TEST_CASE(bmp_height_int32_min_is_a_bad_size) {
    const file_bytes f = bmp_declaring(sample_named("bmp_24bit").file, 16, INT32_MIN);
    for (const auto& [what, call] : std::vector<std::pair<std::string, std::function<void()>>>{
             {"probe_image", [&] { (void)probe_image(as_span(f)); }},
             {"decode_image", [&] { (void)decode_image(as_span(f)); }},
             {"decode_random_resized_crop", [&] {
                  std::mt19937_64 rng(1);
                  (void)ferry::ops::decode_random_resized_crop(as_span(f), 8, 8, rng);
              }}}) {
        BOOST_TEST_CONTEXT(what) {
            BOOST_CHECK_EXCEPTION(call(), ferry::decode_error, [](const ferry::decode_error& e) {
                return std::string_view(e.what()).find("bad size") != std::string_view::npos;
            });
        }
    }
}

// max_pixels limits the file's size, not the output's: a reduced decode of an over-limit JPEG
// is still refused.
BOOST_AUTO_TEST_CASE(max_pixels_counts_the_stored_size_not_the_reduced_one) {
    BOOST_CHECK_THROW(
        (void)decode_image(as_span(large_jpeg()), {.reduce_to = {50, 38}, .max_pixels = 100'000}),
        ferry::decode_error);
    BOOST_CHECK_THROW(
        (void)decode_image(as_span(large_jpeg()), {.resize = {20, 20}, .max_pixels = 100'000}),
        ferry::decode_error);
}

// The output is held to max_pixels as the input is: a resize or reduce_to target over it (a typo
// that would allocate 30 GB) is an invalid_argument before anything is decoded.
BOOST_AUTO_TEST_CASE(a_target_over_max_pixels_is_refused_before_decoding) {
    for (const auto& [name, options] : std::vector<std::pair<std::string, ferry::decode_options>>{
             {"resize", {.resize = {100000, 100000}}},
             {"reduce_to", {.reduce_to = {100000, 100000}}}}) {
        const std::string msg =
            expect_throw<ferry::invalid_argument>(
                [&] { (void)decode_image(as_span(large_jpeg()), options); }, name)
                .what();
        BOOST_TEST(msg == "decode_image: decode_options::" + name +
                              " = {100000, 100000} is 10000000000 pixels, over max_pixels "
                              "(128000000)");
    }
    // A target of exactly max_pixels is taken; one row more is not.
    const auto size = ferry::ops::probe_image(as_span(large_jpeg())).oriented_size();
    const auto cap =
        static_cast<std::uint64_t>(size.width) * static_cast<std::uint64_t>(size.height);
    const auto at_cap = decode_image(as_span(large_jpeg()),
                                     {.resize = {size.width, size.height}, .max_pixels = cap});
    BOOST_TEST((at_cap.width() == size.width && at_cap.height() == size.height));
    BOOST_CHECK_THROW(
        (void)decode_image(as_span(large_jpeg()),
                           {.resize = {size.width, size.height + 1}, .max_pixels = cap}),
        ferry::invalid_argument);
}

// strict = false accepts a truncated JPEG: full size, and the rows that were there are right.
BOOST_AUTO_TEST_CASE(lenient_decoding_returns_a_truncated_jpeg_at_full_size) {
    const file_bytes& full = large_jpeg();
    const file_bytes cut = prefix(full, full.size() * 6 / 10);
    BOOST_CHECK_THROW((void)decode_image(as_span(cut)), ferry::decode_error);
    const ferry::image img = decode_image(as_span(cut), {.strict = false});
    BOOST_TEST_REQUIRE(img.width() == 400);
    BOOST_TEST_REQUIRE(img.height() == 300);
    // The first quarter of the rows lies well inside the 60% of the data that is there.
    const cv::Mat reference = reference_decode(full, cv::IMREAD_COLOR);
    const cv::Rect top(0, 0, 400, 75);
    const double mean = mean_abs_diff(to_mat(img)(top), reference(top));
    BOOST_TEST(mean <= 1.0, "top rows differ from the full decode by " << mean);

    // Progressive too (its early scans cover the whole picture).
    const file_bytes& prog = sample_named("jpeg_progressive").file;
    const ferry::image p = decode_image(as_span(prefix(prog, prog.size() / 2)), {.strict = false});
    BOOST_TEST(p.width() == 97);
    BOOST_TEST(p.height() == 61);
}

// strict = false keeps the scans a progressive JPEG holds wherever it is cut after its first
// scan, also inside a table between two scans (libjpeg reads its fake end marker as the table
// and fails there; the decoder decodes up to the table instead). Strict decoding fails.
BOOST_AUTO_TEST_CASE(lenient_decoding_keeps_a_progressive_jpeg_cut_between_scans) {
    const file_bytes& prog = sample_named("jpeg_progressive").file;
    const ferry::image whole = decode_image(as_span(prog));
    // Where the second scan starts: the first SOS, then the next marker after its data.
    std::size_t second = 0;
    for (std::size_t i = 2, sos = 0; i + 1 < prog.size() && second == 0; ++i) {
        if (prog[i] != 0xFF) continue;
        if (prog[i + 1] == 0xDA && sos == 0) {
            sos = i;
        } else if (sos != 0 && prog[i + 1] != 0x00 && (prog[i + 1] < 0xD0 || prog[i + 1] > 0xD7)) {
            second = i;
        }
    }
    BOOST_TEST_REQUIRE(second > 0);
    int cuts = 0;
    for (std::size_t n = second + 1; n < prog.size(); n += 7) {
        const file_bytes cut = prefix(prog, n);
        BOOST_CHECK_THROW((void)decode_image(as_span(cut)), ferry::decode_error);
        const ferry::image img = decode_image(as_span(cut), {.strict = false});
        BOOST_TEST(img.size() == whole.size(), "cut at " << n);
        ++cuts;
    }
    BOOST_TEST(cuts > 10);
}

// Every sample, truncated at 10 offsets and with 20 seeded byte flips (10 anywhere, 10 in the
// first 100 bytes), strict and lenient: each decode throws decode_error or returns a valid image,
// and probe_image throws decode_error or answers. Nothing else, no crash (this runs under ASan).
BOOST_AUTO_TEST_CASE(corrupt_files_fail_cleanly_or_decode_to_valid_images) {
    std::map<std::string, std::map<outcome, int>> counts;
    int total_images = 0;
    int total_errors = 0;
    int strict_cut_images = 0;
    for (const sample& s : samples()) {
        const auto damaged = ferry_test::damaged_copies(
            s.file, {.cuts = 10,
                     .flips = 20,
                     .header_flips = 10,
                     .header_bytes = 100,
                     .seed = 20240611U + static_cast<std::uint32_t>(s.file.size())});
        // Room for a damaged header to claim a somewhat larger picture, not for gigapixels.
        const std::uint64_t limit = 16ULL * static_cast<std::uint64_t>(s.width * s.height);
        for (const auto& copy : damaged) {
            const std::string what = s.name + " " + copy.how;
            for (const bool strict : {true, false}) {
                const outcome o = decode_damaged(copy.data, {.max_pixels = limit, .strict = strict},
                                                 what + (strict ? " (strict)" : " (lenient)"));
                ++counts[s.name][o];
                if (o == outcome::image) ++total_images;
                if (o == outcome::decode_error) ++total_errors;
                // Strict mode notices every cut: the data a decoder needs is missing.
                if (strict && copy.cut && o == outcome::image) {
                    ++strict_cut_images;
                    BOOST_ERROR(what << " (strict): decoded although cut");
                }
            }
            (void)probe_damaged(copy.data, what);
        }
        // Damage leaves no trace: the intact file still decodes afterwards, on this thread.
        try {
            check_pixels(decode_image(as_span(s.file)), reference_decode(s.file, cv::IMREAD_COLOR),
                         1.0, -1, s.name + " intact, after its damaged copies");
        } catch (const ferry::decode_error& e) {
            BOOST_ERROR(s.name << " intact, after its damaged copies: " << e.what());
        }
    }
    for (const auto& [name, c] : counts) {
        const auto get = [&](outcome o) {
            const auto it = c.find(o);
            return it == c.end() ? 0 : it->second;
        };
        BOOST_TEST_MESSAGE("corruption matrix " << name << ": " << get(outcome::image)
                                                << " images, " << get(outcome::decode_error)
                                                << " decode_errors, " << get(outcome::other)
                                                << " other");
        BOOST_TEST(get(outcome::other) == 0, name);
    }
    BOOST_TEST_MESSAGE("corruption matrix total: " << total_images << " images, " << total_errors
                                                   << " decode_errors");
    BOOST_TEST(strict_cut_images == 0);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
