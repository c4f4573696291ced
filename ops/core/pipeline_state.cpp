// SPDX-License-Identifier: Apache-2.0
/// \file
/// pipeline_state's text form: `ferry-state 1` and space-separated `key=value` fields.

#include "ferry/pipeline_state.hpp"

#include <charconv>
#include <map>

#include "ferry/detail/redact.hpp"
#include "ferry/error.hpp"

namespace ferry {
namespace {

constexpr std::string_view magic = "ferry-state";
constexpr std::string_view version = "1";

[[noreturn]] void bad(const std::string& why) {
    throw invalid_argument("pipeline_state::parse: " + why);
}

/// A piece of the text as a message shows it: at most 40 characters, control characters escaped.
std::string quote(std::string_view text) {
    constexpr std::size_t most = 40;
    return detail::escape_controls(text.substr(0, most)) + (text.size() > most ? "..." : "");
}

std::uint64_t number(std::string_view key, std::string_view text) {
    std::uint64_t v = 0;
    const auto* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, v);
    if (text.empty() || ec != std::errc() || p != end) {
        bad("field '" + std::string(key) + "' is not a number: '" + quote(text) + "'");
    }
    return v;
}

/// Splits `text` at `sep` (no empty parts are dropped).
std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> parts;
    for (;;) {
        const auto at = text.find(sep);
        parts.push_back(text.substr(0, at));
        if (at == std::string_view::npos) return parts;
        text.remove_prefix(at + 1);
    }
}

std::string join_numbers(const std::vector<std::uint64_t>& v) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) out += ',';
        out += std::to_string(v[i]);
    }
    return out;
}

using fields = std::map<std::string_view, std::string_view>;

/// The value of `key`; `missing` is the error when there is none.
std::string_view field(const fields& f, std::string_view key, const std::string& missing) {
    const auto it = f.find(key);
    if (it == f.end()) bad(missing);
    return it->second;
}

sampler_identity parse_sampler(std::string_view text) {
    std::map<std::string_view, std::string_view> f;
    for (const auto part : split(text, ',')) {
        const auto colon = part.find(':');
        if (colon == std::string_view::npos) bad("malformed sampler field '" + quote(part) + "'");
        f[part.substr(0, colon)] = part.substr(colon + 1);
    }
    const auto get = [&](std::string_view k) {
        return field(f, k, "the sampler has no '" + std::string(k) + "'");
    };
    sampler_identity s;
    s.n = number("sampler n", get("n"));
    s.seed = number("sampler seed", get("seed"));
    s.rank = number("sampler rank", get("rank"));
    s.world_size = number("sampler world", get("world"));
    const auto rem = get("remainder");
    if (rem == "pad") {
        s.remainder = remainder::pad;
    } else if (rem == "drop") {
        s.remainder = remainder::drop;
    } else {
        bad("the sampler's remainder is '" + quote(rem) + "', not pad or drop");
    }
    const auto shuffle = get("shuffle");
    if (shuffle != "0" && shuffle != "1") bad("the sampler's shuffle is not 0 or 1");
    s.shuffle = shuffle == "1";
    // Recorded since the field came; a state saved before says nothing.
    const auto source = f.find("source");
    if (source == f.end()) {
        s.source = sampled_source::unrecorded;
    } else if (source->second == "dataset") {
        s.source = sampled_source::dataset;
    } else if (source->second == "mix") {
        s.source = sampled_source::mix;
    } else {
        bad("the sampler's source is '" + quote(source->second) + "', not dataset or mix");
    }
    if (s.world_size == 0 || s.rank >= s.world_size) {
        bad("the sampler's rank " + std::to_string(s.rank) + " is not below its world size " +
            std::to_string(s.world_size));
    }
    if (s.n > ~std::uint64_t{0} - s.world_size) {
        bad("the sampler's dataset of " + std::to_string(s.n) + " items is too large for " +
            std::to_string(s.world_size) + " ranks");
    }
    return s;
}

/// Checks the saved world's rank positions against that world's sampler: one position per rank,
/// none past the epoch's items per rank.
void check_ranks(const std::vector<std::uint64_t>& ranks, const sampler_identity& saved) {
    if (ranks.size() != saved.world_size) {
        bad("the state holds " + std::to_string(ranks.size()) +
            " rank positions for a saved world of " + std::to_string(saved.world_size) + " ranks");
    }
    const std::uint64_t per_rank =
        sampler(saved.n, {.rank = 0, .world_size = saved.world_size, .remainder = saved.remainder})
            .size();
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        if (ranks[r] > per_rank) {
            bad("rank " + std::to_string(r) + "'s position " + std::to_string(ranks[r]) +
                " is past the saved epoch's " + std::to_string(per_rank) + " items per rank");
        }
    }
}

/// Checks a window's delivered positions: ascending, none before the state's position, or for a
/// merged state (`ranks`: the saved ranks' positions), none its rank had delivered already.
void check_window(const std::vector<std::uint64_t>& window, std::uint64_t position,
                  const std::vector<std::uint64_t>& ranks) {
    for (std::size_t i = 0; i < window.size(); ++i) {
        const std::uint64_t p = window[i];
        if (i > 0 && p <= window[i - 1]) bad("the window's positions are not ascending");
        if (ranks.empty() && p < position) {
            bad("window position " + std::to_string(p) + " lies before the state's position " +
                std::to_string(position));
        }
        if (!ranks.empty() && p / ranks.size() < ranks[p % ranks.size()]) {
            bad("window position " + std::to_string(p) + " was delivered by rank " +
                std::to_string(p % ranks.size()) + " before its position");
        }
    }
}

/// Checks an unordered pipeline's done positions: ascending (a position listed twice would be
/// delivered twice), all past the state's position (before it, everything is done).
void check_done(const std::vector<std::uint64_t>& done, std::uint64_t position) {
    for (std::size_t i = 0; i < done.size(); ++i) {
        if (i > 0 && done[i] <= done[i - 1]) {
            bad("the done positions are not ascending (" + std::to_string(done[i]) + " after " +
                std::to_string(done[i - 1]) + "): an item would be delivered twice");
        }
        if (done[i] < position) {
            bad("done position " + std::to_string(done[i]) + " lies before the state's position " +
                std::to_string(position));
        }
    }
}

/// Checks a sampled state's position (and done positions) against its epoch's items for this
/// rank: past them, a resume would open an empty epoch. Over a `ferry::mix`, `n` is the mix's
/// fingerprint, a 64-bit hash: the bound holds (its epochs are far shorter) and the mix's own
/// replay checks its end (mix_sampler::open).
void check_within_epoch(const pipeline_state& st, const sampler_identity& s) {
    const std::uint64_t items =
        sampler(s.n, {.rank = s.rank, .world_size = s.world_size, .remainder = s.remainder}).size();
    if (st.position() > items) {
        bad("the position " + std::to_string(st.position()) + " is past the sampled epoch's " +
            std::to_string(items) + " items for this rank");
    }
    if (!st.done().empty() && st.done().back() >= items) {
        bad("done position " + std::to_string(st.done().back()) + " is past the sampled epoch's " +
            std::to_string(items) + " items for this rank");
    }
}

std::string sampler_text(const sampler_identity& s) {
    return "n:" + std::to_string(s.n) + ",seed:" + std::to_string(s.seed) +
           ",rank:" + std::to_string(s.rank) + ",world:" + std::to_string(s.world_size) +
           ",remainder:" + (s.remainder == remainder::pad ? "pad" : "drop") +
           ",shuffle:" + (s.shuffle ? "1" : "0") +
           (s.source == sampled_source::dataset ? ",source:dataset"
            : s.source == sampled_source::mix   ? ",source:mix"
                                                : "");
}

}  // namespace

pipeline_state::pipeline_state(std::uint64_t epoch, std::uint64_t position,
                               std::vector<std::uint64_t> children)
    : epoch_(epoch), position_(position), children_(std::move(children)) {}

std::string pipeline_state::serialize() const {
    std::string out(magic);
    out += ' ';
    out += version;
    out += " epoch=" + std::to_string(epoch_);
    out += " position=" + std::to_string(position_);
    out += " children=" + join_numbers(children_);
    if (!done_.empty()) out += " done=" + join_numbers(done_);
    if (!window_.empty()) out += " window=" + join_numbers(window_);
    out += " failed=" + std::to_string(failed_);
    out += " shape=" + shape_;
    if (sampler_) out += " sampler=" + sampler_text(*sampler_);
    if (!ranks_.empty()) out += " ranks=" + join_numbers(ranks_);
    if (merged_) out += " merged=1";
    if (merged_sampler_) out += " saved=" + sampler_text(*merged_sampler_);
    if (!merged_window_.empty()) out += " savedwindow=" + join_numbers(merged_window_);
    return out;
}

pipeline_state pipeline_state::parse(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    if (text.empty()) bad("the text is empty");
    const auto words = split(text, ' ');
    if (words[0] != magic) {
        bad("not a ferry pipeline state (it starts '" + quote(text.substr(0, 24)) + "', not '" +
            std::string(magic) + "')");
    }
    if (words.size() < 2 || words[1] != version) {
        bad("version " + (words.size() < 2 ? std::string("(none)") : quote(words[1])) +
            " is not one this ferry reads (" + std::string(version) + ")");
    }
    std::map<std::string_view, std::string_view> f;
    for (std::size_t i = 2; i < words.size(); ++i) {
        const auto eq = words[i].find('=');
        if (eq == std::string_view::npos) bad("malformed field '" + quote(words[i]) + "'");
        const auto key = words[i].substr(0, eq);
        if (!f.emplace(key, words[i].substr(eq + 1)).second) {
            bad("field '" + quote(key) + "' appears twice");
        }
    }
    const auto get = [&](std::string_view k) {
        return field(f, k, "field '" + std::string(k) + "' is missing");
    };
    pipeline_state st;
    st.epoch_ = number("epoch", get("epoch"));
    st.position_ = number("position", get("position"));
    if (const auto c = get("children"); !c.empty()) {
        for (const auto part : split(c, ',')) st.children_.push_back(number("children", part));
    }
    st.failed_ = number("failed", get("failed"));
    if (const auto it = f.find("done"); it != f.end()) {
        for (const auto part : split(it->second, ',')) st.done_.push_back(number("done", part));
    }
    if (const auto it = f.find("window"); it != f.end()) {
        for (const auto part : split(it->second, ',')) {
            st.window_.push_back(number("window", part));
        }
    }
    st.shape_ = std::string(get("shape"));
    if (const auto it = f.find("sampler"); it != f.end()) st.sampler_ = parse_sampler(it->second);
    if (const auto it = f.find("ranks"); it != f.end()) {
        for (const auto part : split(it->second, ',')) st.ranks_.push_back(number("ranks", part));
    }
    if (const auto it = f.find("merged"); it != f.end()) {
        if (it->second != "1") bad("field 'merged' is not 1");
        st.merged_ = true;
    }
    if (const auto it = f.find("saved"); it != f.end())
        st.merged_sampler_ = parse_sampler(it->second);
    if (const auto it = f.find("savedwindow"); it != f.end()) {
        for (const auto part : split(it->second, ',')) {
            st.merged_window_.push_back(number("savedwindow", part));
        }
    }
    for (const auto& [key, value] : f) {
        if (key != "epoch" && key != "position" && key != "children" && key != "failed" &&
            key != "shape" && key != "sampler" && key != "ranks" && key != "merged" &&
            key != "saved" && key != "done" && key != "window" && key != "savedwindow") {
            bad("unknown field '" + quote(key) + "'");
        }
    }
    if (st.merged_ && (st.ranks_.empty() || !st.sampler_)) {
        bad("a merged state needs the ranks' positions and the sampler");
    }
    if (!st.merged_ && !st.ranks_.empty() && !st.merged_sampler_) {
        bad("the ranks' positions come without the saved world's sampler");
    }
    if (st.merged_sampler_ && (st.merged_ || st.ranks_.empty())) {
        bad("the saved world's sampler comes " +
            std::string(st.merged_ ? "with a merged state, which holds it as its sampler"
                                   : "without the ranks' positions"));
    }
    // The parts agree: later work (resumed_sampler's) is bounded by the positions' count, which
    // the text's length bounds.
    if (!st.ranks_.empty()) check_ranks(st.ranks_, st.merged_ ? *st.sampler_ : *st.merged_sampler_);
    check_window(st.window_, st.position_, st.merged_ ? st.ranks_ : std::vector<std::uint64_t>{});
    if (!st.merged_window_.empty() && !st.merged_sampler_) {
        bad("the saved world's window comes without the ranks' positions");
    }
    check_window(st.merged_window_, 0, st.ranks_);
    check_done(st.done_, st.position_);
    // Not in the rest of a merged epoch (ranks_): its share is of another world's epoch.
    if (st.sampler_ && !st.merged_ && st.ranks_.empty()) check_within_epoch(st, *st.sampler_);
    for (const char c : st.shape_) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f)
            bad("the shape '" + quote(st.shape_) + "' holds a control character");
    }
    return st;
}

}  // namespace ferry
