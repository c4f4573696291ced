// SPDX-License-Identifier: Apache-2.0
/// \file
/// A video stream's keyframes: read from a container (its sample table, its packets' keyframe
/// flags, or a decode of the keyframes alone) and kept per file in a bounded, process-wide LRU
/// cache (`keyframe_cache_limits`). `probe_video` lists them (`video_probe_options::keyframes`);
/// `demux_video` snaps a window's start to them and `decode_video` the starts of several clips
/// (`demux_options::snap_to_keyframe`). Internal to ops/video/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "ffmpeg.hpp"

namespace ferry::ops::av {

/// One stream's keyframes.
struct keyframe_list {
    AVRational time_base{0, 1};
    /// Presentation times in `time_base`, ascending, distinct.
    std::vector<std::int64_t> pts;
    keyframe_source from = keyframe_source::none;
    bool capped = false;  ///< more keyframes than the cap: `pts` holds the first ones
    /// What the list costs in the cache (`keyframe_cache_limits::bytes`).
    [[nodiscard]] std::size_t bytes() const noexcept { return 96 + pts.size() * sizeof(pts[0]); }
};

/// Reads stream `index`'s keyframes from `in` (whose position it moves), at most `cap`: the
/// container's sample table where it lists every frame (MP4, MOV), each keyframe's packet read
/// for its presentation time; else every packet's keyframe flag; else, where a keyframe packet
/// has no presentation time, a decode of the keyframes alone (`AVDISCARD_NONKEY`). Counts
/// `keyframe lists read` on the stage's line. Stalls and stops throw as `demux_video` does; a
/// read that fails ends the list there (a cut file lists what it holds).
keyframe_list read_keyframes(const input& in, int index, std::size_t cap, const char* op);

/// The keyframes of stream `index` of the input `in` was opened from: from the cache where `in`
/// is a file (`byte_source::stamp`) read before with the same cap, else read from the input
/// `reopen` opens (so that `in` keeps its position; empty: from `in` itself) and cached where
/// `in` is a file.
std::shared_ptr<const keyframe_list> keyframes_of(const input& in, int index, std::size_t cap,
                                                  const std::function<input()>& reopen,
                                                  const char* op);

/// Frame `start` of a window whose frames, in presentation order, have the times `times` (in
/// `tb`), moved back to the keyframe at or before it (`demux_options::snap_to_keyframe` for the
/// starts of `clips` and `clips_at`): to the window's first frame of those from the last of `keys`
/// at or before frame `start`'s time on to `start` (that keyframe's frame; the window's first
/// frame where the keyframe is at or before the stream's start, 0 s, as a snapped window start
/// is). `start` where `keys` has no keyframe at or before it, or where it lies past the last
/// one of a capped list. `start` must be a frame of the window.
std::int64_t snapped_frame(const keyframe_list& keys, AVRational tb,
                           std::span<const std::int64_t> times, std::int64_t start);

}  // namespace ferry::ops::av
