// SPDX-License-Identifier: Apache-2.0
/// \file
/// fork() and ferry: a child process has none of its parent's threads, so neither oneTBB's
/// workers nor a pipeline's own threads (I/O pools, the monitor) run there. A pipeline built
/// before the fork waits on them for ever, and oneTBB hands a new pipeline's work to workers
/// that do not exist. What is checked here turns those hangs into errors that say why.
#pragma once

#include <atomic>
#include <cstdint>

namespace ferry::detail {

/// The count behind `fork_generation()` (fork_guard.cpp's pthread_atfork handler adds one in
/// each child); read inline, since next() checks it for every element.
inline std::atomic<std::uint64_t> fork_generation_count{0};

/// How many forks led to this process since ferry was loaded (a child counts one more than its
/// parent). A pipeline runs only in the generation that built it.
[[nodiscard]] inline std::uint64_t fork_generation() noexcept {
    return fork_generation_count.load(std::memory_order_relaxed);
}

/// Throws `check_same_process`'s error (out of line: the check itself is inline).
[[noreturn]] void throw_forked(const char* call);

/// For a pipeline being built: throws `ferry::invalid_argument` where this process was forked
/// after its parent built a pipeline (oneTBB's workers did not survive the fork); otherwise
/// notes that one is built, so that a child forked from now on is refused.
void check_build_after_fork();

/// For a call on a pipeline built in generation `built_in`: throws `ferry::invalid_argument`,
/// naming `call`, where that is not this process's generation.
inline void check_same_process(std::uint64_t built_in, const char* call) {
    if (built_in != fork_generation()) throw_forked(call);
}

}  // namespace ferry::detail
