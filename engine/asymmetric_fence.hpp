// SPDX-License-Identifier: Apache-2.0
/// \file
/// An asymmetric barrier: a fence that costs nothing on the hot side (a compiler fence) and a
/// system call on the rare side (Linux `membarrier`), as folly's asymmetricLightBarrier /
/// asymmetricHeavyBarrier and liburcu's "membarrier" flavour.
///
/// Why it is correct: `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` returns only after every
/// other running thread of the process has executed a full memory barrier (an IPI), and a thread
/// that is not running passes one when it is scheduled. So in a Dekker pairing
///
///     hot side:   store A; light_fence(); load B        rare side:   store B; heavy_fence(); load
///     A
///
/// the hot side's `store A; load B` (kept in program order by the compiler fence) fall either
/// wholly before the barrier the IPI forces on its core, so the rare side's load of A (after the
/// call returned) sees A, or the load of B falls after it, and sees B. One of the two sides sees
/// the other's store: the guarantee a `seq_cst` store and load on both sides gives, without the
/// hot side's full fence.
///
/// Where the kernel lacks the command (before 4.14), a seccomp filter forbids it, or the system is
/// not Linux, `asymmetric_fence_ready()` is false, once for the process, and callers keep their
/// `seq_cst` path. TSan does not model `membarrier`: callers must add no non-atomic access that
/// only the barrier orders (the hand-off orders only its own atomics with it).
#pragma once

#include <atomic>
#include <exception>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace ferry::detail {

/// Whether `asymmetric_heavy_fence` is available: registers the process for private expedited
/// membarrier on the first call (thread-safe), and gives the same answer on every later call.
inline bool asymmetric_fence_ready() noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
    static const bool ready = [] {
        const long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
        if (commands < 0 || (commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
        return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
    }();
    return ready;
#else
    return false;
#endif
}

/// The hot side's half: orders the thread's own accesses for the compiler only (no instruction).
/// Correct only while `asymmetric_fence_ready()`.
inline void asymmetric_light_fence() noexcept {
    std::atomic_signal_fence(std::memory_order_seq_cst);
}

/// The rare side's half: a full barrier on every running thread of the process. Only after
/// `asymmetric_fence_ready()` returned true; the command cannot fail once registered, and if it
/// did, the hot sides' light fences would no longer be enough: terminate rather than lose the
/// ordering.
inline void asymmetric_heavy_fence() noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
    if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) std::terminate();
#else
    std::terminate();
#endif
}

}  // namespace ferry::detail
