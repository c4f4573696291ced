// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::sources`: folder listings and list files, read once and sorted.

#include "ferry/sources.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <system_error>

#include "ferry/error.hpp"

namespace ferry::sources {
namespace {

namespace fs = std::filesystem;

char lower(char c) noexcept {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

std::string lowered(std::string s) {
    for (char& c : s) c = lower(c);
    return s;
}

/// Whether `name` ends with one of `endings` (lowercase, each with its dot), ignoring case.
bool has_ending(const std::string& name, const std::vector<std::string>& endings) {
    if (endings.empty()) return true;
    const std::string n = lowered(name);
    return std::any_of(endings.begin(), endings.end(),
                       [&](const std::string& e) { return n.ends_with(e); });
}

std::vector<std::string> normalised(const std::vector<std::string>& extensions) {
    std::vector<std::string> out;
    for (const auto& e : extensions) {
        if (e.empty()) continue;
        out.push_back(lowered(e.front() == '.' ? e : "." + e));
    }
    return out;
}

[[noreturn]] void cannot_list(const char* who, const fs::path& dir, const std::string& why,
                              bool transient) {
    throw io_error(
        std::string("ferry::sources::") + who + ": cannot list '" + dir.string() + "': " + why,
        transient);
}

/// Throws unless `dir` is a folder that exists.
void require_folder(const char* who, const fs::path& dir) {
    std::error_code ec;
    const auto st = fs::status(dir, ec);
    if (st.type() == fs::file_type::not_found) cannot_list(who, dir, "no such folder", false);
    if (ec) cannot_list(who, dir, ec.message(), false);
    if (st.type() != fs::file_type::directory) cannot_list(who, dir, "not a folder", false);
}

/// Appends the matching regular files under `dir` to `out` (unsorted).
template <class Iterator>
void collect(const char* who, const fs::path& dir, const std::vector<std::string>& endings,
             std::vector<fs::path>& out) {
    std::error_code ec;
    Iterator it(dir, ec);
    for (; !ec && it != Iterator(); it.increment(ec)) {
        std::error_code type_ec;
        if (!it->is_regular_file(type_ec)) continue;  // follows links to files
        if (has_ending(it->path().filename().string(), endings)) out.push_back(it->path());
    }
    if (ec) cannot_list(who, dir, ec.message(), true);
}

std::vector<fs::path> list(const char* who, const fs::path& dir,
                           const std::vector<std::string>& extensions, bool recursive) {
    require_folder(who, dir);
    const auto endings = normalised(extensions);
    std::vector<fs::path> out;
    if (recursive) {
        collect<fs::recursive_directory_iterator>(who, dir, endings, out);
    } else {
        collect<fs::directory_iterator>(who, dir, endings, out);
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool blank(const std::string& line) {
    return line.find_first_not_of(" \t") == std::string::npos;
}

}  // namespace

std::vector<fs::path> files(const fs::path& dir, const files_options& options) {
    return list("files", dir, options.extensions, options.recursive);
}

labelled_files image_folder(const fs::path& dir, const image_folder_options& options) {
    require_folder("image_folder", dir);
    std::vector<std::string> classes;
    std::error_code ec;
    fs::directory_iterator it(dir, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
        std::error_code type_ec;
        if (it->is_directory(type_ec)) classes.push_back(it->path().filename().string());
    }
    if (ec) cannot_list("image_folder", dir, ec.message(), true);
    std::sort(classes.begin(), classes.end());

    std::vector<labelled_file> items;
    for (std::size_t c = 0; c < classes.size(); ++c) {
        for (auto& p :
             list("image_folder", dir / classes[c], options.extensions, options.recursive)) {
            items.push_back({std::move(p), static_cast<int>(c)});
        }
    }
    return {std::move(items), std::move(classes)};
}

std::vector<std::string> lines(const fs::path& path) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        throw io_error("ferry::sources::lines: cannot read '" + path.string() + "': a folder",
                       false);
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        const bool missing = !fs::exists(path, ec);
        throw io_error("ferry::sources::lines: cannot read '" + path.string() +
                           (missing ? "': no such file" : "': cannot open it"),
                       false);
    }
    std::vector<std::string> out;
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!blank(line)) out.push_back(std::move(line));
    }
    if (in.bad()) {
        throw io_error("ferry::sources::lines: reading '" + path.string() + "' failed");
    }
    return out;
}

}  // namespace ferry::sources
