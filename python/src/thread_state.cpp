// SPDX-License-Identifier: Apache-2.0
/// \file
/// Kept thread states for threads the interpreter did not start: see thread_state.hpp.
#include "thread_state.hpp"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <vector>

namespace ferry::python {
namespace {

/// False once the atexit hook ran: from then on the interpreter's finalization owns the states.
std::atomic<bool> keeping{true};
std::atomic<std::size_t> kept_count{0};

/// The states of threads that ended, for the next thread that takes the GIL to make its own.
/// Never destroyed: a thread may end while the process exits.
std::mutex ended_mutex;
std::vector<PyThreadState*>& ended() {
    static auto* states = new std::vector<PyThreadState*>();
    return *states;
}

/// Deletes the states of threads that ended (the GIL held).
void delete_ended() noexcept {
    std::vector<PyThreadState*> states;
    {
        std::lock_guard lock(ended_mutex);
        states.swap(ended());
    }
    for (PyThreadState* ts : states) {
        PyThreadState_Clear(ts);  // what the call kept there (threading.local's dict)
        PyThreadState_Delete(ts);
        kept_count.fetch_sub(1, std::memory_order_relaxed);
    }
}

/// fork(): the child's copy of the list names states that CPython deletes in the child
/// (PyOS_AfterFork_Child deletes every thread state but the forking thread's), so the child
/// forgets them; the list's lock is held across the fork so that the copy is whole.
void before_fork() noexcept {
    ended_mutex.lock();
}
void after_fork_in_parent() noexcept {
    ended_mutex.unlock();
}
void after_fork_in_child() noexcept {
    ended().clear();
    kept_count.store(0, std::memory_order_relaxed);
    ended_mutex.unlock();
}

/// This thread's kept state; handed over when the thread ends.
struct kept_state {
    PyThreadState* state = nullptr;
    kept_state() = default;
    kept_state(const kept_state&) = delete;
    kept_state& operator=(const kept_state&) = delete;
    ~kept_state() {
        if (state == nullptr || !keeping.load(std::memory_order_acquire)) return;
        std::lock_guard lock(ended_mutex);
        ended().push_back(state);
    }
};
thread_local kept_state kept;

}  // namespace

PyGILState_STATE gil_ensure() noexcept {
    if (kept.state != nullptr || !keeping.load(std::memory_order_acquire) ||
        PyGILState_GetThisThreadState() != nullptr) {
        return PyGILState_Ensure();  // a Python thread, or one that keeps its state already
    }
    static std::once_flag registered;
    std::call_once(registered, [] {
        pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
    });
    // PyGILState_Ensure makes this thread's state (its count at 1) and takes the GIL; a second
    // call only counts (2). The caller's PyGILState_Release brings the count back to 1, which
    // releases the GIL and keeps the state.
    (void)PyGILState_Ensure();
    kept.state = PyThreadState_Get();
    (void)PyGILState_Ensure();
    kept_count.fetch_add(1, std::memory_order_relaxed);
    delete_ended();
    return PyGILState_UNLOCKED;
}

void stop_keeping_thread_states() noexcept {
    keeping.store(false, std::memory_order_release);
    delete_ended();
}

std::size_t kept_thread_states() noexcept {
    return kept_count.load(std::memory_order_relaxed);
}

}  // namespace ferry::python
