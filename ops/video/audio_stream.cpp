// SPDX-License-Identifier: Apache-2.0
/// \file
/// Which audio stream `decode_audio` reads and its decoder (see audio_stream.hpp).
#include "audio_stream.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <string>
#include <string_view>

namespace ferry::ops::av {
namespace {

/// How much of a WAV file's data FFmpeg probes for a codec other than its header's.
constexpr std::int64_t wav_probe_bytes = 32 << 10;

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

/// The stream asked for (an error unless it is audio), or FFmpeg's best.
int pick_stream(input& in, int stream, const char* op) {
    AVFormatContext* fmt = in.format.get();
    if (stream >= 0) {
        if (stream >= static_cast<int>(fmt->nb_streams)) {
            throw invalid_argument(std::string(op) + ": " + in.name + ": stream " +
                                   std::to_string(stream) + " does not exist");
        }
        if (fmt->streams[stream]->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) {
            throw decode_error(std::string(op) + ": " + in.name + ": stream " +
                               std::to_string(stream) + " is not an audio stream");
        }
        return stream;
    }
    const int best = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
    if (best < 0) in.fail(op, "no audio stream", best);
    return best;
}

/// Stream `index`'s decoder, opened on its parameters: empty where it cannot be and `must` is
/// false; a `decode_error` naming the codec where it must.
codec_ptr open_decoder(input& in, int index, bool must, const char* op) {
    const AVStream* st = in.format->streams[index];
    const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
    if (codec == nullptr) {
        if (!must) return {};
        throw decode_error(std::string(op) + ": " + in.name + ": no decoder for codec " +
                           avcodec_get_name(st->codecpar->codec_id));
    }
    codec_ptr ctx(avcodec_alloc_context3(codec));
    if (!ctx) throw std::bad_alloc();
    int ret = avcodec_parameters_to_context(ctx.get(), st->codecpar);
    if (ret < 0 && must) throw_decode(op, in.name, "bad codec parameters", ret);
    if (ret >= 0) {
        ctx->pkt_timebase = st->time_base;
        ctx->thread_count = 1;
        ret = avcodec_open2(ctx.get(), codec, nullptr);
        if (ret < 0 && must) {
            throw_decode(op, in.name, std::string("cannot open the ") + codec->name + " decoder",
                         ret);
        }
    }
    if (ret >= 0) return ctx;
    take_log_line();  // a failed attempt's log line is not the reason for a later error
    return {};
}

/// The stream and its decoder from the container's header alone, without
/// `avformat_find_stream_info`, which reads packets until it has decoded what the header leaves
/// out of every stream (in an MP4 or Matroska file with video, a video frame): empty where the
/// header does not suffice.
audio_stream from_header(input& in, int stream, bool need_end, const char* op) {
    const AVFormatContext* fmt = in.format.get();
    if (!header_suffices(fmt->iformat) || (fmt->ctx_flags & AVFMTCTX_NOHEADER) != 0 ||
        stream >= static_cast<int>(fmt->nb_streams)) {
        return {};
    }
    audio_stream out;
    if (stream >= 0) {
        out.index = pick_stream(in, stream, op);
    } else {
        // Of several, FFmpeg's best is chosen by what find_stream_info decodes of each (and
        // av_find_best_stream passes over a stream whose header lacks the rate).
        int audio_streams = 0;
        for (unsigned i = 0; i < fmt->nb_streams; ++i) {
            if (fmt->streams[i]->codecpar->codec_type != AVMEDIA_TYPE_AUDIO) continue;
            out.index = static_cast<int>(i);
            ++audio_streams;
        }
        if (audio_streams != 1) return {};
    }
    if (need_end && stream_end(fmt, fmt->streams[out.index]) < 0.0) return {};
    out.decoder = open_decoder(in, out.index, false, op);
    if (!out.decoder || out.decoder->sample_rate <= 0 || out.decoder->ch_layout.nb_channels <= 0) {
        return {};
    }
    return out;
}

}  // namespace

audio_stream open_audio_stream(input& in, int stream, bool need_end, const char* op) {
    audio_stream out = from_header(in, stream, need_end, op);
    if (out.decoder) return out;
    if (in.format->iformat != nullptr && std::string_view(in.format->iformat->name) == "wav") {
        // FFmpeg probes a WAV's 16-bit PCM for another codec in disguise (DTS, AC-3) over its
        // first 32 packets, running every demuxer's probe at each doubling of 128 KiB: 4.4 of a
        // 4 s window's 6.2 ms. 32 KiB hold many frames of any codec it finds there (a DTS
        // frame is 2 KiB), and the header's own S/PDIF check of the first 64 KiB stays.
        in.format->probesize = wav_probe_bytes;
    }
    read_stream_info(in, op);
    out.index = pick_stream(in, stream, op);
    out.decoder = open_decoder(in, out.index, true, op);
    return out;
}

double stream_end(const AVFormatContext* fmt, const AVStream* st) {
    if (const double declared = declared_end(fmt, st, true); declared >= 0.0) return declared;
    if (st->duration != AV_NOPTS_VALUE && st->duration > 0) {
        const std::int64_t first = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
        return seconds(first + st->duration, st->time_base);
    }
    if (fmt->duration != AV_NOPTS_VALUE && fmt->duration > 0) {
        const std::int64_t first = fmt->start_time != AV_NOPTS_VALUE ? fmt->start_time : 0;
        return static_cast<double>(first + fmt->duration) / AV_TIME_BASE;
    }
    return -1.0;
}

bool seeks_to_the_sample(const input& in, int index) {
    const AVFormatContext* fmt = in.format.get();
    return !(fmt->iformat != nullptr && std::string_view(fmt->iformat->name) == "ogg" &&
             fmt->streams[index]->codecpar->codec_id == AV_CODEC_ID_FLAC);
}

}  // namespace ferry::ops::av
