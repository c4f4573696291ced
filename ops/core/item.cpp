// SPDX-License-Identifier: Apache-2.0
/// \file
/// The item of the stage call running on this thread (`ferry::item_info`).

#include "ferry/item.hpp"

namespace ferry::detail {
namespace {

thread_local const item_info* this_item = nullptr;

}  // namespace

const item_info* current_item() noexcept {
    return this_item;
}

item_scope::item_scope(const item_info* info) noexcept : previous_(this_item) {
    this_item = info;
}

item_scope::~item_scope() {
    this_item = previous_;
}

}  // namespace ferry::detail
