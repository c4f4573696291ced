// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry-probe's shared pieces: what it measures (settings, trials) and the helpers its files
/// provide (finding and sampling the inputs, the machine's CPUs, the JSON report).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ferry/ferry.hpp"
#include "ferry/image.hpp"

namespace probe {

enum class media { image, video, audio, other };

/// What a file is, from its first bytes (see `kind_of_file`).
struct file_kind {
    media kind = media::other;  ///< `other`: not something ferry-probe measures
    std::string format;         ///< e.g. "jpeg", "mpeg program stream"; for `other`, why not
};

/// A file found but not measured, and why.
struct skipped_file {
    std::string path;
    std::string why;
    media kind = media::other;  ///< a video, say, where images are measured; else `other`
};

/// What every setting runs: the same items, in the same order.
struct settings {
    std::vector<std::string> files;     ///< everything found of `kind` (paths and URLs)
    std::vector<skipped_file> skipped;  ///< files found but not measured (a folder only)
    std::size_t found[3] = {};          ///< images, videos and audio files found (a folder)
    std::vector<std::pair<std::string, std::size_t>> formats;  ///< files of each format found
    std::vector<std::string> sample;  ///< the seeded sample of `files` every setting cycles over
    double seconds = 3;
    std::uint64_t items = 0;  ///< items per setting (0: the first setting's whole passes)
    int threads = 0;
    ferry::image_size resize{224, 224};
    int batch = 32;
    media kind = media::image;
    int frames = 8;
    bool recommend = false;  ///< one run with tuned stages instead of the sweep
};

/// What one setting measured.
struct trial {
    int read = 0;
    int decode = 0;
    double seconds = 0;
    std::uint64_t items = 0;   ///< source items it ran (the same for every setting)
    std::uint64_t digest = 0;  ///< FNV-1a of the inputs in the order the source gave them
    std::uint64_t images = 0;  ///< files decoded (images, videos or audio files)
    std::uint64_t units = 0;   ///< frames (video) or samples (audio)
    std::uint64_t bytes = 0;
    std::uint64_t failed = 0;
    ferry::pipeline_stats stats;
    std::vector<ferry::failure> failures;
    [[nodiscard]] double images_per_s() const { return seconds > 0 ? images / seconds : 0; }
    [[nodiscard]] double mb_per_s() const { return seconds > 0 ? bytes / seconds / 1e6 : 0; }
    [[nodiscard]] double units_per_s() const { return seconds > 0 ? units / seconds : 0; }
};

// probe_sniff.cpp
/// What `head` (a file's first bytes, up to 4 KiB) says the file is: an image ferry decodes, a
/// video or audio file FFmpeg reads, or (`other`) a recognised format ferry does not decode
/// (`format` says which) or nothing recognised (`format` empty). `ext` (lower case, with the
/// dot) only decides between video and audio where the container holds either.
[[nodiscard]] file_kind sniff(std::span<const unsigned char> head, std::string_view ext);
/// The kind a file's extension names (lower case, with the dot); `other` for none.
[[nodiscard]] media kind_of_extension(std::string_view ext);
/// A path's extension in lower case.
[[nodiscard]] std::string lower_extension(const std::filesystem::path& p);
/// What the file at `p` is: `sniff` of its first 4 KiB; where they are not recognised, the
/// kind its extension names (a damaged file is then measured as a failed decode); else `other`
/// with the reason (empty, unrecognised content and its first bytes, cannot be opened).
[[nodiscard]] file_kind kind_of_file(const std::filesystem::path& p);

// probe_inputs.cpp
[[nodiscard]] bool is_url(std::string_view s);
[[nodiscard]] const char* name_of(media m);
/// A folder's files of the kind most of them are (images, videos or audio, by content: see
/// `kind_of_file`), sorted, with the others in `s.skipped` (each with its reason) and the counts
/// per kind and format in `s.found` and `s.formats`; or a list file's entries (paths and URLs),
/// in list order, of the kind its first entry is. Sets `s.files` and `s.kind`.
void find_inputs(const std::filesystem::path& where, settings& s);
/// Up to `n` of `files`, chosen and ordered by `seed` alone (the same on every run and machine):
/// a uniform sample, so that a sorted list's prefix (one class, one size) does not stand for all.
[[nodiscard]] std::vector<std::string> sample_of(const std::vector<std::string>& files,
                                                 std::size_t n, std::uint64_t seed);
/// "1,2,4" -> {1, 2, 4} (non-positive entries dropped).
[[nodiscard]] std::vector<int> parse_list(const std::string& s);
/// The CPUs this process may run on: its affinity mask, capped by a cgroup CPU quota.
[[nodiscard]] int usable_cpus();

// probe_json.cpp
/// Prints the whole sweep as one JSON object: the settings, each trial with its pipeline stats
/// as fields (per stage), the best setting, and every failed input (with its stage and cause).
void print_json(const settings& s, std::size_t urls, const std::vector<trial>& trials,
                const trial& best);
/// The distinct failed inputs over all trials, the first failure of each.
[[nodiscard]] std::vector<ferry::failure> failed_inputs(const std::vector<trial>& trials);

}  // namespace probe
