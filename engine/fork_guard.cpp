// SPDX-License-Identifier: Apache-2.0
/// \file
/// The fork checks: see fork_guard.hpp.
#include "fork_guard.hpp"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <string>

#include "ferry/error.hpp"

namespace ferry::detail {
namespace {

/// This process built a pipeline: its threads (and oneTBB's) would not survive a fork.
std::atomic<bool> built{false};
/// This process was forked from one that had built a pipeline.
std::atomic<bool> forked_after_build{false};

/// pthread_atfork's child handler: runs in the child, before fork() returns there.
void on_fork_child() noexcept {
    fork_generation_count.fetch_add(1, std::memory_order_relaxed);
    if (built.load(std::memory_order_relaxed)) {
        forked_after_build.store(true, std::memory_order_relaxed);
    }
}

constexpr const char* how_to_fork =
    "start child processes with the 'spawn' or 'forkserver' method (Python: "
    "multiprocessing.set_start_method, or a DataLoader's multiprocessing_context), or build "
    "ferry's pipelines only in processes that fork no more";

}  // namespace

void check_build_after_fork() {
    if (forked_after_build.load(std::memory_order_relaxed)) {
        throw invalid_argument(
            std::string("ferry: this process was forked after its parent built a pipeline, and "
                        "oneTBB's worker threads do not survive fork(): no pipeline can run "
                        "here; ") +
            how_to_fork);
    }
    static std::once_flag registered;
    std::call_once(registered, [] { pthread_atfork(nullptr, nullptr, &on_fork_child); });
    built.store(true, std::memory_order_relaxed);
}

void throw_forked(const char* call) {
    throw invalid_argument(std::string("ferry: pipeline::") + call +
                           " in a process forked after the pipeline was built: its threads "
                           "stayed in the parent; " +
                           how_to_fork);
}

}  // namespace ferry::detail
