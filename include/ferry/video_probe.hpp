// SPDX-License-Identifier: Apache-2.0
/// \file
/// `probe_video`: a video's duration, frame rate, estimated frame count, codec, size and streams
/// from its container header and index, without decoding the video. Part of `ferry::video`
/// (included by `ferry/video.hpp`); no FFmpeg header is included here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "ferry/export.hpp"

namespace ferry {

/// What a container stream carries.
enum class stream_type : std::uint8_t { video, audio, subtitle, data, attachment, unknown };

/// The name of `t`, e.g. `"audio"`.
[[nodiscard]] FERRY_API const char* to_string(stream_type t) noexcept;

/// Where `video_info::frames` came from.
enum class frame_count_source : std::uint8_t {
    header,    ///< the container states the stream's frame count (MP4, MOV, AVI)
    duration,  ///< duration x frame rate, rounded (Matroska, WebM, Ogg, MPEG-PS/TS, raw streams)
    unknown,   ///< neither is known: `frames` is 0
};

/// The name of `s`: `"header"`, `"duration x rate"`, `"unknown"`.
[[nodiscard]] FERRY_API const char* to_string(frame_count_source s) noexcept;

/// Where `video_info::duration` came from.
enum class duration_source : std::uint8_t {
    header,      ///< the container states it (MP4, MOV, AVI, Matroska, WebM; Ogg's last page)
    timestamps,  ///< the first and last frames' timestamps (MPEG-PS/TS): see `video_info`
    bit_rate,    ///< the file's size over its bit rate, a guess (raw `.h264`, `.m2v` streams)
    /// Nothing says it: `duration` is 0 (and `frames`, unless the header states them). MPEG-PS/TS
    /// and raw streams read from a pipe or FIFO, whose end cannot be read ahead, or an MPEG
    /// file whose timestamps go back (joined files).
    unknown,
};

/// The name of `s`: `"header"`, `"timestamps"`, `"bit rate"`, `"unknown"`.
[[nodiscard]] FERRY_API const char* to_string(duration_source s) noexcept;

/// Where `video_info::keyframes` came from.
enum class keyframe_source : std::uint8_t {
    none,  ///< not asked for (`video_probe_options::keyframes` false), or no video stream
    /// The container's sample table (MP4, MOV: `stss`), where it lists every frame of the
    /// stream: one packet read per keyframe, for its presentation time.
    index,
    /// Every packet of the stream read, without decoding: those flagged as keyframes, at their
    /// presentation times (Matroska, WebM, MPEG-TS, FLV, fragmented MP4, ...).
    packets,
    /// Where keyframe packets lack presentation times (MPEG-PS, AVI with B-frames, raw H.264):
    /// the stream decoded with every frame but the keyframes skipped (FFmpeg's
    /// `skip_frame = AVDISCARD_NONKEY`, as `ffprobe -skip_frame nokey` does), at the keyframes'
    /// best-effort timestamps.
    decoding,
};

/// The name of `s`: `"none"`, `"index"`, `"packets"`, `"decoding"`.
[[nodiscard]] FERRY_API const char* to_string(keyframe_source s) noexcept;

/// One stream of a container, as its header describes it. Unknown numbers are 0, an unknown
/// codec or pixel format is `""`.
struct stream_info {
    int index = -1;  ///< the stream's index in the container (`demux_options::stream`)
    stream_type type = stream_type::unknown;
    std::string codec;              ///< FFmpeg's short codec name, e.g. `"h264"`, `"aac"`
    double start = 0.0;             ///< first timestamp, seconds
    double duration = 0.0;          ///< seconds, as the stream states it
    std::int64_t frames = 0;        ///< frames (video) or packets the header states
    std::int64_t bit_rate = 0;      ///< bits per second
    int width = 0;                  ///< video
    int height = 0;                 ///< video
    double frame_rate = 0.0;        ///< video: frames per second
    std::string pixel_format;       ///< video: FFmpeg's name, e.g. `"yuv420p"`
    int sample_rate = 0;            ///< audio: Hz
    int channels = 0;               ///< audio
    bool attached_picture = false;  ///< video: a cover image, not a moving stream
};

/// What `probe_video` reads from a container: the best video stream's properties (the stream
/// `demux_video` reads by default) and every stream's description. Unknown numbers are 0.
struct video_info {
    std::string format;  ///< FFmpeg's container name, e.g. `"matroska,webm"`, `"mpegts"`
    int stream = -1;     ///< index of the best video stream; -1 when there is none
    /// Seconds: the video stream's duration, or the container's where the stream states none
    /// (Matroska, WebM). MPEG-PS/TS state none: probe_video counts the frames from the first
    /// one's decode time (read at the start) to the last one's (read within 16 MiB of the end),
    /// so it is the frames that decode times the frame duration; raw streams (`.h264`, `.m2v`)
    /// only have a guess from the bit rate. 0 when unknown: `duration_from` says which.
    double duration = 0.0;
    /// The video stream's first presentation time in seconds. `demux_options::start` and `end`
    /// are stream times, so a window of the whole video is `[start, start + duration)`; most
    /// containers start at 0, MPEG-PS/TS at an offset (e.g. 1.4 s).
    double start = 0.0;
    /// Frames per second: the average rate (FFmpeg's guess from `avg_frame_rate` and
    /// `r_frame_rate`).
    double frame_rate = 0.0;
    /// An estimate of the frame count from the header: the count the container states where it
    /// states one (`frames_from == header`), else `round(duration * frame_rate)`. The frames that
    /// decode can differ: a header may overstate them (a cut or badly written file; `load_video`
    /// then names the header's claim when a selection asks for more), and a stream whose rate
    /// varies is not its duration times its average rate. Use it to choose a clip start, not as
    /// a count of decodable frames.
    std::int64_t frames = 0;
    frame_count_source frames_from = frame_count_source::unknown;
    std::string codec;  ///< the video codec's short name, e.g. `"h264"`, `"vp9"`
    int width = 0;      ///< frame size as the stream declares it
    int height = 0;
    std::string pixel_format;  ///< FFmpeg's name, e.g. `"yuv420p"`; `""` when unknown
    /// Bits per second of the video stream, or of the whole container where the stream states
    /// none (Matroska, WebM, MPEG-PS/TS).
    std::int64_t bit_rate = 0;
    /// Every stream of the container, in container order.
    std::vector<stream_info> streams;
    /// Where `duration` came from; `unknown` (and `duration` 0) where nothing says it, never a
    /// guess passed off as a length.
    duration_source duration_from = duration_source::unknown;
    /// With `video_probe_options::keyframes`: the presentation time in seconds of each keyframe
    /// of the stream (a frame decoding can start at), ascending, in the stream times
    /// `demux_options::start` counts in; empty otherwise. At most
    /// `video_probe_options::max_keyframes` of them, the first ones (`keyframes_capped`).
    std::vector<double> keyframes;
    /// Where `keyframes` came from.
    keyframe_source keyframes_from = keyframe_source::none;
    /// True when the stream has more keyframes than `video_probe_options::max_keyframes`:
    /// `keyframes` holds the first ones.
    bool keyframes_capped = false;
};

/// How `probe_video` reads.
struct video_probe_options {
    /// As `demux_options::timeout`: a read that delivers no data for this long fails with
    /// `ferry::io_error`.
    std::chrono::milliseconds timeout{10'000};
    /// An input without a video stream (audio only, subtitles) is a `ferry::decode_error` when
    /// true; false returns its streams with `stream == -1` and the video fields left empty.
    bool require_video = true;
    /// Fill `video_info::keyframes`: each keyframe's time, from the container's sample table where
    /// it lists every frame (MP4, MOV), else from every packet's keyframe flag (the whole stream
    /// read, not decoded), else, where keyframe packets carry no presentation time (MPEG-PS, AVI
    /// with B-frames, raw streams), by decoding the keyframes alone. This reads the whole file
    /// except for MP4 and MOV (tens of milliseconds for a 2-minute 720p file from the page
    /// cache); for a path, the list is kept in the process-wide keyframe cache
    /// (`keyframe_cache_limits`) and read from there while the file's size and modification time
    /// stay the same. False (the default): no keyframe is read.
    bool keyframes = false;
    /// At most this many keyframes are listed (8 bytes each); more set
    /// `video_info::keyframes_capped`. 100000 covers a day of video at one keyframe a second, an
    /// hour of all-intra video at 25 frames a second.
    std::size_t max_keyframes = 100'000;
};

/// The bounds of the process-wide keyframe cache: the keyframe lists that
/// `video_probe_options::keyframes` and `demux_options::snap_to_keyframe` read from files, keyed
/// by the file (device and inode), its size and modification time, and the stream, so that a
/// file rewritten is read again. Least recently used lists go first once either bound is passed.
/// Inputs in memory are not cached (their list is read each time).
struct keyframe_cache_limits {
    /// Lists kept at most.
    std::size_t entries = 4096;
    /// Bytes kept at most: 8 per keyframe plus about 100 per list (16 MiB by default: two
    /// million keyframes).
    std::size_t bytes = std::size_t{16} << 20;
};

/// What the keyframe cache holds and did since the process started.
struct keyframe_cache_stats {
    std::size_t entries = 0;      ///< lists held
    std::size_t bytes = 0;        ///< their bytes, as `keyframe_cache_limits::bytes` counts them
    std::uint64_t builds = 0;     ///< lists read from a file (a miss, or a file that changed)
    std::uint64_t hits = 0;       ///< lists found in the cache
    std::uint64_t evictions = 0;  ///< lists dropped to stay within the limits
};

/// Sets the keyframe cache's bounds (thread-safe; evicts at once what no longer fits). `{0, 0}`
/// turns caching off.
FERRY_API void set_keyframe_cache_limits(const keyframe_cache_limits& limits);

/// The keyframe cache's counts now (thread-safe).
[[nodiscard]] FERRY_API keyframe_cache_stats keyframe_cache_snapshot();

namespace ops {
namespace detail {
struct FERRY_API probe_video_fn {
    video_info operator()(const std::filesystem::path& path,
                          const video_probe_options& options = {}) const;
    video_info operator()(std::span<const std::byte> data,
                          const video_probe_options& options = {}) const;
};
}  // namespace detail

/// Reads a video's duration, frame rate, estimated frame count, codec, size and streams from its
/// file or bytes (as `demux_video` reads them: files, pipes, FIFOs or memory) without decoding
/// the video: the container's header and index (FFmpeg's `avformat_open_input`) and, where those
/// leave codec parameters open (MPEG-PS/TS and raw streams; the pixel format, which MP4 and
/// Matroska omit), the first packets, at most 1 MiB or 1 s of them, as `ffprobe` does. The one
/// exception is the pixel format: FFmpeg learns it by decoding the first frame where no header
/// states it. MPEG-PS/TS files are also read near their end (at most the last 16 MiB) for the
/// last frame's timestamp; from a pipe or FIFO their duration is unknown. Unless asked for the
/// keyframes (`video_probe_options::keyframes`, which reads the stream's packets and is cached
/// per file), it never reads the whole file: on a 2-minute 640x360 H.264 MP4 it costs about 3 ms
/// where `demux_video` of the whole file costs about 70 ms. `frames` is an estimate (see
/// `video_info::frames`). Throws `ferry::io_error` (missing file, stalled read) and
/// `ferry::decode_error` (empty input, not a container, no video stream unless `require_video` is
/// false), naming the path or `<memory>`; stops as `demux_video` does when
/// `ferry::this_call::stop_requested()` turns true.
///
/// \code
///   const ferry::video_info info = ferry::ops::probe_video(path);
///   const double span = 16 / info.frame_rate;  // 16 frames (check frame_rate > 0)
///   const double last = info.start + std::max(0.0, info.duration - span);
///   const double t = std::uniform_real_distribution<double>(info.start, last)(rng);
///   auto clip = ferry::ops::load_video(
///       path, {.demux = {.start = t}, .decode = {.select = ferry::frame_selection::clip(16)}});
/// \endcode
inline constexpr detail::probe_video_fn probe_video{};

}  // namespace ops
}  // namespace ferry
