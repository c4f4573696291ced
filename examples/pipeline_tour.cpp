// This program demonstrates a complete loading pipeline: files -> read (I/O threads, retries)
// -> decode (skip corrupt) -> filter -> batch -> collate -> a toy training loop over 3 epochs.
//
// It needs no media library: it writes a synthetic dataset of small binary "records" (a label
// and 16 float features) to a temporary directory, with some of them broken on purpose — a
// missing file, empty files, truncated files, bad checksums — and some storage that fails
// transiently. A logistic regression trains on what comes out, so there is a real number (the
// loss) that improves from epoch to epoch. At the end it prints the per-stage stats table, the
// failures, and checks that every record is accounted for.
//
//   pipeline_tour [--items N] [--epochs N] [--threads N] [--decode-concurrency N] [--seed S]

#include <stdlib.h>  // mkdtemp (POSIX)

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <ferry/ferry.hpp>

namespace fs = std::filesystem;

namespace {

// ---- command line ------------------------------------------------------------------------------

struct config {
    std::uint64_t items = 4000;
    int epochs = 3;
    int threads = 2;
    int decode_concurrency = 2;
    std::uint64_t seed = 42;
};

std::optional<config> parse_args(int argc, char** argv) {
    config c;
    for (int i = 1; i < argc; ++i) {
        const std::string_view flag = argv[i];
        if (flag == "--help" || flag == "-h" || i + 1 >= argc) return std::nullopt;
        const std::string value = argv[++i];
        try {
            if (flag == "--items") {
                c.items = std::stoull(value);
            } else if (flag == "--epochs") {
                c.epochs = std::stoi(value);
            } else if (flag == "--threads") {
                c.threads = std::stoi(value);
            } else if (flag == "--decode-concurrency") {
                c.decode_concurrency = std::stoi(value);
            } else if (flag == "--seed") {
                c.seed = std::stoull(value);
            } else {
                return std::nullopt;
            }
        } catch (const std::exception&) {
            return std::nullopt;
        }
    }
    if (c.items == 0 || c.epochs < 1 || c.threads < 1 || c.decode_concurrency < 1) {
        return std::nullopt;
    }
    return c;
}

// ---- the record format
// ---------------------------------------------------------------------------
//
//   "FRY1" | label u8 (0, 1, or 2 = unlabeled) | dim u8 | 2 reserved bytes | dim x f32 | fnv1a u32
// Native byte order: the dataset is written and read on the same machine.

constexpr std::size_t dim = 16;
constexpr std::size_t header_size = 8;
constexpr std::size_t record_size = header_size + dim * sizeof(float) + sizeof(std::uint32_t);
constexpr std::uint8_t unlabeled = 2;

std::uint32_t fnv1a(const unsigned char* p, std::size_t n) {
    std::uint32_t h = 2166136261u;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
    return h;
}

/// What the generator did to record i. The pattern depends only on i, so the counts (and the
/// test's expected output) depend only on --items; --seed changes the features and the shuffles.
enum class damage { none, missing, empty, truncated, bad_checksum, unlabeled };

damage damage_of(std::uint64_t i) {
    if (i == 7) return damage::missing;
    if (i % 211 == 100) return damage::empty;
    if (i % 97 == 50) return damage::truncated;
    if (i % 89 == 11) return damage::bad_checksum;
    if (i % 23 == 3) return damage::unlabeled;
    return damage::none;
}

/// Files whose first read attempt (of every pair of attempts) fails, as a flaky disk would.
bool is_flaky(std::uint64_t i) {
    return i % 61 == 5;
}

/// Portable randomness: mt19937_64's raw output is specified by the standard (the
/// std::*_distribution classes are not), so a seed gives the same data everywhere.
double uniform01(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}
double normal(std::mt19937_64& rng) {
    const double u1 = 1.0 - uniform01(rng);
    const double u2 = uniform01(rng);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

struct dataset {
    fs::path dir;
    std::vector<fs::path> files;  ///< the manifest: what the loader is told to read
    std::map<damage, std::uint64_t> counts;
    std::uint64_t flaky = 0;

    [[nodiscard]] std::uint64_t count(damage d) const {
        const auto it = counts.find(d);
        return it == counts.end() ? 0 : it->second;
    }
};

dataset write_dataset(const fs::path& dir, std::uint64_t items, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::array<double, dim> w_true{};
    for (auto& w : w_true) w = normal(rng);

    dataset ds{dir, {}, {}, 0};
    for (std::uint64_t i = 0; i < items; ++i) {
        char name[32];
        std::snprintf(name, sizeof name, "rec%06llu.bin", static_cast<unsigned long long>(i));
        const fs::path path = dir / name;
        ds.files.push_back(path);
        const damage d = damage_of(i);
        ++ds.counts[d];
        if (is_flaky(i) && d != damage::missing) ++ds.flaky;

        // Features ~ N(0, 1); label = [w_true . x + noise > 0], so the classes are learnable
        // but not perfectly separable.
        std::array<float, dim> x{};
        double score = 0;
        for (std::size_t k = 0; k < dim; ++k) {
            x[k] = static_cast<float>(normal(rng));
            score += w_true[k] * x[k];
        }
        score += 1.5 * normal(rng);
        if (d == damage::missing) continue;

        std::array<unsigned char, record_size> rec{};
        std::memcpy(rec.data(), "FRY1", 4);
        rec[4] = d == damage::unlabeled ? unlabeled : static_cast<std::uint8_t>(score > 0);
        rec[5] = static_cast<unsigned char>(dim);
        std::memcpy(rec.data() + header_size, x.data(), dim * sizeof(float));
        const std::uint32_t sum = fnv1a(rec.data(), record_size - sizeof(std::uint32_t));
        std::memcpy(rec.data() + record_size - sizeof sum, &sum, sizeof sum);
        if (d == damage::bad_checksum) rec[header_size + 3] ^= 0x40;

        std::size_t n = record_size;
        if (d == damage::empty) n = 0;
        if (d == damage::truncated) n = 30;
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(rec.data()), static_cast<std::streamsize>(n));
        if (!out) throw std::runtime_error("cannot write " + path.string());
    }
    return ds;
}

/// Removes the dataset directory on every way out of main (normal return or exception).
struct temp_dir {
    fs::path path;
    explicit temp_dir(const std::string& prefix) {
        std::string tmpl = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
        if (mkdtemp(tmpl.data()) == nullptr) {
            throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
        }
        path = tmpl;
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
        if (ec) std::cerr << "could not remove " << path << ": " << ec.message() << '\n';
    }
};

// ---- the pipeline's element types and functions ----------------------------------------------

struct file_bytes {
    fs::path path;
    std::vector<unsigned char> data;
};

struct example {
    std::array<float, dim> x{};
    std::uint8_t label = 0;
};

/// A collated batch: one contiguous row-major [n, dim] feature matrix and n targets.
struct batch_tensor {
    std::size_t n = 0;
    std::vector<float> x;
    std::vector<float> y;
};

/// Simulated storage: real file reads, plus a transient EIO on the flaky files' first attempt
/// (of every pair of attempts, so it happens again in each epoch).
class storage {
  public:
    file_bytes read(const fs::path& path) {
        if (is_flaky(index_of(path))) {
            std::lock_guard lock(mutex_);
            if (attempts_[path.string()]++ % 2 == 0) {
                throw ferry::io_error("transient read error (simulated EIO) on " + path.string());
            }
        }
        std::ifstream in(path, std::ios::binary | std::ios::ate);
        if (!in) {
            // A missing file stays missing: not transient, so the stage's retry skips it at once.
            const int err = errno;
            throw ferry::io_error("cannot open " + path.string() + ": " + std::strerror(err),
                                  ferry::transient_errno(err));
        }
        file_bytes f{path, std::vector<unsigned char>(static_cast<std::size_t>(in.tellg()))};
        in.seekg(0);
        in.read(reinterpret_cast<char*>(f.data.data()),
                static_cast<std::streamsize>(f.data.size()));
        if (!in) throw ferry::io_error("short read on " + path.string());
        return f;
    }

  private:
    static std::uint64_t index_of(const fs::path& p) {
        return std::stoull(p.filename().string().substr(3, 6));
    }
    std::mutex mutex_;
    std::unordered_map<std::string, int> attempts_;
};

example decode(const file_bytes& f) {
    const auto name = f.path.filename().string();
    if (f.data.empty()) throw ferry::decode_error(name + ": empty file");
    if (f.data.size() != record_size) {
        throw ferry::decode_error(name + ": truncated record (" + std::to_string(f.data.size()) +
                                  " of " + std::to_string(record_size) + " bytes)");
    }
    if (std::memcmp(f.data.data(), "FRY1", 4) != 0) throw ferry::decode_error(name + ": bad magic");
    if (f.data[5] != dim) throw ferry::decode_error(name + ": unexpected feature count");
    std::uint32_t stored = 0;
    std::memcpy(&stored, f.data.data() + record_size - sizeof stored, sizeof stored);
    if (stored != fnv1a(f.data.data(), record_size - sizeof stored)) {
        throw ferry::decode_error(name + ": checksum mismatch");
    }
    example e;
    e.label = f.data[4];
    std::memcpy(e.x.data(), f.data.data() + header_size, dim * sizeof(float));
    return e;
}

batch_tensor collate(std::vector<example> items) {
    batch_tensor b;
    b.n = items.size();
    b.x.resize(b.n * dim);
    b.y.resize(b.n);
    for (std::size_t i = 0; i < b.n; ++i) {
        std::memcpy(b.x.data() + i * dim, items[i].x.data(), dim * sizeof(float));
        b.y[i] = items[i].label;
    }
    return b;
}

/// The "model": logistic regression trained by minibatch SGD.
struct logistic_regression {
    std::array<double, dim> w{};
    double bias = 0;
    double lr = 0.5;

    /// One step on a batch; returns {mean log-loss, correct predictions} measured before it.
    std::pair<double, std::size_t> step(const batch_tensor& b) {
        std::array<double, dim> grad{};
        double grad_b = 0, loss = 0;
        std::size_t correct = 0;
        for (std::size_t i = 0; i < b.n; ++i) {
            const float* x = b.x.data() + i * dim;
            double z = bias;
            for (std::size_t k = 0; k < dim; ++k) z += w[k] * x[k];
            const double p = 1.0 / (1.0 + std::exp(-z));
            const double y = b.y[i];
            loss -= y * std::log(p + 1e-12) + (1 - y) * std::log(1 - p + 1e-12);
            correct += static_cast<std::size_t>((p > 0.5) == (y > 0.5));
            for (std::size_t k = 0; k < dim; ++k) grad[k] += (p - y) * x[k];
            grad_b += p - y;
        }
        const double scale = lr / static_cast<double>(b.n);
        for (std::size_t k = 0; k < dim; ++k) w[k] -= scale * grad[k];
        bias -= scale * grad_b;
        return {loss / static_cast<double>(b.n), correct};
    }
};

/// Fisher-Yates with the portable generator above: the file order of one epoch.
std::vector<fs::path> shuffled(std::vector<fs::path> v, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    const auto parsed = parse_args(argc, argv);
    if (!parsed) {
        std::cerr << "usage: pipeline_tour [--items N] [--epochs N] [--threads N] "
                     "[--decode-concurrency N] [--seed S]\n";
        return 2;
    }
    const config cfg = *parsed;
    bool ok = true;

    std::optional<temp_dir> tmp(std::in_place, "ferry_tour_");
    const dataset ds = write_dataset(tmp->path, cfg.items, cfg.seed);
    std::cout << "dataset: " << cfg.items << " records in " << ds.dir.string() << ": "
              << ds.count(damage::missing) << " missing, " << ds.count(damage::empty) << " empty, "
              << ds.count(damage::truncated) << " truncated, " << ds.count(damage::bad_checksum)
              << " bad checksum, " << ds.count(damage::unlabeled) << " unlabeled, " << ds.flaky
              << " on flaky storage\n";
    std::cout << "pipeline: files -> read (io x4, retry 3 then skip) -> decode (x"
              << cfg.decode_concurrency << ", skip) -> labeled -> batch(32) -> collate; threads "
              << cfg.threads << "\n\n";

    storage disk;
    // The epoch factory reshuffles the manifest at the start of every epoch.
    auto pipe =
        ferry::from([&ds, seed = cfg.seed](std::uint64_t epoch) {
            return shuffled(ds.files, seed * 1000003 + epoch);
        })
            .map([&disk](const fs::path& p) { return disk.read(p); },
                 {.concurrency = 4,
                  .name = "read",
                  .on_error = ferry::retry{.attempts = 3,
                                           .backoff = std::chrono::milliseconds(1),
                                           .then = ferry::skip},
                  .executor = ferry::io})
            .map([](const file_bytes& f) { return decode(f); },
                 {.concurrency = cfg.decode_concurrency, .name = "decode", .on_error = ferry::skip})
            .filter([](const example& e) { return e.label != unlabeled; }, {.name = "labeled"})
            .batch(32, {.name = "batch"})
            .map(collate, {.name = "collate"})
            .build({.threads = cfg.threads,
                    // Failed items are reported below; keep the per-item log lines off stdout.
                    .logger = [](ferry::log_level, std::string_view) {}});

    logistic_regression model;
    std::vector<double> losses;
    std::uint64_t delivered_items = 0;
    for (int epoch = 1; epoch <= cfg.epochs; ++epoch) {
        const auto t0 = std::chrono::steady_clock::now();
        std::uint64_t items = 0, batches = 0, correct = 0;
        double loss_sum = 0;
        for (const batch_tensor& b : pipe) {
            const auto [loss, right] = model.step(b);
            loss_sum += loss * static_cast<double>(b.n);
            correct += right;
            items += b.n;
            ++batches;
        }
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const double loss = items > 0 ? loss_sum / static_cast<double>(items) : 0.0;
        losses.push_back(loss);
        delivered_items += items;
        std::printf(
            "epoch %d/%d: %llu items, %llu batches, %.3f s, %.0f items/s, loss %.4f, accuracy "
            "%.1f%%\n",
            epoch, cfg.epochs, static_cast<unsigned long long>(items),
            static_cast<unsigned long long>(batches), secs,
            secs > 0 ? static_cast<double>(items) / secs : 0.0, loss,
            items > 0 ? 100.0 * static_cast<double>(correct) / static_cast<double>(items) : 0.0);
    }
    bool improved = true;
    for (std::size_t i = 1; i < losses.size(); ++i)
        improved = improved && losses[i] < losses[i - 1];
    std::cout << "loss improved every epoch: " << (improved ? "yes" : "no") << "\n\n";

    const ferry::pipeline_stats st = pipe.stats();
    std::cout << st << '\n';

    // Failures: how many per stage, and the first few messages of each.
    const auto failures = pipe.failures();
    std::map<std::string, std::vector<const ferry::failure*>> by_stage;
    for (const auto& f : failures) by_stage[f.stage].push_back(&f);
    std::cout << "failures: " << failures.size() << " (";
    for (bool first = true; const auto& [stage, list] : by_stage) {
        std::cout << (first ? "" : ", ") << stage << ' ' << list.size();
        first = false;
    }
    std::cout << ")\n";
    for (const auto& [stage, list] : by_stage) {
        std::printf("  %-8s %4zu\n", stage.c_str(), list.size());
        for (std::size_t i = 0; i < list.size() && i < 3; ++i) {
            std::printf("           epoch %llu item %llu: %s\n",
                        static_cast<unsigned long long>(list[i]->epoch),
                        static_cast<unsigned long long>(list[i]->item), list[i]->message.c_str());
        }
    }

    // Every source item ends as exactly one of delivered, filtered, failed (or cancelled, for an
    // epoch left early: none here).
    const bool balanced =
        st.produced == st.delivered + st.filtered + st.failed + st.cancelled && st.cancelled == 0;
    std::printf("accounting: %s (produced %llu = delivered %llu + filtered %llu + failed %llu)\n",
                balanced ? "OK" : "MISMATCH", static_cast<unsigned long long>(st.produced),
                static_cast<unsigned long long>(st.delivered),
                static_cast<unsigned long long>(st.filtered),
                static_cast<unsigned long long>(st.failed));
    ok = ok && balanced;

    // And the numbers match what the generator broke on purpose.
    const std::uint64_t epochs = static_cast<std::uint64_t>(cfg.epochs);
    const std::uint64_t missing = ds.count(damage::missing);
    const std::uint64_t undecodable =
        ds.count(damage::empty) + ds.count(damage::truncated) + ds.count(damage::bad_checksum);
    std::uint64_t read_retries = 0;
    for (const auto& s : st.stages) {
        if (s.name == "read") read_retries = s.retries;
    }
    const bool expected = st.produced == epochs * cfg.items && st.delivered == delivered_items &&
                          st.filtered == epochs * ds.count(damage::unlabeled) &&
                          by_stage["read"].size() == epochs * missing &&
                          by_stage["decode"].size() == epochs * undecodable &&
                          failures.size() == st.failed &&
                          // each flaky file needs one retry per epoch; the missing file is not
                          // retried (ENOENT is not transient)
                          read_retries == epochs * ds.flaky;
    std::printf("expected counts: %s (read retries %llu)\n", expected ? "OK" : "MISMATCH",
                static_cast<unsigned long long>(read_retries));
    ok = ok && expected;

    tmp.reset();
    std::cout << "temp directory removed: " << (fs::exists(ds.dir) ? "no" : "yes") << '\n';
    if (!ok) std::cout << "CHECK FAILED\n";
    return ok ? 0 : 1;
}
