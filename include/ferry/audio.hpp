// SPDX-License-Identifier: Apache-2.0
/// \file
/// Audio on FFmpeg: `ferry::audio` (decoded float32 samples), `ferry::audio_options` and the op
/// `decode_audio`. `ferry/video.hpp` includes it. Link `ferry::video`; no FFmpeg header is
/// included here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>

#include "ferry/bytes.hpp"
#include "ferry/detail/owned_buffer.hpp"
#include "ferry/export.hpp"
#include "ferry/item.hpp"
#include "ferry/tensor.hpp"

namespace ferry {

/// Decoded audio: float32 samples, `channels() x samples()`, channel-major (all of channel 0,
/// then all of channel 1, ...). Owns its samples: copies copy them, moves are free.
class FERRY_API audio {
  public:
    audio() = default;
    /// Uninitialised samples. Throws `ferry::invalid_argument` on non-positive channels or rate,
    /// or negative samples.
    audio(int channels, std::int64_t samples, int sample_rate);

    [[nodiscard]] int channels() const noexcept { return channels_; }
    /// Samples per channel.
    [[nodiscard]] std::int64_t samples() const noexcept { return samples_; }
    [[nodiscard]] int sample_rate() const noexcept { return sample_rate_; }
    /// Length in seconds.
    [[nodiscard]] double duration() const noexcept {
        return sample_rate_ > 0 ? static_cast<double>(samples_) / sample_rate_ : 0.0;
    }
    [[nodiscard]] bool empty() const noexcept { return buf_.data() == nullptr; }
    /// All samples, channel-major: `channels() * samples()` floats.
    [[nodiscard]] std::span<const float> data() const noexcept {
        return {reinterpret_cast<const float*>(buf_.data()), buf_.size() / sizeof(float)};
    }
    [[nodiscard]] std::span<float> data() noexcept {
        return {reinterpret_cast<float*>(buf_.data()), buf_.size() / sizeof(float)};
    }
    /// Channel `c`'s samples.
    [[nodiscard]] std::span<const float> channel(int c) const noexcept {
        return data().subspan(static_cast<std::size_t>(c) * static_cast<std::size_t>(samples_),
                              static_cast<std::size_t>(samples_));
    }
    [[nodiscard]] std::span<float> channel(int c) noexcept {
        return data().subspan(static_cast<std::size_t>(c) * static_cast<std::size_t>(samples_),
                              static_cast<std::size_t>(samples_));
    }

    /// An `f32` tensor `[channels, samples]`: no copy from an rvalue, one from an lvalue.
    [[nodiscard]] tensor to_tensor() &&;
    [[nodiscard]] tensor to_tensor() const&;

    /// Gives up the sample storage; leaves the audio empty.
    [[nodiscard]] buffer release() noexcept;

    /// True when the input ended before its stream said it would, or had damaged data that was
    /// skipped: these are the samples that decoded (see `audio_options::strict`).
    [[nodiscard]] bool truncated() const noexcept { return truncated_; }
    /// Set by the decoder.
    void set_truncated(bool truncated) noexcept { truncated_ = truncated; }

    /// Samples per channel of silence at the end, added to reach `audio_options::samples`
    /// (0: every sample decoded). A model can mask them: the decoded ones are the first
    /// `samples() - padded()`.
    [[nodiscard]] std::int64_t padded() const noexcept { return padded_; }
    /// Set by the decoder.
    void set_padded(std::int64_t padded) noexcept { padded_ = padded; }

    /// The stream time of the first sample, in seconds: a window's start, or where the stream's
    /// samples begin when that is later (an MP3's encoder delay); where `random_window` drew it.
    [[nodiscard]] double start() const noexcept { return start_; }
    /// Set by the decoder.
    void set_start(double start) noexcept { start_ = start; }

  private:
    detail::owned_buffer<> buf_{};
    detail::moved_to_zero<int> channels_{};
    detail::moved_to_zero<std::int64_t> samples_{};
    detail::moved_to_zero<int> sample_rate_{};
    detail::moved_to_zero<std::int64_t> padded_{};
    detail::moved_to_zero<double> start_{};
    bool truncated_ = false;
};

/// How `decode_audio` decodes.
struct audio_options {
    /// Output rate in Hz; 0 keeps the stream's. At most 768000.
    int sample_rate = 0;
    /// Output channels; 0 keeps the stream's. Down- and up-mixing use FFmpeg's default layouts
    /// (1 mono, 2 stereo, ...). At most 64 (swresample's limit).
    int channels = 0;
    /// The stream to read; -1: FFmpeg's best audio stream (other negative values are a
    /// `ferry::invalid_argument`).
    int stream = -1;
    /// Window in seconds: `[start, end)`; none: the whole stream. Times are the stream's
    /// timestamps, as `demux_options`' are: a window holds `(end - start) x rate` samples where
    /// the stream has samples all through it, those inside it otherwise (an MP3's first sample
    /// is often at 0.025-0.05 s, after the encoder's delay FFmpeg skips).
    double start = 0.0;
    std::optional<double> end{};
    /// Exactly this many samples per channel (0: as many as decode), so that windows batch
    /// into one tensor (SPDL's `num_frames`): the first `samples` of the window, followed by
    /// silence (zeros) where it holds fewer (a window that runs past the stream's end, a short
    /// file, an MP3's first 0.025-0.05 s). Decoding stops once they are kept.
    /// `audio::padded()` says how many are silence and the stage counts them (`padded
    /// samples`); a window with no audio at all is still a `decode_error`, never all silence.
    /// At most `max_samples`, and within `max_bytes` for every output channel; negative is a
    /// `ferry::invalid_argument`.
    std::int64_t samples = 0;
    /// A window of this many seconds at a random start drawn for each item (0: none): uniformly
    /// from the stream's first sample to its end less the window (the whole stream where it is
    /// shorter), or inside `[start, end)` where they are given (a segment of a long recording;
    /// the window does not leave it, and is all of it where it is shorter), with the numbers of
    /// the stage call's item (`ferry::item_rng`, as `frame_selection::clips`), so the same item
    /// of the same epoch gets the same window whatever the threads, the world size or the resume
    /// point. `audio::start()` says where it fell. The end is the one the header declares, else
    /// FFmpeg's estimate from the bit rate (raw MP3 or AAC streams); a window drawn past the
    /// data (a cut file, an overestimated length) is decoded again as the window that ends where
    /// the data ends, and the stage counts it (`windows past the data`), so no item is lost; a
    /// stream whose length nothing gives (an Ogg file read from a pipe, without an `end`), or a
    /// span that holds none of the stream, is a `decode_error`.
    /// Outside a stage whose callable takes a `const ferry::item_info&`, set `item`, or it is an
    /// `invalid_argument`.
    double random_window = 0.0;
    /// The item whose numbers `random_window` draws from, for a call outside a stage (none: the
    /// stage call's item).
    std::optional<item_info> item{};
    /// As `demux_options::timeout`.
    std::chrono::milliseconds timeout{10'000};
    /// More output samples (per channel) than this are refused (default: 1 hour at 48 kHz).
    std::int64_t max_samples = 48'000LL * 3600;
    /// More bytes of output samples (4-byte floats, every output channel) than this are refused
    /// as they are decoded: a small file that declares many channels cannot take gigabytes
    /// (default 2 GiB; an hour of 48 kHz stereo takes 1.3 GiB). 0: no byte cap.
    std::uint64_t max_bytes = 2ULL << 30;
    /// A cut or damaged file: false (the default) returns what decodes, as the ffmpeg CLI does,
    /// with `audio::truncated()` set and the stage's `stage_stats::truncated` counted; true makes
    /// it a `ferry::decode_error` (for validating a dataset). Cut means the data ends before the
    /// duration the stream declares (by more than 1 ms for lossless codecs, four frames for lossy
    /// ones, which pad; where it declares one that is not a bit-rate guess), or a packet could
    /// not be read or decoded. A WAV file's cut is not seen: FFmpeg sizes its data by the file.
    bool strict = false;
};

namespace ops {
namespace detail {
struct FERRY_API decode_audio_fn {
    audio operator()(const std::filesystem::path& path, const audio_options& options = {}) const;
    audio operator()(std::span<const std::byte> data, const audio_options& options = {}) const;
};
}  // namespace detail

/// Decodes an audio stream to float32, channel-major, resampled (swresample) to the requested
/// rate and channel count, optionally within `[start, end)`. Errors as `demux_video`.
inline constexpr detail::decode_audio_fn decode_audio{};

}  // namespace ops
}  // namespace ferry
