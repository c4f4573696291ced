// SPDX-License-Identifier: Apache-2.0
/// \file
/// The trainers' `--mix DIR:WEIGHT,...`: training on several image folders at once, drawn by
/// weight with ferry::mix (each folder's train split shuffled on its own, split over the ranks),
/// labelled by the main data's class names.
#pragma once

#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <ferry/ferry.hpp>

#include "image_folder.hpp"
#include "trainer_options.hpp"

namespace ferry_examples {

/// The folders of a `--mix` and their weights; each folder's train split, as items.
struct training_mix {
    std::vector<std::string> dirs;
    std::vector<double> weights;
    std::vector<std::vector<item>> trains;
};

/// Reads `--mix DIR:WEIGHT,...` (a weight after the last colon of each part), lists each folder's
/// train split with `classes` (a class the main data lacks is left out), cut to `--max-items` as
/// the main data is, and prints a "mix: ..." line. Exits 2 saying what is wrong with the list.
inline training_mix load_training_mix(const std::string& spec,
                                      const std::vector<std::string>& classes,
                                      const trainer_options& o) {
    training_mix m;
    std::mt19937_64 pick(o.seed + 1);
    std::size_t at = 0;
    while (at <= spec.size()) {
        const auto comma = std::min(spec.find(',', at), spec.size());
        const std::string part = spec.substr(at, comma - at);
        const auto colon = part.rfind(':');
        char* end = nullptr;
        const double w =
            colon == std::string::npos ? -1 : std::strtod(part.c_str() + colon + 1, &end);
        if (colon == std::string::npos || colon == 0 || end == part.c_str() + colon + 1 ||
            *end != '\0' || !(w >= 0)) {
            std::cerr << "--mix: '" << part << "' is not DIR:WEIGHT (a folder, a colon and a "
                      << "weight >= 0)\n";
            std::exit(2);
        }
        m.dirs.push_back(part.substr(0, colon));
        m.weights.push_back(w);
        auto train = list_split(std::filesystem::path(m.dirs.back()) / "train", classes);
        if (o.max_items > 0 && o.max_items < train.size()) {
            std::shuffle(train.begin(), train.end(), pick);
            train.resize(o.max_items);
        }
        m.trains.push_back(std::move(train));
        at = comma + 1;
    }
    std::cout << "mix:";
    for (std::size_t k = 0; k < m.dirs.size(); ++k) {
        std::cout << (k > 0 ? "," : "") << ' ' << m.dirs[k] << " (" << m.trains[k].size()
                  << " images) weight " << m.weights[k];
    }
    std::cout << "; each epoch ends when one runs out" << std::endl;
    return m;
}

/// How the mix draws: the run's seed, one epoch until a folder runs out, this rank's share.
inline ferry::mix_options mix_options_of(const trainer_options& o) {
    return {.seed = o.seed,
            .stop = ferry::mix_stop::first_exhausted,
            .rank = o.rank,
            .world_size = o.world_size};
}

/// The training source: the folders drawn by weight, each shuffled with a seed of its own. Throws
/// `ferry::invalid_argument` for weights that cannot mix (all 0).
inline ferry::source_builder<item> mixed_training_source(const training_mix& m,
                                                         const trainer_options& o) {
    std::vector<ferry::mix_input<item>> inputs;
    for (std::size_t k = 0; k < m.trains.size(); ++k) {
        inputs.emplace_back(m.trains[k], m.weights[k],
                            ferry::mix_source_options{.shuffle = true, .seed = o.seed + k});
    }
    return ferry::mix<item>(std::move(inputs), mix_options_of(o));
}

/// This rank's items in epoch 0 of the mix (every epoch's count is close to it).
inline std::size_t mixed_items(const training_mix& m, const trainer_options& o) {
    std::vector<ferry::mix_sampler::source> sources;
    for (std::size_t k = 0; k < m.trains.size(); ++k) {
        sources.push_back({.size = m.trains[k].size(),
                           .weight = m.weights[k],
                           .options = {.shuffle = true, .seed = o.seed + k}});
    }
    ferry::mix_sampler numbers(std::move(sources), mix_options_of(o));
    auto c = numbers.open(0);
    while (c.next()) {
    }
    return static_cast<std::size_t>(c.position());
}

}  // namespace ferry_examples
