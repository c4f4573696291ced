// SPDX-License-Identifier: Apache-2.0
/// \file
/// `to_python`, `from_python` and the native ops' readers of values.
#include "convert.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <utility>

#include "arrays.hpp"
#include "ferry/error.hpp"

namespace ferry::python {
namespace {

/// Whether the caller's reference to `o` is the only one and `owner` the only holder of the
/// memory: then the native value can be taken out of the Python object, which nobody can
/// reach any more (a stage's fresh result, or an argument the stage did not keep).
template <class T>
bool sole_owner(py::handle o, const std::shared_ptr<T>& owner) {
    if (Py_REFCNT(o.ptr()) != 1 || owner.use_count() != 1) return false;
    // The last other holder (a DLPack export, say) may have let go on another thread: see its
    // reads of the memory before this thread takes it over.
    std::atomic_thread_fence(std::memory_order_acquire);
    return true;
}

}  // namespace

py::list to_python_strs(std::vector<std::string>&& strings) {
    py::list out(strings.size());
    for (std::size_t i = 0; i < strings.size(); ++i) {
        out[i] = to_python(value(std::move(strings[i])));
    }
    return out;
}

py::object to_python(value&& v) {
    struct maker {
        py::object operator()(std::monostate&) const { return py::none(); }
        py::object operator()(py_ref& r) const {
            return py::reinterpret_steal<py::object>(r.release());
        }
        py::object operator()(ferry::bytes& b) const {
            return py::cast(py_bytes{std::make_shared<ferry::bytes>(std::move(b))});
        }
        py::object operator()(ferry::image& img) const {
            return py::cast(py_image{std::make_shared<ferry::image>(std::move(img))});
        }
        py::object operator()(ferry::tensor& t) const { return py::cast(std::move(t)); }
        // `ferry.video.Packets`, registered where ferry::video is built (the only place packets
        // come from).
        py::object operator()(ferry::packets& p) const { return py::cast(std::move(p)); }
        py::object operator()(std::string& s) const {
            PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()),
                                               "surrogateescape");
            if (o == nullptr) throw py::error_already_set();
            return py::reinterpret_steal<py::object>(o);
        }
        py::object operator()(std::int64_t& i) const { return py::int_(i); }
        py::object operator()(double& d) const { return py::float_(d); }
        py::object operator()(value_list& l) const {
            py::list out(l.size());
            for (std::size_t i = 0; i < l.size(); ++i) {
                out[i] = to_python(std::move(l[i]));
            }
            l.clear();
            return out;
        }
        py::object operator()(value_tuple& t) const {
            py::tuple out(t.items.size());
            for (std::size_t i = 0; i < t.items.size(); ++i) {
                out[i] = to_python(std::move(t.items[i]));
            }
            t.items.clear();
            return out;
        }
    };
    return std::visit(maker{}, v.v);
}

value from_python(py::handle o) {
    if (o.is_none()) return value{};
    if (py::isinstance<ferry::tensor>(o)) return value(o.cast<ferry::tensor&>());
    if (py::isinstance<py_image>(o)) {
        auto& pi = o.cast<py_image&>();
        if (!pi.img) throw ferry::invalid_argument("a ferry.Image that was emptied");
        if (sole_owner(o, pi.img)) return value(std::move(*pi.img));
        return value(ferry::image(*pi.img));
    }
    if (py::isinstance<py_bytes>(o)) {
        auto& pb = o.cast<py_bytes&>();
        if (!pb.data) throw ferry::invalid_argument("a ferry.Bytes that was emptied");
        if (sole_owner(o, pb.data)) return value(std::move(*pb.data));
        return value(ferry::bytes(*pb.data));
    }
#ifdef FERRY_PYTHON_VIDEO
    // Shared, not copied: packets are immutable.
    if (py::isinstance<ferry::packets>(o)) return value(o.cast<const ferry::packets&>());
#endif
    return value(py_ref::borrow(o.ptr()));
}

value source_element(py::handle o) {
    if (PyUnicode_CheckExact(o.ptr()) != 0) {
        Py_ssize_t n = 0;
        const char* s = PyUnicode_AsUTF8AndSize(o.ptr(), &n);
        if (s == nullptr) {
            // Not UTF-8 (a lone surrogate from a file name os.listdir could not decode): keep
            // the bytes the file system has, as os.fsencode does.
            PyErr_Clear();
            PyObject* b = PyUnicode_EncodeFSDefault(o.ptr());
            if (b == nullptr) throw py::error_already_set();
            std::string out(PyBytes_AS_STRING(b), static_cast<std::size_t>(PyBytes_GET_SIZE(b)));
            Py_DECREF(b);
            return value(std::move(out));
        }
        return value(std::string(s, static_cast<std::size_t>(n)));
    }
    if (PyLong_CheckExact(o.ptr()) != 0) {
        int overflow = 0;
        const long long i = PyLong_AsLongLongAndOverflow(o.ptr(), &overflow);
        if (overflow == 0 && !(i == -1 && PyErr_Occurred() != nullptr)) {
            return value(static_cast<std::int64_t>(i));
        }
        PyErr_Clear();
    }
    if (PyFloat_CheckExact(o.ptr()) != 0) return value(PyFloat_AS_DOUBLE(o.ptr()));
    if (PyTuple_CheckExact(o.ptr()) != 0) {
        // A tuple of plain data (str, int, float, None, such tuples) becomes native; one holding
        // anything else stays the Python tuple.
        value_tuple t;
        const Py_ssize_t n = PyTuple_GET_SIZE(o.ptr());
        t.items.reserve(static_cast<std::size_t>(n));
        for (Py_ssize_t i = 0; i < n; ++i) {
            value e = source_element(PyTuple_GET_ITEM(o.ptr(), i));
            if (e.holds<py_ref>()) return from_python(o);
            t.items.push_back(std::move(e));
        }
        return value(std::move(t));
    }
    return from_python(o);
}

std::string take_path(value&& v, std::string_view op) {
    if (v.holds<std::string>()) return std::move(v.as<std::string>());
    if (v.holds<py_ref>()) {
        gil_hold gil;
        PyObject* path = PyOS_FSPath(v.as<py_ref>().get());
        if (path != nullptr) {
            py::object p = py::reinterpret_steal<py::object>(path);
            if (PyUnicode_Check(path) != 0) return source_element(p).as<std::string>();
            if (PyBytes_Check(path) != 0) {
                return std::string(PyBytes_AS_STRING(path),
                                   static_cast<std::size_t>(PyBytes_GET_SIZE(path)));
            }
        }
        PyErr_Clear();
    }
    throw ferry::invalid_argument(std::string(op) + " expects a path (str or os.PathLike), got " +
                                  kind_of(v));
}

std::chrono::milliseconds ceil_millis(double seconds) noexcept {
    return std::chrono::milliseconds(
        static_cast<std::int64_t>(std::ceil(std::min(seconds, 1e9) * 1000.0)));
}

std::variant<std::filesystem::path, ferry::bytes> take_path_or_bytes(value&& v,
                                                                     std::string_view op) {
    if (v.holds<std::string>()) return std::filesystem::path(std::move(v.as<std::string>()));
    if (v.holds<ferry::bytes>()) return std::move(v.as<ferry::bytes>());
    if (v.holds<py_ref>()) {
        bool is_path = false;
        {
            gil_hold gil;
            is_path = PyUnicode_Check(v.as<py_ref>().get()) != 0 ||
                      PyObject_HasAttrString(v.as<py_ref>().get(), "__fspath__") != 0;
        }
        if (is_path) return std::filesystem::path(take_path(std::move(v), op));
        return take_bytes(std::move(v), op);
    }
    throw ferry::invalid_argument(std::string(op) +
                                  " expects a path (str or os.PathLike) or bytes (ferry.Bytes or "
                                  "a bytes-like object), got " +
                                  kind_of(v));
}

ferry::bytes take_bytes(value&& v, std::string_view op) {
    if (v.holds<ferry::bytes>()) return std::move(v.as<ferry::bytes>());
    if (v.holds<py_ref>()) {
        gil_hold gil;
        PyObject* o = v.as<py_ref>().get();
        if (PyObject_CheckBuffer(o) != 0) {
            Py_buffer view{};
            if (PyObject_GetBuffer(o, &view, PyBUF_C_CONTIGUOUS) == 0) {
                ferry::bytes out(std::span<const std::byte>(static_cast<const std::byte*>(view.buf),
                                                            static_cast<std::size_t>(view.len)));
                PyBuffer_Release(&view);
                return out;
            }
            PyErr_Clear();
        }
    }
    throw ferry::invalid_argument(std::string(op) +
                                  " expects bytes (ferry.Bytes, or a bytes-like "
                                  "Python object), got " +
                                  kind_of(v));
}

value_list take_list(value&& v, std::string_view op) {
    if (v.holds<value_list>()) return std::move(v.as<value_list>());
    if (v.holds<value_tuple>()) return std::move(v.as<value_tuple>().items);
    if (v.holds<py_ref>()) {
        gil_hold gil;
        PyObject* o = v.as<py_ref>().get();
        if (PyList_Check(o) != 0 || PyTuple_Check(o) != 0) {
            py::sequence seq = py::reinterpret_borrow<py::sequence>(o);
            value_list out;
            out.reserve(seq.size());
            for (auto item : seq) out.push_back(from_python(item));
            return out;
        }
    }
    throw ferry::invalid_argument(
        std::string(op) + " expects a batch (a list, as batch(n) makes), got " + kind_of(v));
}

}  // namespace ferry::python
