// SPDX-License-Identifier: Apache-2.0
/// \file
/// resume_state: where the consumer stands (the frontier a state() names), a pending
/// `resume_from`, and the resumed epoch's start while it runs.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "box.hpp"
#include "done_tracker.hpp"
#include "ferry/detail/spec.hpp"

namespace ferry::detail {

/// The resume side (resume.cpp). The consumer writes it under the epoch_control mutex; the
/// expansions read `at` and `active`, which change only between epochs.
struct resume_state {
    /// The consumer's frontier: where the epoch resumes after the output it took last.
    resume_point frontier;
    std::string shape;                      ///< the stages as pipeline_state::shape() spells them
    std::optional<pipeline_state> pending;  ///< from resume_from, until its epoch starts
    /// The resumed epoch's start, while it runs.
    resume_point at;
    bool active = false;
    /// Of the resumed epoch, before its resume position: items (produced) and failed ones, for
    /// its failure budget and the next state().
    std::uint64_t carried_produced = 0;
    std::uint64_t carried_failed = 0;
    /// While the rest of a merged epoch runs: the saved world's positions and sampler.
    std::vector<std::uint64_t> from_ranks;
    sampler_identity from_sampler;
    std::vector<std::uint64_t> from_window;  ///< and the merged state's window
    /// An unordered pipeline's done positions (null for an ordered one, or one with flat_map or
    /// unbatch, whose outputs of one item it cannot tell apart).
    std::unique_ptr<done_tracker> tracker;
    bool expands = false;  ///< some stage is a flat_map or unbatch
    /// The first stage to renumber is a batch_by: its batches list their items' positions
    /// (`box::covers`), and the consumer keeps those of the window it is in, for
    /// `pipeline_state::window` (an elastic resume leaves them out).
    bool lists_window = false;
    std::uint64_t window_at = 0;        ///< the window's first position
    std::vector<std::uint64_t> window;  ///< its delivered positions, in delivery order

    /// The consumer took `m`, a batch of the window that starts at `m.start().position`.
    void note_window(const box& m) {
        if (const std::uint64_t at = m.start().position; at != window_at) {
            window.clear();
            window_at = at;
        }
        window.insert(window.end(), m.covers->begin(), m.covers->end());
    }
    /// What `pipeline_state::window` holds for the frontier: the delivered positions of the
    /// window it stands in, ascending.
    [[nodiscard]] std::vector<std::uint64_t> window_now() const {
        if (!lists_window || frontier.depth == 0 || frontier.position != window_at) return {};
        std::vector<std::uint64_t> out = window;
        std::sort(out.begin(), out.end());
        return out;
    }

    /// Outputs of the item at `start` that a flat_map or unbatch skips: those delivered before
    /// the save, in a resumed epoch's first item; 0 otherwise.
    [[nodiscard]] std::size_t skip(const resume_point& start) const noexcept {
        if (!active || start.position != at.position || start.depth >= at.depth) return 0;
        for (std::uint8_t i = 0; i < start.depth; ++i) {
            if (start.children[i] != at.children[i]) return 0;
        }
        return at.children[start.depth];
    }
    /// The epoch's end: the next one starts from its beginning.
    void close_epoch() {
        active = false;
        carried_produced = 0;
        carried_failed = 0;
        from_ranks.clear();
        frontier = resume_point{};
        window.clear();
        if (tracker) tracker->reset(0, {});
    }
};

}  // namespace ferry::detail
