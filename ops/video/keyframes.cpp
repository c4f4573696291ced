// SPDX-License-Identifier: Apache-2.0
/// \file
/// Reading a video stream's keyframes: from the container's sample table where it lists every
/// frame, else from the packets' keyframe flags, else by decoding the keyframes alone; and a
/// window's frame moved back to the keyframe before it (see keyframes.hpp).
#include "keyframes.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

#include "frames.hpp"

namespace ferry::ops::av {
namespace {

constexpr std::int64_t keyframes_min_ts = std::numeric_limits<std::int64_t>::min();

/// Back to the stream's first packet: a seek to the lowest time, else to byte 0; where the
/// container cannot seek by bytes (MP4, whose seek moves a time back by the stream's shift, which
/// overflows from INT64_MIN), to the stream's first timestamp.
void rewind_to_start(AVFormatContext* fmt, int index) {
    const AVStream* st = fmt->streams[index];
    if ((fmt->iformat->flags & AVFMT_NO_BYTE_SEEK) != 0 && st->start_time != AV_NOPTS_VALUE &&
        av_seek_frame(fmt, index, st->start_time, AVSEEK_FLAG_BACKWARD) >= 0) {
        take_log_line();
        return;
    }
    if (avformat_seek_file(fmt, index, keyframes_min_ts, keyframes_min_ts, keyframes_min_ts, 0) <
            0 &&
        av_seek_frame(fmt, index, keyframes_min_ts, AVSEEK_FLAG_BACKWARD) < 0) {
        av_seek_frame(fmt, -1, 0, AVSEEK_FLAG_BYTE);
    }
    take_log_line();
}

/// Whether a packet flagged a keyframe decodes as one by itself: a container's index and its
/// packets' flags can lie (a sync-sample table listing a P-frame), the decoder cannot. One
/// decoder, flushed before each packet and drained after it.
class key_checker {
  public:
    key_checker(const input& in, const AVStream* st, const char* op) : frame_(make_frame()) {
        state_.source = in.name;
        state_.time_base = st->time_base;
        state_.params.reset(avcodec_parameters_alloc());
        if (!state_.params) throw std::bad_alloc();
        if (const int ret = avcodec_parameters_copy(state_.params.get(), st->codecpar); ret < 0) {
            throw_decode(op, in.name, "cannot copy the codec parameters", ret);
        }
        ctx_ = open_decoder(state_, 1, 0, op);
        ctx_->skip_loop_filter = AVDISCARD_ALL;  // pixels only
    }

    bool decodes_as_key(const AVPacket* pkt) {
        avcodec_flush_buffers(ctx_.get());
        bool key = false;
        const auto take = [&key](const AVFrame* f) { key = key || decoded_key(f); };
        send_packet(ctx_.get(), pkt, frame_.get(), trouble_, take);
        send_packet(ctx_.get(), nullptr, frame_.get(), trouble_, take);
        receive_frames(ctx_.get(), frame_.get(), trouble_, take);
        ++decoded_;
        return key;
    }

    ~key_checker() {
        this_call::count("frames decoded", decoded_);
        take_log_line();
    }
    key_checker(const key_checker&) = delete;
    key_checker& operator=(const key_checker&) = delete;

  private:
    ferry::detail::packets_state state_;
    codec_ptr ctx_;
    frame_ptr frame_;
    decode_trouble trouble_;
    std::uint64_t decoded_ = 0;
};

/// Reads the next packet of stream `index` into `pkt`; false at the end of the data (or where a
/// read fails: a cut file ends there).
bool next_packet(const input& in, int index, AVPacket* pkt, const char* op) {
    for (;;) {
        check_cancelled(op, in.name);
        const int ret = av_read_frame(in.format.get(), pkt);
        if (ret < 0) {
            if (ret != AVERROR_EOF) (void)in.read_failure(op, "reading keyframes", ret);
            return false;
        }
        if (pkt->stream_index == index) return true;
        av_packet_unref(pkt);
    }
}

/// The MP4/MOV sample table's keyframes, each one's packet read for its presentation time. None
/// where the table does not list every frame (fragmented files, edit lists that add entries) or
/// lies (a listed keyframe whose packet is no keyframe or has no time).
std::optional<keyframe_list> from_sample_table(const input& in, int index, std::size_t cap,
                                               const char* op) {
    AVFormatContext* fmt = in.format.get();
    AVStream* st = fmt->streams[index];
    if (fmt->iformat == nullptr || std::strstr(fmt->iformat->name, "mov") == nullptr) return {};
    const int entries = avformat_index_get_entries_count(st);
    if (entries <= 0 || st->nb_frames != entries) return {};
    // Copied first: reading packets may change the index.
    struct entry {
        std::int64_t dts;
        std::int64_t pos;
    };
    std::vector<entry> keys;
    for (int i = 0; i < entries; ++i) {
        const AVIndexEntry* e = avformat_index_get_entry(st, i);
        if (e != nullptr && (e->flags & AVINDEX_KEYFRAME) != 0)
            keys.push_back({e->timestamp, e->pos});
    }
    keyframe_list list;
    list.time_base = st->time_base;
    list.from = keyframe_source::index;
    key_checker checker(in, st, op);
    auto pkt = make_packet();
    for (std::size_t k = 0; k < keys.size(); ++k) {
        if (list.pts.size() >= cap) {
            list.capped = true;
            break;
        }
        // The index holds decode times and the seek takes a presentation time, which it moves
        // back by the stream's shift (a few frames with B-frames): halfway to the next
        // keyframe lands on this one. The packet is the entry's by its byte position.
        const std::int64_t next = k + 1 < keys.size() ? keys[k + 1].dts : keys[k].dts + 2;
        const std::int64_t target = keys[k].dts + (next - keys[k].dts) / 2;
        if (av_seek_frame(fmt, index, target, AVSEEK_FLAG_BACKWARD) < 0) return {};
        bool found = false;
        while (!found) {
            if (!next_packet(in, index, pkt.get(), op)) return {};
            const bool passed = pkt->dts != AV_NOPTS_VALUE && pkt->dts > keys[k].dts;
            found = pkt->pos == keys[k].pos;
            if (found) {
                const bool key =
                    (pkt->flags & AV_PKT_FLAG_KEY) != 0 && checker.decodes_as_key(pkt.get());
                const std::int64_t pts = pkt->pts;
                const bool discarded = (pkt->flags & AV_PKT_FLAG_DISCARD) != 0;
                av_packet_unref(pkt.get());
                if (!key || pts == AV_NOPTS_VALUE) return {};
                if (!discarded) list.pts.push_back(pts);
            } else {
                av_packet_unref(pkt.get());
                if (passed) return {};  // the seek landed past it: read every packet instead
            }
        }
    }
    return list;
}

/// Every packet's keyframe flag; none where a keyframe packet has no presentation time.
std::optional<keyframe_list> from_packets(const input& in, int index, std::size_t cap,
                                          const char* op) {
    AVFormatContext* fmt = in.format.get();
    rewind_to_start(fmt, index);
    keyframe_list list;
    list.time_base = fmt->streams[index]->time_base;
    list.from = keyframe_source::packets;
    auto pkt = make_packet();
    while (next_packet(in, index, pkt.get(), op)) {
        const bool key =
            (pkt->flags & AV_PKT_FLAG_KEY) != 0 && (pkt->flags & AV_PKT_FLAG_DISCARD) == 0;
        const std::int64_t pts = pkt->pts;
        av_packet_unref(pkt.get());
        if (!key) continue;
        if (pts == AV_NOPTS_VALUE) return {};
        if (list.pts.size() >= cap) {
            list.capped = true;
            break;
        }
        list.pts.push_back(pts);
    }
    return list;
}

/// The frames the decoder marks as keyframes in a decode of every frame (the loop filter
/// skipped: it changes pixels, not frames), at the times that decode gives them: a frame's
/// best-effort timestamp, or the previous frame's plus one frame's duration (`frame`) where it
/// has none, as `decode_in_order` times the frames `demux_video` counts. A decoder that skips
/// all but the keyframes (`AVDISCARD_NONKEY`, `ffprobe -skip_frame nokey`) gives other times
/// where frames come out delayed (MPEG-4 and MPEG-2 with B-frames: each keyframe at the next
/// one's time), so every frame is decoded.
keyframe_list from_decoding(const input& in, int index, std::size_t cap, const char* op) {
    AVFormatContext* fmt = in.format.get();
    AVStream* st = fmt->streams[index];
    rewind_to_start(fmt, index);
    keyframe_list list;
    list.time_base = st->time_base;
    list.from = keyframe_source::decoding;
    ferry::detail::packets_state s;
    s.source = in.name;
    s.time_base = st->time_base;
    s.params.reset(avcodec_parameters_alloc());
    if (!s.params) throw std::bad_alloc();
    if (const int ret = avcodec_parameters_copy(s.params.get(), st->codecpar); ret < 0) {
        throw_decode(op, in.name, "cannot copy the codec parameters", ret);
    }
    const AVRational rate = av_guess_frame_rate(fmt, st, nullptr);
    const std::int64_t frame =
        rate.num > 0 && rate.den > 0 ? av_rescale_q(1, av_inv_q(rate), st->time_base) : 0;
    auto ctx = open_decoder(s, 1, 0, op);
    ctx->skip_loop_filter = AVDISCARD_ALL;
    auto decoded = make_frame();
    decode_trouble trouble;
    std::int64_t returned = 0;
    std::int64_t last = AV_NOPTS_VALUE;
    bool full = false;
    const auto take = [&](const AVFrame* f) {
        ++returned;
        std::int64_t ts =
            f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
        if (ts == AV_NOPTS_VALUE) ts = last != AV_NOPTS_VALUE ? last + frame : 0;
        last = ts;
        if (!decoded_key(f) || full) return;
        if (list.pts.size() >= cap) {
            full = true;
            list.capped = true;
            return;
        }
        list.pts.push_back(ts);
    };
    auto pkt = make_packet();
    while (!full && next_packet(in, index, pkt.get(), op)) {
        send_packet(ctx.get(), pkt.get(), decoded.get(), trouble, take);
        av_packet_unref(pkt.get());
        receive_frames(ctx.get(), decoded.get(), trouble, take);
    }
    if (!full) {
        send_packet(ctx.get(), nullptr, decoded.get(), trouble, take);
        receive_frames(ctx.get(), decoded.get(), trouble, take);
    }
    this_call::count("frames decoded", static_cast<std::uint64_t>(returned));
    take_log_line();
    return list;
}

}  // namespace

keyframe_list read_keyframes(const input& in, int index, std::size_t cap, const char* op) {
    AVFormatContext* fmt = in.format.get();
    // Only the stream's own packets are read.
    std::vector<AVDiscard> discard(fmt->nb_streams);
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
        discard[i] = fmt->streams[i]->discard;
        if (static_cast<int>(i) != index) fmt->streams[i]->discard = AVDISCARD_ALL;
    }
    std::optional<keyframe_list> list = from_sample_table(in, index, cap, op);
    if (!list) list = from_packets(in, index, cap, op);
    if (!list) list = from_decoding(in, index, cap, op);
    for (unsigned i = 0; i < fmt->nb_streams && i < discard.size(); ++i) {
        fmt->streams[i]->discard = discard[i];
    }
    std::sort(list->pts.begin(), list->pts.end());
    list->pts.erase(std::unique(list->pts.begin(), list->pts.end()), list->pts.end());
    this_call::count("keyframe lists read");
    return std::move(*list);
}

std::int64_t snapped_frame(const keyframe_list& keys, AVRational tb,
                           std::span<const std::int64_t> times, std::int64_t start) {
    const bool same_base = av_cmp_q(tb, keys.time_base) == 0;
    const std::int64_t at = times[static_cast<std::size_t>(start)];
    const auto after = std::upper_bound(keys.pts.begin(), keys.pts.end(),
                                        same_base ? at : av_rescale_q(at, tb, keys.time_base));
    if (after == keys.pts.begin()) return start;
    // A capped list does not know the keyframes past its last one.
    if (after == keys.pts.end() && keys.capped) return start;
    const std::int64_t key = *std::prev(after);
    // At or before the stream's start: the window's first frame, as demux_video's window start.
    const std::int64_t from = seconds(key, keys.time_base) <= 0.0 ? keyframes_min_ts
                              : same_base                         ? key
                                          : av_rescale_q(key, keys.time_base, tb);
    // Back over the frames from the keyframe on: the keyframe's own frame where it is one of the
    // window's, the first after its time where its time is no frame's.
    std::int64_t frame = start;
    while (frame > 0 && times[static_cast<std::size_t>(frame - 1)] >= from) --frame;
    return frame;
}

}  // namespace ferry::ops::av
