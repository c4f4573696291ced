// SPDX-License-Identifier: Apache-2.0
/// \file
/// Who may use a cache folder, and its lock: the folder created with the mode
/// `cache_options::shared_group` says (0700, or 2770) or an existing one checked (its owner, who
/// may write it), and the folder's lock, waited for `cache_options::lock_wait` at most.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>

#include "ferry/cache.hpp"

namespace ferry::ops::detail {

/// errno `e`'s text, for an error message.
inline std::string errno_text(int e) {
    return std::strerror(e);
}

/// Creates the folder (mode 0700, or 2770 when `o.shared_group`; parents as `mkdir -p` makes
/// them) or checks an existing one: a private folder must be this user's and not writable by
/// group or others, a shared one not writable by others. Throws `ferry::io_error`, after
/// `where`, saying why and how to fix it. Returns the folder's stat.
struct stat prepare_folder(const cache_options& o, const std::string& where);

/// A mutex waited for with a deadline. Not `std::timed_mutex`: libstdc++ waits on it with
/// `pthread_mutex_clocklock`, which ThreadSanitizer does not intercept, so it reports every
/// unlock as one of an unlocked mutex.
class deadline_mutex {
  public:
    /// Takes the mutex unless `deadline` passes first (false).
    [[nodiscard]] bool try_lock_until(std::chrono::steady_clock::time_point deadline);
    void unlock();

  private:
    std::mutex m_;
    std::condition_variable freed_;
    bool held_ = false;
};

/// The mutex then the flock: the folder's lock, for this process's threads and for other
/// processes, waited for `wait` at most (and not past a stop request): anyone who can open
/// `.lock` can hold it forever.
class folder_lock {
  public:
    folder_lock(deadline_mutex& m, int fd, std::chrono::milliseconds wait);
    folder_lock(const folder_lock&) = delete;
    folder_lock& operator=(const folder_lock&) = delete;
    ~folder_lock();
    /// Whether the lock was had in time.
    [[nodiscard]] bool held() const noexcept { return held_ != nullptr; }

  private:
    deadline_mutex* held_ = nullptr;
    int fd_;
};

}  // namespace ferry::ops::detail
