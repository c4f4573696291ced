// SPDX-License-Identifier: Apache-2.0
/// \file
/// audio_loading: windows per second of audio training's usual sample (a few seconds from a
/// random start, resampled to 16 kHz mono float) through ferry's `decode_audio`, against a
/// hand-written libav loop making the same calls on as many threads, for WAV, FLAC, MP3 and AAC,
/// and for the AAC track of an MP4 file with H.264 video, at concurrency 1 and 2 (--concurrency).
///
/// The files: generated once with the ffmpeg CLI (a tone with noise, 44.1 kHz stereo, --seconds
/// long), one per codec and --files index, read once to warm the page cache. Every variant loads
/// the same (file, start) samples, the starts drawn once (seeded):
///
///  * `ferry`  `from(samples).map(decode_audio {.sample_rate = 16000, .channels = 1, .start,
///             .end}, {.concurrency = c, .executor = io})`;
///  * `hand`   c std::threads taking samples from one counter, each making the calls a user
///             writes against libav directly: avformat_open_input, avformat_find_stream_info,
///             av_seek_frame(BACKWARD), avcodec_open2 (one thread), send/receive, swr_convert
///             to 16 kHz mono float planar, the samples before the window dropped.
///
/// Both must return the same number of samples per window (± 1 per window, from rounding); the
/// program stops if not. Each repetition runs both once, in turn; the table gives medians of the
/// rates and of each repetition's own ratio.
///
/// Usage: audio_loading [--files N] [--seconds S] [--window S] [--samples N] [--reps R]
///                      [--concurrency 1,2] [--dir DIR]

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libswresample/swresample.h>
}

#include <sys/resource.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/args.hpp"
#include "ferry/ferry.hpp"
#include "ferry/video.hpp"

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr int out_rate = 16000;

struct config {
    int files = 2;
    int seconds = 60;
    double window = 4.0;
    int samples = 64;
    int reps = 5;
    std::vector<int> concurrency{1, 2};
    fs::path dir = fs::temp_directory_path() / "ferry-audio-loading";
};

struct codec_case {
    const char* name;
    const char* ext;
    const char* args;  ///< the ffmpeg CLI's encoder arguments
};

constexpr codec_case codecs[] = {
    {"WAV (pcm_s16le)", "wav", "-c:a pcm_s16le"},
    {"FLAC", "flac", "-c:a flac"},
    {"MP3 (128 kb/s)", "mp3", "-c:a libmp3lame -b:a 128k"},
    {"AAC (128 kb/s)", "m4a", "-c:a aac -b:a 128k"},
    // The audio of a video file: the same AAC beside a 360p H.264 stream.
    {"AAC in MP4 with video", "mp4",
     "-f lavfi -i testsrc2=size=640x360:rate=30 -shortest -map 0:a -map 1:v -c:a aac -b:a 128k "
     "-c:v libx264 -preset veryfast -g 60"},
};

struct sample {
    fs::path path;
    double start = 0;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// The process's CPU time (user + system, every thread), in seconds.
double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
           1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void check(int ret, const char* what) {
    if (ret < 0)
        throw std::runtime_error(std::string(what) + " failed (" + std::to_string(ret) + ")");
}

/// `files` files of `seconds` s for `c` in `dir`, made where missing, read once.
std::vector<fs::path> audio_set(const config& cfg, const codec_case& c) {
    fs::create_directories(cfg.dir);
    std::vector<fs::path> paths;
    for (int i = 0; i < cfg.files; ++i) {
        const auto p = cfg.dir / ("tone" + std::to_string(i) + "-" + std::to_string(cfg.seconds) +
                                  "s." + c.ext);
        if (!fs::exists(p)) {
            std::cerr << "generating " << p << '\n';
            const std::string cmd =
                "ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i "
                "\"aevalsrc=0.5*sin(" +
                std::to_string(220 + 110 * i) + "*2*PI*t)+0.1*random(0)|0.4*sin(" +
                std::to_string(330 + 110 * i) +
                "*2*PI*t)+0.1*random(1):s=44100:d=" + std::to_string(cfg.seconds) + "\" " + c.args +
                " " + p.string();
            if (std::system(cmd.c_str()) != 0) {
                std::cerr << "command failed: " << cmd << '\n';
                std::exit(1);
            }
        }
        std::ifstream in(p, std::ios::binary);
        std::vector<char> buf(1 << 16);
        while (in.read(buf.data(), static_cast<std::streamsize>(buf.size()))) {
        }
        paths.push_back(p);
    }
    return paths;
}

/// One window through libav by hand: the samples of [start, start + window) at 16 kHz mono.
std::int64_t hand_load(const sample& s, double window, std::vector<float>& out) {
    AVFormatContext* fmt = nullptr;
    check(avformat_open_input(&fmt, s.path.c_str(), nullptr, nullptr), "avformat_open_input");
    struct closer {
        AVFormatContext** f;
        ~closer() { avformat_close_input(f); }
    } close_fmt{&fmt};
    check(avformat_find_stream_info(fmt, nullptr), "avformat_find_stream_info");
    const int index = av_find_best_stream(fmt, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
    check(index, "av_find_best_stream");
    AVStream* st = fmt->streams[index];
    const AVCodec* dec = avcodec_find_decoder(st->codecpar->codec_id);
    AVCodecContext* codec = avcodec_alloc_context3(dec);
    struct codec_closer {
        AVCodecContext** c;
        ~codec_closer() { avcodec_free_context(c); }
    } close_codec{&codec};
    check(avcodec_parameters_to_context(codec, st->codecpar), "parameters_to_context");
    codec->thread_count = 1;
    codec->pkt_timebase = st->time_base;
    check(avcodec_open2(codec, dec, nullptr), "avcodec_open2");
    if (s.start > 0) {
        const auto ts = static_cast<std::int64_t>(std::floor(s.start / av_q2d(st->time_base)));
        check(av_seek_frame(fmt, index, ts, AVSEEK_FLAG_BACKWARD), "seek");
    }
    const std::int64_t first = std::llround(s.start * out_rate);
    const std::int64_t last = std::llround((s.start + window) * out_rate);
    SwrContext* swr = nullptr;
    AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
    std::int64_t base = -1;  // the output time line's position of out[0]
    out.clear();
    AVPacket* pkt = av_packet_alloc();
    AVFrame* frame = av_frame_alloc();
    const auto convert = [&](const std::uint8_t** in, int n) {
        const int room = swr_get_out_samples(swr, n);
        const std::size_t at = out.size();
        out.resize(at + static_cast<std::size_t>(std::max(room, 0)));
        auto* dst = reinterpret_cast<std::uint8_t*>(out.data() + at);
        const int got = swr_convert(swr, &dst, room, in, n);
        check(got, "swr_convert");
        out.resize(at + static_cast<std::size_t>(got));
        if (first > base) {  // drop what is before the window as it comes
            const auto drop =
                std::min<std::int64_t>(first - base, static_cast<std::int64_t>(out.size()));
            out.erase(out.begin(), out.begin() + drop);
            base += drop;
        }
    };
    const auto take = [&] {
        while (avcodec_receive_frame(codec, frame) >= 0) {
            if (swr == nullptr) {
                check(swr_alloc_set_opts2(&swr, &mono, AV_SAMPLE_FMT_FLTP, out_rate,
                                          &frame->ch_layout,
                                          static_cast<AVSampleFormat>(frame->format),
                                          frame->sample_rate, 0, nullptr),
                      "swr_alloc_set_opts2");
                check(swr_init(swr), "swr_init");
                const std::int64_t pts = frame->best_effort_timestamp;
                base =
                    pts != AV_NOPTS_VALUE
                        ? std::llround(static_cast<double>(pts) * av_q2d(st->time_base) * out_rate)
                        : 0;
            }
            convert(const_cast<const std::uint8_t**>(frame->extended_data), frame->nb_samples);
        }
    };
    const auto full = [&] {
        return base >= 0 && base + static_cast<std::int64_t>(out.size()) >= last;
    };
    while (!full() && av_read_frame(fmt, pkt) >= 0) {
        if (pkt->stream_index == index) {
            check(avcodec_send_packet(codec, pkt), "avcodec_send_packet");
            take();
        }
        av_packet_unref(pkt);
    }
    if (!full()) {
        avcodec_send_packet(codec, nullptr);
        take();
        if (swr != nullptr) convert(nullptr, 0);
    }
    av_frame_free(&frame);
    av_packet_free(&pkt);
    swr_free(&swr);
    const auto n = std::min<std::int64_t>(static_cast<std::int64_t>(out.size()), last - base);
    out.resize(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
    return static_cast<std::int64_t>(out.size());
}

struct rate {
    double windows_per_s = 0;
    std::int64_t samples = 0;  ///< samples delivered in all
};

/// `threads` std::threads taking samples from one counter, each loading them with `load(sample,
/// scratch)` (which returns the samples it delivered).
template <typename Load>
rate threads_rate(const std::vector<sample>& samples, int threads, Load load) {
    std::atomic<std::size_t> next{0};
    std::atomic<std::int64_t> total{0};
    const auto t0 = clock_type::now();
    std::vector<std::thread> workers;
    for (int w = 0; w < threads; ++w) {
        workers.emplace_back([&] {
            std::vector<float> scratch;
            for (std::size_t i; (i = next++) < samples.size();) total += load(samples[i], scratch);
        });
    }
    for (auto& w : workers) w.join();
    return {static_cast<double>(samples.size()) / seconds_since(t0), total.load()};
}

rate hand_rate(const std::vector<sample>& samples, double window, int threads) {
    return threads_rate(samples, threads, [window](const sample& s, std::vector<float>& out) {
        return hand_load(s, window, out);
    });
}

/// decode_audio called by hand on `threads` std::threads (no pipeline): the op's own cost.
rate direct_rate(const std::vector<sample>& samples, double window, int threads) {
    return threads_rate(samples, threads, [window](const sample& s, std::vector<float>&) {
        return ferry::ops::decode_audio(s.path, {.sample_rate = out_rate,
                                                 .channels = 1,
                                                 .start = s.start,
                                                 .end = s.start + window})
            .samples();
    });
}

rate ferry_rate(const std::vector<sample>& samples, double window, int concurrency) {
    const auto t0 = clock_type::now();
    auto pipe = ferry::from(samples)
                    .map(
                        [window](const sample& s) {
                            return ferry::ops::decode_audio(s.path, {.sample_rate = out_rate,
                                                                     .channels = 1,
                                                                     .start = s.start,
                                                                     .end = s.start + window})
                                .samples();
                        },
                        {.concurrency = concurrency, .name = "decode_audio", .executor = ferry::io})
                    .build({.threads = 1});
    std::int64_t total = 0;
    std::size_t windows = 0;
    for (std::int64_t n : pipe) {
        total += n;
        ++windows;
    }
    if (windows != samples.size()) {
        std::cerr << "audio_loading: ferry delivered " << windows << " of " << samples.size()
                  << '\n';
        std::exit(1);
    }
    return {static_cast<double>(windows) / seconds_since(t0), total};
}

}  // namespace

int main(int argc, char** argv) {
    config c;
    ferry_perf::options opt(argc, argv,
                            "usage: audio_loading [--files N] [--seconds S] [--window S] "
                            "[--samples N] [--reps R] [--concurrency 1,2] [--dir DIR]");
    while (opt.next()) {
        const std::string_view a = opt.name();
        if (a == "--files") {
            c.files = opt.integer();
        } else if (a == "--seconds") {
            c.seconds = opt.integer();
        } else if (a == "--window") {
            c.window = opt.number();
        } else if (a == "--samples") {
            c.samples = opt.integer();
        } else if (a == "--reps") {
            c.reps = opt.integer();
        } else if (a == "--concurrency") {
            c.concurrency = opt.list<int>();
        } else if (a == "--dir") {
            c.dir = opt.value();
        } else {
            opt.unknown();
        }
    }
    std::printf(
        "windows of %.1f s from a random start, resampled to %d Hz mono float: %d samples of %d "
        "files (%d s, 44.1 kHz stereo), median of %d, %u CPUs\n\n",
        c.window, out_rate, c.samples, c.files, c.seconds, c.reps,
        std::thread::hardware_concurrency());
    std::printf(
        "| codec | concurrency | ferry windows/s | decode_audio alone | hand loop windows/s | "
        "ferry ÷ hand | CPU ms per window: ferry, hand |\n"
        "|---|---:|---:|---:|---:|---:|---:|\n");
    std::mt19937 rng(11);
    std::uniform_real_distribution<double> start(0.0, c.seconds - c.window - 0.5);
    for (const auto& codec : codecs) {
        const auto paths = audio_set(c, codec);
        std::vector<sample> samples;
        for (int i = 0; i < c.samples; ++i) {
            samples.push_back({paths[static_cast<std::size_t>(i) % paths.size()], start(rng)});
        }
        (void)ferry_rate(samples, c.window, 2);  // warm-up: code, tables, page cache
        for (int t : c.concurrency) {
            std::vector<double> f, d, h, ratio, fcpu, hcpu;
            for (int rep = 0; rep < c.reps; ++rep) {
                const double cpu0 = cpu_seconds();
                const rate fr = ferry_rate(samples, c.window, t);
                const double cpu1 = cpu_seconds();
                const rate hr = hand_rate(samples, c.window, t);
                const double cpu2 = cpu_seconds();
                const auto n = static_cast<double>(samples.size());
                fcpu.push_back(1e3 * (cpu1 - cpu0) / n);
                hcpu.push_back(1e3 * (cpu2 - cpu1) / n);
                const auto differ = std::llabs(fr.samples - hr.samples);
                if (differ > static_cast<long long>(samples.size())) {
                    std::cerr << "audio_loading: " << codec.name << ": ferry delivered "
                              << fr.samples << " samples, the hand loop " << hr.samples << '\n';
                    return 1;
                }
                f.push_back(fr.windows_per_s);
                d.push_back(direct_rate(samples, c.window, t).windows_per_s);
                h.push_back(hr.windows_per_s);
                ratio.push_back(fr.windows_per_s / hr.windows_per_s);
            }
            std::printf("| %s | %d | %.1f | %.1f | %.1f | **%.2f** | %.1f, %.1f |\n", codec.name, t,
                        median(f), median(d), median(h), median(ratio), median(fcpu), median(hcpu));
            std::fflush(stdout);
        }
    }
    return 0;
}
