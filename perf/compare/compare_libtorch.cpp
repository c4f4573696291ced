// SPDX-License-Identifier: Apache-2.0
/// \file
/// compare_runner_torch: perf/compare's job for libtorch users, run as its own process like
/// compare_runner (same job, same JSON line). Runners:
///
///  * `libtorch`     libtorch's own C++ DataLoader as a libtorch user writes it:
///                   `torch::data::make_data_loader` (sequential sampler, `workers` = --threads,
///                   0 = in the calling thread) over a `Dataset` whose `get(i)` reads and decodes
///                   the file with `cv::imread`, crops with torchvision's RandomResizedCrop box,
///                   resizes with `cv::resize` (bilinear), flips with `cv::flip`, converts BGR to
///                   RGB and copies the pixels into a tensor; `Stack<>` collation. The crop boxes
///                   and flips are drawn as ferry's runners draw them (`rng_for`, torchvision's
///                   get_params step for step): the same work, other resize code.
///  * `ferry-torch`  ferry's best row of perf/compare (`ferry-roi-fast`: region decode with the
///                   fast IDCT, read on --read I/O threads, decode with concurrency = threads,
///                   collate) ending in `.map(ferry::to_torch)`, so the handoff's cost is in the
///                   number.
///  * `ferry-collate` the same pipeline ending at collate, in this same process (libtorch
///                   loaded): the row `ferry-torch` is measured against, so that the two differ
///                   by the handoff alone (not with --train).
///
/// OpenCV's own threads are off (`cv::setNumThreads(1)`, as ferry sets them) and libtorch's
/// intra-op threads are 1 unless --train says otherwise, so that --threads is the loader's
/// thread count. libtorch's intra-op threads are OpenMP's, set per thread: run with
/// OMP_NUM_THREADS=1 (compare.py does) or each DataLoader worker's tensor ops start a team of
/// their own.
///
/// `--train` adds the end-to-end run: one small libtorch CNN (3 strided convolutions, global
/// average pooling, a linear layer; SGD with momentum) takes a training step on every batch the
/// loader delivers, with `--model-threads` intra-op threads (`torch::set_num_threads`). The JSON
/// line then has steps, steps_per_s, wait_s (time the training loop spent waiting for the next
/// batch) and wait_fraction (wait_s over the run's wall time) and the last loss.
///
///   compare_runner_torch --runner libtorch|ferry-torch|ferry-collate --data DIR [--threads 2]
///   [--read 2]
///                        [--train] [--model-threads 1]
///
/// Prints one JSON object: runner, threads, images, seconds, first_batch_s, cpu_s, max_rss_kb as
/// compare_runner does, plus batches and shapes (each run of equal batch shapes, e.g.
/// "32x224x224x3 x2, 6x224x224x3") and dtype.

#include <torch/torch.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "compare_job.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"
#include "ferry/torch.hpp"

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

namespace {

constexpr int batch_size = ferry_perf::compare_batch_size;
constexpr int side = ferry_perf::compare_side;

struct options {
    std::string runner;
    fs::path data;
    int threads = 2;
    int read = 2;
    bool train = false;
    int model_threads = 1;
};

/// torchvision's RandomResizedCrop.get_params (scale 0.08-1, ratio 3/4-4/3), ported to C++ the
/// way ferry's random_resized_crop_box draws it, so that both pick the same box from the same
/// generator: what a libtorch user porting torchvision writes.
cv::Rect random_resized_crop_box(int width, int height, std::mt19937_64& rng) {
    auto uniform01 = [&] { return static_cast<double>(rng() >> 11) * 0x1.0p-53; };
    auto uniform_int = [&](int n) { return static_cast<int>(rng() % (std::uint64_t(n) + 1)); };
    const double area = static_cast<double>(width) * height;
    const double log_rmin = std::log(3.0 / 4.0);
    const double log_rmax = std::log(4.0 / 3.0);
    for (int attempt = 0; attempt < 10; ++attempt) {
        const double target_area = area * (0.08 + (1.0 - 0.08) * uniform01());
        const double aspect = std::exp(log_rmin + (log_rmax - log_rmin) * uniform01());
        const int w = static_cast<int>(std::nearbyint(std::sqrt(target_area * aspect)));
        const int h = static_cast<int>(std::nearbyint(std::sqrt(target_area / aspect)));
        if (w > 0 && w <= width && h > 0 && h <= height) {
            const int y = uniform_int(height - h);
            const int x = uniform_int(width - w);
            return {x, y, w, h};
        }
    }
    const double in_ratio = static_cast<double>(width) / height;
    int w = width;
    int h = height;
    if (in_ratio < 3.0 / 4.0) {
        h = static_cast<int>(std::nearbyint(w / (3.0 / 4.0)));
    } else if (in_ratio > 4.0 / 3.0) {
        w = static_cast<int>(std::nearbyint(h * (4.0 / 3.0)));
    }
    w = std::max(1, std::min(w, width));
    h = std::max(1, std::min(h, height));
    return {(width - w) / 2, (height - h) / 2, w, h};
}

/// The libtorch user's dataset: one JPEG per index, decoded and augmented with OpenCV. The
/// target is a made-up class (index % 10): the end-to-end run needs one, the loader run
/// carries it as a user's would.
class jpeg_folder : public torch::data::datasets::Dataset<jpeg_folder> {
  public:
    explicit jpeg_folder(std::vector<fs::path> paths) : paths_(std::move(paths)) {}

    torch::data::Example<> get(std::size_t index) override {
        cv::Mat img = cv::imread(paths_[index].string(), cv::IMREAD_COLOR);
        if (img.empty()) throw std::runtime_error("cannot decode " + paths_[index].string());
        std::mt19937_64 rng = ferry_perf::rng_for(index);
        cv::Mat out;
        cv::resize(img(random_resized_crop_box(img.cols, img.rows, rng)), out, cv::Size(side, side),
                   0, 0, cv::INTER_LINEAR);
        if ((rng() & 1) != 0) cv::flip(out, out, 1);
        // imread gives BGR; converting the 224x224 crop rather than the whole image is the
        // cheaper place for it.
        cv::cvtColor(out, out, cv::COLOR_BGR2RGB);
        torch::Tensor data = torch::from_blob(out.data, {side, side, 3}, torch::kByte).clone();
        return {std::move(data), torch::tensor(static_cast<std::int64_t>(index % 10))};
    }

    [[nodiscard]] torch::optional<std::size_t> size() const override { return paths_.size(); }

  private:
    std::vector<fs::path> paths_;
};

/// The end-to-end run's model: small enough that on one core a training step on a batch of 32
/// takes about as long as loading it, so that neither side hides the other.
struct small_cnn : torch::nn::Module {
    small_cnn()
        : c1(register_module("c1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 4).stride(4)))),
          c2(register_module(
              "c2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3).stride(2).padding(1)))),
          c3(register_module(
              "c3", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).stride(2).padding(1)))),
          fc(register_module("fc", torch::nn::Linear(32, 10))) {}

    torch::Tensor forward(torch::Tensor x) {
        x = torch::relu(c1->forward(x));  // 56x56
        x = torch::relu(c2->forward(x));  // 28x28
        x = torch::relu(c3->forward(x));  // 14x14
        x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
        return fc->forward(x);
    }

    torch::nn::Conv2d c1, c2, c3;
    torch::nn::Linear fc;
};

struct result {
    long long images = 0;
    long long batches = 0;
    double seconds = 0;
    double first_batch_s = -1;
    std::string shapes;  ///< runs of equal batch shapes, "32x224x224x3 x2, 6x224x224x3"
    std::string dtype;
    std::string last_shape;
    long long last_count = 0;
    // --train
    double wait_s = 0;
    double loss = 0;
};

void flush_shape(result& r) {
    if (r.last_count == 0) return;
    if (!r.shapes.empty()) r.shapes += ", ";
    r.shapes += r.last_shape;
    if (r.last_count > 1) r.shapes += " x" + std::to_string(r.last_count);
}

/// Counts a batch: its images, its shape (runs of equal shapes) and its element type.
void note_batch(result& r, const std::vector<std::int64_t>& sizes, const std::string& dtype,
                steady::time_point t0) {
    if (r.first_batch_s < 0) {
        r.first_batch_s = std::chrono::duration<double>(steady::now() - t0).count();
    }
    r.images += sizes.empty() ? 0 : sizes[0];
    ++r.batches;
    std::string shape;
    for (std::int64_t d : sizes) shape += (shape.empty() ? "" : "x") + std::to_string(d);
    r.dtype = dtype;
    if (shape == r.last_shape) {
        ++r.last_count;
    } else {
        flush_shape(r);
        r.last_shape = shape;
        r.last_count = 1;
    }
}

void note_batch(result& r, const torch::Tensor& t, steady::time_point t0) {
    note_batch(r, t.sizes().vec(), std::string(c10::toString(t.scalar_type())), t0);
}

/// A ferry batch, named by torch's type name for the same dtype (the rows compare alike).
void note_batch(result& r, const ferry::tensor& t, steady::time_point t0) {
    note_batch(r, t.shape(), std::string(c10::toString(ferry::torch_dtype(t.dtype()))), t0);
}

/// One training step on a batch of uint8 NHWC images; returns the loss.
class trainer {
  public:
    trainer() : opt_(model_.parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)) {}

    double step(const torch::Tensor& images, const torch::Tensor& targets) {
        const torch::Tensor x = images.permute({0, 3, 1, 2}).to(torch::kFloat).div_(255.0);
        opt_.zero_grad();
        torch::Tensor loss = torch::nn::functional::cross_entropy(model_.forward(x), targets);
        loss.backward();
        opt_.step();
        return loss.item<double>();
    }

  private:
    small_cnn model_;
    torch::optim::SGD opt_;
};

/// Iterates `range`, timing how long each next batch takes to arrive; calls `use(batch)`.
template <class Range, class Use>
void drain(Range& range, result& r, Use use) {
    auto wait_from = steady::now();
    auto it = range.begin();
    const auto end = range.end();
    while (it != end) {
        r.wait_s += std::chrono::duration<double>(steady::now() - wait_from).count();
        use(*it);
        wait_from = steady::now();
        ++it;
    }
    r.wait_s += std::chrono::duration<double>(steady::now() - wait_from).count();
}

result run_libtorch(const std::vector<fs::path>& paths, const options& o) {
    result r;
    std::optional<trainer> model;
    if (o.train) model.emplace();
    const auto t0 = steady::now();
    auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
        jpeg_folder(paths).map(torch::data::transforms::Stack<>()),
        torch::data::DataLoaderOptions().batch_size(batch_size).workers(o.threads));
    drain(*loader, r, [&](torch::data::Example<>& batch) {
        note_batch(r, batch.data, t0);
        if (model) r.loss = model->step(batch.data, batch.target);
    });
    r.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return r;
}

/// ferry's best pipeline; `handoff`: ending in `.map(ferry::to_torch)` (the `ferry-torch` row),
/// else at collate (`ferry-collate`: the same work without the handoff, in this same process,
/// libtorch loaded, so that the two rows differ by the handoff alone).
result run_ferry(const std::vector<fs::path>& paths, const options& o, bool handoff) {
    result r;
    std::optional<trainer> model;
    if (o.train) model.emplace();
    const auto t0 = steady::now();
    std::vector<std::size_t> order(paths.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto read = [&](std::size_t i) { return std::pair{i, ferry::ops::read_file(paths[i])}; };
    auto decode = [](const std::pair<std::size_t, ferry::bytes>& in) {
        return ferry_perf::transform(in.second, in.first, ferry::interpolation::bilinear,
                                     ferry_perf::decode_mode::roi_fast);
    };
    auto collated = ferry::from(order)
                        .map(read, {.concurrency = o.read, .name = "read", .executor = ferry::io})
                        .map(decode, {.concurrency = o.threads, .name = "decode"})
                        .batch(batch_size)
                        .map(ferry::ops::collate, {.name = "collate"});
    if (!handoff) {
        auto p = collated.build({.threads = o.threads});
        drain(p, r, [&](ferry::tensor& batch) { note_batch(r, batch, t0); });
        r.seconds = std::chrono::duration<double>(steady::now() - t0).count();
        return r;
    }
    auto p = collated.map(ferry::to_torch, {.name = "to_torch"}).build({.threads = o.threads});
    // The same made-up classes as the libtorch dataset's (index % 10), in order.
    std::int64_t next_index = 0;
    drain(p, r, [&](torch::Tensor& batch) {
        note_batch(r, batch, t0);
        if (model) {
            const torch::Tensor targets =
                torch::arange(next_index, next_index + batch.size(0), torch::kLong).remainder(10);
            r.loss = model->step(batch, targets);
        }
        next_index += batch.size(0);
    });
    r.seconds = std::chrono::duration<double>(steady::now() - t0).count();
    return r;
}

[[noreturn]] void usage(int code) {
    std::cerr
        << "usage: compare_runner_torch --runner libtorch|ferry-torch|ferry-collate --data DIR "
           "[--threads N] [--read N] [--train] [--model-threads N]\n";
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
            o.threads = std::max(0, std::atoi(value().c_str()));
        } else if (a == "--read") {
            o.read = std::max(1, std::atoi(value().c_str()));
        } else if (a == "--train") {
            o.train = true;
        } else if (a == "--model-threads") {
            o.model_threads = std::max(1, std::atoi(value().c_str()));
        } else {
            usage(a == "--help" || a == "-h" ? 0 : 2);
        }
    }
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    options o = parse(argc, argv);
    if (o.runner.empty() || o.data.empty()) usage(2);
    // ferry needs a thread to run on; the DataLoader's 0 workers means the calling thread.
    if (o.runner != "libtorch") o.threads = std::max(1, o.threads);
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(o.data)) {
        if (e.path().extension() == ".jpg") paths.push_back(e.path());
    }
    std::sort(paths.begin(), paths.end());
    if (paths.empty()) {
        std::cerr << "compare_runner_torch: no .jpg files in " << o.data << '\n';
        return 2;
    }
    cv::setNumThreads(1);
    torch::set_num_threads(o.train ? o.model_threads : 1);
    torch::manual_seed(0);
    const double cpu0 = ferry_perf::cpu_seconds();  // not counting listing the files
    result r;
    if (o.runner == "libtorch") {
        r = run_libtorch(paths, o);
    } else if (o.runner == "ferry-torch") {
        r = run_ferry(paths, o, true);
    } else if (o.runner == "ferry-collate" && !o.train) {
        r = run_ferry(paths, o, false);
    } else {
        usage(2);
    }
    flush_shape(r);
    if (r.images != static_cast<long long>(paths.size())) {
        std::cerr << "compare_runner_torch: " << o.runner << " delivered " << r.images << " of "
                  << paths.size() << " images\n";
        return 1;
    }
    const double cpu = ferry_perf::cpu_seconds() - cpu0;
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    std::printf(
        "{\"runner\": \"%s\", \"threads\": %d, \"images\": %lld, \"seconds\": %.4f, "
        "\"first_batch_s\": %.4f, \"cpu_s\": %.3f, \"max_rss_kb\": %ld, \"batches\": %lld, "
        "\"shapes\": \"%s\", \"dtype\": \"%s\"",
        o.runner.c_str(), o.threads, r.images, r.seconds, r.first_batch_s, cpu, ru.ru_maxrss,
        r.batches, r.shapes.c_str(), r.dtype.c_str());
    if (o.train) {
        std::printf(
            ", \"model_threads\": %d, \"steps\": %lld, \"steps_per_s\": %.3f, \"wait_s\": %.4f, "
            "\"wait_fraction\": %.4f, \"loss\": %.4f",
            o.model_threads, r.batches, static_cast<double>(r.batches) / r.seconds, r.wait_s,
            r.wait_s / r.seconds, r.loss);
    }
    std::printf("}\n");
    return 0;
}
