// SPDX-License-Identifier: Apache-2.0
/// \file
/// `py_ref`'s reference counting on any thread, and `kind_of`.
#include "value.hpp"

#include "ferry/byte_size.hpp"

namespace ferry::python {
namespace {

/// Whether the interpreter is shutting down (3.13 made the check public).
bool interpreter_finalizing() noexcept {
#if PY_VERSION_HEX >= 0x030D0000
    return Py_IsFinalizing() != 0;
#else
    return _Py_IsFinalizing() != 0;
#endif
}

/// The bytes a value's alternative holds beyond the value itself.
struct value_sizer {
    std::size_t operator()(const ferry::bytes& b) const { return b.size(); }
    std::size_t operator()(const ferry::image& img) const { return img.data().size_bytes(); }
    std::size_t operator()(const ferry::tensor& t) const { return t.nbytes(); }
    std::size_t operator()(const std::string& s) const { return s.size(); }
    std::size_t operator()(const value_list& l) const {
        std::size_t n = 0;
        for (const auto& e : l) n += ferry_byte_size(e);
        return n;
    }
    std::size_t operator()(const value_tuple& t) const { return (*this)(t.items); }
#ifdef FERRY_PYTHON_VIDEO
    std::size_t operator()(const ferry::packets& p) const {
        return p.bytes();
    }
#endif
    template <class T>
    std::size_t operator()(const T&) const {
        return 0;  // nothing (None), a number, a Python object (its size is Python's), packets
                   // where ferry::video is not built (there are none)
    }
};

}  // namespace

py_ref::py_ref(const py_ref& o) : p_(o.p_) {
    if (p_ == nullptr) return;
    if (PyGILState_Check() != 0) {
        Py_INCREF(p_);
        return;
    }
    gil_hold gil;
    Py_INCREF(p_);
}

void py_ref::reset() noexcept {
    PyObject* p = std::exchange(p_, nullptr);
    if (p == nullptr) return;
    if (PyGILState_Check() != 0) {
        Py_DECREF(p);
        return;
    }
    // A thread without the GIL that asked for it now would be ended by the interpreter (3.11's
    // take_gil exits threads during finalization): leak the reference instead. Every pipeline
    // was closed at exit (pipeline.cpp), so only stray references are left here.
    if (Py_IsInitialized() == 0 || interpreter_finalizing()) return;
    gil_hold gil;
    Py_DECREF(p);
}

std::string kind_of(const value& v) {
    struct namer {
        std::string operator()(const std::monostate&) const { return "nothing (None)"; }
        std::string operator()(const py_ref& r) const {
            return std::string("a Python ") + Py_TYPE(r.get())->tp_name;
        }
        std::string operator()(const ferry::bytes&) const { return "bytes"; }
        std::string operator()(const ferry::image&) const { return "an image"; }
        std::string operator()(const ferry::tensor&) const { return "a tensor"; }
        std::string operator()(const std::string&) const { return "a str"; }
        std::string operator()(const std::int64_t&) const { return "an int"; }
        std::string operator()(const double&) const { return "a float"; }
        std::string operator()(const value_list&) const { return "a list"; }
        std::string operator()(const value_tuple&) const { return "a tuple"; }
        std::string operator()(const ferry::packets&) const { return "video packets"; }
    };
    return std::visit(namer{}, v.v);
}

std::size_t ferry_byte_size(const value& v) {
    return sizeof(value) + std::visit(value_sizer{}, v.v);
}

}  // namespace ferry::python
