// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image trainer's model on the CPU: a small MLP (or softmax regression with `hidden` 0)
/// trained by SGD with momentum, and its weights and momentum saved to and loaded from a stream.
/// Shared by `image_trainer` and the GPU model's check, which holds the GPU model
/// (image_trainer_gpu.hpp) to these numerics.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <ostream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry_examples {

/// A one-hidden-layer ReLU network (`in -> hidden -> out`), or softmax regression
/// (`in -> out`) when `hidden` is 0. Weights are row-major, one row per output unit; the
/// initialisation (uniform, He-scaled) depends only on the seed.
struct mlp {
    int in = 0;
    int hidden = 0;
    int out = 0;
    std::vector<float> w1, b1, w2, b2;          // w1: hidden x in, w2: out x hidden (or out x in)
    std::vector<float> v_w1, v_b1, v_w2, v_b2;  // SGD momentum (velocity) of each

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

    /// Writes the weights and momentum buffers: a text line `ferry-mlp 1 <in> <hidden> <out>`,
    /// then w1, b1, w2, b2, v_w1, v_b1, v_w2, v_b2 as raw floats. Raw, not decimal, so that a
    /// loaded model is bit for bit the saved one and a resumed run takes the same steps; in this
    /// machine's byte order, so a file moves only between machines of the same order.
    void save(std::ostream& os) const {
        os << "ferry-mlp 1 " << in << ' ' << hidden << ' ' << out << '\n';
        for (const auto* v : arrays()) {
            os.write(reinterpret_cast<const char*>(v->data()),
                     static_cast<std::streamsize>(v->size() * sizeof(float)));
        }
    }

    /// Reads what `save` wrote into this model, whose sizes it must have. Throws
    /// `std::runtime_error` saying what is wrong: not a saved model, other sizes (both named),
    /// or a file cut short.
    void load(std::istream& is) {
        std::string magic;
        int version = 0;
        int f_in = 0;
        int f_hidden = 0;
        int f_out = 0;
        is >> magic >> version;
        if (!is || magic != "ferry-mlp" || version != 1) {
            throw std::runtime_error("the model is not a saved ferry-mlp 1 (header '" + magic +
                                     "')");
        }
        is >> f_in >> f_hidden >> f_out;
        if (!is || is.get() != '\n') throw std::runtime_error("the model's header is malformed");
        if (f_in != in || f_hidden != hidden || f_out != out) {
            throw std::runtime_error("the saved model is " + shape(f_in, f_hidden, f_out) +
                                     ", this run's is " + shape(in, hidden, out) +
                                     " (--size, --hidden and the class count must match)");
        }
        for (auto* v : arrays()) {
            is.read(reinterpret_cast<char*>(v->data()),
                    static_cast<std::streamsize>(v->size() * sizeof(float)));
            if (!is) throw std::runtime_error("the saved model is cut short");
        }
    }

    int predict(const float* x) const {
        std::vector<float> h, logits(static_cast<std::size_t>(out));
        forward(x, h, logits.data());
        return static_cast<int>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    }

  private:
    /// The arrays `save` writes, in its order.
    [[nodiscard]] std::vector<const std::vector<float>*> arrays() const {
        return {&w1, &b1, &w2, &b2, &v_w1, &v_b1, &v_w2, &v_b2};
    }
    [[nodiscard]] std::vector<std::vector<float>*> arrays() {
        return {&w1, &b1, &w2, &b2, &v_w1, &v_b1, &v_w2, &v_b2};
    }
    static std::string shape(int i, int h, int o) {
        return h > 0 ? std::to_string(i) + "-" + std::to_string(h) + "-" + std::to_string(o)
                     : std::to_string(i) + "-" + std::to_string(o);
    }
};

}  // namespace ferry_examples
