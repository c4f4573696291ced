// SPDX-License-Identifier: Apache-2.0
/// \file
/// `frame_selection`, the frame indices it selects, and the verified order of a window's frames
/// (every packet decoded in order from the first): see frames.hpp.
#include "frames.hpp"

#include "skip.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

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

namespace {

/// Checks what `clips` and `clips_at` share.
void check_clips(const char* name, int clips, int frames, int stride) {
    if (clips <= 0 || frames <= 0 || stride <= 0) {
        throw invalid_argument(std::string("frame_selection::") + name + ": " +
                               std::to_string(clips) + " clips of " + std::to_string(frames) +
                               " frames at stride " + std::to_string(stride) +
                               ": each must be positive");
    }
    // A video_clip counts its frames in an int.
    if (static_cast<std::int64_t>(clips) * frames > std::numeric_limits<int>::max()) {
        throw invalid_argument(std::string("frame_selection::") + name + ": " +
                               std::to_string(clips) + " clips of " + std::to_string(frames) +
                               " frames are more frames than a video_clip holds");
    }
}

}  // namespace

frame_selection frame_selection::clips(int count, int frames, int stride) {
    check_clips("clips", count, frames, stride);
    frame_selection s;
    s.kind_ = kind::clips;
    s.clips_ = count;
    s.count_ = frames;
    s.stride_ = stride;
    return s;
}

frame_selection frame_selection::clips(int count, int frames, int stride, const item_info& item) {
    frame_selection s = clips(count, frames, stride);
    s.item_ = item;
    return s;
}

frame_selection frame_selection::clips_at(std::vector<std::int64_t> starts, int frames,
                                          int stride) {
    check_clips("clips_at", static_cast<int>(std::min<std::size_t>(starts.size(), 1U << 30)),
                frames, stride);
    for (std::size_t i = 0; i < starts.size(); ++i) {
        if (starts[i] < 0) {
            throw invalid_argument("frame_selection::clips_at: start " + std::to_string(i) +
                                   " is " + std::to_string(starts[i]) + "; frames count from 0");
        }
    }
    frame_selection s;
    s.kind_ = kind::clips_at;
    s.clips_ = static_cast<int>(starts.size());
    s.frames_ = std::move(starts);
    s.count_ = frames;
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
        case kind::clips:  // the whole window: its frame count bounds the starts
            return 0;
        case kind::clips_at: {
            // Saturating: a start near the int64 limit selects frames no window has, which
            // select_frames reports; reading to the end is all the demuxer can do for it.
            std::int64_t needed = 0;
            if (__builtin_add_overflow(*std::max_element(frames_.begin(), frames_.end()),
                                       static_cast<std::int64_t>(count_ - 1) * stride_ + 1,
                                       &needed)) {
                return 0;
            }
            return needed;
        }
    }
    return 0;
}

namespace ops::av {
namespace {

/// Mixed into the item's first number so that the clips' starts are not the numbers the
/// caller's own `item_rng(info)` gives first (a crop drawn from those would follow the start).
constexpr std::uint64_t clips_stream = 0x636c6970735f6174ULL;  // "clips_at"

/// The starts of `sel`'s clips (kind `clips`) over a window of `frames` frames, each drawn
/// uniformly from the starts whose clip fits, in the order drawn.
std::vector<std::int64_t> draw_starts(const frame_selection& sel, std::int64_t frames,
                                      const char* op, const std::string& source,
                                      const std::string& truncation) {
    const std::int64_t span = static_cast<std::int64_t>(sel.count() - 1) * sel.stride() + 1;
    if (frames < span) {
        throw decode_error(
            std::string(op) + ": " + source + ": a clip of " + std::to_string(sel.count()) +
            " frames at stride " + std::to_string(sel.stride()) + " spans " + std::to_string(span) +
            " frames but the window has " + std::to_string(frames) +
            " frames that decode (frame_selection::clips)" +
            (truncation.empty() ? "" : "; " + std::string(cut_short_prefix) + truncation));
    }
    const item_info* info = sel.item() ? &*sel.item() : ferry::detail::current_item();
    if (info == nullptr) {
        throw invalid_argument(
            std::string(op) + ": " + source +
            ": frame_selection::clips draws its starts from the item's numbers (item_rng), and "
            "this call has none: call it in a stage whose callable takes a const "
            "ferry::item_info&, pass the item (clips(count, frames, stride, info)), or give the "
            "starts (clips_at)");
    }
    random_engine rng(item_rng(*info)() ^ clips_stream);
    std::uniform_int_distribution<std::int64_t> pick(0, frames - span);
    std::vector<std::int64_t> starts;
    for (int i = 0; i < sel.clips(); ++i) starts.push_back(pick(rng));
    return starts;
}

}  // namespace

std::vector<std::int64_t> select_frames(const frame_selection& sel, std::int64_t frames,
                                        const char* op, const std::string& source,
                                        const std::string& truncation, const start_snap& snap) {
    std::vector<std::int64_t> out;
    const auto fewer = [&](std::int64_t i) {
        return decode_error(
            std::string(op) + ": " + source + ": frame " + std::to_string(i) +
            " is selected but the window has " + std::to_string(frames) + " frames that decode" +
            (truncation.empty() ? "" : "; " + std::string(cut_short_prefix) + truncation));
    };
    switch (sel.mode()) {
        case frame_selection::kind::all:
            out.resize(static_cast<std::size_t>(frames));
            for (std::int64_t i = 0; i < frames; ++i) out[static_cast<std::size_t>(i)] = i;
            if (out.empty()) throw fewer(0);
            break;
        case frame_selection::kind::indices:
            out = sel.frames();
            if (out.empty()) throw invalid_argument(std::string(op) + ": no frames selected");
            for (std::int64_t i : out) {
                if (i >= frames) throw fewer(i);
            }
            break;
        case frame_selection::kind::uniform:
            if (frames <= 0) throw fewer(0);
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
                if (f >= frames) throw fewer(f);
                out.push_back(f);
            }
            break;
        case frame_selection::kind::clips:
        case frame_selection::kind::clips_at: {
            const std::vector<std::int64_t> starts =
                sel.mode() == frame_selection::kind::clips
                    ? draw_starts(sel, frames, op, source, truncation)
                    : sel.frames();
            out.reserve(starts.size() * static_cast<std::size_t>(sel.count()));
            for (const std::int64_t given : starts) {
                if (given >= frames) throw fewer(given);
                // Snapped after the draw: the same item draws the same starts either way.
                const std::int64_t s = snap ? snap(given) : given;
                for (int i = 0; i < sel.count(); ++i) {
                    const std::int64_t f = s + static_cast<std::int64_t>(i) * sel.stride();
                    if (f >= frames) throw fewer(f);
                    out.push_back(f);
                }
            }
            break;
        }
    }
    return out;
}

std::uint64_t slot_count(const frame_selection& sel, std::int64_t frames) noexcept {
    const auto n = [](std::int64_t v) {
        return static_cast<std::uint64_t>(std::max<std::int64_t>(v, 0));
    };
    std::uint64_t starts = 1;
    switch (sel.mode()) {
        case frame_selection::kind::all:
            return n(frames);
        case frame_selection::kind::indices:
            return sel.frames().size();
        case frame_selection::kind::uniform:
        case frame_selection::kind::clip:
            return n(sel.count());
        case frame_selection::kind::clips:
            starts = n(sel.clips());
            break;
        case frame_selection::kind::clips_at:
            starts = sel.frames().size();
            break;
    }
    std::uint64_t out = 0;
    return __builtin_mul_overflow(starts, n(sel.count()), &out)
               ? std::numeric_limits<std::uint64_t>::max()
               : out;
}

codec_ptr open_decoder(const ferry::detail::packets_state& s, int threads, std::uint64_t max_pixels,
                       const char* op) {
    const AVCodec* codec = avcodec_find_decoder(s.params->codec_id);
    if (codec == nullptr) {
        throw decode_error(std::string(op) + ": " + s.source + ": no decoder for codec " +
                           avcodec_get_name(s.params->codec_id));
    }
    codec_ptr ctx(avcodec_alloc_context3(codec));
    if (!ctx) throw std::bad_alloc();
    if (const int ret = avcodec_parameters_to_context(ctx.get(), s.params.get()); ret < 0) {
        throw_decode(op, s.source, "bad codec parameters", ret);
    }
    ctx->pkt_timebase = s.time_base;
    ctx->thread_count = std::max(1, threads);
    ctx->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    if (max_pixels != 0) {
        ctx->max_pixels =
            static_cast<std::int64_t>(std::min<std::uint64_t>(max_pixels, std::uint64_t{1} << 62));
    }
    if (const int ret = avcodec_open2(ctx.get(), codec, nullptr); ret < 0) {
        throw_decode(op, s.source, std::string("cannot open the ") + codec->name + " decoder", ret);
    }
    return ctx;
}

std::int64_t decode_in_order(const ferry::detail::packets_state& s, AVCodecContext* ctx,
                             decode_trouble& trouble, const frame_sink& take, const char* op,
                             decode_extent* extent) {
    auto frame = make_frame();
    decode_extent seen;
    std::int64_t k = 0;
    std::int64_t last = AV_NOPTS_VALUE;
    bool stop = false;
    const auto on_frame = [&](const AVFrame* f) {
        ++seen.returned;
        seen.tags.push_back(packet_tag(f));
        if (stop) return;
        std::int64_t ts =
            f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
        // The first frame's own time only: one made up from nothing (0) would tell the demuxer's
        // seek that reading began early enough when it may have begun past the window.
        if (last == AV_NOPTS_VALUE && ts != AV_NOPTS_VALUE) seen.first_ts = ts;
        if (ts == AV_NOPTS_VALUE) ts = last != AV_NOPTS_VALUE ? last + s.frame_duration : 0;
        last = ts;
        seen.last_ts = ts;
        if (ts < s.start_ts || ts >= s.end_ts) return;
        if (s.frame_limit > 0 && k >= s.frame_limit) {
            stop = true;
            return;
        }
        if (!take(k, f, ts)) stop = true;
        ++k;
    };
    for (std::size_t i = 0; i < s.packets.size() && !stop; ++i) {
        check_cancelled(op, s.source);
        tag_next_packet(ctx, i);
        send_packet(ctx, s.packets[i].get(), frame.get(), trouble, on_frame);
        receive_frames(ctx, frame.get(), trouble, on_frame);
    }
    if (!stop) {
        tag_next_packet(ctx, s.packets.size());
        send_packet(ctx, nullptr, frame.get(), trouble, on_frame);
        receive_frames(ctx, frame.get(), trouble, on_frame);
    }
    if (extent != nullptr) *extent = std::move(seen);
    return k;
}

decode_trouble count_frames(ferry::detail::packets_state& s, const char* op,
                            decode_extent& extent) {
    // One decoder thread: demuxing is one stage call's work. The loop filter only changes pixels,
    // never which frames come out, so counting skips it.
    auto ctx = open_decoder(s, 1, 0, op);
    ctx->skip_loop_filter = AVDISCARD_ALL;
    decode_trouble trouble;
    std::vector<std::int64_t> pts;
    std::vector<std::int64_t> made_by;
    decode_in_order(
        s, ctx.get(), trouble,
        [&](std::int64_t, const AVFrame* f, std::int64_t ts) {
            pts.push_back(ts);
            made_by.push_back(packet_tag(f));
            return true;
        },
        op, &extent);
    s.frame_pts = std::move(pts);
    s.frame_packets = unique_tags(std::move(made_by), extent.tags);
    this_call::count("frames decoded", static_cast<std::uint64_t>(extent.returned));
    take_log_line();
    return trouble;
}

}  // namespace ops::av
}  // namespace ferry
