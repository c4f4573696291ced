// SPDX-License-Identifier: Apache-2.0
/// \file
/// Where a snapped start lands, on its own (ops/video/keyframes.hpp's `snapped_frame`, which
/// `snap_to_keyframe` uses for the starts of `clips` and `clips_at`), with windows and keyframe
/// lists written by hand: a start before the first keyframe and a start past the last keyframe of
/// a capped list stay where they are (files with those are costly to make: the cap is 100 000
/// keyframes); a keyframe at or before the stream's start snaps to the window's first frame; a
/// keyframe between two frames' times snaps to the frame after it; lists in another time base.
#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <numeric>
#include <vector>

#include "ops/video/keyframes.hpp"

namespace video_snap_rules_test {

using ferry::ops::av::keyframe_list;
using ferry::ops::av::snapped_frame;

constexpr AVRational frames_30fps{1, 30};

/// A window of `n` frames at 30 fps whose first frame has time `first` (in 1/30 s).
std::vector<std::int64_t> window(std::int64_t first, std::size_t n) {
    std::vector<std::int64_t> times(n);
    std::iota(times.begin(), times.end(), first);
    return times;
}

keyframe_list keys(std::vector<std::int64_t> pts, bool capped = false,
                   AVRational tb = frames_30fps) {
    keyframe_list k;
    k.time_base = tb;
    k.pts = std::move(pts);
    k.capped = capped;
    return k;
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(snap_rules)

BOOST_AUTO_TEST_CASE(a_start_moves_back_to_the_frame_of_the_keyframe_at_or_before_it) {
    // Frames 30..89 (times 30..89); keyframes every 60 frames.
    const auto times = window(30, 60);
    const auto k = keys({0, 60, 120});
    BOOST_TEST(snapped_frame(k, frames_30fps, times, 40) == 30);  // time 70 -> keyframe 60
    BOOST_TEST(snapped_frame(k, frames_30fps, times, 30) == 30);  // on the keyframe itself
    BOOST_TEST(snapped_frame(k, frames_30fps, times, 59) == 30);  // time 89 -> keyframe 60
}

BOOST_AUTO_TEST_CASE(a_keyframe_at_the_stream_start_snaps_to_the_window_first_frame) {
    // The window starts after time 0 (a demuxed window from 0 s may begin at a later time);
    // the keyframe at 0 s is the stream's start, so the window's first frame is where it snaps.
    const auto times = window(2, 40);
    BOOST_TEST(snapped_frame(keys({0, 60}), frames_30fps, times, 25) == 0);
    // A negative keyframe time (an edit list's lead-in) counts as the start too.
    BOOST_TEST(snapped_frame(keys({-3, 60}), frames_30fps, times, 25) == 0);
}

BOOST_AUTO_TEST_CASE(a_start_before_the_first_keyframe_stays) {
    const auto times = window(0, 90);
    const auto k = keys({30, 60});
    BOOST_TEST(snapped_frame(k, frames_30fps, times, 10) == 10);
    BOOST_TEST(snapped_frame(k, frames_30fps, times, 45) == 30);
}

BOOST_AUTO_TEST_CASE(a_start_past_a_capped_list_stays_and_past_a_full_list_snaps) {
    const auto times = window(0, 150);
    // Listed keyframes 0 and 60; the list is capped, so frame 130's keyframe is unknown.
    BOOST_TEST(snapped_frame(keys({0, 60}, true), frames_30fps, times, 130) == 130);
    // Within the capped list's range it snaps as usual.
    BOOST_TEST(snapped_frame(keys({0, 60}, true), frames_30fps, times, 59) == 0);
    // The whole list: 60 is the last keyframe, so frame 130 snaps to it.
    BOOST_TEST(snapped_frame(keys({0, 60}, false), frames_30fps, times, 130) == 60);
}

BOOST_AUTO_TEST_CASE(a_keyframe_between_two_frames_times_snaps_to_the_frame_after_it) {
    // Frames every 2 ticks of 1/60 s (30 fps): times 0, 2, 4, ...; a keyframe at 41 (no frame's
    // time) is followed by the frame at 42, index 21.
    const AVRational tb{1, 60};
    std::vector<std::int64_t> times(60);
    for (std::size_t i = 0; i < times.size(); ++i) times[i] = 2 * static_cast<std::int64_t>(i);
    BOOST_TEST(snapped_frame(keys({0, 41}, false, tb), tb, times, 30) == 21);
}

BOOST_AUTO_TEST_CASE(keyframes_in_another_time_base_are_rescaled) {
    // The keyframes in 1/90000 s (an MPEG-TS clock), the frames in 1/30 s: keyframe 2 s is
    // 180000 ticks, frame time 60.
    const auto times = window(30, 60);
    const auto k = keys({0, 180'000, 360'000}, false, AVRational{1, 90'000});
    BOOST_TEST(snapped_frame(k, frames_30fps, times, 45) == 30);  // time 75 (2.5 s) -> 2 s
    BOOST_TEST(snapped_frame(k, frames_30fps, times, 10) == 0);   // time 40 (1.33 s) -> 0 s
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()

}  // namespace video_snap_rules_test
