// SPDX-License-Identifier: Apache-2.0
/// \file
/// `decode_audio`'s output as it is decoded: `sample_store`, one `ferry::audio` with room for
/// more, handed over without a copy when it is filled exactly.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ferry/audio.hpp"

namespace ferry::ops::detail {

/// The output's samples as they are decoded, channel-major in one `audio` with room for more
/// (grown by doubling). What it holds is handed over without a copy when it fills the room
/// exactly, as a window whose length was reserved does; copied to its size otherwise.
class sample_store {
  public:
    sample_store(int channels, int rate) : channels_(channels), rate_(rate) {}

    [[nodiscard]] std::int64_t size() const noexcept { return size_; }
    [[nodiscard]] std::int64_t room() const noexcept { return buf_.samples() - size_; }
    /// Where channel `c`'s next sample goes.
    [[nodiscard]] float* end(int c) noexcept { return buf_.channel(c).data() + size_; }
    /// The next `n` samples of every channel are written.
    void commit(std::int64_t n) noexcept { size_ += n; }
    /// `n` samples of silence (zeros) after those held, every channel.
    void pad(std::int64_t n) {
        reserve(n);
        for (int c = 0; c < channels_; ++c) std::fill_n(end(c), n, 0.0F);
        commit(n);
    }

    /// Room for at least `n` more samples per channel.
    void reserve(std::int64_t n) {
        if (room() >= n) return;
        audio bigger(channels_, std::max(size_ + n, 2 * buf_.samples()), rate_);
        copy_to(bigger);
        buf_ = std::move(bigger);
    }

    audio take() {
        if (size_ == buf_.samples() && !buf_.empty()) return std::move(buf_);
        audio out(channels_, size_, rate_);
        copy_to(out);
        return out;
    }

  private:
    void copy_to(audio& to) const {
        for (int c = 0; c < channels_ && size_ > 0; ++c) {
            std::copy_n(buf_.channel(c).data(), size_, to.channel(c).data());
        }
    }

    int channels_;
    int rate_;
    audio buf_;
    std::int64_t size_ = 0;
};

}  // namespace ferry::ops::detail
