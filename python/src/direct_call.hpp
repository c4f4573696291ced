// SPDX-License-Identifier: Apache-2.0
/// \file
/// Waiting from Python for work on another thread, interruptible by Ctrl-C: a native op called
/// directly (`op(x)`), and `http.Client.fetch`.
#pragma once

#include <chrono>
#include <functional>

#include "value.hpp"

namespace ferry::python {

/// Waits, with the GIL released, until `ended(slice)` (which waits up to `slice` for the work to
/// end) says the work has ended, running Python's signal handlers between 50 ms slices; the
/// caller holds the GIL. A handler's exception (KeyboardInterrupt) calls `cancel()` once, stays
/// set while the work ends, and is raised then (`py::error_already_set`).
void wait_interruptibly(const std::function<bool(std::chrono::milliseconds)>& ended,
                        const std::function<void()>& cancel);

/// Runs `fn` (a native op on its input) for a direct call from Python; the caller holds the GIL.
/// On Python's main thread, where signals are handled, `fn` runs on a thread of its own while
/// this one waits with the GIL released and looks for a signal every 50 ms: Ctrl-C sets the
/// call's stop flag (`this_call::stop_requested()`, which ferry's blocking ops honour within
/// about 50 ms: `read_url`, `read_file` on a FIFO, video and audio demuxing and decoding), and
/// KeyboardInterrupt is raised once the call has ended. On any other thread, `fn` runs inline
/// with the GIL released. `fn`'s exception propagates.
[[nodiscard]] value call_interruptibly(std::function<value()> fn);

}  // namespace ferry::python
