// SPDX-License-Identifier: Apache-2.0
/// \file
/// The `ferry::packets` accessors: what `demux_video` read, as its shared state holds it.
#include "frames.hpp"

namespace ferry {

namespace {
const std::string no_source;
}

bool packets::empty() const noexcept {
    return !state_ || state_->packets.empty();
}
std::size_t packets::size() const noexcept {
    return state_ ? state_->packets.size() : 0;
}
std::size_t packets::bytes() const noexcept {
    return state_ ? state_->bytes : 0;
}
std::int64_t packets::frames() const noexcept {
    return state_ ? static_cast<std::int64_t>(state_->frame_pts.size()) : 0;
}
int packets::stream() const noexcept {
    return state_ ? state_->stream : -1;
}
std::string packets::codec() const {
    return state_ ? avcodec_get_name(state_->params->codec_id) : "";
}
int packets::width() const noexcept {
    return state_ ? state_->params->width : 0;
}
int packets::height() const noexcept {
    return state_ ? state_->params->height : 0;
}
double packets::frame_rate() const noexcept {
    return state_ ? state_->frame_rate : 0.0;
}
const std::string& packets::source() const noexcept {
    return state_ ? state_->source : no_source;
}
bool packets::truncated() const noexcept {
    return state_ && !state_->truncation.empty();
}
const std::string& packets::truncation() const noexcept {
    return state_ ? state_->truncation : no_source;
}

}  // namespace ferry
