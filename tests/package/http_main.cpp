// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry::http: reads a file it wrote through a file:// URL with
/// read_url, and checks that a missing one throws ferry::http_error naming it, through
/// `find_package(ferry COMPONENTS http)`. No network. Exits non-zero on any mismatch.

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <ferry/http.hpp>

int main() {
    const auto path = std::filesystem::temp_directory_path() /
                      ("ferry-package-http-" + std::to_string(::getpid()) + ".txt");
    const std::string contents = "read over a file:// URL\n";
    {
        std::ofstream out(path, std::ios::binary);
        out << contents;
    }
    const std::string url = "file://" + path.string();
    const ferry::bytes b = ferry::ops::read_url(url);
    std::filesystem::remove(path);
    const bool read_ok = std::string(reinterpret_cast<const char*>(b.data()), b.size()) == contents;
    bool missing_ok = false;
    try {
        (void)ferry::ops::read_url(url);
    } catch (const ferry::http_error& e) {
        missing_ok = std::string(e.what()).find(url) != std::string::npos;
    }
    if (!read_ok || !missing_ok) {
        std::fprintf(stderr, "package test (http): FAILED: %s\n",
                     !read_ok ? "bytes read over file://" : "error for a missing file");
        return 1;
    }
    std::puts("package test (http): ok");
    return 0;
}
