// SPDX-License-Identifier: Apache-2.0
/// \file
/// The item of the stage call running on this thread, as Python sees it: the engine sets it
/// (`detail::item_scope`) around every call of a Python map, filter or flat_map (builder.cpp
/// asks for it with `stage_spec::wants_item`), and the call reads it here, on the same thread.
/// The numbers are C++'s own: `ferry::item_rng` and its `random_engine`, not a copy of them.
#include "this_call.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

#include "ferry/error.hpp"
#include "ferry/item.hpp"

namespace ferry::python {
namespace {

/// `ferry.RandomEngine`: C++'s `ferry::random_engine` (xoshiro256**) with its seed kept, for
/// `repr` and for seeding Python's own generators.
struct py_random_engine {
    std::uint64_t seed = 0;
    ferry::random_engine engine{0};
};

py_random_engine engine_of(const ferry::item_info& info) {
    // item_rng's first number stands for the engine's seed: what ferry's native ops seed their
    // own generators with (decode_random_resized_crop), so Python can do the same.
    ferry::random_engine rng = ferry::item_rng(info);
    return py_random_engine{ferry::item_rng(info)(), rng};
}

std::optional<ferry::item_info> current() {
    const ferry::item_info* info = ferry::detail::current_item();
    if (info == nullptr) return std::nullopt;
    return *info;
}

std::string info_repr(const ferry::item_info& i) {
    return "ferry.ItemInfo(epoch=" + std::to_string(i.epoch) +
           ", index=" + std::to_string(i.index) + ", position=" + std::to_string(i.position) +
           ", seed=" + std::to_string(i.seed) + ")";
}

}  // namespace

void bind_this_call(py::module_& m) {
    py::class_<ferry::item_info>(m, "ItemInfo", R"doc(
Which item a stage's call works on (C++'s ferry::item_info): epoch (0, 1, ...), index (the
item's index in the dataset: the sampler's with Sampling, else its position), position (in this
rank's epoch, from 0) and seed (Sampling's seed; 0 without one). ferry.this_call() returns the
running call's; an element after a batch is its first item's, a flat_map output its input's.)doc")
        .def(py::init([](std::uint64_t epoch, std::uint64_t index, std::uint64_t position,
                         std::uint64_t seed) {
                 return ferry::item_info{epoch, index, position, seed};
             }),
             py::kw_only(), py::arg("epoch") = 0, py::arg("index") = 0, py::arg("position") = 0,
             py::arg("seed") = 0)
        .def_readonly("epoch", &ferry::item_info::epoch)
        .def_readonly("index", &ferry::item_info::index)
        .def_readonly("position", &ferry::item_info::position)
        .def_readonly("seed", &ferry::item_info::seed)
        .def("__eq__",
             [](const ferry::item_info& a, const ferry::item_info& b) {
                 return a.epoch == b.epoch && a.index == b.index && a.position == b.position &&
                        a.seed == b.seed;
             })
        .def("__hash__",
             [](const ferry::item_info& i) {
                 return py::hash(py::make_tuple(i.epoch, i.index, i.position, i.seed));
             })
        .def("__repr__", &info_repr);

    py::class_<py_random_engine>(m, "RandomEngine", R"doc(
C++'s ferry::random_engine (xoshiro256**): rng() is its next 64-bit number, rng.random() a
float in [0, 1) from its top 53 bits. ferry.item_rng() makes one per item; .seed is the number
it stands for (item_rng's first), to seed numpy or random with:
numpy.random.default_rng(ferry.item_rng().seed).)doc")
        .def(py::init([](std::uint64_t seed) {
                 return py_random_engine{seed, ferry::random_engine(seed)};
             }),
             py::arg("seed"))
        .def_readonly("seed", &py_random_engine::seed)
        .def(
            "__call__", [](py_random_engine& r) { return r.engine(); },
            "The next 64-bit number (C++'s random_engine::operator()).")
        .def(
            "random",
            [](py_random_engine& r) { return static_cast<double>(r.engine() >> 11) * 0x1.0p-53; },
            "A float in [0, 1): the next number's top 53 bits.")
        .def("__repr__", [](const py_random_engine& r) {
            return "ferry.RandomEngine(seed=" + std::to_string(r.seed) + ")";
        });

    m.def("this_call", &current, R"doc(
The ferry.ItemInfo of the stage call running on this thread: inside a Python map, filter or
flat_map, the item it works on; None outside one (and in async stages, whose coroutines run on
the pipeline's event loop).)doc");

    m.def(
        "item_rng",
        [](const std::optional<ferry::item_info>& info) {
            if (info) return engine_of(*info);
            const std::optional<ferry::item_info> now = current();
            if (!now) {
                throw ferry::invalid_argument(
                    "ferry.item_rng(): not inside a Python stage's call (ferry.this_call() is "
                    "None); pass the ItemInfo to seed from");
            }
            return engine_of(*now);
        },
        py::arg("info") = py::none(), R"doc(
A ferry.RandomEngine seeded from the item's (seed, epoch, index), C++'s ferry::item_rng: the
same numbers for the same item of the same epoch whatever the concurrency, threads or resume
point; other numbers in another epoch. info=None: the running call's item (ValueError outside
a stage's call).)doc");
}

}  // namespace ferry::python
