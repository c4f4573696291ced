// SPDX-License-Identifier: Apache-2.0
/// \file
/// Image transforms (resize, crops, flip, orientation, normalize) on OpenCV where it does the
/// work well, and the conversions of images to tensors (to_tensor, collate of images).
#include "transform.hpp"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "bilinear.hpp"
#include "ferry/error.hpp"
#include "mirror.hpp"
#include "resample.hpp"

namespace ferry::ops {
namespace {

/// Whether OpenCV's thread count was chosen, by `set_opencv_threads` or by the first op.
std::atomic<bool> opencv_threads_chosen{false};

/// ferry's default: OpenCV works on the calling thread (see `set_opencv_threads`).
void opencv_on_the_calling_thread() {
    static const bool once = [] {
        if (!opencv_threads_chosen.exchange(true)) cv::setNumThreads(1);
        return true;
    }();
    (void)once;
}

/// An OpenCV header over an image's pixels (no copy). Every OpenCV call of the image ops goes
/// through one.
cv::Mat view(const image& img) {
    opencv_on_the_calling_thread();
    return {img.height(), img.width(), CV_8UC(img.channels()),
            const_cast<std::uint8_t*>(img.data().data())};  // NOLINT: cv::Mat has no const view
}

void require_pixels(const image& img, const char* op) {
    if (img.empty()) throw invalid_argument(std::string(op) + ": the image is empty");
}

int cv_interpolation(interpolation i) {
    switch (i) {
        case interpolation::nearest:
            return cv::INTER_NEAREST;
        case interpolation::bilinear:
            return cv::INTER_LINEAR;
        case interpolation::bicubic:
            return cv::INTER_CUBIC;
        case interpolation::area:
            return cv::INTER_AREA;
        case interpolation::lanczos:
            return cv::INTER_LANCZOS4;
        case interpolation::antialias:  // resample_antialias's, not OpenCV's
            break;
    }
    return cv::INTER_LINEAR;
}

/// The `box` region of `img` resized to `width x height` as if cropped first (as torchvision
/// does; the filters see no pixel outside the box): Pillow's filter for `antialias`, cv::resize
/// for the others.
image resample(const image& img, const crop_box& box, int width, int height, interpolation interp) {
    return resample_view(region_of(img, box), img.format(), width, height, interp);
}

/// Python's round(): halves go to the even neighbour (torchvision's crop arithmetic uses it).
/// Saturating: a value past int's range (a huge or infinite scale or ratio makes one) is that
/// range's end, which no crop fits, rather than an out-of-range cast.
int round_half_even(double v) {
    const double r = std::nearbyint(v);
    if (!(r < 2147483647.0)) return std::numeric_limits<int>::max();  // NaN too
    if (r < -2147483648.0) return std::numeric_limits<int>::min();
    return static_cast<int>(r);
}

/// A uniform double in [0, 1) from the generator's raw 64 bits: the same on every standard
/// library (std::uniform_real_distribution is not).
double uniform01(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

/// A uniform integer in [0, n] (n small: the modulo bias is below 2^-40).
int uniform_int(std::mt19937_64& rng, int n) {
    return static_cast<int>(rng() % (static_cast<std::uint64_t>(n) + 1));
}

}  // namespace

pixel_view region_of(const image& img, const crop_box& box) {
    const std::uint8_t* base = img.data().data();
    return {base + static_cast<std::size_t>(box.y) * img.row_bytes() +
                static_cast<std::size_t>(box.x) * static_cast<std::size_t>(img.channels()),
            img.row_bytes(),
            box.width,
            box.height,
            img.channels(),
            base + img.data().size()};
}

image resample_view(const pixel_view& v, pixel_format format, int width, int height,
                    interpolation interp) {
    if (interp == interpolation::antialias) return resample_antialias(v, format, width, height);
    image out(width, height, format);
    resample_view_into(v, format, width, height, interp, out.data().data());
    return out;
}

void resample_view_into(const pixel_view& v, pixel_format format, int width, int height,
                        interpolation interp, std::uint8_t* out) {
    const std::size_t row =
        static_cast<std::size_t>(width) * static_cast<std::size_t>(channels_of(format));
    if (interp == interpolation::antialias) {
        const image img = resample_antialias(v, format, width, height);
        std::memcpy(out, img.data().data(), img.data().size());
        return;
    }
    // Bilinear RGB in AVX2 where it applies: ~2x faster than cv::resize, within a level of it.
    if (interp == interpolation::bilinear &&
        bilinear_detail::resize_rgb(v, out, row, width, height)) {
        return;
    }
    opencv_on_the_calling_thread();
    cv::Mat dst(height, width, CV_8UC(channels_of(format)), out, row);
    // Straight from the pixels (an OpenCV header over them), without copying them first.
    const cv::Mat src(v.height, v.width, CV_8UC(v.channels),
                      const_cast<std::uint8_t*>(v.data),  // NOLINT: cv::Mat has no const view
                      v.stride);
    cv::resize(src, dst, cv::Size(width, height), 0, 0, cv_interpolation(interp));
}

image orient(const image& img, int orientation) {
    if (orientation <= 1 || orientation > 8) return img;
    const bool swap = orientation >= 5;
    image out(swap ? img.height() : img.width(), swap ? img.width() : img.height(), img.format());
    cv::Mat src = view(img);
    cv::Mat dst = view(out);
    // The same mapping as OpenCV's own EXIF handling (and the EXIF 2.3 specification).
    switch (orientation) {
        case 2:
            cv::flip(src, dst, 1);
            break;
        case 3:
            cv::flip(src, dst, -1);
            break;
        case 4:
            cv::flip(src, dst, 0);
            break;
        case 5:
            cv::transpose(src, dst);
            break;
        case 6:
            cv::transpose(src, dst);
            cv::flip(dst, dst, 1);
            break;
        case 7:
            cv::transpose(src, dst);
            cv::flip(dst, dst, -1);
            break;
        case 8:
            cv::transpose(src, dst);
            cv::flip(dst, dst, 0);
            break;
        default:
            break;
    }
    return out;
}

void set_opencv_threads(int n) {
    opencv_threads_chosen = true;
    cv::setNumThreads(std::max(n, 0));
}

image resize(const image& img, int width, int height, interpolation interp) {
    require_pixels(img, "resize");
    if (width <= 0 || height <= 0) {
        throw invalid_argument("resize: target " + std::to_string(width) + "x" +
                               std::to_string(height) + " is not positive");
    }
    if (img.width() == width && img.height() == height) return img;
    return resample(img, {0, 0, img.width(), img.height()}, width, height, interp);
}

image crop(const image& img, const crop_box& box) {
    require_pixels(img, "crop");
    if (box.width <= 0 || box.height <= 0 || box.x < 0 || box.y < 0 ||
        box.x > img.width() - box.width || box.y > img.height() - box.height) {
        throw invalid_argument(
            "crop: box " + std::to_string(box.width) + "x" + std::to_string(box.height) + " at (" +
            std::to_string(box.x) + ", " + std::to_string(box.y) + ") is not inside the " +
            std::to_string(img.width()) + "x" + std::to_string(img.height()) + " image");
    }
    image out(box.width, box.height, img.format());
    const std::size_t c = static_cast<std::size_t>(img.channels());
    for (int y = 0; y < box.height; ++y) {
        std::memcpy(out.data().data() + static_cast<std::size_t>(y) * out.row_bytes(),
                    img.row(box.y + y).data() + static_cast<std::size_t>(box.x) * c,
                    out.row_bytes());
    }
    return out;
}

image center_crop(const image& img, int width, int height) {
    require_pixels(img, "center_crop");
    if (width <= 0 || height <= 0) {
        throw invalid_argument("center_crop: size " + std::to_string(width) + "x" +
                               std::to_string(height) + " is not positive");
    }
    if (width <= img.width() && height <= img.height()) {
        return crop(img, {round_half_even((img.width() - width) / 2.0),
                          round_half_even((img.height() - height) / 2.0), width, height});
    }
    // Larger than the image along some axis: torchvision pads with zeros, (d // 2) before.
    image out(width, height, img.format());
    std::memset(out.data().data(), 0, out.data().size());
    const std::size_t c = static_cast<std::size_t>(img.channels());
    // Where the source's region starts (src_*) and where it lands (dst_*), per axis.
    auto axis = [](int src, int dst, int& src_at, int& dst_at, int& len) {
        if (dst <= src) {
            src_at = round_half_even((src - dst) / 2.0);
            dst_at = 0;
            len = dst;
        } else {
            src_at = 0;
            dst_at = (dst - src) / 2;
            len = src;
        }
    };
    int sx = 0, dx = 0, w = 0, sy = 0, dy = 0, h = 0;
    axis(img.width(), width, sx, dx, w);
    axis(img.height(), height, sy, dy, h);
    for (int y = 0; y < h; ++y) {
        std::memcpy(out.data().data() + static_cast<std::size_t>(dy + y) * out.row_bytes() +
                        static_cast<std::size_t>(dx) * c,
                    img.row(sy + y).data() + static_cast<std::size_t>(sx) * c,
                    static_cast<std::size_t>(w) * c);
    }
    return out;
}

crop_box random_resized_crop_box(image_size size, std::mt19937_64& rng,
                                 const random_resized_crop_options& options) {
    const auto [smin, smax] = options.scale;
    const auto [rmin, rmax] = options.ratio;
    if (size.width <= 0 || size.height <= 0) {
        throw invalid_argument("random_resized_crop: the image size is not positive");
    }
    if (!(smin > 0 && smin <= smax && rmin > 0 && rmin <= rmax && std::isfinite(smax) &&
          std::isfinite(rmax))) {
        throw invalid_argument(
            "random_resized_crop: scale and ratio must be finite positive ranges with min <= max");
    }
    // torchvision's RandomResizedCrop.get_params, step for step.
    const double area = static_cast<double>(size.width) * size.height;
    const double log_rmin = std::log(rmin);
    const double log_rmax = std::log(rmax);
    for (int attempt = 0; attempt < 10; ++attempt) {
        const double target_area = area * (smin + (smax - smin) * uniform01(rng));
        const double aspect = std::exp(log_rmin + (log_rmax - log_rmin) * uniform01(rng));
        const int w = round_half_even(std::sqrt(target_area * aspect));
        const int h = round_half_even(std::sqrt(target_area / aspect));
        if (w > 0 && w <= size.width && h > 0 && h <= size.height) {
            const int y = uniform_int(rng, size.height - h);
            const int x = uniform_int(rng, size.width - w);
            return {x, y, w, h};
        }
    }
    const double in_ratio = static_cast<double>(size.width) / size.height;
    int w = size.width;
    int h = size.height;
    if (in_ratio < rmin) {
        h = round_half_even(w / rmin);
    } else if (in_ratio > rmax) {
        w = round_half_even(h * rmax);
    }
    w = std::max(1, std::min(w, size.width));
    h = std::max(1, std::min(h, size.height));
    return {(size.width - w) / 2, (size.height - h) / 2, w, h};
}

image random_resized_crop(const image& img, int width, int height, std::mt19937_64& rng,
                          const random_resized_crop_options& options) {
    require_pixels(img, "random_resized_crop");
    const crop_box box = random_resized_crop_box(img.size(), rng, options);
    if (width <= 0 || height <= 0) {
        throw invalid_argument("random_resized_crop: target " + std::to_string(width) + "x" +
                               std::to_string(height) + " is not positive");
    }
    return resample(img, box, width, height, options.interp);
}

tensor normalize(const image& img, const normalize_options& options) {
    require_pixels(img, "normalize");
    const int c = img.channels();
    if (options.mean.size() != static_cast<std::size_t>(c) ||
        options.std.size() != static_cast<std::size_t>(c)) {
        throw invalid_argument("normalize: mean and std need " + std::to_string(c) +
                               " entries for a " + to_string(img.format()) + " image (got " +
                               std::to_string(options.mean.size()) + " and " +
                               std::to_string(options.std.size()) + ")");
    }
    float scale[4];
    float offset[4];
    for (int k = 0; k < c; ++k) {
        const float s = options.std[static_cast<std::size_t>(k)];
        if (s == 0.0F || !std::isfinite(s)) {
            throw invalid_argument("normalize: std[" + std::to_string(k) + "] must be non-zero");
        }
        scale[k] = 1.0F / (255.0F * s);
        offset[k] = -options.mean[static_cast<std::size_t>(k)] / s;
    }
    const std::int64_t h = img.height();
    const std::int64_t w = img.width();
    tensor out(
        dtype::f32,
        options.chw ? std::vector<std::int64_t>{c, h, w} : std::vector<std::int64_t>{h, w, c},
        options.alloc);
    float* dst = out.data_as<float>();
    const std::uint8_t* src = img.data().data();
    const std::size_t plane = static_cast<std::size_t>(h * w);
    if (options.chw) {
        for (std::size_t i = 0; i < plane; ++i) {
            for (int k = 0; k < c; ++k) {
                dst[static_cast<std::size_t>(k) * plane + i] =
                    static_cast<float>(
                        src[i * static_cast<std::size_t>(c) + static_cast<std::size_t>(k)]) *
                        scale[k] +
                    offset[k];
            }
        }
    } else {
        for (std::size_t i = 0; i < plane; ++i) {
            for (int k = 0; k < c; ++k) {
                const std::size_t at =
                    i * static_cast<std::size_t>(c) + static_cast<std::size_t>(k);
                dst[at] = static_cast<float>(src[at]) * scale[k] + offset[k];
            }
        }
    }
    return out;
}

namespace detail {

image horizontal_flip_fn::operator()(const image& img) const {
    require_pixels(img, "horizontal_flip");
    image out(img.width(), img.height(), img.format());
    mirror_rows(img.data().data(), img.row_bytes(), out.data().data(), out.row_bytes(), img.width(),
                img.height(), img.channels());
    return out;
}

image horizontal_flip_fn::operator()(image&& img) const {
    require_pixels(img, "horizontal_flip");
    mirror_rows_in_place(img.data().data(), img.row_bytes(), img.width(), img.height(),
                         img.channels());
    return std::move(img);
}

tensor to_tensor_fn::operator()(image&& img) const {
    require_pixels(img, "to_tensor");
    std::vector<std::int64_t> shape{img.height(), img.width(), img.channels()};
    return tensor(img.release(), dtype::u8, std::move(shape));
}

tensor to_tensor_fn::operator()(const image& img) const {
    return (*this)(image(img));
}

namespace {

std::string describe(const image& img) {
    return std::to_string(img.width()) + "x" + std::to_string(img.height()) + " " +
           to_string(img.format());
}

}  // namespace

tensor collate_fn::operator()(std::vector<image> images, const collate_options& options) const {
    if (images.empty()) throw invalid_argument("collate: the batch is empty");
    const image& first = images.front();
    require_pixels(first, "collate");
    for (std::size_t i = 1; i < images.size(); ++i) {
        const image& img = images[i];
        if (img.size() != first.size() || img.format() != first.format()) {
            throw invalid_argument("collate: image " + std::to_string(i) + " is " + describe(img) +
                                   " but image 0 is " + describe(first) +
                                   "; resize or crop to one size before batching");
        }
    }
    const auto n = static_cast<std::int64_t>(images.size());
    tensor out(dtype::u8, {n, first.height(), first.width(), first.channels()}, options.alloc);
    const std::size_t each = first.data().size();
    auto* dst = static_cast<std::uint8_t*>(out.data());
    for (std::size_t i = 0; i < images.size(); ++i) {
        std::memcpy(dst + i * each, images[i].data().data(), each);
    }
    return out;
}

}  // namespace detail
}  // namespace ferry::ops
