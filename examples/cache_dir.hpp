// SPDX-License-Identifier: Apache-2.0
/// \file
/// Where the examples keep generated or unpacked data: one rule, shared by the trainers.
#pragma once

#include <cstdlib>
#include <filesystem>

namespace ferry_examples {

/// `chosen` when set, else `$XDG_CACHE_HOME/ferry`, else `~/.cache/ferry`, else a folder under
/// the system's temporary directory.
inline std::filesystem::path cache_dir(const std::filesystem::path& chosen) {
    namespace fs = std::filesystem;
    if (!chosen.empty()) return chosen;
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    if (xdg != nullptr && *xdg != '\0') return fs::path(xdg) / "ferry";
    const char* home = std::getenv("HOME");
    if (home != nullptr) return fs::path(home) / ".cache" / "ferry";
    return fs::temp_directory_path() / "ferry";
}

}  // namespace ferry_examples
