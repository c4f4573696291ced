// SPDX-License-Identifier: Apache-2.0
/// \file
/// engine_overhead: how many items per second go through
///
///     source (an iota of 64-bit integers) -> 3 no-op map stages -> consumer (sums the items)
///
/// with ferry (public API only, written as a user would), against the same work hand-written with
/// oneTBB, all in one run, for each thread count (default 1 and 2). The stages do nothing, so
/// the numbers are pure per-item engine overhead.
///
/// Variants (per thread count t; c = map concurrency, default t; in_flight defaults to what ferry
/// picks for this pipeline and is used for every bounded variant):
///
///  * `ferry`            `ferry::from(iota).map(f, c).map(f, c).map(f, c).build({.threads = t})`
///                       and a range-for on the calling thread that sums the items. Ordered (the
///                       default): items reach the loop in source order.
///  * `ferry unordered`  the same with `.ordered = false`.
///  * `tbb::flow`        input_node -> 3 function_node(c) -> function_node(serial) sink that sums,
///                       built and waited for inside a `task_arena(t, 0)`, with a
///                       `global_control(max_allowed_parallelism, t + 1)` as ferry holds, so the
///                       arena really gets t threads. Compared with ferry it does NOT: keep
///                       source order (the sink sees completion order), bound the items in
///                       flight (function_nodes queue without limit, so the input node runs
///                       ahead), hand items to another thread (the sink runs on an arena thread;
///                       ferry hands every item through a queue to the consumer thread, which
///                       is one more thread than t), type-erase values, pool boxes, keep
///                       per-stage counters / latency histograms / timings, or support errors,
///                       filters, batches and epochs.
///  * `tbb::flow+limiter` the same with a limiter_node(in_flight) after the input node whose
///                       decrementer the sink feeds: the bounded in-flight ferry has, still
///                       unordered and without the consumer hand-off.
///  * `parallel_pipeline` `tbb::parallel_pipeline(in_flight tokens, serial_in_order source &
///                       3 parallel no-op filters & serial_in_order sink)`, in the same arena
///                       set-up: ordered and bounded like ferry's default, but no consumer
///                       hand-off.
///
/// In the baselines the calling thread enters the arena (`task_arena::execute`) and works as one
/// of its t threads; ferry's arena has t workers of its own and the calling thread is the
/// consumer. Only the item loop is timed (not building or destroying the pipeline / graph).
/// Variants are interleaved within each repetition so that drift hits all of them alike; one
/// untimed warm-up pass (items / 10) runs first. Every run checks the count and sum it got.
///
/// Usage: engine_overhead [--items N] [--reps R] [--threads 1,2] [--concurrency C]
///                        [--in-flight K] [--variants a,b] [--stats] [--json]
///   --items       items per run (default 1000000)
///   --reps        timed repetitions per variant (default 5); the median is reported
///   --threads     comma-separated thread counts (default 1,2)
///   --concurrency concurrency of each map stage / function_node (default: the thread count)
///   --in-flight   bound for ferry, the limiter and the pipeline's tokens (default: ferry's)
///   --stats       print ferry's stats table of the last run of each ferry variant to stderr
///   --variants    comma-separated subset to run (for profiling): ferry, ferry-unordered, flow,
///                 flow-limiter, pipeline (default: all)
///   --json        print the results as JSON instead of the Markdown table

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/version.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <ranges>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ferry/ferry.hpp"

namespace {

using u64 = std::uint64_t;
using bench_clock = std::chrono::steady_clock;

struct config {
    u64 items = 1'000'000;
    int reps = 5;
    std::vector<int> threads{1, 2};
    int concurrency = 0;        // 0 = the thread count
    std::size_t in_flight = 0;  // 0 = what ferry derives
    bool stats = false;
    bool json = false;
    std::vector<std::string> variants;  // --variants; empty = all
};

/// What one run saw: the consumer's count and sum (checked), and the timed seconds.
struct run_result {
    double seconds = 0;
    u64 count = 0;
    u64 sum = 0;
};

/// The per-stage work: nothing. Every variant calls it through its engine's own machinery.
constexpr auto noop = [](u64 x) noexcept { return x; };

/// Sets TBB's process-wide limit the way ferry does while a pipeline lives (t workers in the arena
/// plus one), so every variant's arena can get t threads even on a 2-core machine.
tbb::global_control worker_limit(int t) {
    return tbb::global_control(tbb::global_control::max_allowed_parallelism,
                               static_cast<std::size_t>(t) + 1);
}

run_result run_ferry(u64 n, int t, int c, std::size_t in_flight, bool ordered, bool print_stats) {
    auto p = ferry::from(std::views::iota(u64{0}, n))
                 .map(noop, c)
                 .map(noop, c)
                 .map(noop, c)
                 .build({.threads = t, .in_flight = in_flight, .ordered = ordered});
    run_result r;
    const auto t0 = bench_clock::now();
    for (const u64 x : p) {
        r.sum += x;
        ++r.count;
    }
    r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    if (print_stats) std::cerr << p.stats() << '\n';
    return r;
}

/// The in_flight ferry derives for this pipeline (what the bounded baselines use by default).
std::size_t ferry_in_flight(int t, int c) {
    auto p = ferry::from(std::views::iota(u64{0}, u64{1}))
                 .map(noop, c)
                 .map(noop, c)
                 .map(noop, c)
                 .build({.threads = t});
    return p.stats().in_flight;
}

/// Hand-written flow graph: input_node [-> limiter_node] -> 3 function_nodes -> serial sink.
run_result run_flow(u64 n, int t, int c, std::size_t limit) {
    namespace flow = tbb::flow;
    auto control = worker_limit(t);
    tbb::task_arena arena(t, 0);
    arena.initialize();
    run_result r;
    arena.execute([&] {
        flow::graph g;
        u64 next = 0;
        flow::input_node<u64> source(g, [&](tbb::flow_control& fc) -> u64 {
            if (next == n) {
                fc.stop();
                return 0;
            }
            return next++;
        });
        const auto conc = static_cast<std::size_t>(c);
        flow::function_node<u64, u64> f1(g, conc, noop);
        flow::function_node<u64, u64> f2(g, conc, noop);
        flow::function_node<u64, u64> f3(g, conc, noop);
        flow::function_node<u64, flow::continue_msg> sink(g, flow::serial, [&](u64 x) {
            r.sum += x;
            ++r.count;
            return flow::continue_msg();
        });
        flow::limiter_node<u64> limiter(g, limit);
        if (limit > 0) {
            flow::make_edge(source, limiter);
            flow::make_edge(limiter, f1);
            flow::make_edge(sink, limiter.decrementer());
        } else {
            flow::make_edge(source, f1);
        }
        flow::make_edge(f1, f2);
        flow::make_edge(f2, f3);
        flow::make_edge(f3, sink);
        const auto t0 = bench_clock::now();
        source.activate();
        g.wait_for_all();
        r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    });
    return r;
}

/// tbb::parallel_pipeline: serial in-order source, 3 parallel no-op filters, serial in-order sink.
run_result run_parallel_pipeline(u64 n, int t, std::size_t tokens) {
    auto control = worker_limit(t);
    tbb::task_arena arena(t, 0);
    arena.initialize();
    run_result r;
    arena.execute([&] {
        u64 next = 0;
        const auto t0 = bench_clock::now();
        tbb::parallel_pipeline(
            tokens, tbb::make_filter<void, u64>(tbb::filter_mode::serial_in_order,
                                                [&](tbb::flow_control& fc) -> u64 {
                                                    if (next == n) {
                                                        fc.stop();
                                                        return 0;
                                                    }
                                                    return next++;
                                                }) &
                        tbb::make_filter<u64, u64>(tbb::filter_mode::parallel, noop) &
                        tbb::make_filter<u64, u64>(tbb::filter_mode::parallel, noop) &
                        tbb::make_filter<u64, u64>(tbb::filter_mode::parallel, noop) &
                        tbb::make_filter<u64, void>(tbb::filter_mode::serial_in_order, [&](u64 x) {
                            r.sum += x;
                            ++r.count;
                        }));
        r.seconds = std::chrono::duration<double>(bench_clock::now() - t0).count();
    });
    return r;
}

enum class variant_kind { ferry_ordered, ferry_unordered, flow, flow_limiter, pipeline };

struct variant {
    variant_kind kind;
    const char* name;
    const char* flag;  ///< its name for --variants
};

constexpr variant kVariants[] = {
    {variant_kind::ferry_ordered, "ferry", "ferry"},
    {variant_kind::ferry_unordered, "ferry unordered", "ferry-unordered"},
    {variant_kind::flow, "tbb::flow", "flow"},
    {variant_kind::flow_limiter, "tbb::flow+limiter", "flow-limiter"},
    {variant_kind::pipeline, "parallel_pipeline", "pipeline"},
};

struct series {
    int threads = 0;
    int concurrency = 0;
    std::size_t in_flight = 0;
    const variant* v = nullptr;
    std::vector<double> rates;  // items/s, one per repetition

    [[nodiscard]] std::vector<double> sorted() const {
        auto s = rates;
        std::sort(s.begin(), s.end());
        return s;
    }
    [[nodiscard]] double median() const {
        auto s = sorted();
        if (s.empty()) return 0;
        const std::size_t m = s.size() / 2;
        return s.size() % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
    }
    [[nodiscard]] double min() const { return sorted().front(); }
    [[nodiscard]] double max() const { return sorted().back(); }
};

run_result run_variant(const series& s, u64 n, bool print_stats) {
    switch (s.v->kind) {
        case variant_kind::ferry_ordered:
            return run_ferry(n, s.threads, s.concurrency, s.in_flight, true, print_stats);
        case variant_kind::ferry_unordered:
            return run_ferry(n, s.threads, s.concurrency, s.in_flight, false, print_stats);
        case variant_kind::flow:
            return run_flow(n, s.threads, s.concurrency, 0);
        case variant_kind::flow_limiter:
            return run_flow(n, s.threads, s.concurrency, s.in_flight);
        case variant_kind::pipeline:
            return run_parallel_pipeline(n, s.threads, s.in_flight);
    }
    return {};
}

[[noreturn]] void usage(const char* argv0, const std::string& problem) {
    std::fprintf(stderr,
                 "%s\nusage: %s [--items N] [--reps R] [--threads 1,2] [--concurrency C] "
                 "[--in-flight K] [--variants a,b] [--stats] [--json]\n",
                 problem.c_str(), argv0);
    std::exit(2);
}

template <class T>
T parse_number(const char* argv0, std::string_view flag, std::string_view text) {
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
        usage(argv0, std::string(flag) + ": not a number: '" + std::string(text) + "'");
    }
    return value;
}

config parse(int argc, char** argv) {
    config cfg;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= argc) usage(argv[0], std::string(arg) + " needs a value");
            return argv[++i];
        };
        if (arg == "--items") {
            cfg.items = parse_number<u64>(argv[0], arg, value());
        } else if (arg == "--reps") {
            cfg.reps = parse_number<int>(argv[0], arg, value());
        } else if (arg == "--concurrency") {
            cfg.concurrency = parse_number<int>(argv[0], arg, value());
        } else if (arg == "--in-flight") {
            cfg.in_flight = parse_number<std::size_t>(argv[0], arg, value());
        } else if (arg == "--threads") {
            cfg.threads.clear();
            std::string_view list = value();
            while (!list.empty()) {
                const auto comma = list.find(',');
                cfg.threads.push_back(parse_number<int>(argv[0], arg, list.substr(0, comma)));
                list =
                    comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
            }
        } else if (arg == "--stats") {
            cfg.stats = true;
        } else if (arg == "--variants") {
            std::string_view list = value();
            while (!list.empty()) {
                const auto comma = list.find(',');
                cfg.variants.emplace_back(list.substr(0, comma));
                list =
                    comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
            }
        } else if (arg == "--json") {
            cfg.json = true;
        } else if (arg == "--help" || arg == "-h") {
            usage(argv[0], "engine_overhead: ferry vs hand-written oneTBB, items/s");
        } else {
            usage(argv[0], "unknown argument '" + std::string(arg) + "'");
        }
    }
    if (cfg.items == 0) usage(argv[0], "--items must be at least 1");
    if (cfg.reps < 1) usage(argv[0], "--reps must be at least 1");
    if (cfg.concurrency < 0) usage(argv[0], "--concurrency must be 0 (= threads) or positive");
    for (const auto& name : cfg.variants) {
        if (std::none_of(std::begin(kVariants), std::end(kVariants),
                         [&](const variant& v) { return name == v.flag; })) {
            usage(argv[0], "--variants: unknown variant '" + name +
                               "' (ferry, ferry-unordered, flow, flow-limiter, pipeline)");
        }
    }
    if (cfg.threads.empty()) usage(argv[0], "--threads needs at least one thread count");
    for (int t : cfg.threads) {
        if (t < 1) usage(argv[0], "--threads: every count must be at least 1");
    }
    return cfg;
}

std::string rate_text(double r) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f M", r / 1e6);
    return buf;
}

std::string ratio_text(double num, double den) {
    if (den <= 0) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100.0 * num / den);
    return buf;
}

/// The median items/s of a variant at `threads`, or 0 when it was not run (--variants).
double median_of(const std::vector<series>& all, int threads, variant_kind k) {
    for (const auto& s : all) {
        if (s.threads == threads && s.v->kind == k) return s.median();
    }
    return 0;
}

const series* find_series(const std::vector<series>& all, int threads, variant_kind k) {
    for (const auto& s : all) {
        if (s.threads == threads && s.v->kind == k) return &s;
    }
    return nullptr;
}

/// Median of the per-repetition ratios a[i] / b[i]: runs of one repetition sit next to each
/// other in time, so this pairing cancels slow drifts in machine load better than a ratio of
/// medians does.
double paired_ratio(const series& a, const series& b) {
    std::vector<double> r;
    for (std::size_t i = 0; i < a.rates.size() && i < b.rates.size(); ++i) {
        if (b.rates[i] > 0) r.push_back(a.rates[i] / b.rates[i]);
    }
    if (r.empty()) return 0;
    std::sort(r.begin(), r.end());
    const std::size_t m = r.size() / 2;
    return r.size() % 2 == 1 ? r[m] : (r[m - 1] + r[m]) / 2;
}

/// CPU seconds summed over all CPUs, from /proc/stat (Linux); nullopt elsewhere.
struct cpu_times {
    double busy = 0;
    double total = 0;
};
std::optional<cpu_times> machine_cpu() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
        cpu != "cpu") {
        return std::nullopt;
    }
    const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double busy = user + nice + system + irq + softirq + steal;
    return cpu_times{busy / tick, (busy + idle + iowait) / tick};
}

/// CPU seconds this process has used.
double own_cpu() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6; };
    return secs(ru.ru_utime) + secs(ru.ru_stime);
}

/// How busy the machine was with other processes: the benchmark shares it, so this says how far
/// the numbers can be trusted. Fractions of all CPUs; negative when unknown.
struct machine_load {
    double before = -1;  ///< in the 0.5 s before the first run
    double during = -1;  ///< during the whole benchmark, minus this process's own CPU time
    std::string loadavg;

    void sample_before() {
        const auto a = machine_cpu();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        const auto b = machine_cpu();
        if (a && b && b->total > a->total) before = (b->busy - a->busy) / (b->total - a->total);
        std::ifstream in("/proc/loadavg");
        std::getline(in, loadavg);
    }
    void start() {
        start_ = machine_cpu();
        own0_ = own_cpu();
    }
    void stop() {
        const auto end = machine_cpu();
        if (!start_ || !end || end->total <= start_->total) return;
        const double others = (end->busy - start_->busy) - (own_cpu() - own0_);
        during = std::max(0.0, others / (end->total - start_->total));
    }

  private:
    std::optional<cpu_times> start_;
    double own0_ = 0;
};

std::string percent_text(double f) {
    if (f < 0) return "unknown";
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.0f%%", 100 * f);
    return buf;
}

void print_markdown(const config& cfg, const std::vector<series>& all, const machine_load& load) {
    std::printf(
        "engine_overhead: source -> 3 no-op maps -> consumer; %llu items, %d rep(s), "
        "median items/s (min-max); %u hardware threads; oneTBB %s\n",
        static_cast<unsigned long long>(cfg.items), cfg.reps, std::thread::hardware_concurrency(),
        TBB_runtime_version());
    std::printf(
        "Machine: other processes used %s of the CPUs during the benchmark (%s just before); "
        "load average %s\n",
        percent_text(load.during).c_str(), percent_text(load.before).c_str(),
        load.loadavg.empty() ? "unknown" : load.loadavg.c_str());
    if (load.during > 0.1 || load.before > 0.1) {
        std::printf(
            "WARNING: the machine was busy with other work; absolute numbers are unreliable and "
            "ratios are skewed (spinning engines suffer most). Rerun on an idle machine.\n");
    }
    std::printf(
        "\n| threads | conc | in_flight | variant | median items/s | min - max | "
        "vs tbb::flow | vs flow+limiter | vs parallel_pipeline |\n");
    std::printf("|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
    for (const auto& s : all) {
        const double m = s.median();
        const std::string bound =
            s.v->kind == variant_kind::flow ? "unbounded" : std::to_string(s.in_flight);
        std::printf("| %d | %d | %s | %s | %s | %s - %s | %s | %s | %s |\n", s.threads,
                    s.concurrency, bound.c_str(), s.v->name, rate_text(m).c_str(),
                    rate_text(s.min()).c_str(), rate_text(s.max()).c_str(),
                    ratio_text(m, median_of(all, s.threads, variant_kind::flow)).c_str(),
                    ratio_text(m, median_of(all, s.threads, variant_kind::flow_limiter)).c_str(),
                    ratio_text(m, median_of(all, s.threads, variant_kind::pipeline)).c_str());
    }
    std::printf("\nTarget (issue): ferry >= 50%% of tbb::flow in the same run (goal 80%%).\n");
    for (int t : cfg.threads) {
        const series* raw = find_series(all, t, variant_kind::flow);
        if (raw == nullptr) continue;
        for (auto k : {variant_kind::ferry_ordered, variant_kind::ferry_unordered}) {
            const series* f = find_series(all, t, k);
            if (f == nullptr) continue;
            const double r = f->median() / raw->median();
            std::printf("threads=%d: %s / tbb::flow = %.2f (median of per-rep ratios %.2f): %s\n",
                        t, f->v->name, r, paired_ratio(*f, *raw),
                        r >= 0.8   ? "meets the 80% goal"
                        : r >= 0.5 ? "meets the 50% floor, below the 80% goal"
                                   : "BELOW the 50% floor");
        }
    }
}

/// A ratio for JSON: null when the baseline was not run.
std::string json_ratio(double num, double den) {
    return den > 0 ? std::to_string(num / den) : std::string("null");
}

void print_json(const config& cfg, const std::vector<series>& all, const machine_load& load) {
    std::ostringstream os;
    os << "{\n  \"benchmark\": \"engine_overhead\",\n  \"items\": " << cfg.items
       << ",\n  \"reps\": " << cfg.reps
       << ",\n  \"hardware_threads\": " << std::thread::hardware_concurrency() << ",\n  \"tbb\": \""
       << TBB_runtime_version() << "\",\n  \"other_cpu_before\": " << load.before
       << ",\n  \"other_cpu_during\": " << load.during << ",\n  \"results\": [\n";
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto& s = all[i];
        const double m = s.median();
        const series* flow = find_series(all, s.threads, variant_kind::flow);
        const std::string paired =
            flow != nullptr ? std::to_string(paired_ratio(s, *flow)) : std::string("null");
        os << "    {\"threads\": " << s.threads << ", \"concurrency\": " << s.concurrency
           << ", \"in_flight\": " << (s.v->kind == variant_kind::flow ? 0 : s.in_flight)
           << ", \"variant\": \"" << s.v->flag << "\", \"median\": " << m
           << ", \"min\": " << s.min() << ", \"max\": " << s.max()
           << ", \"vs_flow\": " << json_ratio(m, median_of(all, s.threads, variant_kind::flow))
           << ", \"paired_vs_flow\": " << paired << ", \"vs_flow_limiter\": "
           << json_ratio(m, median_of(all, s.threads, variant_kind::flow_limiter))
           << ", \"vs_parallel_pipeline\": "
           << json_ratio(m, median_of(all, s.threads, variant_kind::pipeline)) << ", \"rates\": [";
        for (std::size_t k = 0; k < s.rates.size(); ++k) os << (k ? ", " : "") << s.rates[k];
        os << "]}" << (i + 1 < all.size() ? "," : "") << '\n';
    }
    os << "  ]\n}\n";
    std::fputs(os.str().c_str(), stdout);
}

}  // namespace

int main(int argc, char** argv) {
    const config cfg = parse(argc, argv);

    std::vector<series> all;
    for (int t : cfg.threads) {
        const int c = cfg.concurrency > 0 ? cfg.concurrency : t;
        const std::size_t in_flight = cfg.in_flight > 0 ? cfg.in_flight : ferry_in_flight(t, c);
        for (const auto& v : kVariants) {
            if (cfg.variants.empty() ||
                std::find(cfg.variants.begin(), cfg.variants.end(), v.flag) != cfg.variants.end()) {
                all.push_back({t, c, in_flight, &v, {}});
            }
        }
    }

    const u64 n = cfg.items;
    const u64 expected_sum = n % 2 == 0 ? (n / 2) * (n - 1) : n * ((n - 1) / 2);
    bool ok = true;
    auto check = [&](const series& s, const run_result& r, u64 items, u64 sum) {
        if (r.count != items || r.sum != sum) {
            std::fprintf(stderr, "%s threads=%d: got %llu items (sum %llu), expected %llu (%llu)\n",
                         s.v->name, s.threads, static_cast<unsigned long long>(r.count),
                         static_cast<unsigned long long>(r.sum),
                         static_cast<unsigned long long>(items),
                         static_cast<unsigned long long>(sum));
            ok = false;
        }
    };

    machine_load load;
    load.sample_before();
    load.start();

    // Warm-up: starts TBB's workers and faults in the allocators; not timed.
    const u64 warm = std::max<u64>(1, n / 10);
    for (const auto& s : all) {
        const auto r = run_variant(s, warm, false);
        check(s, r, warm, warm % 2 == 0 ? (warm / 2) * (warm - 1) : warm * ((warm - 1) / 2));
    }

    for (int rep = 0; rep < cfg.reps; ++rep) {
        for (auto& s : all) {
            const bool is_ferry = s.v->kind == variant_kind::ferry_ordered ||
                                  s.v->kind == variant_kind::ferry_unordered;
            const auto r = run_variant(s, n, cfg.stats && is_ferry && rep + 1 == cfg.reps);
            check(s, r, n, expected_sum);
            s.rates.push_back(static_cast<double>(n) / r.seconds);
            std::fprintf(stderr, "rep %d/%d threads=%d %-18s %8.3f M items/s\n", rep + 1, cfg.reps,
                         s.threads, s.v->name, s.rates.back() / 1e6);
        }
    }

    load.stop();

    if (cfg.json) {
        print_json(cfg, all, load);
    } else {
        print_markdown(cfg, all, load);
    }
    return ok ? 0 : 1;
}
