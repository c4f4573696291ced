// This program demonstrates ferry feeding a training loop with video: files -> read (I/O
// threads) -> demux + decode a clip of N frames at stride S from a random start, resized and
// gray (FFmpeg, inside ferry::video) -> motion features -> batch, into a small classifier.
//
// Data: generated on first run with the ffmpeg CLI's H.264 encoder (libx264) into a cache
// folder: short 64x64 videos of a bright square moving right, left, down or up (the class) over
// a noisy background, from random positions at random speeds. The model is softmax regression
// over the square's frame-to-frame displacement, measured from the decoded pixels (an intensity
// centroid per frame): it only learns if the frames come back in order, at the right stride.
//
//   video_trainer [--videos-per-class 40] [--epochs 5] [--frames 8] [--stride 2] [--threads N]
//   video_trainer --help

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
#include "ferry/video.hpp"

namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

namespace {

const char* const class_names[4] = {"right", "left", "down", "up"};
constexpr int side = 64;
constexpr int length = 48;  // frames per video (25 fps: about 2 s)

/// Writes one video: a 10x10 square moving in direction `cls` over noise, H.264 in MP4.
bool make_video(const fs::path& out, int cls, std::mt19937& rng) {
    const std::string cmd = "ffmpeg -loglevel error -y -f rawvideo -pix_fmt gray -s " +
                            std::to_string(side) + "x" + std::to_string(side) +
                            " -r 25 -i - -c:v libx264 -preset veryfast -crf 18 -pix_fmt yuv420p '" +
                            out.string() + "'";
    FILE* pipe = popen(cmd.c_str(), "w");
    if (pipe == nullptr) return false;
    std::uniform_real_distribution<float> u(0.0F, 1.0F);
    const float speed = 0.4F + 0.5F * u(rng);  // pixels per frame
    const float travel = speed * length;
    // Start where the whole trip stays inside the frame.
    const float lo = 2.0F;
    const float hi = side - 12.0F - travel;
    float x = lo + (hi - lo) * u(rng);
    float y = lo + (side - 14.0F) * u(rng);
    float dx = speed;
    float dy = 0;
    if (cls >= 2) {  // vertical: the travel constraint is on y
        std::swap(x, y);
        dx = 0;
        dy = speed;
    }
    if (cls == 1) {
        x = side - 12.0F - x;
        dx = -speed;
    }
    if (cls == 3) {
        y = side - 12.0F - y;
        dy = -speed;
    }
    std::vector<unsigned char> frame(static_cast<std::size_t>(side) * side);
    std::normal_distribution<float> noise(40.0F, 12.0F);
    for (int t = 0; t < length; ++t) {
        for (auto& p : frame) p = static_cast<unsigned char>(std::clamp(noise(rng), 0.0F, 255.0F));
        const int sx = static_cast<int>(std::lround(x + dx * t));
        const int sy = static_cast<int>(std::lround(y + dy * t));
        for (int j = 0; j < 10; ++j)
            for (int i = 0; i < 10; ++i) {
                const int px = std::clamp(sx + i, 0, side - 1);
                const int py = std::clamp(sy + j, 0, side - 1);
                frame[static_cast<std::size_t>(py) * side + static_cast<std::size_t>(px)] = 230;
            }
        if (std::fwrite(frame.data(), 1, frame.size(), pipe) != frame.size()) break;
    }
    return pclose(pipe) == 0;
}

struct item {
    fs::path path;
    int label = 0;
};

/// The generated set (cached): `per_class` training and `per_class / 4` test videos per class.
std::pair<std::vector<item>, std::vector<item>> dataset(const fs::path& root, int per_class) {
    const fs::path done = root / (".complete-" + std::to_string(per_class));
    std::vector<item> train;
    std::vector<item> test;
    const int test_per_class = std::max(2, per_class / 4);
    const bool have = fs::exists(done);
    if (!have) {
        std::cout << "generating " << 4 * (per_class + test_per_class) << " videos with ffmpeg in "
                  << root.string() << " (once)" << std::endl;
        fs::create_directories(root);
    }
    std::mt19937 rng(12345);
    for (int c = 0; c < 4; ++c) {
        for (int i = 0; i < per_class + test_per_class; ++i) {
            char name[64];
            std::snprintf(name, sizeof name, "%s_%03d.mp4", class_names[c], i);
            const fs::path p = root / name;
            if (!have && !make_video(p, c, rng)) {
                std::cerr << "cannot run ffmpeg to make " << p.string()
                          << " (apt-get install ffmpeg)\n";
                std::exit(2);
            }
            (i < per_class ? train : test).push_back({p, c});
        }
    }
    if (!have) std::ofstream(done) << "ok\n";
    return {train, test};
}

/// What the model sees: the displacement of the bright square's centroid between consecutive
/// sampled frames (dx, dy per step), scaled.
struct sample {
    std::vector<float> features;
    int label = 0;
};

sample motion_features(const ferry::video_clip& clip, int label) {
    sample s;
    s.label = label;
    float px = 0;
    float py = 0;
    for (int t = 0; t < clip.frames(); ++t) {
        double sum = 0;
        double sx = 0;
        double sy = 0;
        for (int y = 0; y < clip.height(); ++y)
            for (int x = 0; x < clip.width(); ++x) {
                const int v = clip.at(t, x, y, 0);
                if (v < 128) continue;  // the square, not the noise
                sum += v;
                sx += v * x;
                sy += v * y;
            }
        const float cx = sum > 0 ? static_cast<float>(sx / sum) : 0.0F;
        const float cy = sum > 0 ? static_cast<float>(sy / sum) : 0.0F;
        if (t > 0) {
            s.features.push_back((cx - px) / 2.0F);
            s.features.push_back((cy - py) / 2.0F);
        }
        px = cx;
        py = cy;
    }
    return s;
}

/// Softmax regression trained with SGD.
struct softmax_regression {
    int in;
    int out;
    std::vector<float> w;
    std::vector<float> b;
    softmax_regression(int in_, int out_)
        : in(in_),
          out(out_),
          w(static_cast<std::size_t>(in_ * out_)),
          b(static_cast<std::size_t>(out_)) {}

    void logits(const std::vector<float>& x, std::vector<float>& z) const {
        z.assign(static_cast<std::size_t>(out), 0.0F);
        for (int k = 0; k < out; ++k) {
            float s = b[static_cast<std::size_t>(k)];
            for (int i = 0; i < in; ++i)
                s += w[static_cast<std::size_t>(k * in + i)] * x[static_cast<std::size_t>(i)];
            z[static_cast<std::size_t>(k)] = s;
        }
    }
    float step(const std::vector<sample>& batch, float lr) {
        std::vector<float> gw(w.size(), 0.0F), gb(b.size(), 0.0F), z;
        float loss = 0;
        for (const sample& s : batch) {
            logits(s.features, z);
            const float mx = *std::max_element(z.begin(), z.end());
            float sum = 0;
            for (auto& v : z) sum += (v = std::exp(v - mx));
            for (auto& v : z) v /= sum;
            loss -= std::log(std::max(z[static_cast<std::size_t>(s.label)], 1e-9F));
            z[static_cast<std::size_t>(s.label)] -= 1.0F;
            for (int k = 0; k < out; ++k) {
                gb[static_cast<std::size_t>(k)] += z[static_cast<std::size_t>(k)];
                for (int i = 0; i < in; ++i)
                    gw[static_cast<std::size_t>(k * in + i)] +=
                        z[static_cast<std::size_t>(k)] * s.features[static_cast<std::size_t>(i)];
            }
        }
        const float scale = lr / static_cast<float>(batch.size());
        for (std::size_t i = 0; i < w.size(); ++i) w[i] -= scale * gw[i];
        for (std::size_t i = 0; i < b.size(); ++i) b[i] -= scale * gb[i];
        return loss / static_cast<float>(batch.size());
    }
    int predict(const std::vector<float>& x) const {
        std::vector<float> z;
        logits(x, z);
        return static_cast<int>(std::max_element(z.begin(), z.end()) - z.begin());
    }
};

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Trains a motion classifier on generated videos fed by ferry (FFmpeg decode)."};
    std::string cache_dir;
    int per_class = 40;
    int epochs = 5;
    int frames = 8;
    int stride = 2;
    int threads = 0;
    int decode_concurrency = 0;
    int batch_size = 16;
    float lr = 0.5F;
    std::uint64_t seed = 1;
    app.add_option(
        "--cache", cache_dir,
        "where the videos are generated (default $XDG_CACHE_HOME/ferry or ~/.cache/ferry)");
    app.add_option("--videos-per-class", per_class,
                   "training videos per class (a quarter as many for test)")
        ->check(CLI::PositiveNumber);
    app.add_option("--epochs", epochs)->check(CLI::PositiveNumber);
    app.add_option("--frames", frames, "frames per clip")->check(CLI::Range(2, 16));
    app.add_option("--stride", stride, "stride between the clip's frames")->check(CLI::Range(1, 4));
    app.add_option("--threads", threads, "ferry's compute threads (default: ferry's default)");
    app.add_option("--decode-concurrency", decode_concurrency,
                   "clips decoded at once (default: the thread count)");
    app.add_option("--batch-size", batch_size)->check(CLI::PositiveNumber);
    app.add_option("--lr", lr, "learning rate");
    app.add_option("--seed", seed, "seed for shuffling and clip starts");
    CLI11_PARSE(app, argc, argv);

    const fs::path cache = ferry_examples::cache_dir(cache_dir);
    auto [train_items, test_items] = dataset(cache / "moving-squares", per_class);
    std::cout << "data: " << train_items.size() << " train / " << test_items.size()
              << " test videos, 4 classes (right, left, down, up); clips of " << frames
              << " frames at stride " << stride << ", 32x32 gray" << std::endl;

    ferry::pipeline_options popts;
    if (threads > 0) popts.threads = threads;
    const int decoders = decode_concurrency > 0 ? decode_concurrency : std::max(1, popts.threads);
    const int span_frames = (frames - 1) * stride + 1;

    // A clip from a random start (seeded by epoch and item), decoded at 32x32 gray; only the
    // packets from the keyframe before the start are decoded.
    auto make_pipeline = [&](const std::vector<item>& items, bool random_start) {
        return ferry::from([&items, random_start, seed](std::uint64_t epoch) {
                   std::vector<std::pair<std::size_t, std::uint64_t>> order;
                   for (std::size_t i = 0; i < items.size(); ++i) order.emplace_back(i, epoch);
                   if (random_start) {
                       std::shuffle(order.begin(), order.end(), std::mt19937_64(seed + epoch));
                   }
                   return order;
               })
            .map(
                [&items](std::pair<std::size_t, std::uint64_t> at) {
                    return std::tuple{at.first, at.second,
                                      ferry::ops::read_file(items[at.first].path)};
                },
                {.concurrency = 2, .name = "read", .executor = ferry::io})
            .map(
                [&items, random_start, span_frames, frames, stride,
                 seed](const std::tuple<std::size_t, std::uint64_t, ferry::bytes>& in) {
                    const auto& [index, epoch, data] = in;
                    std::mt19937_64 rng(seed ^ (index * 0x9E3779B97F4A7C15ULL) ^ (epoch << 32));
                    const int latest = length - span_frames;
                    const int first =
                        random_start
                            ? static_cast<int>(rng() % static_cast<std::uint64_t>(latest + 1))
                            : latest / 2;
                    const ferry::video_clip clip = ferry::ops::load_video(
                        data, {.demux = {.start = first / 25.0},
                               .decode = {.select = ferry::frame_selection::clip(frames, stride),
                                          .format = ferry::frame_format::gray,
                                          .resize = {32, 32}}});
                    return motion_features(clip, items[index].label);
                },
                {.concurrency = decoders, .name = "decode+features", .on_error = ferry::skip})
            .batch(static_cast<std::size_t>(batch_size))
            .build(popts);
    };
    auto train = make_pipeline(train_items, true);
    auto test = make_pipeline(test_items, false);

    softmax_regression model(2 * (frames - 1), 4);
    double accuracy = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
        const auto t0 = steady::now();
        double loss = 0;
        std::size_t batches = 0;
        std::size_t seen = 0;
        for (const std::vector<sample>& b : train) {
            loss += model.step(b, lr);
            ++batches;
            seen += b.size();
        }
        const double secs = std::chrono::duration<double>(steady::now() - t0).count();
        std::size_t correct = 0;
        std::size_t tested = 0;
        for (const std::vector<sample>& b : test) {
            for (const sample& s : b) correct += model.predict(s.features) == s.label;
            tested += b.size();
        }
        accuracy = tested > 0 ? static_cast<double>(correct) / static_cast<double>(tested) : 0;
        std::printf("epoch %d/%d  loss %.3f  test accuracy %.3f  %.0f clips/s\n", epoch, epochs,
                    batches > 0 ? loss / static_cast<double>(batches) : 0.0, accuracy,
                    static_cast<double>(seen) / secs);
        std::fflush(stdout);
    }
    std::cout << "\ntraining pipeline (all epochs):\n" << train.stats() << '\n';
    std::cout << "failures: " << train.failures().size() << '\n';
    for (const auto& f : train.failures())
        std::cout << "  item " << f.item << ": " << f.message << '\n';
    std::printf("final test accuracy %.3f (chance 0.250)\n", accuracy);
    return 0;
}
