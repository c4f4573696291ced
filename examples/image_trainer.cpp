// This program demonstrates ferry feeding a real training loop: image files -> read (I/O
// threads) -> decode + augment (random resized crop, flip; seeded) -> normalize -> batch ->
// collate, into a small neural network trained in plain C++, with test accuracy every epoch.
//
// Data: by default Fashion-MNIST (70 000 labelled 28x28 images) from Debian's
// dataset-fashion-mnist package, unpacked on first run into an image-folder tree of PNG files
// (one file per image, as real datasets are stored) under $XDG_CACHE_HOME/ferry or
// ~/.cache/ferry. Or your own data: --data DIR with DIR/train/<class>/* and DIR/test/<class>/*
// (any format decode_image reads; images are converted to gray and resized to --size).
//
//   image_trainer [--data DIR] [--epochs 3] [--batch-size 64] [--threads N] [--max-items N] ...
//   image_trainer --help

#include <png.h>
#include <zlib.h>

#include <unistd.h>
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cache_dir.hpp"
#include "ferry/ferry.hpp"
#include "ferry/image.hpp"

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

namespace {

// --- the dataset -------------------------------------------------------------------------------

const char* const fashion_classes[10] = {"t-shirt_top", "trouser",   "pullover", "dress",
                                         "coat",        "sandal",    "shirt",    "sneaker",
                                         "bag",         "ankle_boot"};
const fs::path fashion_source = "/usr/share/datasets/fashion-mnist";

/// One labelled file.
struct item {
    fs::path path;
    int label = 0;
};

struct dataset {
    std::vector<std::string> classes;
    std::vector<item> train;
    std::vector<item> test;
};

/// Reads a whole gzip file (the IDX files are gzipped).
std::vector<unsigned char> gunzip(const fs::path& p) {
    gzFile f = gzopen(p.c_str(), "rb");
    if (f == nullptr) throw std::runtime_error("cannot open " + p.string());
    std::vector<unsigned char> out;
    unsigned char chunk[1 << 16];
    int n = 0;
    while ((n = gzread(f, chunk, sizeof chunk)) > 0) out.insert(out.end(), chunk, chunk + n);
    const bool ok = n == 0;
    gzclose(f);
    if (!ok) throw std::runtime_error("corrupt gzip data in " + p.string());
    return out;
}

std::uint32_t be32(const unsigned char* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
           p[3];
}

/// Unpacks one split (IDX images + labels) into dir/<class>/<index>.png.
void unpack_split(const std::string& prefix, const fs::path& dir) {
    const auto images = gunzip(fashion_source / (prefix + "-images-idx3-ubyte.gz"));
    const auto labels = gunzip(fashion_source / (prefix + "-labels-idx1-ubyte.gz"));
    if (images.size() < 16 || be32(images.data()) != 0x803 || labels.size() < 8 ||
        be32(labels.data()) != 0x801) {
        throw std::runtime_error("unexpected IDX headers in " + fashion_source.string());
    }
    const std::uint32_t n = be32(images.data() + 4);
    const std::uint32_t rows = be32(images.data() + 8);
    const std::uint32_t cols = be32(images.data() + 12);
    if (be32(labels.data() + 4) != n || images.size() < 16 + std::size_t{n} * rows * cols) {
        throw std::runtime_error("IDX image and label counts disagree");
    }
    for (const char* c : fashion_classes) fs::create_directories(dir / c);
    for (std::uint32_t i = 0; i < n; ++i) {
        const int label = labels[8 + i];
        char name[32];
        std::snprintf(name, sizeof name, "%05u.png", i);
        const fs::path out = dir / fashion_classes[label] / name;
        png_image img{};
        img.version = PNG_IMAGE_VERSION;
        img.width = cols;
        img.height = rows;
        img.format = PNG_FORMAT_GRAY;
        if (png_image_write_to_file(&img, out.c_str(), 0,
                                    images.data() + 16 + std::size_t{i} * rows * cols, 0,
                                    nullptr) == 0) {
            throw std::runtime_error("cannot write " + out.string() + ": " + img.message);
        }
    }
}

/// The Fashion-MNIST image folder, unpacked into `cache` on first use.
fs::path fashion_mnist(const fs::path& cache) {
    const fs::path root = cache / "fashion-mnist";
    if (fs::exists(root / ".complete")) return root;
    if (!fs::exists(fashion_source / "train-images-idx3-ubyte.gz")) {
        std::cerr << "Fashion-MNIST is not installed (" << fashion_source.string()
                  << " is missing). Install it with:\n    apt-get install dataset-fashion-mnist\n"
                  << "or point --data at your own image folder (DIR/train/<class>/*, "
                     "DIR/test/<class>/*).\n";
        std::exit(2);
    }
    std::cout << "unpacking Fashion-MNIST into " << root.string() << " (70 000 PNG files, once)"
              << std::endl;
    const auto t0 = steady::now();
    fs::remove_all(root);
    unpack_split("train", root / "train");
    unpack_split("t10k", root / "test");
    std::ofstream(root / ".complete") << "ok\n";
    std::cout << "unpacked in " << std::chrono::duration<double>(steady::now() - t0).count() << " s"
              << std::endl;
    return root;
}

/// Lists DIR/<class>/<file> (classes sorted by name, files sorted) as labelled items.
std::vector<item> list_split(const fs::path& dir, std::vector<std::string>& classes) {
    if (classes.empty()) {
        for (const auto& e : fs::directory_iterator(dir)) {
            if (e.is_directory()) classes.push_back(e.path().filename().string());
        }
        std::sort(classes.begin(), classes.end());
    }
    std::vector<item> items;
    for (std::size_t c = 0; c < classes.size(); ++c) {
        const fs::path sub = dir / classes[c];
        if (!fs::is_directory(sub)) continue;
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(sub)) {
            if (e.is_regular_file()) files.push_back(e.path());
        }
        std::sort(files.begin(), files.end());
        for (auto& f : files) items.push_back({std::move(f), static_cast<int>(c)});
    }
    return items;
}

dataset load_dataset(const fs::path& root) {
    dataset d;
    if (!fs::is_directory(root / "train") || !fs::is_directory(root / "test")) {
        std::cerr << root.string() << " needs train/ and test/ subfolders, each with one "
                  << "folder of images per class\n";
        std::exit(2);
    }
    d.train = list_split(root / "train", d.classes);
    d.test = list_split(root / "test", d.classes);
    return d;
}

// --- the model: a small MLP (or softmax regression with --hidden 0), SGD with momentum ------

struct mlp {
    int in = 0;
    int hidden = 0;
    int out = 0;
    std::vector<float> w1, b1, w2, b2;  // w1: hidden x in, w2: out x hidden (or out x in)
    std::vector<float> v_w1, v_b1, v_w2, v_b2;

    mlp(int in_, int hidden_, int out_, std::uint64_t seed) : in(in_), hidden(hidden_), out(out_) {
        std::mt19937_64 rng(seed);
        auto init = [&](std::vector<float>& w, int fan_in, std::size_t n) {
            std::uniform_real_distribution<float> u(-1.0F, 1.0F);
            const float scale = std::sqrt(6.0F / static_cast<float>(fan_in));
            w.resize(n);
            for (auto& x : w) x = u(rng) * scale;
        };
        const int last_in = hidden > 0 ? hidden : in;
        if (hidden > 0) {
            init(w1, in, static_cast<std::size_t>(hidden) * in);
            b1.assign(static_cast<std::size_t>(hidden), 0.0F);
        }
        init(w2, last_in, static_cast<std::size_t>(out) * last_in);
        b2.assign(static_cast<std::size_t>(out), 0.0F);
        v_w1.assign(w1.size(), 0.0F);
        v_b1.assign(b1.size(), 0.0F);
        v_w2.assign(w2.size(), 0.0F);
        v_b2.assign(b2.size(), 0.0F);
    }

    /// Logits for one input; `h` receives the hidden activations.
    void forward(const float* x, std::vector<float>& h, float* logits) const {
        const float* last = x;
        int last_n = in;
        if (hidden > 0) {
            h.resize(static_cast<std::size_t>(hidden));
            for (int j = 0; j < hidden; ++j) {
                const float* w = &w1[static_cast<std::size_t>(j) * in];
                float s = b1[static_cast<std::size_t>(j)];
                for (int i = 0; i < in; ++i) s += w[i] * x[i];
                h[static_cast<std::size_t>(j)] = s > 0 ? s : 0;
            }
            last = h.data();
            last_n = hidden;
        }
        for (int k = 0; k < out; ++k) {
            const float* w = &w2[static_cast<std::size_t>(k) * last_n];
            float s = b2[static_cast<std::size_t>(k)];
            for (int i = 0; i < last_n; ++i) s += w[i] * last[i];
            logits[k] = s;
        }
    }

    /// One SGD step on a batch (x: n x in, row-major); returns the mean cross-entropy loss.
    float train_step(const float* x, const std::vector<int>& labels, float lr, float momentum) {
        const int n = static_cast<int>(labels.size());
        const int last_n = hidden > 0 ? hidden : in;
        std::vector<float> g_w1(w1.size(), 0.0F), g_b1(b1.size(), 0.0F);
        std::vector<float> g_w2(w2.size(), 0.0F), g_b2(b2.size(), 0.0F);
        std::vector<float> h, logits(static_cast<std::size_t>(out)), dh;
        float loss = 0;
        for (int s = 0; s < n; ++s) {
            const float* xs = x + static_cast<std::size_t>(s) * in;
            forward(xs, h, logits.data());
            const float mx = *std::max_element(logits.begin(), logits.end());
            float z = 0;
            for (auto& l : logits) z += (l = std::exp(l - mx));
            for (auto& l : logits) l /= z;  // now probabilities
            const int y = labels[static_cast<std::size_t>(s)];
            loss -= std::log(std::max(logits[static_cast<std::size_t>(y)], 1e-12F));
            logits[static_cast<std::size_t>(y)] -= 1.0F;  // d loss / d logits
            const float* last = hidden > 0 ? h.data() : xs;
            if (hidden > 0) dh.assign(static_cast<std::size_t>(hidden), 0.0F);
            for (int k = 0; k < out; ++k) {
                const float d = logits[static_cast<std::size_t>(k)];
                g_b2[static_cast<std::size_t>(k)] += d;
                float* gw = &g_w2[static_cast<std::size_t>(k) * last_n];
                const float* w = &w2[static_cast<std::size_t>(k) * last_n];
                for (int i = 0; i < last_n; ++i) {
                    gw[i] += d * last[i];
                    if (hidden > 0) dh[static_cast<std::size_t>(i)] += d * w[i];
                }
            }
            if (hidden > 0) {
                for (int j = 0; j < hidden; ++j) {
                    if (h[static_cast<std::size_t>(j)] <= 0) continue;  // ReLU
                    const float d = dh[static_cast<std::size_t>(j)];
                    g_b1[static_cast<std::size_t>(j)] += d;
                    float* gw = &g_w1[static_cast<std::size_t>(j) * in];
                    for (int i = 0; i < in; ++i) gw[i] += d * xs[i];
                }
            }
        }
        const float scale = lr / static_cast<float>(n);
        auto step = [&](std::vector<float>& w, std::vector<float>& v, const std::vector<float>& g) {
            for (std::size_t i = 0; i < w.size(); ++i) {
                v[i] = momentum * v[i] - scale * g[i];
                w[i] += v[i];
            }
        };
        step(w1, v_w1, g_w1);
        step(b1, v_b1, g_b1);
        step(w2, v_w2, g_w2);
        step(b2, v_b2, g_b2);
        return loss / static_cast<float>(n);
    }

    int predict(const float* x) const {
        std::vector<float> h, logits(static_cast<std::size_t>(out));
        forward(x, h, logits.data());
        return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }
};

// --- the pipeline's element types --------------------------------------------------------------

/// A file's bytes and its label (after the read stage).
struct encoded {
    ferry::bytes data;
    int label = 0;
};

/// A decoded, augmented, normalized image (f32, 1 x size x size) and its label.
struct sample {
    ferry::tensor pixels;
    int label = 0;
};

/// What the training loop takes: a batch of images (f32, n x 1 x size x size) and labels.
struct batch {
    ferry::tensor pixels;
    std::vector<int> labels;
};

batch collate_samples(std::vector<sample> samples) {
    batch b;
    std::vector<ferry::tensor> pixels;
    pixels.reserve(samples.size());
    for (auto& s : samples) {
        pixels.push_back(std::move(s.pixels));
        b.labels.push_back(s.label);
    }
    b.pixels = ferry::ops::collate(std::move(pixels));
    return b;
}

// --- progress ------------------------------------------------------------------------------------

class progress {
  public:
    progress(std::string title, std::size_t total, bool enabled)
        : title_(std::move(title)), total_(total), enabled_(enabled), start_(steady::now()) {}

    void update(std::size_t done) {
        if (!enabled_) return;
        last_done_ = done;
        const auto now = steady::now();
        if (now - last_ < std::chrono::milliseconds(200) && done < total_) return;
        last_ = now;
        const double secs = std::chrono::duration<double>(now - start_).count();
        const double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
        const double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
        constexpr int width = 30;
        const int filled =
            total_ > 0 ? static_cast<int>(width * static_cast<double>(done) / total_) : width;
        std::fprintf(stderr, "\r%s [%s%s] %zu/%zu  %.0f img/s  ETA %.0fs ", title_.c_str(),
                     std::string(static_cast<std::size_t>(filled), '#').c_str(),
                     std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done,
                     total_, rate, eta);
    }
    void finish() {
        if (enabled_ && last_done_ > 0) std::fputc('\n', stderr);
    }

  private:
    std::string title_;
    std::size_t total_;
    bool enabled_;
    steady::time_point start_;
    steady::time_point last_{};
    std::size_t last_done_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{
        "Trains a small network on an image folder (default: Fashion-MNIST) fed by ferry."};
    std::string data_dir;
    std::string cache_dir;
    int epochs = 5;
    int batch_size = 64;
    int threads = 0;
    int read_concurrency = 4;
    int decode_concurrency = 0;
    std::size_t max_items = 0;
    std::size_t max_test_items = 0;
    int hidden = 64;
    int size = 28;
    float lr = 0.05F;
    std::uint64_t seed = 1;
    bool augment = true;
    bool no_progress = false;
    app.add_option("--data", data_dir, "image folder with train/<class>/* and test/<class>/*");
    app.add_option("--cache", cache_dir,
                   "where Fashion-MNIST is unpacked (default $XDG_CACHE_HOME/ferry or "
                   "~/.cache/ferry)");
    app.add_option("--epochs", epochs, "passes over the training set")->check(CLI::PositiveNumber);
    app.add_option("--batch-size", batch_size, "images per batch")->check(CLI::PositiveNumber);
    app.add_option("--threads", threads, "ferry's compute threads (default: ferry's default)");
    app.add_option("--read-concurrency", read_concurrency, "I/O threads reading files")
        ->check(CLI::PositiveNumber);
    app.add_option("--decode-concurrency", decode_concurrency,
                   "decode + augment calls at once (default: the thread count)");
    app.add_option("--max-items", max_items, "use at most this many training images (0 = all)");
    app.add_option("--max-test-items", max_test_items,
                   "use at most this many test images (0 = all)");
    app.add_option("--hidden", hidden, "hidden units (0 = softmax regression)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--size", size, "images are resized to size x size")->check(CLI::PositiveNumber);
    app.add_option("--lr", lr, "learning rate");
    app.add_option("--seed", seed, "seed for shuffling, augmentation and initialisation");
    app.add_flag("!--no-augment", augment, "no random crop / flip");
    app.add_flag("--no-progress", no_progress, "no progress bar");
    CLI11_PARSE(app, argc, argv);

    fs::path root;
    if (!data_dir.empty()) {
        root = data_dir;
    } else {
        const fs::path cache = ferry_examples::cache_dir(cache_dir);
        root = fashion_mnist(cache);
    }
    dataset data = load_dataset(root);
    std::mt19937_64 pick(seed);
    // --max-items takes a random subset (all classes), not the first classes in folder order.
    auto subset = [&](std::vector<item>& v, std::size_t n) {
        if (n == 0 || n >= v.size()) return;
        std::shuffle(v.begin(), v.end(), pick);
        v.resize(n);
    };
    subset(data.train, max_items);
    subset(data.test, max_test_items);
    if (data.train.empty() || data.test.empty() || data.classes.size() < 2) {
        std::cerr << "need at least two classes and some train and test images under "
                  << root.string() << '\n';
        return 2;
    }
    const int classes = static_cast<int>(data.classes.size());
    std::cout << "data: " << root.string() << ": " << data.train.size() << " train / "
              << data.test.size() << " test images, " << classes << " classes" << std::endl;

    ferry::pipeline_options popts;
    if (threads > 0) popts.threads = threads;
    const int decoders = decode_concurrency > 0 ? decode_concurrency : std::max(1, popts.threads);

    const ferry::normalize_options norm{.mean = {0.286F}, .std = {0.353F}, .chw = true};
    auto read = [](const item& it) { return encoded{ferry::ops::read_file(it.path), it.label}; };

    // Training: a new shuffle every epoch (the source is told the epoch number).
    const std::vector<item>& train_items = data.train;
    auto train =
        ferry::from([&](std::uint64_t epoch) {
            std::vector<std::size_t> order(train_items.size());
            std::iota(order.begin(), order.end(), std::size_t{0});
            std::shuffle(order.begin(), order.end(), std::mt19937_64(seed * 1000 + epoch));
            return order;
        })
            .map(
                [&](std::size_t i) {
                    return std::pair{i, read(train_items[i])};
                },
                {.concurrency = read_concurrency, .name = "read", .executor = ferry::io})
            .map(
                [&](std::pair<std::size_t, encoded> in) {
                    auto& [index, e] = in;
                    ferry::image img =
                        ferry::ops::decode_image(e.data, {.format = ferry::pixel_format::gray});
                    if (augment) {
                        // Seeded per image: the same seed gives the same crops.
                        std::mt19937_64 rng(seed ^ (index * 0x9E3779B97F4A7C15ULL));
                        img = ferry::ops::random_resized_crop(img, size, size, rng,
                                                              {.scale = {0.7, 1.0}});
                        if ((rng() & 1) != 0) img = ferry::ops::horizontal_flip(img);
                    } else if (img.width() != size || img.height() != size) {
                        img = ferry::ops::resize(img, size, size);
                    }
                    return sample{ferry::ops::normalize(img, norm), e.label};
                },
                {.concurrency = decoders, .name = "decode+augment", .on_error = ferry::skip})
            .batch(static_cast<std::size_t>(batch_size))
            .map(collate_samples, {.name = "collate"})
            .build(popts);

    // Test: same decode, no augmentation, in file order.
    auto test =
        ferry::from(data.test)
            .map(read, {.concurrency = read_concurrency, .name = "read", .executor = ferry::io})
            .map(
                [&](encoded e) {
                    ferry::image img = ferry::ops::decode_image(
                        e.data, {.format = ferry::pixel_format::gray, .resize = {size, size}});
                    return sample{ferry::ops::normalize(img, norm), e.label};
                },
                {.concurrency = decoders, .name = "decode", .on_error = ferry::skip})
            .batch(256)
            .map(collate_samples, {.name = "collate"})
            .build(popts);

    const int in = size * size;
    mlp model(in, hidden, classes, seed);
    const bool show_progress = !no_progress && isatty(STDERR_FILENO) != 0;
    std::cout << "model: "
              << (hidden > 0
                      ? "MLP " + std::to_string(in) + "-" + std::to_string(hidden) + "-" +
                            std::to_string(classes)
                      : "softmax regression " + std::to_string(in) + "-" + std::to_string(classes))
              << ", SGD lr " << lr << " momentum 0.9, batch " << batch_size << std::endl;

    double last_accuracy = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        progress bar("epoch " + std::to_string(epoch) + "/" + std::to_string(epochs),
                     data.train.size(), show_progress);
        const auto t0 = steady::now();
        double loss_sum = 0;
        std::size_t seen = 0;
        std::size_t batches = 0;
        for (const batch& b : train) {
            loss_sum += model.train_step(b.pixels.data_as<float>(), b.labels, lr, 0.9F);
            seen += b.labels.size();
            ++batches;
            bar.update(seen);
        }
        bar.finish();
        const double secs = std::chrono::duration<double>(steady::now() - t0).count();

        std::size_t correct = 0;
        std::size_t tested = 0;
        for (const batch& b : test) {
            const float* x = b.pixels.data_as<float>();
            for (std::size_t s = 0; s < b.labels.size(); ++s) {
                correct += model.predict(x + s * static_cast<std::size_t>(in)) == b.labels[s];
            }
            tested += b.labels.size();
        }
        last_accuracy = tested > 0 ? static_cast<double>(correct) / tested : 0;
        std::printf("epoch %d/%d  loss %.3f  test accuracy %.3f  %.0f img/s\n", epoch, epochs,
                    batches > 0 ? loss_sum / static_cast<double>(batches) : 0.0, last_accuracy,
                    static_cast<double>(seen) / secs);
        std::fflush(stdout);
    }

    std::cout << "\ntraining pipeline (all epochs):\n" << train.stats() << '\n';
    const auto& failures = train.failures();
    std::cout << "failures: " << failures.size() << '\n';
    for (std::size_t i = 0; i < failures.size() && i < 5; ++i) {
        std::cout << "  item " << failures[i].item << " (" << failures[i].stage
                  << "): " << failures[i].message << '\n';
    }
    std::printf("final test accuracy %.3f (chance %.3f)\n", last_accuracy, 1.0 / classes);
    return 0;
}
