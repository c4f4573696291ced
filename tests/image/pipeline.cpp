// SPDX-License-Identifier: Apache-2.0
/// \file
/// The ops in a pipeline: read_file on I/O threads, decode_image under skip. Every good file is
/// delivered in order, every bad one is in failures() with its item index, and the counts add
/// up; decode + resize + batch + collate gives N x H x W x C batches.
#include <algorithm>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <ferry/ferry.hpp>
#include <opencv2/imgcodecs.hpp>

#include "samples.hpp"

namespace bdata = boost::unit_test::data;
using namespace ops_test;

// Named, not anonymous: data test cases are templates with external linkage.
namespace pipeline_test {

/// A logger that keeps nothing: the test reads failures() instead.
const ferry::logger quiet = [](ferry::log_level, std::string_view) {};

/// A folder of image files, good and bad, and what each should give.
struct folder {
    struct bad_file {
        std::size_t index;
        std::string stage;  ///< the stage it must fail in
        ferry::errc code;
        std::vector<std::string_view> words;  ///< one must be in the message
    };
    temp_folder dir;
    std::vector<std::filesystem::path> paths;
    std::vector<std::size_t> good;  ///< indices of good files
    std::vector<file_bytes> good_files;
    std::vector<bad_file> bad;

    folder() {
        const std::vector<std::string> formats{".jpg", ".png", ".webp", ".bmp"};
        const file_bytes jpeg =
            encode(".jpg", photo(64, 48, 3, 77), {cv::IMWRITE_JPEG_QUALITY, 90});
        int n_good = 0;
        const auto add_good = [&] {
            const std::string& ext = formats[static_cast<std::size_t>(n_good) % formats.size()];
            // Distinct widths: the delivered order can be read off the images.
            const cv::Mat m = photo(40 + n_good, 30, 3, static_cast<std::uint32_t>(n_good));
            const std::vector<int> params = ext == ".webp"
                                                ? std::vector<int>{cv::IMWRITE_WEBP_QUALITY, 101}
                                                : std::vector<int>{};
            good.push_back(paths.size());
            good_files.push_back(encode(ext, m, params));
            paths.push_back(dir.write("good" + std::to_string(n_good) + ext, good_files.back()));
            ++n_good;
        };
        const auto add_bad = [&](const std::string& name, const file_bytes& contents,
                                 ferry::errc code, std::vector<std::string_view> words) {
            bad.push_back({paths.size(), "decode", code, std::move(words)});
            paths.push_back(dir.write(name, contents));
        };
        add_good();
        add_bad("zero.jpg", {}, ferry::errc::decode, {"empty"});
        add_good();
        add_good();
        // Cut inside the entropy-coded data: the header parses, the pixels run out.
        add_bad("truncated.jpg", file_bytes(jpeg.begin(), jpeg.begin() + jpeg.size() * 8 / 10),
                ferry::errc::decode, {"truncat", "premature", "end of"});
        add_good();
        // A header the JPEG parser itself rejects.
        file_bytes smeared = jpeg;
        std::fill(smeared.begin() + 16, smeared.begin() + 48, std::uint8_t{0xFF});
        add_bad("corrupt.jpg", smeared, ferry::errc::decode, {"jpeg"});
        add_good();
        const std::string text = "not an image at all, just some text\n";
        add_bad("garbage.png", file_bytes(text.begin(), text.end()), ferry::errc::decode,
                {"unsupported", "not a supported"});
        add_good();
        add_good();
        add_bad("huge.png", png_declaring(sample_named("png_rgb").file, 60000, 60000),
                ferry::errc::decode, {"max_pixels", "megapixel"});
        add_good();
        // A path that vanished between listing and reading fails in the read stage.
        bad.push_back({paths.size(), "read", ferry::errc::io, {"missing.jpg"}});
        paths.push_back(dir.path() / "missing.jpg");
        add_good();
        add_good();
    }
};

}  // namespace pipeline_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(pipeline)
using namespace pipeline_test;

// Good files arrive decoded and in order; each bad one is skipped and recorded with its index,
// stage and cause; delivered + failed == files.
BOOST_DATA_TEST_CASE(decodes_a_folder_skipping_and_recording_bad_files, bdata::make({1, 2, 4}),
                     concurrency) {
    const folder f;
    auto p =
        ferry::from(f.paths)
            .map(ferry::ops::read_file,
                 {.concurrency = 2, .name = "read", .on_error = ferry::skip, .executor = ferry::io})
            .map(ferry::ops::decode_image,
                 {.concurrency = concurrency, .name = "decode", .on_error = ferry::skip})
            .build({.threads = 2, .logger = quiet});
    std::vector<ferry::image> got;
    for (auto& img : p) got.push_back(std::move(img));

    // Each good file has its own width (40 + its number): the widths show order and losses.
    std::vector<int> got_widths;
    std::vector<int> want_widths;
    for (const auto& img : got) got_widths.push_back(img.width());
    for (std::size_t k = 0; k < f.good.size(); ++k) want_widths.push_back(40 + static_cast<int>(k));
    BOOST_TEST(got_widths == want_widths, boost::test_tools::per_element());
    for (const auto& fail : p.failures())
        BOOST_TEST_MESSAGE("failure: item " << fail.item << " in " << fail.stage << ": "
                                            << fail.message);
    BOOST_TEST_REQUIRE(got.size() == f.good.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
        check_pixels(
            got[k], reference_decode(f.good_files[k], cv::IMREAD_COLOR), 1.0, -1,
            "good file " + std::to_string(k) + " (item " + std::to_string(f.good[k]) + ")");
    }

    auto failures = p.failures();
    std::sort(failures.begin(), failures.end(),
              [](const ferry::failure& a, const ferry::failure& b) { return a.item < b.item; });
    BOOST_TEST_REQUIRE(failures.size() == f.bad.size());
    for (std::size_t k = 0; k < failures.size(); ++k) {
        const auto& want = f.bad[k];
        const auto& fail = failures[k];
        BOOST_TEST_CONTEXT("bad file at item " << want.index) {
            BOOST_TEST(fail.item == want.index);
            BOOST_TEST(fail.stage == want.stage);
            BOOST_TEST(fail.code == want.code, "code " << ferry::to_string(fail.code));
            BOOST_TEST(mentions(fail.message, want.words), "message: " << fail.message);
        }
    }

    const ferry::pipeline_stats s = p.stats();
    BOOST_TEST(s.produced == f.paths.size());
    BOOST_TEST(s.delivered == f.good.size());
    BOOST_TEST(s.failed == f.bad.size());
    BOOST_TEST(s.delivered + s.failed == f.paths.size());
}

// decode with resize, batch and collate give N x H x W x C u8 batches, the last one short.
BOOST_AUTO_TEST_CASE(decode_resize_batch_collate_gives_nhwc_batches) {
    const folder f;
    std::vector<std::filesystem::path> good_paths;
    for (const std::size_t i : f.good) good_paths.push_back(f.paths[i]);
    auto p = ferry::from(good_paths)
                 .map(ferry::ops::read_file, {.concurrency = 2, .executor = ferry::io})
                 .map(
                     [](const ferry::bytes& b) {
                         return ferry::ops::decode_image(b, {.resize = {32, 24}});
                     },
                     2)
                 .batch(4)
                 .map([](std::vector<ferry::image> images) {
                     return ferry::ops::collate(std::move(images));
                 })
                 .build({.threads = 2, .logger = quiet});
    std::vector<std::vector<std::int64_t>> shapes;
    for (const ferry::tensor& t : p) {
        BOOST_TEST(t.dtype() == ferry::dtype::u8);
        shapes.push_back(t.shape());
    }
    const std::size_t n = good_paths.size();  // 10: two full batches and one of 2
    BOOST_TEST_REQUIRE(shapes.size() == (n + 3) / 4);
    for (std::size_t b = 0; b < shapes.size(); ++b) {
        const std::int64_t items = static_cast<std::int64_t>(std::min<std::size_t>(4, n - 4 * b));
        BOOST_TEST(shapes[b] == (std::vector<std::int64_t>{items, 24, 32, 3}),
                   boost::test_tools::per_element());
    }
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
