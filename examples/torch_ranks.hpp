// SPDX-License-Identifier: Apache-2.0
/// \file
/// torch_trainer's data parallelism with libtorch's own collectives: a c10d `ProcessGroupGloo`
/// over a `TCPStore`, the ranks' models made equal at the start and their gradients averaged
/// every step (what PyTorch's DistributedDataParallel does, without its bucketing and overlap).
#pragma once

// Set by CMake: 1 where Gloo's headers, which c10d's ProcessGroupGloo.hpp includes, are found
// (Debian ships them apart from libtorch-dev, in libgloo-dev).
#ifndef FERRY_TORCH_GLOO
#define FERRY_TORCH_GLOO 0
#endif

#include <torch/torch.h>
#if FERRY_TORCH_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace ferry_examples {

#if FERRY_TORCH_GLOO

/// The ranks of one training job, joined through a `TCPStore` that rank 0 serves at
/// `MASTER_ADDR:MASTER_PORT` (torchrun's variables; default 127.0.0.1:29500).
class rank_group {
  public:
    /// Blocks until all `world_size` ranks have joined (at most `timeout`; then c10d throws).
    rank_group(std::size_t rank, std::size_t world_size, std::chrono::seconds timeout) {
        const char* addr_env = std::getenv("MASTER_ADDR");
        const char* port_env = std::getenv("MASTER_PORT");
        const std::string addr = addr_env != nullptr && *addr_env != '\0' ? addr_env : "127.0.0.1";
        c10d::TCPStoreOptions store_options;
        store_options.port = static_cast<std::uint16_t>(
            port_env != nullptr && *port_env != '\0' ? std::atoi(port_env) : 29500);
        store_options.isServer = rank == 0;
        store_options.numWorkers = world_size;
        store_options.timeout = timeout;
        auto store = c10::make_intrusive<c10d::TCPStore>(addr, store_options);
        auto options = c10d::ProcessGroupGloo::Options::create(timeout);
        // The device for the address the ranks meet at: on one machine, the loopback interface.
        options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(addr));
        options->threads = 1;  // one collective at a time: the step waits for it anyway
        group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, static_cast<int>(rank),
                                                             static_cast<int>(world_size), options);
        endpoint_ = addr + ":" + std::to_string(store_options.port);
    }

    /// Where the ranks met, "host:port".
    [[nodiscard]] const std::string& endpoint() const { return endpoint_; }

    /// Rank 0's parameters and buffers copied to every rank (as DistributedDataParallel does at
    /// construction): equal seeds make equal models already, this makes it so whatever the seed.
    void broadcast_state(torch::nn::Module& model) {
        torch::NoGradGuard no_grad;
        std::vector<torch::Tensor> state;
        for (auto& p : model.parameters()) state.push_back(p.detach());
        for (auto& b : model.buffers()) {
            if (b.is_floating_point()) state.push_back(b);
        }
        collective(state,
                   [this](std::vector<torch::Tensor>& flat) { group_->broadcast(flat)->wait(); });
    }

    /// After `backward()`: every gradient replaced by its mean over the ranks, and batch norm's
    /// running statistics too, so that the ranks' models stay bit-identical (each rank's batch
    /// norm sees its own batch, as under DistributedDataParallel, and the running means of the
    /// ranks' batches average to those of the global batch). One flat tensor, one all-reduce.
    /// (Not batch norm's num_batches_tracked: an integer, the same count on every rank.)
    void average(torch::nn::Module& model) {
        torch::NoGradGuard no_grad;
        std::vector<torch::Tensor> parts;
        for (auto& p : model.parameters()) parts.push_back(p.mutable_grad());
        for (auto& b : model.buffers()) {
            if (b.is_floating_point()) parts.push_back(b);
        }
        const double ranks = static_cast<double>(group_->getSize());
        collective(parts, [this, ranks](std::vector<torch::Tensor>& flat) {
            group_->allreduce(flat)->wait();
            flat[0].div_(ranks);
        });
    }

  private:
    /// `op` on one flat float tensor holding `tensors` (Gloo's collectives take one tensor per
    /// device, so a model's many shapes travel as one), then the result copied back into them.
    template <class Op>
    static void collective(std::vector<torch::Tensor>& tensors, Op op) {
        std::vector<torch::Tensor> flats;
        for (const auto& t : tensors) flats.push_back(t.flatten());
        std::vector<torch::Tensor> flat{torch::cat(flats)};
        op(flat);
        std::int64_t at = 0;
        for (auto& t : tensors) {
            t.copy_(flat[0].narrow(0, at, t.numel()).view_as(t));
            at += t.numel();
        }
    }

    c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
    std::string endpoint_;
};

#else

/// Without Gloo's headers: one rank only; more throw, saying what is missing.
class rank_group {
  public:
    rank_group(std::size_t /*rank*/, std::size_t /*world_size*/, std::chrono::seconds /*timeout*/) {
        throw std::runtime_error(
            "this torch_trainer was built without Gloo's headers (Debian: libgloo-dev), so it "
            "trains on one rank only");
    }
    [[nodiscard]] const std::string& endpoint() const { return endpoint_; }
    void broadcast_state(torch::nn::Module& /*model*/) {}
    void average(torch::nn::Module& /*model*/) {}

  private:
    std::string endpoint_;
};

#endif

}  // namespace ferry_examples
