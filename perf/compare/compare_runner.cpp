// SPDX-License-Identifier: Apache-2.0
/// \file
/// compare_runner: one C++ loader of perf/compare, run as its own process so that its CPU time
/// and peak memory are its own. The job, for every runner:
///
///     read -> decode -> RandomResizedCrop(224) -> horizontal flip (p = 0.5) -> batch 32 -> collate
///
/// over the JPEGs of `--data`, once. Crops and flips are seeded by the image's index, the same
/// for every runner. Runners:
///
///  * `ferry`          the pipeline tuned for the machine: read on `--read` I/O threads, decode +
///                     crop + flip with concurrency = threads, collate; `.threads = --threads`
///  * `ferry-default`  the same stages with every option left at its default (concurrency 1,
///                     default thread count): what a user gets without tuning
///  * `ferry-reduced`  `ferry`, but each JPEG is decoded at the smallest DCT scale that still
///                     covers the crop at 224x224 (the crop box is drawn from the header's size
///                     first), a speed-up PyTorch's loader does not have
///  * `ferry-roi`      `ferry`, but the decode stage is `decode_random_resized_crop`: the crop
///                     box is drawn from the header, and only the crop is decoded (libjpeg's
///                     crop and skip of scanlines), at the smallest DCT scale that still covers
///                     224x224 — what DALI's fused image_random_crop does
///  * `ferry-roi-fast` `ferry-roi` with `fast = true`: libjpeg-turbo's fast integer IDCT and
///                     plain chroma upsampling (pixels within a few levels of the accurate decode)
///  * `ferry-slots`    `ferry-roi`, each crop written into its slot of the batch tensor
///                     (`ferry::batch_slots`, `decode_random_resized_crop_into`) and flipped there,
///                     collate handing the batch on in place: no image per item, no copy
///  * `ferry-slots-fast` `ferry-slots` with `fast = true`
///  * `sequential`     a plain loop making the same calls
///  * `tbb`            a hand-written tbb::parallel_pipeline (serial source, parallel
///                     read+decode+crop+flip, serial batch+collate) in a task_arena(threads)
///
/// `--no-fast-start` builds the tuned ferry runners with `fast_start = false` (the pipeline fills
/// to in_flight from the start instead of working on the first batch alone).
///
/// `--checksum` adds "checksum": an FNV-1a hash of every batch's shape and bytes, in delivery
/// order, so that a test can check that runners making the same calls deliver the same batches
/// (it reads every byte: leave it off when timing).
///
/// `--interp antialias` (or `area`) makes the crop's resize antialias, as Pillow's does, for the
/// like-for-like comparison with torchvision; the default is bilinear without antialiasing.
///
/// Prints one JSON object: runner, threads, images, seconds, first_batch_s (from building the
/// loader to the first batch), cpu_s (user + system of this process while loading), max_rss_kb.
///
///   compare_runner --runner ferry --data DIR [--threads 2] [--read 2] [--interp
///   bilinear|area|antialias] [--no-fast-start] [--checksum]
///
/// The JPEG set is written by photo_set_gen (perf/compare/photo_set_gen.cpp), so that this program
/// links only what a ferry loader links. The libtorch runners (libtorch's DataLoader, ferry ending
/// in to_torch) are compare_runner_torch (perf/compare/compare_libtorch.cpp), for the same reason;
/// both make the job's calls through perf/compare/compare_job.hpp.

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/tbb_baseline.hpp"
#include "compare_job.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

namespace {

using ferry_perf::cpu_seconds;
using ferry_perf::decode_mode;
using ferry_perf::transform;
using ferry_perf::transform_into;
constexpr int batch_size = ferry_perf::compare_batch_size;

struct options {
    std::string runner;
    fs::path data;
    int threads = 2;
    int read = 2;
    ferry::interpolation interp = ferry::interpolation::bilinear;
    bool fast_start = true;  ///< pipeline_options::fast_start of the tuned ferry runners
    bool checksum = false;   ///< hash every batch's bytes, in order (slows the run)
};

struct result {
    long long images = 0;
    double seconds = 0;
    double first_batch_s = -1;
    std::uint64_t checksum = 0xcbf29ce484222325ULL;  ///< FNV-1a over the batches, with --checksum
};

/// Set by --checksum: note_batch folds every batch's shape and bytes into result::checksum.
bool g_checksum = false;

void note_batch(result& r, const ferry::tensor& t, steady::time_point t0) {
    if (r.first_batch_s < 0) {
        r.first_batch_s = std::chrono::duration<double>(steady::now() - t0).count();
    }
    r.images += t.size(0);
    if (g_checksum) {
        auto fold = [&](unsigned char c) { r.checksum = (r.checksum ^ c) * 0x100000001b3ULL; };
        for (std::size_t d = 0; d < t.dim(); ++d) {
            const auto n = static_cast<std::uint64_t>(t.size(d));
            for (int k = 0; k < 8; ++k) fold(static_cast<unsigned char>(n >> (8 * k)));
        }
        const auto* p = static_cast<const unsigned char*>(t.data());
        for (std::size_t i = 0; i < t.nbytes(); ++i) fold(p[i]);
    }
}

result run_ferry(const std::vector<fs::path>& paths, const options& o, bool tuned,
                 decode_mode mode) {
    result r;
    const auto t0 = steady::now();
    std::vector<std::size_t> order(paths.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto interp = o.interp;
    auto read = [&](std::size_t i) { return std::pair{i, ferry::ops::read_file(paths[i])}; };
    auto decode = [interp, mode](const std::pair<std::size_t, ferry::bytes>& in) {
        return transform(in.second, in.first, interp, mode);
    };
    auto p = tuned ? ferry::from(order)
                         .map(read, {.concurrency = o.read, .name = "read", .executor = ferry::io})
                         .map(decode, {.concurrency = o.threads, .name = "decode"})
                         .batch(batch_size)
                         .map(ferry::ops::collate, {.name = "collate"})
                         .build({.threads = o.threads, .fast_start = o.fast_start})
                   : ferry::from(order)
                         .map(read, {.name = "read", .executor = ferry::io})
                         .map(decode, {.name = "decode"})
                         .batch(batch_size)
                         .map(ferry::ops::collate, {.name = "collate"})
                         .build();
    for (const ferry::tensor& t : p) note_batch(r, t, t0);
    r.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return r;
}

result run_ferry_slots(const std::vector<fs::path>& paths, const options& o, bool fast) {
    result r;
    const auto t0 = steady::now();
    std::vector<std::size_t> order(paths.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto interp = o.interp;
    const ferry::batch_slots slots(batch_size, ferry_perf::compare_side, ferry_perf::compare_side);
    auto read = [&](std::size_t i) { return std::pair{i, ferry::ops::read_file(paths[i])}; };
    auto decode = [interp, fast, &slots](const std::pair<std::size_t, ferry::bytes>& in,
                                         const ferry::item_info& item) {
        return transform_into(in.second, in.first, interp, slots.claim(item), fast);
    };
    auto p = ferry::from(order)
                 .map(read, {.concurrency = o.read, .name = "read", .executor = ferry::io})
                 .map(decode, {.concurrency = o.threads, .name = "decode"})
                 .batch(batch_size)
                 .map(ferry::ops::collate, {.name = "collate"})
                 .build({.threads = o.threads, .fast_start = o.fast_start});
    for (const ferry::tensor& t : p) note_batch(r, t, t0);
    r.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return r;
}

result run_sequential(const std::vector<fs::path>& paths, const options& o) {
    result r;
    const auto t0 = steady::now();
    std::vector<ferry::image> batch;
    auto flush = [&] {
        note_batch(r, ferry::ops::collate(std::move(batch)), t0);
        batch = {};
    };
    for (std::size_t i = 0; i < paths.size(); ++i) {
        batch.push_back(transform(ferry::ops::read_file(paths[i]), i, o.interp, decode_mode::full));
        if (batch.size() == batch_size) flush();
    }
    if (!batch.empty()) flush();
    r.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return r;
}

result run_tbb(const std::vector<fs::path>& paths, const options& o) {
    result r;
    const auto t0 = steady::now();
    ferry_perf::run_tbb_image_pipeline(
        paths.size(), o.threads, batch_size,
        [&](std::size_t i) {
            return transform(ferry::ops::read_file(paths[i]), i, o.interp, decode_mode::full);
        },
        [&](std::vector<ferry::image> batch) {
            note_batch(r, ferry::ops::collate(std::move(batch)), t0);
        });
    r.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return r;
}

[[noreturn]] void usage(int code) {
    std::cerr << "usage: compare_runner --runner "
                 "ferry|ferry-default|ferry-reduced|ferry-roi|ferry-roi-fast|ferry-slots|ferry-"
                 "slots-fast|"
                 "sequential|tbb "
                 "--data DIR [--threads N] [--read N] [--interp bilinear|area|antialias] "
                 "[--no-fast-start] [--checksum]\n";
    std::exit(code);
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(2);
            return argv[++i];
        };
        if (a == "--runner") {
            o.runner = value();
        } else if (a == "--data") {
            o.data = value();
        } else if (a == "--threads") {
            o.threads = std::max(1, std::atoi(value().c_str()));
        } else if (a == "--read") {
            o.read = std::max(1, std::atoi(value().c_str()));
        } else if (a == "--no-fast-start") {
            o.fast_start = false;
        } else if (a == "--checksum") {
            o.checksum = true;
        } else if (a == "--interp") {
            const std::string v = value();
            if (v == "area") {
                o.interp = ferry::interpolation::area;
            } else if (v == "antialias") {
                o.interp = ferry::interpolation::antialias;
            } else if (v != "bilinear") {
                usage(2);
            }
        } else {
            usage(a == "--help" || a == "-h" ? 0 : 2);
        }
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    g_checksum = o.checksum;
    if (o.runner.empty() || o.data.empty()) usage(2);
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(o.data)) {
        if (e.path().extension() == ".jpg") paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) {
        std::cerr << "compare_runner: no .jpg files in " << o.data << '\n';
        return 2;
    }
    const double cpu0 = cpu_seconds();  // not counting listing the files
    result r;
    if (o.runner == "ferry") {
        r = run_ferry(paths, o, true, decode_mode::full);
    } else if (o.runner == "ferry-default") {
        r = run_ferry(paths, o, false, decode_mode::full);
    } else if (o.runner == "ferry-reduced") {
        r = run_ferry(paths, o, true, decode_mode::reduced);
    } else if (o.runner == "ferry-roi") {
        r = run_ferry(paths, o, true, decode_mode::roi);
    } else if (o.runner == "ferry-roi-fast") {
        r = run_ferry(paths, o, true, decode_mode::roi_fast);
    } else if (o.runner == "ferry-slots") {
        r = run_ferry_slots(paths, o, false);
    } else if (o.runner == "ferry-slots-fast") {
        r = run_ferry_slots(paths, o, true);
    } else if (o.runner == "sequential") {
        r = run_sequential(paths, o);
    } else if (o.runner == "tbb") {
        r = run_tbb(paths, o);
    } else {
        usage(2);
    }
    if (r.images != static_cast<long long>(paths.size())) {
        std::cerr << "compare_runner: " << o.runner << " delivered " << r.images << " of "
                  << paths.size() << " images\n";
        return 1;
    }
    const int default_threads =
        std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / 2);
    const int reported_threads = o.runner == "sequential"      ? 1
                                 : o.runner == "ferry-default" ? default_threads
                                                               : o.threads;
    const double cpu = cpu_seconds() - cpu0;
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::printf(
        "{\"runner\": \"%s\", \"threads\": %d, \"images\": %lld, \"seconds\": %.4f, "
        "\"first_batch_s\": %.4f, \"cpu_s\": %.3f, \"max_rss_kb\": %ld",
        o.runner.c_str(), reported_threads, r.images, r.seconds, r.first_batch_s, cpu,
        ru.ru_maxrss);
    if (o.checksum)
        std::printf(", \"checksum\": \"%016llx\"", static_cast<unsigned long long>(r.checksum));
    std::printf("}\n");
    return 0;
}
