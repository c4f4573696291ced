// SPDX-License-Identifier: Apache-2.0
/// \file
/// http_fetch: how fast ferry fetches objects over HTTP, against `xargs -P N curl` on the same
/// list, from a local nginx (perf/http/nginx_server.hpp) in the same run:
///
///  * objects: many small objects (default 1000 x 100 KB) and a few large ones (8 x 64 MB) at
///    1, 8, 64 and 256 requests outstanding: objects/s and MB/s of
///      - `curl`      `xargs -P N -n K curl -s --fail` (K = the list split into N even parts, so
///                    each curl process reuses its connection for K objects);
///      - `read_url`  `from(urls).map(read_url, {.concurrency = N, .executor = ferry::io})`: a
///                    blocking call on each of N I/O threads;
///      - `http_client` `from(urls).map_async<bytes>(client.reader(), N)` with an `http_client`
///                    of `max_outstanding = N`: N transfers on one event-loop thread;
///  * shards: the same 2000 ImageNet-like JPEGs (perf/common/photo_set.hpp) as WebDataset tar
///    shards of 100 samples (`tar` CLI) read with `tar_samples` from the server (`url_ranges`)
///    and from local disk, and as files read with `read_url`, `http_client` (64 outstanding) and
///    `read_file`; each decoded with `decode_random_resized_crop(224)` and batched by 32: images/s.
///
/// Every row checks what it got (bytes, images). Medians of `--reps`; the rows of a repetition
/// run one after another, in a seeded order per repetition.
///
/// Usage: http_fetch [--dir D] [--small N] [--small-kb K] [--large N] [--large-mb M]
///                   [--concurrency 1,8,64,256] [--images N] [--reps R] [--threads T]
///                   [--no-large] [--no-shards] [--host-cache-mb M]
///
/// `--host-cache-mb M`: `ferry::set_host_cache_limit(M MiB)` first, so that freed bodies are
/// reused instead of fresh pages (default: the library's limit).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/args.hpp"
#include "common/photo_set.hpp"
#include "ferry/ferry.hpp"
#include "ferry/http.hpp"
#include "ferry/http_client.hpp"
#include "ferry/image.hpp"
#include "ferry/shards.hpp"
#include "nginx_server.hpp"

namespace {

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

struct options {
    fs::path dir = "/tmp/ferry-http-fetch";
    int small = 1000;
    int small_kb = 100;
    int large = 8;
    int large_mb = 64;
    std::vector<int> concurrency{1, 8, 64, 256};
    int images = 2000;
    int reps = 3;
    int threads = 2;
    bool run_large = true;
    bool run_shards = true;
    int host_cache_mb = -1;  ///< -1: the library's default
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n == 0 ? 0 : n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// `count` objects of `bytes` each under `root/name/`, made once (random, seeded by index).
std::vector<std::string> objects(const fs::path& root, const std::string& name, int count,
                                 std::size_t bytes) {
    fs::create_directories(root / name);
    std::vector<std::string> paths;
    for (int i = 0; i < count; ++i) {
        const std::string rel = name + "/" + std::to_string(i) + ".bin";
        const fs::path p = root / rel;
        if (!fs::exists(p) || fs::file_size(p) != bytes) {
            std::mt19937_64 rng(static_cast<std::uint64_t>(i) + 1);
            std::vector<std::uint64_t> data((bytes + 7) / 8);
            for (auto& v : data) v = rng();
            std::ofstream(p, std::ios::binary)
                .write(reinterpret_cast<const char*>(data.data()),
                       static_cast<std::streamsize>(bytes));
        }
        paths.push_back(rel);
    }
    return paths;
}

std::uint64_t with_curl(const std::vector<std::string>& urls, int n, const fs::path& list) {
    {
        std::ofstream out(list);
        for (const auto& u : urls) out << u << '\n';
    }
    const std::size_t per = (urls.size() + static_cast<std::size_t>(n) - 1) / n;
    const std::string cmd = "xargs -P " + std::to_string(n) + " -n " + std::to_string(per) +
                            " curl -s --fail < " + list.string() + " > /dev/null";
    if (std::system(cmd.c_str()) != 0) {
        std::cerr << "http_fetch: curl failed: " << cmd << '\n';
        std::exit(1);
    }
    return 0;  // curl's bytes go to /dev/null; --fail makes a short or failed fetch an error
}

/// Bytes a pipeline of fetches delivers, unordered, with room for `n` in flight.
template <class Builder>
std::uint64_t fetched(Builder b, int n, int threads) {
    auto pipe = b.build({.threads = threads,
                         .in_flight = static_cast<std::size_t>(std::max(64, 2 * n)),
                         .ordered = false});
    std::uint64_t bytes = 0;
    for (const ferry::bytes& got : pipe) bytes += got.size();
    return bytes;
}

std::uint64_t with_read_url(const std::vector<std::string>& urls, int n, int threads) {
    return fetched(
        ferry::from(urls).map(ferry::ops::read_url, {.concurrency = n, .executor = ferry::io}), n,
        threads);
}

std::uint64_t with_client(const std::vector<std::string>& urls, int n, int threads) {
    ferry::ops::http_client client({.max_outstanding = static_cast<std::size_t>(n)});
    return fetched(ferry::from(urls).map_async<ferry::bytes>(client.reader(), n), n, threads);
}

struct row {
    std::string what;
    int n = 0;
    std::vector<double> seconds;
};

void print_objects(const std::vector<row>& rows, std::size_t count, std::size_t bytes) {
    if (bytes >= (std::size_t{1} << 20)) {
        std::printf("\n%zu objects of %.0f MiB:\n\n", count,
                    static_cast<double>(bytes) / (1 << 20));
    } else {
        std::printf("\n%zu objects of %.0f KB:\n\n", count, static_cast<double>(bytes) / 1000);
    }
    std::printf(
        "| client | outstanding | objects/s | MB/s | ÷ curl |\n|---|---:|---:|---:|---:|\n");
    std::map<int, double> curl;
    for (const row& r : rows) {
        if (r.what == "curl") curl[r.n] = median(r.seconds);
    }
    for (const row& r : rows) {
        const double s = median(r.seconds);
        const double per_s = static_cast<double>(count) / s;
        std::printf("| %s | %d | %.0f | %.0f | %.2f |\n", r.what.c_str(), r.n, per_s,
                    per_s * static_cast<double>(bytes) / 1e6,
                    curl.count(r.n) != 0 ? curl[r.n] / s : 0.0);
    }
    std::fflush(stdout);
}

void run_objects(const options& o, const std::string& base, const std::vector<std::string>& rel,
                 std::size_t bytes, const std::vector<int>& levels) {
    std::vector<std::string> urls;
    for (const auto& r : rel) urls.push_back(base + "/" + r);
    std::vector<row> rows;
    for (const int n : levels) {
        rows.push_back({"curl", n, {}});
        rows.push_back({"read_url", n, {}});
        rows.push_back({"http_client", n, {}});
    }
    std::mt19937 order_rng(42);
    for (int rep = 0; rep < o.reps; ++rep) {
        std::vector<std::size_t> order(rows.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), order_rng);
        for (const std::size_t i : order) {
            row& r = rows[i];
            const auto t0 = steady::now();
            const std::uint64_t got = r.what == "curl" ? with_curl(urls, r.n, o.dir / "list.txt")
                                      : r.what == "read_url" ? with_read_url(urls, r.n, o.threads)
                                                             : with_client(urls, r.n, o.threads);
            r.seconds.push_back(std::chrono::duration<double>(steady::now() - t0).count());
            if (r.what != "curl" && got != bytes * urls.size()) {
                std::cerr << "http_fetch: " << r.what << " got " << got << " bytes\n";
                std::exit(1);
            }
        }
    }
    print_objects(rows, urls.size(), bytes);
}

/// WebDataset shards of 100 samples (`000123.jpg` + `000123.cls`) under `root/shards/`.
std::vector<std::string> make_shards(const options& o, const std::vector<fs::path>& jpegs,
                                     const fs::path& root) {
    const fs::path staging = o.dir / "staging";
    fs::create_directories(staging);
    fs::create_directories(root / "shards");
    std::vector<std::string> rel;
    constexpr std::size_t per = 100;
    for (std::size_t s = 0; s * per < jpegs.size(); ++s) {
        char name[32];
        std::snprintf(name, sizeof name, "shards/shard-%04zu.tar", s);
        rel.emplace_back(name);
        if (fs::exists(root / name)) continue;
        std::string members;
        for (std::size_t i = s * per; i < std::min(jpegs.size(), (s + 1) * per); ++i) {
            char key[24];
            std::snprintf(key, sizeof key, "%06zu", i);
            fs::copy_file(jpegs[i], staging / (std::string(key) + ".jpg"),
                          fs::copy_options::overwrite_existing);
            std::ofstream(staging / (std::string(key) + ".cls")) << (i % 1000);
            members += std::string(" ") + key + ".jpg " + key + ".cls";
        }
        const std::string cmd =
            "tar -cf " + (root / name).string() + " -C " + staging.string() + members;
        if (std::system(cmd.c_str()) != 0) {
            std::cerr << "http_fetch: tar failed\n";
            std::exit(1);
        }
    }
    return rel;
}

ferry::image decode(const ferry::bytes& b, std::uint64_t index) {
    std::mt19937_64 rng(index * 7919 + 1);
    return ferry::ops::decode_random_resized_crop(b, 224, 224, rng);
}

/// Images delivered by a pipeline of batches of decoded images.
template <class Builder>
std::size_t drain(Builder b, int threads) {
    auto pipe =
        b.batch(32).map(ferry::ops::collate, {.name = "collate"}).build({.threads = threads});
    std::size_t n = 0;
    for (const ferry::tensor& t : pipe) n += static_cast<std::size_t>(t.shape()[0]);
    return n;
}

void run_shards(const options& o, const std::string& base, const fs::path& root) {
    const std::vector<fs::path> jpegs = ferry_perf::photo_set(root / "jpegs", o.images);
    const std::vector<std::string> shard_rel = make_shards(o, jpegs, root);
    std::vector<std::string> shard_urls, jpeg_urls;
    std::vector<fs::path> shard_paths;
    for (const auto& r : shard_rel) {
        shard_urls.push_back(base + "/" + r);
        shard_paths.push_back(root / r);
    }
    for (const auto& p : jpegs) jpeg_urls.push_back(base + "/jpegs/" + p.filename().string());
    const auto on_sample = [](const ferry::sample& s, const ferry::item_info& info) {
        return decode(s.fields.at("jpg"), info.position);
    };
    const auto on_bytes = [](const ferry::bytes& b, const ferry::item_info& info) {
        return decode(b, info.position);
    };
    const int t = o.threads;
    ferry::ops::http_client client({.max_outstanding = 64});
    const std::vector<std::pair<std::string, std::function<std::size_t()>>> variants{
        {"files, read_file",
         [&] {
             return drain(ferry::from(jpegs)
                              .map(ferry::ops::read_file, {.concurrency = 4, .executor = ferry::io})
                              .map(on_bytes, t),
                          t);
         }},
        {"files over HTTP, read_url",
         [&] {
             return drain(ferry::from(jpeg_urls)
                              .map(ferry::ops::read_url, {.concurrency = 16, .executor = ferry::io})
                              .map(on_bytes, t),
                          t);
         }},
        {"files over HTTP, http_client",
         [&] {
             return drain(ferry::from(jpeg_urls)
                              .map_async<ferry::bytes>(client.reader(), 64)
                              .map(on_bytes, t),
                          t);
         }},
        {"tar shards, local",
         [&] {
             return drain(
                 ferry::from(ferry::sources::tar_samples(std::span<const fs::path>(shard_paths)))
                     .map(on_sample, t),
                 t);
         }},
        {"tar shards over HTTP, url_ranges",
         [&] {
             return drain(ferry::from(ferry::sources::tar_samples(
                                          shard_urls, {.read_remote = ferry::ops::url_ranges{}}))
                              .map(on_sample, t),
                          t);
         }},
    };
    std::vector<std::vector<double>> seconds(variants.size());
    std::mt19937 order_rng(7);
    for (int rep = 0; rep < o.reps; ++rep) {
        std::vector<std::size_t> order(variants.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), order_rng);
        for (const std::size_t i : order) {
            const auto t0 = steady::now();
            const std::size_t n = variants[i].second();
            seconds[i].push_back(std::chrono::duration<double>(steady::now() - t0).count());
            if (n != jpegs.size()) {
                std::cerr << "http_fetch: " << variants[i].first << " delivered " << n << '\n';
                std::exit(1);
            }
        }
    }
    std::printf("\n%zu JPEGs, decode_random_resized_crop(224), batch 32, %d threads:\n\n",
                jpegs.size(), t);
    std::printf("| source | images/s | ÷ files, read_file |\n|---|---:|---:|\n");
    const double files = median(seconds[0]);
    for (std::size_t i = 0; i < variants.size(); ++i) {
        const double s = median(seconds[i]);
        std::printf("| %s | %.0f | %.2f |\n", variants[i].first.c_str(),
                    static_cast<double>(jpegs.size()) / s, files / s);
    }
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    ferry_perf::options opt(
        argc, argv,
        "usage: http_fetch [--dir D] [--small N] [--small-kb K] [--large N] [--large-mb M] "
        "[--concurrency 1,8,64,256] [--images N] [--reps R] [--threads T] [--no-large] "
        "[--no-shards] [--host-cache-mb M]");
    while (opt.next()) {
        const std::string_view a = opt.name();
        if (a == "--dir")
            o.dir = std::string(opt.value());
        else if (a == "--small")
            o.small = opt.integer();
        else if (a == "--small-kb")
            o.small_kb = opt.integer();
        else if (a == "--large")
            o.large = opt.integer();
        else if (a == "--large-mb")
            o.large_mb = opt.integer();
        else if (a == "--concurrency")
            o.concurrency = opt.list<int>();
        else if (a == "--images")
            o.images = opt.integer();
        else if (a == "--reps")
            o.reps = opt.integer();
        else if (a == "--threads")
            o.threads = opt.integer();
        else if (a == "--no-large")
            o.run_large = false;
        else if (a == "--no-shards")
            o.run_shards = false;
        else if (a == "--host-cache-mb")
            o.host_cache_mb = opt.integer();
        else
            opt.unknown();
    }
    // Zero objects would give curl `-n 0` and rates of nothing; every count is at least 1.
    for (const auto& [name, value] :
         {std::pair{"--small", o.small}, std::pair{"--small-kb", o.small_kb},
          std::pair{"--large", o.large}, std::pair{"--large-mb", o.large_mb},
          std::pair{"--images", o.images}, std::pair{"--reps", o.reps},
          std::pair{"--threads", o.threads}}) {
        if (value < 1) {
            std::cerr << "http_fetch: " << name << " must be at least 1 (got " << value << ")\n";
            return 2;
        }
    }
    for (const int n : o.concurrency) {
        if (n < 1) {
            std::cerr << "http_fetch: --concurrency levels must be at least 1 (got " << n << ")\n";
            return 2;
        }
    }
    if (o.host_cache_mb >= 0) {
        ferry::set_host_cache_limit(static_cast<std::size_t>(o.host_cache_mb) << 20);
    }
    const fs::path root = o.dir / "www";
    const auto small = objects(root, "small", o.small, static_cast<std::size_t>(o.small_kb) * 1000);
    std::vector<std::string> large;
    if (o.run_large) {
        large = objects(root, "large", o.large, static_cast<std::size_t>(o.large_mb) << 20);
    }
    ferry_perf::nginx_server server(root, o.dir / "nginx", 1);
    std::printf("nginx (1 worker) on %s; %d reps, medians; host cache %zu MiB\n",
                server.base().c_str(), o.reps, ferry::host_cache_limit() >> 20);
    run_objects(o, server.base(), small, static_cast<std::size_t>(o.small_kb) * 1000,
                o.concurrency);
    if (o.run_large) {
        std::vector<int> levels;
        for (const int n : o.concurrency) {
            if (n <= o.large) levels.push_back(n);
        }
        run_objects(o, server.base(), large, static_cast<std::size_t>(o.large_mb) << 20, levels);
    }
    if (o.run_shards) run_shards(o, server.base(), root);
    return 0;
}
