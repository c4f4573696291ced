// SPDX-License-Identifier: Apache-2.0
/// \file
/// clip_loading's hand-written FFmpeg loop: the libav calls a user makes to load a clip (open,
/// find the stream, seek backward, decode with one thread, scale every `stride`-th frame from the
/// start), on c threads taking samples from one counter, with a decoder opened per clip or kept
/// per thread; and the samples, sizes and timing helpers the benchmark shares with it.
#pragma once

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ferry_perf {

using clock_type = std::chrono::steady_clock;

/// Video training's usual sample: 16 frames at stride 2, resized to 112x112 RGB.
inline constexpr int frames_per_clip = 16;
inline constexpr int stride = 2;
inline constexpr int side = 112;
/// Clips of a video loaded in one pass (`clips(4, 16, 2)`).
inline constexpr int clips_per_pass = 4;

/// One clip to load: a file and a start in seconds.
struct sample {
    std::filesystem::path path;
    double start = 0;
};

/// The median of `v` (the upper one of an even count).
inline double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// Wall seconds since `t0`.
inline double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Throws naming `what` when a libav call returned an error.
inline void check(int ret, const char* what) {
    if (ret < 0)
        throw std::runtime_error(std::string(what) + " failed (" + std::to_string(ret) + ")");
}

/// One thread's decoder and scaler, kept from clip to clip when `reuse`.
struct hand_loader {
    bool reuse = false;
    AVCodecContext* codec = nullptr;
    SwsContext* sws = nullptr;
    double open_s = 0;  ///< wall time in avcodec_open2
    int opens = 0;
    std::int64_t decoded = 0;  ///< frames avcodec_receive_frame returned

    ~hand_loader() {
        avcodec_free_context(&codec);
        sws_freeContext(sws);
    }

    /// Loads one sample: `frames_per_clip` frames `stride` apart from the first at or after
    /// `s.start`, each scaled to side x side RGB into `out`. Returns the frames written.
    int load(const sample& s, std::vector<std::uint8_t>& out) {
        AVFormatContext* fmt = nullptr;
        check(avformat_open_input(&fmt, s.path.c_str(), nullptr, nullptr), "avformat_open_input");
        struct closer {
            AVFormatContext** f;
            ~closer() { avformat_close_input(f); }
        } close_fmt{&fmt};
        check(avformat_find_stream_info(fmt, nullptr), "avformat_find_stream_info");
        const int index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
        check(index, "av_find_best_stream");
        AVStream* st = fmt->streams[index];
        if (codec == nullptr || !reuse) {
            avcodec_free_context(&codec);
            const AVCodec* dec = avcodec_find_decoder(st->codecpar->codec_id);
            codec = avcodec_alloc_context3(dec);
            check(avcodec_parameters_to_context(codec, st->codecpar), "parameters_to_context");
            codec->thread_count = 1;
            codec->pkt_timebase = st->time_base;
            const auto t0 = clock_type::now();
            check(avcodec_open2(codec, dec, nullptr), "avcodec_open2");
            open_s += seconds_since(t0);
            ++opens;
        } else {
            avcodec_flush_buffers(codec);
        }
        const auto start_ts = static_cast<std::int64_t>(s.start / av_q2d(st->time_base));
        if (start_ts > 0) check(av_seek_frame(fmt, index, start_ts, AVSEEK_FLAG_BACKWARD), "seek");

        AVPacket* pkt = av_packet_alloc();
        AVFrame* frame = av_frame_alloc();
        int seen = 0, written = 0;  // frames at or after the start; frames kept
        const std::size_t frame_bytes = static_cast<std::size_t>(side) * side * 3;
        out.resize(frame_bytes * frames_per_clip);
        const auto take = [&] {
            while (written < frames_per_clip && avcodec_receive_frame(codec, frame) >= 0) {
                ++decoded;
                const std::int64_t ts = frame->best_effort_timestamp;
                if (ts != AV_NOPTS_VALUE && ts < start_ts) continue;
                if (seen++ % stride != 0) continue;
                sws = sws_getCachedContext(
                    sws, frame->width, frame->height, static_cast<AVPixelFormat>(frame->format),
                    side, side, AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr);
                std::uint8_t* dst[4] = {out.data() +
                                        frame_bytes * static_cast<std::size_t>(written)};
                int pitch[4] = {side * 3};
                sws_scale(sws, frame->data, frame->linesize, 0, frame->height, dst, pitch);
                ++written;
            }
        };
        while (written < frames_per_clip && av_read_frame(fmt, pkt) >= 0) {
            if (pkt->stream_index == index) {
                check(avcodec_send_packet(codec, pkt), "avcodec_send_packet");
                take();
            }
            av_packet_unref(pkt);
        }
        if (written < frames_per_clip) {
            avcodec_send_packet(codec, nullptr);  // drain
            take();
        }
        av_frame_free(&frame);
        av_packet_free(&pkt);
        if (!reuse) {
            sws_freeContext(sws);
            sws = nullptr;
        }
        return written;
    }
};

/// One hand-loop run: its rate, its avcodec_open2 time, its frames decoded.
struct hand_result {
    double clips_per_s = 0;
    double open_ms = 0;           ///< mean wall time of one avcodec_open2
    double decoded_per_clip = 0;  ///< frames decoded per clip
};

/// The hand loop's clips per second loading `samples` on `threads` threads taking samples
/// from one counter, each with a decoder opened per clip or, when `reuse`, kept per thread; exits
/// when a sample gives fewer than `frames_per_clip` frames.
inline hand_result hand_rate(const std::vector<sample>& samples, int threads, bool reuse) {
    std::atomic<std::size_t> next{0};
    std::atomic<int> short_clips{0};
    std::mutex m;
    double open_s = 0;
    int opens = 0;
    std::int64_t decoded = 0;
    const auto t0 = clock_type::now();
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w) {
        workers.emplace_back([&] {
            hand_loader h{.reuse = reuse};
            std::vector<std::uint8_t> out;
            for (std::size_t i; (i = next++) < samples.size();) {
                if (h.load(samples[i], out) != frames_per_clip) ++short_clips;
            }
            std::lock_guard lock(m);
            open_s += h.open_s;
            opens += h.opens;
            decoded += h.decoded;
        });
    }
    for (auto& w : workers) w.join();
    const double wall = seconds_since(t0);
    if (short_clips > 0) {
        std::cerr << "clip_loading: the hand loop got fewer than " << frames_per_clip
                  << " frames for " << short_clips << " samples\n";
        std::exit(1);
    }
    return {static_cast<double>(samples.size()) / wall, opens > 0 ? 1e3 * open_s / opens : 0,
            static_cast<double>(decoded) / static_cast<double>(samples.size())};
}

}  // namespace ferry_perf
