// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.Tensor`, `ferry.Image` and `ferry.Bytes`: properties, the buffer protocol and DLPack.
#include "arrays.hpp"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/pixels.hpp"

namespace ferry::python {
namespace {

/// The buffer protocol's format character of `t` (native byte order).
const char* buffer_format(ferry::dtype t) {
    switch (t) {
        case ferry::dtype::u8:
            return "B";
        case ferry::dtype::i8:
            return "b";
        case ferry::dtype::u16:
            return "H";
        case ferry::dtype::i16:
            return "h";
        case ferry::dtype::i32:
            return "i";
        case ferry::dtype::i64:
            return "q";
        case ferry::dtype::f16:
            return "e";
        case ferry::dtype::f32:
            return "f";
        case ferry::dtype::f64:
            return "d";
    }
    return "B";
}

/// The dtype of a buffer's format, or false where ferry has none.
bool dtype_of_format(std::string format, py::ssize_t itemsize, ferry::dtype& out) {
    if (!format.empty() && (format[0] == '<' || format[0] == '=' || format[0] == '@')) {
        format.erase(0, 1);  // native order (ferry runs on little-endian machines)
    }
    if (format.size() != 1) return false;
    struct entry {
        char c;
        ferry::dtype t;
    };
    static constexpr entry table[] = {
        {'B', ferry::dtype::u8},  {'?', ferry::dtype::u8},  {'b', ferry::dtype::i8},
        {'H', ferry::dtype::u16}, {'h', ferry::dtype::i16}, {'i', ferry::dtype::i32},
        {'l', ferry::dtype::i64}, {'q', ferry::dtype::i64}, {'e', ferry::dtype::f16},
        {'f', ferry::dtype::f32}, {'d', ferry::dtype::f64}};
    for (const auto& e : table) {
        if (e.c == format[0] && static_cast<py::ssize_t>(ferry::size_of(e.t)) == itemsize) {
            out = e.t;
            return true;
        }
    }
    return false;
}

/// Copies a strided block of `itemsize`-byte elements into contiguous `out`, dimension `d` on.
void copy_strided(const std::byte* in, std::byte*& out, const std::vector<py::ssize_t>& shape,
                  const std::vector<py::ssize_t>& strides, std::size_t d, std::size_t itemsize) {
    if (d == shape.size()) {
        std::memcpy(out, in, itemsize);
        out += itemsize;
        return;
    }
    for (py::ssize_t i = 0; i < shape[d]; ++i) {
        copy_strided(in + i * strides[d], out, shape, strides, d + 1, itemsize);
    }
}

/// What a buffer export holds: the tensor (its storage stays alive until the view is released)
/// and the arrays the view points into.
struct buffer_export {
    ferry::tensor t;
    std::vector<Py_ssize_t> shape;
    std::vector<Py_ssize_t> strides;
};

/// The buffer protocol for a class whose objects `export_of` sees as a tensor: numpy.asarray,
/// memoryview and bytes() read its elements where they are. Written here rather than with
/// pybind11's def_buffer, whose getbuffer lets a C++ exception escape into Python's C code
/// (std::terminate) and ignores a consumer's request for contiguous memory.
template <ferry::tensor (*export_of)(PyObject*), bool readonly>
int get_buffer(PyObject* self, Py_buffer* view, int flags) {
    view->obj = nullptr;
    try {
        auto e = std::make_unique<buffer_export>();
        e->t = export_of(self);
        const ferry::tensor& t = e->t;
        if (t.empty()) throw std::runtime_error("the tensor is empty");
        if (t.device().kind == ferry::device_kind::cuda) {
            throw std::runtime_error(t.describe() +
                                     " is in GPU memory; use __dlpack__ (torch.from_dlpack)");
        }
        if (readonly && (flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
            throw std::runtime_error("the memory is read-only");
        }
        const bool strided = (flags & PyBUF_STRIDES) == PyBUF_STRIDES;
        if (!t.is_contiguous() && (!strided || (flags & PyBUF_ANY_CONTIGUOUS) != 0)) {
            throw std::runtime_error(t.describe() + " is not contiguous");
        }
        const auto item = static_cast<Py_ssize_t>(ferry::size_of(t.dtype()));
        e->shape.assign(t.shape().begin(), t.shape().end());
        for (const auto st : t.strides()) e->strides.push_back(static_cast<Py_ssize_t>(st) * item);
        view->buf = const_cast<void*>(t.data());
        view->len = static_cast<Py_ssize_t>(t.nbytes());
        view->itemsize = item;
        view->readonly = readonly ? 1 : 0;
        view->format = (flags & PyBUF_FORMAT) == PyBUF_FORMAT
                           ? const_cast<char*>(buffer_format(t.dtype()))
                           : nullptr;
        view->ndim = static_cast<int>(e->shape.size());
        view->shape = (flags & PyBUF_ND) == PyBUF_ND ? e->shape.data() : nullptr;
        view->strides = strided ? e->strides.data() : nullptr;
        view->suboffsets = nullptr;
        view->internal = e.release();
        view->obj = Py_NewRef(self);
        return 0;
    } catch (const std::exception& x) {
        PyErr_Format(PyExc_BufferError, "%s: %s", Py_TYPE(self)->tp_name, x.what());
        return -1;
    }
}

void release_buffer(PyObject*, Py_buffer* view) {
    delete static_cast<buffer_export*>(view->internal);
}

/// Installs `get_buffer<export_of, readonly>` as `cls`'s buffer protocol (a class made with
/// py::buffer_protocol(), whose heap type has the slots).
template <ferry::tensor (*export_of)(PyObject*), bool readonly>
void use_buffer(py::handle cls) {
    auto* type = reinterpret_cast<PyHeapTypeObject*>(cls.ptr());
    type->as_buffer.bf_getbuffer = &get_buffer<export_of, readonly>;
    type->as_buffer.bf_releasebuffer = &release_buffer;
}

/// `t` as a DLPack capsule ("dltensor"); the capsule's destructor frees an export no consumer
/// took (a consumer renames the capsule "used_dltensor" and calls the deleter itself).
py::capsule dlpack_capsule(const ferry::tensor& t) {
    if (t.empty()) throw py::buffer_error("ferry.Tensor: an empty tensor cannot be exported");
    DLManagedTensor* managed = t.to_dlpack();
    PyObject* cap = PyCapsule_New(managed, "dltensor", [](PyObject* self) {
        if (PyCapsule_IsValid(self, "dltensor") == 0) return;  // consumed
        auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(self, "dltensor"));
        if (m != nullptr && m->deleter != nullptr) m->deleter(m);
    });
    if (cap == nullptr) {
        managed->deleter(managed);
        throw py::error_already_set();
    }
    return py::reinterpret_steal<py::capsule>(cap);
}

/// `__dlpack_device__`: (DLDeviceType, index).
py::tuple dlpack_device(const ferry::tensor& t) {
    switch (t.device().kind) {
        case ferry::device_kind::cpu:
            return py::make_tuple(static_cast<int>(kDLCPU), 0);
        case ferry::device_kind::cuda_host:
            return py::make_tuple(static_cast<int>(kDLCUDAHost), 0);
        case ferry::device_kind::cuda:
            return py::make_tuple(static_cast<int>(kDLCUDA), t.device().index);
    }
    return py::make_tuple(static_cast<int>(kDLCPU), 0);
}

/// The image's pixels as a u8 H x W x C tensor that shares them and keeps the image alive.
ferry::tensor image_view(const py_image& pi) {
    if (!pi.img || pi.img->empty()) throw py::buffer_error("ferry.Image: the image is empty");
    ferry::image& img = *pi.img;
    auto pixels = img.data();
    ferry::buffer storage{reinterpret_cast<std::byte*>(pixels.data()), pixels.size(),
                          std::shared_ptr<void>(pi.img), ferry::device{}};
    return ferry::tensor(std::move(storage), ferry::dtype::u8,
                         {img.height(), img.width(), img.channels()});
}

ferry::tensor tensor_export(PyObject* self) {
    return py::cast<ferry::tensor&>(py::handle(self));
}
ferry::tensor image_export(PyObject* self) {
    return image_view(py::cast<const py_image&>(py::handle(self)));
}
/// The bytes as a u8 tensor that shares them.
ferry::tensor bytes_export(PyObject* self) {
    const auto& b = py::cast<const py_bytes&>(py::handle(self));
    static std::byte nothing{};  // where an empty file's zero bytes are
    ferry::buffer storage{&nothing, 0, nullptr, ferry::device{}};
    if (b.data && !b.data->empty()) {
        storage = {b.data->data(), b.data->size(), std::shared_ptr<void>(b.data), ferry::device{}};
    }
    return ferry::tensor(std::move(storage), ferry::dtype::u8,
                         {static_cast<std::int64_t>(storage.size)});
}

const ferry::image& image_of(const py_image& pi) {
    if (!pi.img) throw ferry::invalid_argument("ferry.Image: the image is empty");
    return *pi.img;
}

py::tuple shape_tuple(const std::vector<std::int64_t>& shape) {
    py::tuple out(shape.size());
    for (std::size_t i = 0; i < shape.size(); ++i) out[i] = py::int_(shape[i]);
    return out;
}

const char* device_name(ferry::device_kind k) {
    switch (k) {
        case ferry::device_kind::cpu:
            return "cpu";
        case ferry::device_kind::cuda_host:
            return "cuda_host";
        case ferry::device_kind::cuda:
            return "cuda";
    }
    return "cpu";
}

}  // namespace

ferry::tensor tensor_from_buffer(py::handle obj, const char* what) {
    if (PyObject_CheckBuffer(obj.ptr()) == 0) {
        throw ferry::invalid_argument(std::string(what) +
                                      ": expects an object with the buffer protocol (a numpy "
                                      "array, bytes, memoryview), got a Python " +
                                      Py_TYPE(obj.ptr())->tp_name);
    }
    const py::buffer_info info = py::reinterpret_borrow<py::buffer>(obj).request();
    ferry::dtype type{};
    if (!dtype_of_format(info.format, info.itemsize, type)) {
        throw ferry::invalid_argument(std::string(what) + ": buffer format '" + info.format +
                                      "' (" + std::to_string(info.itemsize) +
                                      "-byte items) has no ferry dtype (u8, i8, u16, i16, i32, "
                                      "i64, f16, f32, f64)");
    }
    std::vector<std::int64_t> shape(info.shape.begin(), info.shape.end());
    ferry::tensor out(type, shape);
    auto* dst = static_cast<std::byte*>(out.data());
    copy_strided(static_cast<const std::byte*>(info.ptr), dst, info.shape, info.strides, 0,
                 static_cast<std::size_t>(info.itemsize));
    return out;
}

void bind_arrays(py::module_& m) {
    py::class_<ferry::tensor> tensor_class(m, "Tensor", py::buffer_protocol(), R"doc(
An n-dimensional array in ferry's memory (what ops.collate makes). numpy.asarray(t) and
torch.from_dlpack(t) share its memory without a copy, and keep it alive.)doc");
    use_buffer<&tensor_export, false>(tensor_class);
    tensor_class
        .def_property_readonly(
            "shape", [](const ferry::tensor& t) { return shape_tuple(t.shape()); },
            "The extents, outermost first.")
        .def_property_readonly(
            "strides", [](const ferry::tensor& t) { return shape_tuple(t.strides()); },
            "Strides in elements (not bytes).")
        .def_property_readonly(
            "dtype", [](const ferry::tensor& t) { return ferry::to_string(t.dtype()); },
            "The element type: 'u8', 'i8', 'u16', 'i16', 'i32', 'i64', 'f16', 'f32' or 'f64'.")
        .def_property_readonly(
            "device", [](const ferry::tensor& t) { return device_name(t.device().kind); },
            "'cpu', 'cuda_host' (pinned) or 'cuda'.")
        .def_property_readonly("nbytes", &ferry::tensor::nbytes, "Bytes the elements span.")
        .def_property_readonly(
            "data_ptr",
            [](const ferry::tensor& t) { return reinterpret_cast<std::uintptr_t>(t.data()); },
            "The address of the first element (as torch's Tensor.data_ptr()).")
        .def("__len__",
             [](const ferry::tensor& t) {
                 if (t.dim() == 0) throw py::type_error("len() of a 0-d ferry.Tensor");
                 return t.size(0);
             })
        .def(
            "__dlpack__",
            [](const ferry::tensor& t, const py::object& stream) {
                (void)stream;  // host memory: there is no stream to synchronise with
                return dlpack_capsule(t);
            },
            py::arg("stream") = py::none(), "A DLPack capsule sharing the elements.")
        .def("__dlpack_device__", &dlpack_device, "(DLPack device type, device index).")
        .def("__repr__", [](const ferry::tensor& t) { return "ferry." + t.describe(); });

    py::class_<py_image> image_class(m, "Image", py::buffer_protocol(), R"doc(
An 8-bit image, height x width x channels (what image.decode_image makes). numpy.asarray(img)
and torch.from_dlpack(img) share its pixels (shape (height, width, channels), uint8).)doc");
    use_buffer<&image_export, false>(image_class);
    image_class
        .def_property_readonly(
            "width", [](const py_image& pi) { return image_of(pi).width(); }, "Pixels per row.")
        .def_property_readonly(
            "height", [](const py_image& pi) { return image_of(pi).height(); }, "Rows.")
        .def_property_readonly(
            "channels", [](const py_image& pi) { return image_of(pi).channels(); },
            "Channels per pixel: 3 (rgb, bgr), 1 (gray) or 4 (rgba).")
        .def_property_readonly(
            "format", [](const py_image& pi) { return ferry::to_string(image_of(pi).format()); },
            "The channel layout: 'rgb', 'bgr', 'gray' or 'rgba'.")
        .def_property_readonly(
            "shape",
            [](const py_image& pi) {
                const auto& img = image_of(pi);
                return py::make_tuple(img.height(), img.width(), img.channels());
            },
            "(height, width, channels).")
        .def_property_readonly(
            "dtype", [](const py_image&) { return "u8"; }, "Always 'u8'.")
        .def_property_readonly(
            "data_ptr",
            [](const py_image& pi) {
                return reinterpret_cast<std::uintptr_t>(image_of(pi).data().data());
            },
            "The address of the first pixel.")
        .def(
            "__dlpack__",
            [](const py_image& pi, const py::object& stream) {
                (void)stream;
                return dlpack_capsule(image_view(pi));
            },
            py::arg("stream") = py::none(), "A DLPack capsule sharing the pixels (H x W x C, u8).")
        .def("__dlpack_device__",
             [](const py_image&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); })
        .def("__repr__", [](const py_image& pi) {
            if (!pi.img) return std::string("ferry.Image(empty)");
            return "ferry.Image(" + std::to_string(pi.img->width()) + "x" +
                   std::to_string(pi.img->height()) + ", " + ferry::to_string(pi.img->format()) +
                   ")";
        });

    py::class_<py_bytes> bytes_class(m, "Bytes", py::buffer_protocol(), R"doc(
A file's contents as ops.read_file returned them (read-only). memoryview(b) and numpy.asarray(b)
share them; bytes(b) copies.)doc");
    use_buffer<&bytes_export, true>(bytes_class);
    bytes_class.def("__len__", [](const py_bytes& b) { return b.data ? b.data->size() : 0; })
        .def("__bytes__",
             [](const py_bytes& b) {
                 if (!b.data) return py::bytes();
                 return py::bytes(reinterpret_cast<const char*>(b.data->data()), b.data->size());
             })
        .def("__repr__", [](const py_bytes& b) {
            return "ferry.Bytes(" + std::to_string(b.data ? b.data->size() : 0) + " bytes)";
        });

    m.def(
        "tensor",
        [](const py::object& obj) { return tensor_from_buffer(obj, "ferry.tensor(obj)"); },
        py::arg("obj"), R"doc(
A ferry.Tensor holding a copy of obj's elements (a numpy array, or any object with the buffer
protocol), contiguous, of its shape and element type. Return it from a Python stage to hand
the data back to native stages (ops.collate) without further conversion.)doc");
}

}  // namespace ferry::python
