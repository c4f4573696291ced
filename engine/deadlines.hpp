// SPDX-License-Identifier: Apache-2.0
/// \file
/// The deadlines of one stage's calls in progress (`stage_options::timeout`), which the monitor
/// thread expires.
#pragma once

#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <vector>

namespace ferry::detail {

/// Calls with a deadline. A call adds itself when it starts and removes itself when it returns;
/// `expire` (the monitor, every few ms) takes the ones past their deadline and runs their
/// `on_expire`. Exactly one side wins: `remove` returns false once `expire` has taken the entry,
/// and then `on_expire` decides the item's fate, not the call.
///
/// One stage has one timeout, and calls add themselves when they start, so the list is in
/// deadline order: `expire` looks only at its front.
class deadline_list {
  public:
    using time_point = std::chrono::steady_clock::time_point;

    struct entry {
        time_point at;
        std::function<void()> on_expire;
        bool listed = false;
        std::list<std::shared_ptr<entry>>::iterator where;
    };
    using token = std::shared_ptr<entry>;

    /// Lists a call whose deadline is `at`.
    token add(time_point at, std::function<void()> on_expire) {
        auto e = std::make_shared<entry>();
        e->at = at;
        e->on_expire = std::move(on_expire);
        std::lock_guard lock(mutex_);
        // Calls of one stage share a timeout, but a retry's backoff or a clock read before the
        // lock can put a deadline slightly before the last one: insert in order.
        auto pos = entries_.end();
        while (pos != entries_.begin() && (*std::prev(pos))->at > at) --pos;
        e->where = entries_.insert(pos, e);
        e->listed = true;
        return e;
    }

    /// Unlists a call that returned. False when `expire` took it first (it timed out).
    bool remove(const token& e) {
        std::lock_guard lock(mutex_);
        if (!e->listed) return false;
        entries_.erase(e->where);
        e->listed = false;
        return true;
    }

    /// Takes every call whose deadline is before `now` and runs its `on_expire` (outside the
    /// lock). Returns how many expired.
    std::size_t expire(time_point now) {
        std::vector<token> due;
        {
            std::lock_guard lock(mutex_);
            while (!entries_.empty() && entries_.front()->at <= now) {
                due.push_back(entries_.front());
                entries_.front()->listed = false;
                entries_.pop_front();
            }
        }
        for (auto& e : due) e->on_expire();
        return due.size();
    }

    [[nodiscard]] bool empty() const {
        std::lock_guard lock(mutex_);
        return entries_.empty();
    }

  private:
    mutable std::mutex mutex_;
    std::list<token> entries_;
};

}  // namespace ferry::detail
