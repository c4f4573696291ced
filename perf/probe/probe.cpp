// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry-probe: how fast can ferry load this dataset, and what holds it back?
///
/// Point it at a folder of images, videos or audio files (searched recursively; each file's
/// kind is read from its first bytes, not its name, and the files it cannot measure are listed
/// as skipped, with the reason) or a text file listing them, one per line: paths, or URLs (http://,
/// https://, file://; read with ferry::ops::read_url where ferry was built with ferry::http), mixed
/// as you like. It builds the loading pipeline a trainer would use
///
///     read_file / read_url (I/O threads) -> decode_image (+ resize) -> batch -> collate
///
/// and runs it under several concurrency settings, the way SPDL's profile_pipeline does: the
/// decode concurrency from 1 up to the thread count, and a couple of read concurrencies. Every
/// setting runs the same items: a seeded sample of the inputs (`--sample`, `--seed`), cycled
/// in the same order, `--items` of them, or else as many whole passes as the first setting
/// finishes in `--seconds` — so a ratio between settings compares equal work. It prints images/s
/// and MB/s for each setting, the best one, its per-stage stats table with the bottleneck named,
/// what the sweep suggests, and the inputs that failed.
///
///   ferry-probe DIR|LIST [--seconds 3] [--items N] [--sample 256] [--seed 1] [--threads N]
///                        [--resize 224x224] [--decode 1,2,4] [--read 2,8] [--batch 32] [--json]
///                        [--recommend]
///
/// --recommend runs the pipeline once instead, with read and decode `ferry::tuned` under a CPU
/// budget of the threads, and prints where the tuner settled: the settings to start from.
///
/// Files: probe_inputs.cpp (the inputs, the sample, the CPUs), probe_sniff.cpp (what a file is,
/// from its first bytes), probe_json.cpp (--json).

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

#include "probe.hpp"

using steady = std::chrono::steady_clock;
using namespace probe;

namespace {

/// What the source and the read stage share with the trial: where the cycle is, how many items
/// were handed out (and their digest), the bytes read.
struct source_state {
    std::uint64_t limit = 0;  ///< items to hand out; 0: whole passes until `deadline`
    steady::time_point deadline{};
    std::uint64_t produced = 0;
    std::uint64_t digest = 0xcbf29ce484222325ull;  // FNV-1a offset basis
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

/// The sample over and over (a generator), `src.limit` items, or whole passes until the deadline
/// has passed; read on `read` I/O threads. The paths name failures by themselves.
auto read_files(const settings& s, int read, source_state& src) {
    return ferry::from([&s, &src]() -> std::optional<std::string> {
               const std::size_t n = s.sample.size();
               if (src.limit != 0 && src.produced == src.limit) return std::nullopt;
               if (src.limit == 0 && src.produced != 0 && src.produced % n == 0 &&
                   steady::now() >= src.deadline) {
                   return std::nullopt;
               }
               const std::string& f = s.sample[src.produced % n];
               ++src.produced;
               for (const char c : f) {
                   src.digest = (src.digest ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
               }
               src.digest = (src.digest ^ 0xffu) * 0x100000001b3ull;  // entry separator
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

/// The pipeline's options: no log lines (failures are reported at the end), and no epoch
/// failure-rate limit (a dataset with mostly bad files is measured and reported, not refused).
ferry::pipeline_options options(const settings& s) {
    ferry::pipeline_options o{.threads = s.threads,
                              .logger = [](ferry::log_level, std::string_view) {},
                              .max_epoch_failure_rate = 1};
    if (s.recommend) {
        o.autotune = ferry::autotune{.cpu_budget = static_cast<double>(s.threads),
                                     .interval = std::chrono::milliseconds(200)};
    }
    return o;
}

/// Runs `p` to the end of its epoch through `take` (per output), then fills in what `t` measured.
template <class P, class F>
void measure(P& p, trial& t, source_state& src, F take) {
    const auto t0 = steady::now();
    for (const auto& out : p) take(out);
    t.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    t.items = src.produced;
    t.digest = src.digest;
    t.bytes = src.bytes.load();
    t.stats = p.stats();
    t.failures = p.failures();
    t.failed = t.failures.size();
}

/// Video or audio: read -> decode (returns the frames or samples it produced) -> batch.
trial run_media(const settings& s, int read, int decode, source_state& src) {
    trial t;
    t.read = read;
    t.decode = decode;
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
    auto p = read_files(s, read, src)
                 .map(decode_fn, {.concurrency = decode, .name = "decode", .on_error = ferry::skip})
                 .batch(static_cast<std::size_t>(s.batch))
                 .build(options(s));
    measure(p, t, src, [&t](const std::vector<std::uint64_t>& batch) {
        t.images += batch.size();
        for (const auto u : batch) t.units += u;
    });
    return t;
}

/// One setting over `limit` items of the sample (0: whole passes for `s.seconds`).
trial run(const settings& s, int read, int decode, std::uint64_t limit) {
    source_state src;
    src.limit = limit;
    src.deadline = steady::now() + std::chrono::duration_cast<steady::duration>(
                                       std::chrono::duration<double>(s.seconds));
    if (s.kind != media::image) return run_media(s, read, decode, src);
    trial t;
    t.read = read;
    t.decode = decode;
    auto p = read_files(s, read, src)
                 .map(
                     [&](const ferry::bytes& b) {
                         return ferry::ops::decode_image(b, {.resize = s.resize});
                     },
                     {.concurrency = decode, .name = "decode", .on_error = ferry::skip})
                 .batch(static_cast<std::size_t>(s.batch))
                 .map(ferry::ops::collate, {.name = "collate", .on_error = ferry::skip})
                 .build(options(s));
    measure(p, t, src, [&t](const ferry::tensor& batch) {
        t.images += static_cast<std::uint64_t>(batch.size(0));
    });
    return t;
}

/// --recommend: where the tuner settled, as the stage options to start from, and its decisions.
void print_recommendation(const settings& s, const trial& t) {
    int read = 0;
    int decode = 0;
    for (const auto& r : t.stats.stages) {
        if (r.name == "read") read = r.concurrency;
        if (r.name == "decode") decode = r.concurrency;
    }
    std::printf(
        "recommended (where the tuner settled after %.1f s, from read 1 and decode 1, under a "
        "budget of %d cores):\n",
        t.seconds, s.threads);
    std::printf("  .map(read, {.concurrency = %d, .executor = ferry::io})\n", read);
    std::printf("  .map(decode, {.concurrency = %d})\n", decode);
    std::printf("  .build({.threads = %d, .in_flight = %zu})\n", t.stats.threads,
                t.stats.in_flight);
    std::printf("%.1f %s/s over the run, %llu failed\n", t.images_per_s(),
                s.kind == media::image ? "images" : "files",
                static_cast<unsigned long long>(t.failed));
    std::ostringstream table;
    table << t.stats;
    std::printf("\nstats of the tuned run:\n%s\n", table.str().c_str());
    std::printf("the tuner's decisions:\n");
    for (const auto& d : t.stats.tuning) {
        std::ostringstream line;
        line << d;
        std::printf("  %s\n", line.str().c_str());
    }
    if (t.stats.tuning.empty()) std::printf("  none: read 1 and decode 1 kept up\n");
}

/// The files found but not measured: how many of each other kind, and the first few of those
/// that are no media ferry reads, with the reason (--json lists every one).
void print_skipped(std::FILE* out, const settings& s) {
    if (s.skipped.empty()) return;
    std::size_t kinds[3] = {};
    std::vector<const skipped_file*> others;
    for (const skipped_file& f : s.skipped) {
        if (f.kind == media::other) {
            others.push_back(&f);
        } else {
            ++kinds[static_cast<int>(f.kind)];
        }
    }
    std::fprintf(out, "skipped %zu file%s:", s.skipped.size(), s.skipped.size() == 1 ? "" : "s");
    const char* sep = " ";
    for (int k = 0; k < 3; ++k) {
        if (kinds[k] == 0) continue;
        std::fprintf(out, "%s%zu %s", sep, kinds[k], name_of(static_cast<media>(k)));
        sep = ", ";
    }
    if (sep[0] == ',') std::fprintf(out, " (this run measures %s)", name_of(s.kind));
    if (!others.empty()) {
        std::fprintf(out, "%s%zu that ferry does not read:\n", sep[0] == ',' ? "; " : " ",
                     others.size());
    } else {
        std::fprintf(out, "\n");
    }
    constexpr std::size_t shown = 10;
    for (std::size_t i = 0; i < others.size() && i < shown; ++i) {
        std::fprintf(out, "  %s: %s\n", others[i]->path.c_str(), others[i]->why.c_str());
    }
    if (others.size() > shown) {
        std::fprintf(out, "  ... and %zu more (--json lists them)\n", others.size() - shown);
    }
}

/// The text report after the table: the best setting, its stats, the suggestion, the failures.
void print_text_summary(const settings& s, const std::vector<trial>& trials, const trial& best) {
    const trial& first = trials.front();
    std::printf("\nbest: read %d, decode %d: %.1f %s/s, %.1f MB/s (%.2fx the first setting)\n",
                best.read, best.decode, best.images_per_s(),
                s.kind == media::image ? "images" : "files", best.mb_per_s(),
                first.images_per_s() > 0 ? best.images_per_s() / first.images_per_s() : 0.0);
    std::ostringstream table;
    table << best.stats;
    std::printf("\nstats of the best setting:\n%s\n", table.str().c_str());
    // What the sweep says: does more decode concurrency still pay at the top of the range?
    const trial* top = nullptr;
    const trial* below = nullptr;
    for (const trial& t : trials) {
        if (t.read != best.read) continue;
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
            const std::string bottleneck = best.stats.bottleneck();
            std::printf(
                "suggestion: decode beyond %d does not pay (%.2fx from %d to %d); the "
                "rate is set by %s\n",
                below->decode, gain, below->decode, top->decode,
                bottleneck == "none" ? "the machine's cores" : bottleneck.c_str());
        }
    }
    const auto failed = failed_inputs(trials);
    if (!failed.empty()) {
        std::printf("\n%zu input%s failed (in every setting):\n", failed.size(),
                    failed.size() == 1 ? "" : "s");
        constexpr std::size_t shown = 10;
        for (std::size_t i = 0; i < failed.size() && i < shown; ++i) {
            std::printf("  %s: stage '%s': %s\n", failed[i].input.c_str(), failed[i].stage.c_str(),
                        failed[i].message.c_str());
        }
        if (failed.size() > shown)
            std::printf("  ... and %zu more (--json lists all)\n", failed.size() - shown);
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ferry-probe: how fast can ferry load this dataset, and what holds it back?"};
    std::string where;
    settings s;
    std::string resize = "224x224";
    std::string decode_list;
    std::string read_list = "2,8";
    std::size_t sample = 256;
    std::uint64_t seed = 1;
    bool json = false;
    app.add_option("path", where,
                   "a folder of images, videos or audio files (searched recursively; the kind "
                   "most files are) or a list file of paths and URLs (http://, https://, "
                   "file://), one per line")
        ->required();
    app.add_option("--frames", s.frames, "frames per video, spread uniformly (videos)")
        ->check(CLI::PositiveNumber);
    app.add_option("--seconds", s.seconds,
                   "how long the first setting runs (in whole passes over the sample); every "
                   "other setting runs the same items")
        ->check(CLI::PositiveNumber);
    app.add_option("--items", s.items, "items per setting instead of a time budget");
    app.add_option("--sample", sample,
                   "inputs every setting cycles over: a seeded sample of them (default 256)")
        ->check(CLI::PositiveNumber);
    app.add_option("--seed", seed, "the sample's seed (the same seed, the same sample)");
    app.add_option("--threads", s.threads,
                   "ferry's compute threads (default: the CPUs this process may use)");
    app.add_option("--resize", resize,
                   "decode to WxH ('none' keeps the size; then batches need "
                   "equally sized images)");
    app.add_option("--decode", decode_list,
                   "decode concurrencies to try (default 1,2,.. up to the threads)");
    app.add_option("--read", read_list, "read (I/O) concurrencies to try");
    app.add_option("--batch", s.batch, "batch size")->check(CLI::PositiveNumber);
    app.add_flag("--json", json, "print JSON instead of tables");
    app.add_flag("--recommend", s.recommend,
                 "run once with read and decode tuned at run time (ferry::tuned) and print "
                 "where the tuner settled: the settings to start from");
    CLI11_PARSE(app, argc, argv);
    if (s.recommend && json) {
        std::cerr << "ferry-probe: --recommend prints text; leave out --json\n";
        return 2;
    }

    find_inputs(where, s);
    if (s.files.empty()) {
        std::cerr << "ferry-probe: no images (JPEG, PNG, WebP, BMP), videos or audio files (what "
                     "FFmpeg reads), recognised by their first bytes or extension, found in "
                  << where << '\n';
        print_skipped(stderr, s);
        return 2;
    }
    s.sample = sample_of(s.files, sample, seed);
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
    // Measured on the CPUs this process may really use (its affinity and cgroup quota, not the
    // host's count): more compute threads than that only time-slice.
    const int cpus = usable_cpus();
    if (s.threads <= 0) s.threads = cpus;
    std::vector<int> decodes = parse_list(decode_list);
    if (decodes.empty()) {
        for (int c = 1; c <= s.threads; c *= 2) decodes.push_back(c);
        if (decodes.back() != s.threads) decodes.push_back(s.threads);
    }
    std::vector<int> reads = parse_list(read_list);
    if (reads.empty()) reads = {2};

    if (s.recommend) {
        const trial t = run(s, ferry::tuned(1, 64), ferry::tuned(1, s.threads), s.items);
        print_recommendation(s, t);
        return 0;
    }
    if (!json) {
        std::printf(
            "ferry-probe: %zu %s under %s%s; %d compute threads (%d usable CPUs%s); each "
            "setting runs the same %s of a %zu-input sample (seed %llu)\n\n",
            s.files.size(), name_of(s.kind), where.c_str(),
            urls != 0 ? (" (" + std::to_string(urls) + " of them URLs)").c_str() : "", s.threads,
            cpus, s.threads > cpus ? ": more threads than CPUs only time-slice" : "",
            s.items != 0
                ? (std::to_string(s.items) + " items").c_str()
                : ("whole passes the first finishes in " + std::to_string(s.seconds) + " s")
                      .c_str(),
            s.sample.size(), static_cast<unsigned long long>(seed));
        if (!s.skipped.empty()) {
            print_skipped(stdout, s);
            std::printf("\n");
        }
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
    std::uint64_t limit = s.items;
    for (const int r : reads) {
        for (const int d : decodes) {
            trials.push_back(run(s, r, d, limit));
            const trial& t = trials.back();
            if (limit == 0) limit = t.items;  // the first setting's passes set everyone's items
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
    if (json) {
        print_json(s, urls, trials, *best);
    } else {
        print_text_summary(s, trials, *best);
    }
    return 0;
}
