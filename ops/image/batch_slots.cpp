// SPDX-License-Identifier: Apache-2.0
/// \file
/// batch_slots: batches keyed by (epoch, position / batch size), each one tensor allocated at its
/// first claim and held, through a weak reference, while any of its slots lives; `collate` of
/// slots, in place where they fill their batch in order, else a copy; and a slot's flip.

#include "ferry/batch_slots.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ferry/collate.hpp"
#include "ferry/error.hpp"
#include "ferry/image.hpp"
#include "mirror.hpp"

namespace ferry {
namespace detail {

struct slot_batch {
    tensor pixels;  ///< batch size x height x width x channels, u8
    int width = 0;
    int height = 0;
    pixel_format format = pixel_format::rgb;
    std::size_t slot_bytes = 0;
};

struct batch_slots_state {
    std::size_t batch_size = 0;
    int width = 0;
    int height = 0;
    pixel_format format = pixel_format::rgb;
    allocator alloc;

    mutable std::mutex mutex;
    /// (epoch, batch) -> the batch while a slot of it lives.
    mutable std::map<std::pair<std::uint64_t, std::uint64_t>, std::weak_ptr<slot_batch>> batches;
    mutable std::size_t claims = 0;  ///< since the last sweep of batches let go

    image_slot claim(const item_info& item) const {
        const std::pair key{item.epoch, item.position / batch_size};
        const std::size_t index = item.position % batch_size;
        std::lock_guard lock(mutex);
        if (++claims >= 4 * batch_size) {
            claims = 0;
            std::erase_if(batches, [](const auto& kv) { return kv.second.expired(); });
        }
        auto& entry = batches[key];
        auto batch = entry.lock();
        if (!batch) {
            batch = std::make_shared<slot_batch>();
            const auto c = static_cast<std::int64_t>(channels_of(format));
            batch->pixels =
                tensor(dtype::u8, {static_cast<std::int64_t>(batch_size), height, width, c}, alloc);
            batch->width = width;
            batch->height = height;
            batch->format = format;
            batch->slot_bytes = static_cast<std::size_t>(height) * static_cast<std::size_t>(width) *
                                static_cast<std::size_t>(c);
            entry = batch;
        }
        return {std::move(batch), index};
    }
};

}  // namespace detail

int image_slot::width() const noexcept {
    return batch_ ? batch_->width : 0;
}

int image_slot::height() const noexcept {
    return batch_ ? batch_->height : 0;
}

pixel_format image_slot::format() const noexcept {
    return batch_ ? batch_->format : pixel_format::rgb;
}

std::span<std::uint8_t> image_slot::pixels() const noexcept {
    if (!batch_) return {};
    auto* base = static_cast<std::uint8_t*>(batch_->pixels.data());
    return {base + index_ * batch_->slot_bytes, batch_->slot_bytes};
}

const tensor& image_slot::batch_tensor() const {
    if (!batch_) throw invalid_argument("image_slot::batch_tensor: an empty slot");
    return batch_->pixels;
}

batch_slots::batch_slots(std::size_t batch_size, int width, int height, pixel_format format,
                         allocator alloc)
    : state_(std::make_shared<detail::batch_slots_state>()) {
    if (batch_size == 0 || width <= 0 || height <= 0) {
        throw invalid_argument("batch_slots: batch size " + std::to_string(batch_size) + ", " +
                               std::to_string(width) + "x" + std::to_string(height) +
                               ": each must be positive");
    }
    state_->batch_size = batch_size;
    state_->width = width;
    state_->height = height;
    state_->format = format;
    state_->alloc = std::move(alloc);
}

image_slot batch_slots::claim(const item_info& item) const {
    return state_->claim(item);
}

std::size_t batch_slots::batch_size() const noexcept {
    return state_->batch_size;
}

std::size_t batch_slots::live_batches() const {
    std::lock_guard lock(state_->mutex);
    std::size_t n = 0;
    for (const auto& kv : state_->batches) n += kv.second.expired() ? 0 : 1;
    return n;
}

namespace ops::detail {

image_slot horizontal_flip_fn::operator()(image_slot slot) const {
    if (slot.empty()) throw invalid_argument("horizontal_flip: an empty slot");
    mirror_rows_in_place(
        slot.pixels().data(),
        static_cast<std::size_t>(slot.width()) * static_cast<std::size_t>(slot.channels()),
        slot.width(), slot.height(), slot.channels());
    return slot;
}

tensor collate_fn::operator()(std::vector<image_slot> slots, const collate_options& options) const {
    if (slots.empty()) throw invalid_argument("collate: the batch is empty");
    const image_slot& first = slots.front();
    if (first.empty()) throw invalid_argument("collate: slot 0 is empty (claimed from no batch)");
    bool in_place = first.index() == 0;
    for (std::size_t i = 0; i < slots.size(); ++i) {
        const image_slot& s = slots[i];
        if (s.empty() || s.width() != first.width() || s.height() != first.height() ||
            s.format() != first.format()) {
            throw invalid_argument("collate: slot " + std::to_string(i) +
                                   " is not of the size and format of slot 0 (slots of one "
                                   "batch_slots are)");
        }
        in_place = in_place && s.batch() == first.batch() && s.index() == i;
    }
    const auto n = static_cast<std::int64_t>(slots.size());
    const tensor& whole = first.batch_tensor();
    const std::int64_t h = first.height(), w = first.width(), c = first.channels();
    if (in_place) {
        // The first n slots of the batch's tensor (all of them but in a short last batch).
        if (n == whole.size(0)) return whole;
        return tensor(whole.storage(), dtype::u8, {n, h, w, c});
    }
    tensor out(dtype::u8, {n, h, w, c}, options.alloc);
    auto* dst = static_cast<std::uint8_t*>(out.data());
    const std::size_t each = first.pixels().size();
    for (std::size_t i = 0; i < slots.size(); ++i) {
        std::memcpy(dst + i * each, slots[i].pixels().data(), each);
    }
    return out;
}

}  // namespace ops::detail
}  // namespace ferry
