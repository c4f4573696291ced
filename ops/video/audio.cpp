// SPDX-License-Identifier: Apache-2.0
/// \file
/// `decode_audio`: an audio stream decoded with libavcodec and resampled by libswresample to
/// float32 planar at the requested rate and channel count, within an optional window; and the
/// `ferry::audio` value type.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "ffmpeg.hpp"
#include "sample_store.hpp"

namespace ferry {

// --- audio ---------------------------------------------------------------------------------------

audio::audio(int channels, std::int64_t samples, int sample_rate)
    : channels_(channels), samples_(samples), sample_rate_(sample_rate) {
    if (channels <= 0 || sample_rate <= 0 || samples < 0) {
        throw invalid_argument("audio: " + std::to_string(channels) + " channels of " +
                               std::to_string(samples) + " samples at " +
                               std::to_string(sample_rate) + " Hz is not a valid size");
    }
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(channels) * sizeof(float),
                               static_cast<std::size_t>(samples), &bytes)) {
        throw invalid_argument("audio: size overflows");
    }
    buf_ = detail::owned_buffer<>(bytes);
}

// Moves stay noexcept (std::vector<audio> moves, rather than copies, when it grows).
static_assert(std::is_nothrow_move_constructible_v<audio> &&
              std::is_nothrow_move_assignable_v<audio>);

buffer audio::release() noexcept {
    channels_ = 0;
    samples_ = 0;
    padded_ = 0;
    return buf_.release();
}

tensor audio::to_tensor() && {
    if (empty()) throw invalid_argument("audio::to_tensor: the audio is empty");
    std::vector<std::int64_t> shape{channels_, samples_};
    return tensor(release(), dtype::f32, std::move(shape));
}

tensor audio::to_tensor() const& {
    return audio(*this).to_tensor();
}

// --- decode_audio --------------------------------------------------------------------------------

namespace ops {
namespace {

constexpr const char* op = "decode_audio";
constexpr int max_rate = 768'000;  ///< the highest output rate asked for
constexpr int max_channels = 64;   ///< swresample's most channels (SWR_CH_MAX)
/// The output time line's ends: a window without an end ends here (2^62 samples, 3 million
/// years at 48 kHz).
constexpr std::int64_t far = std::int64_t{1} << 62;
/// The most a window's samples get reserved at once; longer ones grow as they decode.
constexpr std::uint64_t reserve_bytes = 16ULL << 20;

struct layout_owner {
    AVChannelLayout layout{};
    layout_owner() = default;
    layout_owner(const layout_owner&) = delete;
    layout_owner& operator=(const layout_owner&) = delete;
    ~layout_owner() { av_channel_layout_uninit(&layout); }
};

/// Containers whose header gives an audio stream's parameters and whose seeks need no packets
/// read before: FLAC, MP4/M4A/MOV, Matroska/WebM and Ogg. Their windows were checked the same
/// bit for bit, intact and cut, with and without `avformat_find_stream_info`. Not WAV: its
/// 16-bit PCM streams are probed for S/PDIF-wrapped AC-3 or DTS over their first packets, which
/// find_stream_info does once and a seek before it would restart over 2500 packets. Not AVI:
/// without an index (a cut file) its seeks rely on the packets find_stream_info reads. Not raw
/// MP3 or ADTS, whose rate comes from the first frame, nor MPEG-TS, whose streams appear as it
/// reads.
bool header_suffices(const AVInputFormat* format) {
    static constexpr std::string_view names[] = {"flac", "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm",
                                                 "ogg"};
    return format != nullptr &&
           std::find(std::begin(names), std::end(names), format->name) != std::end(names);
}

class audio_decoder {
  public:
    audio_decoder(av::input in, const audio_options& opt) : in_(std::move(in)), opt_(opt) {}

    audio run() {
        av::check_window(op, opt_.start, opt_.end, opt_.stream);
        // swresample's limits: rates up to 768 kHz are in use (DXD), channels up to 64.
        if (opt_.sample_rate < 0 || opt_.sample_rate > max_rate || opt_.channels < 0 ||
            opt_.channels > max_channels) {
            throw invalid_argument(
                std::string(op) + ": sample_rate " + std::to_string(opt_.sample_rate) +
                " and channels " + std::to_string(opt_.channels) + " must be 0 (the stream's) to " +
                std::to_string(max_rate) + " Hz and " + std::to_string(max_channels));
        }
        const std::int64_t most = opt_.max_samples > 0 ? std::min(opt_.max_samples, far) : far;
        if (opt_.samples < 0 || opt_.samples > most) {
            throw invalid_argument(std::string(op) + ": samples " + std::to_string(opt_.samples) +
                                   " must be 0 (as many as decode) to " + std::to_string(most) +
                                   (opt_.max_samples > 0 ? " (max_samples)" : ""));
        }
        open_stream();
        if (opt_.start > 0.0 && seeks_to_the_sample()) {
            const AVRational tb = in_.format->streams[index_]->time_base;
            const auto ts = av::saturate(std::floor(opt_.start / av_q2d(tb)));
            av_seek_frame(in_.format.get(), index_, ts, AVSEEK_FLAG_BACKWARD);
            av::take_log_line();
        }
        read_all();
        return finish();
    }

  private:
    /// False where a seek lands with the wrong times: FFmpeg 5.1's Ogg demuxer gives the FLAC
    /// packets after a seek into a page of several the times of the packets after them (one
    /// FLAC block, ~0.1 s, late: every sample of the window shifted). There the window is
    /// decoded from the start, the samples before it dropped as they come.
    [[nodiscard]] bool seeks_to_the_sample() const {
        const AVFormatContext* fmt = in_.format.get();
        return !(fmt->iformat != nullptr && std::string_view(fmt->iformat->name) == "ogg" &&
                 fmt->streams[index_]->codecpar->codec_id == AV_CODEC_ID_FLAC);
    }

    /// Opens the decoder from the container's header, without `avformat_find_stream_info`,
    /// which reads packets until it has decoded what the header leaves out of every stream (in
    /// an MP4 or Matroska file with video, a video frame). True where the container's header
    /// suffices (`header_suffices`), the stream is certain (the one asked for, or the file's
    /// only audio stream) and the decoder, opened on the header's parameters alone, knows the
    /// rate and channels; false (nothing kept) otherwise.
    bool open_from_header() {
        const AVFormatContext* fmt = in_.format.get();
        if (!header_suffices(fmt->iformat) || (fmt->ctx_flags & AVFMTCTX_NOHEADER) != 0) {
            return false;
        }
        if (opt_.stream >= static_cast<int>(fmt->nb_streams)) return false;
        if (opt_.stream >= 0) {
            pick_stream();
        } else {
            // Of several, FFmpeg's best is chosen by what find_stream_info decodes of each (and
            // av_find_best_stream passes over a stream whose header lacks the rate).
            int audio_streams = 0;
            for (unsigned i = 0; i < fmt->nb_streams; ++i) {
                if (fmt->streams[i]->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
                index_ = static_cast<int>(i);
                ++audio_streams;
            }
            if (audio_streams != 1) return false;
        }
        if (open_decoder(false) && ctx_->sample_rate > 0 && ctx_->ch_layout.nb_channels > 0) {
            return true;
        }
        ctx_.reset();
        return false;
    }

    /// `index_`: the stream asked for (an error unless it is audio), or FFmpeg's best.
    void pick_stream() {
        AVFormatContext* fmt = in_.format.get();
        index_ = opt_.stream;
        if (index_ >= 0) {
            if (index_ >= static_cast<int>(fmt->nb_streams)) {
                throw invalid_argument(std::string(op) + ": " + in_.name + ": stream " +
                                       std::to_string(index_) + " does not exist");
            }
            if (fmt->streams[index_]->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) {
                throw decode_error(std::string(op) + ": " + in_.name + ": stream " +
                                   std::to_string(index_) + " is not an audio stream");
            }
        } else {
            index_ = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
            if (index_ < 0) in_.fail(op, "no audio stream", index_);
        }
    }

    /// The stream's decoder, opened on its parameters: false where it cannot be and `must`
    /// is false; a `decode_error` naming the codec where it must.
    bool open_decoder(bool must) {
        const AVStream* st = in_.format->streams[index_];
        const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
        if (codec == nullptr) {
            if (!must) return false;
            throw decode_error(std::string(op) + ": " + in_.name + ": no decoder for codec " +
                               avcodec_get_name(st->codecpar->codec_id));
        }
        ctx_.reset(avcodec_alloc_context3(codec));
        if (!ctx_) throw std::bad_alloc();
        int ret = avcodec_parameters_to_context(ctx_.get(), st->codecpar);
        if (ret < 0 && must) av::throw_decode(op, in_.name, "bad codec parameters", ret);
        if (ret >= 0) {
            ctx_->pkt_timebase = st->time_base;
            ctx_->thread_count = 1;
            ret = avcodec_open2(ctx_.get(), codec, nullptr);
            if (ret < 0 && must) {
                av::throw_decode(op, in_.name,
                                 std::string("cannot open the ") + codec->name + " decoder", ret);
            }
        }
        // A failed attempt's log line is not the reason for a later error.
        if (ret < 0) av::take_log_line();
        return ret >= 0;
    }

    /// The stream and its decoder: from the container's header alone where that suffices, else
    /// after `avformat_find_stream_info`.
    void open_stream() {
        if (!open_from_header()) {
            av::read_stream_info(in_, op);
            pick_stream();
            open_decoder(true);
        }
        AVFormatContext* fmt = in_.format.get();
        for (unsigned i = 0; i < fmt->nb_streams; ++i) {
            if (static_cast<int>(i) != index_) fmt->streams[i]->discard = AVDISCARD_ALL;
        }
        const AVStream* st = fmt->streams[index_];
        time_base_ = st->time_base;
        out_rate_ = opt_.sample_rate > 0 ? opt_.sample_rate : ctx_->sample_rate;
        out_channels_ = opt_.channels > 0 ? opt_.channels : ctx_->ch_layout.nb_channels;
        if (out_rate_ <= 0 || out_channels_ <= 0) {
            av::throw_decode(op, in_.name,
                             "the stream declares " + std::to_string(ctx_->sample_rate) +
                                 " Hz and " + std::to_string(ctx_->ch_layout.nb_channels) +
                                 " channels",
                             0);
        }
        av_channel_layout_default(&out_layout_.layout, out_channels_);
        // A fixed length's bytes are known now: refused before decoding, not as it fills.
        const long double fixed_bytes =
            static_cast<long double>(opt_.samples) * out_channels_ * sizeof(float);
        if (opt_.max_bytes > 0 && fixed_bytes > static_cast<long double>(opt_.max_bytes)) {
            throw decode_error(
                std::string(op) + ": " + in_.name + ": " + std::to_string(opt_.samples) +
                " samples of " + std::to_string(out_channels_) + " channels take more than " +
                std::to_string(opt_.max_bytes) + " bytes (audio_options::samples, max_bytes)");
        }
        start_pos_ = opt_.start > 0.0 ? position(opt_.start) : 0;
        end_pos_ = opt_.end ? position(*opt_.end) : far;
        frame_ = av::make_frame();
        out_.emplace(out_channels_, out_rate_);
        dst_.resize(static_cast<std::size_t>(out_channels_));
    }

    void read_all() {
        auto pkt = av::make_packet();
        for (;;) {
            if (done()) return;
            av::check_cancelled(op, in_.name);
            const int ret = av_read_frame(in_.format.get(), pkt.get());
            if (ret == AVERROR_EOF) break;
            if (ret < 0) {
                read_error_ = in_.read_failure(op, "reading a packet", ret);
                break;
            }
            if (pkt->stream_index == index_) send(pkt.get());
            av_packet_unref(pkt.get());
        }
        send(nullptr);
        // What the resampler still holds.
        if (swr_ && !done()) convert(nullptr, 0);
    }

    [[nodiscard]] bool done() const { return base_known_ && base_ + total() >= end_pos_; }
    /// Samples kept, per channel.
    [[nodiscard]] std::int64_t total() const { return out_->size(); }

    void send(const AVPacket* pkt) {
        av::send_packet(ctx_.get(), pkt, frame_.get(), trouble_,
                        [this](const AVFrame* f) { take(f); });
        receive();
    }

    void receive() {
        av::receive_frames(ctx_.get(), frame_.get(), trouble_,
                           [this](const AVFrame* f) { take(f); });
    }

    void take(const AVFrame* f) {
        if (done() || f->nb_samples <= 0) return;
        max_frame_samples_ = std::max(max_frame_samples_, f->nb_samples);
        if (!swr_) {
            SwrContext* swr = nullptr;
            int ret = swr_alloc_set_opts2(
                &swr, &out_layout_.layout, AV_SAMPLE_FMT_FLTP, out_rate_,
                const_cast<AVChannelLayout*>(&f->ch_layout),  // not modified (5.1 lacks const)
                static_cast<AVSampleFormat>(f->format), f->sample_rate, 0, nullptr);
            swr_.reset(swr);
            if (ret >= 0) ret = swr_init(swr_.get());
            if (ret < 0) {
                av::throw_decode(op, in_.name,
                                 "cannot resample " + std::to_string(f->ch_layout.nb_channels) +
                                     " channels at " + std::to_string(f->sample_rate) + " Hz to " +
                                     std::to_string(out_channels_) + " at " +
                                     std::to_string(out_rate_) + " Hz",
                                 ret);
            }
            in_rate_ = f->sample_rate;
            in_channels_ = f->ch_layout.nb_channels;
            in_format_ = f->format;
        } else if (f->sample_rate != in_rate_ || f->ch_layout.nb_channels != in_channels_ ||
                   f->format != in_format_) {
            av::throw_decode(op, in_.name, "the audio format changes mid-stream", 0);
        }
        if (!base_known_) {
            // Where the first decoded sample sits on the output's time line.
            const std::int64_t pts =
                f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
            next_ = pts != AV_NOPTS_VALUE ? position(av::seconds(pts, time_base_)) : 0;
            base_ = std::max(next_, start_pos_);
            base_known_ = true;
            // A fixed length ends the output there, whatever the window's end.
            if (opt_.samples > 0) end_pos_ = std::min(end_pos_, base_ + opt_.samples);
            reserve_window();
        }
        convert(const_cast<const std::uint8_t**>(f->extended_data), f->nb_samples);
    }

    /// `seconds` on the output's time line, in samples, within ±`far` (a hostile timestamp
    /// saturates there, so sums and differences of positions and counts cannot overflow).
    [[nodiscard]] std::int64_t position(double seconds) const noexcept {
        return std::clamp(av::saturate(std::round(seconds * out_rate_)), -far, far);
    }

    /// The output's samples, when their number is known (`samples`, or the window's) and
    /// reasonable, get their room at once: written where they stay and handed over without a
    /// copy.
    void reserve_window() {
        std::int64_t want = opt_.samples;
        if (want == 0) {
            if (!opt_.end || end_pos_ <= base_) return;
            want = end_pos_ - base_;
        }
        const auto bytes_per_sample = static_cast<std::uint64_t>(out_channels_) * sizeof(float);
        const std::uint64_t cap_bytes =
            std::min<std::uint64_t>(reserve_bytes, opt_.max_bytes > 0 ? opt_.max_bytes : ~0ULL);
        std::int64_t limit = static_cast<std::int64_t>(cap_bytes / bytes_per_sample);
        if (opt_.max_samples > 0) limit = std::min(limit, opt_.max_samples);
        if (want > limit) return;
        out_->reserve(want);
        exact_room_ = true;
    }

    /// Converts `samples` input samples (none: what the resampler holds) and keeps those of the
    /// window, `[start_pos_, end_pos_)`; those before it are dropped as they come, so memory
    /// stays bounded by the window even where the demuxer had to read from the beginning.
    void convert(const std::uint8_t** in, int samples) {
        const int room = swr_get_out_samples(swr_.get(), samples);
        if (room < 0) av::throw_decode(op, in_.name, "swresample failed", room);
        const std::int64_t until_end = end_pos_ - next_;
        int got = 0;
        if (next_ >= start_pos_ && (out_->room() >= room || !exact_room_)) {
            // In the window: straight into the output.
            out_->reserve(room);
            for (int c = 0; c < out_channels_; ++c) {
                dst_[static_cast<std::size_t>(c)] = reinterpret_cast<std::uint8_t*>(out_->end(c));
            }
            got = resample(in, samples, room);
            out_->commit(std::clamp<std::int64_t>(until_end, 0, got));
        } else {
            // Before the window, or its last samples where the room was reserved exactly.
            const auto need = static_cast<std::size_t>(room) * dst_.size();
            if (scratch_.size() < need) scratch_.resize(need);
            for (std::size_t c = 0; c < dst_.size(); ++c) {
                dst_[c] = reinterpret_cast<std::uint8_t*>(scratch_.data() + c * room);
            }
            got = resample(in, samples, room);
            const std::int64_t from = std::clamp<std::int64_t>(start_pos_ - next_, 0, got);
            const std::int64_t to = std::clamp<std::int64_t>(until_end, from, got);
            if (to > from) {
                out_->reserve(to - from);
                for (int c = 0; c < out_channels_; ++c) {
                    const float* src =
                        reinterpret_cast<const float*>(dst_[static_cast<std::size_t>(c)]);
                    std::copy(src + from, src + to, out_->end(c));
                }
                out_->commit(to - from);
            }
        }
        next_ += got;
        if (opt_.max_samples > 0 && total() > opt_.max_samples) {
            throw decode_error(std::string(op) + ": " + in_.name + ": more than " +
                               std::to_string(opt_.max_samples) +
                               " samples per channel (audio_options::max_samples)");
        }
        // What the samples held cost, every channel: the per-channel cap alone lets a small
        // file that declares many channels take gigabytes.
        const auto held = static_cast<std::uint64_t>(total()) * dst_.size() * sizeof(float);
        if (opt_.max_bytes > 0 && held > opt_.max_bytes) {
            throw decode_error(std::string(op) + ": " + in_.name + ": more than " +
                               std::to_string(opt_.max_bytes) + " bytes of samples (" +
                               std::to_string(dst_.size()) +
                               " channels; audio_options::max_bytes)");
        }
    }

    int resample(const std::uint8_t** in, int samples, int room) {
        const int got = swr_convert(swr_.get(), dst_.data(), room, in, samples);
        if (got < 0) av::throw_decode(op, in_.name, "swresample failed", got);
        return got;
    }

    audio finish() {
        if (!base_known_) {
            std::string what = "no audio could be decoded";
            what += trouble_.reason();
            if (!read_error_.empty()) what += "; reading stopped: " + read_error_;
            throw decode_error(std::string(op) + ": " + in_.name + ": " + what);
        }
        const std::string cut = cut_reason();
        if (!cut.empty() && opt_.strict) {
            throw decode_error(std::string(op) + ": " + in_.name + ": truncated: " + cut +
                               " (audio_options::strict)");
        }
        // Padding a window that holds nothing would make up a whole window of silence.
        if ((opt_.start > 0.0 || opt_.samples > 0) && total() == 0) {
            av::throw_decode(op, in_.name,
                             "no audio in the window starting at " + av::seconds_text(opt_.start),
                             0);
        }
        const std::int64_t padded = std::max<std::int64_t>(opt_.samples - total(), 0);
        if (padded > 0) {
            out_->pad(padded);
            this_call::count("padded samples", static_cast<std::uint64_t>(padded));
        }
        audio out = out_->take();
        out.set_padded(padded);
        if (!cut.empty()) {
            out.set_truncated(true);
            this_call::note_truncated();
        }
        return out;
    }

    /// Why the samples decoded are fewer than the input promised (empty: they are not).
    [[nodiscard]] std::string cut_reason() const {
        if (std::string short_by = short_of_declared(); !short_by.empty()) return short_by;
        if (!read_error_.empty()) return "a packet could not be read: " + read_error_;
        if (trouble_.code != 0) return "damaged data was skipped" + trouble_.reason();
        return {};
    }

    /// "the stream declares ..., the data ends at ..." when the samples end before the stream's
    /// declared duration (and the window's end); empty otherwise.
    [[nodiscard]] std::string short_of_declared() const {
        if (done()) return {};  // the window's end was reached
        const AVFormatContext* fmt = in_.format.get();
        const AVStream* st = fmt->streams[index_];
        const double declared = av::declared_end(fmt, st, true);
        if (declared < 0.0) return {};
        const double wanted = opt_.end ? std::min(declared, *opt_.end) : declared;
        const double decoded = static_cast<double>(next_) / out_rate_;
        // Lossy codecs prime and pad (an MP3's declared length runs up to three frames past its
        // last decoded sample): four frames of slack for them, a millisecond for lossless ones.
        const AVCodecDescriptor* desc = avcodec_descriptor_get(st->codecpar->codec_id);
        const bool lossless = desc != nullptr && (desc->props & AV_CODEC_PROP_LOSSY) == 0;
        const double slack =
            (lossless ? 0.0 : 4.0 * max_frame_samples_ / std::max(1, in_rate_)) + 1e-3;
        if (decoded + slack >= wanted) return {};
        char text[128];
        std::snprintf(text, sizeof text, "the stream declares %.3f s, the data ends at %.3f s",
                      declared, decoded);
        return text;
    }

    av::input in_;
    const audio_options& opt_;
    int index_ = -1;
    av::codec_ptr ctx_;
    av::frame_ptr frame_;
    av::swr_ptr swr_;
    layout_owner out_layout_;
    AVRational time_base_{0, 1};
    int out_rate_ = 0;
    int out_channels_ = 0;
    int in_rate_ = 0;
    int in_channels_ = 0;
    int in_format_ = -1;
    std::int64_t start_pos_ = 0;
    std::int64_t end_pos_ = 0;
    std::int64_t base_ = 0;  ///< the output time line's position of the first sample kept
    std::int64_t next_ = 0;  ///< the position of the resampler's next sample
    bool base_known_ = false;
    bool exact_room_ = false;  ///< the window's samples have their room, no more
    int max_frame_samples_ = 0;
    std::string read_error_;  ///< why reading stopped before the end (empty: it did not)
    std::optional<detail::sample_store> out_;
    std::vector<std::uint8_t*> dst_;  ///< swr_convert's output pointers, one per channel
    std::vector<float> scratch_;      ///< samples outside the window, or past the room
    av::decode_trouble trouble_;
};

}  // namespace

namespace detail {

audio decode_audio_fn::operator()(const std::filesystem::path& path,
                                  const audio_options& options) const {
    return audio_decoder(
               av::open_container(av::open_file(path, options.timeout, op), path.string(), op),
               options)
        .run();
}

audio decode_audio_fn::operator()(std::span<const std::byte> data,
                                  const audio_options& options) const {
    return audio_decoder(
               av::open_container(av::open_memory(data, options.timeout, op), "<memory>", op),
               options)
        .run();
}

}  // namespace detail
}  // namespace ops
}  // namespace ferry
