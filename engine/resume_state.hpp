// SPDX-License-Identifier: Apache-2.0
/// \file
/// resume_state: what a pipeline_state means for this pipeline — a pending `resume_from`
/// (checked), the resumed epoch's opening, where the consumer stands (the frontier a state()
/// names) and an unordered pipeline's done positions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "box.hpp"
#include "done_tracker.hpp"
#include "epoch_run.hpp"
#include "ferry/detail/spec.hpp"
#include "ledger.hpp"

namespace ferry::detail {

/// The resume side (resume.cpp). The consumer calls it under the epoch_control mutex; the
/// expansions call `skip` and `tracker`, which change only between epochs. Only the methods
/// below change it.
class resume_state {
  public:
    /// What a new epoch opens (resume_state::open): the source's cursor at `position`, the
    /// positions past it to skip, and the epoch's resume piece.
    struct opening {
        source_cursor cursor;
        std::uint64_t position = 0;
        std::vector<std::uint64_t> skip;
        resumed_epoch resumed;
    };

    /// Construction: what states mean for this pipeline (its `shape`, as pipeline_state::shape()
    /// spells it; `ordered` output; some stage `expands`; the first renumbering stage a batch_by
    /// whose batches list their items' positions: `lists_window`), and `from` checked against
    /// it and made the first epoch's start. Returns the first epoch's number. Throws
    /// `ferry::invalid_argument` when `from` does not fit.
    std::uint64_t take(const source_spec& source, std::string shape, bool ordered, bool expands,
                       bool lists_window, const std::optional<pipeline_state>& from);
    /// start_epoch: the cursor for epoch `epoch`, opened at the resume position if one is
    /// pending (which then becomes the epoch's frontier). A stop while the source is pulled to
    /// the position (it throws) leaves the resume pending.
    [[nodiscard]] opening open(const source_spec& source, std::uint64_t epoch);
    /// The epoch starts with `run`, made of open()'s piece.
    void open_epoch(resumed_epoch& run) noexcept { run_ = &run; }
    /// The epoch's end: the piece may be dropped; the next epoch starts from its beginning.
    void close_epoch() {
        run_ = nullptr;
        if (tracker_) tracker_->reset(0, {});
    }

    /// The consumer took `m`: the frontier moves to its end; its positions are done.
    void delivered(const box& m) {
        run_->frontier_ = m.end();
        if (tracker_) tracker_->done(m);
        if (lists_window_ && !m.covers.empty()) note_window(m);
    }
    /// A gap left the graph: unless cancelled, its positions are done (unordered).
    void left(const box& m) {
        if (tracker_ && !m.cancelled) tracker_->done(m);
    }
    /// An unordered pipeline's done positions (null for an ordered one, or one with flat_map or
    /// unbatch, whose outputs of one item it cannot tell apart).
    [[nodiscard]] done_tracker* tracker() const noexcept { return tracker_.get(); }
    /// Outputs of the item at `start` that a flat_map or unbatch skips: those delivered before
    /// the save, in a resumed epoch's first item; 0 otherwise.
    [[nodiscard]] std::size_t skip(const resume_point& start) const noexcept {
        if (run_ == nullptr || !run_->active_) return 0;
        const resume_point& at = run_->at_;
        if (start.position != at.position || start.depth >= at.depth) return 0;
        for (std::uint8_t i = 0; i < start.depth; ++i) {
            if (start.children[i] != at.children[i]) return 0;
        }
        return at.children[start.depth];
    }
    /// Of the running epoch, before its resume position: items produced, and failed ones.
    [[nodiscard]] std::uint64_t carried_produced() const noexcept {
        return run_ != nullptr ? run_->carried_produced_ : 0;
    }
    [[nodiscard]] std::uint64_t carried_failed() const noexcept {
        return run_ != nullptr ? run_->carried_failed_ : 0;
    }
    /// pipeline::state() can never answer (an unordered pipeline that expands): why, else null.
    [[nodiscard]] const char* stateless() const noexcept;
    /// The state now, in epoch `epoch` (under the epoch mutex): a pending resume's state, the
    /// running epoch's frontier (with `counts`' failures before it), or the start of `epoch`.
    [[nodiscard]] pipeline_state state(std::uint64_t epoch, const ledger& counts,
                                       const std::optional<sampler_identity>& identity) const;

  private:
    /// The consumer took `m`, a batch of the window that starts at `m.start().position`.
    void note_window(const box& m);
    /// What `pipeline_state::window` holds for the frontier: the delivered positions of the
    /// window it stands in, ascending.
    [[nodiscard]] std::vector<std::uint64_t> window_now() const;

    std::string shape_;  ///< the stages as pipeline_state::shape() spells them
    bool ordered_ = true;
    bool expands_ = false;                   ///< some stage is a flat_map or unbatch
    bool lists_window_ = false;              ///< batch_by's batches list their items' positions
    std::optional<pipeline_state> pending_;  ///< from resume_from, until its epoch starts
    std::unique_ptr<done_tracker> tracker_;
    resumed_epoch* run_ = nullptr;  ///< the running epoch's piece
};

}  // namespace ferry::detail
