// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.Op`, the native map stage, and the core ops: `read_file` and `collate`.
#include "ops.hpp"

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "convert.hpp"
#include "direct_call.hpp"
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

/// Makes a Python stage's labelled item native: a Python list [x, label] or tuple (x, label) with
/// an int label becomes the native list or tuple of `from_python(x)` and the label (taking the
/// GIL, as reading any Python object does), so that labels pass by native ops after a Python
/// stage as after a native one. Anything else stays as it is.
void take_python_pair(value& v) {
    if (!v.holds<py_ref>()) return;
    gil_hold gil;
    PyObject* o = v.as<py_ref>().get();
    const bool list = PyList_CheckExact(o) != 0;
    if ((!list && PyTuple_CheckExact(o) == 0) || PySequence_Fast_GET_SIZE(o) != 2) return;
    if (PyLong_CheckExact(PySequence_Fast_GET_ITEM(o, 1)) == 0) return;
    value label = source_element(PySequence_Fast_GET_ITEM(o, 1));
    if (!label.holds<std::int64_t>()) return;  // past 64 bits
    value_list pair;
    pair.push_back(from_python(PySequence_Fast_GET_ITEM(o, 0)));
    pair.push_back(std::move(label));
    v = list ? value(std::move(pair)) : value(value_tuple{std::move(pair)});
}

/// Whether `v` is a labelled item: the list [x, label] (what ferry.sources.image_folder's source
/// gives) or the tuple (x, label) (a source's `(path, label)` pairs, `zip`'s), with an int label
/// and an x that is not a list; a Python stage's such list or tuple is made native first.
bool is_labelled(value& v) {
    take_python_pair(v);
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

namespace {

/// `mapped_sink`'s sink: the call's result goes through `map` on its way to `to`.
class mapping_sink : public detail::async_sink, public std::enable_shared_from_this<mapping_sink> {
  public:
    mapping_sink(std::shared_ptr<detail::async_sink> to,
                 std::function<value(detail::any_value&&)> map)
        : to_(std::move(to)), map_(std::move(map)) {}
    void complete(detail::any_value&& v) noexcept override {
        detail::any_value out;
        try {
            out.emplace<value>(map_(std::move(v)));
        } catch (...) {
            to_->fail(std::current_exception());
            return;
        }
        to_->complete(std::move(out));
    }
    void fail(std::exception_ptr error) noexcept override { to_->fail(std::move(error)); }
    void poll(std::function<bool(detail::any_value&)> try_take) noexcept override {
        to_->poll(
            [self = shared_from_this(), try_take = std::move(try_take)](detail::any_value& out) {
                detail::any_value got;
                if (!try_take(got)) return false;
                out.emplace<value>(self->map_(std::move(got)));
                return true;
            });
    }
    [[nodiscard]] bool stop_requested() const noexcept override { return to_->stop_requested(); }

  private:
    std::shared_ptr<detail::async_sink> to_;
    std::function<value(detail::any_value&&)> map_;
};

}  // namespace

std::shared_ptr<detail::async_sink> mapped_sink(std::shared_ptr<detail::async_sink> to,
                                                std::function<value(detail::any_value&&)> map) {
    return std::make_shared<mapping_sink>(std::move(to), std::move(map));
}

detail::stage_spec native_map_async(std::shared_ptr<const native_async_op> op) {
    detail::stage_spec s;
    s.kind = detail::stage_kind::map_async;
    s.start_fn = [op](detail::any_value&& in, std::shared_ptr<detail::async_sink> sink) {
        value v = in.take_as<value>();
        if (!is_labelled(v)) {
            op->start(std::move(v), std::move(sink));
            return;
        }
        // A labelled item [x, label]: the op maps x and the label is kept, as for a native op.
        value x = std::move((*elements(v))[0]);
        auto item = std::make_shared<value>(std::move(v));
        op->start(std::move(x), mapped_sink(std::move(sink), [item](detail::any_value&& result) {
                      (*elements(*item))[0] = result.take_as<value>();
                      return std::move(*item);
                  }));
    };
    return s;
}

void bind_ops(py::module_& m, py::module_& ops) {
    py::class_<py_op>(m, "Op", R"doc(
A native op: pass it to map() and each item is processed in C++, without the GIL and without a
Python object per item. Calling it from Python (op(x)) runs it once, the GIL released; on the
main thread Ctrl-C stops ferry's blocking ops (read_url, read_file on a FIFO, video and audio
demuxing and decoding) within about 50 ms and raises KeyboardInterrupt.)doc")
        .def_property_readonly(
            "name", [](const py_op& o) { return o.op->name; }, "What the op does, as written.")
        .def(
            "__call__",
            [](const py_op& o, const py::object& x) {
                return to_python(call_interruptibly([op = o.op, in = source_element(x)]() mutable {
                    return op->fn(std::move(in));
                }));
            },
            py::arg("x"))
        .def("__repr__", [](const py_op& o) { return "<ferry op " + o.op->name + ">"; });

    py::class_<py_async_op>(m, "AsyncOp", R"doc(
A native asynchronous op (ferry.http.Client.reader(...)): map(op, concurrency=n) runs it as C++'s
map_async, up to n calls outstanding at once, each started without the GIL and finished on the
op's own thread (no thread waits per call). A stage retry does not apply (the input is handed
over); on_error 'fail' or 'skip' and timeout do.)doc")
        .def_property_readonly(
            "name", [](const py_async_op& o) { return o.op->name; },
            "What the op does, as written.")
        .def("__repr__",
             [](const py_async_op& o) { return "<ferry async op " + o.op->name + ">"; });

    ops.attr("read_file") = py::cast(py_op{make_op("read_file", [](value&& v) {
        return value(ferry::ops::read_file(take_path(std::move(v), "read_file")));
    })});
    ops.attr("collate") = py::cast(py_op{make_op("collate", &collate_value, /*takes_lists=*/true)});
}

}  // namespace ferry::python
