// SPDX-License-Identifier: Apache-2.0
/// \file
/// Helpers for the image tests: photo-like test content, encoders for every format and variant
/// ferry decodes (OpenCV, libpng, libjpeg, hand-assembled BMP and EXIF), OpenCV as the
/// independent reference decoder, and pixel comparisons.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <ferry/image.hpp>
#include <opencv2/core.hpp>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../support/ops_support.hpp"

// How Boost.Test prints ferry's image values in failed assertions (see ../support/ops_support.hpp).
namespace ferry {
inline std::ostream& boost_test_print_type(std::ostream& os, const image_size& s) {
    return os << s.width << "x" << s.height;
}
inline std::ostream& boost_test_print_type(std::ostream& os, const crop_box& b) {
    return os << "{" << b.x << ", " << b.y << ", " << b.width << "x" << b.height << "}";
}
inline std::ostream& boost_test_print_type(std::ostream& os, pixel_format f) {
    return os << to_string(f);
}
}  // namespace ferry

namespace ops_test {

/// Photo-like content (smooth gradients, a low-frequency wave, mild Gaussian noise), the same for
/// the same seed. `channels` 1, 3 (BGR, OpenCV's order) or 4 (BGRA with a smooth alpha ramp).
/// Each colour channel ramps along a different axis, so every flip, rotation and transposition
/// of it is a different picture.
cv::Mat photo(int width, int height, int channels, std::uint32_t seed);
/// Uniform noise (CV_8UC3), the same for the same seed: a JPEG of it has large values in every
/// band, long Huffman codes and many stuffed 0xFF bytes.
cv::Mat uniform_noise(int width, int height, std::uint32_t seed);
/// The same kind of content at 16 bits per channel (CV_16UC3, BGR), low bytes included.
cv::Mat photo16(int width, int height, std::uint32_t seed);

/// `cv::imencode` that must succeed.
file_bytes encode(const std::string& ext, const cv::Mat& m, const std::vector<int>& params = {});
/// Chroma subsampling for `write_jpeg`, in TurboJPEG's names: luma (and K) sampled 1x1, 2x1,
/// 2x2, 1x2, 4x1; chroma 1x1. `gray` writes one component.
enum class jpeg_subsampling { s444, s422, s420, s440, s411, gray };
/// A JPEG written with libjpeg (accurate integer DCT): `m` is BGR (CV_8UC3) or C,M,Y,K
/// (CV_8UC4, written as an Adobe YCCK JPEG).
file_bytes write_jpeg(const cv::Mat& m, jpeg_subsampling sampling, int quality);
/// One scan of a scan script (cjpeg -scans): its components (indexes), the spectral band Ss..Se,
/// the successive-approximation bits Ah (0 for a first scan) and Al.
struct jpeg_scan {
    std::vector<int> components = {};
    int ss = 0;
    int se = 63;
    int ah = 0;
    int al = 0;
};
/// How `write_jpeg` lays a file out beyond quality and sampling, as cjpeg's switches do.
struct jpeg_layout {
    bool progressive = false;           ///< libjpeg's default progression (-progressive)
    std::vector<jpeg_scan> scans = {};  ///< a scan script (-scans), when not empty
    bool arithmetic = false;            ///< arithmetic coding (-arithmetic)
    bool optimize = false;              ///< optimized Huffman tables (-optimize)
    int restart_interval = 0;           ///< MCUs per restart interval (-restart N)
};
file_bytes write_jpeg(const cv::Mat& m, jpeg_subsampling sampling, int quality,
                      const jpeg_layout& layout);
/// Sets FERRY_JPEG_HUFFMAN for the scope ("libjpeg": libjpeg-turbo's own Huffman decoder).
class huffman_switch {
  public:
    explicit huffman_switch(const char* value) { ::setenv("FERRY_JPEG_HUFFMAN", value, 1); }
    ~huffman_switch() { ::unsetenv("FERRY_JPEG_HUFFMAN"); }
    huffman_switch(const huffman_switch&) = delete;
    huffman_switch& operator=(const huffman_switch&) = delete;
};
/// A PNG written with libpng's classic API: `rows` holds `height` rows already packed the way
/// PNG stores them for `color_type`/`bit_depth` (16-bit samples big-endian).
file_bytes write_png(int width, int height, int color_type, int bit_depth,
                     const std::vector<std::uint8_t>& rows, int channels,
                     const std::vector<std::array<std::uint8_t, 3>>& palette = {},
                     const std::vector<std::uint8_t>& trns = {}, bool interlaced = false);
/// A hand-assembled palette BMP (BITMAPINFOHEADER, bottom-up) with `bits` 1, 4 or 8 per pixel.
file_bytes write_palette_bmp(int width, int height, int bits,
                             const std::vector<std::uint8_t>& indices,
                             const std::vector<std::array<std::uint8_t, 3>>& palette_rgb);
/// `jpeg` with an APP1 Exif segment (TIFF header in the given byte order, IFD0 holding tag
/// 0x0112 = `orientation`) inserted right after SOI.
file_bytes with_exif_orientation(const file_bytes& jpeg, int orientation, bool big_endian);

/// How `exif_tiff` lays out its TIFF structure.
struct exif_layout {
    bool big_endian = false;
    /// The orientation tag's type: 3 SHORT (the specification's), 4 LONG, or any other number
    /// (written with the value as a SHORT, as a damaged file would).
    int type = 3;
    /// IFD0 as a camera writes it: Make and Model, then the orientation as the third of seven
    /// entries, values stored after the IFD (Make, resolutions) and an Exif sub-IFD; else a
    /// one-entry IFD0.
    bool camera = false;
};
/// A TIFF structure (the body of an EXIF block, without JPEG's "Exif\0\0") whose IFD0 holds
/// tag 0x0112 = `value`.
file_bytes exif_tiff(std::uint32_t value, const exif_layout& layout = {});
/// `jpeg` with an APP1 segment "Exif\0\0" + `tiff` inserted right after SOI, or after the
/// first segment (JFIF's APP0 in what OpenCV and TurboJPEG write) when `after_app0`.
file_bytes with_exif_app1(const file_bytes& jpeg, const file_bytes& tiff, bool after_app0 = false);
/// `png` with an eXIf chunk holding `body` (a TIFF structure), right after IHDR or, when
/// `after_idat`, right before IEND.
file_bytes with_png_exif(const file_bytes& png, const file_bytes& body, bool after_idat = false);
/// `stored` as EXIF orientation `orientation` says it is meant to be seen.
cv::Mat oriented(const cv::Mat& stored, int orientation);

/// The length of `jpeg` up to and including its (first) SOS segment: where its entropy-coded
/// data starts.
std::size_t jpeg_header_length(const file_bytes& jpeg);
/// Damaged copies of a JPEG, each named by what was done: `cuts` + 1 cuts evenly from the start
/// of its entropy-coded data to its end ("cut at N"), then `changes` copies with one byte of that
/// data changed ("byte N changed"): in turn to 0xFF, to 0x00, to anything, and to a marker (0xFF
/// then RSTn, SOI or EOI), drawn from `seed`.
std::vector<std::pair<std::string, file_bytes>> damaged_jpegs(const file_bytes& good, int cuts,
                                                              int changes, std::uint32_t seed);
/// A copy of `jpeg` whose SOF declares `width x height` (the scan is left as it is).
file_bytes jpeg_declaring(file_bytes jpeg, int width, int height);
/// A copy of `png` whose IHDR declares `width x height` (with a valid CRC).
file_bytes png_declaring(file_bytes png, std::uint32_t width, std::uint32_t height);
/// A copy of a lossless (VP8L) `webp` whose header declares `width x height` (at most 16384).
file_bytes webp_lossless_declaring(file_bytes webp, int width, int height);
/// A copy of `bmp` whose BITMAPINFOHEADER declares `width x height`.
file_bytes bmp_declaring(file_bytes bmp, std::int32_t width, std::int32_t height);

/// `cv::imdecode` that must succeed, with colour channels turned to ferry's order (RGB, RGBA).
cv::Mat reference_decode(const file_bytes& f, int flags);
/// BGR to RGB, BGRA to RGBA; one channel is copied as it is.
cv::Mat swap_red_blue(const cv::Mat& m);
/// A copy of `img`'s pixels as a CV_8UC(channels) matrix.
cv::Mat to_mat(const ferry::image& img);
/// ferry's RGB decode of `f` at 1/`denom` (`reduce_to` the size libjpeg's DCT scaling gives), as
/// a Mat: what the JPEG decoder tests compare with libjpeg.
cv::Mat decode_scaled(const file_bytes& f, int denom, bool fast, bool strict);
/// A ferry image holding `m`'s pixels (channel order as they are in `m`).
ferry::image to_image(const cv::Mat& m, ferry::pixel_format format);

/// Mean absolute difference per sample; +inf when sizes or channel counts differ.
double mean_abs_diff(const cv::Mat& a, const cv::Mat& b);
/// Largest absolute difference of one sample; +inf when sizes or channel counts differ.
double max_abs_diff(const cv::Mat& a, const cv::Mat& b);

/// Checks `got` has `want`'s size and channel count and a mean absolute difference of at most
/// `mean_tol` (and, when `max_tol >= 0`, no sample further than `max_tol`). `what` names the case.
void check_pixels(const ferry::image& got, const cv::Mat& want, double mean_tol, double max_tol,
                  const std::string& what);

}  // namespace ops_test
