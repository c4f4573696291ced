// SPDX-License-Identifier: Apache-2.0
/// \file
/// Test media for the video and audio tests, generated with the `ffmpeg` CLI.
#include "video_support.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <numbers>

#include "../support/temp_folder.hpp"

namespace video_test {
namespace {

/// The run's temporary folder, removed when the process ends.
const std::filesystem::path& dir() {
    static const ferry_test::temp_folder d("ferry-video-test");
    return d.path();
}

std::mutex cache_mutex;
std::map<std::string, std::filesystem::path> cache;

constexpr int digits = 4;
constexpr int base = 6;

std::uint8_t level(int digit) {
    return static_cast<std::uint8_t>(30 + 40 * digit);
}

/// Frame `i`: the top three quarters are four gray bars (digit k of `i` in base 6 as level
/// 30 + 40 d), the bottom quarter red. Uniform areas survive any codec at any sane quality.
std::vector<std::uint8_t> draw(int i, int w, int h) {
    std::vector<std::uint8_t> rgb(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * 3);
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            std::uint8_t* p = &rgb[(static_cast<std::size_t>(y) * static_cast<std::size_t>(w) +
                                    static_cast<std::size_t>(x)) *
                                   3];
            if (y >= h * 3 / 4) {
                p[0] = 200;
                p[1] = 30;
                p[2] = 30;
                continue;
            }
            const int bar = x * digits / w;
            int d = i;
            for (int k = 0; k < bar; ++k) d /= base;
            p[0] = p[1] = p[2] = level(d % base);
        }
    }
    return rgb;
}

void run(const std::string& cmd) {
    const int rc = std::system(cmd.c_str());
    BOOST_TEST_REQUIRE(rc == 0, "command failed (" << rc << "): " << cmd);
}

}  // namespace

std::filesystem::path scratch(const std::string& name) {
    return dir() / name;
}

std::vector<coded_file> b_frame_matrix(int gop) {
    const std::string g = std::to_string(gop);
    return {
        {"mp4/h264, B-pyramid", ".mp4",
         "-c:v libx264 -preset veryfast -bf 3 -x264-params b-pyramid=2 -g " + g +
             " -pix_fmt yuv420p"},
        {"mkv/h264, open GOPs", ".mkv",
         "-c:v libx264 -preset veryfast -bf 3 -x264-params b-pyramid=2:open-gop=1:keyint=" + g +
             ":scenecut=0:b-adapt=0 -pix_fmt yuv420p"},
        {"mp4/hevc, B-pyramid", ".mp4",
         "-c:v libx265 -preset veryfast -x265-params log-level=none:bframes=3:b-pyramid=1 -g " + g +
             " -pix_fmt yuv420p"},
        {"mp4/mpeg4, B-frames", ".mp4", "-c:v mpeg4 -q:v 4 -bf 2 -g " + g},
        {"webm/vp9", ".webm",
         "-c:v libvpx-vp9 -b:v 300k -g " + g + " -deadline realtime -cpu-used 8"},
        {"avi/mpeg4, B-frames (dts only)", ".avi", "-c:v mpeg4 -q:v 4 -bf 2 -g " + g, false},
    };
}

std::filesystem::path matrix_file(const std::string& prefix, std::size_t i,
                                  const std::vector<coded_file>& files) {
    return scratch(prefix + std::to_string(i) + files[i].ext);
}

std::filesystem::path matrix_rgb(const std::string& prefix, std::size_t i) {
    return scratch(prefix + std::to_string(i) + ".rgb");
}

void make_matrix(const std::string& prefix, const std::vector<coded_file>& files, int length,
                 const std::function<std::string(std::size_t)>& more) {
    std::vector<std::string> encode;
    for (std::size_t i = 0; i < files.size(); ++i) {
        encode.push_back(
            "ffmpeg -hide_banner -loglevel error -nostdin -y -f lavfi -i "
            "testsrc2=size=64x48:rate=25 -frames:v " +
            std::to_string(length) + " " + files[i].codec + " " +
            matrix_file(prefix, i, files).string());
    }
    run_all(encode);
    std::vector<std::string> decode;
    for (std::size_t i = 0; i < files.size(); ++i) {
        decode.push_back("ffmpeg -hide_banner -loglevel quiet -nostdin -i " +
                         matrix_file(prefix, i, files).string() +
                         " -map 0:v:0 -vsync passthrough -sws_flags bilinear -f rawvideo "
                         "-pix_fmt rgb24 -y " +
                         matrix_rgb(prefix, i).string());
        if (more) decode.push_back(more(i));
    }
    run_all(decode);
}

fifo_feed::fifo_feed(const std::filesystem::path& path, const std::filesystem::path& fifo)
    : fifo_(fifo) {
    std::filesystem::remove(fifo_);
    BOOST_TEST_REQUIRE(::mkfifo(fifo_.c_str(), 0600) == 0);
    writer_ = std::thread([bytes = read_all(path), f = fifo_] {
        sigset_t pipe_signal;
        sigemptyset(&pipe_signal);
        sigaddset(&pipe_signal, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
        const int fd = ::open(f.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) return;
        std::size_t at = 0;
        while (at < bytes.size()) {
            const ssize_t n = ::write(fd, bytes.span().data() + at, bytes.size() - at);
            if (n <= 0) break;
            at += static_cast<std::size_t>(n);
        }
        ::close(fd);
    });
}

void fifo_feed::finish() {
    if (!writer_.joinable()) return;
    // A reader that never opened the FIFO leaves the writer in open(): one opens it now.
    const int fd = ::open(fifo_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) ::close(fd);
    writer_.join();
    std::filesystem::remove(fifo_);
}

void run_all(const std::vector<std::string>& commands) {
    // Each batch gets its own script and failure list, so that one batch's failures are never
    // read as another's.
    static int batch = 0;
    const std::string name = "batch" + std::to_string(batch++);
    const auto failed_path = dir() / (name + "-failed");
    std::string script;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        script += "( " + commands[i] + " || echo " + std::to_string(i) + " >> " +
                  failed_path.string() + " ) &\n";
    }
    script += "wait\n";
    const auto path = dir() / (name + ".sh");
    std::ofstream(path) << script;
    const int rc = std::system(("sh " + path.string()).c_str());
    BOOST_TEST_REQUIRE(rc == 0);
    std::ifstream failed(failed_path);
    for (std::size_t i; failed >> i;) BOOST_TEST_REQUIRE(false, "command failed: " << commands[i]);
}

std::vector<std::uint8_t> bytes_of(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::uint64_t stage_counter(const ferry::pipeline_stats& stats, const std::string& stage,
                            const std::string& name) {
    for (const auto& st : stats.stages) {
        if (st.name != stage) continue;
        for (const auto& [key, n] : st.counters) {
            if (key == name) return n;
        }
    }
    return 0;
}

std::filesystem::path video_file(const video_spec& s) {
    const std::string key = s.codec + s.ext + "-" + std::to_string(s.frames) + "-" +
                            std::to_string(s.width) + "x" + std::to_string(s.height) + "-" +
                            std::to_string(s.fps) + "-" + std::to_string(s.gop) +
                            (s.with_audio ? "-a" : "") + "-" + s.extra;
    std::lock_guard lock(cache_mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;

    const auto path = dir() / ("v" + std::to_string(cache.size()) + s.ext);
    std::string cmd =
        "ffmpeg -hide_banner -loglevel error -nostdin -y -f rawvideo -pix_fmt rgb24 -s " +
        std::to_string(s.width) + "x" + std::to_string(s.height) + " -r " + std::to_string(s.fps) +
        " -i -";
    if (s.with_audio) {
        cmd += " -f lavfi -i sine=frequency=440:sample_rate=44100:duration=" +
               std::to_string(static_cast<double>(s.frames) / s.fps);
    }
    cmd += " -c:v " + s.codec + " -g " + std::to_string(s.gop) + " -pix_fmt yuv420p";
    if (s.codec == "libx264") cmd += " -preset veryfast -bf 2 -crf 18";
    if (s.codec == "libvpx-vp9") cmd += " -deadline realtime -cpu-used 8 -b:v 1M -lag-in-frames 0";
    if (s.codec == "mpeg4") cmd += " -q:v 2 -bf 1";
    if (s.with_audio) cmd += " -c:a aac -b:a 96k";
    cmd += " " + s.extra + " " + path.string();

    FILE* pipe = ::popen(cmd.c_str(), "w");
    BOOST_TEST_REQUIRE(pipe != nullptr, "cannot run: " << cmd);
    for (int i = 0; i < s.frames; ++i) {
        const auto frame = draw(i, s.width, s.height);
        std::fwrite(frame.data(), 1, frame.size(), pipe);
    }
    const int rc = ::pclose(pipe);
    BOOST_TEST_REQUIRE(rc == 0, "ffmpeg failed (" << rc << "): " << cmd);
    cache.emplace(key, path);
    return path;
}

namespace {

/// Sets the little-endian 32-bit field `offset` bytes after the first `chunk` tag of `data`.
void set_chunk_field(std::vector<char>& data, const std::string& chunk, std::size_t offset,
                     std::uint32_t value) {
    const auto at = std::search(data.begin(), data.end(), chunk.begin(), chunk.end());
    BOOST_TEST_REQUIRE((at != data.end()), "no " << chunk << " chunk");
    const auto pos = static_cast<std::size_t>(at - data.begin()) + offset;
    BOOST_TEST_REQUIRE(pos + 4 <= data.size());
    for (std::size_t i = 0; i < 4; ++i)
        data[pos + i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

}  // namespace

std::filesystem::path with_claimed_frames(const std::filesystem::path& avi, std::uint32_t frames,
                                          const std::string& name) {
    std::ifstream in(avi, std::ios::binary);
    BOOST_TEST_REQUIRE(static_cast<bool>(in), "cannot open " << avi);
    std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // The tag, its 4-byte size, then the field: dwTotalFrames is avih's fifth field, dwLength
    // strh's ninth.
    set_chunk_field(data, "avih", 8 + 16, frames);
    set_chunk_field(data, "strh", 8 + 32, frames);
    const auto path = dir() / name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    BOOST_TEST_REQUIRE(static_cast<bool>(out), "cannot write " << path);
    return path;
}

std::filesystem::path tone_file(const std::vector<int>& freqs, int rate, double seconds,
                                const std::string& codec, const std::string& ext) {
    std::string key = codec + ext + std::to_string(rate) + "-" + std::to_string(seconds);
    for (int f : freqs) key += "-" + std::to_string(f);
    std::lock_guard lock(cache_mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;

    const auto path = dir() / ("a" + std::to_string(cache.size()) + ext);
    std::string cmd = "ffmpeg -hide_banner -loglevel error -nostdin -y";
    for (int f : freqs) {
        cmd += " -f lavfi -i sine=frequency=" + std::to_string(f) +
               ":sample_rate=" + std::to_string(rate) + ":duration=" + std::to_string(seconds);
    }
    if (freqs.size() > 1) {
        cmd += " -filter_complex \"";
        for (std::size_t i = 0; i < freqs.size(); ++i) cmd += "[" + std::to_string(i) + ":a]";
        cmd += "amerge=inputs=" + std::to_string(freqs.size()) + "\"";
    }
    cmd += " -c:a " + codec + " " + path.string();
    run(cmd);
    cache.emplace(key, path);
    return path;
}

ferry::bytes read_all(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    BOOST_TEST_REQUIRE(static_cast<bool>(in), "cannot open " << path);
    std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return ferry::bytes(std::as_bytes(std::span<const char>(data)));
}

int frame_index(const ferry::video_clip& clip, int t) {
    const int w = clip.width();
    const int h = clip.height();
    const int y = h * 3 / 8;
    int index = 0;
    int scale = 1;
    for (int k = 0; k < digits; ++k, scale *= base) {
        const int x = (2 * k + 1) * w / (2 * digits);
        double sum = 0;
        int n = 0;
        for (int dy = -1; dy <= 1; ++dy) {
            for (int dx = -1; dx <= 1; ++dx) {
                sum += clip.at(t, x + dx, y + dy, 0);
                ++n;
            }
        }
        const double v = sum / n;
        const long d = std::lround((v - 30.0) / 40.0);
        if (d < 0 || d >= base || std::abs(v - level(static_cast<int>(d))) > 12.0) return -1;
        index += static_cast<int>(d) * scale;
    }
    return index;
}

std::vector<int> frame_indices(const ferry::video_clip& clip) {
    std::vector<int> out;
    for (int t = 0; t < clip.frames(); ++t) out.push_back(frame_index(clip, t));
    return out;
}

std::vector<int> iota(int from, int count, int step) {
    std::vector<int> v;
    for (int i = 0; i < count; ++i) v.push_back(from + i * step);
    return v;
}

double tone_frequency(std::span<const float> samples, int sample_rate) {
    // Rising zero crossings, located to a fraction of a sample; the frequency is the number of
    // whole periods between the first and the last over the time between them. Only the middle
    // 80% counts: lossy codecs' start-up and end padding are near-silent noise whose crossings
    // are not the tone's.
    double first = -1;
    double last = -1;
    int periods = -1;
    for (std::size_t i = samples.size() / 10 + 1; i < samples.size() * 9 / 10; ++i) {
        if (samples[i - 1] < 0.0F && samples[i] >= 0.0F) {
            const double at = static_cast<double>(i - 1) +
                              samples[i - 1] / static_cast<double>(samples[i - 1] - samples[i]);
            if (first < 0) first = at;
            last = at;
            ++periods;
        }
    }
    if (periods <= 0) return 0.0;
    return periods * sample_rate / (last - first);
}

double rms(std::span<const float> samples) {
    double sum = 0;
    for (float s : samples) sum += static_cast<double>(s) * s;
    return samples.empty() ? 0.0 : std::sqrt(sum / static_cast<double>(samples.size()));
}

std::vector<double> probed_times_in(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::vector<double> out;
    for (std::string line; std::getline(in, line);) {
        const auto begin = line.find_first_not_of(" \t,");
        if (begin == std::string::npos) continue;
        const std::string value = line.substr(begin, line.find_first_of(" \t,", begin) - begin);
        out.push_back(value == "N/A" ? std::nan("") : std::stod(value));
    }
    return out;
}

}  // namespace video_test
