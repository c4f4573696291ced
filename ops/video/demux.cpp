// SPDX-License-Identifier: Apache-2.0
/// \file
/// `demux_video`: one video stream's packets in a time window, read through ferry's own
/// AVIOContext, with the window's frames (counted by decoding where packets lack timestamps) and
/// what cut the input short.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "frames.hpp"
#include "keyframes.hpp"

namespace ferry {

// --- demux_video ---------------------------------------------------------------------------------

namespace ops {
namespace {

constexpr const char* demux_op = "demux_video";

/// The first timestamp in `tb` at or after `t` seconds (a microsecond of slack for rounding).
std::int64_t to_ts(double t, AVRational tb) {
    return av::saturate(std::ceil((t - 1e-6) / av_q2d(tb)));
}

/// The video stream to read: `opt.stream`, or FFmpeg's best one. Others are discarded.
int select_stream(const av::input& in, const demux_options& opt) {
    AVFormatContext* fmt = in.format.get();
    int index = opt.stream;
    if (index >= 0) {
        if (index >= static_cast<int>(fmt->nb_streams)) {
            throw invalid_argument(std::string(demux_op) + ": " + in.name + ": stream " +
                                   std::to_string(index) + " does not exist (the container has " +
                                   std::to_string(fmt->nb_streams) + ")");
        }
        if (fmt->streams[index]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) {
            throw decode_error(std::string(demux_op) + ": " + in.name + ": stream " +
                               std::to_string(index) + " is not a video stream");
        }
    } else {
        index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
        if (index < 0) in.fail(demux_op, "no video stream", index);
    }
    const AVCodecParameters* par = fmt->streams[index]->codecpar;
    if (par->width < 0 || par->height < 0) {
        av::throw_decode(
            demux_op, in.name,
            "bad frame size " + std::to_string(par->width) + "x" + std::to_string(par->height), 0);
    }
    const auto pixels =
        static_cast<std::uint64_t>(par->width) * static_cast<std::uint64_t>(par->height);
    if (opt.max_pixels != 0 && pixels > opt.max_pixels) {
        throw decode_error(std::string(demux_op) + ": " + in.name + ": the stream declares " +
                           std::to_string(par->width) + "x" + std::to_string(par->height) + " = " +
                           std::to_string(pixels) + " pixels per frame, over the limit of " +
                           std::to_string(opt.max_pixels) + " (max_pixels)");
    }
    for (unsigned i = 0; i < fmt->nb_streams; ++i) {
        if (static_cast<int>(i) != index) fmt->streams[i]->discard = AVDISCARD_ALL;
    }
    return index;
}

/// Frames the decoder may hold back or drop beyond `max_frames` where packets lack timestamps:
/// reading stops once this many more packets than needed are in.
constexpr std::int64_t reorder_slack = 16;

/// Reads the stream's packets into `state`; what reading saw.
struct reading {
    std::int64_t read = 0;  ///< packets of the stream read
    bool stopped = false;   ///< the window's end or `max_frames` ended reading early
    bool untimed = false;   ///< a frame's packet has no presentation timestamp
    /// A packet after the first keyframe in decode order shows, inside the window, before it:
    /// a leading picture of an open GOP, whose references precede the data read. Whether it
    /// decodes depends on the codec (MPEG-2 and HEVC drop it), so decoding counts the frames.
    bool leading = false;
    std::int64_t before_key = 0;  ///< packets read before the first keyframe (dropped)
    std::int64_t corrupt = -1;    ///< the first packet FFmpeg flagged incomplete (-1: none)
    std::string error;            ///< why reading failed before the end (empty: it did not)
};

reading read_packets(const av::input& in, int index, const demux_options& opt,
                     ferry::detail::packets_state& state) {
    AVFormatContext* fmt = in.format.get();
    reading r;
    auto pkt = av::make_packet();
    std::int64_t after_start = 0;           // packets at or after the window's start (untimed rule)
    std::vector<std::int64_t> nth;          // scratch for the max_frames test
    std::int64_t key_pts = AV_NOPTS_VALUE;  // the first keyframe's presentation time
    for (;;) {
        av::check_cancelled(demux_op, in.name);
        const int ret = av_read_frame(fmt, pkt.get());
        if (ret == AVERROR_EOF) break;
        if (ret < 0) {
            r.error = in.read_failure(demux_op, "reading packet " + std::to_string(r.read), ret);
            break;
        }
        if (pkt->stream_index != index) {
            av_packet_unref(pkt.get());
            continue;
        }
        ++r.read;
        const std::int64_t dts = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pkt->pts;
        // Decode order: once a packet's decode time is past the window's end (or past the last
        // frame needed), every later frame is too, since presentation never precedes decoding.
        if (dts != AV_NOPTS_VALUE && dts >= state.end_ts) {
            r.stopped = true;
            break;
        }
        if (opt.max_frames > 0) {
            if (r.untimed) {
                if (after_start >= opt.max_frames + reorder_slack) {
                    r.stopped = true;
                    break;
                }
            } else if (static_cast<std::int64_t>(state.frame_pts.size()) >= opt.max_frames &&
                       dts != AV_NOPTS_VALUE) {
                nth = state.frame_pts;
                const auto k = nth.begin() + (opt.max_frames - 1);
                std::nth_element(nth.begin(), k, nth.end());
                if (dts > *k) {
                    r.stopped = true;
                    break;
                }
            }
        }
        // Decoding starts at a keyframe; what precedes the first one cannot be decoded.
        if (state.packets.empty() && (pkt->flags & AV_PKT_FLAG_KEY) == 0) {
            ++r.before_key;
            av_packet_unref(pkt.get());
            continue;
        }
        if (state.packets.empty()) {
            key_pts = pkt->pts;
        } else if (pkt->pts != AV_NOPTS_VALUE && key_pts != AV_NOPTS_VALUE && pkt->pts < key_pts &&
                   pkt->pts >= state.start_ts) {
            r.leading = true;
        }
        if ((pkt->flags & AV_PKT_FLAG_CORRUPT) != 0 && r.corrupt < 0) r.corrupt = r.read - 1;
        // A packet an edit list discards is decoded (later frames may need it) but is no frame.
        if ((pkt->flags & AV_PKT_FLAG_DISCARD) == 0) {
            if (pkt->pts == AV_NOPTS_VALUE) r.untimed = true;
            if (dts == AV_NOPTS_VALUE ? state.start_ts == std::numeric_limits<std::int64_t>::min()
                                      : dts >= state.start_ts) {
                ++after_start;
            }
            if (pkt->pts != AV_NOPTS_VALUE && pkt->pts >= state.start_ts &&
                pkt->pts < state.end_ts) {
                state.frame_pts.push_back(pkt->pts);
            }
        }
        state.bytes += static_cast<std::size_t>(pkt->size);
        auto kept = av::make_packet();
        av_packet_move_ref(kept.get(), pkt.get());
        state.packets.push_back(std::move(kept));
    }
    return r;
}

/// The latest timestamp among the window's frames; else the last decoded frame's, where frames
/// were counted by decoding (`decoded`), else the packets' (a window past the data's end holds no
/// frame, but what was read before it says where the data ends); AV_NOPTS_VALUE when nothing
/// read has one.
std::int64_t last_timestamp(const ferry::detail::packets_state& s, std::int64_t decoded) {
    if (!s.frame_pts.empty()) return *std::max_element(s.frame_pts.begin(), s.frame_pts.end());
    if (decoded != AV_NOPTS_VALUE) return decoded;
    std::int64_t last = AV_NOPTS_VALUE;
    for (const auto& p : s.packets) {
        const std::int64_t ts = p->pts != AV_NOPTS_VALUE ? p->pts : p->dts;
        if (ts != AV_NOPTS_VALUE && (last == AV_NOPTS_VALUE || ts > last)) last = ts;
    }
    return last;
}

/// When the data ends before the duration the container declares (by more than two frames):
/// "the container declares 444 frames (17.760 s), the data ends at 2.760 s" where the header
/// states a frame count (AVI, MP4), else "the stream declares 17.760 s, the data ends at
/// 2.760 s"; empty otherwise. The data's end is its last frame's timestamp (`last_timestamp`)
/// plus one frame.
std::string short_of_declared(const AVFormatContext* fmt, const AVStream* st,
                              const ferry::detail::packets_state& s, const demux_options& opt,
                              std::int64_t decoded) {
    // The container's duration is its longest stream's: only a lone stream's own.
    const double declared = av::declared_end(fmt, st, fmt->nb_streams == 1);
    const std::int64_t last = last_timestamp(s, decoded);
    if (declared < 0.0 || last == AV_NOPTS_VALUE) return {};
    const double frame = av::seconds(s.frame_duration, s.time_base);
    const double wanted = opt.end ? std::min(declared, *opt.end) : declared;
    const double ends = av::seconds(last, s.time_base) + frame;
    if (ends + 2.0 * frame + 1e-3 >= wanted) return {};
    char text[160];
    if (st->nb_frames > 0) {
        std::snprintf(text, sizeof text,
                      "the container declares %lld frames (%.3f s), the data ends at %.3f s",
                      static_cast<long long>(st->nb_frames), declared, ends);
    } else {
        std::snprintf(text, sizeof text, "the stream declares %.3f s, the data ends at %.3f s",
                      declared, ends);
    }
    return text;
}

/// Keyframe seeks `demux` tries before it reads from the beginning.
constexpr int max_seeks = 4;
constexpr std::int64_t min_ts = std::numeric_limits<std::int64_t>::min();

/// Seeks to the keyframe at or before `ts` (`min_ts`: the beginning). Where the container cannot
/// seek, reading goes on from where it is: the window's frames are still picked by time.
void position(AVFormatContext* fmt, int index, std::int64_t ts) {
    if (ts != min_ts && av_seek_frame(fmt, index, ts, AVSEEK_FLAG_BACKWARD) >= 0) {
        av::take_log_line();
        return;
    }
    if (avformat_seek_file(fmt, index, min_ts, min_ts, min_ts, 0) < 0 &&
        av_seek_frame(fmt, index, min_ts, AVSEEK_FLAG_BACKWARD) < 0) {
        av_seek_frame(fmt, -1, 0, AVSEEK_FLAG_BYTE);
    }
    av::take_log_line();
}

/// Keyframes listed for `demux_options::snap_to_keyframe`: as many as `probe_video` lists by
/// default, so that both share the cache's lists.
constexpr std::size_t snap_keyframes = video_probe_options{}.max_keyframes;

/// The keyframes `demux_options::snap_to_keyframe` snaps to, where it is on and the window's
/// start (one after 0) or the clip starts of a `clips` or `clips_at` selection (`clip_starts`)
/// need them; null otherwise. A pipe or FIFO is refused: its keyframes cannot be read ahead.
std::shared_ptr<const av::keyframe_list> snap_keyframes_of(
    const av::input& in, int index, const demux_options& opt, bool clip_starts,
    const std::function<av::input()>& reopen) {
    if (!opt.snap_to_keyframe || (opt.start <= 0.0 && !clip_starts)) return nullptr;
    if (!in.source->seekable()) {
        throw invalid_argument(std::string(demux_op) + ": " + in.name +
                               ": snap_to_keyframe needs a seekable input (a file or memory), "
                               "not a pipe or FIFO");
    }
    return av::keyframes_of(in, index, snap_keyframes, reopen, demux_op);
}

/// `opt.start` moved back to the last of `keys` at or before it (`keys` null: not snapped), with
/// that keyframe's timestamp; the start as given (and no timestamp) where there is none.
std::pair<double, std::optional<std::int64_t>> snapped_start(const av::keyframe_list* keys,
                                                             const demux_options& opt) {
    if (keys == nullptr || opt.start <= 0.0) return {opt.start, std::nullopt};
    const std::int64_t start_ts = to_ts(opt.start, keys->time_base);
    const auto after = std::upper_bound(keys->pts.begin(), keys->pts.end(), start_ts);
    if (after == keys->pts.begin()) return {opt.start, std::nullopt};
    // A capped list does not know the keyframes past its last one.
    if (after == keys->pts.end() && keys->capped) return {opt.start, std::nullopt};
    const std::int64_t key = *std::prev(after);
    const double at = av::seconds(key, keys->time_base);
    if (at <= 0.0) return {0.0, std::nullopt};  // the stream's start: no window needed
    return {at, key};
}

packets demux(av::input in, const demux_options& given, bool note, bool clip_starts,
              const std::function<av::input()>& reopen) {
    demux_options opt = given;
    av::check_window(demux_op, opt.start, opt.end, opt.stream);
    if (opt.max_frames < 0) {
        throw invalid_argument(std::string(demux_op) + ": max_frames " +
                               std::to_string(opt.max_frames) + " must be 0 (no limit) or more");
    }
    AVFormatContext* fmt = in.format.get();
    const int index = select_stream(in, opt);
    AVStream* st = fmt->streams[index];
    auto snap_keys = snap_keyframes_of(in, index, opt, clip_starts, reopen);
    const auto [start, snapped] = snapped_start(snap_keys.get(), opt);
    opt.start = start;

    auto state = std::make_shared<ferry::detail::packets_state>();
    state->source = in.name;
    state->stream = index;
    state->snap_keys = std::move(snap_keys);
    state->time_base = st->time_base;
    const AVRational rate = av_guess_frame_rate(fmt, st, nullptr);
    const bool rated = rate.num > 0 && rate.den > 0;
    state->frame_rate = rated ? av_q2d(rate) : 0.0;
    state->frame_duration = rated ? av_rescale_q(1, av_inv_q(rate), st->time_base) : 0;
    state->params.reset(avcodec_parameters_alloc());
    if (!state->params) throw std::bad_alloc();
    if (const int ret = avcodec_parameters_copy(state->params.get(), st->codecpar); ret < 0) {
        av::throw_decode(demux_op, in.name, "cannot copy the codec parameters", ret);
    }

    const AVRational tb = st->time_base;
    const bool windowed = opt.start > 0.0 || opt.end.has_value();
    state->start_ts = snapped           ? *snapped
                      : opt.start > 0.0 ? to_ts(opt.start, tb)
                                        : std::numeric_limits<std::int64_t>::min();
    state->end_ts = opt.end ? to_ts(*opt.end, tb) : std::numeric_limits<std::int64_t>::max();
    // The keyframe at or before the start, found from the container's index. An index may be
    // wrong (a keyframe's decode time listed where its presentation time belongs, so frames
    // shown before it are lost) or missing (raw streams): where the frames read begin after the
    // start, seek to an earlier keyframe, and in the end read from the beginning.
    std::int64_t seek_to = state->start_ts;
    reading r;
    av::decode_trouble trouble;
    std::int64_t last_decoded = AV_NOPTS_VALUE;  // the last frame's time, where counted by decoding
    bool from_beginning = false;                 // the last read started at the stream's start
    bool by_pts = false;  // the last read's frames are told apart by their timestamps
    for (int attempt = 0;; ++attempt) {
        const bool from_start = attempt == max_seeks;
        if (opt.start > 0.0) position(fmt, index, from_start ? min_ts : seek_to);
        state->packets.clear();
        state->frame_pts.clear();
        state->frame_packets.clear();
        state->bytes = 0;
        state->frame_limit = 0;
        r = read_packets(in, index, opt, *state);
        if (r.stopped && opt.max_frames > 0) state->frame_limit = opt.max_frames;
        auto& pts = state->frame_pts;
        std::sort(pts.begin(), pts.end());
        // Timestamps identify frames only where every frame has its own; otherwise the frames
        // are those a decoder gives, counted by decoding (MPEG program streams, AVI, raw H.264).
        // A cut file's last packet may be partial, so its frames are counted by decoding too.
        const bool cut_short =
            !r.error.empty() || r.corrupt >= 0 ||
            (!r.stopped && opt.start <= 0.0 && st->nb_frames > 0 && r.read < st->nb_frames);
        // Leading pictures are counted by decoding too, but only in the read that is kept: a
        // read retried from an earlier keyframe drops them from the window.
        by_pts =
            !r.untimed && !cut_short && std::adjacent_find(pts.begin(), pts.end()) == pts.end();
        state->timed = by_pts && !r.leading;
        from_beginning = opt.start <= 0.0 || from_start;
        std::int64_t first = AV_NOPTS_VALUE;  // the first frame's presentation time
        trouble = {};
        last_decoded = AV_NOPTS_VALUE;
        if (!state->packets.empty() && !by_pts) {
            av::decode_extent extent;
            trouble = av::count_frames(*state, demux_op, extent);
            first = extent.first_ts;
            last_decoded = extent.last_ts;
        } else if (!state->packets.empty()) {
            first = state->packets.front()->pts;
        }
        if (opt.start <= 0.0 || from_start) break;
        if (!in.source->seekable()) break;  // a pipe: what was read is gone
        std::int64_t key_ts = AV_NOPTS_VALUE;
        if (!state->packets.empty()) {
            const AVPacket* key = state->packets.front().get();
            key_ts = key->dts != AV_NOPTS_VALUE ? key->dts : key->pts;
            if (key_ts == AV_NOPTS_VALUE) {
                // No timestamps to seek by (raw streams): frames are timed by counting them
                // from the beginning.
                attempt = max_seeks - 1;
                continue;
            }
            if (first == AV_NOPTS_VALUE) {
                // The first frame came out without a time of its own (an MPEG program stream
                // whose pack holds several frames): a keyframe decoded after the start means
                // the seek landed too late (seek further back); else only counting from the
                // beginning tells the frames' times.
                if (key_ts <= state->start_ts) {
                    attempt = max_seeks - 1;
                    continue;
                }
            } else {
                // Early enough: the frames begin at or before the start, or at the stream's
                // first.
                if (first <= state->start_ts) break;
                if (st->start_time != AV_NOPTS_VALUE && first <= st->start_time) break;
            }
        }
        // The seek landed past the start (or past the window): 1, 2, 4 ... s further back.
        seek_to = std::min({seek_to, key_ts != AV_NOPTS_VALUE ? key_ts : seek_to,
                            first != AV_NOPTS_VALUE ? first : seek_to}) -
                  av_rescale_q(std::int64_t{1} << attempt, AVRational{1, 1}, tb);
    }
    if (by_pts && !state->timed && !state->packets.empty()) {
        av::decode_extent extent;
        trouble = av::count_frames(*state, demux_op, extent);
        last_decoded = extent.last_ts;
    }
    auto& pts = state->frame_pts;
    if (state->frame_limit > 0 && static_cast<std::int64_t>(pts.size()) > state->frame_limit) {
        pts.resize(static_cast<std::size_t>(state->frame_limit));
    }

    if (pts.empty()) {
        std::string what = "no decodable video frames";
        if (windowed) {
            what += " in the window [" + av::seconds_text(opt.start) + ", " +
                    (opt.end ? av::seconds_text(*opt.end) : std::string("end")) + ")";
        }
        what += trouble.reason();
        if (!r.error.empty()) {
            what += "; reading stopped: " + r.error;
        } else if (!r.stopped) {
            // A window the header promised but the data does not reach: say what it promised.
            const std::string cut = short_of_declared(fmt, st, *state, opt, last_decoded);
            if (!cut.empty()) what += std::string("; ") + av::cut_short_prefix + cut;
        }
        av::throw_decode(demux_op, in.name, what, 0);
    }

    // What cut the input short. A header's frame count or duration is an estimate of what the
    // data holds, never the frames: a shortfall only marks the packets truncated.
    std::string& cut = state->truncation;
    if (!r.error.empty()) {
        cut = "packet " + std::to_string(r.read) + " could not be read: " + r.error;
    } else if (r.corrupt >= 0) {
        cut = "packet " + std::to_string(r.corrupt) + " is incomplete";
    } else if (!r.stopped && opt.start <= 0.0 && st->nb_frames > 0 && r.read < st->nb_frames) {
        cut = "the container declares " + std::to_string(st->nb_frames) +
              " frames, the data holds " + std::to_string(r.read);
    } else if (!r.stopped) {
        cut = short_of_declared(fmt, st, *state, opt, last_decoded);
    }
    if (cut.empty() && from_beginning && r.before_key > 0) {
        // After a seek, packets before the keyframe are the previous GOP's; from the start of
        // the stream they are frames whose keyframe the data does not hold (a capture or a
        // segment cut at a byte offset).
        cut = "the data starts " + std::to_string(r.before_key) +
              " packets before its first keyframe, and their frames cannot be decoded";
    }
    if (cut.empty() && trouble.code != 0) cut = "damaged data was skipped" + trouble.reason();
    if (!cut.empty()) {
        if (opt.strict) {
            throw decode_error(std::string(demux_op) + ": " + in.name + ": truncated: " + cut +
                               " (demux_options::strict)");
        }
        if (note) this_call::note_truncated();
    }
    return packets(std::move(state));
}

}  // namespace

packets demux_packets(const std::filesystem::path& path, const demux_options& options, bool note,
                      bool clip_starts) {
    const auto open = [&] {
        return av::open_input(av::open_file(path, options.timeout, demux_op), path.string(),
                              demux_op);
    };
    return demux(open(), options, note, clip_starts, open);
}

packets demux_packets(std::span<const std::byte> data, const demux_options& options, bool note,
                      bool clip_starts) {
    const auto open = [&] {
        return av::open_input(av::open_memory(data, options.timeout, demux_op), "<memory>",
                              demux_op);
    };
    return demux(open(), options, note, clip_starts, open);
}

namespace detail {

packets demux_video_fn::operator()(const std::filesystem::path& path,
                                   const demux_options& options) const {
    // The selection the packets are decoded with is not known here: with snap_to_keyframe they
    // carry the keyframes for a clips or clips_at selection's starts.
    return demux_packets(path, options, true, true);
}

packets demux_video_fn::operator()(std::span<const std::byte> data,
                                   const demux_options& options) const {
    return demux_packets(data, options, true, true);
}

}  // namespace detail
}  // namespace ops
}  // namespace ferry
