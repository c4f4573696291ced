// SPDX-License-Identifier: Apache-2.0
/// \file
/// out_of_line<T>: a member kept behind a pointer, allocated the first time it is written and
/// kept (emptied, not freed) from then on, so that a rarely used vector or string costs a pooled
/// box 8 bytes instead of 24 or 32 (box.hpp), and a box reused from the pool allocates no more.
#pragma once

#include <memory>

namespace ferry::detail {

template <class T>
class out_of_line {
  public:
    /// The value, or an empty one where none was ever written.
    const T& operator*() const noexcept { return p_ ? *p_ : none(); }
    const T* operator->() const noexcept { return &**this; }
    /// The value to write (allocated on first use).
    T& mut() {
        if (!p_) p_ = std::make_unique<T>();
        return *p_;
    }
    [[nodiscard]] bool empty() const noexcept { return !p_ || p_->empty(); }
    /// Empties the value, keeping its allocation.
    void clear() noexcept {
        if (p_) p_->clear();
    }
    /// Copies `o`'s value (allocating only where it has one).
    void assign(const out_of_line& o) {
        if (o.empty()) {
            clear();
        } else {
            mut() = *o;
        }
    }

  private:
    static const T& none() noexcept {
        static const T empty{};
        return empty;
    }
    std::unique_ptr<T> p_;
};

}  // namespace ferry::detail
