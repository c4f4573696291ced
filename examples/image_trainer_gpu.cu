// SPDX-License-Identifier: Apache-2.0
/// \file
/// `gpu_mlp`: the image trainer's MLP on a CUDA device. The matrix products are cuBLAS SGEMMs;
/// the rest (bias + ReLU, softmax cross-entropy and its gradient, bias gradients, the SGD update,
/// the loss sum and the accuracy count) are small kernels. Same algorithm as `mlp::train_step`.
///
/// Layout: the CPU model's row-major matrices are used in place. cuBLAS is column-major, so a
/// row-major `r x c` buffer is the column-major `c x r` matrix, its transpose; activations are
/// kept column-major as `units x n` (one column per sample), which is row-major `n x units`.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ferry/cuda.hpp"
#include "image_trainer_gpu.hpp"

namespace ferry_examples {
namespace {

static_assert(sizeof(int) == sizeof(std::int32_t), "labels travel as int32");

void check(cudaError_t e, const char* call) {
    if (e != cudaSuccess) {
        throw ferry::cuda_error(static_cast<int>(e), std::string("gpu_mlp: ") + call +
                                                         " failed: " + cudaGetErrorName(e) + ": " +
                                                         cudaGetErrorString(e));
    }
}

void check(cublasStatus_t s, const char* call) {
    if (s != CUBLAS_STATUS_SUCCESS) {
        throw ferry::cuda_error(0, std::string("gpu_mlp: ") + call + " failed: " +
                                       cublasGetStatusName(s) + ": " + cublasGetStatusString(s));
    }
}

/// Device memory for `n` values of `T`; the contents are not initialised.
template <class T>
class device_array {
  public:
    device_array() = default;
    explicit device_array(std::size_t n) {
        if (n == 0) return;
        void* p = nullptr;
        check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
        p_ = static_cast<T*>(p);
        n_ = n;
    }
    // At process exit the runtime may be gone already: the driver then owns the memory.
    ~device_array() {
        if (p_ != nullptr) (void)cudaFree(p_);
    }
    device_array(device_array&& o) noexcept
        : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
    device_array& operator=(device_array&& o) noexcept {
        std::swap(p_, o.p_);
        std::swap(n_, o.n_);
        return *this;
    }
    device_array(const device_array&) = delete;
    device_array& operator=(const device_array&) = delete;

    [[nodiscard]] T* get() const noexcept { return p_; }
    [[nodiscard]] std::size_t size() const noexcept { return n_; }

  private:
    T* p_ = nullptr;
    std::size_t n_ = 0;
};

constexpr int threads_per_block = 256;

unsigned blocks_for(std::int64_t count) {
    return static_cast<unsigned>(
        std::clamp<std::int64_t>((count + threads_per_block - 1) / threads_per_block, 1, 4096));
}

// The kernels use __fadd_rn / __fmul_rn where the CPU model's expression would otherwise be
// contracted into an FMA by nvcc: the host build (x86-64 baseline) does not contract, so the
// update of a weight is then the same float arithmetic on both.

/// h (rows x n, column-major) = max(h + b, 0).
__global__ void bias_relu(float* __restrict__ h, const float* __restrict__ b, int rows,
                          std::int64_t count) {
    const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < count; i += stride) {
        const float s = __fadd_rn(h[i], b[i % rows]);
        h[i] = s > 0.0F ? s : 0.0F;
    }
}

/// dh = 0 where the ReLU was off (h <= 0).
__global__ void relu_backward(float* __restrict__ dh, const float* __restrict__ h,
                              std::int64_t count) {
    const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < count; i += stride) {
        if (h[i] <= 0.0F) dh[i] = 0.0F;
    }
}

/// One thread per sample: softmax of (logits + b) over `out` classes, the cross-entropy loss
/// (clamped as the CPU model) and d loss / d logits = p - one_hot(label). A label outside
/// [0, out) contributes no loss and no target.
__global__ void softmax_cross_entropy(const float* __restrict__ logits, const float* __restrict__ b,
                                      const std::int32_t* __restrict__ labels, int out, int n,
                                      float* __restrict__ d, float* __restrict__ loss) {
    const int s = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= n) return;
    const float* l = logits + static_cast<std::int64_t>(s) * out;
    float* g = d + static_cast<std::int64_t>(s) * out;
    float mx = __fadd_rn(l[0], b[0]);
    for (int k = 1; k < out; ++k) mx = fmaxf(mx, __fadd_rn(l[k], b[k]));
    float z = 0.0F;
    for (int k = 0; k < out; ++k) {
        const float e = expf(__fadd_rn(l[k], b[k]) - mx);
        g[k] = e;
        z += e;
    }
    for (int k = 0; k < out; ++k) g[k] /= z;
    const int y = labels[s];
    if (y >= 0 && y < out) {
        loss[s] = -logf(fmaxf(g[y], 1e-12F));
        g[y] -= 1.0F;
    } else {
        loss[s] = 0.0F;
    }
}

/// `*sum += mean(loss[0..n))`, in one block (a fixed summation order: the same result every run).
__global__ void add_mean(const float* __restrict__ loss, int n, double* __restrict__ sum) {
    __shared__ double partial[threads_per_block];
    double s = 0;
    for (int i = static_cast<int>(threadIdx.x); i < n; i += threads_per_block) s += loss[i];
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int half = threads_per_block / 2; half > 0; half /= 2) {
        if (static_cast<int>(threadIdx.x) < half)
            partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) *sum += partial[0] / n;
}

/// out[r] = sum over samples of m[r, s] (m: rows x n, column-major), samples in order as the CPU
/// model adds them: the bias gradients.
__global__ void row_sums(const float* __restrict__ m, int rows, int n, float* __restrict__ out) {
    const int r = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (r >= rows) return;
    float s = 0.0F;
    for (int j = 0; j < n; ++j) s = __fadd_rn(s, m[r + static_cast<std::int64_t>(j) * rows]);
    out[r] = s;
}

/// SGD with momentum over every parameter: v = momentum * v - scale * g; w += v.
__global__ void sgd_momentum(float* __restrict__ w, float* __restrict__ v,
                             const float* __restrict__ g, std::int64_t count, float momentum,
                             float scale) {
    const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
    for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < count; i += stride) {
        const float vi = __fsub_rn(__fmul_rn(momentum, v[i]), __fmul_rn(scale, g[i]));
        v[i] = vi;
        w[i] = __fadd_rn(w[i], vi);
    }
}

/// One thread per sample: argmax of (logits + b) (the first of equal maxima, as
/// std::max_element) against the label.
__global__ void count_correct(const float* __restrict__ logits, const float* __restrict__ b,
                              const std::int32_t* __restrict__ labels, int out, int n,
                              unsigned long long* __restrict__ correct) {
    const int s = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
    if (s >= n) return;
    const float* l = logits + static_cast<std::int64_t>(s) * out;
    int best = 0;
    float best_value = __fadd_rn(l[0], b[0]);
    for (int k = 1; k < out; ++k) {
        const float x = __fadd_rn(l[k], b[k]);
        if (x > best_value) {
            best_value = x;
            best = k;
        }
    }
    if (best == labels[s]) atomicAdd(correct, 1ULL);
}

void launched(const char* kernel) {
    check(cudaGetLastError(), kernel);
}

/// Test-set predictions are made this many samples at a time.
constexpr int eval_chunk = 1024;

}  // namespace

struct gpu_mlp::state {
    int device = 0;
    int in = 0;
    int hidden = 0;
    int out = 0;
    std::size_t n_w1 = 0, n_b1 = 0, n_w2 = 0, n_b2 = 0;
    cudaStream_t stream = nullptr;
    cublasHandle_t blas = nullptr;

    // [w1 | b1 | w2 | b2], and the momentum and gradients in the same layout: one update kernel.
    device_array<float> params, velocity, grads;
    // Per batch (capacity samples): activations, logits, d loss / d logits, d loss / d hidden.
    int capacity = 0;
    device_array<float> h, logits, d, dh, loss;
    device_array<double> loss_sum;
    device_array<unsigned long long> correct;  // [0]: add_correct, [1]: test_correct
    device_array<float> test_x;
    device_array<std::int32_t> test_y;
    std::size_t test_n = 0;

    state() = default;
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
        // Tolerates the CUDA runtime having unloaded (process exit): every result is ignored.
        if (stream != nullptr) (void)cudaStreamSynchronize(stream);
        if (blas != nullptr) (void)cublasDestroy(blas);
        if (stream != nullptr) (void)cudaStreamDestroy(stream);
    }

    void use_device() const { check(cudaSetDevice(device), "cudaSetDevice"); }

    float* w1() const { return params.get(); }
    float* b1() const { return params.get() + n_w1; }
    float* w2() const { return params.get() + n_w1 + n_b1; }
    float* b2() const { return params.get() + n_w1 + n_b1 + n_w2; }
    float* g_w1() const { return grads.get(); }
    float* g_b1() const { return grads.get() + n_w1; }
    float* g_w2() const { return grads.get() + n_w1 + n_b1; }
    float* g_b2() const { return grads.get() + n_w1 + n_b1 + n_w2; }

    /// Scratch for batches of up to `n` samples.
    void reserve(int n) {
        if (n <= capacity) return;
        // Queued work may still use the old buffers.
        check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
        const auto cap = static_cast<std::size_t>(n);
        h = device_array<float>(static_cast<std::size_t>(hidden) * cap);
        dh = device_array<float>(static_cast<std::size_t>(hidden) * cap);
        logits = device_array<float>(static_cast<std::size_t>(out) * cap);
        d = device_array<float>(static_cast<std::size_t>(out) * cap);
        loss = device_array<float>(cap);
        capacity = n;
    }

    void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float* a,
              int lda, const float* b, int ldb, float* c, int ldc) const {
        const float one = 1.0F;
        const float zero = 0.0F;
        check(cublasSgemm(blas, ta, tb, m, n, k, &one, a, lda, b, ldb, &zero, c, ldc),
              "cublasSgemm");
    }

    /// Logits (out x n, without b2: the kernels that read them add it) for `n` samples of `x`;
    /// the hidden activations are left in `h`.
    void forward(const float* x, int n) {
        const float* last = x;
        int last_n = in;
        if (hidden > 0) {
            gemm(CUBLAS_OP_T, CUBLAS_OP_N, hidden, n, in, w1(), in, x, in, h.get(), hidden);
            const std::int64_t count = static_cast<std::int64_t>(hidden) * n;
            bias_relu<<<blocks_for(count), threads_per_block, 0, stream>>>(h.get(), b1(), hidden,
                                                                           count);
            launched("bias_relu");
            last = h.get();
            last_n = hidden;
        }
        gemm(CUBLAS_OP_T, CUBLAS_OP_N, out, n, last_n, w2(), last_n, last, last_n, logits.get(),
             out);
    }
};

gpu_mlp::gpu_mlp(const mlp& init, int device) : state_(std::make_unique<state>()) {
    state& s = *state_;
    s.device = device;
    s.in = init.in;
    s.hidden = init.hidden;
    s.out = init.out;
    s.n_w1 = init.w1.size();
    s.n_b1 = init.b1.size();
    s.n_w2 = init.w2.size();
    s.n_b2 = init.b2.size();
    s.use_device();
    check(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&s.blas), "cublasCreate");
    check(cublasSetStream(s.blas, s.stream), "cublasSetStream");
    // Plain FP32 (no TF32 tensor cores), so the GEMMs differ from the CPU model only in
    // summation order.
    check(cublasSetMathMode(s.blas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");

    const std::size_t total = s.n_w1 + s.n_b1 + s.n_w2 + s.n_b2;
    s.params = device_array<float>(total);
    s.velocity = device_array<float>(total);
    s.grads = device_array<float>(total);
    s.loss_sum = device_array<double>(1);
    s.correct = device_array<unsigned long long>(2);
    std::vector<float> host;
    host.reserve(total);
    for (const auto* v : {&init.w1, &init.b1, &init.w2, &init.b2}) {
        host.insert(host.end(), v->begin(), v->end());
    }
    // Uploads go on the model's own stream and are waited for: cudaMemcpy from pageable memory
    // may return before its DMA lands, ordered only on the legacy default stream, which the
    // non-blocking stream the kernels read on does not wait for.
    check(cudaMemcpyAsync(s.params.get(), host.data(), total * sizeof(float),
                          cudaMemcpyHostToDevice, s.stream),
          "cudaMemcpyAsync (weights)");
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize (weights)");
    host.clear();
    for (const auto* v : {&init.v_w1, &init.v_b1, &init.v_w2, &init.v_b2}) {
        host.insert(host.end(), v->begin(), v->end());
    }
    check(cudaMemcpyAsync(s.velocity.get(), host.data(), total * sizeof(float),
                          cudaMemcpyHostToDevice, s.stream),
          "cudaMemcpyAsync (momentum)");
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize (momentum)");
    check(cudaMemsetAsync(s.loss_sum.get(), 0, sizeof(double), s.stream), "cudaMemsetAsync");
    check(cudaMemsetAsync(s.correct.get(), 0, 2 * sizeof(unsigned long long), s.stream),
          "cudaMemsetAsync");
    s.reserve(256);
}

gpu_mlp::~gpu_mlp() = default;
gpu_mlp::gpu_mlp(gpu_mlp&&) noexcept = default;
gpu_mlp& gpu_mlp::operator=(gpu_mlp&&) noexcept = default;

void* gpu_mlp::stream() const noexcept {
    return state_->stream;
}

std::string gpu_mlp::device_name() const {
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, state_->device), "cudaGetDeviceProperties");
    return "cuda:" + std::to_string(state_->device) + " (" + prop.name + ")";
}

void gpu_mlp::train_step(const float* x, const std::int32_t* labels, int n, float lr,
                         float momentum) {
    if (n <= 0) return;
    state& s = *state_;
    s.use_device();
    s.reserve(n);
    s.forward(x, n);
    const unsigned sample_blocks =
        (static_cast<unsigned>(n) + threads_per_block - 1) / threads_per_block;
    softmax_cross_entropy<<<sample_blocks, threads_per_block, 0, s.stream>>>(
        s.logits.get(), s.b2(), labels, s.out, n, s.d.get(), s.loss.get());
    launched("softmax_cross_entropy");
    add_mean<<<1, threads_per_block, 0, s.stream>>>(s.loss.get(), n, s.loss_sum.get());
    launched("add_mean");

    const float* last = s.hidden > 0 ? s.h.get() : x;
    const int last_n = s.hidden > 0 ? s.hidden : s.in;
    // g_w2 (last_n x out, column-major) = last * d^T
    s.gemm(CUBLAS_OP_N, CUBLAS_OP_T, last_n, s.out, n, last, last_n, s.d.get(), s.out, s.g_w2(),
           last_n);
    row_sums<<<(static_cast<unsigned>(s.out) + threads_per_block - 1) / threads_per_block,
               threads_per_block, 0, s.stream>>>(s.d.get(), s.out, n, s.g_b2());
    launched("row_sums");
    if (s.hidden > 0) {
        // dh (hidden x n) = w2 (column-major hidden x out) * d, with the weights before the update
        s.gemm(CUBLAS_OP_N, CUBLAS_OP_N, s.hidden, n, s.out, s.w2(), s.hidden, s.d.get(), s.out,
               s.dh.get(), s.hidden);
        const std::int64_t count = static_cast<std::int64_t>(s.hidden) * n;
        relu_backward<<<blocks_for(count), threads_per_block, 0, s.stream>>>(s.dh.get(), s.h.get(),
                                                                             count);
        launched("relu_backward");
        // g_w1 (in x hidden, column-major) = x * dh^T
        s.gemm(CUBLAS_OP_N, CUBLAS_OP_T, s.in, s.hidden, n, x, s.in, s.dh.get(), s.hidden, s.g_w1(),
               s.in);
        row_sums<<<(static_cast<unsigned>(s.hidden) + threads_per_block - 1) / threads_per_block,
                   threads_per_block, 0, s.stream>>>(s.dh.get(), s.hidden, n, s.g_b1());
        launched("row_sums");
    }
    const auto total = static_cast<std::int64_t>(s.params.size());
    const float scale = lr / static_cast<float>(n);
    sgd_momentum<<<blocks_for(total), threads_per_block, 0, s.stream>>>(
        s.params.get(), s.velocity.get(), s.grads.get(), total, momentum, scale);
    launched("sgd_momentum");
}

double gpu_mlp::take_loss_sum() {
    state& s = *state_;
    s.use_device();
    double sum = 0;
    check(cudaMemcpyAsync(&sum, s.loss_sum.get(), sizeof sum, cudaMemcpyDeviceToHost, s.stream),
          "cudaMemcpyAsync (loss)");
    check(cudaMemsetAsync(s.loss_sum.get(), 0, sizeof(double), s.stream), "cudaMemsetAsync");
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
    return sum;
}

void gpu_mlp::add_correct(const float* x, const std::int32_t* labels, int n) {
    if (n <= 0) return;
    state& s = *state_;
    s.use_device();
    s.reserve(n);
    s.forward(x, n);
    count_correct<<<(static_cast<unsigned>(n) + threads_per_block - 1) / threads_per_block,
                    threads_per_block, 0, s.stream>>>(s.logits.get(), s.b2(), labels, s.out, n,
                                                      s.correct.get());
    launched("count_correct");
}

std::size_t gpu_mlp::take_correct() {
    state& s = *state_;
    s.use_device();
    unsigned long long n = 0;
    check(cudaMemcpyAsync(&n, s.correct.get(), sizeof n, cudaMemcpyDeviceToHost, s.stream),
          "cudaMemcpyAsync (correct)");
    check(cudaMemsetAsync(s.correct.get(), 0, sizeof n, s.stream), "cudaMemsetAsync");
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
    return static_cast<std::size_t>(n);
}

void gpu_mlp::set_test_set(std::span<const float> x, std::span<const std::int32_t> labels) {
    state& s = *state_;
    if (x.size() != labels.size() * static_cast<std::size_t>(s.in)) {
        throw ferry::invalid_argument("gpu_mlp::set_test_set: " + std::to_string(x.size()) +
                                      " floats for " + std::to_string(labels.size()) +
                                      " samples of " + std::to_string(s.in));
    }
    s.use_device();
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
    s.test_x = device_array<float>(x.size());
    s.test_y = device_array<std::int32_t>(labels.size());
    s.test_n = labels.size();
    if (s.test_n == 0) return;
    // On the model's stream, then waited for (as the weights in the constructor).
    check(
        cudaMemcpyAsync(s.test_x.get(), x.data(), x.size_bytes(), cudaMemcpyHostToDevice, s.stream),
        "cudaMemcpyAsync (test images)");
    check(cudaMemcpyAsync(s.test_y.get(), labels.data(), labels.size_bytes(),
                          cudaMemcpyHostToDevice, s.stream),
          "cudaMemcpyAsync (test labels)");
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize (test set)");
}

std::size_t gpu_mlp::test_correct() {
    state& s = *state_;
    s.use_device();
    s.reserve(eval_chunk);
    unsigned long long* counter = s.correct.get() + 1;
    check(cudaMemsetAsync(counter, 0, sizeof *counter, s.stream), "cudaMemsetAsync");
    for (std::size_t first = 0; first < s.test_n; first += eval_chunk) {
        const int n = static_cast<int>(std::min<std::size_t>(eval_chunk, s.test_n - first));
        s.forward(s.test_x.get() + first * static_cast<std::size_t>(s.in), n);
        count_correct<<<(static_cast<unsigned>(n) + threads_per_block - 1) / threads_per_block,
                        threads_per_block, 0, s.stream>>>(
            s.logits.get(), s.b2(), s.test_y.get() + first, s.out, n, counter);
        launched("count_correct");
    }
    unsigned long long n = 0;
    check(cudaMemcpyAsync(&n, counter, sizeof n, cudaMemcpyDeviceToHost, s.stream),
          "cudaMemcpyAsync (correct)");
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
    return static_cast<std::size_t>(n);
}

std::size_t gpu_mlp::test_size() const noexcept {
    return state_->test_n;
}

void gpu_mlp::copy_to(mlp& model) const {
    const state& s = *state_;
    if (model.w1.size() != s.n_w1 || model.b1.size() != s.n_b1 || model.w2.size() != s.n_w2 ||
        model.b2.size() != s.n_b2) {
        throw ferry::invalid_argument("gpu_mlp::copy_to: the model's shape differs");
    }
    s.use_device();
    check(cudaStreamSynchronize(s.stream), "cudaStreamSynchronize");
    auto download = [&](const device_array<float>& from, std::vector<float>* const(&to)[4]) {
        std::size_t at = 0;
        for (std::vector<float>* v : to) {
            if (v->empty()) continue;
            check(cudaMemcpy(v->data(), from.get() + at, v->size() * sizeof(float),
                             cudaMemcpyDeviceToHost),
                  "cudaMemcpy (weights to host)");
            at += v->size();
        }
    };
    std::vector<float>* const weights[4] = {&model.w1, &model.b1, &model.w2, &model.b2};
    std::vector<float>* const momentum[4] = {&model.v_w1, &model.v_b1, &model.v_w2, &model.v_b2};
    download(s.params, weights);
    download(s.velocity, momentum);
}

}  // namespace ferry_examples
