// SPDX-License-Identifier: Apache-2.0
/// \file
/// What a selection does not need decoded: frames that are not selected and that no other frame
/// references are sent with FFmpeg's `skip_frame = AVDISCARD_NONREF`, so that the decoder drops
/// them (`video_decode_options::skip_nonref`). Which packets may be skipped is decided before
/// they are sent, whatever the decoder's delay: by a packet's presentation time where every
/// packet has its own (the fast path), else by the packet that made each frame in a decode of
/// every frame (the verified order, frames.hpp), told by a tag each packet carries into its
/// frames. Internal to ops/video/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "frames.hpp"

namespace ferry::ops::av {

/// Whether a frame can say which packet's decoding made it: `decode_in_order` and
/// `decode_selected` tag each packet they send through `AVCodecContext::reordered_opaque`, which
/// libavcodec copies into the frames that packet makes (to frame threads too) and which FFmpeg 7
/// removed; there, the verified order decodes every frame.
#define FERRY_PACKET_TAGS (LIBAVCODEC_VERSION_MAJOR < 61 && LIBAVUTIL_VERSION_MAJOR < 59)
inline constexpr bool packet_tags = FERRY_PACKET_TAGS;

/// Tags the packet about to be sent to `ctx` with its index `i` (nothing where `packet_tags` is
/// false).
void tag_next_packet(AVCodecContext* ctx, std::size_t i);

/// The tag of the packet whose decoding made `f` (-1 where `packet_tags` is false).
std::int64_t packet_tag(const AVFrame* f);

/// `window` (the window frames' tags) with -1 for each tag that is not one frame's alone among
/// `all` (every frame's, in the window or not): a packet that made two frames (a VP9 frame shown
/// again later, one before the window) cannot say which of them a frame is.
std::vector<std::int64_t> unique_tags(std::vector<std::int64_t> window,
                                      const std::vector<std::int64_t>& all);

/// Which packets must be decoded in full for a selection; the others are sent with
/// `skip_frame = AVDISCARD_NONREF`, so that the decoder drops the pictures among them that no
/// other picture references (H.264/HEVC non-reference pictures, MPEG-1/2/4 B-frames, VP8 frames
/// that update no reference) and decodes the rest. Empty: every packet decoded in full.
class frame_skipper {
  public:
    frame_skipper() = default;
    /// Where packets' presentation times identify the frames (`packets_state::timed`): packet
    /// `i` is needed when its time is one of `wanted` (ascending) or it has none.
    static frame_skipper by_time(const ferry::detail::packets_state& s,
                                 const std::vector<std::int64_t>& wanted);
    /// In the verified order: packet `i` is needed when a frame in `wanted` (window indices) was
    /// made by it, `frame_packets[k]` being frame `k`'s tag (`unique_tags`; the drain's is
    /// `packets`). Empty (nothing skipped) where a wanted frame's tag is -1.
    static frame_skipper by_packet(std::size_t packets,
                                   const std::vector<std::int64_t>& frame_packets,
                                   const std::vector<std::int64_t>& wanted);
    /// True when every packet is decoded in full.
    [[nodiscard]] bool empty() const noexcept { return needed_.empty(); }
    /// Sets `ctx->skip_frame` for the packet `i` about to be sent (`packets.size()`: the drain).
    void before_send(AVCodecContext* ctx, std::size_t i) const;

  private:
    std::vector<bool> needed_;
};

/// The verified order with frames skipped: sends `s`'s packets in order (those `skip` allows
/// with `AVDISCARD_NONREF`) and tells each frame that comes out by its packet's tag against
/// `frame_packets` (frame `k` of the window was made by packet `frame_packets[k]` when a full
/// decode counted them: `count_frames`, `unique_tags`), passing `take` the window's frames with
/// `times[k]`; frames whose tag is -1 or no window frame's are passed over. Returns false, having
/// stopped, when the frames do not come out in the full decode's order: the caller then decodes
/// every frame. `returned` counts every frame the decoder returned.
bool decode_selected(const ferry::detail::packets_state& s, AVCodecContext* ctx,
                     decode_trouble& trouble, const frame_skipper& skip,
                     const std::vector<std::int64_t>& frame_packets,
                     const std::vector<std::int64_t>& times, const frame_sink& take, const char* op,
                     std::int64_t& returned);

}  // namespace ferry::ops::av
