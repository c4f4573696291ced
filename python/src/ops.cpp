// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.Op`, the native map stage, and the core ops: `read_file` and `collate`.
#include "ops.hpp"

#include <cstdint>
#include <string>
#include <type_traits>
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

value collate_value(value&& v);

/// A batch of ints (floats) as one int64 (float64) tensor of shape (n), as torch's
/// default_collate makes of labels (and of Python floats).
template <class T>
ferry::tensor collate_numbers(const value_list& items) {
    constexpr bool ints = std::is_same_v<T, std::int64_t>;
    ferry::tensor out(ints ? ferry::dtype::i64 : ferry::dtype::f64,
                      {static_cast<std::int64_t>(items.size())});
    auto* data = out.data_as<T>();
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (!items[i].holds<T>()) {
            throw ferry::invalid_argument(
                std::string("collate expects a list of ") + (ints ? "ints" : "floats") +
                ", all of one kind; element 0 is " + (ints ? "an int" : "a float") + ", element " +
                std::to_string(i) + " is " + kind_of(items[i]));
        }
        data[i] = items[i].as<T>();
    }
    return out;
}

/// Whether `v` is a list of fields to collate position by position: a list or tuple value (a
/// labelled item, a native op's tuple, `zip`'s pair) or a Python list or tuple (a type check: no
/// GIL needed, the holder keeps the object).
bool holds_fields(const value& v) {
    if (v.holds<value_list>() || v.holds<value_tuple>()) return true;
    if (!v.holds<py_ref>()) return false;
    PyObject* o = v.as<py_ref>().get();
    return PyList_Check(o) != 0 || PyTuple_Check(o) != 0;
}

/// The fields of `v` (`holds_fields`): a Python list's elements as a source's (str and int
/// native), with the GIL.
value_list take_fields(value&& v) {
    if (v.holds<value_list>()) return std::move(v.as<value_list>());
    if (v.holds<value_tuple>()) return std::move(v.as<value_tuple>().items);
    gil_hold gil;
    value_list out;
    for (auto x : py::reinterpret_borrow<py::sequence>(v.as<py_ref>().get())) {
        out.push_back(source_element(x));
    }
    return out;
}

/// A batch of lists or tuples of k elements each (labelled items, [x, label]) collated position
/// by position, as torch's default_collate does with tuples: a list of k collated values.
value collate_fields(value_list& items) {
    std::vector<value_list> fields;
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (!holds_fields(items[i])) {
            throw ferry::invalid_argument(
                "collate expects a batch of lists or tuples, as element 0 is; element " +
                std::to_string(i) + " is " + kind_of(items[i]));
        }
        value_list item = take_fields(std::move(items[i]));
        if (i == 0) fields.resize(item.size());
        if (item.size() != fields.size()) {
            throw ferry::invalid_argument(
                "collate expects lists of " + std::to_string(fields.size()) +
                " elements each, as element 0 is; element " + std::to_string(i) + " has " +
                std::to_string(item.size()));
        }
        for (std::size_t j = 0; j < item.size(); ++j) fields[j].push_back(std::move(item[j]));
    }
    value_list out;
    out.reserve(fields.size());
    for (auto& f : fields) out.push_back(collate_value(value(std::move(f))));
    return value(std::move(out));
}

value collate_value(value&& v) {
    value_list items = take_list(std::move(v), "collate");
    if (items.empty()) throw ferry::invalid_argument("collate: the batch is empty");
    if (holds_fields(items.front())) return collate_fields(items);
    if (items.front().holds<std::int64_t>()) return value(collate_numbers<std::int64_t>(items));
    if (items.front().holds<double>()) return value(collate_numbers<double>(items));
    if (items.front().holds<std::string>()) {
        // Names or paths beside the data stay a list, as in torch's default_collate.
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (!items[i].holds<std::string>()) {
                throw ferry::invalid_argument(
                    "collate expects a list of str, all of one kind; element 0 is a str, "
                    "element " +
                    std::to_string(i) + " is " + kind_of(items[i]));
            }
        }
        return value(std::move(items));
    }
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

std::shared_ptr<const native_op> make_op(std::string name, std::function<value(value&&)> fn,
                                         bool takes_lists = false) {
    return std::make_shared<const native_op>(
        native_op{std::move(name), std::move(fn), false, takes_lists});
}

/// The elements of a list or tuple value, or null.
value_list* elements(value& v) {
    if (v.holds<value_list>()) return &v.as<value_list>();
    if (v.holds<value_tuple>()) return &v.as<value_tuple>().items;
    return nullptr;
}

/// Whether `v` is a labelled item: the list [x, label] (what ferry.sources.image_folder's source
/// gives) or the tuple (x, label) (a source's `(path, label)` pairs, `zip`'s), with an int label
/// and an x that is not a list.
bool is_labelled(value& v) {
    const value_list* l = elements(v);
    return l != nullptr && l->size() == 2 && (*l)[1].holds<std::int64_t>() &&
           !(*l)[0].holds<value_list>();
}

/// `op` on `v`; a per-item op given a labelled item maps its x and keeps its label.
value apply_op(const native_op& op, value&& v) {
    if (op.takes_lists || !is_labelled(v)) return op.fn(std::move(v));
    value_list& pair = *elements(v);
    pair[0] = op.fn(std::move(pair[0]));
    return std::move(v);
}

}  // namespace

detail::stage_spec native_map(std::shared_ptr<const native_op> op) {
    detail::stage_spec s;
    s.kind = detail::stage_kind::map;
    s.wants_item = op->wants_item;
    s.map_fn = [op](detail::any_value& in, detail::any_value& out, bool last_attempt) {
        value& v = in.get<value>();
        value result = last_attempt ? apply_op(*op, std::move(v)) : apply_op(*op, value(v));
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
    ops.attr("collate") = py::cast(py_op{make_op("collate", &collate_value, /*takes_lists=*/true)});
}

}  // namespace ferry::python
