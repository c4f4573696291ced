// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry-probe: how fast can ferry load this dataset, and what holds it back?
///
/// Point it at a folder of images (searched recursively) or a text file listing them, one per
/// line: paths, or URLs (http://, https://, file://; read with ferry::ops::read_url where ferry
/// was built with ferry::http), mixed as you like. It builds the loading pipeline a trainer
/// would use
///
///     read_file / read_url (I/O threads) -> decode_image (+ resize) -> batch -> collate
///
/// and runs it for a few seconds (or a number of images) under several concurrency settings,
/// the way SPDL's profile_pipeline does: the decode concurrency from 1 up to twice the thread
/// count, and a couple of read concurrencies. It prints images/s and MB/s for each setting, the
/// best one, its per-stage stats table with the bottleneck named, and what the sweep suggests.
///
///   ferry-probe DIR|LIST [--seconds 3] [--items N] [--threads N] [--resize 224x224]
///                        [--decode 1,2,4] [--read 2,8] [--batch 32] [--json]

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ferry/ferry.hpp"
#include "ferry/image.hpp"
#ifdef FERRY_PROBE_VIDEO
#include "ferry/video.hpp"
#endif
#ifdef FERRY_PROBE_HTTP
#include "ferry/http.hpp"
#endif

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

namespace {

enum class media { image, video, audio, other };

media kind_of(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".webp" || ext == ".bmp") {
        return media::image;
    }
    if (ext == ".mp4" || ext == ".mkv" || ext == ".webm" || ext == ".avi" || ext == ".mov") {
        return media::video;
    }
    if (ext == ".wav" || ext == ".flac" || ext == ".mp3" || ext == ".ogg" || ext == ".opus" ||
        ext == ".m4a" || ext == ".aac") {
        return media::audio;
    }
    return media::other;
}

/// Whether a list entry is a URL (http://, https://, file://; any case) rather than a path.
bool is_url(std::string_view s) {
    const auto starts_with = [s](std::string_view scheme) {
        return s.size() > scheme.size() &&
               std::equal(scheme.begin(), scheme.end(), s.begin(), [](char a, char b) {
                   return a == std::tolower(static_cast<unsigned char>(b));
               });
    };
    return starts_with("http://") || starts_with("https://") || starts_with("file://");
}

/// The media kind of a list entry: a URL's by the extension of its path (query and fragment
/// dropped).
media kind_of_entry(const std::string& entry) {
    if (!is_url(entry)) return kind_of(entry);
    return kind_of(fs::path(entry.substr(0, entry.find_first_of("?#"))));
}

const char* name_of(media m) {
    switch (m) {
        case media::image:
            return "images";
        case media::video:
            return "videos";
        case media::audio:
            return "audio files";
        case media::other:
            break;
    }
    return "files";
}

/// The files of the kind most of them are (images, videos or audio); or a list file's entries
/// (paths and URLs), of the kind its first entry is.
std::vector<std::string> find_inputs(const fs::path& where, media& kind) {
    std::vector<std::string> out;
    if (fs::is_directory(where)) {
        std::vector<fs::path> found[3];
        for (const auto& e : fs::recursive_directory_iterator(
                 where, fs::directory_options::skip_permission_denied)) {
            const media k = e.is_regular_file() ? kind_of(e.path()) : media::other;
            if (k != media::other) found[static_cast<int>(k)].push_back(e.path());
        }
        int most = 0;
        for (int k = 1; k < 3; ++k) {
            if (found[k].size() > found[most].size()) most = k;
        }
        kind = static_cast<media>(most);
        std::sort(found[most].begin(), found[most].end());
        for (const fs::path& p : found[most]) out.push_back(p.string());
    } else if (fs::is_regular_file(where)) {
        std::ifstream in(where);
        std::string line;
        while (std::getline(in, line)) {
            // Lists written on Windows or by hand: no trailing '\r' or blanks.
            while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
                line.pop_back();
            }
            if (!line.empty() && line[0] != '#') out.push_back(line);
        }
        kind = out.empty() ? media::image : kind_of_entry(out.front());
        if (kind == media::other) kind = media::image;
    }
    return out;
}

std::vector<int> parse_list(const std::string& s) {
    std::vector<int> out;
    std::stringstream in(s);
    std::string part;
    while (std::getline(in, part, ',')) {
        const int v = std::atoi(part.c_str());
        if (v > 0) out.push_back(v);
    }
    return out;
}

/// What one setting measured.
struct trial {
    int read = 0;
    int decode = 0;
    double seconds = 0;
    std::uint64_t images = 0;  // files decoded (images, videos or audio files)
    std::uint64_t units = 0;   // frames (video) or samples (audio)
    std::uint64_t bytes = 0;
    std::uint64_t failed = 0;
    std::string stats;
    std::string bottleneck;
    [[nodiscard]] double images_per_s() const { return seconds > 0 ? images / seconds : 0; }
    [[nodiscard]] double mb_per_s() const { return seconds > 0 ? bytes / seconds / 1e6 : 0; }
    [[nodiscard]] double units_per_s() const { return seconds > 0 ? units / seconds : 0; }
};

struct settings {
    std::vector<std::string> files;  // paths and URLs
    double seconds = 3;
    std::uint64_t items = 0;
    int threads = 0;
    ferry::image_size resize{224, 224};
    int batch = 32;
    media kind = media::image;
    int frames = 8;
};

/// What the source and the read stage share with the trial: where the cycle is, how many files
/// were handed out, the bytes read.
struct source_state {
    std::size_t next = 0;
    std::uint64_t produced = 0;
    std::atomic<std::uint64_t> bytes{0};
};

/// Reads a path with read_file, a URL with read_url (main() has refused URLs where this build
/// has no ferry::http).
ferry::bytes read_entry(const std::string& entry) {
    if (!is_url(entry)) return ferry::ops::read_file(entry);
#ifdef FERRY_PROBE_HTTP
    return ferry::ops::read_url(entry);
#else
    throw std::runtime_error("ferry-probe was built without ferry::http: cannot read " + entry);
#endif
}

/// The files over and over (a generator), until `--items` is reached (or forever: the trial stops
/// at its deadline), read on `read` I/O threads.
auto read_files(const settings& s, int read, source_state& src) {
    return ferry::from([&s, &src]() -> std::optional<std::string> {
               if (s.items != 0 && src.produced == s.items) return std::nullopt;
               ++src.produced;
               const std::string& f = s.files[src.next];
               src.next = (src.next + 1) % s.files.size();
               return f;
           })
        .map(
            [&src](const std::string& f) {
                ferry::bytes b = read_entry(f);
                src.bytes.fetch_add(b.size(), std::memory_order_relaxed);
                return b;
            },
            {.concurrency = read, .name = "read", .on_error = ferry::skip, .executor = ferry::io});
}

/// Video or audio: read -> decode (returns the frames or samples it produced) -> batch.
trial run_media(const settings& s, int read, int decode) {
    trial t;
    t.read = read;
    t.decode = decode;
    source_state src;
    std::function<std::uint64_t(const ferry::bytes&)> decode_fn;
#ifdef FERRY_PROBE_VIDEO
    if (s.kind == media::video) {
        decode_fn = [&s](const ferry::bytes& b) {
            const ferry::video_clip clip = ferry::ops::load_video(
                b, {.decode = {.select = ferry::frame_selection::uniform(s.frames),
                               .resize = {s.resize.width, s.resize.height}}});
            return static_cast<std::uint64_t>(clip.frames());
        };
    } else {
        decode_fn = [](const ferry::bytes& b) {
            const ferry::audio a =
                ferry::ops::decode_audio(b, {.sample_rate = 16000, .channels = 1});
            return static_cast<std::uint64_t>(a.samples());
        };
    }
#else
    throw std::runtime_error("ferry-probe was built without ferry::video (FERRY_VIDEO=OFF)");
#endif
    auto p =
        read_files(s, read, src)
            .map(decode_fn, {.concurrency = decode, .name = "decode", .on_error = ferry::skip})
            .batch(static_cast<std::size_t>(s.batch))
            .build({.threads = s.threads, .logger = [](ferry::log_level, std::string_view) {}});
    const auto t0 = steady::now();
    const auto deadline = t0 + std::chrono::duration<double>(s.seconds);
    for (const std::vector<std::uint64_t>& batch : p) {
        t.images += batch.size();
        for (const auto u : batch) t.units += u;
        if (s.items == 0 && steady::now() >= deadline) break;
    }
    t.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    t.bytes = src.bytes.load();
    t.failed = p.failures().size();
    std::ostringstream table;
    table << p.stats();
    t.stats = table.str();
    const auto at = t.stats.find("bottleneck:");
    if (at != std::string::npos) t.bottleneck = t.stats.substr(at, t.stats.find('\n', at) - at);
    return t;
}

trial run(const settings& s, int read, int decode) {
    if (s.kind != media::image) return run_media(s, read, decode);
    trial t;
    t.read = read;
    t.decode = decode;
    source_state src;
    auto p =
        read_files(s, read, src)
            .map(
                [&](const ferry::bytes& b) {
                    return ferry::ops::decode_image(b, {.resize = s.resize});
                },
                {.concurrency = decode, .name = "decode", .on_error = ferry::skip})
            .batch(static_cast<std::size_t>(s.batch))
            .map(ferry::ops::collate, {.name = "collate", .on_error = ferry::skip})
            .build({.threads = s.threads, .logger = [](ferry::log_level, std::string_view) {}});
    const auto t0 = steady::now();
    const auto deadline = t0 + std::chrono::duration<double>(s.seconds);
    for (const ferry::tensor& batch : p) {
        t.images += static_cast<std::uint64_t>(batch.size(0));
        if (s.items == 0 && steady::now() >= deadline) break;
    }
    t.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    t.bytes = src.bytes.load();
    const ferry::pipeline_stats st = p.stats();
    t.failed = p.failures().size();
    std::ostringstream table;
    table << st;
    t.stats = table.str();
    const auto at = t.stats.find("bottleneck:");
    if (at != std::string::npos) {
        t.bottleneck = t.stats.substr(at, t.stats.find('\n', at) - at);
    }
    return t;
}

std::string json_escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (c == '\n') {
            out += "\\n";
        } else if (static_cast<unsigned char>(c) >= 0x20) {
            out += c;
        }
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ferry-probe: how fast can ferry load this dataset, and what holds it back?"};
    std::string where;
    settings s;
    std::string resize = "224x224";
    std::string decode_list;
    std::string read_list = "2,8";
    bool json = false;
    app.add_option("path", where,
                   "a folder of images, videos or audio files (searched recursively; the kind "
                   "most files are) or a list file of paths and URLs (http://, https://, "
                   "file://), one per line")
        ->required();
    app.add_option("--frames", s.frames, "frames per video, spread uniformly (videos)")
        ->check(CLI::PositiveNumber);
    app.add_option("--seconds", s.seconds, "how long each setting runs")
        ->check(CLI::PositiveNumber);
    app.add_option("--items", s.items, "images per setting instead of a time budget");
    app.add_option("--threads", s.threads, "ferry's compute threads (default: ferry's default)");
    app.add_option("--resize", resize,
                   "decode to WxH ('none' keeps the size; then batches need "
                   "equally sized images)");
    app.add_option("--decode", decode_list,
                   "decode concurrencies to try (default 1,2,.. up to twice the threads)");
    app.add_option("--read", read_list, "read (I/O) concurrencies to try");
    app.add_option("--batch", s.batch, "batch size")->check(CLI::PositiveNumber);
    app.add_flag("--json", json, "print JSON instead of tables");
    CLI11_PARSE(app, argc, argv);

    s.files = find_inputs(where, s.kind);
    if (s.files.empty()) {
        std::cerr << "ferry-probe: no images (.jpg .jpeg .png .webp .bmp), videos (.mp4 .mkv "
                     ".webm .avi .mov) or audio files (.wav .flac .mp3 .ogg .opus .m4a .aac) "
                     "found in "
                  << where << '\n';
        return 2;
    }
    const auto urls = static_cast<std::size_t>(std::count_if(
        s.files.begin(), s.files.end(), [](const std::string& f) { return is_url(f); }));
#ifndef FERRY_PROBE_HTTP
    if (urls != 0) {
        const auto first = std::find_if(s.files.begin(), s.files.end(),
                                        [](const std::string& f) { return is_url(f); });
        std::cerr << "ferry-probe: " << where << " lists " << urls << (urls == 1 ? " URL" : " URLs")
                  << " (the first: " << *first
                  << "), but this build has no ferry::http to read them (configure ferry with "
                     "-DFERRY_HTTP=ON and libcurl; Debian: libcurl4-openssl-dev)\n";
        return 2;
    }
#endif
#ifndef FERRY_PROBE_VIDEO
    if (s.kind != media::image) {
        std::cerr << "ferry-probe: this build has no ferry::video (FERRY_VIDEO=OFF); it reads "
                     "images only\n";
        return 2;
    }
#endif
    const char* unit = s.kind == media::video ? "frames" : "samples";
    if (resize == "none") {
        s.resize = {};
    } else if (std::sscanf(resize.c_str(), "%dx%d", &s.resize.width, &s.resize.height) != 2 ||
               s.resize.width <= 0 || s.resize.height <= 0) {
        std::cerr << "ferry-probe: --resize wants WxH, e.g. 224x224, or 'none'\n";
        return 2;
    }
    if (s.threads <= 0) {
        s.threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency() / 2));
    }
    std::vector<int> decodes = parse_list(decode_list);
    if (decodes.empty()) {
        for (int c = 1; c <= 2 * s.threads; c *= 2) decodes.push_back(c);
    }
    std::vector<int> reads = parse_list(read_list);
    if (reads.empty()) reads = {2};

    if (!json) {
        std::printf(
            "ferry-probe: %zu %s under %s%s; %d compute threads (%u hardware threads); "
            "%s each setting\n\n",
            s.files.size(), name_of(s.kind), where.c_str(),
            urls != 0 ? (" (" + std::to_string(urls) + " of them URLs)").c_str() : "", s.threads,
            std::thread::hardware_concurrency(),
            s.items != 0 ? (std::to_string(s.items) + " files").c_str()
                         : (std::to_string(s.seconds) + " s").c_str());
        if (s.kind == media::image) {
            std::printf(
                "| read | decode | images/s | MB/s | failed |\n|---:|---:|---:|---:|---:|\n");
        } else {
            std::printf(
                "| read | decode | files/s | %s/s | MB/s | failed |\n"
                "|---:|---:|---:|---:|---:|---:|\n",
                unit);
        }
    }
    std::vector<trial> trials;
    for (const int r : reads) {
        for (const int d : decodes) {
            trials.push_back(run(s, r, d));
            const trial& t = trials.back();
            if (!json) {
                if (s.kind == media::image) {
                    std::printf("| %d | %d | %.0f | %.1f | %llu |\n", t.read, t.decode,
                                t.images_per_s(), t.mb_per_s(),
                                static_cast<unsigned long long>(t.failed));
                } else {
                    std::printf("| %d | %d | %.1f | %.0f | %.1f | %llu |\n", t.read, t.decode,
                                t.images_per_s(), t.units_per_s(), t.mb_per_s(),
                                static_cast<unsigned long long>(t.failed));
                }
                std::fflush(stdout);
            }
        }
    }
    const auto best = std::max_element(
        trials.begin(), trials.end(),
        [](const trial& a, const trial& b) { return a.images_per_s() < b.images_per_s(); });
    const trial& first = trials.front();
    if (json) {
        std::printf(
            "{\"kind\": \"%s\", \"files\": %zu, \"urls\": %zu, \"threads\": %d, \"trials\": [",
            name_of(s.kind), s.files.size(), urls, s.threads);
        for (std::size_t i = 0; i < trials.size(); ++i) {
            const trial& t = trials[i];
            std::printf(
                "%s{\"read\": %d, \"decode\": %d, \"images_per_s\": %.1f, \"mb_per_s\": %.2f, "
                "\"images\": %llu, \"units_per_s\": %.1f, \"failed\": %llu}",
                i ? ", " : "", t.read, t.decode, t.images_per_s(), t.mb_per_s(),
                static_cast<unsigned long long>(t.images), t.units_per_s(),
                static_cast<unsigned long long>(t.failed));
        }
        std::printf(
            "], \"best\": {\"read\": %d, \"decode\": %d, \"images_per_s\": %.1f}, "
            "\"stats\": \"%s\"}\n",
            best->read, best->decode, best->images_per_s(), json_escape(best->stats).c_str());
        return 0;
    }
    std::printf("\nbest: read %d, decode %d: %.1f %s/s, %.1f MB/s (%.2fx the first setting)\n",
                best->read, best->decode, best->images_per_s(),
                s.kind == media::image ? "images" : "files", best->mb_per_s(),
                first.images_per_s() > 0 ? best->images_per_s() / first.images_per_s() : 0.0);
    std::printf("\nstats of the best setting:\n%s\n", best->stats.c_str());
    // What the sweep says: does more decode concurrency still pay at the top of the range?
    const trial* top = nullptr;
    const trial* below = nullptr;
    for (const trial& t : trials) {
        if (t.read != best->read) continue;
        if (top == nullptr || t.decode > top->decode) {
            below = top;
            top = &t;
        }
    }
    if (top != nullptr && below != nullptr && below->images_per_s() > 0) {
        const double gain = top->images_per_s() / below->images_per_s();
        if (gain > 1.15) {
            std::printf(
                "suggestion: decode %d gave %.2fx of decode %d; more compute threads "
                "(--threads) and decode concurrency may still help\n",
                top->decode, gain, below->decode);
        } else {
            std::printf(
                "suggestion: decode beyond %d does not pay (%.2fx from %d to %d); the "
                "rate is set by %s\n",
                below->decode, gain, below->decode, top->decode,
                best->bottleneck.empty() ? "the machine's cores" : best->bottleneck.c_str() + 12);
        }
    }
    if (best->failed > 0) {
        std::printf("note: %llu files failed to load; run with --json or look at the stats\n",
                    static_cast<unsigned long long>(best->failed));
    }
    return 0;
}
