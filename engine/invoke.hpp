// SPDX-License-Identifier: Apache-2.0
/// \file
/// Calling a stage by its kind, once for every executor: the plain call in the graph's node
/// (stage.cpp), on an I/O thread (the same), and a timed call apart from its box
/// (timed_stage.cpp). A new callable kind adds its case here and in `settle`.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "box.hpp"
#include "plan.hpp"

namespace ferry::detail {

/// What one call of a map, filter or flat_map produced: a map's output, a flat_map's outputs,
/// and whether a filter keeps its input.
struct call_result {
    any_value out;
    std::vector<any_value> children;
    bool keep = true;
};

/// Calls `st`'s callable on `in` with the stage's output allocator in scope. `out` is where a
/// map writes (it may be `in` itself: the plain call maps in place), `children` where a flat_map
/// does; a filter returns whether it keeps `in`. `consume`: the call may move from `in` (its
/// last attempt).
inline bool invoke(const stage_plan& st, any_value& in, any_value& out,
                   std::vector<any_value>& children, bool consume) {
    std::optional<scoped_tensor_allocator> use;
    if (st.output_allocator) use.emplace(st.output_allocator);
    switch (st.spec.kind) {
        case stage_kind::map:
            st.spec.map_fn(in, out, consume);
            return true;
        case stage_kind::filter:
            return st.spec.filter_fn(in);
        case stage_kind::flat_map:
            children.clear();
            st.spec.expand_fn(in, children, consume);
            return true;
        default:
            return true;
    }
}

/// Moves what a call made apart from its box (a timed call) into the box `m`: a map's output, a
/// kept filter's input, a flat_map's outputs.
inline void settle(const stage_plan& st, box& m, any_value& input, call_result& r) {
    switch (st.spec.kind) {
        case stage_kind::map:
            m.value = std::move(r.out);
            break;
        case stage_kind::filter:
            m.value = std::move(input);
            break;
        default:
            m.children = std::move(r.children);
            break;
    }
}

}  // namespace ferry::detail
