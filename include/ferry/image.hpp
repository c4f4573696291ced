// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::image` (uint8, HWC) and the image ops: decode, resize, crop, flip, normalize,
/// collate (declared in `ferry/collate.hpp`). Plain functions to pass to `map`; no OpenCV or
/// libjpeg header is included here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferry/bytes.hpp"
#include "ferry/collate.hpp"
#include "ferry/detail/owned_buffer.hpp"
#include "ferry/export.hpp"
#include "ferry/pixels.hpp"
#include "ferry/tensor.hpp"

namespace ferry {

/// An image's size (ferry/pixels.hpp's `pixel_size`, which video frames share as `frame_size`).
/// `ferry::pixel_format`, `channels_of` and `to_string` are there too.
using image_size = pixel_size;

/// An 8-bit image: `height() x width() x channels()` bytes, row-major, channels interleaved
/// (HWC), rows packed (no padding). Owns its pixels; copies copy them, moves are free.
class FERRY_API image {
  public:
    image() = default;
    /// An image with uninitialised pixels. Throws `ferry::invalid_argument` on a non-positive
    /// size.
    image(int width, int height, pixel_format format = pixel_format::rgb);

    [[nodiscard]] int width() const noexcept { return width_; }
    [[nodiscard]] int height() const noexcept { return height_; }
    [[nodiscard]] int channels() const noexcept { return channels_of(format_); }
    [[nodiscard]] pixel_format format() const noexcept { return format_; }
    [[nodiscard]] image_size size() const noexcept { return {width_, height_}; }
    [[nodiscard]] bool empty() const noexcept { return buf_.data() == nullptr; }
    /// Bytes per row: `width() * channels()`.
    [[nodiscard]] std::size_t row_bytes() const noexcept {
        return static_cast<std::size_t>(width_) * static_cast<std::size_t>(channels());
    }

    /// The pixels: `height() * row_bytes()` contiguous bytes.
    [[nodiscard]] std::span<const std::uint8_t> data() const noexcept {
        return {reinterpret_cast<const std::uint8_t*>(buf_.data()), buf_.size()};
    }
    [[nodiscard]] std::span<std::uint8_t> data() noexcept {
        return {reinterpret_cast<std::uint8_t*>(buf_.data()), buf_.size()};
    }
    /// Row `y`.
    [[nodiscard]] std::span<const std::uint8_t> row(int y) const noexcept {
        return data().subspan(static_cast<std::size_t>(y) * row_bytes(), row_bytes());
    }
    /// One sample (unchecked): channel `c` of the pixel at column `x`, row `y`.
    [[nodiscard]] std::uint8_t at(int x, int y, int c) const noexcept {
        return data()[static_cast<std::size_t>(y) * row_bytes() +
                      static_cast<std::size_t>(x) * static_cast<std::size_t>(channels()) +
                      static_cast<std::size_t>(c)];
    }

    /// Gives up the pixel storage (for zero-copy conversions); leaves the image empty.
    [[nodiscard]] buffer release() noexcept;

  private:
    detail::owned_buffer<> buf_{};
    detail::moved_to_zero<int> width_{};
    detail::moved_to_zero<int> height_{};
    pixel_format format_ = pixel_format::rgb;  ///< a move leaves it in the source
};

/// Resampling filters.
enum class interpolation : std::uint8_t {
    nearest,
    /// The default; OpenCV's INTER_LINEAR geometry, no antialiasing. 3-channel images go
    /// through ferry's AVX2 kernel where the CPU has AVX2 and the reduction is under ~3x
    /// (about twice as fast as cv::resize; within one level of it, mean ~0.13); the rest is
    /// cv::resize itself.
    bilinear,
    bicubic,
    area,  ///< averages the source pixels each output pixel covers: antialiases strong
           ///< downscales (use it where Pillow/torchvision would antialias)
    lanczos,
    antialias,  ///< Pillow's `Image.resize(size, BILINEAR)`, pixel for pixel (for a crop,
                ///< `im.crop(box).resize(...)`, as torchvision's RandomResizedCrop): a
                ///< triangle filter whose support widens with the downscale factor, so it
                ///< antialiases, in two separable passes with fixed-point coefficients. The
                ///< one to compare with Pillow's and torchvision's antialiased resize.
                ///< Channels are filtered independently (Pillow premultiplies RGBA by alpha)
};

/// What a file holds, read from its header without decoding the pixels.
struct image_info {
    std::string format;  ///< "jpeg", "png", "webp" or "bmp"
    int width = 0;       ///< as stored (before EXIF orientation)
    int height = 0;
    int channels = 0;   ///< channels stored: 1 gray, 2 gray+alpha, 3 colour, 4 colour+alpha
                        ///< (or CMYK for JPEG)
    int bit_depth = 8;  ///< bits per stored sample: 16 for 16-bit PNGs; for palette images
                        ///< (PNG, BMP) the bits of a palette index (1, 2, 4 or 8)
    /// EXIF orientation, 1..8 (1 = as stored), from a JPEG's APP1 segment or a PNG's eXIf
    /// chunk. Values outside 1..8 (0, 9 and above), tags of a type other than SHORT or LONG and
    /// damaged EXIF data read as 1: metadata that cannot be read never fails a decode.
    int orientation = 1;

    /// The size as seen after the EXIF orientation (what `decode_image` returns with
    /// `apply_orientation`): width and height swapped for orientations 5..8.
    [[nodiscard]] image_size oriented_size() const noexcept {
        return orientation >= 5 && orientation <= 8 ? image_size{height, width}
                                                    : image_size{width, height};
    }
};

/// A crop rectangle in pixels.
struct crop_box {
    int x = 0;
    int y = 0;
    int width = 0;
    int height = 0;
    friend bool operator==(const crop_box&, const crop_box&) = default;
};

/// How `decode_image` decodes.
struct decode_options {
    /// Channels wanted: RGB by default; gray, BGR, or RGBA (alpha kept) on request. Alpha in the
    /// file is dropped unless `rgba` is asked for.
    pixel_format format = pixel_format::rgb;
    /// When set, the result is exactly this size. A JPEG larger than twice the target is first
    /// decoded at 1/2, 1/4 or 1/8 scale (libjpeg-turbo's DCT scaling) — much less work — then
    /// resized with `interp`.
    image_size resize{};
    /// When set (and `resize` is not), decode at the smallest reduced scale whose result is
    /// still at least this large, and stop there (no resize): for a crop that follows. Like
    /// `resize`, it is meant for the image as seen, after the EXIF orientation (a 90-degree
    /// orientation swaps the target's width and height for the stored image).
    image_size reduce_to{};
    /// The resize filter.
    interpolation interp = interpolation::bilinear;
    /// Apply the EXIF orientation (a JPEG's APP1 segment, a PNG's eXIf chunk), so the image
    /// comes out the way it is meant to be seen.
    bool apply_orientation = true;
    /// Images whose header declares more pixels than this are refused before any allocation,
    /// and so is a `resize` or `reduce_to` target larger than this (`ferry::invalid_argument`).
    std::uint64_t max_pixels = 128'000'000;
    /// Corrupt or truncated data the decoder could paper over (libjpeg's warnings, e.g.
    /// "Premature end of JPEG file") is an error. False accepts such images, partly grey, the
    /// way OpenCV does.
    bool strict = true;
    /// When set, only this rectangle of the image comes out: `crop->width x crop->height`
    /// pixels, the same as `ops::crop(decode_image(data, without crop), *crop)` at full scale.
    /// The box is in the coordinates of the image as seen, after the EXIF orientation (when
    /// `apply_orientation`). A JPEG decodes only the rows and iMCU columns the box touches
    /// (libjpeg's `jpeg_crop_scanline` and `jpeg_skip_scanlines`): no inverse DCT, upsampling
    /// or colour conversion outside it, though the entropy data before the box must still be
    /// read; when `strict`, the rest is checked as `check_rest` says (by default, a scan for
    /// the EOI marker, so a truncated file is still an error). PNG,
    /// WebP and BMP are decoded whole, then cropped (the same pixels, no speed-up).
    ///
    /// With `reduce_to` (or `resize`), the JPEG is decoded at the smallest DCT scale 1/d
    /// (d = 8, 4, 2, 1) at which the cropped region is still at least that large, and the region
    /// at that scale is what comes out (then resized, with `resize`): the pixels of the 1/d
    /// image that cover any part of the box, i.e. the box scaled by 1/d and rounded outward,
    /// `[floor(x / d), ceil((x + width) / d))` along each axis of the stored image.
    ///
    /// A box that is empty or does not lie inside the image throws `ferry::invalid_argument`
    /// (as `ops::crop` does).
    /// \code
    ///   auto region = ferry::ops::decode_image(bytes, {.crop = ferry::crop_box{64, 32, 224,
    ///   224}});
    /// \endcode
    std::optional<crop_box> crop{};
    /// JPEG only: how far under the target (`resize` or `reduce_to`) a DCT-scaled decode may
    /// come, as a fraction of it, so that libjpeg-turbo's SIMD 1/2, 1/4 and 1/8 scales are
    /// taken when they nearly cover the target (then `resize` scales up the little that is
    /// missing; with `reduce_to` alone the result may be that much smaller than asked). 0, the
    /// default, never comes under the target; at most 0.5. perf/media/README.md gives the quality
    /// each value costs against the full decode and resize.
    double scale_slack = 0;
    /// JPEG only: libjpeg-turbo's fast integer inverse DCT (`JDCT_IFAST`) and plain (not
    /// fancy) chroma upsampling, `tjbench -fastdct -fastupsample`: less CPU per image, pixels
    /// within a few levels of the accurate decode (perf/media/README.md gives the difference).
    bool fast = false;
    /// JPEG only, when `strict` and `crop` decodes part of a baseline JPEG: what is checked below
    /// the region. false (the default): the rest of the data is scanned for the EOI marker,
    /// which finds a truncated file (the common damage) in microseconds; damage inside the
    /// entropy data below the region, which cannot change the pixels returned, goes unnoticed.
    /// true: the rest of the entropy data is decoded as in a whole-image decode (its Huffman
    /// data, not its pixels), so any damage anywhere is an error, at 6-9% more CPU per crop.
    bool check_rest = false;
};

/// Options for `normalize`.
struct normalize_options {
    /// Per-channel mean and standard deviation of the [0, 1]-scaled values, in the image's
    /// channel order. The defaults are ImageNet's (RGB).
    std::vector<float> mean{0.485F, 0.456F, 0.406F};
    std::vector<float> std{0.229F, 0.224F, 0.225F};
    /// `true`: C x H x W (what PyTorch models take); `false`: H x W x C.
    bool chw = true;
    /// Where the result is allocated.
    allocator alloc{};
};

/// Options for `random_resized_crop` (torchvision's RandomResizedCrop).
struct random_resized_crop_options {
    /// Range of the crop's area as a fraction of the image's.
    std::pair<double, double> scale{0.08, 1.0};
    /// Range of the crop's aspect ratio (width / height), sampled log-uniformly.
    std::pair<double, double> ratio{3.0 / 4.0, 4.0 / 3.0};
    interpolation interp = interpolation::bilinear;
};

/// Options for `decode_random_resized_crop`: `random_resized_crop`'s and the decode's.
struct decode_random_resized_crop_options {
    /// Range of the crop's area as a fraction of the image's.
    std::pair<double, double> scale{0.08, 1.0};
    /// Range of the crop's aspect ratio (width / height), sampled log-uniformly.
    std::pair<double, double> ratio{3.0 / 4.0, 4.0 / 3.0};
    /// The filter of the final resize.
    interpolation interp = interpolation::bilinear;
    /// Channels wanted (as `decode_options::format`).
    pixel_format format = pixel_format::rgb;
    /// As `decode_options::max_pixels`: counts the stored image, not the crop.
    std::uint64_t max_pixels = 128'000'000;
    /// As `decode_options::strict`.
    bool strict = true;
    /// As `decode_options::scale_slack`: how far under `width x height` the DCT-scaled region
    /// may come before the final resize.
    double scale_slack = 0;
    /// As `decode_options::fast`.
    bool fast = false;
    /// As `decode_options::check_rest`.
    bool check_rest = false;
    /// Mirror the result left to right (torchvision's RandomHorizontalFlip when drawn).
    bool flip = false;
};

class image_slot;  // <ferry/batch_slots.hpp>

namespace ops {
namespace detail {
struct FERRY_API decode_image_fn {
    image operator()(std::span<const std::byte> data, const decode_options& options = {}) const;
};
struct FERRY_API horizontal_flip_fn {
    image operator()(const image& img) const;
    image operator()(image&& img) const;
    /// A slot of `ferry::batch_slots`, mirrored in place (its pixels are the batch's).
    image_slot operator()(image_slot slot) const;
};
struct FERRY_API to_tensor_fn {
    tensor operator()(image&& img) const;
    tensor operator()(const image& img) const;
};
}  // namespace detail

/// Reads the format, size, channels and EXIF orientation from an image's header. Throws
/// `ferry::decode_error` when the bytes are not a supported image or the header is damaged.
[[nodiscard]] FERRY_API image_info probe_image(std::span<const std::byte> data);

/// Decodes JPEG (baseline, progressive, grayscale, CMYK), PNG (1–16-bit, palette, gray, alpha),
/// WebP (lossy and lossless) and BMP (1/4/8-bit palette, 16/24/32-bit; alpha only from a V4+
/// header's alpha mask, the fourth byte of a plain 32-bit BMP is unused) to an 8-bit image. The
/// format is read from the bytes, not a file name. Throws `ferry::decode_error` naming the
/// cause for anything it cannot decode (empty, truncated, corrupt, unsupported, over
/// `max_pixels`), in bounded time and memory.
/// \code
///   ferry::image img = ferry::ops::decode_image(bytes, {.resize = {224, 224}});
/// \endcode
inline constexpr detail::decode_image_fn decode_image{};

/// Resizes to `width x height` (bilinear by default; `interpolation::antialias` to antialias a
/// downscale as Pillow does). Throws `ferry::invalid_argument` on a non-positive size.
[[nodiscard]] FERRY_API image resize(const image& img, int width, int height,
                                     interpolation interp = interpolation::bilinear);

/// How many threads OpenCV may use inside one image op (`cv::setNumThreads(n)`, process-wide;
/// 0 or 1: on the calling thread only). By default the first image op that calls OpenCV sets 1:
/// a pipeline already runs an op per item on each of its threads, and OpenCV's own parallel
/// loops on top of that (TBB, sized to the machine) cost CPU and wake-ups without adding
/// throughput (the perf/compare job: 8% less CPU, 8% more images/s on 2 cores). Call this
/// before the first image op to choose otherwise (`cv::getNumThreads()` tells what is set).
FERRY_API void set_opencv_threads(int n);

/// Which decoder turned the entropy-coded data of this process's JPEG decodes into
/// coefficients, one count per decode that reached the image data (probes are not counted):
/// ferry's baseline Huffman decoder, or libjpeg-turbo's and why. The same counts show per stage
/// in `stage_stats::counters`, named "jpeg huffman: ferry", "jpeg huffman: libjpeg" and, per
/// reason, "jpeg huffman: libjpeg, switched off" (and so on).
struct jpeg_huffman_counts {
    std::uint64_t ferry = 0;  ///< ferry's decoder
    /// Of `ferry`, the files of several scans: progressive ones, and sequential ones with
    /// components in scans of their own.
    std::uint64_t several_scans = 0;
    std::uint64_t libjpeg = 0;       ///< libjpeg-turbo's: the sum of the reasons below
    std::uint64_t switched_off = 0;  ///< `FERRY_JPEG_HUFFMAN=libjpeg` in the environment
    /// Files ferry's decoder does not cover: arithmetic-coded, lossless, 12-bit.
    std::uint64_t not_baseline = 0;
    /// The libjpeg loaded at run time lays out its entropy decoder differently from the
    /// libjpeg-turbo ferry was built against (a build on 2.x running with 3.x, both
    /// libjpeg.so.62), or ferry was built against another libjpeg than libjpeg-turbo.
    std::uint64_t library_mismatch = 0;
    std::uint64_t table_refused = 0;  ///< a Huffman table ferry's decoder cannot use
    /// A file of several scans with one that ferry's decoder did not take (libjpeg's decoded it
    /// and the scans after it); libjpeg refuses what ferry's decoder would, so this stays 0
    /// unless the two disagree.
    std::uint64_t scan_refused = 0;
};

/// The counts since the process started (see `jpeg_huffman_counts`).
[[nodiscard]] FERRY_API jpeg_huffman_counts jpeg_huffman_use() noexcept;

/// The `width x height` rectangle at `box`. Throws `ferry::invalid_argument` when the box does
/// not lie inside the image.
[[nodiscard]] FERRY_API image crop(const image& img, const crop_box& box);

/// The central `width x height` region, as torchvision's CenterCrop: the offset is
/// `(size - crop) / 2` rounded half to even; where the image is smaller than the crop it is
/// padded with zeros, `(crop - size) / 2` (rounded down) before it.
[[nodiscard]] FERRY_API image center_crop(const image& img, int width, int height);

/// The rectangle torchvision's RandomResizedCrop would pick for an image of `size`, drawn from
/// `rng`: up to 10 tries for an area in `scale` and a ratio in `ratio` that fits, else a
/// central crop at the nearest allowed ratio. Same generator state, same box. torchvision's
/// `torch.empty(1).uniform_(a, b)` is `a + (b - a) * u` with `u = (rng() >> 11) * 2^-53`, and
/// `torch.randint(0, n)` is `rng() % n`; the one difference: where torchvision's fallback box
/// would be empty (a 1-pixel-wide image and ratios above 2), this one is 1 pixel. Golden boxes
/// computed independently pin this (tests/image/rrc_golden.py).
[[nodiscard]] FERRY_API crop_box random_resized_crop_box(
    image_size size, std::mt19937_64& rng, const random_resized_crop_options& options = {});

/// A random crop (see `random_resized_crop_box`) resized to `width x height`.
/// \code
///   std::mt19937_64 rng(seed ^ item_index);        // same seed, same crop
///   auto out = ferry::ops::random_resized_crop(img, 224, 224, rng);
/// \endcode
[[nodiscard]] FERRY_API image random_resized_crop(const image& img, int width, int height,
                                                  std::mt19937_64& rng,
                                                  const random_resized_crop_options& options = {});

/// `random_resized_crop(decode_image(data), width, height, rng, ...)` in one step that decodes
/// only what the crop needs: the box is drawn from the header's size (after EXIF orientation)
/// with the same draw as `random_resized_crop_box`, so the same generator state picks the same
/// box; the JPEG is then decoded with `decode_options::crop` at the smallest DCT scale at which
/// the box still has at least `width x height` pixels, and resized to `width x height`. PNG,
/// WebP and BMP are decoded whole and cropped.
///
/// The geometry is the same as the two-step version's; the pixels are close but not
/// bit-identical when a reduced DCT scale is used (the reduced IDCT averages where the full-size
/// resize samples, and the box is rounded outward to whole reduced pixels): a mean absolute
/// difference of 0.18 levels out of 255 on average, 0.58 at worst, over 200 crops of 500x375
/// photo-like JPEGs to 224x224 and 112x112 (tests/image/roi.cpp). At full scale they
/// are the same. Throws `ferry::decode_error` as `decode_image` does, and
/// `ferry::invalid_argument` for a non-positive target or bad scale or ratio ranges.
/// \code
///   std::mt19937_64 rng(seed ^ item_index);
///   auto out = ferry::ops::decode_random_resized_crop(bytes, 224, 224, rng);
/// \endcode
[[nodiscard]] FERRY_API image decode_random_resized_crop(
    std::span<const std::byte> data, int width, int height, std::mt19937_64& rng,
    const decode_random_resized_crop_options& options = {});

/// `decode_random_resized_crop` at the slot's size, written into `slot` (a place in a batch of
/// `ferry::batch_slots`, `#include <ferry/batch_slots.hpp>`): the same draw and the same pixels,
/// with no image of its own; a JPEG's crop is resized from the decoder's rows straight into the
/// slot. Returns `slot`, for `collate`. Throws as `decode_random_resized_crop` does, and
/// `ferry::invalid_argument` for an empty slot or one whose format is not `options.format`.
[[nodiscard]] FERRY_API image_slot decode_random_resized_crop_into(
    std::span<const std::byte> data, image_slot slot, std::mt19937_64& rng,
    const decode_random_resized_crop_options& options = {});

/// The mirror image (left and right swapped). From an rvalue the pixels are mirrored in place,
/// with no new buffer: `img = horizontal_flip(std::move(img))`; a `ferry::image_slot` is
/// mirrored in place.
inline constexpr detail::horizontal_flip_fn horizontal_flip{};

/// `(pixel / 255 - mean[c]) / std[c]` as float32, C x H x W by default (H x W x C with
/// `.chw = false`). Throws `ferry::invalid_argument` when `mean` or `std` do not have one
/// entry per channel, or a `std` entry is 0. With mean 0 and std 1 this is torchvision's
/// ToTensor.
[[nodiscard]] FERRY_API tensor normalize(const image& img, const normalize_options& options = {});

/// The image as a `u8` H x W x C tensor: no copy from an rvalue (the pixels move), one copy
/// from an lvalue.
inline constexpr detail::to_tensor_fn to_tensor{};

}  // namespace ops
}  // namespace ferry
