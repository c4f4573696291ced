// SPDX-License-Identifier: Apache-2.0
/// \file
/// Quarantine: failed inputs written to a JSON-lines file, and loaded back as an exclusion list.
///
/// A run with `pipeline_options::quarantine` set appends one line per failure to that file:
/// \code
///   {"input": "data/b.jpg", "stage": "decode", "code": "decode", "message": "...",
///    "epoch": 0, "item": 17, "items": 1}
/// \endcode
/// (one line each). The next run loads it and leaves those inputs out; they count as filtered:
/// \code
///   auto pipe = ferry::from(files)
///                   .exclude(ferry::load_quarantine("bad.jsonl"))
///                   .map(ferry::ops::read_file, {.concurrency = 4, .executor = ferry::io})
///                   .map(decode, {.concurrency = 8, .on_error = ferry::skip})
///                   .build({.quarantine = "bad.jsonl"});   // and add this run's failures
/// \endcode
#pragma once

#include <cstddef>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <unordered_set>
#include <utility>

#include "ferry/export.hpp"
#include "ferry/failure.hpp"

namespace ferry {

/// A set of source item descriptions (`ferry::failure::input`) to leave out of a run; see
/// `ferry::load_quarantine` and `ferry::source_builder::exclude`.
/// \code
///   ferry::quarantine_list bad{"data/b.jpg", "data/c.jpg"};
///   bad.insert("data/d.jpg");
/// \endcode
class quarantine_list {
  public:
    quarantine_list() = default;
    quarantine_list(std::initializer_list<std::string> inputs) : inputs_(inputs) {}

    /// Adds one input (a path, a URL, a `describe` text). An empty one names nothing: ignored.
    void insert(std::string input) {
        if (!input.empty()) inputs_.insert(std::move(input));
    }
    /// Whether `input` is on the list.
    [[nodiscard]] bool contains(const std::string& input) const {
        return inputs_.find(input) != inputs_.end();
    }
    /// Distinct inputs on the list.
    [[nodiscard]] std::size_t size() const noexcept { return inputs_.size(); }
    [[nodiscard]] bool empty() const noexcept { return inputs_.empty(); }

  private:
    std::unordered_set<std::string> inputs_;
};

/// Reads a quarantine file (JSON lines, as `pipeline_options::quarantine` writes them) into the
/// list of its distinct `"input"` values; blank lines and lines with an empty input (failures
/// with no source item, e.g. of the source itself) are skipped, other fields are not needed.
/// Throws `ferry::io_error` when the file cannot be read, and `ferry::invalid_argument` naming
/// the file, the line number and what is wrong with a line that is not a JSON object with a
/// string `"input"`.
/// \code
///   ferry::quarantine_list bad = ferry::load_quarantine("bad.jsonl");
/// \endcode
[[nodiscard]] FERRY_API quarantine_list load_quarantine(const std::filesystem::path& file);

/// The quarantine file's line for `f` (no newline): a JSON object with `input`, `stage`, `code`
/// (`ferry::to_string(f.code)`), `message`, `epoch`, `item` and `items`. Strings are escaped as
/// JSON requires; a byte that is not part of valid UTF-8 (a path in another encoding) is written
/// as `\udcXX` (Python's surrogateescape), which `load_quarantine` turns back into that byte.
[[nodiscard]] FERRY_API std::string quarantine_line(const failure& f);

}  // namespace ferry
