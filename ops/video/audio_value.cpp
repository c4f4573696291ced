// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::audio`, decoded float32 samples: its size checks, release and tensor view.
#include <type_traits>

#include "ferry/audio.hpp"
#include "ferry/error.hpp"

namespace ferry {

audio::audio(int channels, std::int64_t samples, int sample_rate)
    : channels_(channels), samples_(samples), sample_rate_(sample_rate) {
    if (channels <= 0 || sample_rate <= 0 || samples < 0) {
        throw invalid_argument("audio: " + std::to_string(channels) + " channels of " +
                               std::to_string(samples) + " samples at " +
                               std::to_string(sample_rate) + " Hz is not a valid size");
    }
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::size_t>(channels) * sizeof(float),
                               static_cast<std::size_t>(samples), &bytes)) {
        throw invalid_argument("audio: size overflows");
    }
    buf_ = detail::owned_buffer<>(bytes);
}

// Moves stay noexcept (std::vector<audio> moves, rather than copies, when it grows).
static_assert(std::is_nothrow_move_constructible_v<audio> &&
              std::is_nothrow_move_assignable_v<audio>);

buffer audio::release() noexcept {
    channels_ = 0;
    samples_ = 0;
    padded_ = 0;
    return buf_.release();
}

tensor audio::to_tensor() && {
    if (empty()) throw invalid_argument("audio::to_tensor: the audio is empty");
    std::vector<std::int64_t> shape{channels_, samples_};
    return tensor(release(), dtype::f32, std::move(shape));
}

tensor audio::to_tensor() const& {
    return audio(*this).to_tensor();
}

}  // namespace ferry
