// SPDX-License-Identifier: Apache-2.0
/// \file
/// The Python thread states of the threads the interpreter did not start (engine threads, I/O
/// threads): made once per thread and kept, instead of made and deleted at every call.
#pragma once

#include <Python.h>

#include <cstddef>

namespace ferry::python {

/// `PyGILState_Ensure`, but a thread without a Python thread state keeps the one it gets here
/// until it ends: the matching `PyGILState_Release` only releases the GIL. Making and deleting a
/// thread state per call (what `PyGILState_Ensure` does on such a thread) was most of a trivial
/// Python stage's cost per item, and lost whatever the call kept in `threading.local()`. A
/// thread that ends hands its state to the next thread that makes one, which deletes it with
/// the GIL held (a thread ending cannot wait for the GIL: whoever joins it may hold it).
PyGILState_STATE gil_ensure() noexcept;

/// At exit (the atexit hook, GIL held, every pipeline closed): no thread keeps a state from
/// here on, and those of threads that ended are deleted. The interpreter's finalization deletes
/// the states of threads still running.
void stop_keeping_thread_states() noexcept;

/// Thread states kept now: those of running threads and of ended ones not deleted yet (tests).
[[nodiscard]] std::size_t kept_thread_states() noexcept;

}  // namespace ferry::python
