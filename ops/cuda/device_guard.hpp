// SPDX-License-Identifier: Apache-2.0
/// \file
/// A scoped switch of the calling thread's current CUDA device, written against a small device
/// API (`Api`) so that its rules are tested without a GPU (tests/cuda/device_guard.cpp); the CUDA
/// runtime's API is in runtime.cpp.
#pragma once

namespace ferry::cuda::detail {

/// Makes `device` current on the calling thread for a scope, and makes the caller's device
/// current again at its end. Every backend call runs under one: a caller (a TBB worker, the
/// training loop) keeps the device it had, and events, streams and copies always belong to the
/// backend's device whatever the caller had current.
///
/// One exception, as in PyTorch's device guard: the caller's device is made current again only
/// when it has a context already. A fresh thread's device is 0 without a context; restoring it
/// would create a context (hundreds of MiB) on GPU 0 in every rank of a multi-GPU job, so such a
/// thread stays on `device` instead.
///
/// `Api` has `static bool get(int& device)` (false: failed), `static int set(int device)` (0 or an
/// error code) and `static bool has_context(int device)`.
template <class Api>
class basic_device_guard {
  public:
    explicit basic_device_guard(int device) noexcept : device_(device) {
        int current = -1;
        if (!Api::get(current)) current = -1;
        previous_ = current;
        if (current != device) error_ = Api::set(device);
    }
    ~basic_device_guard() {
        if (previous_ >= 0 && previous_ != device_ && error_ == 0 && Api::has_context(previous_)) {
            (void)Api::set(previous_);
        }
    }
    basic_device_guard(const basic_device_guard&) = delete;
    basic_device_guard& operator=(const basic_device_guard&) = delete;

    /// 0, or the error of making `device` current (the caller reports it).
    [[nodiscard]] int error() const noexcept { return error_; }

  private:
    int device_;
    int previous_ = -1;
    int error_ = 0;
};

}  // namespace ferry::cuda::detail
