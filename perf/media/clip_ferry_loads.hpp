// SPDX-License-Identifier: Apache-2.0
/// \file
/// clip_loading's ferry side: clips per second of a pipeline loading the samples one clip per
/// `load_video` call with each lever off or on (`skip_nonref`, `snap_to_keyframe`, decoder
/// threads), or several clips of a video per call (`clips(4, 16, 2)`, with `snap_to_keyframe` or
/// not), with the stage's `frames decoded` per clip.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <vector>

#include "clip_hand_loop.hpp"
#include "common/video_set.hpp"
#include "ferry/ferry.hpp"
#include "ferry/video.hpp"
#include "ferry/video_probe.hpp"

namespace ferry_perf {

/// Several clips of one video: their first frames.
struct batch_sample {
    std::filesystem::path path;
    std::vector<std::int64_t> starts;
};

/// One ferry run: its rate and its stage's counters per clip.
struct ferry_result {
    double clips_per_s = 0;
    double decoded_per_clip = 0;  ///< the stage's `frames decoded` counter per clip
    double threads_per_clip = 0;  ///< the stage's `decoder threads` counter per clip
};

/// How ferry loads: the levers, each off or on.
struct ferry_way {
    bool skip_nonref = true;
    bool snap = false;         ///< demux_options::snap_to_keyframe
    int threads = 0;           ///< video_decode_options::threads (0: ferry chooses)
    int pipeline_threads = 1;  ///< pipeline_options::threads
};

/// ferry's clips per second loading `samples` the given way.
inline ferry_result ferry_rate(const std::vector<sample>& samples, int concurrency, ferry_way way) {
    const auto t0 = clock_type::now();
    auto pipe =
        ferry::from(samples)
            .map(
                [way](const sample& s) {
                    return ferry::ops::load_video(
                               s.path, {.demux = {.start = s.start, .snap_to_keyframe = way.snap},
                                        .decode = {.select = ferry::frame_selection::clip(
                                                       frames_per_clip, stride),
                                                   .resize = {side, side},
                                                   .threads = way.threads,
                                                   .skip_nonref = way.skip_nonref}})
                        .frames();
                },
                {.concurrency = concurrency, .name = "load_video", .executor = ferry::io})
            .build({.threads = way.pipeline_threads});
    std::size_t clips = 0;
    for (int n : pipe) {
        if (n != frames_per_clip) {
            std::cerr << "clip_loading: ferry delivered a clip of " << n << " frames\n";
            std::exit(1);
        }
        ++clips;
    }
    if (clips != samples.size()) {
        std::cerr << "clip_loading: ferry delivered " << clips << " of " << samples.size() << '\n';
        std::exit(1);
    }
    const double wall = seconds_since(t0);
    std::uint64_t decoded = 0;
    std::uint64_t threads = 0;
    for (const auto& st : pipe.stats().stages) {
        if (st.name != "load_video") continue;
        for (const auto& [name, n] : st.counters) {
            if (name == "frames decoded") decoded = n;
            if (name == "decoder threads") threads = n;
        }
    }
    return {static_cast<double>(clips) / wall,
            static_cast<double>(decoded) / static_cast<double>(clips),
            static_cast<double>(threads) / static_cast<double>(clips)};
}

/// `clips_per_pass` random clips (`clips(4, 16, 2)`), starts drawn from the item's numbers.
inline ferry::video_options batch_options() {
    return {
        .decode = {.select = ferry::frame_selection::clips(clips_per_pass, frames_per_clip, stride),
                   .resize = {side, side}}};
}

/// ferry's clips per second loading `clips_per_pass` random clips per `load_video` call; each
/// video's starts into `starts` (the same in every run: they depend on the item alone).
inline ferry_result batch_rate(const std::vector<std::filesystem::path>& videos, int concurrency,
                               std::vector<batch_sample>* starts = nullptr) {
    const auto t0 = clock_type::now();
    auto pipe = ferry::from(videos)
                    .map(
                        [](const std::filesystem::path& p, const ferry::item_info&) {
                            const auto b = ferry::ops::load_video(p, batch_options());
                            batch_sample out{p, {}};
                            for (int c = 0; c < b.clips(); ++c) {
                                out.starts.push_back(
                                    b.indices()[static_cast<std::size_t>(c * b.clip_frames())]);
                            }
                            if (b.frames() != frames_per_clip * clips_per_pass) out.starts.clear();
                            return out;
                        },
                        {.concurrency = concurrency, .name = "load_video", .executor = ferry::io})
                    .build({.threads = 1});
    std::size_t clips = 0;
    for (batch_sample& b : pipe) {
        if (b.starts.size() != clips_per_pass) {
            std::cerr << "clip_loading: ferry delivered a short batch of " << b.path << "\n";
            std::exit(1);
        }
        clips += clips_per_pass;
        if (starts != nullptr) starts->push_back(std::move(b));
    }
    const double wall = seconds_since(t0);
    std::uint64_t decoded = 0;
    const auto stats = pipe.stats();
    for (const auto& st : stats.stages) {
        if (st.name != "load_video") continue;
        for (const auto& [name, n] : st.counters) {
            if (name == "frames decoded") decoded = n;
        }
    }
    return {static_cast<double>(clips) / wall,
            static_cast<double>(decoded) / static_cast<double>(clips)};
}

/// The batches' clips as separate samples: each start's time (frame `s` of a 30 fps file that
/// starts at 0 is shown at `s / 30` s).
inline std::vector<sample> separate(const std::vector<batch_sample>& batches) {
    std::vector<sample> out;
    for (const auto& b : batches) {
        for (const std::int64_t s : b.starts) {
            out.push_back({b.path, static_cast<double>(s) / ferry_perf::video_fps});
        }
    }
    return out;
}

/// `start` (seconds) moved back to the last of `keyframes` (ascending) at or before it, as
/// `demux_options::snap_to_keyframe` moves a window's start; a start before the first stays.
inline double snap_back(const std::vector<double>& keyframes, double start) {
    const auto after = std::upper_bound(keyframes.begin(), keyframes.end(), start);
    return after == keyframes.begin() ? start : *std::prev(after);
}

/// Frame `s` of a 30 fps file that starts at 0, moved back to the keyframe at or before it.
inline std::int64_t snap_frame(const std::vector<double>& keyframes, std::int64_t s) {
    return std::llround(snap_back(keyframes, static_cast<double>(s) / video_fps) * video_fps);
}

/// The samples with their starts snapped to keyframes: the clips ferry loads with
/// `snap_to_keyframe`, for the hand loop to load the same frames. Keyframes from `probe_video`.
inline std::vector<sample> snapped(const std::vector<sample>& samples) {
    std::map<std::filesystem::path, std::vector<double>> keyframes;
    std::vector<sample> out;
    for (const sample& s : samples) {
        auto [it, fresh] = keyframes.try_emplace(s.path);
        if (fresh) it->second = ferry::ops::probe_video(s.path, {.keyframes = true}).keyframes;
        out.push_back({s.path, snap_back(it->second, s.start)});
    }
    return out;
}

/// The batches with each start snapped to the keyframe at or before it.
inline std::vector<batch_sample> snapped(const std::vector<batch_sample>& batches) {
    std::vector<batch_sample> out;
    for (const batch_sample& b : batches) {
        const auto keyframes = ferry::ops::probe_video(b.path, {.keyframes = true}).keyframes;
        batch_sample s{b.path, {}};
        for (const std::int64_t f : b.starts) s.starts.push_back(snap_frame(keyframes, f));
        out.push_back(std::move(s));
    }
    return out;
}

/// `batch_options()` with `snap_to_keyframe`: each drawn start moved back to the keyframe at or
/// before it (after the draw: the same item, the same drawn starts).
inline ferry::video_options snapped_batch_options() {
    ferry::video_options o = batch_options();
    o.demux.snap_to_keyframe = true;
    return o;
}

/// The first frame of each clip of `batch`.
inline std::vector<std::int64_t> clip_starts(const ferry::video_clip& batch) {
    std::vector<std::int64_t> starts;
    for (int c = 0; c < batch.clips(); ++c) {
        starts.push_back(batch.indices()[static_cast<std::size_t>(c * batch.clip_frames())]);
    }
    return starts;
}

/// ferry's clips per second loading each video's `clips_per_pass` random clips in one
/// `load_video` call, every lever on: `clips(4, 16, 2)` with `snap_to_keyframe` (one demuxer,
/// one decoder, one pass, `skip_nonref`; the keyframe lists from the cache). `snapped_batches`
/// are the videos in the order `batch_rate` drew from them, with the drawn starts snapped by hand
/// (`snapped`): exits unless ferry's snapped starts are those, so that the hand loop loads the
/// same frames.
inline ferry_result snapped_batch_rate(const std::vector<batch_sample>& snapped_batches,
                                       int concurrency) {
    std::vector<std::filesystem::path> videos;
    for (const batch_sample& b : snapped_batches) videos.push_back(b.path);
    const auto t0 = clock_type::now();
    auto pipe = ferry::from(videos)
                    .map(
                        [](const std::filesystem::path& p, const ferry::item_info&) {
                            const auto b = ferry::ops::load_video(p, snapped_batch_options());
                            if (b.frames() != frames_per_clip * clips_per_pass) {
                                return std::vector<std::int64_t>{};
                            }
                            return clip_starts(b);
                        },
                        {.concurrency = concurrency, .name = "load_video", .executor = ferry::io})
                    .build({.threads = 1});
    std::size_t clips = 0;
    for (const std::vector<std::int64_t>& starts : pipe) {
        const std::size_t video = clips / clips_per_pass;
        if (starts.size() != clips_per_pass) {
            std::cerr << "clip_loading: ferry delivered a short batch of " << videos[video] << "\n";
            std::exit(1);
        }
        if (starts != snapped_batches[video].starts) {
            std::cerr << "clip_loading: snap_to_keyframe gave other clip starts than snapping "
                         "by hand for "
                      << videos[video] << "\n";
            std::exit(1);
        }
        clips += clips_per_pass;
    }
    const double wall = seconds_since(t0);
    std::uint64_t decoded = 0;
    for (const auto& st : pipe.stats().stages) {
        if (st.name != "load_video") continue;
        for (const auto& [name, n] : st.counters) {
            if (name == "frames decoded") decoded = n;
        }
    }
    return {static_cast<double>(clips) / wall,
            static_cast<double>(decoded) / static_cast<double>(clips)};
}

/// Exits unless the first video's batch, drawn from item 0's numbers outside a pipeline, has the
/// starts the pipeline drew, and each clip the bytes its separate load gives.
inline void check_same_clips(const batch_sample& b) {
    ferry::video_options o = batch_options();
    o.decode.select =
        ferry::frame_selection::clips(clips_per_pass, frames_per_clip, stride, ferry::item_info{});
    const auto batch = ferry::ops::load_video(b.path, o);
    const std::vector<sample> alone = separate({b});
    for (std::size_t c = 0; c < alone.size(); ++c) {
        const auto clip = ferry::ops::load_video(
            b.path, {.demux = {.start = alone[c].start},
                     .decode = {.select = ferry::frame_selection::clip(frames_per_clip, stride),
                                .resize = {side, side}}});
        const auto from = batch.frame(static_cast<int>(c) * frames_per_clip);
        if (batch.indices()[c * frames_per_clip] != b.starts[c] ||
            clip.data().size() != from.size() * frames_per_clip ||
            std::memcmp(clip.data().data(), from.data(), clip.data().size()) != 0) {
            std::cerr << "clip_loading: clip " << c << " of " << b.path
                      << " differs between one pass and its own load\n";
            std::exit(1);
        }
    }
}

/// Exits unless the first video's batch with `snap_to_keyframe`, drawn from item 0's numbers
/// outside a pipeline, starts where snapping the drawn starts by hand puts them, and each clip has
/// the bytes `snap_to_keyframe` gives that clip's drawn start alone.
inline void check_snapped_clips(const batch_sample& drawn) {
    const batch_sample b = snapped(std::vector<batch_sample>{drawn}).front();
    ferry::video_options o = snapped_batch_options();
    o.decode.select =
        ferry::frame_selection::clips(clips_per_pass, frames_per_clip, stride, ferry::item_info{});
    const auto batch = ferry::ops::load_video(b.path, o);
    if (clip_starts(batch) != b.starts) {
        std::cerr << "clip_loading: snap_to_keyframe gave other clip starts than snapping by hand "
                     "for "
                  << b.path << "\n";
        std::exit(1);
    }
    const std::vector<sample> alone = separate({drawn});
    for (std::size_t c = 0; c < alone.size(); ++c) {
        const auto clip = ferry::ops::load_video(
            b.path, {.demux = {.start = alone[c].start, .snap_to_keyframe = true},
                     .decode = {.select = ferry::frame_selection::clip(frames_per_clip, stride),
                                .resize = {side, side}}});
        const auto from = batch.frame(static_cast<int>(c) * frames_per_clip);
        if (clip.data().size() != from.size() * frames_per_clip ||
            std::memcmp(clip.data().data(), from.data(), clip.data().size()) != 0) {
            std::cerr << "clip_loading: snapped clip " << c << " of " << b.path
                      << " differs between one pass and snap_to_keyframe alone\n";
            std::exit(1);
        }
    }
}

}  // namespace ferry_perf
