// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry-probe: what to measure — the inputs (a folder or a list file), the sample every setting
/// runs, and the CPUs the machine gives this process.

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "probe.hpp"

namespace fs = std::filesystem;

namespace probe {
namespace {

/// The media kind of a list entry: a path's by its content (else its extension), a URL's by the
/// extension of its path (query and fragment dropped).
media kind_of_entry(const std::string& entry) {
    if (!is_url(entry)) {
        return fs::is_regular_file(entry) ? kind_of_file(entry).kind
                                          : kind_of_extension(lower_extension(entry));
    }
    return kind_of_extension(lower_extension(entry.substr(0, entry.find_first_of("?#"))));
}

/// A cgroup v2 CPU quota (`cpu.max`: "quota period", or "max"), in CPUs rounded up; 0 if none.
int cgroup_cpus() {
    std::ifstream in("/sys/fs/cgroup/cpu.max");
    std::string quota;
    double period = 0;
    if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
    const double cpus = std::stod(quota) / period;
    return cpus > 0 ? static_cast<int>(std::ceil(cpus)) : 0;
}

}  // namespace

bool is_url(std::string_view s) {
    const auto starts_with = [s](std::string_view scheme) {
        return s.size() > scheme.size() &&
               std::equal(scheme.begin(), scheme.end(), s.begin(), [](char a, char b) {
                   return a == std::tolower(static_cast<unsigned char>(b));
               });
    };
    return starts_with("http://") || starts_with("https://") || starts_with("file://");
}

const char* name_of(media m) {
    switch (m) {
        case media::image:
            return "images";
        case media::video:
            return "videos";
        case media::audio:
            return "audio files";
        case media::other:
            break;
    }
    return "files";
}

void find_inputs(const fs::path& where, settings& s) {
    s.files.clear();
    if (fs::is_directory(where)) {
        std::vector<std::pair<fs::path, file_kind>> all;
        for (const auto& e : fs::recursive_directory_iterator(
                 where, fs::directory_options::skip_permission_denied)) {
            if (e.is_regular_file()) all.emplace_back(e.path(), file_kind{});
        }
        // One small read per file: on several threads, as the reads wait on the disk (or a
        // network file system) far more than they compute.
        std::atomic<std::size_t> next{0};
        const auto work = [&] {
            for (std::size_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < all.size();) {
                all[i].second = kind_of_file(all[i].first);
            }
        };
        std::vector<std::thread> readers(std::min<std::size_t>(16, all.size() / 256));
        for (auto& t : readers) t = std::thread(work);
        work();
        for (auto& t : readers) t.join();
        std::sort(all.begin(), all.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        std::map<std::string, std::size_t> formats;
        for (const auto& [path, k] : all) {
            if (k.kind == media::other) continue;
            ++s.found[static_cast<int>(k.kind)];
            ++formats[k.format];
        }
        s.formats.assign(formats.begin(), formats.end());
        int most = 0;
        for (int k = 1; k < 3; ++k) {
            if (s.found[k] > s.found[most]) most = k;
        }
        s.kind = static_cast<media>(most);
        for (const auto& [path, k] : all) {
            if (k.kind == s.kind) {
                s.files.push_back(path.string());
            } else if (k.kind == media::other) {
                s.skipped.push_back({path.string(), k.format});
            } else {
                s.skipped.push_back({path.string(),
                                     std::string("one of the ") + name_of(k.kind) + " (" +
                                         k.format + "); this run measures " + name_of(s.kind) +
                                         ", the kind most files are",
                                     k.kind});
            }
        }
    } else if (fs::is_regular_file(where)) {
        std::ifstream in(where);
        std::string line;
        while (std::getline(in, line)) {
            // Lists written on Windows or by hand: no trailing '\r' or blanks.
            while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
                line.pop_back();
            }
            if (!line.empty() && line[0] != '#') s.files.push_back(line);
        }
        s.kind = s.files.empty() ? media::image : kind_of_entry(s.files.front());
        if (s.kind == media::other) s.kind = media::image;
    }
}

std::vector<std::string> sample_of(const std::vector<std::string>& files, std::size_t n,
                                   std::uint64_t seed) {
    // A partial Fisher-Yates shuffle with mt19937_64 and its raw output (no std::shuffle or
    // distributions, whose results differ between standard libraries).
    std::vector<std::string> v = files;
    std::mt19937_64 rng(seed);
    n = std::min(n, v.size());
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t j = i + static_cast<std::size_t>(rng() % (v.size() - i));
        std::swap(v[i], v[j]);
    }
    v.resize(n);
    return v;
}

std::vector<int> parse_list(const std::string& s) {
    std::vector<int> out;
    std::stringstream in(s);
    std::string part;
    while (std::getline(in, part, ',')) {
        const int v = std::atoi(part.c_str());
        if (v > 0) out.push_back(v);
    }
    return out;
}

int usable_cpus() {
    int cpus = static_cast<int>(std::thread::hardware_concurrency());
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
    if (const int quota = cgroup_cpus(); quota > 0) cpus = std::min(cpus, quota);
    return std::max(1, cpus);
}

}  // namespace probe
