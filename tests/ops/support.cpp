// SPDX-License-Identifier: Apache-2.0
/// \file
/// The ops tests' shared helpers: message checks and temporary directories (see support.hpp).
#include "support.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <fstream>
#include <random>
#include <stdexcept>

namespace ops_test {

bool mentions(std::string_view message, const std::vector<std::string_view>& keywords) {
    std::string lower(message);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return std::any_of(keywords.begin(), keywords.end(),
                       [&](std::string_view k) { return lower.find(k) != std::string::npos; });
}

temp_dir::temp_dir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("ferry_ops_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + "_" +
             std::to_string(rd()));
    std::filesystem::create_directories(path_);
}

temp_dir::~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::filesystem::path temp_dir::write(const std::string& name,
                                      std::span<const std::uint8_t> contents) const {
    const auto p = path_ / name;
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(contents.data()),
            static_cast<std::streamsize>(contents.size()));
    if (!f) throw std::runtime_error("could not write " + p.string());
    return p;
}

}  // namespace ops_test
