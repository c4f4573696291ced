// SPDX-License-Identifier: Apache-2.0
/// \file
/// The `u8 -> f32` normalize kernel `to_cuda({.normalize = ...})` runs after the copy: the bus
/// carries bytes, the device writes floats (a quarter of the bus traffic of copying floats).
#include <algorithm>

#include "kernels.hpp"

namespace ferry::cuda::detail {
namespace {

struct channel_constants {
    float scale[max_normalize_channels];
    float shift[max_normalize_channels];
};

/// `x * scale + shift`, rounded after the multiply and after the add as the host's
/// `ops::normalize` is: nvcc would otherwise fuse them into one FMA (one rounding), 1 ulp away
/// from the host path.
__device__ __forceinline__ float scaled(std::uint8_t x, float scale, float shift) {
    return __fadd_rn(__fmul_rn(static_cast<float>(x), scale), shift);
}

/// One thread per pixel: reads its `c` bytes and writes `c` floats, interleaved (HWC) or one per
/// plane (CHW: consecutive threads write consecutive floats of a plane, so stores coalesce).
template <bool Chw>
__global__ void normalize_pixels(float* __restrict__ dst, const std::uint8_t* __restrict__ src,
                                 std::int64_t pixels_per_image, std::int64_t pixels, int c,
                                 channel_constants k) {
    const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * gridDim.x;
    for (std::int64_t p = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         p < pixels; p += stride) {
        const std::uint8_t* in = src + p * c;
        if constexpr (Chw) {
            const std::int64_t image = p / pixels_per_image;
            const std::int64_t at = p - image * pixels_per_image;
            float* out = dst + image * pixels_per_image * c + at;
            for (int ch = 0; ch < c; ++ch) {
                out[ch * pixels_per_image] = scaled(in[ch], k.scale[ch], k.shift[ch]);
            }
        } else {
            float* out = dst + p * c;
            for (int ch = 0; ch < c; ++ch) {
                out[ch] = scaled(in[ch], k.scale[ch], k.shift[ch]);
            }
        }
    }
}

}  // namespace

cudaError_t launch_normalize(float* dst, const std::uint8_t* src, std::int64_t n, std::int64_t h,
                             std::int64_t w, std::int64_t c, const float* scale, const float* shift,
                             bool chw, cudaStream_t stream) {
    if (c < 1 || c > max_normalize_channels) return cudaErrorInvalidValue;
    channel_constants k{};
    for (std::int64_t i = 0; i < c; ++i) {
        k.scale[i] = scale[i];
        k.shift[i] = shift[i];
    }
    const std::int64_t per_image = h * w;
    const std::int64_t pixels = n * per_image;
    if (pixels == 0) return cudaSuccess;
    constexpr int threads = 256;
    // Enough blocks to fill an H100/H200 several times over; the loop strides over the rest.
    const auto blocks = static_cast<unsigned>(
        std::min<std::int64_t>((pixels + threads - 1) / threads, std::int64_t{65535}));
    if (chw) {
        normalize_pixels<true>
            <<<blocks, threads, 0, stream>>>(dst, src, per_image, pixels, static_cast<int>(c), k);
    } else {
        normalize_pixels<false>
            <<<blocks, threads, 0, stream>>>(dst, src, per_image, pixels, static_cast<int>(c), k);
    }
    return cudaGetLastError();
}

}  // namespace ferry::cuda::detail
