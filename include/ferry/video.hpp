// SPDX-License-Identifier: Apache-2.0
/// \file
/// Video and audio on FFmpeg: `ferry::packets`, `ferry::video_clip`, `ferry::audio` and the ops
/// `demux_video`, `decode_video`, `load_video`, `decode_audio` (from `ferry/audio.hpp`), and
/// `probe_video` (from `ferry/video_probe.hpp`). Link `ferry::video`; no FFmpeg header is
/// included here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ferry/audio.hpp"
#include "ferry/bytes.hpp"
#include "ferry/detail/owned_buffer.hpp"
#include "ferry/export.hpp"
#include "ferry/item.hpp"
#include "ferry/pixels.hpp"
#include "ferry/tensor.hpp"
#include "ferry/video_probe.hpp"

namespace ferry {

/// Channel layout of decoded video frames: `ferry::pixel_format` (ferry/pixels.hpp, part of
/// ferry::core, so that `ferry::video` does not depend on `ferry::image`), of which video takes
/// `rgb`, `bgr` and `gray`; `rgba` is refused (`ferry::invalid_argument`).
using frame_format = pixel_format;

/// A width and a height in pixels for video frames (`ferry::pixel_size`); `{0, 0}` means "as
/// stored".
using frame_size = pixel_size;

/// swscale's resampling filters.
enum class scale_filter : std::uint8_t { nearest, bilinear, bicubic, area, lanczos };

/// Which frames `decode_video` returns. Frame indices count the frames of the demuxed window that
/// decode, in presentation order (0 = the first frame at or after `demux_options::start`; without
/// a window, the stream's own frame numbers): the frames the `ffmpeg` CLI writes with `-vsync
/// passthrough`, not the frames a container header declares. A selection that needs more frames
/// than decode is a `ferry::decode_error`.
/// \code
///   frame_selection::all()                  // every frame
///   frame_selection::indices({0, 10, 20})   // these frames, in this order
///   frame_selection::uniform(8)             // 8 frames spread over the clip, first and last
///   frame_selection::clip(8, 4)             // frames 0, 4, 8, ..., 28 of the window
///   frame_selection::clips(4, 16, 2)        // 4 clips of 16 frames at stride 2, random starts
///   frame_selection::clips_at({0, 90}, 8)   // frames 0-7 and 90-97, as a batch of 2 clips
/// \endcode
class FERRY_API frame_selection {
  public:
    enum class kind : std::uint8_t { all, indices, uniform, clip, clips, clips_at };

    /// Every frame of the window.
    [[nodiscard]] static frame_selection all() { return {}; }
    /// The given frames, in the given order (repeats allowed).
    [[nodiscard]] static frame_selection indices(std::vector<std::int64_t> frames);
    /// `count` frames at `round(i * (T - 1) / (count - 1))` for a window of `T` frames (like
    /// `np.linspace(0, T - 1, count).round()`); frames repeat when `count > T`.
    [[nodiscard]] static frame_selection uniform(int count);
    /// `count` frames `stride` apart from the window's first frame. With `load_video` and
    /// `.demux = {.start = t}` this is "N frames at stride S starting at t": only the packets from
    /// the keyframe before `t` to the last frame needed are read and decoded.
    [[nodiscard]] static frame_selection clip(int count, int stride = 1);
    /// `count` clips of `frames` frames `stride` apart, decoded in one pass (one demuxer, one
    /// decoder, in time order) and returned as a batch (`video_clip::clips()`, a tensor
    /// `[count, frames, H, W, C]`), in the order they were drawn. Each start is drawn uniformly
    /// from `[0, T - (frames - 1) * stride - 1]` for a window of `T` frames (the frames that
    /// decode, counted by the demuxer: the whole window is read), independently (with
    /// replacement: two clips may coincide), from the numbers of the stage call's item
    /// (`ferry::item_rng`; the call's callable must take a `const ferry::item_info&`, or
    /// `clips` is a `ferry::invalid_argument`), so the same item of the same epoch gets the same
    /// clips whatever the threads, the world size or the resume point. Each clip's pixels are
    /// the ones `clip(frames, stride)` gives from that start. A window shorter than one clip is
    /// a `ferry::decode_error` naming both counts. With `demux_options::snap_to_keyframe`, each
    /// start drawn moves back to the keyframe at or before it (after the draw: the same item
    /// still gets the same clips).
    /// \code
    ///   .map([](const std::filesystem::path& p, const ferry::item_info&) {
    ///       return ferry::ops::load_video(
    ///           p, {.decode = {.select = ferry::frame_selection::clips(4, 16, 2)}}).to_tensor();
    ///   })   // u8 [4, 16, H, W, 3]
    /// \endcode
    [[nodiscard]] static frame_selection clips(int count, int frames, int stride = 1);
    /// As `clips(count, frames, stride)`, the starts drawn from `item`'s numbers (the same as
    /// inside a stage call on that item): for a call outside a stage.
    [[nodiscard]] static frame_selection clips(int count, int frames, int stride,
                                               const item_info& item);
    /// Clips of `frames` frames `stride` apart from the given window frames, in the given order
    /// (repeats allowed), as a batch like `clips`: the deterministic form. `load_video` reads
    /// up to the last clip's last frame. With `demux_options::snap_to_keyframe`, each start
    /// moves back to the keyframe at or before it.
    [[nodiscard]] static frame_selection clips_at(std::vector<std::int64_t> starts, int frames,
                                                  int stride = 1);

    [[nodiscard]] kind mode() const noexcept { return kind_; }
    /// `indices`' frames; `clips_at`'s starts.
    [[nodiscard]] const std::vector<std::int64_t>& frames() const noexcept { return frames_; }
    /// `uniform`'s count; `clip`'s, `clips`' and `clips_at`'s frames per clip.
    [[nodiscard]] int count() const noexcept { return count_; }
    [[nodiscard]] int stride() const noexcept { return stride_; }
    /// The clips of a `clips` or `clips_at` selection (0 for the others).
    [[nodiscard]] int clips() const noexcept { return clips_; }
    /// The item whose numbers `clips(count, frames, stride, item)` draws from; none: the stage
    /// call's.
    [[nodiscard]] const std::optional<item_info>& item() const noexcept { return item_; }
    /// The frames needed from the window's start (0 = all): what `load_video` tells the demuxer
    /// so that it can stop reading early.
    [[nodiscard]] std::int64_t frames_needed() const noexcept;

  private:
    kind kind_ = kind::all;
    std::vector<std::int64_t> frames_;
    int count_ = 0;
    int stride_ = 1;
    int clips_ = 0;
    std::optional<item_info> item_{};
};

/// How `demux_video` reads a container.
struct demux_options {
    /// The stream to read (an index into the container's streams); -1: FFmpeg's best video
    /// stream. Other negative values are a `ferry::invalid_argument`.
    int stream = -1;
    /// Window start in seconds (stream timestamps): the demuxer seeks to the keyframe at or
    /// before it; frames before it are decoded if needed but never returned.
    double start = 0.0;
    /// Window end in seconds (exclusive); none: to the end of the stream.
    std::optional<double> end{};
    /// Stop reading once this many frames at or after `start` are certain (0: no limit;
    /// negative: a `ferry::invalid_argument`). `load_video` derives it from the frame selection
    /// when left at 0.
    std::int64_t max_frames = 0;
    /// A read that delivers no data for this long fails with `ferry::io_error` (a stalled pipe
    /// or FIFO, or a FIFO no writer opens; FFmpeg's own loops are interrupted through an
    /// `AVIOInterruptCB`).
    std::chrono::milliseconds timeout{10'000};
    /// Streams whose header declares more pixels per frame than this are refused.
    std::uint64_t max_pixels = 64'000'000;
    /// A cut or damaged file: false (the default) returns the packets that could be read, as the
    /// ffmpeg CLI does, with `packets::truncated()` set and the stage's `stage_stats::truncated`
    /// counted; true makes it a `ferry::decode_error`. Cut means a packet could not be read, or
    /// the data ends before the frame count or duration the container declares (by more than two
    /// frames) when read to its end.
    bool strict = false;
    /// Moves `start` back to the keyframe at or before it, so that the window begins with a frame
    /// decoding starts at and no frame before the window is decoded: faster clips from random
    /// starts, at the price of start times that are no longer uniform but keyframe times (with
    /// a keyframe every 2 s, every clip starts at 0, 2, 4, ... s). Off by default. The keyframes
    /// are those `probe_video` lists with `{.keyframes = true}`: for a file, read once and kept
    /// in the process-wide keyframe cache (`keyframe_cache_limits`) while its size and
    /// modification time stay the same; for bytes in memory, read on each call. A start before
    /// the first keyframe, or past the last one listed where the list is capped
    /// (`video_probe_options::max_keyframes`), stays as it is. Needs a seekable input: a pipe or
    /// FIFO is a `ferry::invalid_argument`. The stage counts `keyframe lists read` when it reads
    /// one.
    /// The starts of `frame_selection::clips` (after the draw: the same item, the same clips)
    /// and `clips_at` snap too, each to its keyframe's frame in the window's numbering (the first
    /// frame at or after that keyframe's time), by the same rules; order and count stay.
    /// `demux_video` reads the list whenever this is on; `load_video` where the start is after 0
    /// or the selection is `clips` or `clips_at`.
    bool snap_to_keyframe = false;
};

/// How `decode_video` decodes.
struct video_decode_options {
    frame_selection select = frame_selection::all();
    /// Channels wanted.
    frame_format format = frame_format::rgb;
    /// When set, frames are scaled to exactly this size by swscale inside the decode step,
    /// straight into the clip's buffer (no full-size intermediate copy).
    frame_size resize{};
    scale_filter filter = scale_filter::bilinear;
    /// Decoder threads: FFmpeg's frame threads where the codec has them (H.264, HEVC, VP8, VP9,
    /// MPEG-4, ...: frames decoded in parallel, a frame's delay per thread), else slice threads
    /// (where the encoder made several slices per frame). 0 (the default) lets ferry choose:
    /// inside a stage call, the pipeline's threads divided by the stage's concurrency (at least
    /// 1, at most 16: `this_call::cpu_share()`), so that a stage with fewer calls at once than
    /// threads still uses them and one clip's latency falls; outside a stage call, 1. A number
    /// up to 64 is used as given; more is a `ferry::invalid_argument`. Inside a stage call the
    /// stage counts the threads of each call's decoder as `decoder threads` (over the calls:
    /// threads per clip).
    int threads = 0;
    /// Frames larger than this (as decoded) are refused.
    std::uint64_t max_pixels = 64'000'000;
    /// The decoded clip may not exceed this many bytes (T x H x W x C); more is refused before
    /// allocating.
    std::uint64_t max_bytes = 4ULL << 30;
    /// A cut or damaged input: false (the default) returns the selected frames of those that
    /// decode, with `video_clip::truncated()` set and the stage's `stage_stats::truncated`
    /// counted; true makes it a `ferry::decode_error`. Truncated means the packets are
    /// (`packets::truncated()`), or a packet failed to decode (the decoder skipped it).
    bool strict = false;
    /// Frames that are not selected and that no other frame references are not decoded:
    /// H.264 and HEVC non-reference pictures, MPEG-1/2/4 B-frames, VP8 frames that update no
    /// reference (FFmpeg's `skip_frame = AVDISCARD_NONREF`, set for each packet none of whose
    /// frames can be selected). The selected frames are the same, bit for bit; only fewer frames
    /// are decoded (the stage's `frames decoded` counter, beside `frames kept`). VP9 and
    /// all-intra streams decode as many frames either way. `false` decodes every frame from the
    /// keyframe before the window, as the `ffmpeg` CLI does (to measure what this saves).
    bool skip_nonref = true;
};

/// `load_video`'s options: the options of the two steps it runs, each exactly as `demux_video`
/// and `decode_video` take them, so that a field means the same in all three calls.
/// \code
///   ferry::ops::load_video(path, {.demux = {.start = 3.5},
///                                 .decode = {.select = ferry::frame_selection::clip(8, 4),
///                                            .resize = {112, 112}}});
/// \endcode
/// Nested rather than one flat list of fields: every field is documented once, where it acts, a
/// field either step gains is there for `load_video` too, and the braces say which step a field
/// is for (a flat `{.select = s, .start = t}` does not compile: it is
/// `{.demux = {.start = t}, .decode = {.select = s}}`). `demux.max_frames` left at 0
/// (the default) is derived from `decode.select`, so the demuxer stops reading as soon as the
/// selection's last frame is certain; set, it is used as given. The two `max_pixels` are the
/// two steps' own limits (the stream's declared size, the decoded frames); both are 64 million
/// pixels by default. Either step's `strict` makes both strict.
struct video_options {
    demux_options demux{};
    video_decode_options decode{};
};

namespace detail {
struct packets_state;
}

/// The compressed packets of one video stream (a window of it) and what decoding them needs.
/// Copies share the (immutable) packets; moves are free. Made by `demux_video`.
class FERRY_API packets {
  public:
    packets() = default;
    explicit packets(std::shared_ptr<const detail::packets_state> state) noexcept
        : state_(std::move(state)) {}

    [[nodiscard]] bool empty() const noexcept;
    /// Packets held (from the keyframe before the window's start).
    [[nodiscard]] std::size_t size() const noexcept;
    /// Compressed bytes held.
    [[nodiscard]] std::size_t bytes() const noexcept;
    /// Frames in the window that decode. Where every packet carries a presentation timestamp
    /// (MP4, MOV, Matroska, WebM, MPEG-TS, FLV, Ogg), these are the packets whose timestamp is in
    /// the window, counted without decoding (packets an edit list discards are not frames); a
    /// damaged packet found later by `decode_video` can make the clip's frames fewer (it is then
    /// `truncated()`). Where packets lack timestamps (MPEG program and elementary streams, AVI
    /// with B-frames, raw H.264), `demux_video` decodes the packets once to count them. A count
    /// in the container's header is never used: it is at most an estimate. With
    /// `demux_options::max_frames`, at most that many (the frames certain when reading stopped).
    [[nodiscard]] std::int64_t frames() const noexcept;
    /// The stream's index in its container.
    [[nodiscard]] int stream() const noexcept;
    /// The codec's short name, e.g. `"h264"`, `"vp9"`, `"mpeg4"`.
    [[nodiscard]] std::string codec() const;
    /// Frame size as the stream declares it.
    [[nodiscard]] int width() const noexcept;
    [[nodiscard]] int height() const noexcept;
    /// Average frame rate (0 when unknown).
    [[nodiscard]] double frame_rate() const noexcept;
    /// What the packets came from: the path, or `"<memory>"`; used in error messages.
    [[nodiscard]] const std::string& source() const noexcept;
    /// True when the input was cut or damaged (see `demux_options::strict`): these are the
    /// packets that could be read.
    [[nodiscard]] bool truncated() const noexcept;
    /// Why `truncated()`, e.g. `"the container declares 444 frames, the data holds 68"`; empty
    /// when it is not.
    [[nodiscard]] const std::string& truncation() const noexcept;

    [[nodiscard]] const detail::packets_state* state() const noexcept { return state_.get(); }

  private:
    std::shared_ptr<const detail::packets_state> state_;
};

/// The bytes `p` holds, as `ferry::byte_size` and so `autotune::memory_budget` count them: its
/// compressed packets, which wait between a demux stage and a decode stage.
[[nodiscard]] inline std::size_t ferry_byte_size(const packets& p) noexcept {
    return sizeof(packets) + p.bytes();
}

/// Decoded video frames: uint8, `frames() x height() x width() x channels()`, contiguous and
/// packed (THWC). Owns its pixels: copies copy them, moves are free. From a `clips` or
/// `clips_at` selection it is a batch of `clips()` clips of `clip_frames()` frames each, one
/// after the other (`frame(i * clip_frames() + t)` is clip `i`'s frame `t`; `to_tensor()` is
/// `[clips, clip_frames, H, W, C]`, the same bytes).
class FERRY_API video_clip {
  public:
    video_clip() = default;
    /// A clip with uninitialised pixels. Throws `ferry::invalid_argument` on a non-positive size.
    video_clip(int frames, int width, int height, frame_format format = frame_format::rgb);

    /// Frames held: every clip's of a batch.
    [[nodiscard]] int frames() const noexcept { return frames_; }
    /// True for the batch a `clips` or `clips_at` selection gives (even of one clip).
    [[nodiscard]] bool batch() const noexcept { return clips_ > 0; }
    /// Clips in the batch; 1 when it is not a batch.
    [[nodiscard]] int clips() const noexcept { return clips_ > 0 ? static_cast<int>(clips_) : 1; }
    /// Frames per clip: `frames() / clips()`.
    [[nodiscard]] int clip_frames() const noexcept { return frames_ / clips(); }
    [[nodiscard]] int height() const noexcept { return height_; }
    [[nodiscard]] int width() const noexcept { return width_; }
    [[nodiscard]] int channels() const noexcept { return channels_of(format_); }
    [[nodiscard]] frame_format format() const noexcept { return format_; }
    [[nodiscard]] bool empty() const noexcept { return buf_.data() == nullptr; }
    /// Bytes of one frame: `height() * width() * channels()`.
    [[nodiscard]] std::size_t frame_bytes() const noexcept {
        return static_cast<std::size_t>(height_) * static_cast<std::size_t>(width_) *
               static_cast<std::size_t>(channels());
    }
    /// All pixels: `frames() * frame_bytes()` contiguous bytes.
    [[nodiscard]] std::span<const std::uint8_t> data() const noexcept {
        return {reinterpret_cast<const std::uint8_t*>(buf_.data()), buf_.size()};
    }
    [[nodiscard]] std::span<std::uint8_t> data() noexcept {
        return {reinterpret_cast<std::uint8_t*>(buf_.data()), buf_.size()};
    }
    /// Frame `t`'s pixels (H x W x C).
    [[nodiscard]] std::span<const std::uint8_t> frame(int t) const noexcept {
        return data().subspan(static_cast<std::size_t>(t) * frame_bytes(), frame_bytes());
    }
    [[nodiscard]] std::span<std::uint8_t> frame(int t) noexcept {
        return data().subspan(static_cast<std::size_t>(t) * frame_bytes(), frame_bytes());
    }
    /// One sample (unchecked).
    [[nodiscard]] std::uint8_t at(int t, int x, int y, int c) const noexcept {
        return frame(t)[(static_cast<std::size_t>(y) * static_cast<std::size_t>(width_) +
                         static_cast<std::size_t>(x)) *
                            static_cast<std::size_t>(channels()) +
                        static_cast<std::size_t>(c)];
    }

    /// For each frame held, its index in the demuxed window (see `frame_selection`).
    [[nodiscard]] const std::vector<std::int64_t>& indices() const noexcept { return indices_; }
    /// For each frame held, its presentation time in seconds.
    [[nodiscard]] const std::vector<double>& timestamps() const noexcept { return timestamps_; }
    /// The stream's average frame rate (0 when unknown).
    [[nodiscard]] double frame_rate() const noexcept { return frame_rate_; }
    /// True when the input was cut or damaged: these are selected frames of those that decoded
    /// (see `video_decode_options::strict`).
    [[nodiscard]] bool truncated() const noexcept { return truncated_; }
    /// Set by the decoder.
    void set_truncated(bool truncated) noexcept { truncated_ = truncated; }

    /// A `u8` tensor `[frames, height, width, channels]`, or for a batch `[clips, clip_frames,
    /// height, width, channels]`: no copy from an rvalue, one from an lvalue.
    [[nodiscard]] tensor to_tensor() &&;
    [[nodiscard]] tensor to_tensor() const&;

    /// Gives up the pixel storage; leaves the clip empty.
    [[nodiscard]] buffer release() noexcept;

    /// Set by the decoder: makes the clip a batch of `clips` clips of `frames() / clips` frames.
    /// Throws `ferry::invalid_argument` unless `clips` is positive and divides `frames()`.
    void set_batch(int clips);

    /// Set by the decoder: frame indices, timestamps and rate.
    void set_frame_info(std::vector<std::int64_t> indices, std::vector<double> timestamps,
                        double frame_rate);

  private:
    /// swscale's SIMD paths may store a few bytes past the last pixel of a packed output row; the
    /// block carries that much slack so the last frame's last row cannot overrun.
    static constexpr std::size_t scale_slack = 64;

    detail::owned_buffer<scale_slack> buf_{};
    detail::moved_to_zero<int> frames_{};
    detail::moved_to_zero<int> width_{};
    detail::moved_to_zero<int> height_{};
    detail::moved_to_zero<int> clips_{};       ///< 0: not a batch
    frame_format format_ = frame_format::rgb;  ///< a move leaves it in the source
    std::vector<std::int64_t> indices_;
    std::vector<double> timestamps_;
    double frame_rate_ = 0.0;  ///< a move leaves it in the source
    bool truncated_ = false;
};

/// Routes FFmpeg's log output. ferry silences FFmpeg by default (its own callback keeps the last
/// error line of each thread and puts it into error messages); `true` also prints FFmpeg's
/// warnings and errors to stderr. FFmpeg's log callback is process-wide: this affects any
/// other FFmpeg user in the process. So does the cap ferry sets on any one FFmpeg allocation
/// (`av_max_alloc`, 512 MiB, when it first uses FFmpeg), so that no header field can make
/// FFmpeg allocate gigabytes (ops/video/README.md).
FERRY_API void set_ffmpeg_logging(bool enabled);

namespace ops {
namespace detail {
struct FERRY_API demux_video_fn {
    packets operator()(const std::filesystem::path& path, const demux_options& options = {}) const;
    packets operator()(std::span<const std::byte> data, const demux_options& options = {}) const;
};
struct FERRY_API decode_video_fn {
    video_clip operator()(const packets& pkts, const video_decode_options& options = {}) const;
};
struct FERRY_API load_video_fn {
    video_clip operator()(const std::filesystem::path& path,
                          const video_options& options = {}) const;
    video_clip operator()(std::span<const std::byte> data, const video_options& options = {}) const;
};
}  // namespace detail

/// Reads one video stream's packets from a file (read by ferry's own AVIOContext: regular files,
/// pipes and FIFOs; no URLs) or from bytes in memory, within a time window. No decoding, so a
/// pipeline can give demuxing and decoding different concurrencies. Throws `ferry::io_error`
/// (missing file, stalled read) and `ferry::decode_error` (empty, not a container, corrupt, no
/// video stream, over `max_pixels`) with FFmpeg's reason. Inside a stage call it gives up once
/// `ferry::this_call::stop_requested()` turns true — between packets, and within about 50 ms
/// while a pipe or FIFO delivers nothing — with `ferry::error` (`errc::cancelled`,
/// `demux_video: <path>: cancelled: the pipeline is stopping`); so do `decode_video`,
/// `load_video` and `decode_audio`.
/// \code
///   auto pkts = ferry::ops::demux_video("clip.mp4", {.start = 2.0, .end = 4.0});
///   auto clip = ferry::ops::decode_video(pkts, {.resize = {224, 224}});
/// \endcode
inline constexpr detail::demux_video_fn demux_video{};

/// Decodes the selected frames of `pkts` into one contiguous uint8 clip, scaling and converting
/// each frame with swscale straight into the clip's buffer. Sparse selections jump from keyframe
/// to keyframe instead of decoding everything in between, where the packets' timestamps say
/// which frame is which; where they do not, or a jump does not give the frames the timestamps
/// promised, the frames are decoded in order from the first packet instead (slower, same frames,
/// those the `ffmpeg` CLI gives). Throws `ferry::decode_error` when fewer frames decode than the
/// selection needs (with FFmpeg's reason for the last damaged packet).
inline constexpr detail::decode_video_fn decode_video{};

/// `demux_video` then `decode_video` in one call; the demuxer stops as soon as the selection's
/// last frame is read.
/// \code
///   auto clip = ferry::ops::load_video(
///       bytes, {.demux = {.start = 3.5},
///               .decode = {.select = ferry::frame_selection::clip(8, 4), .resize = {112, 112}}});
/// \endcode
inline constexpr detail::load_video_fn load_video{};

}  // namespace ops
}  // namespace ferry
