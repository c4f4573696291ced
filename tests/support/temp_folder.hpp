// SPDX-License-Identifier: Apache-2.0
/// \file
/// The one temporary-folder helper, for every suite: a fresh folder of its own under the
/// system's temporary folder, removed with everything in it when the object goes:
/// \code
///   #include "../support/temp_folder.hpp"
///   const ferry_test::temp_folder dir("ferry-cache-epochs");
///   const auto file = dir.write("a.bin", bytes);  // dir.path() / "a.bin"
///   ferry::cache_options o{.folder = dir / "cache"};
/// \endcode
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace ferry_test {

/// A fresh, empty folder `<prefix>-<pid>-<n>-<random>` under `temp_directory_path()`, unique
/// within the process (a counter) and across processes (the pid, a random number), so that
/// cases, suites and concurrent test runs never share one; removed, with what it holds, by the
/// destructor.
class temp_folder {
  public:
    explicit temp_folder(std::string_view prefix = "ferry-test") {
        static std::atomic<unsigned> counter{0};
        std::random_device random;
        path_ = std::filesystem::temp_directory_path() /
                (std::string(prefix) + "-" + std::to_string(::getpid()) + "-" +
                 std::to_string(counter++) + "-" + std::to_string(random()));
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~temp_folder() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_folder(const temp_folder&) = delete;
    temp_folder& operator=(const temp_folder&) = delete;

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    /// The path of `name` inside the folder (nothing is created).
    [[nodiscard]] std::filesystem::path operator/(const std::filesystem::path& name) const {
        return path_ / name;
    }
    /// Writes `contents` as the file `name` inside the folder and returns its path.
    std::filesystem::path write(const std::filesystem::path& name,
                                std::span<const std::uint8_t> contents) const {
        return write_file(path_ / name, contents.data(), contents.size());
    }
    /// Writes `contents` as the file `name` inside the folder and returns its path.
    std::filesystem::path write(const std::filesystem::path& name,
                                std::string_view contents) const {
        return write_file(path_ / name, contents.data(), contents.size());
    }

  private:
    static std::filesystem::path write_file(const std::filesystem::path& p, const void* data,
                                            std::size_t size) {
        std::ofstream f(p, std::ios::binary);
        f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
        if (!f) throw std::runtime_error("could not write " + p.string());
        return p;
    }

    std::filesystem::path path_;
};

}  // namespace ferry_test
