// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::bytes`, an owning block of bytes (a file's contents), and `ferry::ops::read_file`.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

#include "ferry/detail/owned_buffer.hpp"
#include "ferry/export.hpp"
#include "ferry/tensor.hpp"

namespace ferry {

/// An owning, contiguous block of bytes: what `read_file` returns and `decode_image` reads.
/// Converts to `std::span<const std::byte>`. Copies copy the bytes; moves are free.
class FERRY_API bytes {
  public:
    bytes() = default;
    /// `size` uninitialised bytes.
    explicit bytes(std::size_t size) : buf_(size) {}
    /// A copy of `data`.
    explicit bytes(std::span<const std::byte> data);
    /// A copy of a string's characters (handy in tests and for small in-memory payloads).
    static bytes from_string(std::string_view s) {
        return bytes(std::as_bytes(std::span<const char>(s.data(), s.size())));
    }

    [[nodiscard]] std::byte* data() noexcept { return buf_.data(); }
    [[nodiscard]] const std::byte* data() const noexcept { return buf_.data(); }
    [[nodiscard]] std::size_t size() const noexcept { return buf_.size(); }
    [[nodiscard]] bool empty() const noexcept { return buf_.size() == 0; }
    [[nodiscard]] std::span<const std::byte> span() const noexcept {
        return {buf_.data(), buf_.size()};
    }
    [[nodiscard]] std::span<std::byte> span() noexcept { return {buf_.data(), buf_.size()}; }
    operator std::span<const std::byte>() const noexcept { return span(); }  // NOLINT: by design
    [[nodiscard]] const std::byte* begin() const noexcept { return buf_.data(); }
    [[nodiscard]] const std::byte* end() const noexcept { return buf_.data() + buf_.size(); }

    /// Keeps the first `n` bytes (`n <= size()`); the memory is not reallocated.
    void truncate(std::size_t n) noexcept { buf_.truncate(n); }

  private:
    detail::owned_buffer<> buf_{};
};

namespace ops {
namespace detail {
struct FERRY_API read_file_fn {
    bytes operator()(const std::filesystem::path& path) const;
};
}  // namespace detail

/// Reads a whole file into memory with `pread` (one allocation, no zero-fill; files whose size
/// is not known up front, such as pipes, are read to their end). Throws `ferry::io_error`
/// naming the path and the system's reason. A pipe or FIFO is read as its writer writes (a FIFO
/// without a writer yet waits for one); inside a stage call that wait ends within about 50 ms
/// of `ferry::this_call::stop_requested()` turning true, with `ferry::error` (`errc::cancelled`,
/// `read_file: '<path>': cancelled: the pipeline is stopping`). A function object, so it can be
/// passed to `map`:
/// \code
///   ferry::from(paths).map(ferry::ops::read_file, {.concurrency = 8, .executor = ferry::io})
/// \endcode
inline constexpr detail::read_file_fn read_file{};
}  // namespace ops

}  // namespace ferry
