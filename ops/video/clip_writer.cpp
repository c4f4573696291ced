// SPDX-License-Identifier: Apache-2.0
/// \file
/// `clip_writer`: decoded frames scaled and converted by swscale into the clip's buffer.
#include "clip_writer.hpp"

#include <algorithm>
#include <cstring>

namespace ferry::ops::av {
namespace {

constexpr const char* op = "decode_video";

int sws_flags(scale_filter f) {
    switch (f) {
        case scale_filter::nearest:
            return SWS_POINT;
        case scale_filter::bilinear:
            return SWS_BILINEAR;
        case scale_filter::bicubic:
            return SWS_BICUBIC;
        case scale_filter::area:
            return SWS_AREA;
        case scale_filter::lanczos:
            return SWS_LANCZOS;
    }
    return SWS_BILINEAR;
}

AVPixelFormat output_format(frame_format f) {
    switch (f) {
        case frame_format::rgb:
            return AV_PIX_FMT_RGB24;
        case frame_format::bgr:
            return AV_PIX_FMT_BGR24;
        case frame_format::gray:
            return AV_PIX_FMT_GRAY8;
        case frame_format::rgba:  // refused before a decoder is made (decode_packets)
            return AV_PIX_FMT_RGBA;
    }
    return AV_PIX_FMT_RGB24;
}

}  // namespace

std::size_t clip_writer::write(const AVFrame* f, const std::vector<std::int64_t>& slots,
                               std::int64_t frame) {
    const auto pixels =
        static_cast<std::uint64_t>(f->width) * static_cast<std::uint64_t>(f->height);
    if (f->width <= 0 || f->height <= 0 || (opt_.max_pixels != 0 && pixels > opt_.max_pixels)) {
        throw decode_error(std::string(op) + ": " + source_ + ": a frame of " +
                           std::to_string(f->width) + "x" + std::to_string(f->height) +
                           " is over the limit of " + std::to_string(opt_.max_pixels) +
                           " pixels (max_pixels)");
    }
    if (clip_.empty()) allocate(f, slots.size());
    prepare_scaler(f);
    // The first output slot of this frame gets the scaler's output directly; repeats copy.
    std::size_t first = slots.size();
    for (std::size_t i = 0; i < slots.size(); ++i) {
        if (slots[i] != frame) continue;
        auto dst_frame = clip_.frame(static_cast<int>(i));
        if (first == slots.size()) {
            first = i;
            std::uint8_t* dst[4] = {dst_frame.data(), nullptr, nullptr, nullptr};
            int stride[4] = {clip_.width() * clip_.channels(), 0, 0, 0};
            const int ret = sws_scale(sws_.get(), f->data, f->linesize, 0, f->height, dst, stride);
            if (ret <= 0) throw_decode(op, source_, "swscale failed", ret);
        } else {
            const auto src = clip_.frame(static_cast<int>(first));
            std::memcpy(dst_frame.data(), src.data(), src.size());
        }
    }
    return first;
}

void clip_writer::prepare_scaler(const AVFrame* f) {
    // A new scaler only when the frames' size or format change (mid-stream resolution changes
    // are scaled to the clip's size like the rest).
    if (!sws_ || f->width != src_width_ || f->height != src_height_ || f->format != src_format_) {
        sws_.reset(sws_getContext(f->width, f->height, static_cast<AVPixelFormat>(f->format),
                                  clip_.width(), clip_.height(), output_format(opt_.format),
                                  sws_flags(opt_.filter), nullptr, nullptr, nullptr));
        if (!sws_) {
            const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(f->format));
            throw decode_error(std::string(op) + ": " + source_ + ": swscale cannot convert " +
                               (name != nullptr ? name : "unknown") + " frames of " +
                               std::to_string(f->width) + "x" + std::to_string(f->height));
        }
        src_width_ = f->width;
        src_height_ = f->height;
        src_format_ = f->format;
        colour_ = -1;
    }
    // YUV -> RGB with the stream's own matrix and range (BT.601 when unspecified). Setting them
    // rebuilds swscale's tables, so only when the frames' colour description changes.
    const int colour =
        static_cast<int>(f->colorspace) * 2 + (f->color_range == AVCOL_RANGE_JPEG ? 1 : 0);
    if (colour != colour_) {
        sws_setColorspaceDetails(sws_.get(), sws_getCoefficients(f->colorspace), colour & 1,
                                 sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
        colour_ = colour;
    }
}

void clip_writer::fit(std::uint64_t frames, int w, int h) const {
    std::uint64_t bytes = 0;
    const bool over =
        __builtin_mul_overflow(static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(h) *
                                   static_cast<std::uint64_t>(channels_of(opt_.format)),
                               frames, &bytes);
    if (opt_.max_bytes != 0 && (over || bytes > opt_.max_bytes)) {
        throw invalid_argument(std::string(op) + ": " + source_ + ": " + std::to_string(frames) +
                               " frames of " + std::to_string(w) + "x" + std::to_string(h) +
                               " need " + (over ? "more than 2^64" : std::to_string(bytes)) +
                               " bytes, over max_bytes (" + std::to_string(opt_.max_bytes) + ")");
    }
}

void clip_writer::check_size(std::uint64_t frames, int width, int height) const {
    const bool resize = opt_.resize.width > 0 && opt_.resize.height > 0;
    fit(frames, resize ? opt_.resize.width : std::max(width, 1),
        resize ? opt_.resize.height : std::max(height, 1));
}

void clip_writer::allocate(const AVFrame* f, std::size_t frames) {
    const bool resize = opt_.resize.width > 0 && opt_.resize.height > 0;
    const int w = resize ? opt_.resize.width : f->width;
    const int h = resize ? opt_.resize.height : f->height;
    fit(frames, w, h);
    clip_ = video_clip(static_cast<int>(frames), w, h, opt_.format);
}

}  // namespace ferry::ops::av
