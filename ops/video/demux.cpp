// SPDX-License-Identifier: Apache-2.0
/// \file
/// `demux_video`: one video stream's packets in a time window, read through ferry's own
/// AVIOContext; `frame_selection` and the `ferry::packets` accessors.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ffmpeg.hpp"

namespace ferry {

// --- frame_selection -----------------------------------------------------------------------------

frame_selection frame_selection::indices(std::vector<std::int64_t> frames) {
    for (std::size_t i = 0; i < frames.size(); ++i) {
        if (frames[i] < 0) {
            throw invalid_argument("frame_selection::indices: index " + std::to_string(i) + " is " +
                                   std::to_string(frames[i]) + "; frames count from 0");
        }
    }
    frame_selection s;
    s.kind_ = kind::indices;
    s.frames_ = std::move(frames);
    return s;
}

frame_selection frame_selection::uniform(int count) {
    if (count <= 0) {
        throw invalid_argument("frame_selection::uniform: count " + std::to_string(count) +
                               " must be positive");
    }
    frame_selection s;
    s.kind_ = kind::uniform;
    s.count_ = count;
    return s;
}

frame_selection frame_selection::clip(int count, int stride) {
    if (count <= 0 || stride <= 0) {
        throw invalid_argument("frame_selection::clip: count " + std::to_string(count) +
                               " and stride " + std::to_string(stride) + " must be positive");
    }
    frame_selection s;
    s.kind_ = kind::clip;
    s.count_ = count;
    s.stride_ = stride;
    return s;
}

std::int64_t frame_selection::frames_needed() const noexcept {
    switch (kind_) {
        case kind::all:
        case kind::uniform:
            return 0;
        case kind::indices:
            return frames_.empty() ? 0 : *std::max_element(frames_.begin(), frames_.end()) + 1;
        case kind::clip:
            return static_cast<std::int64_t>(count_ - 1) * stride_ + 1;
    }
    return 0;
}

// --- packets -------------------------------------------------------------------------------------

namespace {
const std::string no_source;
}

bool packets::empty() const noexcept {
    return !state_ || state_->packets.empty();
}
std::size_t packets::size() const noexcept {
    return state_ ? state_->packets.size() : 0;
}
std::size_t packets::bytes() const noexcept {
    return state_ ? state_->bytes : 0;
}
std::int64_t packets::frames() const noexcept {
    return state_ ? static_cast<std::int64_t>(state_->frame_pts.size()) : 0;
}
int packets::stream() const noexcept {
    return state_ ? state_->stream : -1;
}
std::string packets::codec() const {
    return state_ ? avcodec_get_name(state_->params->codec_id) : "";
}
int packets::width() const noexcept {
    return state_ ? state_->params->width : 0;
}
int packets::height() const noexcept {
    return state_ ? state_->params->height : 0;
}
double packets::frame_rate() const noexcept {
    return state_ ? state_->frame_rate : 0.0;
}
const std::string& packets::source() const noexcept {
    return state_ ? state_->source : no_source;
}

// --- demux_video ---------------------------------------------------------------------------------

namespace ops {
namespace {

constexpr const char* op = "demux_video";

/// The first timestamp in `tb` at or after `t` seconds (a microsecond of slack for rounding).
std::int64_t to_ts(double t, AVRational tb) {
    return static_cast<std::int64_t>(std::ceil((t - 1e-6) / av_q2d(tb)));
}

std::string seconds_text(double s) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3f s", s);
    return text;
}

packets demux(av::input in, const demux_options& opt) {
    if (opt.end && *opt.end <= opt.start) {
        throw invalid_argument(std::string(op) + ": end " + seconds_text(*opt.end) +
                               " is not after start " + seconds_text(opt.start));
    }
    AVFormatContext* fmt = in.format.get();
    int index = opt.stream;
    if (index >= 0) {
        if (index >= static_cast<int>(fmt->nb_streams)) {
            throw invalid_argument(std::string(op) + ": " + in.name + ": stream " +
                                   std::to_string(index) + " does not exist (the container has " +
                                   std::to_string(fmt->nb_streams) + ")");
        }
        if (fmt->streams[index]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) {
            throw decode_error(std::string(op) + ": " + in.name + ": stream " +
                               std::to_string(index) + " is not a video stream");
        }
    } else {
        index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
        if (index < 0) in.fail(op, "no video stream", index);
    }
    AVStream* st = fmt->streams[index];
    const AVCodecParameters* par = st->codecpar;
    if (par->width < 0 || par->height < 0) {
        av::throw_decode(
            op, in.name,
            "bad frame size " + std::to_string(par->width) + "x" + std::to_string(par->height), 0);
    }
    const auto pixels =
        static_cast<std::uint64_t>(par->width) * static_cast<std::uint64_t>(par->height);
    if (opt.max_pixels != 0 && pixels > opt.max_pixels) {
        throw decode_error(std::string(op) + ": " + in.name + ": the stream declares " +
                           std::to_string(par->width) + "x" + std::to_string(par->height) + " = " +
                           std::to_string(pixels) + " pixels per frame, over the limit of " +
                           std::to_string(opt.max_pixels) + " (max_pixels)");
    }
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
        if (static_cast<int>(i) != index) fmt->streams[i]->discard = AVDISCARD_ALL;
    }

    auto state = std::make_shared<ferry::detail::packets_state>();
    state->source = in.name;
    state->stream = index;
    state->time_base = st->time_base;
    const AVRational rate = av_guess_frame_rate(fmt, st, nullptr);
    state->frame_rate = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0.0;
    state->params.reset(avcodec_parameters_alloc());
    if (!state->params) throw std::bad_alloc();
    if (const int ret = avcodec_parameters_copy(state->params.get(), par); ret < 0) {
        av::throw_decode(op, in.name, "cannot copy the codec parameters", ret);
    }

    const AVRational tb = st->time_base;
    const bool windowed = opt.start > 0.0 || opt.end.has_value();
    const std::int64_t start_ts =
        opt.start > 0.0 ? to_ts(opt.start, tb) : std::numeric_limits<std::int64_t>::min();
    const std::int64_t end_ts =
        opt.end ? to_ts(*opt.end, tb) : std::numeric_limits<std::int64_t>::max();
    if (opt.start > 0.0) {
        // The keyframe at or before the start; where the container cannot seek, read from the
        // beginning instead (slower, same result).
        if (av_seek_frame(fmt, index, start_ts, AVSEEK_FLAG_BACKWARD) < 0) {
            av_seek_frame(fmt, index, std::numeric_limits<std::int64_t>::min(),
                          AVSEEK_FLAG_BACKWARD);
        }
        av::take_log_line();
    }

    auto pkt = av::make_packet();
    std::int64_t read = 0;
    std::vector<std::int64_t> nth;  // scratch for the max_frames test
    for (;;) {
        av::check_cancelled(op, in.name);
        const int ret = av_read_frame(fmt, pkt.get());
        if (ret == AVERROR_EOF) break;
        if (ret < 0) {
            in.fail(
                op,
                "reading packet " + std::to_string(read) + " of stream " + std::to_string(index),
                ret);
        }
        if (pkt->stream_index != index) {
            av_packet_unref(pkt.get());
            continue;
        }
        ++read;
        const std::int64_t pts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
        const std::int64_t dts = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pts;
        // Decode order: once a packet's decode time is past the window's end (or past the last
        // frame needed), every later frame is too, since presentation never precedes decoding.
        if (dts != AV_NOPTS_VALUE && dts >= end_ts) break;
        if (opt.max_frames > 0 &&
            static_cast<std::int64_t>(state->frame_pts.size()) >= opt.max_frames &&
            dts != AV_NOPTS_VALUE) {
            nth = state->frame_pts;
            const auto k = nth.begin() + (opt.max_frames - 1);
            std::nth_element(nth.begin(), k, nth.end());
            if (dts > *k) break;
        }
        // Decoding starts at a keyframe; what precedes the first one cannot be decoded.
        if (state->packets.empty() && (pkt->flags & AV_PKT_FLAG_KEY) == 0) {
            av_packet_unref(pkt.get());
            continue;
        }
        if (pts == AV_NOPTS_VALUE) {
            av::throw_decode(op, in.name,
                             "packet " + std::to_string(read - 1) + " has no timestamp", 0);
        }
        if (pts >= start_ts && pts < end_ts) state->frame_pts.push_back(pts);
        state->bytes += static_cast<std::size_t>(pkt->size);
        auto kept = av::make_packet();
        av_packet_move_ref(kept.get(), pkt.get());
        state->packets.push_back(std::move(kept));
    }
    std::sort(state->frame_pts.begin(), state->frame_pts.end());
    state->frame_pts.erase(std::unique(state->frame_pts.begin(), state->frame_pts.end()),
                           state->frame_pts.end());

    if (state->frame_pts.empty()) {
        std::string what = "no decodable video frames";
        if (windowed) {
            what += " in the window [" + seconds_text(opt.start) + ", " +
                    (opt.end ? seconds_text(*opt.end) : std::string("end")) + ")";
        }
        av::throw_decode(op, in.name, what, 0);
    }
    // A container that states its frame count (MP4) and delivered fewer was cut short.
    if (!windowed && opt.max_frames == 0 && st->nb_frames > 0 && read < st->nb_frames) {
        av::throw_decode(op, in.name,
                         "truncated: the container declares " + std::to_string(st->nb_frames) +
                             " frames, the data holds " + std::to_string(read),
                         0);
    }
    return packets(std::move(state));
}

}  // namespace

namespace detail {

packets demux_video_fn::operator()(const std::filesystem::path& path,
                                   const demux_options& options) const {
    return demux(av::open_input(av::open_file(path, options.timeout, op), path.string(), op),
                 options);
}

packets demux_video_fn::operator()(std::span<const std::byte> data,
                                   const demux_options& options) const {
    return demux(av::open_input(av::open_memory(data, options.timeout, op), "<memory>", op),
                 options);
}

}  // namespace detail
}  // namespace ops
}  // namespace ferry
