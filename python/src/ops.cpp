// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.Op`, the native map stage, and the core ops: `read_file` and `collate`.
#include "ops.hpp"

#include <utility>
#include <vector>

#include "arrays.hpp"
#include "convert.hpp"
#include "ferry/bytes.hpp"
#include "ferry/collate.hpp"
#include "ferry/error.hpp"
#ifdef FERRY_PYTHON_IMAGE
#include "ferry/image.hpp"
#endif

namespace ferry::python {
namespace {

/// The tensors of a batch for collate: tensors as they are, Python objects with the buffer
/// protocol (numpy arrays) copied with the GIL.
std::vector<ferry::tensor> batch_tensors(value_list& items) {
    std::vector<ferry::tensor> out;
    out.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        value& v = items[i];
        if (v.holds<ferry::tensor>()) {
            out.push_back(std::move(v.as<ferry::tensor>()));
        } else if (v.holds<py_ref>() && PyObject_CheckBuffer(v.as<py_ref>().get()) != 0) {
            gil_hold gil;
            out.push_back(tensor_from_buffer(v.as<py_ref>().get(), "collate"));
        } else {
            throw ferry::invalid_argument(
                "collate expects a list of ferry.Tensor or ferry.Image (or arrays with the "
                "buffer protocol), all of one kind; element " +
                std::to_string(i) + " is " + kind_of(v));
        }
    }
    return out;
}

value collate_value(value&& v) {
    value_list items = take_list(std::move(v), "collate");
    if (items.empty()) throw ferry::invalid_argument("collate: the batch is empty");
#ifdef FERRY_PYTHON_IMAGE
    if (items.front().holds<ferry::image>()) {
        std::vector<ferry::image> images;
        images.reserve(items.size());
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (!items[i].holds<ferry::image>()) {
                throw ferry::invalid_argument(
                    "collate expects a list of ferry.Tensor or ferry.Image, all of one kind; "
                    "element 0 is an image, element " +
                    std::to_string(i) + " is " + kind_of(items[i]));
            }
            images.push_back(std::move(items[i].as<ferry::image>()));
        }
        return value(ferry::ops::collate(std::move(images)));
    }
#endif
    return value(ferry::ops::collate(batch_tensors(items)));
}

std::shared_ptr<const native_op> make_op(std::string name, std::function<value(value&&)> fn) {
    return std::make_shared<const native_op>(native_op{std::move(name), std::move(fn), false});
}

}  // namespace

detail::stage_spec native_map(std::shared_ptr<const native_op> op) {
    detail::stage_spec s;
    s.kind = detail::stage_kind::map;
    s.wants_item = op->wants_item;
    s.map_fn = [op](detail::any_value& in, detail::any_value& out, bool last_attempt) {
        value& v = in.get<value>();
        value result = last_attempt ? op->fn(std::move(v)) : op->fn(value(v));
        out.emplace<value>(std::move(result));
    };
    s.retry_reads_input = true;  // a retry's attempt gets a copy of the input
    return s;
}

void bind_ops(py::module_& m, py::module_& ops) {
    py::class_<py_op>(m, "Op", R"doc(
A native op: pass it to map() and each item is processed in C++, without the GIL and without a
Python object per item. Calling it from Python (op(x)) runs it once, the GIL released.)doc")
        .def_property_readonly(
            "name", [](const py_op& o) { return o.op->name; }, "What the op does, as written.")
        .def(
            "__call__",
            [](const py_op& o, const py::object& x) {
                value in = source_element(x);
                value out;
                {
                    py::gil_scoped_release released;
                    out = o.op->fn(std::move(in));
                }
                return to_python(std::move(out));
            },
            py::arg("x"))
        .def("__repr__", [](const py_op& o) { return "<ferry op " + o.op->name + ">"; });

    ops.attr("read_file") = py::cast(py_op{make_op("read_file", [](value&& v) {
        return value(ferry::ops::read_file(take_path(std::move(v), "read_file")));
    })});
    ops.attr("collate") = py::cast(py_op{make_op("collate", &collate_value)});
}

}  // namespace ferry::python
