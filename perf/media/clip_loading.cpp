// SPDX-License-Identifier: Apache-2.0
/// \file
/// clip_loading: clips per second of video training's usual sample (16 frames at stride 2 from a
/// random start, resized to 112x112 RGB) through ferry, against a hand-written FFmpeg loop making
/// the same calls on as many threads, at concurrency 1, 2, 4, 8 (--concurrency); and whether
/// FFmpeg's process-wide codec lock shows (SPDL found it the biggest lever for video loading).
///
/// The clips: perf/common/video_set.hpp (720p H.264, a keyframe every 60 frames, B-frames), read
/// from the page cache. Every variant loads the same list of (clip, start) samples, the starts
/// drawn once (seeded) over each clip's length:
///
///  * `ferry`         `from(samples).map(load_video {.demux.start, .decode = {clip(16, 2),
///                    112x112}}, {.concurrency = c, .executor = io})`: c threads of its own, one
///                    decoder thread per clip, a demuxer and decoder opened per clip; frames no
///                    selected frame needs are not decoded (`skip_nonref`, the default);
///  * `ferry, every frame` the same with `.skip_nonref = false`: every frame from the keyframe
///                    before the window decoded, as the hand loop does (the lever alone);
///  * `hand, per clip` c std::threads taking samples from one counter, each making the calls a
///                    user writes against libav directly: avformat_open_input,
///                    avformat_find_stream_info, av_seek_frame(BACKWARD), avcodec_open2 (one
///                    thread), send/receive, sws_scale of every second frame from the start;
///  * `hand, reused`  the same, but each thread keeps its decoder and scaler from clip to clip
///                    (avcodec_flush_buffers instead of a new avcodec_open2): what "contexts
///                    reused per thread, avcodec_open2 off the hot path" buys.
///
/// A second table, several clips per pass: `--batches` loads of 4 random clips of a video each,
/// `load_video` with `clips(4, 16, 2)` in a stage whose callable takes its item (one demuxer
/// reading the whole file for its frame count, one decoder, one pass in time order), against the
/// same 4 clips (the starts a warm-up run drew: they depend on the item alone) loaded by 4
/// separate `clip(16, 2)` loads (`.demux.start` at each start's time), in the same process,
/// alternating; the warm-up checks that both give the same bytes.
///
/// A third table (`levers`) measures the levers alone, each in alternating runs against ferry
/// without it: `snap_to_keyframe` (clip starts moved back to the keyframe before them: no frame
/// before the window decoded), and decoder threads chosen by ferry (`threads = 0`: the
/// pipeline's threads over the stage's concurrency) against one decoder thread, on a pipeline of
/// every CPU's threads; with one clip's latency at concurrency 1.
///
/// The hand loop also times its avcodec_open2 calls: under a process-wide lock their wall time
/// would grow with the threads calling it. Frames decoded per clip: ferry's from its stage's
/// `frames decoded` counter, the hand loop's from the frames avcodec_receive_frame returned.
/// Each repetition runs every variant once, in turn; the table gives medians.
///
/// Usage: clip_loading [--clips N] [--seconds S] [--samples N] [--batches N] [--reps R]
///                    [--concurrency 1,2,4,8] [--tables single,batch,levers] [--dir DIR]

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/int_list.hpp"
#include "common/video_set.hpp"
#include "ferry/ferry.hpp"
#include "ferry/video.hpp"

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

constexpr int frames_per_clip = 16;
constexpr int stride = 2;
constexpr int side = 112;
constexpr int clips_per_pass = 4;

struct config {
    int clips = 4;
    int seconds = 10;
    int samples = 64;  ///< clip loads per run
    int batches = 16;  ///< loads of `clips_per_pass` clips per run
    int reps = 3;
    bool single = true;  ///< the table of one clip per load
    bool batch = true;   ///< the table of several clips per pass
    bool levers = true;  ///< the table of the levers alone (snap_to_keyframe, decoder threads)
    std::vector<int> concurrency{1, 2, 4, 8};
    fs::path dir = fs::temp_directory_path() / "ferry-video-decode";
};

struct sample {
    fs::path path;
    double start = 0;
};

/// Several clips of one video: their first frames.
struct batch_sample {
    fs::path path;
    std::vector<std::int64_t> starts;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void check(int ret, const char* what) {
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

struct hand_result {
    double clips_per_s = 0;
    double open_ms = 0;           ///< mean wall time of one avcodec_open2
    double decoded_per_clip = 0;  ///< frames decoded per clip
};

hand_result hand_rate(const std::vector<sample>& samples, int threads, bool reuse) {
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

struct ferry_result {
    double clips_per_s = 0;
    double decoded_per_clip = 0;  ///< the stage's `frames decoded` counter per clip
    double threads_per_clip = 0;  ///< the stage's `decoder threads` counter per clip
};

/// How ferry loads: the levers, each off or on.
struct ferry_way {
    bool skip_nonref = true;
    bool snap = false;         ///< demux_options::snap_to_keyframe
    int threads = 0;           ///< video_decode_options::threads (0: ferry chooses)
    int pipeline_threads = 1;  ///< pipeline_options::threads
};

/// ferry's clips per second loading `samples` the given way.
ferry_result ferry_rate(const std::vector<sample>& samples, int concurrency, ferry_way way) {
    const auto t0 = clock_type::now();
    auto pipe =
        ferry::from(samples)
            .map(
                [way](const sample& s) {
                    return ferry::ops::load_video(
                               s.path, {.demux = {.start = s.start, .snap_to_keyframe = way.snap},
                                        .decode = {.select = ferry::frame_selection::clip(
                                                       frames_per_clip, stride),
                                                   .resize = {side, side},
                                                   .threads = way.threads,
                                                   .skip_nonref = way.skip_nonref}})
                        .frames();
                },
                {.concurrency = concurrency, .name = "load_video", .executor = ferry::io})
            .build({.threads = way.pipeline_threads});
    std::size_t clips = 0;
    for (int n : pipe) {
        if (n != frames_per_clip) {
            std::cerr << "clip_loading: ferry delivered a clip of " << n << " frames\n";
            std::exit(1);
        }
        ++clips;
    }
    if (clips != samples.size()) {
        std::cerr << "clip_loading: ferry delivered " << clips << " of " << samples.size() << '\n';
        std::exit(1);
    }
    const double wall = seconds_since(t0);
    std::uint64_t decoded = 0;
    std::uint64_t threads = 0;
    for (const auto& st : pipe.stats().stages) {
        if (st.name != "load_video") continue;
        for (const auto& [name, n] : st.counters) {
            if (name == "frames decoded") decoded = n;
            if (name == "decoder threads") threads = n;
        }
    }
    return {static_cast<double>(clips) / wall,
            static_cast<double>(decoded) / static_cast<double>(clips),
            static_cast<double>(threads) / static_cast<double>(clips)};
}

/// `clips_per_pass` random clips (`clips(4, 16, 2)`), starts drawn from the item's numbers.
ferry::video_options batch_options() {
    return {
        .decode = {.select = ferry::frame_selection::clips(clips_per_pass, frames_per_clip, stride),
                   .resize = {side, side}}};
}

/// ferry's clips per second loading `clips_per_pass` random clips per `load_video` call; each
/// video's starts into `starts` (the same in every run: they depend on the item alone).
ferry_result batch_rate(const std::vector<fs::path>& videos, int concurrency,
                        std::vector<batch_sample>* starts = nullptr) {
    const auto t0 = clock_type::now();
    auto pipe = ferry::from(videos)
                    .map(
                        [](const fs::path& p, const ferry::item_info&) {
                            const auto b = ferry::ops::load_video(p, batch_options());
                            batch_sample out{p, {}};
                            for (int c = 0; c < b.clips(); ++c) {
                                out.starts.push_back(
                                    b.indices()[static_cast<std::size_t>(c * b.clip_frames())]);
                            }
                            if (b.frames() != frames_per_clip * clips_per_pass) out.starts.clear();
                            return out;
                        },
                        {.concurrency = concurrency, .name = "load_video", .executor = ferry::io})
                    .build({.threads = 1});
    std::size_t clips = 0;
    for (batch_sample& b : pipe) {
        if (b.starts.size() != clips_per_pass) {
            std::cerr << "clip_loading: ferry delivered a short batch of " << b.path << "\n";
            std::exit(1);
        }
        clips += clips_per_pass;
        if (starts != nullptr) starts->push_back(std::move(b));
    }
    const double wall = seconds_since(t0);
    std::uint64_t decoded = 0;
    const auto stats = pipe.stats();
    for (const auto& st : stats.stages) {
        if (st.name != "load_video") continue;
        for (const auto& [name, n] : st.counters) {
            if (name == "frames decoded") decoded = n;
        }
    }
    return {static_cast<double>(clips) / wall,
            static_cast<double>(decoded) / static_cast<double>(clips)};
}

/// The batches' clips as separate samples: each start's time (frame `s` of a 30 fps file that
/// starts at 0 is shown at `s / 30` s).
std::vector<sample> separate(const std::vector<batch_sample>& batches) {
    std::vector<sample> out;
    for (const auto& b : batches) {
        for (const std::int64_t s : b.starts) {
            out.push_back({b.path, static_cast<double>(s) / ferry_perf::video_fps});
        }
    }
    return out;
}

/// Exits unless the first video's batch, drawn from item 0's numbers outside a pipeline, has the
/// starts the pipeline drew, and each clip the bytes its separate load gives.
void check_same_clips(const batch_sample& b) {
    ferry::video_options o = batch_options();
    o.decode.select =
        ferry::frame_selection::clips(clips_per_pass, frames_per_clip, stride, ferry::item_info{});
    const auto batch = ferry::ops::load_video(b.path, o);
    const std::vector<sample> alone = separate({b});
    for (std::size_t c = 0; c < alone.size(); ++c) {
        const auto clip = ferry::ops::load_video(
            b.path, {.demux = {.start = alone[c].start},
                     .decode = {.select = ferry::frame_selection::clip(frames_per_clip, stride),
                                .resize = {side, side}}});
        const auto from = batch.frame(static_cast<int>(c) * frames_per_clip);
        if (batch.indices()[c * frames_per_clip] != b.starts[c] ||
            clip.data().size() != from.size() * frames_per_clip ||
            std::memcmp(clip.data().data(), from.data(), clip.data().size()) != 0) {
            std::cerr << "clip_loading: clip " << c << " of " << b.path
                      << " differs between one pass and its own load\n";
            std::exit(1);
        }
    }
}

/// The load average as `uptime` prints it.
std::string load_average() {
    double l[3] = {0, 0, 0};
    if (getloadavg(l, 3) != 3) return "?";
    char text[64];
    std::snprintf(text, sizeof text, "%.2f, %.2f, %.2f", l[0], l[1], l[2]);
    return text;
}

void batch_table(const config& c, const std::vector<fs::path>& paths) {
    std::vector<fs::path> videos;
    for (int i = 0; i < c.batches; ++i)
        videos.push_back(paths[static_cast<std::size_t>(i) % paths.size()]);
    std::vector<batch_sample> batches;  // the warm-up's starts: every run's
    (void)batch_rate(videos, 2, &batches);
    check_same_clips(batches.front());
    const std::vector<sample> alone = separate(batches);
    std::printf(
        "\n%d clips of %d frames at stride %d per video, 112x112 rgb24: %d videos (%d clips), one "
        "load_video with clips(%d, %d, %d) against %d separate clip(%d, %d) loads of the "
        "same starts, median of %d; load average %s at the start\n\n",
        clips_per_pass, frames_per_clip, stride, c.batches, c.batches * clips_per_pass,
        clips_per_pass, frames_per_clip, stride, clips_per_pass, frames_per_clip, stride, c.reps,
        load_average().c_str());
    std::printf(
        "| concurrency | one pass, clips/s | separate loads, clips/s | one pass ÷ separate | "
        "frames decoded per clip: one pass, separate |\n|---:|---:|---:|---:|---:|\n");
    for (int t : c.concurrency) {
        std::vector<double> one, sep, ratio;
        double one_decoded = 0, sep_decoded = 0;
        for (int rep = 0; rep < c.reps; ++rep) {
            const auto b = batch_rate(videos, t);
            const auto s = ferry_rate(alone, t, {.threads = 1});
            one.push_back(b.clips_per_s);
            sep.push_back(s.clips_per_s);
            ratio.push_back(b.clips_per_s / s.clips_per_s);
            one_decoded = b.decoded_per_clip;
            sep_decoded = s.decoded_per_clip;
        }
        std::printf("| %d | %.1f | %.1f | **%.2f** | %.1f, %.1f |\n", t, median(one), median(sep),
                    median(ratio), one_decoded, sep_decoded);
        std::fflush(stdout);
    }
    std::printf("\nload average %s at the end\n", load_average().c_str());
}

/// The levers alone, each against ferry without it in alternating runs: `snap_to_keyframe`
/// (one pipeline thread, as the main table), and decoder threads chosen by ferry against one
/// decoder thread, both on a pipeline of every CPU's threads.
void levers_table(const std::vector<sample>& samples, const config& c) {
    const int cpus = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    std::printf(
        "\nlevers alone (alternating runs, medians of %d): snap_to_keyframe on a 1-thread "
        "pipeline; decoder threads on a %d-thread pipeline\n\n",
        c.reps, cpus);
    std::printf(
        "| concurrency | ferry clips/s | + snap_to_keyframe | snap alone | frames decoded per clip "
        "(ferry, snap) | 1 decoder thread, clips/s | threads chosen, clips/s | threads alone | "
        "decoder threads chosen | one clip, ms (1 thread, chosen) |\n"
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int t : c.concurrency) {
        std::vector<double> plain, snap, snap_ratio, one, chosen, thread_ratio;
        double plain_decoded = 0, snap_decoded = 0, threads_chosen = 0;
        for (int rep = 0; rep < c.reps; ++rep) {
            const auto p = ferry_rate(samples, t, {});
            const auto s = ferry_rate(samples, t, {.snap = true});
            plain.push_back(p.clips_per_s);
            snap.push_back(s.clips_per_s);
            snap_ratio.push_back(s.clips_per_s / p.clips_per_s);
            plain_decoded = p.decoded_per_clip;
            snap_decoded = s.decoded_per_clip;
            const auto o = ferry_rate(samples, t, {.threads = 1, .pipeline_threads = cpus});
            const auto a = ferry_rate(samples, t, {.threads = 0, .pipeline_threads = cpus});
            one.push_back(o.clips_per_s);
            chosen.push_back(a.clips_per_s);
            thread_ratio.push_back(a.clips_per_s / o.clips_per_s);
            threads_chosen = a.threads_per_clip;
        }
        std::printf(
            "| %d | %.1f | %.1f | **%.2f** | %.1f, %.1f | %.1f | %.1f | **%.2f** | %.1f | %s |\n",
            t, median(plain), median(snap), median(snap_ratio), plain_decoded, snap_decoded,
            median(one), median(chosen), median(thread_ratio), threads_chosen,
            t == 1 ? (std::to_string(std::lround(1e3 / median(one))) + ", " +
                      std::to_string(std::lround(1e3 / median(chosen))))
                         .c_str()
                   : "");
        std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
    config c;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const std::string v = argv[i + 1];
        if (a == "--clips") {
            c.clips = std::stoi(v);
        } else if (a == "--seconds") {
            c.seconds = std::stoi(v);
        } else if (a == "--samples") {
            c.samples = std::stoi(v);
        } else if (a == "--batches") {
            c.batches = std::stoi(v);
        } else if (a == "--tables") {
            c.single = v.find("single") != std::string::npos;
            c.batch = v.find("batch") != std::string::npos;
            c.levers = v.find("levers") != std::string::npos;
        } else if (a == "--reps") {
            c.reps = std::stoi(v);
        } else if (a == "--concurrency") {
            c.concurrency = ferry_perf::parse_int_list(v);
        } else if (a == "--dir") {
            c.dir = v;
        } else {
            std::cerr
                << "usage: clip_loading [--clips N] [--seconds S] [--samples N] [--batches N] "
                   "[--reps R] [--concurrency 1,2,4,8] [--tables single,batch,levers] [--dir "
                   "DIR]\n";
            return 2;
        }
    }
    const auto paths = ferry_perf::video_set(c.dir, c.clips, c.seconds);
    if (!c.single && !c.levers) {
        if (c.batch) batch_table(c, paths);
        return 0;
    }
    // Starts over each clip's length, leaving room for the 16 frames at stride 2 (~1.1 s).
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> start(
        0.0, c.seconds - (frames_per_clip * stride + 2.0) / ferry_perf::video_fps);
    std::vector<sample> samples;
    for (int i = 0; i < c.samples; ++i) {
        samples.push_back({paths[static_cast<std::size_t>(i) % paths.size()], start(rng)});
    }
    // Warm-up: FFmpeg's code and tables, the page cache.
    (void)ferry_rate(samples, 2, {});
    (void)ferry_rate(samples, 2, {.skip_nonref = false});
    // And the clips' keyframe lists, read once per process (kept in the keyframe cache).
    if (c.levers) (void)ferry_rate(samples, 2, {.snap = true});

    if (c.single) {
        std::printf(
            "clips of %d frames at stride %d from a random start, resized to %dx%d rgb24: %d "
            "samples of %d clips (%d s, 1280x720 H.264, GOP 60), median of %d, %u CPUs\n\n",
            frames_per_clip, stride, side, side, c.samples, c.clips, c.seconds, c.reps,
            std::thread::hardware_concurrency());
        std::printf(
            "| concurrency | ferry clips/s | ferry, every frame decoded | hand loop, opened per "
            "clip "
            "| hand loop, decoder reused per thread | ferry ÷ hand (per clip) | ferry ÷ hand "
            "(reused) "
            "| skip_nonref alone (÷ every frame) | frames decoded per clip: ferry, every frame, "
            "hand "
            "| avcodec_open2, ms (hand, per clip) |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int t : c.concurrency) {
            std::vector<double> f, e, h, r, open_ms, ratio;
            double f_decoded = 0, e_decoded = 0, h_decoded = 0;  // the same in every repetition
            for (int rep = 0; rep < c.reps; ++rep) {
                const auto skipping = ferry_rate(samples, t, {.threads = 1});
                f.push_back(skipping.clips_per_s);
                f_decoded = skipping.decoded_per_clip;
                const auto every = ferry_rate(samples, t, {.skip_nonref = false, .threads = 1});
                e.push_back(every.clips_per_s);
                e_decoded = every.decoded_per_clip;
                ratio.push_back(skipping.clips_per_s / every.clips_per_s);
                const auto per_clip = hand_rate(samples, t, false);
                h.push_back(per_clip.clips_per_s);
                open_ms.push_back(per_clip.open_ms);
                h_decoded = per_clip.decoded_per_clip;
                r.push_back(hand_rate(samples, t, true).clips_per_s);
            }
            std::printf(
                "| %d | %.1f | %.1f | %.1f | %.1f | **%.2f** | %.2f | %.2f | %.1f, %.1f, %.1f | "
                "%.2f "
                "|\n",
                t, median(f), median(e), median(h), median(r), median(f) / median(h),
                median(f) / median(r), median(ratio), f_decoded, e_decoded, h_decoded,
                median(open_ms));
            std::fflush(stdout);
        }
    }
    if (c.levers) levers_table(samples, c);
    if (c.batch) batch_table(c, paths);
    return 0;
}
