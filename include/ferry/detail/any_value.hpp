// SPDX-License-Identifier: Apache-2.0
/// \file
/// A move-only, type-erased value with small-buffer storage: how items travel through the engine.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "ferry/export.hpp"

namespace ferry::detail {

/// Like `std::any`, but move-only (so batches of move-only items work) and without RTTI.
/// Values up to `inline_size` bytes that move without throwing live inside the object; larger
/// ones live on the heap. Not thread-safe; one item is touched by one stage at a time.
class FERRY_API any_value {
  public:
    static constexpr std::size_t inline_size = 64;

    any_value() noexcept = default;
    any_value(const any_value&) = delete;
    any_value& operator=(const any_value&) = delete;
    any_value(any_value&& o) noexcept { take(o); }
    any_value& operator=(any_value&& o) noexcept {
        if (this != &o) {
            reset();
            take(o);
        }
        return *this;
    }
    ~any_value() { reset(); }

    /// Destroys the held value (if any) and constructs a `T` from `args`.
    template <class T, class... Args>
    T& emplace(Args&&... args) {
        reset();
        if constexpr (fits_inline<T>) {
            T* p = ::new (static_cast<void*>(buf_)) T(std::forward<Args>(args)...);
            ops_ = &inline_ops<T>;
            return *p;
        } else {
            auto owned = std::make_unique<T>(std::forward<Args>(args)...);
            T* p = owned.get();
            heap_ = owned.release();  // ownership passes to heap_ops<T>::destroy
            ops_ = &heap_ops<T>;
            return *p;
        }
    }

    /// The held `T`. Precondition: `holds<T>()`; the engine checks types at compile time.
    template <class T>
    [[nodiscard]] T& get() noexcept {
        if constexpr (fits_inline<T>) {
            return *std::launder(reinterpret_cast<T*>(buf_));
        } else {
            return *static_cast<T*>(heap_);
        }
    }

    /// Moves the held `T` out and leaves this empty.
    template <class T>
    [[nodiscard]] T take_as() {
        T out(std::move(get<T>()));
        reset();
        return out;
    }

    template <class T>
    [[nodiscard]] bool holds() const noexcept {
        return ops_ == &inline_ops<T> || ops_ == &heap_ops<T>;
    }

    [[nodiscard]] bool has_value() const noexcept { return ops_ != nullptr; }

    void reset() noexcept {
        if (ops_ != nullptr) {
            ops_->destroy(*this);
            ops_ = nullptr;
        }
    }

  private:
    struct ops {
        void (*destroy)(any_value&) noexcept;
        void (*move)(any_value& from, any_value& to) noexcept;
    };

    const ops* ops_ = nullptr;
    union {
        alignas(std::max_align_t) unsigned char buf_[inline_size];
        void* heap_;
    };

    template <class T>
    static constexpr bool fits_inline =
        sizeof(T) <= inline_size &&
        alignof(T) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<T>;

    // Plain function templates (not lambdas) so that the ops tables need no complete class.
    template <class T>
    static void destroy_inline(any_value& self) noexcept {
        self.get<T>().~T();
    }
    template <class T>
    static void move_inline(any_value& from, any_value& to) noexcept {
        ::new (static_cast<void*>(to.buf_)) T(std::move(from.get<T>()));
        from.get<T>().~T();
    }
    template <class T>
    static void destroy_heap(any_value& self) noexcept {
        std::unique_ptr<T>(static_cast<T*>(self.heap_)).reset();
    }
    template <class T>
    static void move_heap(any_value& from, any_value& to) noexcept {
        to.heap_ = std::exchange(from.heap_, nullptr);
    }
    template <class T>
    static constexpr ops inline_ops{&destroy_inline<T>, &move_inline<T>};
    template <class T>
    static constexpr ops heap_ops{&destroy_heap<T>, &move_heap<T>};

    void take(any_value& o) noexcept {
        if (o.ops_ != nullptr) {
            o.ops_->move(o, *this);
            ops_ = std::exchange(o.ops_, nullptr);
        }
    }
};

}  // namespace ferry::detail
