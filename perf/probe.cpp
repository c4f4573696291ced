// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry-probe: how fast can ferry load this dataset, and what holds it back?
///
/// Point it at a folder of images (searched recursively) or a text file listing image paths, one
/// per line. It builds the loading pipeline a trainer would use
///
///     read_file (I/O threads) -> decode_image (+ resize) -> batch -> collate
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
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ferry/ferry.hpp"
#include "ferry/image.hpp"

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

namespace {

bool is_image_name(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".webp" || ext == ".bmp";
}

std::vector<fs::path> find_inputs(const fs::path& where) {
    std::vector<fs::path> out;
    if (fs::is_directory(where)) {
        for (const auto& e : fs::recursive_directory_iterator(
                 where, fs::directory_options::skip_permission_denied)) {
            if (e.is_regular_file() && is_image_name(e.path())) out.push_back(e.path());
        }
        std::sort(out.begin(), out.end());
    } else if (fs::is_regular_file(where)) {
        std::ifstream in(where);
        std::string line;
        while (std::getline(in, line)) {
            if (!line.empty() && line[0] != '#') out.emplace_back(line);
        }
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
    std::uint64_t images = 0;
    std::uint64_t bytes = 0;
    std::uint64_t failed = 0;
    std::string stats;
    std::string bottleneck;
    [[nodiscard]] double images_per_s() const { return seconds > 0 ? images / seconds : 0; }
    [[nodiscard]] double mb_per_s() const { return seconds > 0 ? bytes / seconds / 1e6 : 0; }
};

struct settings {
    std::vector<fs::path> files;
    double seconds = 3;
    std::uint64_t items = 0;
    int threads = 0;
    ferry::image_size resize{224, 224};
    int batch = 32;
};

trial run(const settings& s, int read, int decode) {
    trial t;
    t.read = read;
    t.decode = decode;
    std::atomic<std::uint64_t> bytes{0};
    // The files over and over (a generator), until the time or item budget is spent.
    std::size_t next = 0;
    const std::uint64_t limit = s.items;
    std::uint64_t produced = 0;
    auto p =
        ferry::from([&]() -> std::optional<fs::path> {
            if (limit != 0 && produced == limit) return std::nullopt;
            ++produced;
            const fs::path& f = s.files[next];
            next = (next + 1) % s.files.size();
            return f;
        })
            .map(
                [&](const fs::path& f) {
                    ferry::bytes b = ferry::ops::read_file(f);
                    bytes.fetch_add(b.size(), std::memory_order_relaxed);
                    return b;
                },
                {.concurrency = read,
                 .name = "read",
                 .on_error = ferry::skip,
                 .executor = ferry::io})
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
        if (limit == 0 && steady::now() >= deadline) break;
    }
    t.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    t.bytes = bytes.load();
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
    CLI::App app{"ferry-probe: how fast can ferry load these images, and what holds it back?"};
    std::string where;
    settings s;
    std::string resize = "224x224";
    std::string decode_list;
    std::string read_list = "2,8";
    bool json = false;
    app.add_option("path", where, "a folder of images (searched recursively) or a list file")
        ->required();
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

    s.files = find_inputs(where);
    if (s.files.empty()) {
        std::cerr << "ferry-probe: no images (.jpg .jpeg .png .webp .bmp) found in " << where
                  << '\n';
        return 2;
    }
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
            "ferry-probe: %zu files under %s; %d compute threads (%u hardware threads); "
            "%s each setting\n\n",
            s.files.size(), where.c_str(), s.threads, std::thread::hardware_concurrency(),
            s.items != 0 ? (std::to_string(s.items) + " images").c_str()
                         : (std::to_string(s.seconds) + " s").c_str());
        std::printf("| read | decode | images/s | MB/s | failed |\n|---:|---:|---:|---:|---:|\n");
    }
    std::vector<trial> trials;
    for (const int r : reads) {
        for (const int d : decodes) {
            trials.push_back(run(s, r, d));
            const trial& t = trials.back();
            if (!json) {
                std::printf("| %d | %d | %.0f | %.1f | %llu |\n", t.read, t.decode,
                            t.images_per_s(), t.mb_per_s(),
                            static_cast<unsigned long long>(t.failed));
                std::fflush(stdout);
            }
        }
    }
    const auto best = std::max_element(
        trials.begin(), trials.end(),
        [](const trial& a, const trial& b) { return a.images_per_s() < b.images_per_s(); });
    const trial& first = trials.front();
    if (json) {
        std::printf("{\"files\": %zu, \"threads\": %d, \"trials\": [", s.files.size(), s.threads);
        for (std::size_t i = 0; i < trials.size(); ++i) {
            const trial& t = trials[i];
            std::printf(
                "%s{\"read\": %d, \"decode\": %d, \"images_per_s\": %.1f, \"mb_per_s\": %.2f, "
                "\"images\": %llu, \"failed\": %llu}",
                i ? ", " : "", t.read, t.decode, t.images_per_s(), t.mb_per_s(),
                static_cast<unsigned long long>(t.images),
                static_cast<unsigned long long>(t.failed));
        }
        std::printf(
            "], \"best\": {\"read\": %d, \"decode\": %d, \"images_per_s\": %.1f}, "
            "\"stats\": \"%s\"}\n",
            best->read, best->decode, best->images_per_s(), json_escape(best->stats).c_str());
        return 0;
    }
    std::printf("\nbest: read %d, decode %d: %.0f images/s, %.1f MB/s (%.2fx the first setting)\n",
                best->read, best->decode, best->images_per_s(), best->mb_per_s(),
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
