// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry's exception hierarchy: one root (`ferry::error`), a small fixed set of codes.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

#include "ferry/export.hpp"

namespace ferry {

/// The small, fixed set of error codes every `ferry::error` carries.
enum class errc : std::uint8_t {
    stage_failed = 1,      ///< a pipeline stage threw and its policy said fail
    io = 2,                ///< reading or writing storage failed
    decode = 3,            ///< media could not be decoded (corrupt, truncated, unsupported)
    invalid_argument = 4,  ///< a caller passed options or input that cannot work
    cancelled = 5,         ///< work was stopped before it finished
    cuda = 6,              ///< the CUDA runtime reported an error or no device exists
    internal = 7,          ///< a bug in ferry; please report it
    timeout = 8,           ///< a call ran past its stage's `timeout`
};

/// The name of an error code, e.g. `"stage_failed"`.
[[nodiscard]] FERRY_API const char* to_string(errc code) noexcept;

/// Root of every exception ferry throws: a `std::runtime_error` with an `errc` code.
class FERRY_API error : public std::runtime_error {
  public:
    /// `transient()` follows the code: true for `io` and `cuda`, false for the others.
    error(errc code, const std::string& what)
        : error(code, what, code == errc::io || code == errc::cuda) {}
    error(errc code, const std::string& what, bool transient)
        : std::runtime_error(what), code_(code), transient_(transient) {}
    [[nodiscard]] errc code() const noexcept { return code_; }
    /// Whether the same call might succeed if tried again: true for a failure that can pass (an
    /// HTTP 503 or 429, a timeout, a reset connection, EIO), false for one that will not (a
    /// missing file, a permission, an HTTP 404, a corrupt image, an invalid argument).
    /// `ferry::retry` tries again only after transient failures (see `ferry::is_transient`).
    [[nodiscard]] bool transient() const noexcept { return transient_; }

    /// How long the other side asked to be left alone before a retry (an HTTP `Retry-After`);
    /// 0: nothing asked. `ferry::retry` waits at least this long before the next attempt.
    [[nodiscard]] std::chrono::milliseconds retry_after() const noexcept { return retry_after_; }
    /// Sets `retry_after()` (for code that throws: e.g. `read_url` from a `Retry-After` header).
    void set_retry_after(std::chrono::milliseconds wait) noexcept { retry_after_ = wait; }

  private:
    errc code_;
    bool transient_;
    std::chrono::milliseconds retry_after_{0};
};

/// Storage could not be read: missing file, permission, short read, stalled read.
class FERRY_API io_error : public error {
  public:
    /// `transient`: whether reading again might succeed (default true; false for a missing
    /// file, a permission, a directory, ...).
    explicit io_error(const std::string& what, bool transient = true)
        : error(errc::io, what, transient) {}
};

/// Media bytes could not be decoded: corrupt, truncated, unsupported, over a size limit.
class FERRY_API decode_error : public error {
  public:
    explicit decode_error(const std::string& what) : error(errc::decode, what) {}
};

/// Options or input that cannot work, e.g. `batch(0)` or an `in_flight` too small for a batch.
class FERRY_API invalid_argument : public error {
  public:
    explicit invalid_argument(const std::string& what) : error(errc::invalid_argument, what) {}
};

/// A stage's call ran longer than its `stage_options::timeout`. Transient: a retry may succeed.
/// Reads like `stage 'fetch' timed out on item 523 after 2000 ms (its timeout)`; under the `fail`
/// policy it arrives as the nested cause of a `ferry::stage_error`.
class FERRY_API timeout_error : public error {
  public:
    timeout_error(std::string stage, std::uint64_t item, std::chrono::milliseconds limit)
        : error(errc::timeout,
                "stage '" + stage + "' timed out on item " + std::to_string(item) + " after " +
                    std::to_string(limit.count()) + " ms (its timeout)",
                true),
          stage_(std::move(stage)),
          item_(item),
          limit_(limit) {}
    /// The stage whose call ran too long.
    [[nodiscard]] const std::string& stage() const noexcept { return stage_; }
    /// Source index (within its epoch) of the item the call was working on.
    [[nodiscard]] std::uint64_t item() const noexcept { return item_; }
    /// The stage's `timeout`.
    [[nodiscard]] std::chrono::milliseconds limit() const noexcept { return limit_; }

  private:
    std::string stage_;
    std::uint64_t item_;
    std::chrono::milliseconds limit_;
};

/// A pipeline stage failed under the `fail` policy (or exhausted its failure budget).
///
/// `what()` reads like `stage 'decode' failed on item 17 ('data/a.jpg'): <cause>`; the cause is
/// nested
/// (`std::rethrow_if_nested(e)` or `nested_ptr()`), so its type survives:
/// \code
///   try { for (auto& x : pipe) use(x); }
///   catch (const ferry::stage_error& e) {
///       std::cerr << e.stage() << " " << e.item() << ": " << e.cause() << '\n';
///   }
/// \endcode
class FERRY_API stage_error : public error, public std::nested_exception {
  public:
    /// Must be constructed inside a catch block: it captures the current exception as the cause.
    /// `input`: the failed source item's description (`ferry::failure::input`), if any.
    stage_error(std::string stage, std::uint64_t item, std::uint64_t items, std::string cause,
                std::string what, std::string input = {})
        : error(errc::stage_failed, what),
          stage_(std::move(stage)),
          item_(item),
          items_(items),
          cause_(std::move(cause)),
          input_(std::move(input)) {}

    /// Name of the stage that failed (`"decode"`, or `"map#2"` when unnamed).
    [[nodiscard]] const std::string& stage() const noexcept { return stage_; }
    /// Source index (0-based, within the epoch) of the item that failed; for a batch, its first.
    [[nodiscard]] std::uint64_t item() const noexcept { return item_; }
    /// How many source items the failed element stood for (1, or a batch's size).
    [[nodiscard]] std::uint64_t items() const noexcept { return items_; }
    /// The original exception's message.
    [[nodiscard]] const std::string& cause() const noexcept { return cause_; }
    /// The failed source item's path, URL or `describe` text (`ferry::failure::input`); empty
    /// when the source's elements are not described.
    [[nodiscard]] const std::string& input() const noexcept { return input_; }

  private:
    std::string stage_;
    std::uint64_t item_;
    std::uint64_t items_;
    std::string cause_;
    std::string input_;
};

/// The default test of `ferry::retry`: whether a failed call is worth another attempt.
/// `e.transient()` for a `ferry::error` (a `stage_error`: its nested cause's); true for any other
/// exception, whose type says nothing about it.
[[nodiscard]] FERRY_API bool is_transient(const std::exception& e) noexcept;

/// Whether an `errno` value from a read describes a failure that can pass (EIO, EINTR, EAGAIN,
/// ETIMEDOUT, ESTALE, ENOMEM, EMFILE, ...) rather than one that will not (ENOENT, EACCES, EPERM,
/// EISDIR, ENOTDIR, ELOOP, ENAMETOOLONG, EINVAL, ...). For `io_error`s of your own reads.
[[nodiscard]] FERRY_API bool transient_errno(int err) noexcept;

/// The message of any exception pointer (`what()` for std::exception, a fixed text otherwise),
/// safe to print: the credentials of any URL in it `REDACTED` and control characters escaped
/// (`detail::redact_text`). The engine makes every failure's message with it.
[[nodiscard]] FERRY_API std::string describe(const std::exception_ptr& e);

}  // namespace ferry
