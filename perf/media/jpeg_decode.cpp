// SPDX-License-Identifier: Apache-2.0
/// \file
/// jpeg_decode: microseconds per image for `decode_image` on the ImageNet-like JPEG set
/// (500x375, quality 90, 4:2:0, photo-like content; see perf/common/photo_set.hpp), sequentially on
/// the calling thread, four ways:
///
///  * `whole`      `decode_image(bytes)`: full size, RGB;
///  * `1/2 scale`  `decode_image(bytes, {.reduce_to = {250, 188}})`: libjpeg-turbo's 1/2 DCT
///                 scaling (250x188);
///  * `region`     `decode_image(bytes, {.crop = 224x224 at (138, 75)})`;
///  * `1/2 region` the same box with `.reduce_to = {112, 112}`.
///
/// The baseline, measured in the same run and interleaved with ferry's: the libjpeg API called
/// directly (jpeg_mem_src, RGB out, the accurate integer IDCT, fancy upsampling, one buffer
/// reused), whole and at 1/2 scale — the least any decoder built on libjpeg-turbo can take.
/// Files are read into memory first: this measures decoding only.
///
/// One more ferry variant, `whole, libjpeg's Huffman`, decodes whole with
/// FERRY_JPEG_HUFFMAN=libjpeg (set around each call): libjpeg-turbo's own entropy decoder under the
/// same calls.
///
/// With `--progressive`, each file is first made progressive losslessly, as `jpegtran
/// -progressive` does (the same coefficients, libjpeg's default progression of 10 scans): the
/// same pixels, decoded through ferry's progressive decoder (ops/image/jpeg_progressive.cpp).
/// One more libjpeg variant then stops after `jpeg_start_decompress`, which entropy-decodes a
/// progressive file whole: the share of the decode that is entropy decoding.
///
/// With `--photos DIR`, the first `--max-photos N` (default 40) JPEGs under DIR instead (real
/// photos of any size), decoded whole only: the libjpeg API, `decode_image`, and `decode_image`
/// with libjpeg's Huffman decoder.
///
/// With `--no-pdep`, ferry's progressive refinement takes the way CPUs without a fast BMI2
/// `PDEP` take (sets FERRY_JPEG_PDEP=0 before the first decode), for the numbers of those CPUs.
///
/// Usage: jpeg_decode [--images N] [--reps R] [--dir DIR] [--progressive] [--no-pdep]
///                    [--photos DIR [--max-photos N]]
///   --images  how many JPEGs to generate and decode (default 300)
///   --reps    timed repetitions per variant (default 5); the median is reported
///   --dir     where the generated set lives (default $TMPDIR/ferry-image-pipeline, shared with
///             image_pipeline); files already there with the right name are reused
///   --progressive  decode progressive copies of the files (made in memory)
///   --no-pdep      refine progressive scans without PDEP (FERRY_JPEG_PDEP=0)
///   --photos  decode the JPEGs under DIR as they are (whole decodes only)

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/photo_set.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"

namespace {

namespace fs = std::filesystem;

/// `data` made progressive without a change to its coefficients (jpegtran -progressive): read
/// them, copy the critical parameters, write them with libjpeg's default progression.
ferry::bytes to_progressive(const ferry::bytes& data) {
    jpeg_decompress_struct in{};
    jpeg_compress_struct out{};
    jpeg_error_mgr err{};
    in.err = jpeg_std_error(&err);
    out.err = jpeg_std_error(&err);
    jpeg_create_decompress(&in);
    jpeg_create_compress(&out);
    jpeg_mem_src(&in, reinterpret_cast<const unsigned char*>(data.data()),
                 static_cast<unsigned long>(data.size()));
    jpeg_read_header(&in, TRUE);
    jvirt_barray_ptr* coefficients = jpeg_read_coefficients(&in);
    unsigned char* buf = nullptr;
    unsigned long size = 0;
    jpeg_mem_dest(&out, &buf, &size);
    jpeg_copy_critical_parameters(&in, &out);
    jpeg_simple_progression(&out);
    jpeg_write_coefficients(&out, coefficients);
    jpeg_finish_compress(&out);
    jpeg_destroy_compress(&out);
    jpeg_finish_decompress(&in);
    jpeg_destroy_decompress(&in);
    std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(buf),
                                 reinterpret_cast<const std::byte*>(buf) + size);
    std::free(buf);
    return ferry::bytes(std::move(bytes));
}
using bench_clock = std::chrono::steady_clock;

/// Decodes `data` with the libjpeg API at 1/`denom` into `out` (reused); the pixels decoded.
/// The set is generated here and well-formed: libjpeg's default error handler (exit) is fine.
std::size_t libjpeg_decode(const ferry::bytes& data, unsigned denom,
                           std::vector<unsigned char>& out, bool rows_too = true) {
    jpeg_decompress_struct cinfo{};
    jpeg_error_mgr err{};
    cinfo.err = jpeg_std_error(&err);
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(data.data()),
                 static_cast<unsigned long>(data.size()));
    jpeg_read_header(&cinfo, TRUE);
    cinfo.scale_num = 1;
    cinfo.scale_denom = denom;
    cinfo.out_color_space = JCS_EXT_RGB;
    cinfo.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&cinfo);
    if (!rows_too) {
        // A progressive file is entropy-decoded whole by now; its rows are not made.
        const std::size_t pixels = std::size_t{cinfo.output_width} * cinfo.output_height;
        jpeg_destroy_decompress(&cinfo);
        return pixels;
    }
    const std::size_t row = std::size_t{cinfo.output_width} * 3;
    out.resize(row * cinfo.output_height);
    std::vector<JSAMPROW> rows(cinfo.output_height);
    for (JDIMENSION y = 0; y < cinfo.output_height; ++y) rows[y] = out.data() + y * row;
    while (cinfo.output_scanline < cinfo.output_height) {
        jpeg_read_scanlines(&cinfo, rows.data() + cinfo.output_scanline,
                            cinfo.output_height - cinfo.output_scanline);
    }
    const std::size_t pixels = std::size_t{cinfo.output_width} * cinfo.output_height;
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return pixels;
}

struct variant {
    std::string name;
    std::function<std::size_t(const ferry::bytes&)> decode;  ///< pixels decoded
    int baseline = -1;       ///< the variant this one is divided by (-1: none)
    std::vector<double> us;  ///< µs per image, per repetition
    std::size_t pixels = 0;  ///< pixels per pass over the set
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
    int images = 300;
    int reps = 5;
    const char* tmp = std::getenv("TMPDIR");
    fs::path dir = fs::path(tmp != nullptr ? tmp : "/tmp") / "ferry-image-pipeline";
    bool progressive = false;
    fs::path photos;
    int max_photos = 40;
    for (int i = 1; i < argc; i += 2) {
        const std::string_view a = argv[i];
        if (a == "--progressive") {
            progressive = true;
            --i;  // a flag: no value
        } else if (a == "--no-pdep") {
            // Read once, at ferry's first progressive decode: set before any.
            ::setenv("FERRY_JPEG_PDEP", "0", 1);
            --i;
        } else if (i + 1 >= argc) {
            std::cerr << "option " << a << " needs a value\n";
            return 2;
        } else if (a == "--images") {
            images = std::max(1, std::atoi(argv[i + 1]));
        } else if (a == "--reps") {
            reps = std::max(1, std::atoi(argv[i + 1]));
        } else if (a == "--dir") {
            dir = argv[i + 1];
        } else if (a == "--photos") {
            photos = argv[i + 1];
        } else if (a == "--max-photos") {
            max_photos = std::max(1, std::atoi(argv[i + 1]));
        } else {
            std::cerr << "unknown option " << a << '\n';
            return 2;
        }
    }
    std::vector<ferry::bytes> files;
    const auto paths = photos.empty() ? ferry_perf::photo_set(dir, images)
                                      : ferry_perf::jpegs_under(photos, max_photos);
    for (const auto& p : paths) {
        ferry::bytes b = ferry::ops::read_file(p);
        files.push_back(progressive ? to_progressive(b) : std::move(b));
    }
    if (files.empty()) {
        std::cerr << "jpeg_decode: no .jpg files under " << photos << '\n';
        return 2;
    }

    std::vector<unsigned char> buffer;
    const ferry::crop_box box{138, 75, 224, 224};
    auto pixels = [](const ferry::image& img) {
        return static_cast<std::size_t>(img.width()) * static_cast<std::size_t>(img.height());
    };
    std::vector<variant> variants;
    auto add = [&](std::string name, std::function<std::size_t(const ferry::bytes&)> decode,
                   int baseline) {
        variant v;
        v.name = std::move(name);
        v.decode = std::move(decode);
        v.baseline = baseline;
        variants.push_back(std::move(v));
    };
    namespace ops = ferry::ops;
    add(
        "libjpeg API, whole", [&](const ferry::bytes& b) { return libjpeg_decode(b, 1, buffer); },
        -1);
    add(
        "decode_image, whole", [&](const ferry::bytes& b) { return pixels(ops::decode_image(b)); },
        0);
    add(
        "decode_image, whole, libjpeg's Huffman",
        [&](const ferry::bytes& b) {
            ::setenv("FERRY_JPEG_HUFFMAN", "libjpeg", 1);
            const std::size_t n = pixels(ops::decode_image(b));
            ::unsetenv("FERRY_JPEG_HUFFMAN");
            return n;
        },
        0);
    add(
        "libjpeg API, 1/2 scale",
        [&](const ferry::bytes& b) { return libjpeg_decode(b, 2, buffer); }, -1);
    add(
        "decode_image, 1/2 scale",
        [&](const ferry::bytes& b) {
            return pixels(ops::decode_image(b, {.reduce_to = {250, 188}}));
        },
        3);
    add(
        "decode_image, region 224x224",
        [&](const ferry::bytes& b) { return pixels(ops::decode_image(b, {.crop = box})); }, 0);
    add(
        "decode_image, region at 1/2",
        [&](const ferry::bytes& b) {
            return pixels(ops::decode_image(b, {.reduce_to = {112, 112}, .crop = box}));
        },
        3);

    if (!photos.empty()) variants.resize(3);  // whole decodes: the box and scales fit 500x375
    if (progressive) {
        add(
            "libjpeg API, up to jpeg_start_decompress",
            [&](const ferry::bytes& b) { return libjpeg_decode(b, 1, buffer, false); }, 0);
    }

    for (auto& v : variants) {  // untimed warm-up
        for (const auto& b : files) v.pixels += v.decode(b);
    }
    for (int r = 0; r < reps; ++r) {
        for (auto& v : variants) {
            std::size_t got = 0;
            const auto t0 = bench_clock::now();
            for (const auto& b : files) got += v.decode(b);
            const double s = std::chrono::duration<double>(bench_clock::now() - t0).count();
            if (got != v.pixels) {
                std::cerr << v.name << ": decoded " << got << " pixels, the warm-up " << v.pixels
                          << '\n';
                return 1;
            }
            v.us.push_back(s * 1e6 / static_cast<double>(files.size()));
        }
    }

    std::printf("%zu JPEGs (%s%s), median of %d runs\n\n", files.size(),
                photos.empty() ? "500x375, q90, 4:2:0" : photos.string().c_str(),
                progressive ? ", progressive" : "", reps);
    std::printf("| variant | µs/image | min – max | ÷ libjpeg API |\n|---|---:|---:|---:|\n");
    for (const variant& v : variants) {
        const double m = median(v.us);
        const auto [lo, hi] = std::minmax_element(v.us.begin(), v.us.end());
        if (v.baseline < 0) {
            std::printf("| %s | %.0f | %.0f – %.0f | — |\n", v.name.c_str(), m, *lo, *hi);
        } else {
            std::printf("| %s | %.0f | %.0f – %.0f | %.2f |\n", v.name.c_str(), m, *lo, *hi,
                        m / median(variants[static_cast<std::size_t>(v.baseline)].us));
        }
    }
    return 0;
}
