// SPDX-License-Identifier: Apache-2.0
/// \file
/// The storage of ferry's owning media values (`bytes`, `image`, `audio`, `video_clip`): a
/// `buffer` that copies deeply and moves for free, and the sizes that travel with it.
#pragma once

#include <cstddef>
#include <cstring>
#include <utility>

#include "ferry/tensor.hpp"

namespace ferry::detail {

/// A `buffer` from `allocate_host` owned by one value: copies copy the bytes into a fresh block
/// (a copy of no storage is no storage; of an empty one, an empty one), moves hand the block
/// over and leave no storage behind. `Slack` bytes past `size()` are allocated with every block
/// and belong to nobody (`video_clip`: swscale's SIMD stores may run that far past a frame).
///
/// With this as their storage and `moved_to_zero` for the sizes that describe it, the value
/// types need no copy or move members of their own: the compiler's do the right thing.
template <std::size_t Slack = 0>
class owned_buffer {
  public:
    owned_buffer() = default;
    /// `size` uninitialised bytes.
    explicit owned_buffer(std::size_t size) : buf_(allocate_host(size + Slack)) {
        buf_.size = size;
    }

    owned_buffer(const owned_buffer& other) {
        if (other.buf_.data == nullptr) return;
        buf_ = allocate_host(other.buf_.size + Slack);
        buf_.size = other.buf_.size;
        std::memcpy(buf_.data, other.buf_.data, other.buf_.size);
    }
    owned_buffer& operator=(const owned_buffer& other) {
        if (this != &other) *this = owned_buffer(other);
        return *this;
    }
    owned_buffer(owned_buffer&& other) noexcept : buf_(std::exchange(other.buf_, {})) {}
    owned_buffer& operator=(owned_buffer&& other) noexcept {
        buf_ = std::exchange(other.buf_, {});
        return *this;
    }
    ~owned_buffer() = default;

    [[nodiscard]] std::byte* data() noexcept { return buf_.data; }
    [[nodiscard]] const std::byte* data() const noexcept { return buf_.data; }
    [[nodiscard]] std::size_t size() const noexcept { return buf_.size; }
    /// Keeps the first `n` bytes (`n <= size()`); the memory is not reallocated.
    void truncate(std::size_t n) noexcept {
        if (n < buf_.size) buf_.size = n;
    }
    /// Gives up the block (for zero-copy conversions to tensors); leaves no storage.
    [[nodiscard]] buffer release() noexcept { return std::exchange(buf_, {}); }

  private:
    buffer buf_{};
};

/// A size or a count that describes an `owned_buffer` (an image's width, a clip's frames): copies
/// copy it, a move leaves `T{}` behind, so a moved-from value's sizes agree with its absent
/// storage. Reads and assigns as a `T`.
template <class T>
class moved_to_zero {
  public:
    moved_to_zero() = default;
    moved_to_zero(T v) noexcept : v_(v) {}  // NOLINT(google-explicit-constructor): a T stand-in
    moved_to_zero(const moved_to_zero&) = default;
    moved_to_zero& operator=(const moved_to_zero&) = default;
    moved_to_zero(moved_to_zero&& other) noexcept : v_(std::exchange(other.v_, T{})) {}
    moved_to_zero& operator=(moved_to_zero&& other) noexcept {
        v_ = std::exchange(other.v_, T{});
        return *this;
    }
    ~moved_to_zero() = default;

    operator T() const noexcept { return v_; }  // NOLINT(google-explicit-constructor): as a T

  private:
    T v_{};
};

}  // namespace ferry::detail
