// SPDX-License-Identifier: Apache-2.0
/// \file
/// Helpers shared by the ops tests: photo-like test content, encoders for every format and
/// variant ferry decodes (OpenCV, libpng, TurboJPEG, hand-assembled BMP and EXIF), OpenCV as the
/// independent reference decoder, pixel comparisons, and temporary files.
#pragma once

#include <boost/test/unit_test.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <ferry/bytes.hpp>
#include <ferry/error.hpp>
#include <ferry/image.hpp>
#include <ferry/tensor.hpp>
#include <filesystem>
#include <opencv2/core.hpp>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// How Boost.Test prints ferry's values in failed assertions (found by argument-dependent lookup;
// Boost's own customization point, so nothing named operator<< is added to ferry).
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
inline std::ostream& boost_test_print_type(std::ostream& os, dtype t) {
    return os << to_string(t);
}
inline std::ostream& boost_test_print_type(std::ostream& os, errc c) {
    return os << to_string(c);
}
}  // namespace ferry

namespace ops_test {

/// An encoded file, as the encoders produce it.
using file_bytes = std::vector<std::uint8_t>;

inline std::span<const std::byte> as_span(const file_bytes& f) {
    return std::as_bytes(std::span<const std::uint8_t>(f));
}

/// Photo-like content (smooth gradients, a low-frequency wave, mild Gaussian noise), the same for
/// the same seed. `channels` 1, 3 (BGR, OpenCV's order) or 4 (BGRA with a smooth alpha ramp).
/// Each colour channel ramps along a different axis, so every flip, rotation and transposition
/// of it is a different picture.
cv::Mat photo(int width, int height, int channels, std::uint32_t seed);
/// The same kind of content at 16 bits per channel (CV_16UC3, BGR), low bytes included.
cv::Mat photo16(int width, int height, std::uint32_t seed);

/// `cv::imencode` that must succeed.
file_bytes encode(const std::string& ext, const cv::Mat& m, const std::vector<int>& params = {});
/// A JPEG from TurboJPEG: `m` is BGR (CV_8UC3) or C,M,Y,K (CV_8UC4, written as an Adobe CMYK
/// JPEG), `subsampling` a TJSAMP_* value.
file_bytes turbo_jpeg(const cv::Mat& m, int subsampling, int quality);
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
/// `stored` as EXIF orientation `orientation` says it is meant to be seen.
cv::Mat oriented(const cv::Mat& stored, int orientation);

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

/// One generated test file.
struct sample {
    std::string name;    ///< e.g. "jpeg_progressive"
    std::string format;  ///< what probe_image must report: "jpeg", "png", "webp", "bmp"
    file_bytes file;
    int width = 0;
    int height = 0;
    int channels = 0;    ///< stored channels probe_image must report; 0 where the header's
                         ///< documentation leaves it open (palette images)
    int bit_depth = 8;   ///< what probe_image must report; 0 where the header leaves it open
    bool alpha = false;  ///< the file carries an alpha channel
    bool lossy = false;
    /// Independent expectation from the source pixels: RGB, or RGBA where `alpha`.
    cv::Mat source;
    double source_mean_tol = 0;  ///< mean abs diff allowed against `source`
    double source_max_tol = 0;   ///< max abs diff allowed against `source`; < 0: not checked
};

/// Every format and variant the decoder claims, 97 x 61 (odd, to catch stride bugs); built once,
/// on first use.
const std::vector<sample>& samples();
const sample& sample_named(std::string_view name);

/// The samples' names (what data-driven cases run over; `samples()` checks it matches).
inline const std::vector<std::string> all_samples{"jpeg_baseline",
                                                  "jpeg_progressive",
                                                  "jpeg_restart_markers",
                                                  "jpeg_444",
                                                  "jpeg_422",
                                                  "jpeg_gray",
                                                  "jpeg_cmyk",
                                                  "png_rgb",
                                                  "png_gray",
                                                  "png_rgba",
                                                  "png_16bit",
                                                  "png_gray_alpha",
                                                  "png_palette",
                                                  "png_palette4_transparent",
                                                  "png_gray1",
                                                  "png_interlaced",
                                                  "webp_lossless",
                                                  "webp_lossless_alpha",
                                                  "webp_lossy",
                                                  "bmp_24bit",
                                                  "bmp_gray8",
                                                  "bmp_palette1",
                                                  "bmp_palette4",
                                                  "bmp_palette8"};
/// The samples that carry an alpha channel.
inline const std::vector<std::string> alpha_samples{
    "png_rgba", "png_gray_alpha", "png_palette4_transparent", "webp_lossless_alpha"};
/// The samples without alpha.
inline const std::vector<std::string> opaque_samples{
    "jpeg_baseline", "jpeg_progressive", "jpeg_gray",   "jpeg_cmyk",   "png_rgb",
    "png_gray",      "png_16bit",        "png_palette", "png_gray1",   "webp_lossless",
    "webp_lossy",    "bmp_24bit",        "bmp_gray8",   "bmp_palette4"};

/// A 400 x 300 photo-like picture (BGR) and its baseline JPEG (quality 90): large enough for
/// every DCT scale (1/2, 1/4, 1/8 give 200x150, 100x75, 50x38).
const cv::Mat& large_photo();
const file_bytes& large_jpeg();

/// True when `message`, lower-cased, contains one of `keywords`.
bool mentions(std::string_view message, const std::vector<std::string_view>& keywords);

/// The message of the `ferry::decode_error` `f` throws; records a failure (and returns "") when it
/// returns normally or throws anything else.
template <class F>
std::string decode_error_message(F&& f, const std::string& what) {
    try {
        f();
    } catch (const ferry::decode_error& e) {
        return e.what();
    } catch (const std::exception& e) {
        BOOST_ERROR(what << ": threw " << typeid(e).name() << " (" << e.what()
                         << ") instead of ferry::decode_error");
        return {};
    } catch (...) {
        BOOST_ERROR(what << ": threw a non-std exception instead of ferry::decode_error");
        return {};
    }
    BOOST_ERROR(what << ": did not throw ferry::decode_error");
    return {};
}

/// A fresh directory under the system's temp directory, removed with everything in it.
class temp_dir {
  public:
    temp_dir();
    ~temp_dir();
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }
    /// Writes `contents` to `name` inside the directory and returns its path.
    std::filesystem::path write(const std::string& name,
                                std::span<const std::uint8_t> contents) const;

  private:
    std::filesystem::path path_;
};

}  // namespace ops_test
