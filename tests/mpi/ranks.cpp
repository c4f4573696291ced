// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::mpi under a real mpirun (ctest mpi.ranks, mpi.resume; tests/mpi/CMakeLists.txt):
///
///   ranks sample <merged state file> <delivered file>   (mpirun -np 4)
///     world() against the launcher's variables, agree_seed, all_gather of strings of every
///     length; a shuffled, padded pipeline on each rank for two epochs, rank 0 checking what the
///     ranks delivered together (exactly the sampler's order, disjoint up to the padding,
///     complete, equal counts, a new order in epoch 2, the same again in a second run); then a
///     save mid-epoch: gather_states, merged on rank 0 and written with what was delivered.
///   ranks resume <merged state file> <delivered file>   (mpirun -np 3)
///     the rest of that epoch on three ranks, resumed from the merged state: rank 0 checks that
///     the two runs together delivered every item of the epoch, and each once up to padding.
///   ranks mix-sample / mix-resume <merged state file> <delivered file>   (-np 4, then 3)
///     the same for a ferry::mix batched by cost (batch_by): saves inside windows, whose
///     delivered positions the rest leaves out.
///
/// Plain main, no Boost: exits 1 with a message naming each failed check (rank 0), or aborts the
/// job (MPI_Abort) when a rank throws, so that no rank waits forever in a collective.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ferry/ferry.hpp"
#include "ferry/mpi.hpp"

namespace {

constexpr int items = 1003;             // not a multiple of 4 or 3: the padded case
constexpr std::size_t batch = 8;        // not a divisor of a rank's 251 items: a short last batch
constexpr std::size_t save_after = 10;  // batches of epoch 0 before the mid-epoch save

const ferry::logger quiet = [](ferry::log_level, std::string_view) {};

/// What failed, as rank 0 found it.
std::vector<std::string> failures;

void expect(bool ok, const std::string& what) {
    if (!ok) failures.push_back(what);
}

std::vector<int> dataset() {
    std::vector<int> v(items);
    std::iota(v.begin(), v.end(), 0);
    return v;
}

std::string join(const std::vector<int>& xs) {
    std::string out;
    for (const int x : xs) out += std::to_string(x) + ' ';
    return out;
}

std::vector<int> split(const std::string& text) {
    std::vector<int> out;
    std::istringstream in(text);
    for (int x = 0; in >> x;) out.push_back(x);
    return out;
}

/// Writes what a save left for the resuming run: the merged state, and what every rank had
/// delivered before it (one line of numbers).
void write_saved(const std::string& state_file, const std::string& delivered_file,
                 const ferry::pipeline_state& merged, const std::vector<std::string>& delivered) {
    std::ofstream(state_file) << merged.serialize() << '\n';
    std::ofstream out(delivered_file);
    for (const auto& text : delivered) out << text;
    out << '\n';
    expect(static_cast<bool>(out), "could not write " + delivered_file);
}

/// The first line of `path` (empty when it cannot be read).
std::string first_line(const std::string& path) {
    std::string text;
    std::getline(std::ifstream(path), text);
    return text;
}

/// The pipeline every rank runs: a map that the delivered value can be undone from (so that a
/// wrong item cannot pass for a right one), batches of 8.
auto make_pipeline(const ferry::sampling& s, std::optional<ferry::pipeline_state> resume = {}) {
    return ferry::from(dataset(), s)
        .map([](int x) { return 3 * x + 1; }, 2)
        .batch(batch)
        .build({.threads = 1, .logger = quiet, .resume_from = std::move(resume)});
}

int undo(int y) {
    return (y - 1) / 3;
}

/// Every item a rank's pipeline delivers in one epoch, batches flattened.
template <class Pipeline>
std::vector<int> run_epoch(Pipeline& pipe) {
    std::vector<int> out;
    for (auto& b : pipe) {
        for (const int y : b) out.push_back(undo(y));
    }
    return out;
}

/// Each rank's items of `epochs` epochs: [epoch][rank].
std::vector<std::vector<std::vector<int>>> run_everywhere(const ferry::sampling& s, int epochs) {
    auto pipe = make_pipeline(s);
    std::vector<std::vector<std::vector<int>>> out;
    for (int e = 0; e < epochs; ++e) {
        std::vector<std::vector<int>> ranks;
        for (const std::string& text : ferry::mpi::all_gather(join(run_epoch(pipe)))) {
            ranks.push_back(split(text));
        }
        out.push_back(std::move(ranks));
    }
    return out;
}

/// Rank 0: one epoch's items of every rank are the sampler's, equal in count, and cover the
/// dataset, repeating only the padding's few.
void check_epoch(const std::vector<std::vector<int>>& ranks, const ferry::sampling& s,
                 std::uint64_t epoch, const std::string& where) {
    std::map<int, int> seen;
    std::size_t total = 0;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        ferry::sampling mine = s;
        mine.rank = r;
        const ferry::sampler sampler(items, mine);
        std::vector<int> want;
        for (std::uint64_t i = 0; i < sampler.size(); ++i) {
            want.push_back(static_cast<int>(sampler.index(epoch, i)));
        }
        expect(ranks[r] == want, where + ": rank " + std::to_string(r) + " delivered " +
                                     std::to_string(ranks[r].size()) +
                                     " items, not the sampler's " + std::to_string(want.size()));
        expect(ranks[r].size() == ranks[0].size(),
               where + ": rank " + std::to_string(r) + " delivered " +
                   std::to_string(ranks[r].size()) + " items, rank 0 " +
                   std::to_string(ranks[0].size()));
        for (const int x : ranks[r]) ++seen[x];
        total += ranks[r].size();
    }
    const std::size_t w = ranks.size();
    const std::size_t per_rank =
        s.remainder == ferry::remainder::pad ? (items + w - 1) / w : items / w;
    expect(ranks[0].size() == per_rank, where + ": " + std::to_string(ranks[0].size()) +
                                            " items per rank, not " + std::to_string(per_rank));
    std::size_t repeats = 0;
    for (const auto& [x, n] : seen) {
        expect(x >= 0 && x < items, where + ": item " + std::to_string(x) + " is not in the data");
        repeats += static_cast<std::size_t>(n - 1);
    }
    if (s.remainder == ferry::remainder::pad) {
        // Complete; only the w * per_rank - items padding positions repeat an item.
        expect(seen.size() == static_cast<std::size_t>(items),
               where + ": " + std::to_string(seen.size()) + " distinct items of " +
                   std::to_string(items));
        expect(repeats == w * per_rank - items, where + ": " + std::to_string(repeats) +
                                                    " repeated items, padding is " +
                                                    std::to_string(w * per_rank - items));
    } else {
        // Disjoint; only the tail of fewer than w items is left out.
        expect(repeats == 0, where + ": " + std::to_string(repeats) + " repeated items");
        expect(total == items - items % w, where + ": " + std::to_string(total) + " items");
    }
}

void sample(const ferry::world& w, const std::string& state_file,
            const std::string& delivered_file) {
    // Each rank's own seed; rank 0's wins everywhere.
    const std::uint64_t seed = ferry::mpi::agree_seed(1000 + w.rank);
    const auto seeds = ferry::mpi::all_gather(std::to_string(seed));
    for (std::size_t r = 0; r < seeds.size(); ++r) {
        expect(seeds[r] == "1000", "agree_seed: rank " + std::to_string(r) + " got " + seeds[r]);
    }

    for (const auto rem : {ferry::remainder::pad, ferry::remainder::drop}) {
        const std::string name = rem == ferry::remainder::pad ? "pad" : "drop";
        const ferry::sampling s{
            .shuffle = true, .seed = seed, .rank = w.rank, .world_size = w.size, .remainder = rem};
        const auto first = run_everywhere(s, 2);
        const auto second = run_everywhere(s, 2);
        if (w.rank != 0) continue;
        for (std::uint64_t e = 0; e < 2; ++e) {
            check_epoch(first[e], s, e, name + ", epoch " + std::to_string(e + 1));
        }
        expect(first[0] != first[1], name + ": epoch 2 has epoch 1's order");
        expect(first == second, name + ": a second run with the same seed delivered otherwise");
    }

    // A save mid-epoch: every rank takes its state after the same number of batches.
    const ferry::sampling s{.shuffle = true, .seed = seed, .rank = w.rank, .world_size = w.size};
    auto pipe = make_pipeline(s);
    std::vector<int> delivered;
    std::vector<ferry::pipeline_state> states;
    std::size_t batches = 0;
    for (auto& b : pipe) {
        for (const int y : b) delivered.push_back(undo(y));
        if (++batches == save_after) {
            states = ferry::mpi::gather_states(pipe.state());
            break;
        }
    }
    const auto all_delivered = ferry::mpi::all_gather(join(delivered));
    if (w.rank != 0) return;
    expect(states.size() == w.size, "gather_states: " + std::to_string(states.size()) +
                                        " states from " + std::to_string(w.size) + " ranks");
    for (std::size_t r = 0; r < states.size(); ++r) {
        expect(states[r].epoch() == 0 && states[r].position() == save_after * batch,
               "gather_states: rank " + std::to_string(r) + "'s state is " + states[r].serialize());
        expect(states[r].sampler() && states[r].sampler()->rank == r,
               "gather_states: element " + std::to_string(r) + " is not rank " + std::to_string(r) +
                   "'s state");
    }
    const auto merged = ferry::pipeline_state::merge(states);
    expect(merged.merged() &&
               merged.rank_positions() == std::vector<std::uint64_t>(w.size, save_after * batch),
           "merge: " + merged.serialize());
    write_saved(state_file, delivered_file, merged, all_delivered);
}

void resume(const ferry::world& w, const std::string& state_file,
            const std::string& delivered_file) {
    const auto merged = ferry::pipeline_state::parse(first_line(state_file));
    const std::uint64_t seed =
        ferry::mpi::agree_seed(merged.sampler() ? merged.sampler()->seed : 0);
    const ferry::sampling s{.shuffle = true, .seed = seed, .rank = w.rank, .world_size = w.size};
    auto pipe = make_pipeline(s, merged);
    const auto rest = ferry::mpi::all_gather(join(run_epoch(pipe)));
    if (w.rank != 0) return;

    const std::vector<int> before = split(first_line(delivered_file));
    constexpr std::size_t old_size = 4;
    expect(before.size() == old_size * save_after * batch,
           "the 4 ranks delivered " + std::to_string(before.size()) + " items before the save");
    std::map<int, int> seen;
    for (const int x : before) ++seen[x];
    std::size_t after = 0;
    for (std::size_t r = 0; r < rest.size(); ++r) {
        const auto mine = split(rest[r]);
        // Exactly this rank's share of the rest, in the order resumed_sampler gives.
        const ferry::resumed_sampler share(merged, r, w.size);
        std::vector<int> want;
        for (std::uint64_t i = 0; i < share.size(); ++i) {
            want.push_back(static_cast<int>(share.index(i)));
        }
        expect(mine == want,
               "resume: rank " + std::to_string(r) + " delivered " + std::to_string(mine.size()) +
                   " items, not its share of the rest (" + std::to_string(want.size()) + ")");
        expect(mine.size() == split(rest[0]).size(),
               "resume: rank " + std::to_string(r) + " delivered " + std::to_string(mine.size()) +
                   " items, rank 0 " + std::to_string(split(rest[0]).size()));
        for (const int x : mine) ++seen[x];
        after += mine.size();
    }
    std::size_t repeats = 0;
    for (const auto& [x, n] : seen) {
        expect(x >= 0 && x < items, "resume: item " + std::to_string(x) + " is not in the data");
        repeats += static_cast<std::size_t>(n - 1);
    }
    expect(seen.size() == static_cast<std::size_t>(items),
           "resume: the two runs delivered " + std::to_string(seen.size()) + " distinct items of " +
               std::to_string(items));
    // The rest is every position of the saved epoch the 4 ranks had not delivered, its padding
    // included (4 x 251 = 1004 positions for 1003 items), split evenly over the 3 ranks and
    // padded up to a multiple of 3: the repeats are exactly the two paddings. Here 1004 - 320 =
    // 684 positions, 228 a rank, and 1 repeat (the saved epoch's padding).
    const auto n_items = static_cast<std::size_t>(items);
    const std::size_t old_positions = old_size * ((n_items + old_size - 1) / old_size);
    const std::size_t left = old_positions - before.size();
    const auto ranks = static_cast<std::size_t>(w.size);
    const std::size_t padded = ranks * ((left + ranks - 1) / ranks);
    const std::size_t want_repeats = (old_positions - n_items) + (padded - left);
    expect(after == padded, "resume: the 3 ranks delivered " + std::to_string(after) +
                                " items after the save, not " + std::to_string(padded));
    expect(repeats == want_repeats,
           "resume: " + std::to_string(repeats) + " items delivered twice or more, not " +
               std::to_string(want_repeats) + " (" + std::to_string(before.size()) +
               " before the save, " + std::to_string(after) + " after)");
}

/// The mix every rank runs in the mix modes: 503 items (0..502) and 300 (1000..1299) at 2:1,
/// shuffled, until both are used up; a rank's share pads the first by one item.
auto make_mix(const ferry::world& w, std::optional<ferry::pipeline_state> resume = {}) {
    static const std::vector<int> a = [] {
        std::vector<int> v(503);
        std::iota(v.begin(), v.end(), 0);
        return v;
    }();
    static const std::vector<int> b = [] {
        std::vector<int> v(300);
        std::iota(v.begin(), v.end(), 1000);
        return v;
    }();
    return ferry::mix<int>(
               {{a, 2.0, {.shuffle = true, .seed = 11}}, {b, 1.0, {.shuffle = true, .seed = 12}}},
               {.seed = 5,
                .stop = ferry::mix_stop::all_exhausted,
                .rank = w.rank,
                .world_size = w.size})
        .map([](int x) { return 3 * x + 1; }, 2)
        // Batches by cost (the item's last digit) over windows of 24: a save lands inside one.
        .batch_by([](int y) { return static_cast<double>(undo(y) % 10); },
                  {.max_cost = 20, .buckets = {3, 6}, .buffer = 24})
        .build({.threads = 1, .logger = quiet, .resume_from = std::move(resume)});
}

/// mix-sample: each rank stops at its own step (2 + 3 * rank batches, inside a window), the
/// states are gathered and merged on rank 0 and written with what was delivered.
void mix_sample(const ferry::world& w, const std::string& state_file,
                const std::string& delivered_file) {
    auto pipe = make_mix(w);
    std::vector<int> delivered;
    for (std::size_t i = 0; i < 2 + 3 * w.rank; ++i) {
        const auto batch = pipe.next();
        for (const int y : batch.value()) delivered.push_back(undo(y));
    }
    const auto state = pipe.state();
    expect(!state.window().empty(), "mix-sample: rank " + std::to_string(w.rank) +
                                        " saved between two windows; the test wants one inside");
    const auto states = ferry::mpi::gather_states(state);
    const auto all_delivered = ferry::mpi::all_gather(join(delivered));
    if (w.rank != 0) return;
    const auto merged = ferry::pipeline_state::merge(states);
    write_saved(state_file, delivered_file, merged, all_delivered);
}

/// mix-resume: the ranks of a new world take the rest of the merged epoch: the same count on
/// every rank, and with what the saved ranks delivered every item of both sources, again only
/// as padding (one in the saved world's share of the first source, under one per source and
/// new rank in the rest's split).
void mix_resume(const ferry::world& w, const std::string& state_file,
                const std::string& delivered_file) {
    auto pipe = make_mix(w, ferry::pipeline_state::parse(first_line(state_file)));
    std::vector<int> mine;
    while (auto batch = pipe.next()) {
        for (const int y : *batch) mine.push_back(undo(y));
    }
    const auto rest = ferry::mpi::all_gather(join(mine));
    if (w.rank != 0) return;
    std::map<int, int> seen;
    for (const int x : split(first_line(delivered_file))) ++seen[x];
    for (std::size_t r = 0; r < rest.size(); ++r) {
        const auto items_r = split(rest[r]);
        expect(items_r.size() == split(rest[0]).size(),
               "mix-resume: rank " + std::to_string(r) + " delivered " +
                   std::to_string(items_r.size()) + " items, rank 0 " +
                   std::to_string(split(rest[0]).size()));
        for (const int x : items_r) ++seen[x];
    }
    std::size_t repeats = 0;
    for (const auto& [x, n] : seen) repeats += static_cast<std::size_t>(n - 1);
    expect(seen.size() == 503 + 300, "mix-resume: " + std::to_string(seen.size()) +
                                         " distinct items over both runs, not 803");
    expect(repeats <= 1 + 2 * (w.size - 1),
           "mix-resume: " + std::to_string(repeats) + " items came twice or more");
}

}  // namespace

/// Whether `f` throws a ferry::error with `code` whose message says `says`.
template <class F>
bool throws(F&& f, ferry::errc code, const std::string& says) {
    try {
        f();
    } catch (const ferry::error& e) {
        return e.code() == code && std::string(e.what()).find(says) != std::string::npos;
    }
    return false;
}

int main(int argc, char** argv) {
    try {
        // Before MPI is initialised: an error that says what to do, not MPI's abort.
        const bool before_ok = throws([] { (void)ferry::mpi::world(); },
                                      ferry::errc::invalid_argument, "make a ferry::mpi::session");
        ferry::mpi::session mpi(argc, argv);
        expect(before_ok, "world() before the session did not throw invalid_argument");
        expect(mpi.owns(), "the session did not initialise MPI");
        const std::vector<std::string> args(argv + 1, argv + argc);
        const std::set<std::string> modes{"sample", "resume", "mix-sample", "mix-resume"};
        if (args.size() != 3 || modes.count(args[0]) == 0) {
            std::cerr << "usage: ranks sample|resume|mix-sample|mix-resume <merged state file> "
                         "<delivered file>\n";
            return 2;
        }
        const ferry::world w = ferry::mpi::world();
        const ferry::world env = ferry::world::from_environment();
        if (!(w == env)) {
            std::cerr << "rank " << w.rank << ": world() is " << w.rank << " of " << w.size
                      << " (local " << w.local_rank << " of " << w.local_size
                      << "), the launcher says " << env.rank << " of " << env.size << " (local "
                      << env.local_rank << " of " << env.local_size << ")\n";
            MPI_Abort(MPI_COMM_WORLD, 1);
        }

        // Strings of every length, the empty one too: rank r sends r * 3 letters.
        const auto strings = ferry::mpi::all_gather(std::string(w.rank * 3, 'a' + w.rank % 26));
        bool strings_ok = strings.size() == w.size;
        for (std::size_t r = 0; strings_ok && r < strings.size(); ++r) {
            strings_ok = strings[r] == std::string(r * 3, 'a' + r % 26);
        }
        expect(strings_ok, "all_gather: rank " + std::to_string(w.rank) + " got other strings");

        if (args[0] == "sample") {
            sample(w, args[1], args[2]);
        } else if (args[0] == "resume") {
            resume(w, args[1], args[2]);
        } else if (args[0] == "mix-sample") {
            mix_sample(w, args[1], args[2]);
        } else {
            mix_resume(w, args[1], args[2]);
        }
        if (!failures.empty()) {
            for (const auto& f : failures) std::cerr << "rank " << w.rank << ": " << f << '\n';
            return 1;
        }
        if (w.rank == 0) {
            std::cout << args[0] << ": ok on " << w.size << " ranks\n";
        }
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "ranks: " << e.what() << '\n';
        int initialised = 0;
        int finalised = 0;
        MPI_Initialized(&initialised);
        MPI_Finalized(&finalised);
        if (initialised && !finalised) MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
}
