// SPDX-License-Identifier: Apache-2.0
/// \file
/// `decode_audio`: an audio stream decoded with libavcodec and resampled by libswresample to
/// float32 planar at the requested rate and channel count, within an optional window.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <random>

#include "audio_stream.hpp"
#include "ffmpeg.hpp"
#include "sample_store.hpp"

namespace ferry {

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
/// Mixed into the item's first number so that a random window's start is not the number the
/// caller's own `item_rng(info)` gives first.
constexpr std::uint64_t window_stream = 0x617564696f5f7769ULL;  // "audio_wi"

struct layout_owner {
    AVChannelLayout layout{};
    layout_owner() = default;
    layout_owner(const layout_owner&) = delete;
    layout_owner& operator=(const layout_owner&) = delete;
    ~layout_owner() { av_channel_layout_uninit(&layout); }
};

/// A random window drawn past the data (a length the header overstates, a cut file, or one
/// estimated from the bit rate): where the data ends, in seconds, for a second pass that ends
/// the window there rather than losing the item.
struct past_the_data {
    double end;
};

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
        const item_info* item = check_random_window();
        open_stream();
        if (item != nullptr) draw_window(*item);
        start_pos_ = start_ > 0.0 ? position(start_) : 0;
        end_pos_ = end_ ? position(*end_) : far;
        if (start_ > 0.0 && av::seeks_to_the_sample(in_, index_)) {
            const AVRational tb = in_.format->streams[index_]->time_base;
            const auto ts = av::saturate(std::floor(start_ / av_q2d(tb)));
            av_seek_frame(in_.format.get(), index_, ts, AVSEEK_FLAG_BACKWARD);
            av::take_log_line();
        }
        read_all();
        return finish();
    }

  private:
    /// The item `random_window` draws from (null without one), or an `invalid_argument` for a
    /// window that cannot be drawn.
    [[nodiscard]] const item_info* check_random_window() const {
        const double w = opt_.random_window;
        if (w == 0.0) return nullptr;
        if (!(w > 0.0) || !std::isfinite(w)) {
            throw invalid_argument(std::string(op) + ": random_window " + av::seconds_text(w) +
                                   " is not a positive length (0: no random window)");
        }
        const item_info* info = opt_.item ? &*opt_.item : ferry::detail::current_item();
        if (info == nullptr) {
            throw invalid_argument(
                std::string(op) + ": " + in_.name +
                ": random_window draws its start from the item's numbers (item_rng), and this "
                "call has none: call it in a stage whose callable takes a const "
                "ferry::item_info&, or set audio_options::item");
        }
        return info;
    }

    /// `start_` and `end_` for `random_window`: the start drawn uniformly, with `item`'s numbers,
    /// from the span's first sample to its end less the window; the span is the stream, or the
    /// part of it `start` and `end` give (a segment), which the window does not leave.
    void draw_window(const item_info& item) {
        const AVFormatContext* fmt = in_.format.get();
        const AVStream* st = fmt->streams[index_];
        const double stream_end = av::stream_end(fmt, st);
        const double stream_first =
            st->start_time != AV_NOPTS_VALUE ? av::seconds(st->start_time, st->time_base) : 0.0;
        const bool known = stream_end > stream_first;
        if (!known && !opt_.end) {
            av::throw_decode(op, in_.name,
                             "random_window needs the stream's length, and nothing gives it "
                             "(a stream read from a pipe that states none)",
                             0);
        }
        const double first = std::max(stream_first, opt_.start);
        const double stop = !opt_.end ? stream_end
                            : known   ? std::min(stream_end, *opt_.end)
                                      : *opt_.end;
        if (!(stop > first)) {
            av::throw_decode(
                op, in_.name,
                "random_window: the span from " + av::seconds_text(opt_.start) + " to " +
                    (opt_.end ? av::seconds_text(*opt_.end) : std::string("the end")) +
                    " holds none of the stream" +
                    (known ? ", which ends at " + av::seconds_text(stream_end) : std::string()),
                0);
        }
        random_engine rng(item_rng(item)() ^ window_stream);
        const double last = stop - opt_.random_window;
        start_ = last > first ? std::uniform_real_distribution<double>(first, last)(rng) : first;
        end_ = start_ + opt_.random_window;
        if (opt_.end) end_ = std::min(*end_, *opt_.end);  // a segment's window stays inside it
    }

    /// The stream and its decoder: from the container's header alone where that suffices, else
    /// after `avformat_find_stream_info`.
    void open_stream() {
        auto [index, decoder] =
            av::open_audio_stream(in_, opt_.stream, opt_.random_window > 0.0, op);
        index_ = index;
        ctx_ = std::move(decoder);
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
            if (!end_ || end_pos_ <= base_) return;
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
        if (opt_.random_window > 0.0 && total() == 0) {
            throw past_the_data{static_cast<double>(next_) / out_rate_};
        }
        // Padding a window that holds nothing would make up a whole window of silence.
        if ((start_ > 0.0 || opt_.samples > 0) && total() == 0) {
            av::throw_decode(op, in_.name,
                             "no audio in the window starting at " + av::seconds_text(start_), 0);
        }
        const std::int64_t padded = std::max<std::int64_t>(opt_.samples - total(), 0);
        if (padded > 0) {
            out_->pad(padded);
            this_call::count("padded samples", static_cast<std::uint64_t>(padded));
        }
        audio out = out_->take();
        out.set_padded(padded);
        out.set_start(static_cast<double>(base_) / out_rate_);
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
        const double wanted = end_ ? std::min(declared, *end_) : declared;
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
    double start_ = opt_.start;  ///< the window: as asked, or drawn (random_window)
    std::optional<double> end_ = opt_.end;
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

namespace {

/// Decodes what `open()` opens. A random window drawn past the data is decoded again as the
/// window of the same length that ends where the data ends (the same item gets the same one),
/// counted as `windows past the data`.
template <class Open>
audio decode(const Open& open, const audio_options& options) {
    try {
        return audio_decoder(open(), options).run();
    } catch (const past_the_data& past) {
        this_call::count("windows past the data");
        audio_options again = options;
        again.random_window = 0.0;
        again.item.reset();
        again.start = std::max(options.start, past.end - options.random_window);
        again.end = again.start + options.random_window;
        if (options.end) again.end = std::min(*again.end, *options.end);
        return audio_decoder(open(), again).run();
    }
}

}  // namespace

audio decode_audio_fn::operator()(const std::filesystem::path& path,
                                  const audio_options& options) const {
    return decode(
        [&] {
            return av::open_container(av::open_file(path, options.timeout, op), path.string(), op);
        },
        options);
}

audio decode_audio_fn::operator()(std::span<const std::byte> data,
                                  const audio_options& options) const {
    return decode(
        [&] {
            return av::open_container(av::open_memory(data, options.timeout, op), "<memory>", op);
        },
        options);
}

}  // namespace detail
}  // namespace ops
}  // namespace ferry
