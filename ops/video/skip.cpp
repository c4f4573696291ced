// SPDX-License-Identifier: Apache-2.0
/// \file
/// Packet tags, `frame_skipper` and the verified order with frames skipped: see skip.hpp.
#include "skip.hpp"

#include <algorithm>

namespace ferry::ops::av {

void tag_next_packet(AVCodecContext* ctx, std::size_t i) {
#if FERRY_PACKET_TAGS
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // FFmpeg 6 deprecates it
    ctx->reordered_opaque = static_cast<std::int64_t>(i);
#pragma GCC diagnostic pop
#else
    (void)ctx;
    (void)i;
#endif
}

std::int64_t packet_tag(const AVFrame* f) {
#if FERRY_PACKET_TAGS
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return f->reordered_opaque;
#pragma GCC diagnostic pop
#else
    (void)f;
    return -1;
#endif
}

std::vector<std::int64_t> unique_tags(std::vector<std::int64_t> window,
                                      const std::vector<std::int64_t>& all) {
    std::vector<std::int64_t> sorted = all;
    std::sort(sorted.begin(), sorted.end());
    for (std::int64_t& tag : window) {
        const auto [lo, hi] = std::equal_range(sorted.begin(), sorted.end(), tag);
        if (tag < 0 || hi - lo != 1) tag = -1;
    }
    return window;
}

frame_skipper frame_skipper::by_time(const ferry::detail::packets_state& s,
                                     const std::vector<std::int64_t>& wanted) {
    frame_skipper f;
    f.needed_.assign(s.packets.size() + 1, true);
    for (std::size_t i = 0; i < s.packets.size(); ++i) {
        const std::int64_t pts = s.packets[i]->pts;
        if (pts != AV_NOPTS_VALUE && !std::binary_search(wanted.begin(), wanted.end(), pts)) {
            f.needed_[i] = false;
        }
    }
    return f;
}

frame_skipper frame_skipper::by_packet(std::size_t packets,
                                       const std::vector<std::int64_t>& frame_packets,
                                       const std::vector<std::int64_t>& wanted) {
    if (!packet_tags) return {};
    frame_skipper f;
    f.needed_.assign(packets + 1, false);
    for (std::int64_t k : wanted) {
        if (k < 0 || static_cast<std::size_t>(k) >= frame_packets.size()) return {};
        const std::int64_t tag = frame_packets[static_cast<std::size_t>(k)];
        // A frame not told apart by its packet: decode every frame.
        if (tag < 0 || static_cast<std::size_t>(tag) > packets) return {};
        f.needed_[static_cast<std::size_t>(tag)] = true;
    }
    return f;
}

void frame_skipper::before_send(AVCodecContext* ctx, std::size_t i) const {
    ctx->skip_frame = i < needed_.size() && !needed_[i] ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
}

bool decode_selected(const ferry::detail::packets_state& s, AVCodecContext* ctx,
                     decode_trouble& trouble, const frame_skipper& skip,
                     const std::vector<std::int64_t>& frame_packets,
                     const std::vector<std::int64_t>& times, const frame_sink& take, const char* op,
                     std::int64_t& returned) {
    // The window frame each packet made, where it made that one alone (unique_tags).
    std::vector<std::int64_t> made(s.packets.size() + 1, -1);
    for (std::size_t k = 0; k < frame_packets.size(); ++k) {
        const std::int64_t tag = frame_packets[k];
        if (tag < 0) continue;
        if (static_cast<std::size_t>(tag) >= made.size()) return false;
        made[static_cast<std::size_t>(tag)] = static_cast<std::int64_t>(k);
    }
    auto frame = make_frame();
    std::int64_t last = -1;
    bool stop = false;
    bool consistent = true;
    const auto on_frame = [&](const AVFrame* f) {
        ++returned;
        if (stop) return;
        const std::int64_t tag = packet_tag(f);
        if (tag < 0 || static_cast<std::size_t>(tag) >= made.size()) return;
        const std::int64_t k = made[static_cast<std::size_t>(tag)];
        if (k < 0) return;  // not a window frame, or not told apart
        // Frames come out in presentation order: one at or before the last seen means this decode
        // does not give the frames the full one gave.
        if (k <= last) {
            consistent = false;
            stop = true;
            return;
        }
        last = k;
        if (!take(k, f, times[static_cast<std::size_t>(k)])) stop = true;
    };
    for (std::size_t i = 0; i < s.packets.size() && !stop; ++i) {
        check_cancelled(op, s.source);
        tag_next_packet(ctx, i);
        skip.before_send(ctx, i);
        send_packet(ctx, s.packets[i].get(), frame.get(), trouble, on_frame);
        receive_frames(ctx, frame.get(), trouble, on_frame);
    }
    if (!stop) {
        tag_next_packet(ctx, s.packets.size());
        skip.before_send(ctx, s.packets.size());
        send_packet(ctx, nullptr, frame.get(), trouble, on_frame);
        receive_frames(ctx, frame.get(), trouble, on_frame);
    }
    return consistent;
}

}  // namespace ferry::ops::av
