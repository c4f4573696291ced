// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.mix`, `ferry.merge` and `ferry.zip`: Python builds the source specs that `ferry::mix`,
/// `ferry::merge` and `ferry::zip` build in C++, over the same engine, so their order and their
/// exact resume are C++'s.
#include "mixing.hpp"

#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <ranges>
#include <string>
#include <utility>
#include <vector>

#include "builder.hpp"
#include "convert.hpp"
#include "ferry/error.hpp"
#include "ferry/merge.hpp"
#include "ferry/mix.hpp"
#include "python_stage.hpp"
#include "sources.hpp"
#include "value.hpp"

namespace ferry::python {
namespace {

/// `ferry.MixInput`: one source of a mix, as C++'s `mix_input{dataset, weight, options}`.
struct py_mix_input {
    py::object dataset;
    double weight = 1.0;
    ferry::mix_source_options options{};
};

/// The text a mixed or zipped element is named by in failures: its str, or its int.
std::string mixed_element_name(const value& v) {
    if (v.holds<std::string>()) return v.as<std::string>();
    if (v.holds<std::int64_t>()) return std::to_string(v.as<std::int64_t>());
    return {};
}

ferry::mix_stop stop_of(const std::string& stop, const char* where, bool never_too) {
    if (stop == "first_exhausted") return ferry::mix_stop::first_exhausted;
    if (stop == "all_exhausted") return ferry::mix_stop::all_exhausted;
    if (stop == "never" && never_too) return ferry::mix_stop::never;
    throw ferry::invalid_argument(std::string(where) + "(stop=...): " +
                                  (never_too ? "'first_exhausted', 'all_exhausted' or 'never'"
                                             : "'all_exhausted' or 'first_exhausted' (a merge "
                                               "ends with its branches' sources)") +
                                  ", got '" + stop + "'");
}

/// Source `k` of a mix as C++'s `mix_input<value>`: a list or tuple converted once (str and int
/// native, as `ferry.source` converts them), a range computed natively, another sequence read
/// with `[i]` and the GIL per item.
ferry::mix_input<value> mix_input_of(const py_mix_input& in, std::size_t k) {
    py::handle src = in.dataset;
    const std::string where = "ferry.mix: source " + std::to_string(k) + "'s dataset";
    if (PyUnicode_Check(src.ptr()) != 0 || PyBytes_Check(src.ptr()) != 0) {
        throw py::type_error(where + " is a " + Py_TYPE(src.ptr())->tp_name +
                             "; give a list of paths (or another sequence)");
    }
    if (auto dataset = with_dataset(src, [&in](auto&& items) {
            return ferry::mix_input<value>{std::move(items), in.weight, in.options};
        })) {
        return std::move(*dataset);
    }
    throw py::type_error(where +
                         " must be a sequence (len() and [i]: a list, a range, a map-style "
                         "Dataset), which a mix draws from by index; got a Python " +
                         Py_TYPE(src.ptr())->tp_name);
}

/// Element `k` of `mix(sources)`: a `ferry.MixInput` or a `(dataset, weight)` tuple.
py_mix_input mix_entry(py::handle s, std::size_t k) {
    if (py::isinstance<py_mix_input>(s)) return s.cast<py_mix_input>();
    if (PyTuple_Check(s.ptr()) != 0 && PyTuple_GET_SIZE(s.ptr()) == 2) {
        py::tuple t = py::reinterpret_borrow<py::tuple>(s);
        py_mix_input in;
        in.dataset = t[0];
        try {
            in.weight = t[1].cast<double>();
        } catch (const py::cast_error&) {
            throw py::type_error("ferry.mix: source " + std::to_string(k) +
                                 "'s weight must be a number, got a Python " +
                                 Py_TYPE(t[1].ptr())->tp_name);
        }
        return in;
    }
    throw py::type_error("ferry.mix(sources): source " + std::to_string(k) +
                         " must be a ferry.MixInput(dataset, weight, ...) or a (dataset, weight) "
                         "tuple, got a Python " +
                         Py_TYPE(s.ptr())->tp_name);
}

/// The source of `x` for `ferry.zip`: a Builder without stages, or what `ferry.source` takes.
detail::source_spec zip_part(const py::object& x, const char* which) {
    if (py::isinstance<py_builder>(x)) {
        const auto& b = x.cast<const py_builder&>();
        if (!b.spec.stages.empty()) {
            throw ferry::invalid_argument(
                std::string("ferry.zip(a, b): ") + which +
                " has stages; zip sources (ferry.source(...), ferry.mix(...), ferry.zip(...)) "
                "and add the stages to the zip");
        }
        if (!b.spec.source.open) {
            throw ferry::invalid_argument(std::string("ferry.zip(a, b): ") + which +
                                          " has no source (a route's branch)");
        }
        return b.spec.source;
    }
    return python_source(x, std::nullopt);
}

/// `ferry::zip`'s source over two value sources: elements are 2-tuples (`value_tuple`), the
/// epoch ends with the shorter part, and a resume opens each part at the position.
detail::source_spec zip_sources(detail::source_spec a, detail::source_spec b) {
    auto parts = std::make_shared<const std::pair<detail::source_spec, detail::source_spec>>(
        std::move(a), std::move(b));
    auto open_at = [parts](std::uint64_t epoch, std::uint64_t position) -> detail::source_cursor {
        auto first = std::make_shared<detail::source_cursor>(
            detail::open_source_at(parts->first, epoch, position));
        auto second = std::make_shared<detail::source_cursor>(
            detail::open_source_at(parts->second, epoch, position));
        return [first, second](detail::any_value& out) {
            detail::any_value x, y;
            if (!(*first)(x) || !(*second)(y)) return false;
            value_tuple t;
            t.items.reserve(2);
            t.items.push_back(x.take_as<value>());
            t.items.push_back(y.take_as<value>());
            out.emplace<value>(std::move(t));
            return true;
        };
    };
    detail::source_spec spec;
    spec.open = [open_at](std::uint64_t epoch) { return open_at(epoch, 0); };
    spec.open_at = std::move(open_at);
    spec.value_bytes = &detail::output_bytes_of<value>;
    spec.index_of = parts->first.index_of;
    spec.seed = parts->first.seed;
    if (parts->first.describe || parts->second.describe) {
        spec.describe = [parts](detail::any_value& v, std::string& out) {
            auto& items = v.get<value>().as<value_tuple>().items;
            std::string text[2];
            const detail::source_spec* part[2] = {&parts->first, &parts->second};
            for (std::size_t i = 0; i < 2; ++i) {
                if (!part[i]->describe) continue;
                // Each part described as its own source describes it; moved out and back.
                detail::any_value x;
                x.emplace<value>(std::move(items[i]));
                part[i]->describe(x, text[i]);
                items[i] = x.take_as<value>();
            }
            out = text[0].empty() ? text[1] : text[1].empty() ? text[0] : text[0] + " + " + text[1];
        };
    }
    return spec;
}

}  // namespace

void bind_mixing(py::module_& m) {
    py::class_<py_mix_input>(m, "MixInput", R"doc(
One source of ferry.mix: a dataset (a sequence: list, tuple, range, or anything with len() and
[i]), its weight (relative, >= 0) and how it is visited: shuffle (each pass a permutation of its
own, from seed, the mix's epoch and the pass), repeat (start a new pass when this rank's share
is used up) and remainder ('pad' or 'drop', for items that do not divide over the ranks).)doc")
        .def(py::init([](py::object dataset, double weight, bool shuffle, std::uint64_t seed,
                         bool repeat, const std::string& remainder) {
                 py_mix_input in{std::move(dataset), weight, {}};
                 in.options.shuffle = shuffle;
                 in.options.seed = seed;
                 in.options.repeat = repeat;
                 if (remainder == "pad") {
                     in.options.remainder = ferry::remainder::pad;
                 } else if (remainder == "drop") {
                     in.options.remainder = ferry::remainder::drop;
                 } else {
                     throw ferry::invalid_argument(
                         "ferry.MixInput(remainder=...): 'pad' or 'drop', got '" + remainder + "'");
                 }
                 return in;
             }),
             py::arg("dataset"), py::arg("weight"), py::kw_only(), py::arg("shuffle") = false,
             py::arg("seed") = 0, py::arg("repeat") = false, py::arg("remainder") = "pad")
        .def_readonly("dataset", &py_mix_input::dataset)
        .def_readonly("weight", &py_mix_input::weight)
        .def_property_readonly("shuffle", [](const py_mix_input& in) { return in.options.shuffle; })
        .def_property_readonly("seed", [](const py_mix_input& in) { return in.options.seed; })
        .def_property_readonly("repeat", [](const py_mix_input& in) { return in.options.repeat; })
        .def_property_readonly("remainder", [](const py_mix_input& in) {
            return in.options.remainder == ferry::remainder::pad ? "pad" : "drop";
        });

    m.def(
        "mix",
        [](const py::iterable& sources, std::uint64_t seed, const std::string& stop,
           std::uint64_t epoch_length, std::size_t rank, std::size_t world_size) {
            std::vector<ferry::mix_input<value>> inputs;
            std::size_t k = 0;
            for (auto s : sources) {
                inputs.push_back(mix_input_of(mix_entry(s, k), k));
                ++k;
            }
            ferry::mix_options o;
            o.seed = seed;
            o.stop = stop_of(stop, "ferry.mix", true);
            o.rank = rank;
            o.world_size = world_size;
            o.epoch_length = epoch_length;
            // Throws ferry::invalid_argument for bad weights, ranks and stop rules.
            auto mixed = ferry::mix<value>(std::move(inputs), o).describe(&mixed_element_name);
            return py_builder{
                detail::pipeline_spec{detail::source_access::source(mixed), {}, nullptr}};
        },
        py::arg("sources"), py::kw_only(), py::arg("seed") = 0, py::arg("stop") = "first_exhausted",
        py::arg("epoch_length") = 0, py::arg("rank") = 0, py::arg("world_size") = 1, R"doc(
Draws several datasets into one source by weight, as C++'s ferry::mix: position g of epoch e
takes the source that the draw from (seed, e, g) names and that source's next item in its own
order (ferry.MixInput's shuffle, repeat, remainder), the same on every machine and at any
thread count. sources: ferry.MixInput(dataset, weight, ...) or (dataset, weight) tuples. stop:
'first_exhausted' (the epoch ends at the first draw of a source with nothing left),
'all_exhausted' (an exhausted source leaves the draw) or 'never' (every source repeats;
epoch_length items). epoch_length > 0 caps an epoch. rank/world_size split every source over
the ranks. A pipeline over a mix resumes exactly (pipe.state()).)doc");

    m.def(
        "merge",
        [](const py::sequence& branches, const py::object& weights, const std::string& stop,
           const std::string& name, bool ordered, const py::object& names) {
            ferry::merge_options o;
            o.stop = stop_of(stop, "ferry.merge", false);
            o.name = name;
            o.ordered = ordered;
            if (!weights.is_none()) o.weights = weights.cast<std::vector<double>>();
            if (!names.is_none()) o.names = names.cast<std::vector<std::string>>();
            std::vector<detail::source_spec> sources;
            detail::stage_spec route;
            route.kind = detail::stage_kind::route;
            std::size_t k = 0;
            for (auto x : branches) {
                if (!py::isinstance<py_builder>(x)) {
                    throw py::type_error("ferry.merge(branches): branch " + std::to_string(k) +
                                         " must be a ferry.Builder (ferry.source(...) and its "
                                         "stages), got a Python " +
                                         Py_TYPE(x.ptr())->tp_name);
                }
                const auto& b = x.cast<const py_builder&>();
                if (!b.spec.source.open) {
                    throw ferry::invalid_argument("ferry.merge(branches): branch " +
                                                  std::to_string(k) +
                                                  " has no source (a route's branch)");
                }
                sources.push_back(b.spec.source);
                route.branches.push_back(b.spec.stages);
                ++k;
            }
            // Refuses no branches, bad weights or names (ferry::invalid_argument).
            auto w = detail::merge_weights(o, sources.size());
            detail::check_branches("ferry.merge", route.branches);
            route.options.name = o.name;
            route.options.ordered = o.ordered;
            route.branch_names = o.names;
            // The branch is the merged element's own; the route hands on the branch's element.
            route.select_fn = [](detail::any_value& v) {
                detail::merge_item item = v.take_as<detail::merge_item>();
                v = std::move(item.value);
                return static_cast<std::int64_t>(item.branch);
            };
            const py_builder merged{detail::pipeline_spec{
                detail::merge_source(std::move(sources), std::move(w), o.stop), {}, nullptr}};
            return merged.with(std::move(route));
        },
        py::arg("branches"), py::kw_only(), py::arg("weights") = py::none(),
        py::arg("stop") = "all_exhausted", py::arg("name") = "merge", py::arg("ordered") = true,
        py::arg("names") = py::none(), R"doc(
Merges sub-pipelines into one, as C++'s ferry::merge: each branch (a Builder: its own source and
stages, no batch) is compiled into the one graph, and the merged stream takes the branches'
source items in a smooth weighted round robin (weights, one per branch; None: all 1), so a run
is reproducible and resumes exactly. stop: 'all_exhausted' (a branch that ends leaves the
round) or 'first_exhausted'. The branches' stages are named '<name>/<branch> <stage>' in stats
and failures (<branch>: its index, or names[i]).)doc");

    m.def(
        "zip",
        [](const py::object& a, const py::object& b) {
            return py_builder{detail::pipeline_spec{
                zip_sources(zip_part(a, "a"), zip_part(b, "b")), {}, nullptr}};
        },
        py::arg("a"), py::arg("b"), R"doc(
Pairs two sources item by item, as C++'s ferry::zip: the i-th element is the tuple (a's i-th,
b's i-th), and an epoch ends with the shorter source's. a and b are Builders without stages
(ferry.source(...), ferry.mix(...), ferry.zip(...)) or anything ferry.source takes. A pipeline
over a zip resumes exactly (each part reopened at the position).)doc");
}

}  // namespace ferry::python
