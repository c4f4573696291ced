// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::failure`: one failed item, as `pipeline::failures()` lists it and a quarantine file
/// records it. Part of ferry::core (the engine's failure log and core's quarantine share it).
#pragma once

#include <cstdint>
#include <string>

#include "ferry/error.hpp"

namespace ferry {

/// One failed item: which stage, which source item, why.
/// \code
///   for (const ferry::failure& f : pipe.failures())
///       std::cerr << f.stage << " failed on " << f.input << ": " << f.message << '\n';
/// \endcode
struct failure {
    std::string stage;
    std::uint64_t item = 0;   ///< source index within its epoch (first item of a batch)
    std::uint64_t items = 1;  ///< source items it stood for
    std::uint64_t epoch = 0;
    std::string message;
    /// The cause's code when it was a `ferry::error` (`io`, `decode`, ...), else `stage_failed`.
    errc code = errc::stage_failed;
    /// The source item it is about, as the source described it when it produced the item: the
    /// path or URL of a `std::string`, `std::string_view`, `const char*` or
    /// `std::filesystem::path` element, or of an element's `.path` member (see
    /// `ferry::describable`); what `from(...).describe(f)` returned otherwise; empty when
    /// neither. A batch's is its first item's, a `flat_map` output's its input's. Empty for a
    /// failure of the source itself (there is no item yet; its message names the item before).
    std::string input{};
};

}  // namespace ferry
