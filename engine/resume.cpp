// SPDX-License-Identifier: Apache-2.0
/// \file
/// pipeline_state on the engine's side: the state the consumer's frontier stands for, the checks
/// a resume makes, and the resumed epoch's opening.
///
/// Every box carries two resume points (box.hpp): `start`, from which a resumed run delivers the
/// box's output again, and `end`, from which it delivers what follows it. The source writes
/// (p, p + 1) for its item p; an expansion (flat_map, unbatch) of a box from `start` gives its
/// output i the points start + [i] and start + [i + 1] (the last one keeps the box's `end`); a
/// batch runs from its first item's start to its last item's end. The consumer keeps the `end`
/// of the output it took last: that is the state. A resumed epoch opens the source at the
/// state's position, and the expansion that meets the box starting there skips the outputs the
/// state counts; from there on, an ordered pipeline makes exactly what the saved run would have.

#include <algorithm>
#include <sstream>

#include "ferry/detail/redact.hpp"
#include "runtime.hpp"

namespace ferry::detail {
namespace {

std::string describe_sampling(const sampler_identity& s) {
    std::ostringstream os;
    if (s.source == sampled_source::mix) {
        // A mix's n is its fingerprint: it names the mix and counts nothing.
        os << "ferry::mix " << s.n << " seed=" << s.seed << " rank=" << s.rank
           << " world_size=" << s.world_size;
        return os.str();
    }
    os << "n=" << s.n << " seed=" << s.seed << " rank=" << s.rank << " world_size=" << s.world_size
       << " remainder=" << (s.remainder == remainder::pad ? "pad" : "drop")
       << " shuffle=" << (s.shuffle ? "true" : "false");
    return os.str();
}

/// What a pipeline samples, as a message names it ("a pipeline over ...").
const char* sampled_name(sampled_source s) {
    switch (s) {
        case sampled_source::dataset:
            return "a sampled dataset";
        case sampled_source::mix:
            return "a ferry::mix";
        case sampled_source::unrecorded:
            break;
    }
    return "a sampled dataset or a ferry::mix";
}

/// Whether a state saved with `saved` means the same items to a pipeline sampling `mine`: every
/// field the same; a source the state does not record is taken to be this pipeline's.
bool same_sampling(const sampler_identity& saved, const sampler_identity& mine) {
    auto as_mine = saved;
    if (as_mine.source == sampled_source::unrecorded) as_mine.source = mine.source;
    return as_mine == mine;
}

/// Why a state saved with `a` does not resume a pipeline sampling `b` (they differ).
std::string sampling_mismatch(const sampler_identity& a, const sampler_identity& b) {
    // A state saved before the source was recorded: read as this pipeline's, and said so.
    const bool unrecorded = a.source == sampled_source::unrecorded;
    const sampled_source saved = unrecorded ? b.source : a.source;
    const std::string note = !unrecorded ? std::string()
                             : b.source == sampled_source::mix
                                 ? "; the state does not say whether it sampled a dataset or a "
                                   "mix: read as a mix, as this pipeline samples one"
                                 : "; the state does not say whether it sampled a dataset or a "
                                   "mix: read as a dataset, as this pipeline samples one";
    if (saved != b.source) {
        return saved == sampled_source::mix
                   ? "the state was saved by a pipeline over a ferry::mix, this one samples a "
                     "dataset of " +
                         std::to_string(b.n) + " items"
                   : "the state was saved by a pipeline over a sampled dataset of " +
                         std::to_string(a.n) + " items, this one is over a ferry::mix";
    }
    if (a.n != b.n) {
        return (saved == sampled_source::mix
                    ? std::string("the state was saved by another mix (other sources, sizes, "
                                  "weights or rules)")
                    : "the state was saved with a dataset of " + std::to_string(a.n) +
                          " items, this pipeline's has " + std::to_string(b.n)) +
               note;
    }
    if (a.seed != b.seed) {
        return "the state was saved with seed " + std::to_string(a.seed) + ", this pipeline's is " +
               std::to_string(b.seed) + note;
    }
    if (a.rank != b.rank || a.world_size != b.world_size) {
        return "the state was saved with rank " + std::to_string(a.rank) + " of " +
               std::to_string(a.world_size) + ", this pipeline is rank " + std::to_string(b.rank) +
               " of " + std::to_string(b.world_size) +
               " (to resume at another world size, merge the ranks' states)" + note;
    }
    return "the state was saved with " + describe_sampling(a) + ", this pipeline's sampling is " +
           describe_sampling(b) + note;
}

[[noreturn]] void refuse(const std::string& why) {
    throw invalid_argument("resume_from: " + why);
}

constexpr const char* unordered_expansion =
    "an unordered pipeline (ordered = false on the pipeline or a stage) with flat_map, "
    "unbatch or batch_by cannot tell which outputs of an item were delivered: it has no state "
    "to resume from";

}  // namespace

void pipeline_runtime::take_resume_state() {
    res_.shape = plan_.shape;
    res_.expands = std::any_of(stages_.begin(), stages_.end(),
                               [](const stage_runtime& s) { return s.expands; });
    // Positions of a window's items are source positions only before any other renumbering.
    const auto first_renumbering = std::find_if(
        stages_.begin(), stages_.end(), [](const stage_runtime& s) { return s.renumbers(); });
    if (plan_.output_ordered && first_renumbering != stages_.end() &&
        first_renumbering->spec.kind == stage_kind::batch_by) {
        first_renumbering->lists_window = true;
        res_.lists_window = true;
    }
    // Unordered: which positions are done is a set, kept as they are delivered or left.
    if (!plan_.output_ordered && !res_.expands) res_.tracker = std::make_unique<done_tracker>();
    if (!opts_.resume_from) return;
    const pipeline_state& st = *opts_.resume_from;
    if (!plan_.output_ordered && res_.expands) refuse(unordered_expansion);
    if (plan_.output_ordered && !st.done().empty()) {
        refuse(
            "the state was saved by an unordered pipeline (it lists items done past its "
            "position); this one is ordered");
    }
    if (!st.shape().empty() && st.shape() != res_.shape) {
        // Escaped: a state made in code is not checked by parse.
        refuse("the state was saved by a pipeline of stages '" + escape_controls(st.shape()) +
               "', this one has '" + res_.shape + "'");
    }
    const auto& mine = plan_.source.identity;
    if (!st.rank_positions().empty() && !plan_.source.open_resumed) {
        refuse(
            "a merged state (pipeline_state::merge) resumes only a pipeline over a sampled "
            "dataset (ferry::from(dataset, sampling))");
    }
    if (st.merged()) {
        // Any rank of any world takes its share of the rest: the dataset must be the same.
        const auto& a = *st.sampler();
        const auto& b = *mine;
        if (a.n != b.n || a.seed != b.seed || a.shuffle != b.shuffle ||
            a.remainder != b.remainder) {
            refuse("the merged state was saved with " + describe_sampling(a) +
                   ", this pipeline's sampling is " + describe_sampling(b) +
                   " (only rank and world_size may differ)");
        }
    } else if (st.sampler().has_value() != mine.has_value()) {
        refuse(st.sampler()
                   ? std::string("the state was saved by a pipeline over ") +
                         sampled_name(st.sampler()->source) + " (" +
                         describe_sampling(*st.sampler()) + "), this one has no sampling"
                   : std::string("the state was saved by a pipeline without sampling, "
                                 "this one is over ") +
                         sampled_name(mine->source) + " (" + describe_sampling(*mine) + ")");
    }
    if (!st.merged() && mine && !same_sampling(*st.sampler(), *mine)) {
        refuse(sampling_mismatch(*st.sampler(), *mine));
    }
    if (st.children().size() > resume_point::max_depth) {
        refuse("the state counts outputs of " + std::to_string(st.children().size()) +
               " nested flat_map/unbatch stages; at most " +
               std::to_string(resume_point::max_depth) + " can resume");
    }
    for (const auto c : st.children()) {
        if (c > UINT32_MAX) refuse("an output count is out of range");
    }
    ctl_.epoch = st.epoch();
    res_.pending = st;
}

source_cursor pipeline_runtime::open_epoch() {
    if (!res_.pending) return plan_.source.open(ctl_.epoch);
    // The source first: a resume stopped or refused while the source is pulled to the position
    // changes nothing, and the state stays pending (what state() returns).
    const pipeline_state& pending = *res_.pending;
    source_cursor cursor = pending.rank_positions().empty()
                               ? open_source_at(plan_.source, ctl_.epoch, pending.position())
                               : plan_.source.open_resumed(pending);  // a merged epoch's rest
    const pipeline_state st = std::move(*res_.pending);
    res_.pending.reset();
    resume_point at{st.position()};
    for (const auto c : st.children()) at = at.child(c);
    res_.frontier = at;
    res_.at = at;
    res_.active = at.depth > 0;
    res_.carried_produced = st.position() + st.done().size();
    if (!st.merged()) {
        // The window's batches delivered before the save: the state after the next batch of it
        // names them too.
        res_.window = st.window();
        res_.window_at = st.position();
    }
    res_.carried_failed = st.failed();
    if (res_.tracker) {
        res_.tracker->reset(st.position(), st.done());
        src_.resume_done = st.done();
        src_.resume_done_next = 0;
    }
    if (!st.rank_positions().empty()) {
        // The rest of a merged epoch: this rank's share of it.
        res_.from_ranks = st.rank_positions();
        res_.from_sampler = *st.saved_sampler();
        res_.from_window = st.saved_window();
    }
    return cursor;
}

pipeline_state pipeline_runtime::state() const {
    if (!plan_.output_ordered && res_.expands) {
        throw invalid_argument(std::string("pipeline::state(): ") + unordered_expansion);
    }
    std::lock_guard lock(ctl_.mutex);
    pipeline_state out;
    if (res_.pending) return *res_.pending;  // built to resume, no epoch started yet
    if (ctl_.running && res_.tracker) {
        auto [position, done] = res_.tracker->snapshot();
        std::uint64_t failed = res_.carried_failed;
        for (const auto& f : recorder_.counts.failures()) {
            if (f.epoch == ctl_.epoch && f.stage != "source" &&
                (f.item < position || std::binary_search(done.begin(), done.end(), f.item))) {
                failed += f.items;
            }
        }
        out = pipeline_state(ctl_.epoch, position);
        out.set_done(std::move(done));
        out.set_failed(failed);
    } else if (ctl_.running) {
        if (res_.frontier.depth == resume_point::too_deep) {
            throw invalid_argument(
                "pipeline::state(): the last output went through more than " +
                std::to_string(resume_point::max_depth) +
                " nested flat_map/unbatch stages; such a pipeline cannot resume mid-item");
        }
        std::vector<std::uint64_t> children(res_.frontier.children,
                                            res_.frontier.children + res_.frontier.depth);
        out = pipeline_state(ctl_.epoch, res_.frontier.position, std::move(children));
        // Failures before the position, this epoch: the budget the resumed run continues.
        std::uint64_t failed = res_.carried_failed;
        for (const auto& f : recorder_.counts.failures()) {
            if (f.epoch == ctl_.epoch && f.stage != "source" && f.item < res_.frontier.position) {
                failed += f.items;
            }
        }
        out.set_failed(failed);
        out.set_window(res_.window_now());
        if (!res_.from_ranks.empty()) {
            out.set_resumed_from(res_.from_ranks, res_.from_sampler, res_.from_window);
        }
    } else {
        out = pipeline_state(ctl_.epoch, 0);
    }
    out.set_sampler(plan_.source.identity);
    out.set_shape(res_.shape);
    return out;
}

}  // namespace ferry::detail
