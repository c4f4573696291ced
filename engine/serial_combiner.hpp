// SPDX-License-Identifier: Apache-2.0
/// \file
/// serial_combiner: one body at a time over messages that any thread brings, without a task or
/// a lock-free queue of TBB's per message (flat combining).
#pragma once

#include <atomic>

#include "box.hpp"

namespace ferry::detail {

/// Runs a body on each message, one call at a time: a thread that finds the body free runs it on
/// its own message, then on whatever other threads left meanwhile; a thread that finds it busy
/// leaves its message (linked through `box::link`) for the running thread and goes on. What a
/// `serial` function_node does for a short body, without its aggregator (an operation record, a
/// lock-free list and a handler per message) or a task per message: the output node's
/// aggregator was a sixth of the worker's time in perf/engine_overhead at 1 thread. The body must
/// be short, because messages left for a running thread wait for it, and must not throw.
///
/// No message is left behind: a thread that leaves one then tries to take the body over; if it
/// finds it still busy, the running thread's release comes after that attempt, and its check for
/// left messages after the release sees the message (all `seq_cst`, a Dekker pairing). What one
/// call writes happens before the next call reads it (the acquire and release of `busy_`), and
/// what a thread wrote to a message it left happens before the body reads it.
class serial_combiner {
  public:
    template <class Body>
    void run(msg m, Body&& body) noexcept {
        static_assert(noexcept(body(m)), "the body of a serial_combiner must not throw");
        if (busy_.exchange(true)) {
            leave(m);
            if (busy_.exchange(true)) return;  // the running thread will see it
        } else {
            body(m);
        }
        for (;;) {
            if (left_.load(std::memory_order_relaxed) != nullptr) run_left(body);
            busy_.store(false);
            if (left_.load() == nullptr || busy_.exchange(true)) return;
        }
    }

    /// Whether no message waits (after the graph was waited for: always).
    [[nodiscard]] bool empty() const noexcept { return left_.load() == nullptr; }

    /// Forgets left messages (after a cancelled epoch; the pool reclaims their boxes).
    void clear() noexcept {
        left_.store(nullptr);
        busy_.store(false);
    }

  private:
    void leave(msg m) noexcept {
        msg head = left_.load(std::memory_order_relaxed);
        do {
            m->link = head;
        } while (!left_.compare_exchange_weak(head, m));
    }

    /// Runs the body on every left message, oldest first.
    template <class Body>
    void run_left(Body& body) noexcept {
        msg newest = left_.exchange(nullptr);
        msg oldest = nullptr;
        while (newest != nullptr) {
            msg next = newest->link;
            newest->link = oldest;
            oldest = newest;
            newest = next;
        }
        while (oldest != nullptr) {
            msg next = oldest->link;
            oldest->link = nullptr;
            body(oldest);
            oldest = next;
        }
    }

    // One cache line: the running thread touches both on every message.
    alignas(64) std::atomic<bool> busy_{false};
    std::atomic<msg> left_{nullptr};
};

}  // namespace ferry::detail
