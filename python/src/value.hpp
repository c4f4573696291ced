// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::python::value`, the one element type of every Python pipeline, and `py_ref`, the
/// holder of a Python object that engine threads may copy and drop.
#pragma once

#include <Python.h>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ferry/bytes.hpp"
#include "ferry/image.hpp"
#include "ferry/tensor.hpp"
#include "ferry/video.hpp"
#include "thread_state.hpp"

namespace ferry::python {

/// Holds the GIL for its lifetime (`gil_ensure`; re-entrant: a thread that has the GIL keeps
/// it). What engine threads use to touch Python: they are not Python threads, and may hold the
/// GIL only for the call at hand (python/README.md, "The GIL"). Each time it had to take the GIL
/// it counts one `acquisitions()`: how the tests see that a native chain takes none per item.
class gil_hold {
  public:
    gil_hold() noexcept : state_(gil_ensure()) {
        if (state_ == PyGILState_UNLOCKED) taken_.fetch_add(1, std::memory_order_relaxed);
    }
    ~gil_hold() { PyGILState_Release(state_); }
    gil_hold(const gil_hold&) = delete;
    gil_hold& operator=(const gil_hold&) = delete;

    /// How many times a `gil_hold` took the GIL (its thread did not hold it), since import.
    [[nodiscard]] static std::uint64_t acquisitions() noexcept {
        return taken_.load(std::memory_order_relaxed);
    }

  private:
    static inline std::atomic<std::uint64_t> taken_{0};
    PyGILState_STATE state_;
};

/// A strong reference to a Python object that may travel through the engine: copied and
/// destroyed on any thread, taking the GIL to change the reference count. Empty after a move.
/// While the interpreter shuts down (after `atexit`, when every pipeline has been closed) a
/// reference dropped by a thread without the GIL is left alone rather than waited for.
class py_ref {
  public:
    py_ref() noexcept = default;
    /// A new reference to `o` (the caller holds the GIL).
    [[nodiscard]] static py_ref borrow(PyObject* o) noexcept {
        Py_XINCREF(o);
        return py_ref(o);
    }
    /// Takes over the caller's reference to `o`.
    [[nodiscard]] static py_ref steal(PyObject* o) noexcept { return py_ref(o); }

    py_ref(const py_ref& o);
    py_ref(py_ref&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    py_ref& operator=(py_ref o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }
    ~py_ref() { reset(); }

    /// Drops the reference (taking the GIL where this thread lacks it).
    void reset() noexcept;
    /// The object, still owned by this holder.
    [[nodiscard]] PyObject* get() const noexcept { return p_; }
    /// Gives up the reference to the caller.
    [[nodiscard]] PyObject* release() noexcept { return std::exchange(p_, nullptr); }
    explicit operator bool() const noexcept { return p_ != nullptr; }

  private:
    explicit py_ref(PyObject* o) noexcept : p_(o) {}
    PyObject* p_ = nullptr;
};

struct value;
/// A batch: what `batch(n)` makes of n values.
using value_list = std::vector<value>;
/// A pair or tuple of values, a Python `tuple`: what `ferry.zip(a, b)` makes of its parts.
struct value_tuple {
    value_list items;
};

/// What travels between the stages of a Python pipeline: nothing (`None`), a Python object, or
/// one of ferry's native values, which native ops use without the GIL. Sources turn `str` into
/// `std::string`, `int` into `std::int64_t`, `float` into `double` and a tuple of those (and
/// None) into a `value_tuple` (a path list, a `range` or a list of `(path, start, end)` segments
/// never touches Python again); a Python stage's result stays a Python object unless it is a
/// `ferry.Tensor`, `ferry.Image`, `ferry.Bytes` or `ferry.video.Packets`, which become native
/// again without a copy. `ferry::packets` arise only where ferry::video is built (its header needs
/// no FFmpeg, and holding, copying and dropping packets needs no ferry::video code).
struct value {
    std::variant<std::monostate, py_ref, ferry::bytes, ferry::image, ferry::tensor, std::string,
                 std::int64_t, double, value_list, value_tuple, ferry::packets>
        v;

    value() = default;
    template <class T>
    requires(!std::same_as<std::remove_cvref_t<T>, value>)
        value(T&& x)  // NOLINT(google-explicit-constructor): a value is any of its alternatives
        : v(std::forward<T>(x)) {}

    template <class T>
    [[nodiscard]] bool holds() const noexcept {
        return std::holds_alternative<T>(v);
    }
    template <class T>
    [[nodiscard]] T& as() {
        return std::get<T>(v);
    }
    template <class T>
    [[nodiscard]] const T& as() const {
        return std::get<T>(v);
    }
};

/// What `v` holds, for error messages: "bytes", "an image", "a tensor", "a str", "an int",
/// "a list", "a tuple", "video packets", "nothing (None)" or "a Python <type>" (a Python object's
/// type name: no GIL needed, the holder keeps the object and so its type alive).
[[nodiscard]] std::string kind_of(const value& v);

/// The bytes `v` holds, for the tuner's memory budget (`ferry::byte_size` finds it): the native
/// values' memory; a Python object counts as its holder only (its size is Python's to know).
[[nodiscard]] std::size_t ferry_byte_size(const value& v);

}  // namespace ferry::python
