// SPDX-License-Identifier: Apache-2.0
/// \file
/// image_pipeline: images/s through
///
///     read_file -> decode_image (+ resize to 224x224) -> batch 32 -> collate
///
/// on a generated set of ImageNet-like JPEGs (500x375, quality 90, photo-like content: smooth
/// colour fields, shapes, texture and noise — not flat colours), run three ways in one process,
/// for each thread count (default 1 and 2):
///
///  * `sequential`        a plain loop on the calling thread making the same calls;
///  * `parallel_pipeline` a hand-written `tbb::parallel_pipeline` in a `task_arena(t)`:
///                        serial source -> parallel read+decode+resize -> serial batch+collate;
///  * `ferry`             `from(paths).map(read_file, {.executor = io}).map(decode, t)
///                        .batch(32).map(collate).build({.threads = t})`, as a user writes it;
///  * `ferry, read+decode in one stage`  shaped like the TBB pipeline: `.map(read + decode, t)`,
///                        no I/O threads.
///
/// Then reduced-scale decoding, measured on its own (sequentially, so only the decode differs):
/// decoding straight to 112x112 (`{.resize = {112, 112}}`: libjpeg-turbo decodes at 1/2 scale,
/// then a small resize) against a full-size decode followed by the same resize.
///
/// Every variant checks that it delivered every image (batches x 32 + the last partial one).
/// Files are read from the page cache (the set is read once before timing), so this measures
/// decode and engine, not the disk.
///
/// Usage: image_pipeline [--images N] [--reps R] [--threads 1,2] [--dir DIR] [--json]
///   --images   how many JPEGs to generate and load (default 1000)
///   --reps     timed repetitions per variant (default 3); the median is reported
///   --threads  comma-separated thread counts (default 1,2)
///   --dir      where the generated set lives (default $TMPDIR/ferry-image-pipeline);
///              files already there with the right name are reused
///   --json     print JSON instead of the Markdown table

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/photo_set.hpp"
#include "common/tbb_baseline.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"

namespace {

namespace fs = std::filesystem;
using bench_clock = std::chrono::steady_clock;

constexpr int batch_size = 32;
constexpr ferry::image_size target{224, 224};

struct config {
    int images = 1000;
    int reps = 3;
    std::vector<int> threads{1, 2};
    fs::path dir;
    bool json = false;
};

std::vector<fs::path> generate(const config& cfg) {
    return ferry_perf::photo_set(cfg.dir, cfg.images);
}

ferry::image load(const fs::path& p, ferry::image_size size) {
    return ferry::ops::decode_image(ferry::ops::read_file(p), {.resize = size});
}

/// Images delivered and seconds taken by one run.
struct run_result {
    long long images = 0;
    double seconds = 0;
};

run_result run_sequential(const std::vector<fs::path>& paths) {
    run_result r;
    const auto t0 = bench_clock::now();
    std::vector<ferry::image> batch;
    for (const auto& p : paths) {
        batch.push_back(load(p, target));
        if (batch.size() == batch_size) {
            r.images += ferry::ops::collate(std::move(batch)).size(0);
            batch = {};
        }
    }
    if (!batch.empty()) r.images += ferry::ops::collate(std::move(batch)).size(0);
    r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    return r;
}

run_result run_parallel_pipeline(const std::vector<fs::path>& paths, int t) {
    run_result r;
    const auto t0 = bench_clock::now();
    ferry_perf::run_tbb_image_pipeline(
        paths.size(), t, batch_size, [&](std::size_t i) { return load(paths[i], target); },
        [&](std::vector<ferry::image> batch) {
            r.images += ferry::ops::collate(std::move(batch)).size(0);
        });
    r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    return r;
}

/// Takes every batch of `p`, timing it.
run_result drain(ferry::pipeline<ferry::tensor>& p) {
    run_result r;
    const auto t0 = bench_clock::now();
    for (const ferry::tensor& batch : p) r.images += batch.size(0);
    r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    return r;
}

run_result run_ferry(const std::vector<fs::path>& paths, int t) {
    auto p =
        ferry::from(paths)
            .map(ferry::ops::read_file, {.concurrency = 2, .name = "read", .executor = ferry::io})
            .map(
                [](const ferry::bytes& b) {
                    return ferry::ops::decode_image(b, {.resize = target});
                },
                {.concurrency = t, .name = "decode"})
            .batch(batch_size)
            .map(ferry::ops::collate, {.name = "collate"})
            .build({.threads = t});
    return drain(p);
}

/// ferry shaped like the hand-written TBB pipeline: read and decode in one compute stage, no
/// I/O threads (for files in the page cache a read is a memcpy).
run_result run_ferry_fused(const std::vector<fs::path>& paths, int t) {
    auto p = ferry::from(paths)
                 .map([](const fs::path& f) { return load(f, target); },
                      {.concurrency = t, .name = "read+decode"})
                 .batch(batch_size)
                 .map(ferry::ops::collate, {.name = "collate"})
                 .build({.threads = t});
    return drain(p);
}

run_result run_decode_only(const std::vector<fs::path>& paths, bool reduced) {
    std::vector<ferry::bytes> files;
    files.reserve(paths.size());
    for (const auto& p : paths) files.push_back(ferry::ops::read_file(p));
    run_result r;
    const auto t0 = bench_clock::now();
    for (const auto& b : files) {
        ferry::image img = reduced ? ferry::ops::decode_image(b, {.resize = {112, 112}})
                                   : ferry::ops::resize(ferry::ops::decode_image(b), 112, 112);
        r.images += img.width() == 112 ? 1 : 0;
    }
    r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    return r;
}

std::vector<int> parse_list(std::string_view s) {
    std::vector<int> out;
    while (!s.empty()) {
        const auto comma = s.find(',');
        const auto item = s.substr(0, comma);
        int v = 0;
        std::from_chars(item.data(), item.data() + item.size(), v);
        if (v > 0) out.push_back(v);
        s = comma == std::string_view::npos ? std::string_view{} : s.substr(comma + 1);
    }
    return out;
}

config parse(int argc, char** argv) {
    config cfg;
    const char* tmp = std::getenv("TMPDIR");
    cfg.dir = fs::path(tmp != nullptr ? tmp : "/tmp") / "ferry-image-pipeline";
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= argc) {
                std::cerr << a << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--images") {
            cfg.images = std::atoi(std::string(value()).c_str());
        } else if (a == "--reps") {
            cfg.reps = std::max(1, std::atoi(std::string(value()).c_str()));
        } else if (a == "--threads") {
            cfg.threads = parse_list(value());
        } else if (a == "--dir") {
            cfg.dir = std::string(value());
        } else if (a == "--json") {
            cfg.json = true;
        } else {
            std::cerr << "usage: image_pipeline [--images N] [--reps R] [--threads 1,2] "
                         "[--dir DIR] [--json]\n";
            std::exit(a == "--help" || a == "-h" ? 0 : 2);
        }
    }
    return cfg;
}

struct summary {
    double median = 0;
    double min = 0;
    double max = 0;
};

summary summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace

int main(int argc, char** argv) {
    const config cfg = parse(argc, argv);
    const auto paths = generate(cfg);
    // Warm the page cache and check every file decodes.
    for (const auto& p : paths) (void)load(p, target);

    struct row {
        int threads;
        std::string variant;
        summary rate;
    };
    std::vector<row> rows;
    const auto expected = static_cast<long long>(paths.size());
    auto check = [&](const run_result& r, const char* what) {
        if (r.images != expected) {
            std::cerr << what << " delivered " << r.images << " of " << expected << " images\n";
            std::exit(1);
        }
        return static_cast<double>(r.images) / r.seconds;
    };

    for (const int t : cfg.threads) {
        std::map<std::string, std::vector<double>> rates;
        for (int rep = 0; rep < cfg.reps; ++rep) {
            // Interleaved, so drift in the machine's load hits every variant alike.
            if (t == cfg.threads.front()) {
                rates["sequential"].push_back(check(run_sequential(paths), "sequential"));
            }
            rates["parallel_pipeline"].push_back(
                check(run_parallel_pipeline(paths, t), "parallel_pipeline"));
            rates["ferry"].push_back(check(run_ferry(paths, t), "ferry"));
            rates["ferry, read+decode in one stage"].push_back(
                check(run_ferry_fused(paths, t), "ferry, read+decode in one stage"));
        }
        for (auto& [name, v] : rates) rows.push_back({t, name, summarize(v)});
    }
    std::vector<double> full;
    std::vector<double> reduced;
    for (int rep = 0; rep < cfg.reps; ++rep) {
        full.push_back(check(run_decode_only(paths, false), "full decode"));
        reduced.push_back(check(run_decode_only(paths, true), "reduced decode"));
    }
    const summary full_s = summarize(full);
    const summary reduced_s = summarize(reduced);

    double sequential = 0;
    for (const auto& r : rows) {
        if (r.variant == "sequential") sequential = r.rate.median;
    }
    auto rate_of = [&](int t, const std::string& v) {
        for (const auto& r : rows) {
            if (r.threads == t && r.variant == v) return r.rate.median;
        }
        return 0.0;
    };

    if (cfg.json) {
        std::cout << "{\"images\": " << paths.size() << ", \"reps\": " << cfg.reps
                  << ", \"rows\": [";
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const auto& r = rows[i];
            std::cout << (i ? ", " : "") << "{\"threads\": " << r.threads << ", \"variant\": \""
                      << r.variant << "\", \"images_per_s\": " << r.rate.median
                      << ", \"min\": " << r.rate.min << ", \"max\": " << r.rate.max << "}";
        }
        std::cout << "], \"decode_112\": {\"full_then_resize\": " << full_s.median
                  << ", \"reduced_scale\": " << reduced_s.median << "}}\n";
        return 0;
    }
    std::printf("image_pipeline: %zu JPEGs 500x375 q90 -> 224x224, batch %d, median of %d\n\n",
                paths.size(), batch_size, cfg.reps);
    std::printf("| threads | variant | images/s | min - max | ferry / this |\n");
    std::printf("|---:|---|---:|---:|---:|\n");
    for (const auto& r : rows) {
        const double ferry_rate = rate_of(r.threads, "ferry");
        const double base = r.variant == "sequential" ? sequential : r.rate.median;
        std::printf("| %d | %s | %.0f | %.0f - %.0f | ", r.threads, r.variant.c_str(),
                    r.rate.median, r.rate.min, r.rate.max);
        if (r.variant == "ferry") {
            std::printf("- |\n");
        } else {
            std::printf("%.2f |\n", ferry_rate / base);
        }
    }
    for (const int t : cfg.threads) {
        std::printf(
            "\n%d thread(s): ferry, read+decode in one stage / parallel_pipeline = %.2f", t,
            rate_of(t, "ferry, read+decode in one stage") / rate_of(t, "parallel_pipeline"));
    }
    std::printf("\nferry vs sequential loop: ");
    for (const int t : cfg.threads)
        std::printf("%d thread(s) %.2fx  ", t, rate_of(t, "ferry") / sequential);
    std::printf(
        "\n\ndecode to 112x112, one thread: full decode + resize %.0f images/s, "
        "reduced-scale decode %.0f images/s (%.2fx)\n",
        full_s.median, reduced_s.median, reduced_s.median / full_s.median);
    return 0;
}
