// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for saved states (`ferry::pipeline_state::parse`, `merge` and
/// `resumed_sampler`): any text, split at newlines into one state per line, must parse or throw
/// `ferry::invalid_argument`; a state that parses must serialize back to a text that parses to
/// the same state; the parsed states merged (if `merge` accepts them) and every merged state
/// resumed on a new world of 1-4 ranks must answer `index` at the share's first, middle and last
/// positions with a dataset index below the dataset's size. Any other exception, a crash, a leak
/// or an allocation past libFuzzer's limit is a finding: what a state costs must be bounded by
/// its text, not by the numbers written in it.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/pipeline_state.hpp"

namespace {

// Resumes `st` (a merged state, or one taken while a merged epoch ran) on rank 0 .. w-1 of a new
// world of `w` and reads a few positions of each share.
void resume(const ferry::pipeline_state& st, std::size_t w) {
    const std::uint64_t n = st.saved_sampler()->n;
    for (std::size_t rank = 0; rank < w; ++rank) {
        const ferry::resumed_sampler share(st, rank, w);
        if (share.size() == 0) continue;
        for (const std::uint64_t i : {std::uint64_t{0}, share.size() / 2, share.size() - 1}) {
            if (share.index(i) >= n) std::abort();  // an index outside the dataset
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::size_t new_world = size % 4 + 1;  // the new world: 1-4 ranks
    std::vector<ferry::pipeline_state> states;
    std::size_t from = 0;
    while (from <= text.size()) {
        auto end = text.find('\n', from);
        if (end == std::string_view::npos) end = text.size();
        const auto line = text.substr(from, end - from);
        from = end + 1;
        try {
            auto st = ferry::pipeline_state::parse(line);
            if (ferry::pipeline_state::parse(st.serialize()) != st) std::abort();  // round trip
            states.push_back(std::move(st));
        } catch (const ferry::invalid_argument&) {
        }
    }
    for (const auto& st : states) {
        if (st.rank_positions().empty() || !st.saved_sampler()) continue;
        try {
            resume(st, new_world);
        } catch (const ferry::invalid_argument&) {
        }
    }
    if (states.empty()) return 0;
    try {
        const auto merged = ferry::pipeline_state::merge(states);
        if (ferry::pipeline_state::parse(merged.serialize()) != merged) std::abort();
        resume(merged, new_world);
    } catch (const ferry::invalid_argument&) {
    }
    return 0;
}
