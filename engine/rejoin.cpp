// SPDX-License-Identifier: Apache-2.0
/// \file
/// The join of a route whose branches expand (flat_map, unbatch; `stage_plan::rejoins`).
///
/// The route (route.cpp) takes its input in order and gives each element a sequence number in
/// its branch, keeping the one it had at the route (`box::route_seq`); every message a branch
/// makes of an element carries that number, and the last one is marked (`last_of_route`; an
/// expansion hands the mark to its last output, and a branch passes gaps on rather than retiring
/// them, so the mark always arrives). Gaps, failures and the end go straight to the join.
///
/// The join is serial: one sequencer per branch puts the branch's outputs back in its order, and
/// the join takes, for route seq 0, 1, 2, ..., the element's outputs from its branch until the
/// marked one (or the message that went straight), numbering values and failures anew and
/// retiring gaps. Branch order follows route order, so the outputs of one element are at the
/// front of their branch's queue when its turn comes. The epoch ends when the route's end is due
/// and every branch's end has come. The outputs keep their resume points: an output of element
/// p's expansion starts at p + [i], as after a flat_map on the main line, so a resume opens at p
/// and the branch's expansion skips what was delivered.

#include "route_node.hpp"

#include "runtime.hpp"

namespace ferry::detail {

void route_node::rejoin(msg m) {
    auto& rj = join_;
    if (m->route_branch == no_route_branch) {
        rj.straight.emplace(m->route_seq, m);
    } else {
        const auto b = m->route_branch;
        rj.seqs[b]->push(m, [&rj, b](msg x) { rj.ready[b].push_back(x); });
    }
    const auto take = [this, &rj](msg x) {
        if (x->kind == msg_kind::gap) {
            host_.retire_gap(x);
        } else {
            x->seq = rj.next_out++;
            rj.outs.push_back(x);
        }
    };
    for (;;) {
        // A branch's end comes after all its outputs: it is done once the end is at the front.
        for (auto& q : rj.ready) {
            if (!q.empty() && q.front()->kind == msg_kind::end) {
                host_.release_box(q.front());
                q.pop_front();
                ++rj.ended;
            }
        }
        const auto it = rj.straight.begin();
        if (it != rj.straight.end() && it->first == rj.next_in) {
            msg x = it->second;
            if (x->kind == msg_kind::end) {
                if (rj.ended < rj.ready.size()) return;  // a branch is still at work
                rj.straight.erase(it);
                x->seq = rj.next_out;
                rj.outs.push_back(x);
                rj.next_in = 0;
                rj.next_out = 0;
                rj.ended = 0;
                return;
            }
            rj.straight.erase(it);
            ++rj.next_in;
            take(x);
            continue;
        }
        bool found = false;
        for (auto& q : rj.ready) {
            if (q.empty() || q.front()->route_seq != rj.next_in) continue;
            msg x = q.front();
            q.pop_front();
            if (x->last_of_route) ++rj.next_in;
            take(x);
            found = true;
            break;
        }
        if (!found) return;
    }
}

}  // namespace ferry::detail
