// SPDX-License-Identifier: Apache-2.0
/// \file
/// `probe_video`: a container's streams from its header and index, read through ferry's own
/// AVIOContext with FFmpeg's stream-info pass bounded to the first packets.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ferry/video_probe.hpp"
#include "keyframes.hpp"

namespace ferry {

const char* to_string(stream_type t) noexcept {
    switch (t) {
        case stream_type::video:
            return "video";
        case stream_type::audio:
            return "audio";
        case stream_type::subtitle:
            return "subtitle";
        case stream_type::data:
            return "data";
        case stream_type::attachment:
            return "attachment";
        case stream_type::unknown:
            break;
    }
    return "unknown";
}

const char* to_string(duration_source s) noexcept {
    switch (s) {
        case duration_source::header:
            return "header";
        case duration_source::timestamps:
            return "timestamps";
        case duration_source::bit_rate:
            return "bit rate";
        case duration_source::unknown:
            break;
    }
    return "unknown";
}

const char* to_string(keyframe_source s) noexcept {
    switch (s) {
        case keyframe_source::index:
            return "index";
        case keyframe_source::packets:
            return "packets";
        case keyframe_source::decoding:
            return "decoding";
        case keyframe_source::none:
            break;
    }
    return "none";
}

const char* to_string(frame_count_source s) noexcept {
    switch (s) {
        case frame_count_source::header:
            return "header";
        case frame_count_source::duration:
            return "duration x rate";
        case frame_count_source::unknown:
            break;
    }
    return "unknown";
}

namespace ops {
namespace {

constexpr const char* probe_op = "probe_video";

// FFmpeg's stream-info pass reads packets until every stream's codec parameters are known, up to
// 5 MB or 5 s of them by default. A header that states everything (MP4, Matroska) ends it after a
// packet or two; the bounds only matter where the parameters live in the stream itself, and a
// second of packets holds a sequence header in any sane encoding.
constexpr std::int64_t probe_bytes = 1 << 20;
constexpr std::int64_t analyze_microseconds = 1'000'000;

stream_type type_of(AVMediaType t) {
    switch (t) {
        case AVMEDIA_TYPE_VIDEO:
            return stream_type::video;
        case AVMEDIA_TYPE_AUDIO:
            return stream_type::audio;
        case AVMEDIA_TYPE_SUBTITLE:
            return stream_type::subtitle;
        case AVMEDIA_TYPE_DATA:
            return stream_type::data;
        case AVMEDIA_TYPE_ATTACHMENT:
            return stream_type::attachment;
        default:
            return stream_type::unknown;
    }
}

// MPEG-PS/TS: how far the scan for the first and the last frames' decode times reads. The head's
// first timed packet comes within a pack or two; the tail is read from 1 MiB before the end, then
// 4 and 16 MiB (FFmpeg's own tail read stops near 16 MiB too), until a timed frame is found.
constexpr std::int64_t head_scan_bytes = 1 << 20;
constexpr std::int64_t tail_scan_bytes[] = {1 << 20, 4 << 20, 16 << 20};

/// Reads packets from byte `from` (to the end, or past `limit` bytes), FFmpeg's parser splitting
/// them into frames with their decode times, and calls `frame(dts)` for each frame of stream
/// `index` (AV_NOPTS_VALUE where it has none) until it returns false. A read that fails ends the
/// scan (a cut or damaged file keeps what was read); a stall or a stop throws.
template <class Frame>
void scan_frames(const av::input& in, int index, std::int64_t from, std::int64_t limit,
                 Frame&& frame) {
    AVFormatContext* fmt = in.format.get();
    if (av_seek_frame(fmt, -1, from, AVSEEK_FLAG_BYTE) < 0) return;
    auto pkt = av::make_packet();
    for (;;) {
        av::check_cancelled(probe_op, in.name);
        const int ret = av_read_frame(fmt, pkt.get());
        if (ret < 0) {
            if (ret != AVERROR_EOF) (void)in.read_failure(probe_op, "scanning for timestamps", ret);
            break;
        }
        const bool more = pkt->stream_index != index || frame(pkt->dts);
        av_packet_unref(pkt.get());
        if (!more || avio_tell(fmt->pb) - from > limit) break;
    }
    av::take_log_line();
}

/// The span of an MPEG-PS/TS video stream in its time base, from its first frame's decode time
/// to its last frame's end, counting frames in decode order: the decode times of the first timed
/// frame at the start and of the last one near the end, and one `frame` duration for each frame
/// around them without a time (MPEG-PS carries a time per pack, not per frame, which is why
/// FFmpeg's own estimate, from the last packet's presentation time, falls short by the frames
/// after it). 0 when no timed frame is found; negative when the times go back (joined files).
std::int64_t scanned_span(const av::input& in, int index, std::int64_t frame) {
    std::int64_t first = AV_NOPTS_VALUE;
    std::int64_t before = 0;  // untimed frames before the first timed one
    scan_frames(in, index, 0, head_scan_bytes, [&](std::int64_t dts) {
        if (dts == AV_NOPTS_VALUE) {
            ++before;
            return true;
        }
        first = dts - before * frame;
        return false;
    });
    if (first == AV_NOPTS_VALUE) return 0;
    const std::int64_t size = avio_size(in.format->pb);
    std::int64_t last = AV_NOPTS_VALUE;
    std::int64_t after = 0;  // untimed frames after the last timed one
    for (const std::int64_t back : tail_scan_bytes) {
        const std::int64_t from = std::max<std::int64_t>(0, size - back);
        last = AV_NOPTS_VALUE;
        after = 0;
        scan_frames(in, index, from, std::numeric_limits<std::int64_t>::max(),
                    [&](std::int64_t dts) {
                        if (dts == AV_NOPTS_VALUE) {
                            ++after;
                        } else {
                            last = dts;
                            after = 0;
                        }
                        return true;
                    });
        if (last != AV_NOPTS_VALUE || from == 0) break;
    }
    if (last == AV_NOPTS_VALUE) return 0;
    const std::int64_t span = last + (after + 1) * frame - first;
    // FFmpeg reads a time far below the first (by over 60 s) as wrapped around 2^33 and adds the
    // wrap: half the range or more after that (13 hours at 90 kHz) is a time that went back
    // (joined files), not one that wrapped inside a file.
    const int bits = in.format->streams[index]->pts_wrap_bits;
    if (bits > 1 && bits < 63 && last >= (std::int64_t{1} << bits) &&
        span >= (std::int64_t{1} << (bits - 1))) {
        return -1;
    }
    return span;
}

/// Seconds of `ts` in `tb`, 0 when unknown.
double seconds_or_zero(std::int64_t ts, AVRational tb) {
    if (ts == AV_NOPTS_VALUE || tb.num <= 0 || tb.den <= 0) return 0.0;
    const double s = av::seconds(ts, tb);
    return std::isfinite(s) ? s : 0.0;
}

stream_info describe_stream(AVFormatContext* fmt, AVStream* st) {
    const AVCodecParameters* par = st->codecpar;
    stream_info s;
    s.index = st->index;
    s.type = type_of(par->codec_type);
    if (par->codec_id != AV_CODEC_ID_NONE) s.codec = avcodec_get_name(par->codec_id);
    s.start = seconds_or_zero(st->start_time, st->time_base);
    s.duration = std::max(0.0, seconds_or_zero(st->duration, st->time_base));
    s.frames = std::max<std::int64_t>(0, st->nb_frames);
    s.bit_rate = std::max<std::int64_t>(0, par->bit_rate);
    if (s.type == stream_type::video) {
        s.width = std::max(0, par->width);
        s.height = std::max(0, par->height);
        const AVRational rate = av_guess_frame_rate(fmt, st, nullptr);
        if (rate.num > 0 && rate.den > 0) s.frame_rate = av_q2d(rate);
        if (const char* name = av_get_pix_fmt_name(static_cast<AVPixelFormat>(par->format))) {
            s.pixel_format = name;
        }
        s.attached_picture = (st->disposition & AV_DISPOSITION_ATTACHED_PIC) != 0;
    } else if (s.type == stream_type::audio) {
        s.sample_rate = std::max(0, par->sample_rate);
        s.channels = std::max(0, par->ch_layout.nb_channels);
    }
    return s;
}

/// `"audio aac, subtitle subrip"`, or `"no streams"`.
std::string stream_list(const std::vector<stream_info>& streams) {
    if (streams.empty()) return "no streams";
    std::string text;
    for (const stream_info& s : streams) {
        if (!text.empty()) text += ", ";
        text += to_string(s.type);
        if (!s.codec.empty()) text += " " + s.codec;
    }
    return text;
}

video_info probe(av::input in, const video_probe_options& opt) {
    AVFormatContext* fmt = in.format.get();
    fmt->probesize = probe_bytes;
    fmt->max_analyze_duration = analyze_microseconds;
    av::check_cancelled(probe_op, in.name);
    if (const int ret = avformat_find_stream_info(fmt, nullptr); ret < 0) {
        in.fail(probe_op, "cannot read the stream information", ret);
    }
    av::take_log_line();

    video_info info;
    info.format =
        fmt->iformat != nullptr && fmt->iformat->name != nullptr ? fmt->iformat->name : "";
    info.streams.reserve(fmt->nb_streams);
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
        info.streams.push_back(describe_stream(fmt, fmt->streams[i]));
    }

    const int index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
    if (index < 0) {
        if (!opt.require_video) return info;
        av::throw_decode(probe_op, in.name, "no video stream (" + stream_list(info.streams) + ")",
                         0);
    }
    const stream_info& v = info.streams[static_cast<std::size_t>(index)];
    info.stream = index;
    info.codec = v.codec;
    info.width = v.width;
    info.height = v.height;
    info.pixel_format = v.pixel_format;
    info.frame_rate = v.frame_rate;
    // Where the stream states no start or duration, the container's (which spans all streams).
    const AVStream* st = fmt->streams[index];
    info.start = st->start_time != AV_NOPTS_VALUE
                     ? v.start
                     : seconds_or_zero(fmt->start_time, AV_TIME_BASE_Q);
    info.duration = st->duration != AV_NOPTS_VALUE && st->duration > 0
                        ? v.duration
                        : std::max(0.0, seconds_or_zero(fmt->duration, AV_TIME_BASE_Q));
    info.bit_rate = v.bit_rate > 0 ? v.bit_rate : std::max<std::int64_t>(0, fmt->bit_rate);
    if (info.duration > 0.0) {
        switch (fmt->duration_estimation_method) {
            case AVFMT_DURATION_FROM_PTS:
                info.duration_from = duration_source::timestamps;
                break;
            case AVFMT_DURATION_FROM_BITRATE:
                info.duration_from = duration_source::bit_rate;
                break;
            default:
                info.duration_from = duration_source::header;
                break;
        }
    }
    // FFmpeg reads MPEG-PS/TS timestamps near the end only where it can seek (a file or memory);
    // its duration falls short there, so the frames are counted from their decode times instead.
    const AVRational rate = av_guess_frame_rate(fmt, fmt->streams[index], nullptr);
    if (info.duration_from == duration_source::timestamps && rate.num > 0 && rate.den > 0) {
        const std::int64_t frame = av_rescale_q(1, av_inv_q(rate), st->time_base);
        const std::int64_t span = frame > 0 ? scanned_span(in, index, frame) : 0;
        if (span < 0) {
            // The timestamps go back: the file is joined from others, its length unknowable
            // without reading it all (FFmpeg reads such a drop as a wrap, some 26 hours).
            info.duration = 0.0;
            info.duration_from = duration_source::unknown;
        } else if (span > 0) {
            info.duration = av::seconds(span, st->time_base);
        }
        info.streams[static_cast<std::size_t>(index)].duration = info.duration;
    }
    if (v.frames > 0) {
        info.frames = v.frames;
        info.frames_from = frame_count_source::header;
    } else if (info.duration > 0.0 && info.frame_rate > 0.0) {
        const double estimate = std::round(info.duration * info.frame_rate);
        // A duration guessed from a bit rate can be anything; keep the count representable.
        if (estimate >= 1.0 && estimate < 9.0e18) {
            info.frames = static_cast<std::int64_t>(estimate);
            info.frames_from = frame_count_source::duration;
        }
    }
    if (opt.keyframes) {
        const auto keys = av::keyframes_of(in, index, opt.max_keyframes, {}, probe_op);
        info.keyframes.reserve(keys->pts.size());
        for (const std::int64_t pts : keys->pts) {
            info.keyframes.push_back(av::seconds(pts, keys->time_base));
        }
        info.keyframes_from = keys->from;
        info.keyframes_capped = keys->capped;
    }
    return info;
}

}  // namespace

namespace detail {

video_info probe_video_fn::operator()(const std::filesystem::path& path,
                                      const video_probe_options& options) const {
    return probe(
        av::open_container(av::open_file(path, options.timeout, probe_op), path.string(), probe_op),
        options);
}

video_info probe_video_fn::operator()(std::span<const std::byte> data,
                                      const video_probe_options& options) const {
    return probe(
        av::open_container(av::open_memory(data, options.timeout, probe_op), "<memory>", probe_op),
        options);
}

}  // namespace detail
}  // namespace ops
}  // namespace ferry
