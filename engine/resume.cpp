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

std::uint64_t resume_state::take(const source_spec& source, std::string shape, bool ordered,
                                 bool expands, bool lists_window,
                                 const std::optional<pipeline_state>& from) {
    shape_ = std::move(shape);
    ordered_ = ordered;
    expands_ = expands;
    lists_window_ = lists_window;
    // Unordered: which positions are done is a set, kept as they are delivered or left.
    if (!ordered_ && !expands_) tracker_ = std::make_unique<done_tracker>();
    if (!from) return 0;
    const pipeline_state& st = *from;
    if (!ordered_ && expands_) refuse(unordered_expansion);
    if (ordered_ && !st.done().empty()) {
        refuse(
            "the state was saved by an unordered pipeline (it lists items done past its "
            "position); this one is ordered");
    }
    if (!st.shape().empty() && st.shape() != shape_) {
        // Escaped: a state made in code is not checked by parse.
        refuse("the state was saved by a pipeline of stages '" + escape_controls(st.shape()) +
               "', this one has '" + shape_ + "'");
    }
    const auto& mine = source.identity;
    if (!st.rank_positions().empty() && !source.open_resumed) {
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
    pending_ = st;
    return st.epoch();
}

resume_state::opening resume_state::open(const source_spec& source, std::uint64_t epoch) {
    opening o;
    if (!pending_) {
        o.cursor = source.open(epoch);
        return o;
    }
    // The source first: a resume stopped or refused while the source is pulled to the position
    // changes nothing, and the state stays pending (what state() returns).
    const pipeline_state& pending = *pending_;
    o.cursor = pending.rank_positions().empty()
                   ? open_source_at(source, epoch, pending.position())
                   : source.open_resumed(pending);  // a merged epoch's rest
    const pipeline_state st = std::move(*pending_);
    pending_.reset();
    resume_point at{st.position()};
    for (const auto c : st.children()) at = at.child(c);
    o.position = at.position;
    o.resumed = resumed_epoch(at);
    resumed_epoch& r = o.resumed;
    r.carried_produced_ = st.position() + st.done().size();
    if (!st.merged()) {
        // The window's batches delivered before the save: the state after the next batch of it
        // names them too.
        r.window_ = st.window();
        r.window_at_ = st.position();
    }
    r.carried_failed_ = st.failed();
    if (tracker_) {
        tracker_->reset(st.position(), st.done());
        o.skip = st.done();
    }
    if (!st.rank_positions().empty()) {
        // The rest of a merged epoch: this rank's share of it.
        r.from_ranks_ = st.rank_positions();
        r.from_sampler_ = *st.saved_sampler();
        r.from_window_ = st.saved_window();
    }
    return o;
}

void resume_state::note_window(const box& m) {
    if (const std::uint64_t at = m.start().position; at != run_->window_at_) {
        run_->window_.clear();
        run_->window_at_ = at;
    }
    run_->window_.insert(run_->window_.end(), m.covers->begin(), m.covers->end());
}

std::vector<std::uint64_t> resume_state::window_now() const {
    const resumed_epoch& r = *run_;
    if (!lists_window_ || r.frontier_.depth == 0 || r.frontier_.position != r.window_at_) {
        return {};
    }
    std::vector<std::uint64_t> out = r.window_;
    std::sort(out.begin(), out.end());
    return out;
}

const char* resume_state::stateless() const noexcept {
    return !ordered_ && expands_ ? unordered_expansion : nullptr;
}

pipeline_state resume_state::state(std::uint64_t epoch, const ledger& counts,
                                   const std::optional<sampler_identity>& identity) const {
    pipeline_state out;
    if (pending_) return *pending_;  // built to resume, no epoch started yet
    if (run_ != nullptr && tracker_) {
        auto [position, done] = tracker_->snapshot();
        std::uint64_t failed = run_->carried_failed_;
        for (const auto& f : counts.failures()) {
            if (f.epoch == epoch && f.stage != "source" &&
                (f.item < position || std::binary_search(done.begin(), done.end(), f.item))) {
                failed += f.items;
            }
        }
        out = pipeline_state(epoch, position);
        out.set_done(std::move(done));
        out.set_failed(failed);
    } else if (run_ != nullptr) {
        const resume_point& frontier = run_->frontier_;
        if (frontier.depth == resume_point::too_deep) {
            throw invalid_argument(
                "pipeline::state(): the last output went through more than " +
                std::to_string(resume_point::max_depth) +
                " nested flat_map/unbatch stages; such a pipeline cannot resume mid-item");
        }
        std::vector<std::uint64_t> children(frontier.children, frontier.children + frontier.depth);
        out = pipeline_state(epoch, frontier.position, std::move(children));
        // Failures before the position, this epoch: the budget the resumed run continues.
        std::uint64_t failed = run_->carried_failed_;
        for (const auto& f : counts.failures()) {
            if (f.epoch == epoch && f.stage != "source" && f.item < frontier.position) {
                failed += f.items;
            }
        }
        out.set_failed(failed);
        out.set_window(window_now());
        if (!run_->from_ranks_.empty()) {
            out.set_resumed_from(run_->from_ranks_, run_->from_sampler_, run_->from_window_);
        }
    } else {
        out = pipeline_state(epoch, 0);
    }
    out.set_sampler(identity);
    out.set_shape(shape_);
    return out;
}

}  // namespace ferry::detail
