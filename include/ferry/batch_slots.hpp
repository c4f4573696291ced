// SPDX-License-Identifier: Apache-2.0
/// \file
/// Batches written in place: `ferry::batch_slots` gives each item its slot in the batch tensor
/// it will be collated into, the decode stage writes its pixels there
/// (`ops::decode_random_resized_crop_into`), and `ops::collate` of slots that fill their batch in
/// order hands that tensor on: no image buffer per item and no copy into the batch.
///
/// \code
///   ferry::batch_slots slots(32, 224, 224);     // batches of 32 RGB 224x224 images
///   auto pipe = ferry::from(files)
///                   .map(ferry::ops::read_file, {.concurrency = 2, .executor = ferry::io})
///                   .map([&slots](const ferry::bytes& jpeg, const ferry::item_info& item) {
///                       std::mt19937_64 rng(item.seed ^ item.index);  // same item, same crop
///                       const bool flip = rng() % 2 == 0;
///                       return ferry::ops::decode_random_resized_crop_into(
///                           jpeg, slots.claim(item), rng, {.flip = flip});
///                   }, 2)
///                   .batch(32)
///                   .map(ferry::ops::collate)   // in place: the batch tensor the slots are in
///                   .build();
/// \endcode
///
/// An item's slot follows from its position in the epoch (`item_info::position`): slot
/// `position % batch_size` of batch `position / batch_size`, which is where an ordered
/// pipeline's `batch` puts it while no item before it was filtered, skipped or failed. Where the
/// batches come out otherwise (an item left out shifts the ones after it; an unordered pipeline
/// batches as items finish), `collate` copies the slots into a new tensor: the same pixels, one
/// copy. A batch's memory is let go when its slots and the tensors made of it are gone, so at
/// most the batches in flight are held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "ferry/export.hpp"
#include "ferry/item.hpp"
#include "ferry/pixels.hpp"
#include "ferry/tensor.hpp"

namespace ferry {
namespace detail {
struct slot_batch;
struct batch_slots_state;
}  // namespace detail

/// One image's place in a batch of `batch_slots`: `height() x width() x channels()` bytes, rows
/// packed (HWC). Copies share the place; the stage that makes the image writes `pixels()`.
class FERRY_API image_slot {
  public:
    image_slot() = default;

    [[nodiscard]] bool empty() const noexcept { return batch_ == nullptr; }
    [[nodiscard]] int width() const noexcept;
    [[nodiscard]] int height() const noexcept;
    [[nodiscard]] pixel_format format() const noexcept;
    [[nodiscard]] int channels() const noexcept { return channels_of(format()); }
    /// Its place in its batch (0 up to the batch size).
    [[nodiscard]] std::size_t index() const noexcept { return index_; }
    /// The pixels (empty for an empty slot).
    [[nodiscard]] std::span<std::uint8_t> pixels() const noexcept;
    /// The batch it belongs to, the same object for every slot of one batch.
    [[nodiscard]] const void* batch() const noexcept { return batch_.get(); }
    /// The whole batch's tensor (`batch size x height x width x channels`, u8): what `collate`
    /// hands on in place.
    [[nodiscard]] const tensor& batch_tensor() const;

  private:
    friend struct detail::batch_slots_state;
    image_slot(std::shared_ptr<detail::slot_batch> batch, std::size_t index) noexcept
        : batch_(std::move(batch)), index_(index) {}

    std::shared_ptr<detail::slot_batch> batch_;
    std::size_t index_ = 0;
};

/// Hands out the slots of batches of `batch_size` images of `width x height` pixels of `format`,
/// each batch one u8 tensor allocated with `alloc` (empty: the heap) when its first slot is
/// claimed. Thread-safe; copies share the batches.
class FERRY_API batch_slots {
  public:
    /// Throws `ferry::invalid_argument` on a zero batch size or a non-positive width or height.
    batch_slots(std::size_t batch_size, int width, int height,
                pixel_format format = pixel_format::rgb, allocator alloc = {});

    /// The slot of the item at `item.position` of epoch `item.epoch` (the same slot however
    /// often it is claimed: a retried call gets it again).
    [[nodiscard]] image_slot claim(const item_info& item) const;

    [[nodiscard]] std::size_t batch_size() const noexcept;
    /// Batches whose slots are held now (a batch's tensor, once collated in place, is yours:
    /// its memory goes with the last copy of it).
    [[nodiscard]] std::size_t live_batches() const;

  private:
    std::shared_ptr<detail::batch_slots_state> state_;
};

}  // namespace ferry
