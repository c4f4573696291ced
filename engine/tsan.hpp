// SPDX-License-Identifier: Apache-2.0
/// \file
/// ThreadSanitizer annotations for hand-offs that pass through libtbb.
///
/// Debian's libtbb is not built with TSan, so the happens-before edges its task queues create
/// (spawn on one worker, execute on another; wait_for_all) are invisible to TSan. ferry marks its
/// own hand-offs explicitly: a body releases each box it passes on and acquires each box it
/// receives; serial nodes release their state when they finish; the consumer acquires everything
/// after wait_for_all. Races whose top frame is inside TBB itself are suppressed in
/// tests/tsan.supp (TBB is not ours to check); every access ferry makes stays checked.
#pragma once

#include <utility>

#if defined(FERRY_TSAN)
extern "C" {
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}
#endif

namespace ferry::detail {

inline void tsan_acquire(const void* p) noexcept {
#if defined(FERRY_TSAN)
    __tsan_acquire(const_cast<void*>(p));
#else
    (void)p;
#endif
}

inline void tsan_release(const void* p) noexcept {
#if defined(FERRY_TSAN)
    __tsan_release(const_cast<void*>(p));
#else
    (void)p;
#endif
}

/// A node body took message `m` from TBB: see what its sender wrote to it, and what `owner` (the
/// runtime, released by whoever set up the epoch) published before.
inline void tsan_receive(const void* owner, const void* m) noexcept {
    tsan_acquire(owner);
    tsan_acquire(m);
}

/// Passes message `m` on through `port` (any TBB sender or gateway): what this thread wrote to it
/// happens before its receiver reads it.
template <class Port, class M>
bool tsan_send(Port& port, M m) {
    tsan_release(m);
    return port.try_put(m);
}

/// Holds the state of a serial node (`p`) for a scope: what the node's previous call wrote
/// happens before this call reads it, whichever worker ran each.
class tsan_scope {
  public:
    explicit tsan_scope(const void* p) noexcept : p_(p) { tsan_acquire(p_); }
    ~tsan_scope() { tsan_release(p_); }
    tsan_scope(const tsan_scope&) = delete;
    tsan_scope& operator=(const tsan_scope&) = delete;

  private:
    const void* p_;
};

/// Wraps a node body so that TSan sees the body object's construction (on the thread building
/// the graph, wherever TBB copies it) happen before its first call on a worker.
template <class F>
struct tsan_body {
    mutable F fn;
    explicit tsan_body(F f) : fn(std::move(f)) { tsan_release(this); }
    tsan_body(const tsan_body& o) : fn(o.fn) { tsan_release(this); }
    tsan_body& operator=(const tsan_body&) = delete;
    /// The last call happens before destruction (on whichever thread destroys the graph).
    ~tsan_body() { tsan_acquire(this); }

    // const, because TBB calls some bodies through const references; `fn` is mutable so that a
    // body with state still works.
    template <class... Args>
    decltype(auto) operator()(Args&&... args) const
        noexcept(noexcept(fn(std::forward<Args>(args)...))) {
        tsan_acquire(this);
        const released done{this};
        return fn(std::forward<Args>(args)...);
    }

  private:
    struct released {
        const void* p;
        ~released() { tsan_release(p); }
    };
};

}  // namespace ferry::detail
