// SPDX-License-Identifier: Apache-2.0
/// \file
/// A native op called directly from Python (`op(x)`), interruptible by Ctrl-C.
#pragma once

#include <functional>

#include "value.hpp"

namespace ferry::python {

/// Runs `fn` (a native op on its input) for a direct call from Python; the caller holds the GIL.
/// On Python's main thread, where signals are handled, `fn` runs on a thread of its own while
/// this one waits with the GIL released and looks for a signal every 50 ms: Ctrl-C sets the
/// call's stop flag (`this_call::stop_requested()`, which ferry's blocking ops honour within
/// about 50 ms: `read_url`, `read_file` on a FIFO, video and audio demuxing and decoding), and
/// KeyboardInterrupt is raised once the call has ended. On any other thread, `fn` runs inline
/// with the GIL released. `fn`'s exception propagates.
[[nodiscard]] value call_interruptibly(std::function<value()> fn);

}  // namespace ferry::python
