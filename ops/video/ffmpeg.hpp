// SPDX-License-Identifier: Apache-2.0
/// \file
/// What ops/video/ shares: RAII owners for every FFmpeg object it uses, FFmpeg error text, the
/// byte sources behind ferry's AVIOContext (files, FIFOs, memory) with a stall deadline, an
/// opened input, and the state behind `ferry::packets`. Internal to ops/video/.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/pixdesc.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>
}

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/this_call.hpp"
#include "ferry/video.hpp"

namespace ferry::ops::av {

// --- owners ------------------------------------------------------------------------------------

struct format_closer {
    void operator()(AVFormatContext* p) const noexcept { avformat_close_input(&p); }
};
struct codec_closer {
    void operator()(AVCodecContext* p) const noexcept { avcodec_free_context(&p); }
};
struct packet_freer {
    void operator()(AVPacket* p) const noexcept { av_packet_free(&p); }
};
struct frame_freer {
    void operator()(AVFrame* p) const noexcept { av_frame_free(&p); }
};
struct params_freer {
    void operator()(AVCodecParameters* p) const noexcept { avcodec_parameters_free(&p); }
};
struct sws_freer {
    void operator()(SwsContext* p) const noexcept { sws_freeContext(p); }
};
struct swr_freer {
    void operator()(SwrContext* p) const noexcept { swr_free(&p); }
};
struct avio_freer {
    // The context's buffer may have been replaced by libavformat; free whichever it holds now.
    void operator()(AVIOContext* p) const noexcept {
        av_freep(&p->buffer);
        avio_context_free(&p);
    }
};

using format_ptr = std::unique_ptr<AVFormatContext, format_closer>;
using codec_ptr = std::unique_ptr<AVCodecContext, codec_closer>;
using packet_ptr = std::unique_ptr<AVPacket, packet_freer>;
using frame_ptr = std::unique_ptr<AVFrame, frame_freer>;
using params_ptr = std::unique_ptr<AVCodecParameters, params_freer>;
using sws_ptr = std::unique_ptr<SwsContext, sws_freer>;
using swr_ptr = std::unique_ptr<SwrContext, swr_freer>;
using avio_ptr = std::unique_ptr<AVIOContext, avio_freer>;

/// `av_packet_alloc` / `av_frame_alloc` that throw `std::bad_alloc` on failure.
packet_ptr make_packet();
frame_ptr make_frame();

// --- errors and logging ------------------------------------------------------------------------

/// `av_strerror`'s text for `code`.
std::string error_text(int code);
/// The last error line FFmpeg logged on this thread since the last call (empty when none);
/// clears it.
std::string take_log_line();
/// The most one FFmpeg allocation may take (`av_max_alloc`, process-wide; FFmpeg's own default
/// is INT_MAX). A header field can size an allocation: a WAV file of 3 KB whose LIST chunk
/// declares 2 GB made libavformat's INFO reader zero 1.9 GB before reading it. 512 MiB holds
/// any plane of a frame within the default `max_pixels` (64 million pixels at 16 bits).
inline constexpr std::size_t max_ffmpeg_alloc = std::size_t{512} << 20;
/// Once per process: installs ferry's log callback (silent unless `set_ffmpeg_logging(true)`)
/// and caps FFmpeg's allocations at `max_ffmpeg_alloc`.
void init_ffmpeg();

/// `"<op>: <source>: <what>: <av_strerror>[ (<FFmpeg's last log line>)]"`.
std::string describe(const char* op, const std::string& source, const std::string& what, int code);
[[noreturn]] void throw_decode(const char* op, const std::string& source, const std::string& what,
                               int code);

// --- decoding --------------------------------------------------------------------------------

/// What went wrong last while decoding a stream that goes on: FFmpeg's code and its log line.
/// Damaged packets are skipped; the reason is told only if what was asked for does not come out.
struct decode_trouble {
    int code = 0;
    std::string log;
    void note(int error) {
        code = error;
        if (std::string line = take_log_line(); !line.empty()) log = std::move(line);
    }
    /// `": <av_strerror>[ (FFmpeg: <log line>)]"`, or empty when nothing went wrong.
    [[nodiscard]] std::string reason() const {
        std::string r;
        if (code != 0) r += ": " + error_text(code);
        if (!log.empty()) r += " (FFmpeg: " + log + ")";
        return r;
    }
};

/// Whether the decoder marked `f` a keyframe (a frame decoding can start at), whatever the
/// container's flags said.
inline bool decoded_key(const AVFrame* f) {
#if LIBAVUTIL_VERSION_MAJOR >= 58
    return (f->flags & AV_FRAME_FLAG_KEY) != 0;
#else
    return f->key_frame != 0;
#endif
}

/// Takes every frame the decoder has ready (`take(const AVFrame*)`), noting a decode error.
template <class Take>
void receive_frames(AVCodecContext* ctx, AVFrame* frame, decode_trouble& trouble, Take&& take) {
    for (;;) {
        const int ret = avcodec_receive_frame(ctx, frame);
        if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
        if (ret < 0) {
            trouble.note(ret);
            return;
        }
        take(static_cast<const AVFrame*>(frame));
        av_frame_unref(frame);
    }
}

/// Sends one packet (nullptr flushes), taking ready frames while the decoder is full. A damaged
/// packet is noted and skipped: the decoder conceals what it can.
template <class Take>
void send_packet(AVCodecContext* ctx, const AVPacket* pkt, AVFrame* frame, decode_trouble& trouble,
                 Take&& take) {
    for (;;) {
        const int ret = avcodec_send_packet(ctx, pkt);
        if (ret == AVERROR(EAGAIN)) {
            receive_frames(ctx, frame, trouble, take);
            continue;
        }
        if (ret < 0 && ret != AVERROR_EOF) trouble.note(ret);
        return;
    }
}

// --- byte sources ------------------------------------------------------------------------------

/// Which file, and which version of it: a file rewritten changes its size or modification time.
struct file_stamp {
    std::uint64_t device = 0;
    std::uint64_t inode = 0;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    friend bool operator==(const file_stamp&, const file_stamp&) = default;
};

/// Where an input's bytes come from, read through ferry's own AVIOContext. A read that makes no
/// progress for `timeout` fails, and one whose stage call should give up
/// (`this_call::stop_requested()`) ends within a poll slice; the AVIOInterruptCB reports both to
/// FFmpeg's own loops.
class byte_source {
  public:
    byte_source(std::chrono::milliseconds timeout) : timeout_(timeout) { touch(); }
    virtual ~byte_source() = default;
    byte_source(const byte_source&) = delete;
    byte_source& operator=(const byte_source&) = delete;

    /// AVIOContext callbacks' bodies.
    virtual int read(std::uint8_t* buf, int size) = 0;
    virtual std::int64_t seek(std::int64_t offset, int whence) = 0;
    [[nodiscard]] virtual bool seekable() const = 0;
    /// A regular file's identity and version (device, inode, size, modification time), which
    /// keys the keyframe cache; none for pipes, FIFOs and memory.
    [[nodiscard]] virtual std::optional<file_stamp> stamp() const { return std::nullopt; }

    /// True once a read has waited past the deadline.
    [[nodiscard]] bool stalled() const noexcept { return stalled_; }
    /// True once a read or FFmpeg's interrupt check saw that the call should give up.
    [[nodiscard]] bool cancelled() const noexcept { return cancelled_; }
    /// Whether the call should give up now; remembers a yes for `cancelled()`.
    bool check_cancelled() noexcept {
        if (!cancelled_ && this_call::stop_requested()) cancelled_ = true;
        return cancelled_;
    }
    [[nodiscard]] bool past_deadline() const noexcept {
        return std::chrono::steady_clock::now() - last_progress_ > timeout_;
    }
    [[nodiscard]] std::chrono::milliseconds timeout() const noexcept { return timeout_; }

  protected:
    void touch() noexcept { last_progress_ = std::chrono::steady_clock::now(); }
    std::chrono::milliseconds timeout_;
    std::chrono::steady_clock::time_point last_progress_{};
    bool stalled_ = false;
    bool cancelled_ = false;
};

/// A file (regular, FIFO, pipe) read with `read` + `poll`.
std::unique_ptr<byte_source> open_file(const std::filesystem::path& path,
                                       std::chrono::milliseconds timeout, const char* op);
/// Bytes in memory (not copied; they must outlive the input).
std::unique_ptr<byte_source> open_memory(std::span<const std::byte> data,
                                         std::chrono::milliseconds timeout, const char* op);

/// An opened container: the byte source, the AVIOContext over it, the format context. Members
/// are destroyed format first, then the AVIOContext, then the source.
struct input {
    std::string name;  ///< path or "<memory>", for messages
    std::unique_ptr<byte_source> source;
    avio_ptr io;
    format_ptr format;

    /// Throws `errc::cancelled` when the call was told to give up, `io_error` when the source
    /// stalled, else `decode_error` with `what` and `code`.
    [[noreturn]] void fail(const char* op, const std::string& what, int code) const;
    /// After `av_read_frame` failed with `code`: a stall or a stop throws as `fail` does; damaged
    /// or cut data ends the input, as the ffmpeg CLI ends it, keeping what was read: returns
    /// why (`av_strerror`'s text and FFmpeg's log line).
    std::string read_failure(const char* op, const std::string& what, int code) const;
};

/// What a selection past a truncated input's frames adds before the truncation's reason, e.g.
/// "...; the input is cut short: the container declares 444 frames, the data holds 68".
inline constexpr const char* cut_short_prefix = "the input is cut short: ";

/// Where `st` ends, in seconds, as its container declares it: the stream's own duration, else
/// (with `container_too`) the container's; -1 when none, or when FFmpeg guessed the lengths from
/// the bit rate (`AVFMT_DURATION_FROM_BITRATE`: it fills the streams' durations then too).
double declared_end(const AVFormatContext* fmt, const AVStream* st, bool container_too);

/// Opens `source` and reads the container header (`avformat_open_input` only): zero bytes, an
/// unknown format and a corrupt header are `decode_error`s; a stall is an `io_error`.
input open_container(std::unique_ptr<byte_source> source, std::string name, const char* op);

/// Reads the stream information the header leaves out (`avformat_find_stream_info`: packets
/// are read, and some decoded, until each stream's parameters are known), failing as
/// `open_input` does.
void read_stream_info(input& in, const char* op);

/// Opens `source` and reads the stream headers (`avformat_open_input` +
/// `avformat_find_stream_info`). Zero bytes, an unknown format and corrupt headers are
/// `decode_error`s; a stall is an `io_error`.
input open_input(std::unique_ptr<byte_source> source, std::string name, const char* op);

/// `"<op>: <source>: cancelled: the pipeline is stopping"`, as `errc::cancelled`.
[[noreturn]] void throw_cancelled(const char* op, const std::string& source);

/// Throws `throw_cancelled`'s error once the stage call should give up: the decode loops ask
/// between packets, so that a long input in memory stops promptly too.
inline void check_cancelled(const char* op, const std::string& source) {
    if (this_call::stop_requested()) throw_cancelled(op, source);
}

/// Seconds of `ts` in `tb`.
inline double seconds(std::int64_t ts, AVRational tb) {
    return static_cast<double>(ts) * av_q2d(tb);
}

/// "1.500 s" (milliseconds), or "1e+300 s" for values too large for that.
std::string seconds_text(double s);

/// `ticks` (a count of time-base units or samples, already rounded) as an integer, saturating:
/// past int64's range it is that range's end, so a start or end of 1e300 s is "past all data"
/// rather than undefined behaviour. `ticks` is not NaN (`check_window`).
std::int64_t saturate(double ticks) noexcept;

/// The options both ops read a stream's window and index from, as the user gave them, each
/// refused as a `ferry::invalid_argument` naming `op` and the value: a start or end that is NaN
/// or infinite ("decode_audio: end inf s is not a finite time; leave end unset for the stream's
/// end"), an end not after the start, a stream below -1. Finite times, however large, are left
/// to the window's own checks (a window past the data).
void check_window(const char* op, double start, const std::optional<double>& end, int stream);

}  // namespace ferry::ops::av

namespace ferry::ops {

namespace av {
struct keyframe_list;
}

/// `demux_video`, counting a truncated result in the stage's stats only when `note` is true
/// (`load_video` counts its clip once). With `demux_options::snap_to_keyframe`, the keyframes are
/// read where the window's start needs them, and where `clip_starts` says that the packets may
/// be decoded with a `clips` or `clips_at` selection, whose starts snap to them too.
packets demux_packets(const std::filesystem::path& path, const demux_options& options, bool note,
                      bool clip_starts);
packets demux_packets(std::span<const std::byte> data, const demux_options& options, bool note,
                      bool clip_starts);

}  // namespace ferry::ops

namespace ferry::detail {

/// What `ferry::packets` holds.
struct packets_state {
    std::string source;
    int stream = -1;
    ops::av::params_ptr params;
    AVRational time_base{0, 1};
    double frame_rate = 0.0;
    /// In decode order, from the keyframe at or before the window's start.
    std::vector<ops::av::packet_ptr> packets;
    std::size_t bytes = 0;
    /// The window `[start_ts, end_ts)` in `time_base` (the int64 limits where it is open).
    std::int64_t start_ts = 0;
    std::int64_t end_ts = 0;
    /// One frame's duration in `time_base` from the frame rate (0: unknown). A decoded frame
    /// without a timestamp gets the previous frame's plus this, as the ffmpeg CLI gives it.
    std::int64_t frame_duration = 0;
    /// True: every packet has its own presentation timestamp, and frame `i` of the window is the
    /// one whose timestamp is `frame_pts[i]` (ascending), so a decoder can start at any keyframe
    /// and still tell the frames apart. False: `frame_pts` are the timestamps of the window's
    /// frames as they came out of a decoder fed every packet in order from the first, and frame
    /// `i` is the `i`-th of them (see ops/video/frames.hpp).
    bool timed = true;
    /// The window's frames in presentation order: see `timed`.
    std::vector<std::int64_t> frame_pts;
    /// Where `timed` is false: for each frame of `frame_pts`, the index of the packet whose
    /// decoding made it, or -1 where that packet made other frames too (`av::unique_tags`), so
    /// that a decoder can skip what no selected frame needs and still tell the frames apart.
    /// Empty where `timed` is true.
    std::vector<std::int64_t> frame_packets;
    /// Frames of the window past this many are not the window's (0: no limit): reading stopped
    /// early (`max_frames`), so later frames may lack packets that come after them in decode
    /// order.
    std::int64_t frame_limit = 0;
    /// Why the packets are truncated (empty: they are not), for `packets::truncation()`.
    std::string truncation;
    /// The keyframes the starts of a `clips` or `clips_at` selection snap to
    /// (`demux_options::snap_to_keyframe`, ops/video/keyframes.hpp); null: they do not snap.
    std::shared_ptr<const ops::av::keyframe_list> snap_keys;
};

}  // namespace ferry::detail
