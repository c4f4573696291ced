// SPDX-License-Identifier: Apache-2.0
/// \file
/// shard_resume: what resuming a pipeline over tar shards in the middle of an epoch costs.
///
/// Writes local shards (default 20 shards x 500 samples, a 20 KB .jpg and a .cls each, about
/// 200 MB; the page cache holds them afterwards, so this measures CPU and copying, not a disk),
/// saves a pipeline's state at the middle of epoch 0 and measures the time from building the
/// resumed pipeline to its first output, two ways in the same run:
///  * positioned: `ferry::from(tar_samples(...))`, which the engine opens at the saved position
///    (`tar_samples_source(epoch, position)`: headers walked, bodies not read);
///  * read again: the same source through a one-argument lambda, so the engine opens the epoch
///    at its start and pulls and drops the samples before the position (ferry's resume for any
///    epoch factory that cannot be positioned).
/// With shuffle buffers of 0 and 1000. Repetitions alternate the two; the table gives the
/// median and the range in milliseconds.
///
/// Usage: shard_resume [--shards S] [--per N] [--bytes B] [--reps R] [--dir D]

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/ferry.hpp"
#include "ferry/shards.hpp"

#include "common/args.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

void write_shard(const std::filesystem::path& path, int shard, int per, std::size_t bytes) {
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    if (archive_write_open_filename(a, path.c_str()) != ARCHIVE_OK) {
        std::fprintf(stderr, "cannot write %s\n", path.c_str());
        std::exit(1);
    }
    const std::string jpg(bytes, 'j');
    for (int i = 0; i < per; ++i) {
        const auto key = std::to_string(shard) + "-" + std::to_string(i);
        for (const auto& [ext, data] :
             {std::pair<std::string, std::string>{"jpg", jpg}, {"cls", std::to_string(i % 10)}}) {
            archive_entry* e = archive_entry_new();
            archive_entry_set_pathname(e, (key + "." + ext).c_str());
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_perm(e, 0644);
            archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
            archive_write_header(a, e);
            archive_write_data(a, data.data(), data.size());
            archive_entry_free(e);
        }
    }
    archive_write_close(a);
    archive_write_free(a);
}

auto build(const ferry::sources::tar_samples_source& src, bool positioned,
           const ferry::pipeline_options& options) {
    const auto key = [](const ferry::sample& s) { return s.key; };
    if (positioned) return ferry::from(src).map(key, 2).build(options);
    return ferry::from([src](std::uint64_t epoch) { return src(epoch); })
        .map(key, 2)
        .build(options);
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    int shards = 20;
    int per = 500;
    std::size_t bytes = 20 * 1024;
    int reps = 5;
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "ferry-shard-resume";
    ferry_perf::options opt(argc, argv,
                            "usage: shard_resume [--shards S] [--per N] [--bytes B] [--reps R] "
                            "[--dir D]");
    while (opt.next()) {
        const std::string_view arg = opt.name();
        if (arg == "--shards") {
            shards = opt.integer();
        } else if (arg == "--per") {
            per = opt.integer();
        } else if (arg == "--bytes") {
            bytes = opt.integer<std::size_t>();
        } else if (arg == "--reps") {
            reps = opt.integer();
        } else if (arg == "--dir") {
            dir = opt.value();
        } else {
            opt.unknown();
        }
    }
    std::filesystem::create_directories(dir);
    std::vector<std::string> paths;
    for (int s = 0; s < shards; ++s) {
        const auto path = dir / ("shard-" + std::to_string(s) + ".tar");
        write_shard(path, s, per, bytes);
        paths.push_back(path.string());
    }
    const std::uint64_t position = static_cast<std::uint64_t>(shards) * per / 2;
    std::printf("%d shards x %d samples (%zu-byte .jpg + .cls), resume at sample %llu\n", shards,
                per, bytes, static_cast<unsigned long long>(position));
    std::printf("%-8s %-12s %12s %22s\n", "buffer", "resume", "median ms", "range ms");
    for (const std::size_t buffer : {std::size_t{0}, std::size_t{1000}}) {
        const auto src = ferry::sources::tar_samples(paths, {.shuffle_buffer = buffer});
        // The state at the middle of epoch 0.
        std::optional<ferry::pipeline_state> st;
        {
            auto pipe = build(src, true, {.threads = 2});
            std::uint64_t n = 0;
            for (auto& k : pipe) {
                (void)k;
                if (++n == position) {
                    st = pipe.state();
                    break;
                }
            }
        }
        std::vector<double> ms[2];
        std::string first[2];
        for (int r = 0; r < reps; ++r) {
            for (const int positioned : {1, 0}) {
                const auto t0 = clock_type::now();
                auto pipe = build(src, positioned != 0, {.threads = 2, .resume_from = st});
                auto k = pipe.next();
                ms[positioned].push_back(
                    std::chrono::duration<double, std::milli>(clock_type::now() - t0).count());
                first[positioned] = k ? *k : "(none)";
            }
        }
        if (first[0] != first[1]) {
            std::fprintf(stderr, "the two resumes disagree: %s, %s\n", first[1].c_str(),
                         first[0].c_str());
            return 1;
        }
        for (const int positioned : {1, 0}) {
            const auto& v = ms[positioned];
            std::printf("%-8zu %-12s %12.1f %10.1f .. %-9.1f\n", buffer,
                        positioned != 0 ? "positioned" : "read again", median(v),
                        *std::min_element(v.begin(), v.end()),
                        *std::max_element(v.begin(), v.end()));
        }
        std::printf("%-8zu ratio %.1fx\n", buffer, median(ms[0]) / median(ms[1]));
    }
    std::filesystem::remove_all(dir);
    return 0;
}
