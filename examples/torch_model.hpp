// SPDX-License-Identifier: Apache-2.0
/// \file
/// torch_trainer's network: a small residual CNN in libtorch (conv + batch norm, one residual
/// block), sized so that 5 epochs of Fashion-MNIST take a few minutes on 2 CPU cores, and a hash
/// of its state for comparing the ranks' weights.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <string>

namespace ferry_examples {

/// 3x3 convolution (no bias: the batch norm after it has one), batch norm, ReLU.
struct conv_bn_relu_impl : torch::nn::Module {
    conv_bn_relu_impl(int in, int out)
        : conv(register_module(
              "conv",
              torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, 3).padding(1).bias(false)))),
          bn(register_module("bn", torch::nn::BatchNorm2d(out))) {}

    torch::Tensor forward(const torch::Tensor& x) {
        return torch::relu(bn->forward(conv->forward(x)));
    }

    torch::nn::Conv2d conv;
    torch::nn::BatchNorm2d bn;
};
TORCH_MODULE_IMPL(conv_bn_relu, conv_bn_relu_impl);

/// A ResNet basic block: two 3x3 conv + batch norm, the input added back before the last ReLU.
struct residual_block_impl : torch::nn::Module {
    explicit residual_block_impl(int channels)
        : first(register_module("first", conv_bn_relu(channels, channels))),
          conv(register_module(
              "conv", torch::nn::Conv2d(
                          torch::nn::Conv2dOptions(channels, channels, 3).padding(1).bias(false)))),
          bn(register_module("bn", torch::nn::BatchNorm2d(channels))) {
        // The block starts as the identity (Goyal et al., "Accurate, Large Minibatch SGD"): with
        // the sum's scale set to 0 the first steps are the plain network's, and stable.
        torch::NoGradGuard no_grad;
        bn->weight.zero_();
    }

    torch::Tensor forward(const torch::Tensor& x) {
        return torch::relu(bn->forward(conv->forward(first->forward(x))) + x);
    }

    conv_bn_relu first;
    torch::nn::Conv2d conv;
    torch::nn::BatchNorm2d bn;
};
TORCH_MODULE_IMPL(residual_block, residual_block_impl);

/// The classifier for `channels`-channel `size x size` images:
///
///     conv 3x3, w + BN + ReLU        (size)
///     max pool 2                     (size / 2)
///     conv 3x3, 2w + BN + ReLU       (size / 2)
///     max pool 2                     (size / 4)
///     residual block, 2w             (size / 4)   2 x (conv 3x3 + BN), skip connection
///     linear 2w (size/4)^2 -> classes
///
/// With w = 16 on 28x28: 1.9 M multiply-adds and 40 k weights per image.
struct classifier_impl : torch::nn::Module {
    classifier_impl(int channels, int size, int width, int classes)
        : stem(register_module("stem", conv_bn_relu(channels, width))),
          widen(register_module("widen", conv_bn_relu(width, 2 * width))),
          block(register_module("block", residual_block(2 * width))),
          head(register_module("head",
                               torch::nn::Linear(2 * width * (size / 4) * (size / 4), classes))) {}

    /// `x`: float N x C x H x W, normalized. Returns the logits, N x classes.
    torch::Tensor forward(const torch::Tensor& x) {
        torch::Tensor h = torch::max_pool2d(stem->forward(x), 2);
        h = torch::max_pool2d(widen->forward(h), 2);
        return head->forward(block->forward(h).flatten(1));
    }

    conv_bn_relu stem;
    conv_bn_relu widen;
    residual_block block;
    torch::nn::Linear head;
};
TORCH_MODULE_IMPL(classifier, classifier_impl);

/// FNV-1a over the bytes of every parameter and buffer (batch norm's running statistics), in
/// registration order, as 16 hex digits: equal on two ranks only when their models are
/// bit-identical.
inline std::string state_hash(const torch::nn::Module& model) {
    std::uint64_t h = 14695981039346656037ULL;
    auto add = [&h](const torch::Tensor& t) {
        const torch::Tensor c = t.contiguous();
        const auto* p = static_cast<const unsigned char*>(c.data_ptr());
        const std::size_t n = c.numel() * c.element_size();
        for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
    };
    for (const auto& p : model.parameters()) add(p);
    for (const auto& b : model.buffers()) add(b);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

}  // namespace ferry_examples
