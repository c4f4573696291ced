// SPDX-License-Identifier: Apache-2.0
/// \file
/// batch_by_padding: how much padding batching by cost saves on a real length distribution.
///
/// The samples are the paragraphs (blank-line separated) of every file under a folder — by
/// default /usr/share/common-licenses, real English text on every Debian machine — and a
/// sample's cost is its length in words, as a language model's token count would be. Each run
/// batches them in file order, three ways, through ferry pipelines:
///
///     count      .batch(n), n the mean batch size batch_by reaches below
///     by cost    .batch_by(words, {.max_cost = M, .buffer = B})             one bucket
///     bucketed   .batch_by(words, {.max_cost = M, .buckets = {...}, .buffer = B})
///
/// and reports, for each, the batches, the words they hold and what they cost padded to their
/// largest sample (count x largest, what a dense tensor of the batch holds): padding is
/// padded / words - 1. batch_by's figures are its own `stage_stats::cost` and `padded_cost`;
/// count batching's are summed from its batches. No timing: the numbers are the same on every
/// run over the same files.
///
/// Usage: batch_by_padding [--dir D] [--max-cost M] [--buffer B] [--buckets a,b,c]

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <ferry/ferry.hpp>

#include "common/args.hpp"

namespace {

/// Words per paragraph of every regular file under `dir`, files in path order.
std::vector<int> paragraph_lengths(const std::filesystem::path& dir) {
    std::vector<int> out;
    for (const auto& path : ferry::sources::files(dir, {.recursive = true})) {
        std::ifstream in(path);
        std::string line;
        int words = 0;
        while (std::getline(in, line)) {
            std::istringstream split(line);
            std::string w;
            int here = 0;
            while (split >> w) ++here;
            if (here == 0 && words > 0) {
                out.push_back(words);
                words = 0;
            }
            words += here;
        }
        if (words > 0) out.push_back(words);
    }
    return out;
}

struct row {
    const char* name;
    std::size_t batches = 0;
    double words = 0;
    double padded = 0;
};

void print(const row& r) {
    std::printf("| %s | %zu | %.0f | %.0f | %.1f%% |\n", r.name, r.batches, r.words, r.padded,
                100.0 * (r.padded / r.words - 1.0));
}

}  // namespace

int main(int argc, char** argv) {
    std::filesystem::path dir = "/usr/share/common-licenses";
    double max_cost = 2048;
    std::size_t buffer = 512;
    std::vector<double> buckets{16, 32, 64, 128, 256};
    ferry_perf::options opt(
        argc, argv,
        "usage: batch_by_padding [--dir D] [--max-cost M] [--buffer B] [--buckets a,b,c]");
    while (opt.next()) {
        const std::string_view flag = opt.name();
        if (flag == "--dir") {
            dir = opt.value();
        } else if (flag == "--max-cost") {
            max_cost = opt.number();
        } else if (flag == "--buffer") {
            buffer = opt.integer<std::size_t>();
        } else if (flag == "--buckets") {
            buckets = opt.list<double>();
        } else {
            opt.unknown();
        }
    }
    const auto lengths = paragraph_lengths(dir);
    if (lengths.empty()) {
        std::fprintf(stderr, "batch_by_padding: no text under %s\n", dir.c_str());
        return 1;
    }
    const auto words = [](int n) { return n; };
    const auto by_cost = [&](const char* name, std::vector<double> bounds) {
        auto pipe = ferry::from(lengths)
                        .batch_by(words, {.max_cost = max_cost,
                                          .buckets = std::move(bounds),
                                          .buffer = buffer,
                                          .name = name})
                        .build();
        row r{name};
        for (const auto& b : pipe) r.batches += b.empty() ? 0 : 1;
        for (const auto& s : pipe.stats().stages) {
            if (s.name == name) {
                r.words = s.cost;
                r.padded = s.padded_cost;
            }
        }
        return r;
    };
    const row plain = by_cost("by cost", {});
    const row bucketed = by_cost("bucketed", buckets);
    const std::size_t n =
        std::max<std::size_t>(1, lengths.size() / std::max<std::size_t>(1, bucketed.batches));
    row count{"count"};
    auto pipe = ferry::from(lengths).batch(n).build();
    for (const auto& b : pipe) {
        ++count.batches;
        for (const int x : b) count.words += x;
        count.padded += static_cast<double>(*std::max_element(b.begin(), b.end())) *
                        static_cast<double>(b.size());
    }
    std::printf(
        "%zu paragraphs under %s, %.0f words (mean %.1f, longest %d); max_cost %.0f, "
        "buffer %zu, batch(%zu)\n\n",
        lengths.size(), dir.c_str(), count.words, count.words / lengths.size(),
        *std::max_element(lengths.begin(), lengths.end()), max_cost, buffer, n);
    std::printf(
        "| batching | batches | words | padded to the largest | padding |\n"
        "|---|---:|---:|---:|---:|\n");
    print(count);
    print(plain);
    print(bucketed);
    std::printf("\nbucketed batch_by pads %.1fx less than count batching\n",
                (count.padded - count.words) / std::max(1.0, bucketed.padded - bucketed.words));
}
