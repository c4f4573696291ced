// SPDX-License-Identifier: Apache-2.0
/// \file
/// Which frames a window holds and which of them a selection wants: the frame indices of a
/// `frame_selection`, and the verified order — every packet decoded in order from the first, the
/// frames numbered as they come out (what the ffmpeg CLI writes with `-vsync passthrough`). The
/// demuxer counts frames with it where packets lack timestamps; the decoder falls back to it where
/// keyframe jumps cannot be trusted. Internal to ops/video/.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ffmpeg.hpp"

namespace ferry::ops::av {

/// Moves a clip's start (a frame of the window) to where the clip begins instead
/// (`demux_options::snap_to_keyframe`: the keyframe's frame at or before it).
using start_snap = std::function<std::int64_t(std::int64_t start)>;

/// The window's frame index for each output slot of `sel` over a window of `frames` frames; the
/// starts of a `clips` (after they are drawn) or `clips_at` selection moved by `snap` where it is
/// given. A selection that needs more frames than the window has is a `decode_error` naming the
/// frame and the count, and `truncation` (why the input is cut short, e.g. the frames its header
/// declares against those its data holds) where it is not empty.
std::vector<std::int64_t> select_frames(const frame_selection& sel, std::int64_t frames,
                                        const char* op, const std::string& source,
                                        const std::string& truncation, const start_snap& snap = {});

/// How many output slots `sel` fills over a window of `frames` frames, counted without making
/// them (a `uniform(1000000000)` must be refused before its slots take 8 GB), saturating.
std::uint64_t slot_count(const frame_selection& sel, std::int64_t frames) noexcept;

/// A decoder for `s`'s stream with `threads` threads and FFmpeg's own `max_pixels` check.
codec_ptr open_decoder(const ferry::detail::packets_state& s, int threads, std::uint64_t max_pixels,
                       const char* op);

/// Called with the window's `k`-th frame in the verified order, the frame and its timestamp (in
/// the stream's time base); returns false to stop decoding.
using frame_sink = std::function<bool(std::int64_t k, const AVFrame* frame, std::int64_t ts)>;

/// What `decode_in_order` saw besides the window's frames.
struct decode_extent {
    /// The first frame's own timestamp (in the window or not; AV_NOPTS_VALUE when none came out,
    /// or it came out without one).
    std::int64_t first_ts = AV_NOPTS_VALUE;
    /// The last frame's timestamp as given to the sink (in the window or not; AV_NOPTS_VALUE when
    /// none came out).
    std::int64_t last_ts = AV_NOPTS_VALUE;
    /// Every frame the decoder returned, in the window or not: the `frames decoded` counter.
    std::int64_t returned = 0;
    /// Each returned frame's `packet_tag` (skip.hpp), in the order they came out.
    std::vector<std::int64_t> tags;
};

/// Feeds every packet of `s` to `ctx` in order from the first, then drains it, and passes each
/// frame of the window to `take`. A frame's timestamp is its best-effort timestamp, or the
/// previous frame's plus `s.frame_duration` where it has none. Each packet is tagged with its
/// index (`tag_next_packet`, skip.hpp), the drain with `s.packets.size()`. Damaged packets are
/// noted in `trouble` and skipped. Returns the window's frames seen; `extent`, where given, says
/// what else came out.
std::int64_t decode_in_order(const ferry::detail::packets_state& s, AVCodecContext* ctx,
                             decode_trouble& trouble, const frame_sink& take, const char* op,
                             decode_extent* extent = nullptr);

/// Sets `s.frame_pts` to the timestamps of the window's frames in the verified order, and
/// `s.frame_packets` to the packets that made them (`unique_tags`, skip.hpp), by decoding `s`'s
/// packets once (no conversion); `extent` as `decode_in_order` sets it, its frames counted as
/// decoded in the stage call's `frames decoded`. Returns what went wrong while decoding.
decode_trouble count_frames(ferry::detail::packets_state& s, const char* op, decode_extent& extent);

}  // namespace ferry::ops::av
