// SPDX-License-Identifier: Apache-2.0
/// \file
/// autotune: the tuner (`ferry::tuned`, `pipeline_options::autotune`) from a cold start against
/// the best of a hand sweep and against ferry's defaults, in the same run, on two jobs over the
/// benchmarks' ImageNet-like JPEGs (a set of --set files, cycled):
///
///     compare   read_file (I/O) -> decode + RandomResizedCrop(224) + flip (perf/compare's
///               transform) -> batch(32) -> collate
///     io        the same, read with read_url from a local HTTP server that answers each request
///               after --latency-ms (remote storage's latency); where ferry has no ferry::http,
///               read_file after sleeping that long
///
/// Settings: `defaults` (concurrency 1 each, as a pipeline written without numbers), every
/// (read, decode) of the sweep, and `tuned` (both stages ferry::tuned, cpu_budget = threads,
/// interval 100 ms, starting at 1 and 1). Every setting runs the same items (--images for the
/// compare job, --io-images for the other) once, but `defaults`, whose rate is steady from the
/// start, the first --defaults-images of them; its images/s is the median of --reps runs,
/// interleaved. For `tuned` it also reports the rate over the run's last quarter and the time to
/// reach 90% of it, from the batches' arrival times.
///
/// Usage: autotune [--images 10000] [--io-images 20000] [--defaults-images 3000] [--set 500]
///                 [--reps 3] [--threads N] [--latency-ms 5] [--dir DIR]
/// (FERRY_AUTOTUNE_VERBOSE=1: the tuned runs' stats, with the decisions, on stderr)

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/args.hpp"
#include "common/photo_set.hpp"
#include "compare/compare_job.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"
#ifdef FERRY_AUTOTUNE_HTTP
#include <signal.h>
#include <sys/wait.h>

#include <fstream>

#include "ferry/http.hpp"
#include "support/http_server.hpp"
#include "support/tied_child.hpp"
#endif

namespace {

using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct run_result {
    double images_per_s = 0;
    double to_90 = 0;       ///< seconds to 90% of the final rate (tuned)
    double final_rate = 0;  ///< images/s over the run's last quarter
    int read = 0;           ///< where a tuned run ended
    int decode = 0;
};

/// Reads `where`: a URL with read_url, a path with read_file after `latency_ms`.
ferry::bytes read_one(const std::string& where, int latency_ms) {
#ifdef FERRY_AUTOTUNE_HTTP
    if (where.rfind("http://", 0) == 0) return ferry::ops::read_url(where);
#endif
    if (latency_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(latency_ms));
    return ferry::ops::read_file(where);
}

using item_list = std::vector<std::pair<std::size_t, std::string>>;

/// One pass over `items` (index, path or URL); `read` and `decode` are concurrencies (or
/// ferry::tuned values).
run_result run(const item_list& items, int read, int decode, int threads, int latency_ms,
               bool tune) {
    ferry::pipeline_options o{.threads = threads};
    if (tune) {
        o.autotune = ferry::autotune{.cpu_budget = static_cast<double>(threads), .interval = 100ms};
    }
    auto p = ferry::from(items)
                 .map(
                     [latency_ms](const std::pair<std::size_t, std::string>& in) {
                         return std::make_pair(in.first, read_one(in.second, latency_ms));
                     },
                     {.concurrency = read, .name = "read", .executor = ferry::io})
                 .map(
                     [](const std::pair<std::size_t, ferry::bytes>& in) {
                         return ferry_perf::transform(in.second, in.first,
                                                      ferry::interpolation::bilinear,
                                                      ferry_perf::decode_mode::full);
                     },
                     {.concurrency = decode, .name = "decode"})
                 .batch(ferry_perf::compare_batch_size)
                 .map(ferry::ops::collate, {.name = "collate"})
                 .build(o);
    std::vector<std::pair<double, std::size_t>> arrivals;  // (seconds, images so far)
    std::size_t images = 0;
    const auto t0 = steady::now();
    for (const ferry::tensor& batch : p) {
        images += static_cast<std::size_t>(batch.size(0));
        arrivals.emplace_back(std::chrono::duration<double>(steady::now() - t0).count(), images);
    }
    run_result r;
    const double total = arrivals.empty() ? 0 : arrivals.back().first;
    r.images_per_s = total > 0 ? static_cast<double>(images) / total : 0;
    const auto stats = p.stats();
    for (const auto& s : stats.stages) {
        if (s.name == "read") r.read = s.concurrency;
        if (s.name == "decode") r.decode = s.concurrency;
    }
    if (tune && std::getenv("FERRY_AUTOTUNE_VERBOSE") != nullptr) {
        std::ostringstream os;
        os << stats;
        std::fprintf(stderr, "%s\n", os.str().c_str());
    }
    if (arrivals.size() >= 8) {
        // The final rate: over the last quarter of the batches; then the first batch from which
        // the rate over the next second (or the rest) reaches 90% of it.
        const std::size_t q = arrivals.size() * 3 / 4;
        const double final_rate = static_cast<double>(arrivals.back().second - arrivals[q].second) /
                                  (arrivals.back().first - arrivals[q].first);
        r.final_rate = final_rate;
        r.to_90 = total;
        for (std::size_t i = 0; i < arrivals.size(); ++i) {
            std::size_t j = i;
            while (j + 1 < arrivals.size() && arrivals[j].first - arrivals[i].first < 1.0) ++j;
            if (j == i) break;
            const double rate = static_cast<double>(arrivals[j].second - arrivals[i].second) /
                                (arrivals[j].first - arrivals[i].first);
            if (rate >= 0.9 * final_rate) {
                r.to_90 = arrivals[i].first;
                break;
            }
        }
    }
    return r;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int positive(const char* text, const char* what) {
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < 0) {
        std::fprintf(stderr, "autotune: %s must be a number >= 0, not '%s'\n", what, text);
        std::exit(2);
    }
    return static_cast<int>(v);
}

void job(const char* name, const item_list& paths, int threads, int reps, int latency_ms,
         const std::vector<int>& reads, const char* how, std::size_t defaults_items) {
    std::printf("\n### %s (%zu images, %d threads%s)\n\n", name, paths.size(), threads, how);
    std::printf("| setting | images/s (median of %d) | tuned / this |\n|---|---:|---:|\n", reps);
    struct row {
        std::string name;
        std::vector<double> rates;
    };
    std::vector<row> rows;
    std::vector<double> tuned_rates, to_90, final_rates;
    std::vector<std::string> ends;
    for (int r = 0; r < reps; ++r) {
        // Interleaved: each repetition runs every setting once.
        std::size_t k = 0;
        const auto add = [&](const std::string& label, double rate) {
            if (rows.size() <= k) rows.push_back({label, {}});
            rows[k++].rates.push_back(rate);
        };
        // The defaults' rate is steady from the start: over at most --defaults-images items,
        // so that a slow default does not make the run long.
        const item_list head(paths.begin(), paths.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                                paths.size(), defaults_items)));
        add("defaults (read 1, decode 1)",
            run(head, 1, 1, threads, latency_ms, false).images_per_s);
        for (const int rd : reads) {
            for (int d = 1; d <= threads; d *= 2) {
                add("read " + std::to_string(rd) + ", decode " + std::to_string(d),
                    run(paths, rd, d, threads, latency_ms, false).images_per_s);
            }
        }
        const auto t = run(paths, ferry::tuned(1, 64), ferry::tuned, threads, latency_ms, true);
        tuned_rates.push_back(t.images_per_s);
        to_90.push_back(t.to_90);
        final_rates.push_back(t.final_rate);
        ends.push_back("read " + std::to_string(t.read) + ", decode " + std::to_string(t.decode));
    }
    const double tuned = median(tuned_rates);
    double best = 0;
    std::string best_name;
    for (const auto& r : rows) {
        const double m = median(r.rates);
        if (r.name.rfind("read", 0) == 0 && m > best) {
            best = m;
            best_name = r.name;
        }
        std::printf("| %s | %.1f | %.2f |\n", r.name.c_str(), m, m > 0 ? tuned / m : 0.0);
    }
    std::printf("| tuned (from read 1, decode 1) | %.1f | 1.00 |\n", tuned);
    std::printf(
        "\ntuned / best hand setting (%s): %.2f; tuned / defaults: %.2f; tuned's rate over its "
        "last quarter %.1f images/s (%.2f of the best), reached to 90%% after %.1f s (medians); "
        "it ended at",
        best_name.c_str(), best > 0 ? tuned / best : 0.0,
        median(rows.front().rates) > 0 ? tuned / median(rows.front().rates) : 0.0,
        median(final_rates), best > 0 ? median(final_rates) / best : 0.0, median(to_90));
    for (const auto& e : ends) std::printf(" [%s]", e.c_str());
    std::printf("\n");
    std::fflush(stdout);
}

}  // namespace

#ifdef FERRY_AUTOTUNE_HTTP
/// `autotune --serve DIR LATENCY_MS PORT_FILE`: the I/O job's server, in a process of its own
/// (its CPU is not the loader's, as remote storage's would not be): serves DIR on 127.0.0.1,
/// answering each GET after the latency, writes its port to PORT_FILE and runs until killed.
int serve(const char* dir, int latency_ms, const std::filesystem::path& port_file) {
    ferry_test::http_server server([latency_ms, files = ferry_test::http_server::serve_directory(
                                                    dir)](const ferry_test::http_request& r) {
        std::this_thread::sleep_for(std::chrono::milliseconds(latency_ms));
        return files(r);
    });
    const auto tmp = port_file.string() + ".tmp";
    std::ofstream(tmp) << server.port() << '\n';
    std::filesystem::rename(tmp, port_file);
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

/// Starts `serve` in a child (stopped by the kernel if this process ends first); its port.
std::pair<pid_t, int> start_server(const std::filesystem::path& dir, int latency_ms) {
    const auto port_file = std::filesystem::temp_directory_path() /
                           ("ferry-autotune-port-" + std::to_string(getpid()));
    std::filesystem::remove(port_file);
    std::string d = dir.string(), l = std::to_string(latency_ms), f = port_file.string();
    char name[] = "autotune", flag[] = "--serve";
    char* const args[] = {name, flag, d.data(), l.data(), f.data(), nullptr};
    const pid_t pid = ferry_test::spawn_tied("/proc/self/exe", args);
    int port = 0;
    for (int i = 0; i < 1000 && port == 0; ++i) {
        std::this_thread::sleep_for(10ms);
        std::ifstream(port_file) >> port;
    }
    std::filesystem::remove(port_file);
    if (pid <= 0 || port == 0) {
        std::fprintf(stderr, "autotune: the HTTP server did not start\n");
        std::exit(1);
    }
    return {pid, port};
}
#endif

int main(int argc, char** argv) {
#ifdef FERRY_AUTOTUNE_HTTP
    if (argc == 5 && std::string_view(argv[1]) == "--serve") {
        return serve(argv[2], positive(argv[3], "latency"), argv[4]);
    }
#endif
    int images = 10000;
    int io_images = 20000;
    int defaults_images = 3000;
    int set = 500;
    int reps = 3;
    int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    int latency_ms = 5;
    std::filesystem::path dir = std::filesystem::temp_directory_path() / "ferry-perf-photos";
    ferry_perf::options opt(
        argc, argv,
        "usage: autotune [--images 10000] [--io-images 20000] [--defaults-images 3000] "
        "[--set 500] [--reps 3] [--threads N] [--latency-ms 5] [--dir DIR]");
    while (opt.next()) {
        const std::string_view flag = opt.name();
        if (flag == "--images") {
            images = opt.integer(0);
        } else if (flag == "--io-images") {
            io_images = opt.integer(0);
        } else if (flag == "--defaults-images") {
            defaults_images = std::max(1, opt.integer(0));
        } else if (flag == "--set") {
            set = std::max(1, opt.integer(0));
        } else if (flag == "--reps") {
            reps = std::max(1, opt.integer(0));
        } else if (flag == "--threads") {
            threads = std::max(1, opt.integer(0));
        } else if (flag == "--latency-ms") {
            latency_ms = opt.integer(0);
        } else if (flag == "--dir") {
            dir = opt.value();
        } else {
            opt.unknown();
        }
    }
    const auto files = ferry_perf::photo_set(dir, set);
    const auto cycled = [&files](int n, auto where) {
        item_list items;
        for (int i = 0; i < n; ++i) {
            const auto k = static_cast<std::size_t>(i);
            items.emplace_back(k, where(files[k % files.size()]));
        }
        return items;
    };
    job("compare job", cycled(images, [](const auto& f) { return f.string(); }), threads, reps, 0,
        {2, 8}, "", static_cast<std::size_t>(defaults_images));
    const std::string wait = ", each read waits " + std::to_string(latency_ms) + " ms";
#ifdef FERRY_AUTOTUNE_HTTP
    // A local server in a process of its own, answering each GET after the latency.
    const auto [pid, port] = start_server(dir, latency_ms);
    const std::string base = "http://127.0.0.1:" + std::to_string(port) + "/";
    const auto urls =
        cycled(io_images, [&base](const auto& f) { return base + f.filename().string(); });
    job("I/O-bound job: read_url from a local HTTP server", urls, threads, reps, 0, {8, 32},
        (wait + " at the server").c_str(), static_cast<std::size_t>(defaults_images));
    kill(pid, SIGTERM);
    waitpid(pid, nullptr, 0);
#else
    job("I/O-bound job: read_file after a sleep",
        cycled(io_images, [](const auto& f) { return f.string(); }), threads, reps, latency_ms,
        {8, 32}, wait.c_str(), static_cast<std::size_t>(defaults_images));
#endif
}
