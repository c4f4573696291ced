// SPDX-License-Identifier: Apache-2.0
/// \file
/// JPEGs in every chroma sampling libjpeg-turbo's `cjpeg -sample` writes (4:4:4, 4:2:2, 4:4:0,
/// 4:2:0, 4:1:1, 4:1:0, 1x4, 2x4, 3x1, 3x2, per-component 2x1/1x2 mixes, chroma sampled finer
/// than luma, equal non-unit factors, gray with and without a sampling factor), baseline and
/// progressive, at odd and even sizes, checked against `djpeg` from the same libjpeg-turbo:
/// whole and DCT-scaled decodes have exactly djpeg's pixels (both use the accurate integer IDCT
/// and fancy upsampling, djpeg's defaults), probe reports the size and channels, and regions at
/// every scale have exactly the pixels of the decode they are cut from.
///
/// Not here, because cjpeg refuses them: factors whose blocks per MCU exceed 10 (2x2 on all
/// three components, 4x4, 3x3).
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
namespace fs = std::filesystem;
using namespace ops_test;
using ferry::crop_box;
using ferry::ops::decode_image;

// Named, not anonymous: data test cases are templates with external linkage.
namespace jpeg_sampling_test {

/// One JPEG: cjpeg's sampling (or "gray", "gray 2x2"), its mode and size.
struct spec {
    std::string sampling;
    bool progressive = false;
    int width = 0;
    int height = 0;

    [[nodiscard]] bool gray() const { return sampling.rfind("gray", 0) == 0; }
    [[nodiscard]] std::string name() const {
        return sampling + (progressive ? " progressive " : " baseline ") + std::to_string(width) +
               "x" + std::to_string(height);
    }
};

const std::vector<std::string> samplings{
    "1x1",         "2x1",         "1x2",         "2x2",         "4x1",         "4x2",
    "1x4",         "2x4",         "3x1",         "3x2",         "2x2,1x2,2x1", "2x2,2x1,1x2",
    "2x1,1x2,1x1", "1x2,2x1,1x1", "4x1,2x1,1x1", "2x2,1x1,2x2", "1x1,2x2,2x2", "1x1,2x1,2x1",
    "2x1,2x1,2x1", "1x2,1x2,1x2", "gray",        "gray 2x2"};

/// Every sampling, baseline and progressive, at 37x23 (no dimension a multiple of any MCU) and
/// 64x48 (every dimension a multiple of 16).
const std::vector<spec>& specs() {
    static const std::vector<spec> all = [] {
        std::vector<spec> v;
        for (const auto& s : samplings) {
            for (const bool progressive : {false, true}) {
                v.push_back({s, progressive, 37, 23});
                v.push_back({s, progressive, 64, 48});
            }
        }
        return v;
    }();
    return all;
}

std::vector<std::string> spec_names() {
    std::vector<std::string> names;
    for (const spec& s : specs()) names.push_back(s.name());
    return names;
}

const spec& spec_named(const std::string& name) {
    for (const spec& s : specs()) {
        if (s.name() == name) return s;
    }
    throw std::logic_error("no JPEG spec named " + name);
}

void run(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    BOOST_TEST_REQUIRE(rc == 0, "command failed (" << rc << "): " << cmd);
}

file_bytes read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A binary PGM (P5) or PPM (P6) file as djpeg writes it, as a ferry image (gray or RGB).
ferry::image read_pnm(const fs::path& p) {
    const file_bytes f = read_bytes(p);
    int width = 0;
    int height = 0;
    int maxval = 0;
    int header = 0;
    char kind = 0;
    const std::string text(f.begin(),
                           f.begin() + static_cast<long>(std::min<std::size_t>(f.size(), 64)));
    if (std::sscanf(text.c_str(), "P%c %d %d %d%n", &kind, &width, &height, &maxval, &header) !=
            4 ||
        (kind != '5' && kind != '6') || maxval != 255) {
        throw std::runtime_error("not a binary 8-bit PNM: " + p.string());
    }
    ++header;  // the single whitespace byte after maxval
    ferry::image img(width, height,
                     kind == '5' ? ferry::pixel_format::gray : ferry::pixel_format::rgb);
    const std::size_t bytes = img.row_bytes() * static_cast<std::size_t>(height);
    if (f.size() != static_cast<std::size_t>(header) + bytes) {
        throw std::runtime_error("truncated PNM: " + p.string());
    }
    std::copy(f.begin() + header, f.end(), img.data().data());
    return img;
}

/// A spec's JPEG and djpeg's decodes of it at 1/1, 1/2, 1/4 and 1/8, made once.
struct made {
    file_bytes jpeg;
    std::map<int, ferry::image> djpeg;  ///< by scale denominator
};

/// Writes `photo(width, height)` as a binary PPM (RGB), cjpeg's input.
void write_ppm(const fs::path& path, int width, int height) {
    const cv::Mat bgr = photo(width, height, 3, 11);
    std::string bytes = "P6\n" + std::to_string(width) + " " + std::to_string(height) + "\n255\n";
    for (int y = 0; y < height; ++y) {
        for (int x = 0; x < width; ++x) {
            const auto& p = bgr.at<cv::Vec3b>(y, x);
            bytes += {static_cast<char>(p[2]), static_cast<char>(p[1]), static_cast<char>(p[0])};
        }
    }
    std::ofstream(path, std::ios::binary) << bytes;
}

/// Every spec's JPEG and djpeg's decodes, made on first use by one shell script (a process per
/// command would cost more than all the decoding here).
const std::map<std::string, made>& all_made() {
    static const std::map<std::string, made> cache = [] {
        const temp_folder dir;
        std::string script = "set -e\n";
        std::size_t k = 0;
        for (const spec& s : specs()) {
            const fs::path ppm = dir.path() / ("src-" + std::to_string(s.width) + ".ppm");
            if (!fs::exists(ppm)) write_ppm(ppm, s.width, s.height);
            std::string args = s.progressive ? "-progressive " : "";
            if (s.gray()) {
                args += "-grayscale ";
                if (s.sampling != "gray") args += "-sample " + s.sampling.substr(5) + " ";
            } else {
                args += "-sample " + s.sampling + " ";
            }
            const std::string jpg = (dir.path() / ("f" + std::to_string(k) + ".jpg")).string();
            script += "cjpeg -quality 90 " + args + "-outfile " + jpg + " " + ppm.string() + "\n";
            for (const int d : {1, 2, 4, 8}) {
                script += "djpeg -scale 1/" + std::to_string(d) + " -outfile " + jpg + "." +
                          std::to_string(d) + ".pnm " + jpg + "\n";
            }
            ++k;
        }
        const fs::path sh = dir.path() / "make.sh";
        std::ofstream(sh) << script;
        run("sh " + sh.string());
        std::map<std::string, made> out;
        k = 0;
        for (const spec& s : specs()) {
            const fs::path jpg = dir.path() / ("f" + std::to_string(k++) + ".jpg");
            made m;
            m.jpeg = read_bytes(jpg);
            for (const int d : {1, 2, 4, 8}) {
                m.djpeg.emplace(d, read_pnm(jpg.string() + "." + std::to_string(d) + ".pnm"));
            }
            out.emplace(s.name(), std::move(m));
        }
        return out;
    }();
    return cache;
}

const made& make(const spec& s) {
    return all_made().at(s.name());
}

/// The format djpeg writes a spec's file in: gray for gray files, else RGB.
ferry::pixel_format format_of(const spec& s) {
    return s.gray() ? ferry::pixel_format::gray : ferry::pixel_format::rgb;
}

/// Whether `a` and `b` have the same size, format and bytes; says where they first differ.
bool same_pixels(const ferry::image& a, const ferry::image& b, std::string& where) {
    if (a.width() != b.width() || a.height() != b.height() || a.format() != b.format()) {
        where = std::to_string(a.width()) + "x" + std::to_string(a.height()) + " " +
                to_string(a.format()) + " vs " + std::to_string(b.width()) + "x" +
                std::to_string(b.height()) + " " + to_string(b.format());
        return false;
    }
    const auto pa = a.data();
    const auto pb = b.data();
    const auto diff = std::mismatch(pa.begin(), pa.end(), pb.begin());
    if (diff.first == pa.end()) return true;
    const auto at = static_cast<std::size_t>(diff.first - pa.begin());
    const std::size_t pixel = at / static_cast<std::size_t>(a.channels());
    where = "first difference at pixel (" + std::to_string(pixel % a.width()) + ", " +
            std::to_string(pixel / a.width()) + ")";
    return false;
}

/// Boxes (full-scale coordinates) at and around every iMCU boundary a sampling can have (8, 16,
/// 32 pixels), 1 and 2 pixels wide and reaching the right and bottom edges.
std::vector<crop_box> boxes(int w, int h) {
    std::vector<crop_box> out;
    const std::vector<int> starts{0, 1, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33};
    for (const int x : starts) {
        if (x >= w) continue;
        const int y = std::min(h - 1, x / 2);
        for (const int bw : {1, 2, 5, 16, w - x}) {
            if (bw < 1 || x + bw > w) continue;
            out.push_back({x, y, bw, std::min(h - y, 3 + bw / 2)});
        }
        out.push_back({x, 0, w - x, h});
    }
    out.push_back({w - 1, h - 1, 1, 1});
    out.push_back({w - 2, h - 5, 2, 5});
    return out;
}

}  // namespace jpeg_sampling_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(jpeg_sampling)
using namespace jpeg_sampling_test;

// Every sampling decodes, to exactly djpeg's pixels; RGB of a gray file is its gray, thrice.
BOOST_DATA_TEST_CASE(decodes_to_djpeg_pixels, bdata::make(spec_names()), name) {
    const spec& s = spec_named(name);
    const made& m = make(s);
    const ferry::image img = decode_image(as_span(m.jpeg), {.format = format_of(s)});
    std::string where;
    BOOST_TEST(same_pixels(img, m.djpeg.at(1), where), name << ": " << where);
    if (s.gray()) {
        const ferry::image rgb = decode_image(as_span(m.jpeg));
        BOOST_TEST_REQUIRE(rgb.channels() == 3);
        bool replicated = true;
        for (std::size_t i = 0; i < img.data().size(); ++i) {
            const auto* p = rgb.data().data() + i * 3;
            replicated = replicated && p[0] == img.data()[i] && p[1] == p[0] && p[2] == p[0];
        }
        BOOST_TEST(replicated, name << ": RGB is not the gray replicated");
    }
}

// DCT-scaled decodes (reduce_to = the 1/2, 1/4, 1/8 size) are djpeg -scale 1/d exactly.
BOOST_DATA_TEST_CASE(dct_scaled_decodes_are_djpeg_scaled, bdata::make(spec_names()), name) {
    const spec& s = spec_named(name);
    const made& m = make(s);
    for (const int d : {2, 4, 8}) {
        const ferry::image& want = m.djpeg.at(d);
        const ferry::image img = decode_image(
            as_span(m.jpeg), {.format = format_of(s), .reduce_to = {want.width(), want.height()}});
        std::string where;
        BOOST_TEST(same_pixels(img, want, where), name << " at 1/" << d << ": " << where);
    }
}

// probe_image reads the size and channels of every sampling from the header.
BOOST_DATA_TEST_CASE(probe_reports_size_and_channels, bdata::make(spec_names()), name) {
    const spec& s = spec_named(name);
    const ferry::image_info info = ferry::ops::probe_image(as_span(make(s).jpeg));
    BOOST_TEST(info.format == "jpeg");
    BOOST_TEST(info.width == s.width);
    BOOST_TEST(info.height == s.height);
    BOOST_TEST(info.channels == (s.gray() ? 1 : 3));
    BOOST_TEST(info.bit_depth == 8);
}

// A region, at full size and at each DCT scale, is exactly that scale's decode cropped to the
// box rounded outward: libjpeg-turbo 2.1's jpeg_crop_scanline gets some of these wrong (4x2,
// 2x4 and 4x1,2x1,1x1 at reduced scales), and the decoder must notice and decode full rows.
BOOST_DATA_TEST_CASE(regions_are_the_decode_cropped_at_every_scale, bdata::make(spec_names()),
                     name) {
    const spec& s = spec_named(name);
    const made& m = make(s);
    int checked = 0;
    for (const int d : {1, 2, 4, 8}) {
        for (const crop_box& box : boxes(s.width, s.height)) {
            const int x0 = box.x / d;
            const int y0 = box.y / d;
            const crop_box scaled{x0, y0, (box.x + box.width + d - 1) / d - x0,
                                  (box.y + box.height + d - 1) / d - y0};
            // reduce_to = the scaled box's size picks 1/d (or a larger scale with the same box
            // size, whose pixels are then checked against that scale's decode).
            const ferry::image region =
                decode_image(as_span(m.jpeg),
                             {.format = format_of(s),
                              .reduce_to = d == 1 ? ferry::image_size{}
                                                  : ferry::image_size{scaled.width, scaled.height},
                              .crop = box});
            int used = d;
            for (const int e : {8, 4, 2}) {
                const crop_box b{box.x / e, box.y / e, (box.x + box.width + e - 1) / e - box.x / e,
                                 (box.y + box.height + e - 1) / e - box.y / e};
                if (d > 1 && e > d && b.width == scaled.width && b.height == scaled.height) {
                    used = e;
                    break;
                }
            }
            const ferry::image& from = m.djpeg.at(used);
            const crop_box want{box.x / used, box.y / used,
                                (box.x + box.width + used - 1) / used - box.x / used,
                                (box.y + box.height + used - 1) / used - box.y / used};
            std::string where;
            BOOST_TEST(same_pixels(region, ferry::ops::crop(from, want), where),
                       name << " region {" << box.x << ", " << box.y << ", " << box.width << "x"
                            << box.height << "} at 1/" << used << ": " << where);
            ++checked;
        }
    }
    BOOST_TEST(checked > 100);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
