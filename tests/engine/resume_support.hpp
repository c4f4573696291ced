// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the resume suites share (resume.cpp, resume_sources.cpp): a pipeline run without a
/// break against runs broken at many points, saved, parsed and resumed, and the sources and
/// maps they use.
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cctype>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "engine/cost_groups.hpp"
#include "ferry/mixing.hpp"
#include "support.hpp"

namespace resume_test {

using namespace ferry_test;

inline constexpr int epochs = 2;

/// One output as text: an int, or a batch of them.
inline std::string text(int x) {
    return std::to_string(x);
}
inline std::string text(const std::vector<int>& b) {
    std::string out = "[";
    for (const int x : b) out += std::to_string(x) + ",";
    return out + "]";
}

/// A pipeline of some shape, built with `options`.
using factory = std::function<ferry::pipeline<std::string>(const ferry::pipeline_options&)>;

/// Every output of `epochs` epochs from the start.
inline std::vector<std::string> uninterrupted(const factory& make) {
    auto p = make({.threads = 2});
    std::vector<std::string> out;
    for (int e = 0; e < epochs; ++e) {
        for (auto& x : p) out.push_back(x);
    }
    return out;
}

/// The outputs of a run that stops after `at` outputs, saves its state as text, and of a new
/// pipeline resumed from it, to the end of epoch `epochs - 1`.
inline std::vector<std::string> interrupted(const factory& make, std::size_t at) {
    std::vector<std::string> out;
    std::string saved;
    {
        auto p = make({.threads = 2});
        for (int e = 0; e < epochs && out.size() < at; ++e) {
            for (auto& x : p) {
                out.push_back(x);
                if (out.size() == at) {
                    // Inside the loop: leaving it abandons the epoch, and the state would be
                    // the next one's start.
                    saved = p.state().serialize();
                    break;
                }
            }
        }
    }
    const auto st = ferry::pipeline_state::parse(saved);
    BOOST_TEST(st.serialize() == saved);
    auto p = make({.threads = 2, .resume_from = st});
    for (auto e = st.epoch(); e < static_cast<std::uint64_t>(epochs); ++e) {
        for (auto& x : p) out.push_back(x);
    }
    return out;
}

/// Each number in `t` divided by 1000: `noisy`'s outputs as the items they came from.
inline std::string without_noise(const std::string& t) {
    std::string out;
    for (std::size_t i = 0; i < t.size();) {
        if (t[i] == '-' || std::isdigit(static_cast<unsigned char>(t[i]))) {
            std::size_t used = 0;
            const long v = std::stol(t.substr(i), &used);
            out += std::to_string(v / 1000);
            i += used;
        } else {
            out += t[i++];
        }
    }
    return out;
}

/// Same outputs whatever the break point: about `points` of them, spread over the run, plus
/// the first and the last output. The uninterrupted run itself is first checked against `want`,
/// worked out without ferry (each output through `key` first, e.g. `without_noise`): a run that
/// is wrong the same way before and after a break fails there.
inline void check_resume(const std::string& what, const factory& make,
                         const std::vector<std::string>& want,
                         std::string (*key)(const std::string&) = nullptr,
                         std::size_t points = 24) {
    const auto whole = uninterrupted(make);
    std::vector<std::string> keys;
    for (const auto& x : whole) keys.push_back(key ? key(x) : x);
    BOOST_TEST(keys == want, what << ": " << boost::test_tools::per_element());
    BOOST_TEST_REQUIRE(whole.size() > 4U);
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < points; ++i) at.push_back(1 + i * (whole.size() - 1) / points);
    at.push_back(whole.size() - 1);
    at.push_back(whole.size());  // the last output: the state is the next epoch's start
    for (const auto k : at) {
        BOOST_TEST_CONTEXT(what << ", break after output " << k << " of " << whole.size()) {
            const auto got = interrupted(make, k);
            BOOST_TEST(got == whole, boost::test_tools::per_element());
        }
    }
}

/// `items` of each epoch in `epochs` (outer), as text, in batches of `n` when `n` > 0.
inline std::vector<std::string> texts(const std::vector<std::vector<int>>& epochs,
                                      std::size_t n = 0) {
    std::vector<std::string> out;
    for (const auto& items : epochs) {
        if (n == 0) {
            for (const int x : items) out.push_back(text(x));
            continue;
        }
        for (std::size_t i = 0; i < items.size(); i += n) {
            out.push_back(text(std::vector<int>(
                items.begin() + static_cast<std::ptrdiff_t>(i),
                items.begin() + static_cast<std::ptrdiff_t>(std::min(items.size(), i + n)))));
        }
    }
    return out;
}

/// The words of `spaced`: expected sequences written out by hand ("b0 a0 b1").
inline std::vector<std::string> words(const std::string& spaced) {
    std::vector<std::string> out;
    std::string w;
    for (const char c : spaced + " ") {
        if (c != ' ') {
            w += c;
        } else if (!w.empty()) {
            out.push_back(w);
            w.clear();
        }
    }
    return out;
}

inline std::vector<int> iota_vec(int n) {
    std::vector<int> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), 0);
    return v;
}

/// Expects `f` to throw an `E` whose message says `says`.
template <class E, class F>
inline void expect_saying(F&& f, const std::string& says) {
    const auto e = expect_throw<E>(std::forward<F>(f), says);
    BOOST_TEST(e.what().find(says) != std::string::npos,
               "'" << e.what() << "' does not say '" << says << "'");
}

/// A map that fails (skipped) on some items, and a random draw per item from item_rng.
inline int noisy(int x, const ferry::item_info& info) {
    if (x % 11 == 5) throw ferry::decode_error("bad item " + std::to_string(x));
    auto rng = ferry::item_rng(info);
    return x * 1000 + static_cast<int>(rng() % 1000);
}

/// A positioned epoch factory: epoch e yields 0..n-1 in an order of its own (a rotation by
/// 7e), and `(e, position)` the same from its position on; it records each call.
struct positioned_numbers {
    int n = 0;
    std::shared_ptr<std::vector<std::string>> calls = std::make_shared<std::vector<std::string>>();

    std::vector<int> operator()(std::uint64_t epoch) const {
        calls->push_back(std::to_string(epoch));
        return numbers(epoch);
    }
    std::vector<int> operator()(std::uint64_t epoch, std::uint64_t position) const {
        calls->push_back(std::to_string(epoch) + "@" + std::to_string(position));
        auto v = numbers(epoch);
        v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(
                                           std::min<std::uint64_t>(position, v.size())));
        return v;
    }
    [[nodiscard]] std::vector<int> numbers(std::uint64_t epoch) const {
        std::vector<int> v(static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i)
            v[static_cast<std::size_t>(i)] = (i + 7 * static_cast<int>(epoch)) % n;
        return v;
    }
};

/// Epoch `epoch` of a mix over `numbers`, worked out from the numbers alone, with source k's
/// item i standing as 1000 * k + i (`numbered_source`).
inline std::vector<int> mixed_items(const std::vector<ferry::mix_sampler::source>& numbers,
                                    const ferry::mix_options& o, std::uint64_t epoch) {
    ferry::mix_sampler m(numbers, o);
    std::vector<int> out;
    auto c = m.open(epoch);
    while (auto p = c.next()) {
        out.push_back(1000 * static_cast<int>(p->source) + static_cast<int>(p->index));
    }
    return out;
}

/// Source k of such a mix: 1000 * k + i for i below `size`.
inline std::vector<int> numbered_source(int k, int size) {
    std::vector<int> v(static_cast<std::size_t>(size));
    for (int i = 0; i < size; ++i) v[static_cast<std::size_t>(i)] = 1000 * k + i;
    return v;
}

/// The batches batch_by makes of `items`: windows of `buffer`, each grouped by `cost`.
template <class Cost>
std::vector<std::vector<int>> by_cost(const std::vector<int>& items, Cost cost,
                                      const std::vector<double>& bounds, double max_cost,
                                      std::size_t buffer) {
    std::vector<std::vector<int>> out;
    for (std::size_t w = 0; w < items.size(); w += buffer) {
        const std::size_t end = std::min(items.size(), w + buffer);
        std::vector<double> costs;
        for (std::size_t i = w; i < end; ++i) costs.push_back(cost(items[i]));
        for (const auto& g : ferry::detail::group_by_cost(costs, bounds, max_cost).batches) {
            out.emplace_back();
            for (const std::size_t i : g) out.back().push_back(items[w + i]);
        }
    }
    return out;
}

}  // namespace resume_test
