// SPDX-License-Identifier: Apache-2.0
/// \file
/// `decode_video` and `load_video`: the selected frames of a packet set, decoded with libavcodec
/// (jumping from keyframe to keyframe where timestamps tell the frames apart, else in order from
/// the first packet; frames no selected frame needs are skipped where the decoder can tell them,
/// see frames.hpp) and scaled and converted by swscale straight into the clip's buffer
/// (clip_writer.hpp).
#include <algorithm>

#include "clip_writer.hpp"
#include "keyframes.hpp"
#include "skip.hpp"

namespace ferry {

// --- decode_video --------------------------------------------------------------------------------

namespace ops {
namespace {

constexpr const char* decode_op = "decode_video";

class decoder {
  public:
    decoder(const ferry::detail::packets_state& s, const video_decode_options& opt)
        : s_(s), opt_(opt), frame_(av::make_frame()), out_(opt, s.source) {}
    decoder(const decoder&) = delete;
    decoder& operator=(const decoder&) = delete;
    /// What the call decoded and kept, on its stage's line of the stats, failed or not (nothing
    /// happens outside a stage call).
    ~decoder() {
        if (returned_ > 0)
            this_call::count("frames decoded", static_cast<std::uint64_t>(returned_));
        if (kept_ > 0) this_call::count("frames kept", static_cast<std::uint64_t>(kept_));
        // The threads the clip's decoder works with (FFmpeg keeps one where the codec has no
        // threading).
        if (ctx_) {
            this_call::count("decoder threads", ctx_->active_thread_type != 0
                                                    ? static_cast<std::uint64_t>(ctx_->thread_count)
                                                    : 1U);
        }
    }

    /// The clip; `note`: count a truncated one in the stage's stats.
    video_clip run(bool note) {
        if (!(s_.timed && fast())) verified();
        std::string cut = s_.truncation;
        const auto window = static_cast<std::int64_t>(s_.frame_pts.size());
        if (cut.empty() && decoded_ >= 0 && decoded_ < window) {
            cut = "only " + std::to_string(decoded_) + " of the window's " +
                  std::to_string(window) + " frames decode" + trouble_.reason();
        }
        if (cut.empty() && trouble_.code != 0) cut = "damaged data was skipped" + trouble_.reason();
        av::take_log_line();
        if (!cut.empty()) {
            if (opt_.strict) {
                throw decode_error(std::string(decode_op) + ": " + s_.source +
                                   ": truncated: " + cut + " (video_decode_options::strict)");
            }
            out_.clip().set_truncated(true);
            if (note) this_call::note_truncated();
        }
        std::vector<double> times;
        times.reserve(slots_.size());
        for (std::int64_t i : slots_) {
            const auto t = static_cast<std::size_t>(
                std::lower_bound(targets_.begin(), targets_.end(), i) - targets_.begin());
            times.push_back(av::seconds(times_[t], s_.time_base));
        }
        out_.clip().set_frame_info(slots_, std::move(times), s_.frame_rate);
        // clips and clips_at: the slots are the clips' frames, clip after clip.
        if (opt_.select.clips() > 0) out_.clip().set_batch(opt_.select.clips());
        kept_ = static_cast<std::int64_t>(targets_.size());
        return std::move(out_.clip());
    }

  private:
    /// Picks the selection's frames over a window whose frames have the timestamps `times`;
    /// with the packets' `snap_keys`, clip starts snap to them.
    void select(const std::vector<std::int64_t>& times) {
        av::start_snap snap;
        if (s_.snap_keys) {
            snap = [&](std::int64_t start) {
                return av::snapped_frame(*s_.snap_keys, s_.time_base, times, start);
            };
        }
        out_.check_size(av::slot_count(opt_.select, static_cast<std::int64_t>(times.size())),
                        s_.params->width, s_.params->height);
        slots_ = av::select_frames(opt_.select, static_cast<std::int64_t>(times.size()), decode_op,
                                   s_.source, s_.truncation, snap);
        // The distinct frames to decode, ascending; each fills one or more output slots.
        targets_ = slots_;
        std::sort(targets_.begin(), targets_.end());
        targets_.erase(std::unique(targets_.begin(), targets_.end()), targets_.end());
        filled_.assign(targets_.size(), -1);
        times_.assign(targets_.size(), 0);
    }

    /// The fast path, for packets whose timestamps say which frame is which: from keyframe to
    /// keyframe, each frame found by its timestamp. False when a selected frame did not come
    /// out where its timestamp promised (a damaged packet, a stream whose decoder drops or
    /// retimes frames); the verified path then starts over.
    bool fast() {
        ctx_ = av::open_decoder(s_, opt_.threads, opt_.max_pixels, decode_op);
        select(s_.frame_pts);
        if (opt_.skip_nonref) {
            // A packet's presentation time says which frame it makes, whatever the decoder's
            // delay: one whose time is no selected frame's may be skipped.
            std::vector<std::int64_t> wanted;
            wanted.reserve(targets_.size());
            for (std::size_t t = 0; t < targets_.size(); ++t) wanted.push_back(target_pts(t));
            skip_ = av::frame_skipper::by_time(s_, wanted);
        }
        // Keyframes in decode order, with their presentation times (ascending in closed GOPs).
        std::vector<std::size_t> keys;
        std::vector<std::int64_t> key_pts;
        for (std::size_t i = 0; i < s_.packets.size(); ++i) {
            const AVPacket* p = s_.packets[i].get();
            if ((p->flags & AV_PKT_FLAG_KEY) != 0) {
                keys.push_back(i);
                key_pts.push_back(p->pts != AV_NOPTS_VALUE ? p->pts : p->dts);
            }
        }
        for (current_ = 0; current_ < targets_.size(); ++current_) {
            if (filled_[current_] >= 0) continue;
            const std::int64_t pts = target_pts(current_);
            // Jump to the last keyframe at or before the target when it lies ahead of what has
            // been sent: the frames in between are not needed.
            const auto k = std::upper_bound(key_pts.begin(), key_pts.end(), pts);
            if (k != key_pts.begin()) {
                const std::size_t key = keys[static_cast<std::size_t>(k - key_pts.begin()) - 1];
                if (key > next_ && !draining_) {
                    if (sent_any_) avcodec_flush_buffers(ctx_.get());
                    next_ = key;
                    restart_pts_ = key_pts[static_cast<std::size_t>(k - key_pts.begin()) - 1];
                }
            }
            while (filled_[current_] < 0 && !lost_ && step()) {
            }
            if (filled_[current_] < 0) return false;
        }
        for (std::size_t t = 0; t < targets_.size(); ++t) times_[t] = target_pts(t);
        return true;
    }

    /// The verified path: every packet decoded in order from the first, frame `i` the `i`-th
    /// of the window to come out (what the ffmpeg CLI gives). Where the demuxer did not count
    /// the frames so (it trusted the timestamps), a first pass counts them.
    void verified() {
        out_.reset();
        trouble_ = {};
        std::int64_t frames = static_cast<std::int64_t>(s_.frame_pts.size());
        std::vector<std::int64_t> counted_pts;
        std::vector<std::int64_t> counted_packets;
        if (s_.timed) {
            auto counter = av::open_decoder(s_, opt_.threads, 0, decode_op);
            av::decode_extent extent;
            frames = av::decode_in_order(
                s_, counter.get(), trouble_,
                [&](std::int64_t, const AVFrame* f, std::int64_t ts) {
                    counted_pts.push_back(ts);
                    counted_packets.push_back(av::packet_tag(f));
                    return true;
                },
                decode_op, &extent);
            returned_ += extent.returned;
            counted_packets = av::unique_tags(std::move(counted_packets), extent.tags);
            decoded_ = frames;
        }
        select(s_.timed ? counted_pts : s_.frame_pts);
        if (opt_.skip_nonref && skipping(s_.timed ? counted_pts : s_.frame_pts,
                                         s_.timed ? counted_packets : s_.frame_packets)) {
            return;
        }
        ctx_ = av::open_decoder(s_, opt_.threads, opt_.max_pixels, decode_op);
        std::size_t next = 0;  // the next target to fill
        av::decode_extent extent;
        const std::int64_t seen = av::decode_in_order(
            s_, ctx_.get(), trouble_,
            [&](std::int64_t k, const AVFrame* f, std::int64_t ts) {
                if (k == targets_[next]) {
                    times_[next] = ts;
                    convert(f, next);
                    ++next;
                }
                return next < targets_.size();
            },
            decode_op, &extent);
        returned_ += extent.returned;
        if (next < targets_.size()) {
            throw decode_error(std::string(decode_op) + ": " + s_.source + ": frame " +
                               std::to_string(targets_[next]) + " is selected but " +
                               std::to_string(seen) + " frames decode" + trouble_.reason() +
                               (s_.truncation.empty()
                                    ? ""
                                    : "; " + std::string(av::cut_short_prefix) + s_.truncation));
        }
    }

    /// The verified path's selected frames with what none of them needs skipped, each frame told
    /// by the packet that made it (`frame_packets`, from a decode of every frame; `times` its
    /// frames' timestamps). False, with the clip and the trouble as they were, where that cannot
    /// be told or the frames do not come out as that decode's did: every frame is decoded then.
    bool skipping(const std::vector<std::int64_t>& times,
                  const std::vector<std::int64_t>& frame_packets) {
        const auto skip = av::frame_skipper::by_packet(s_.packets.size(), frame_packets, targets_);
        if (skip.empty() || times.size() != frame_packets.size()) return false;
        const av::decode_trouble counted = trouble_;
        ctx_ = av::open_decoder(s_, opt_.threads, opt_.max_pixels, decode_op);
        std::size_t next = 0;  // the next target to fill
        bool lost = false;
        const bool in_order = av::decode_selected(
            s_, ctx_.get(), trouble_, skip, frame_packets, times,
            [&](std::int64_t k, const AVFrame* f, std::int64_t ts) {
                if (k > targets_[next]) {
                    lost = true;
                    return false;
                }
                if (k == targets_[next]) {
                    times_[next] = ts;
                    convert(f, next);
                    ++next;
                }
                return next < targets_.size();
            },
            decode_op, returned_);
        if (in_order && !lost && next == targets_.size()) return true;
        out_.reset();
        trouble_ = counted;
        filled_.assign(targets_.size(), -1);
        return false;
    }

    [[nodiscard]] std::int64_t target_pts(std::size_t t) const {
        return s_.frame_pts[static_cast<std::size_t>(targets_[t])];
    }

    /// Sends one packet (or the end of the stream) and takes every frame that is ready. False
    /// when there is nothing more to send.
    bool step() {
        av::check_cancelled(decode_op, s_.source);
        if (next_ < s_.packets.size()) {
            skip_.before_send(ctx_.get(), next_);
            send(s_.packets[next_++].get());
        } else if (!draining_) {
            draining_ = true;
            skip_.before_send(ctx_.get(), next_);
            send(nullptr);
        } else {
            return false;
        }
        receive();
        return true;
    }

    void send(const AVPacket* pkt) {
        sent_any_ = true;
        av::send_packet(ctx_.get(), pkt, frame_.get(), trouble_,
                        [this](const AVFrame* f) { take(f); });
    }

    void receive() {
        av::receive_frames(ctx_.get(), frame_.get(), trouble_,
                           [this](const AVFrame* f) { take(f); });
    }

    void take(const AVFrame* f) {
        ++returned_;
        const std::int64_t pts =
            f->best_effort_timestamp != AV_NOPTS_VALUE ? f->best_effort_timestamp : f->pts;
        if (pts == AV_NOPTS_VALUE || lost_) return;
        // The frame of the packet decoding jumped to must be a keyframe to the decoder: a
        // container can flag a P-frame (a sync-sample table that lies), and frames decoded from
        // it would be others than ffmpeg's. Decoding in order from the first packet instead.
        if (pts == restart_pts_) {
            restart_pts_ = AV_NOPTS_VALUE;
            if (!av::decoded_key(f)) {
                lost_ = true;
                return;
            }
        }
        // Frames come out in presentation order: one past the current target means the target
        // was lost, and waiting longer would decode the rest for nothing.
        if (current_ < targets_.size() && filled_[current_] < 0 && pts > target_pts(current_)) {
            lost_ = true;
            return;
        }
        const auto it =
            std::lower_bound(targets_.begin() + static_cast<std::ptrdiff_t>(current_),
                             targets_.end(), pts, [this](std::int64_t idx, std::int64_t p) {
                                 return s_.frame_pts[static_cast<std::size_t>(idx)] < p;
                             });
        if (it == targets_.end() ||
            target_pts(static_cast<std::size_t>(it - targets_.begin())) != pts) {
            return;
        }
        const auto t = static_cast<std::size_t>(it - targets_.begin());
        if (filled_[t] >= 0) return;
        convert(f, t);
    }

    /// Writes `f`, the decode of target `t`, into the clip.
    void convert(const AVFrame* f, std::size_t t) {
        filled_[t] = static_cast<std::int64_t>(out_.write(f, slots_, targets_[t]));
    }

    const ferry::detail::packets_state& s_;
    const video_decode_options& opt_;
    av::codec_ptr ctx_;
    av::frame_ptr frame_;
    av::clip_writer out_;
    std::vector<std::int64_t> slots_;
    std::vector<std::int64_t> targets_;
    std::vector<std::int64_t> filled_;
    std::vector<std::int64_t> times_;  ///< each target's timestamp (in the stream's time base)
    std::size_t current_ = 0;
    std::size_t next_ = 0;
    bool draining_ = false;
    bool sent_any_ = false;
    bool lost_ = false;          ///< the fast path lost a selected frame
    std::int64_t decoded_ = -1;  ///< frames the verified path found, where it counted them
    av::decode_trouble trouble_;
    av::frame_skipper skip_;     ///< the fast path's packets that may be skipped
    std::int64_t returned_ = 0;  ///< frames the decoders returned, every pass
    std::int64_t kept_ = 0;      ///< distinct frames in the clip returned
    /// The presentation time of the keyframe the fast path last jumped to, until its frame is
    /// seen (AV_NOPTS_VALUE: none pending).
    std::int64_t restart_pts_ = AV_NOPTS_VALUE;
};

/// More decoder threads than this gain nothing on a clip's few dozen frames (each frame thread
/// adds a frame of delay and a frame of memory).
constexpr int max_auto_threads = 16;
/// More than this is a mistake, not a setting: FFmpeg would start each one (and fail once the
/// process may start no more).
constexpr int max_threads = 64;

/// `video_decode_options::threads = 0`: the call's share of its pipeline's threads
/// (`this_call::cpu_share()`), 1 outside a stage call.
int decoder_threads() {
    return std::clamp(this_call::cpu_share(), 1, max_auto_threads);
}

/// `decode_video`, counting a truncated clip in the stage's stats only when `note` is true.
video_clip decode_packets(const packets& pkts, const video_decode_options& options, bool note) {
    if (pkts.empty()) {
        throw invalid_argument(std::string(decode_op) + ": no packets (empty ferry::packets)");
    }
    av::init_ffmpeg();
    av::take_log_line();
    if ((options.resize.width != 0 || options.resize.height != 0) &&
        (options.resize.width <= 0 || options.resize.height <= 0)) {
        throw invalid_argument(
            std::string(decode_op) + ": resize {" + std::to_string(options.resize.width) + ", " +
            std::to_string(options.resize.height) + "} must be positive (or {0, 0} for none)");
    }
    // pixel_format is images' too (ferry/pixels.hpp); frames come in rgb, bgr or gray only.
    if (options.format == frame_format::rgba) {
        throw invalid_argument(std::string(decode_op) +
                               ": format rgba is not one of video's (rgb, bgr, gray)");
    }
    if (options.threads < 0 || options.threads > max_threads) {
        throw invalid_argument(std::string(decode_op) + ": threads " +
                               std::to_string(options.threads) + " must be 0 (ferry chooses) to " +
                               std::to_string(max_threads));
    }
    video_decode_options o = options;
    if (o.threads == 0) o.threads = decoder_threads();
    return decoder(*pkts.state(), o).run(note);
}

/// The demux options with `max_frames` derived from the selection unless it is set, and strict
/// where either step is.
demux_options demux_part(const video_options& o) {
    demux_options d = o.demux;
    if (d.max_frames == 0) d.max_frames = o.decode.select.frames_needed();
    d.strict = d.strict || o.decode.strict;
    return d;
}

/// The decode options, strict where either step is.
video_decode_options decode_part(const video_options& o) {
    video_decode_options d = o.decode;
    d.strict = d.strict || o.demux.strict;
    return d;
}

/// `load_video`: one truncated clip counts once, however many steps saw the cut.
video_clip load(const packets& pkts, const video_options& options) {
    video_clip clip = decode_packets(pkts, decode_part(options), false);
    if (clip.truncated()) this_call::note_truncated();
    return clip;
}

}  // namespace

namespace detail {

video_clip decode_video_fn::operator()(const packets& pkts,
                                       const video_decode_options& options) const {
    return decode_packets(pkts, options, true);
}

video_clip load_video_fn::operator()(const std::filesystem::path& path,
                                     const video_options& options) const {
    return load(demux_packets(path, demux_part(options), false, options.decode.select.clips() > 0),
                options);
}

video_clip load_video_fn::operator()(std::span<const std::byte> data,
                                     const video_options& options) const {
    return load(demux_packets(data, demux_part(options), false, options.decode.select.clips() > 0),
                options);
}

}  // namespace detail
}  // namespace ops
}  // namespace ferry
