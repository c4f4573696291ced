// SPDX-License-Identifier: Apache-2.0
/// \file
/// `decode_video` and `load_video`: the selected frames of a packet set, decoded with libavcodec
/// (jumping from keyframe to keyframe for sparse selections) and scaled and converted by swscale
/// straight into the clip's buffer; and the `ferry::video_clip` value type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "ffmpeg.hpp"

namespace ferry {

int channels_of(frame_format f) noexcept {
    return f == frame_format::gray ? 1 : 3;
}

const char* to_string(frame_format f) noexcept {
    switch (f) {
        case frame_format::rgb:
            return "rgb";
        case frame_format::bgr:
            return "bgr";
        case frame_format::gray:
            return "gray";
    }
    return "?";
}

// --- video_clip ----------------------------------------------------------------------------------

video_clip::video_clip(int frames, int width, int height, frame_format format)
    : frames_(frames), width_(width), height_(height), format_(format) {
    if (frames <= 0 || width <= 0 || height <= 0) {
        throw invalid_argument("video_clip: " + std::to_string(frames) + " frames of " +
                               std::to_string(width) + "x" + std::to_string(height) +
                               " is not a positive size");
    }
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(frame_bytes(), static_cast<std::size_t>(frames), &bytes)) {
        throw invalid_argument("video_clip: size overflows");
    }
    buf_ = detail::owned_buffer<scale_slack>(bytes);
}

// Moves stay noexcept (std::vector<video_clip> moves, rather than copies, when it grows).
static_assert(std::is_nothrow_move_constructible_v<video_clip> &&
              std::is_nothrow_move_assignable_v<video_clip>);

buffer video_clip::release() noexcept {
    frames_ = width_ = height_ = 0;
    indices_.clear();
    timestamps_.clear();
    return buf_.release();
}

void video_clip::set_frame_info(std::vector<std::int64_t> indices, std::vector<double> timestamps,
                                double frame_rate) {
    indices_ = std::move(indices);
    timestamps_ = std::move(timestamps);
    frame_rate_ = frame_rate;
}

tensor video_clip::to_tensor() && {
    if (empty()) throw invalid_argument("video_clip::to_tensor: the clip is empty");
    std::vector<std::int64_t> shape{frames_, height_, width_, channels()};
    return tensor(release(), dtype::u8, std::move(shape));
}

tensor video_clip::to_tensor() const& {
    return video_clip(*this).to_tensor();
}

// --- decode_video --------------------------------------------------------------------------------

namespace ops {
namespace {

constexpr const char* op = "decode_video";

/// The window's frame index for each output frame.
std::vector<std::int64_t> selected(const frame_selection& sel, std::int64_t frames,
                                   const std::string& source) {
    std::vector<std::int64_t> out;
    const auto beyond = [&](std::int64_t i) {
        return invalid_argument(std::string(op) + ": " + source + ": frame " + std::to_string(i) +
                                " is selected but the window has " + std::to_string(frames) +
                                " frames");
    };
    switch (sel.mode()) {
        case frame_selection::kind::all:
            out.resize(static_cast<std::size_t>(frames));
            for (std::int64_t i = 0; i < frames; ++i) out[static_cast<std::size_t>(i)] = i;
            break;
        case frame_selection::kind::indices:
            out = sel.frames();
            if (out.empty()) throw invalid_argument(std::string(op) + ": no frames selected");
            for (std::int64_t i : out) {
                if (i >= frames) throw beyond(i);
            }
            break;
        case frame_selection::kind::uniform:
            for (int i = 0; i < sel.count(); ++i) {
                const double at = sel.count() == 1
                                      ? 0.0
                                      : static_cast<double>(i) * static_cast<double>(frames - 1) /
                                            static_cast<double>(sel.count() - 1);
                out.push_back(std::llround(at));
            }
            break;
        case frame_selection::kind::clip:
            for (int i = 0; i < sel.count(); ++i) {
                const std::int64_t f = static_cast<std::int64_t>(i) * sel.stride();
                if (f >= frames) throw beyond(f);
                out.push_back(f);
            }
            break;
    }
    return out;
}

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
    }
    return AV_PIX_FMT_RGB24;
}

class decoder {
  public:
    decoder(const ferry::detail::packets_state& s, const video_decode_options& opt)
        : s_(s), opt_(opt) {
        const AVCodec* codec = avcodec_find_decoder(s.params->codec_id);
        if (codec == nullptr) {
            throw decode_error(std::string(op) + ": " + s.source + ": no decoder for codec " +
                               avcodec_get_name(s.params->codec_id));
        }
        ctx_.reset(avcodec_alloc_context3(codec));
        if (!ctx_) throw std::bad_alloc();
        if (const int ret = avcodec_parameters_to_context(ctx_.get(), s.params.get()); ret < 0) {
            av::throw_decode(op, s.source, "bad codec parameters", ret);
        }
        ctx_->pkt_timebase = s.time_base;
        ctx_->thread_count = std::max(1, opt.threads);
        ctx_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
        if (opt.max_pixels != 0) {
            ctx_->max_pixels = static_cast<std::int64_t>(
                std::min<std::uint64_t>(opt.max_pixels, std::uint64_t{1} << 62));
        }
        if (const int ret = avcodec_open2(ctx_.get(), codec, nullptr); ret < 0) {
            av::throw_decode(op, s.source,
                             std::string("cannot open the ") + codec->name + " decoder", ret);
        }
        frame_ = av::make_frame();
    }

    video_clip run() {
        const auto frames = static_cast<std::int64_t>(s_.frame_pts.size());
        slots_ = selected(opt_.select, frames, s_.source);
        // The distinct frames to decode, ascending; each fills one or more output slots.
        targets_ = slots_;
        std::sort(targets_.begin(), targets_.end());
        targets_.erase(std::unique(targets_.begin(), targets_.end()), targets_.end());
        filled_.assign(targets_.size(), -1);

        // Keyframes in decode order, with their presentation times (ascending in closed GOPs).
        for (std::size_t i = 0; i < s_.packets.size(); ++i) {
            const AVPacket* p = s_.packets[i].get();
            if ((p->flags & AV_PKT_FLAG_KEY) != 0) {
                keys_.push_back(i);
                key_pts_.push_back(p->pts != AV_NOPTS_VALUE ? p->pts : p->dts);
            }
        }

        for (current_ = 0; current_ < targets_.size(); ++current_) {
            if (filled_[current_] >= 0) continue;
            const std::int64_t pts = target_pts(current_);
            // Jump to the last keyframe at or before the target when it lies ahead of what has
            // been sent: the frames in between are not needed.
            const auto k = std::upper_bound(key_pts_.begin(), key_pts_.end(), pts);
            if (k != key_pts_.begin()) {
                const std::size_t key = keys_[static_cast<std::size_t>(k - key_pts_.begin()) - 1];
                if (key > next_ && !draining_) {
                    if (sent_any_) avcodec_flush_buffers(ctx_.get());
                    next_ = key;
                }
            }
            while (filled_[current_] < 0 && step()) {
            }
            if (filled_[current_] < 0) missing(current_);
        }

        std::vector<double> times;
        times.reserve(slots_.size());
        for (std::int64_t i : slots_) {
            times.push_back(av::seconds(s_.frame_pts[static_cast<std::size_t>(i)], s_.time_base));
        }
        clip_.set_frame_info(slots_, std::move(times), s_.frame_rate);
        return std::move(clip_);
    }

  private:
    [[nodiscard]] std::int64_t target_pts(std::size_t t) const {
        return s_.frame_pts[static_cast<std::size_t>(targets_[t])];
    }

    /// Sends one packet (or the end of the stream) and takes every frame that is ready. False
    /// when there is nothing more to send.
    bool step() {
        av::check_cancelled(op, s_.source);
        if (next_ < s_.packets.size()) {
            send(s_.packets[next_++].get());
        } else if (!draining_) {
            draining_ = true;
            send(nullptr);
        } else {
            return false;
        }
        receive();
        return true;
    }

    void send(const AVPacket* pkt) {
        sent_any_ = true;
        av::send_packet(ctx_.get(), pkt, frame_.get(), trouble_,
                        [this](const AVFrame* f) { take(f); });
    }

    void receive() {
        av::receive_frames(ctx_.get(), frame_.get(), trouble_,
                           [this](const AVFrame* f) { take(f); });
    }

    void take(const AVFrame* f) {
        const std::int64_t pts =
            f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
        if (pts == AV_NOPTS_VALUE) return;
        // Frames come out in presentation order: one past the current target means the target
        // was lost (a damaged packet), and waiting longer would decode the rest for nothing.
        if (current_ < targets_.size() && filled_[current_] < 0 && pts > target_pts(current_)) {
            missing(current_);
        }
        const auto it =
            std::lower_bound(targets_.begin() + static_cast<std::ptrdiff_t>(current_),
                             targets_.end(), pts, [this](std::int64_t idx, std::int64_t p) {
                                 return s_.frame_pts[static_cast<std::size_t>(idx)] < p;
                             });
        if (it == targets_.end() ||
            target_pts(static_cast<std::size_t>(it - targets_.begin())) != pts) {
            return;
        }
        const auto t = static_cast<std::size_t>(it - targets_.begin());
        if (filled_[t] >= 0) return;
        convert(f, t);
    }

    void convert(const AVFrame* f, std::size_t t) {
        const auto pixels =
            static_cast<std::uint64_t>(f->width) * static_cast<std::uint64_t>(f->height);
        if (f->width <= 0 || f->height <= 0 || (opt_.max_pixels != 0 && pixels > opt_.max_pixels)) {
            throw decode_error(std::string(op) + ": " + s_.source + ": a frame of " +
                               std::to_string(f->width) + "x" + std::to_string(f->height) +
                               " is over the limit of " + std::to_string(opt_.max_pixels) +
                               " pixels (max_pixels)");
        }
        if (clip_.empty()) allocate(f);
        // A new scaler only when the frames' size or format change (mid-stream resolution
        // changes are scaled to the clip's size like the rest).
        if (!sws_ || f->width != src_width_ || f->height != src_height_ ||
            f->format != src_format_) {
            sws_.reset(sws_getContext(f->width, f->height, static_cast<AVPixelFormat>(f->format),
                                      clip_.width(), clip_.height(), output_format(opt_.format),
                                      sws_flags(opt_.filter), nullptr, nullptr, nullptr));
            if (!sws_) {
                const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(f->format));
                throw decode_error(std::string(op) + ": " + s_.source +
                                   ": swscale cannot convert " +
                                   (name != nullptr ? name : "unknown") + " frames of " +
                                   std::to_string(f->width) + "x" + std::to_string(f->height));
            }
            src_width_ = f->width;
            src_height_ = f->height;
            src_format_ = f->format;
            colour_ = -1;
        }
        // YUV -> RGB with the stream's own matrix and range (BT.601 when unspecified). Setting
        // them rebuilds swscale's tables, so only when the frames' colour description changes.
        const int colour =
            static_cast<int>(f->colorspace) * 2 + (f->color_range == AVCOL_RANGE_JPEG ? 1 : 0);
        if (colour != colour_) {
            sws_setColorspaceDetails(sws_.get(), sws_getCoefficients(f->colorspace), colour & 1,
                                     sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
            colour_ = colour;
        }

        // The first output slot of this frame gets the scaler's output directly; repeats copy.
        std::size_t first = slots_.size();
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            if (slots_[i] != targets_[t]) continue;
            auto dst_frame = clip_.frame(static_cast<int>(i));
            if (first == slots_.size()) {
                first = i;
                std::uint8_t* dst[4] = {dst_frame.data(), nullptr, nullptr, nullptr};
                int stride[4] = {clip_.width() * clip_.channels(), 0, 0, 0};
                const int ret =
                    sws_scale(sws_.get(), f->data, f->linesize, 0, f->height, dst, stride);
                if (ret <= 0) av::throw_decode(op, s_.source, "swscale failed", ret);
            } else {
                const auto src = clip_.frame(static_cast<int>(first));
                std::memcpy(dst_frame.data(), src.data(), src.size());
            }
        }
        filled_[t] = static_cast<std::int64_t>(first);
    }

    void allocate(const AVFrame* f) {
        const bool resize = opt_.resize.width > 0 && opt_.resize.height > 0;
        const int w = resize ? opt_.resize.width : f->width;
        const int h = resize ? opt_.resize.height : f->height;
        const std::uint64_t bytes = static_cast<std::uint64_t>(w) * static_cast<std::uint64_t>(h) *
                                    static_cast<std::uint64_t>(channels_of(opt_.format)) *
                                    static_cast<std::uint64_t>(slots_.size());
        if (opt_.max_bytes != 0 && bytes > opt_.max_bytes) {
            throw invalid_argument(std::string(op) + ": " + s_.source + ": " +
                                   std::to_string(slots_.size()) + " frames of " +
                                   std::to_string(w) + "x" + std::to_string(h) + " need " +
                                   std::to_string(bytes) + " bytes, over max_bytes (" +
                                   std::to_string(opt_.max_bytes) + ")");
        }
        clip_ = video_clip(static_cast<int>(slots_.size()), w, h, opt_.format);
    }

    [[noreturn]] void missing(std::size_t t) {
        std::string what = "frame " + std::to_string(targets_[t]) + " (at " +
                           std::to_string(av::seconds(target_pts(t), s_.time_base)) +
                           " s) could not be decoded";
        what += trouble_.reason();
        av::take_log_line();
        throw decode_error(std::string(op) + ": " + s_.source + ": " + what);
    }

    const ferry::detail::packets_state& s_;
    const video_decode_options& opt_;
    av::codec_ptr ctx_;
    av::frame_ptr frame_;
    av::sws_ptr sws_;
    int src_width_ = 0;
    int src_height_ = 0;
    int src_format_ = -1;
    int colour_ = -1;  ///< colorspace * 2 + full range, as last set on the scaler
    video_clip clip_;
    std::vector<std::int64_t> slots_;
    std::vector<std::int64_t> targets_;
    std::vector<std::int64_t> filled_;
    std::vector<std::size_t> keys_;
    std::vector<std::int64_t> key_pts_;
    std::size_t current_ = 0;
    std::size_t next_ = 0;
    bool draining_ = false;
    bool sent_any_ = false;
    av::decode_trouble trouble_;
};

}  // namespace

namespace detail {

video_clip decode_video_fn::operator()(const packets& pkts,
                                       const video_decode_options& options) const {
    if (pkts.empty())
        throw invalid_argument(std::string(op) + ": no packets (empty ferry::packets)");
    av::init_logging();
    av::take_log_line();
    if ((options.resize.width != 0 || options.resize.height != 0) &&
        (options.resize.width <= 0 || options.resize.height <= 0)) {
        throw invalid_argument(
            std::string(op) + ": resize {" + std::to_string(options.resize.width) + ", " +
            std::to_string(options.resize.height) + "} must be positive (or {0, 0} for none)");
    }
    return decoder(*pkts.state(), options).run();
}

namespace {

/// The demux options with `max_frames` derived from the selection unless it is set.
demux_options demux_part(const video_options& o) {
    demux_options d = o.demux;
    if (d.max_frames == 0) d.max_frames = o.decode.select.frames_needed();
    return d;
}

}  // namespace

video_clip load_video_fn::operator()(const std::filesystem::path& path,
                                     const video_options& options) const {
    return decode_video(demux_video(path, demux_part(options)), options.decode);
}

video_clip load_video_fn::operator()(std::span<const std::byte> data,
                                     const video_options& options) const {
    return decode_video(demux_video(data, demux_part(options)), options.decode);
}

}  // namespace detail
}  // namespace ops
}  // namespace ferry
