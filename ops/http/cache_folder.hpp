// SPDX-License-Identifier: Apache-2.0
/// \file
/// Who may use a cache folder, and its lock: the folder opened once, as a descriptor that every
/// later access goes through (never its path again), after checking every folder on its path
/// (none another user could write, no link another user owns), then created with the mode
/// `cache_options::shared_group` says (0700, or 2770) or checked (its owner, who may write it);
/// and the folder's lock, waited for `cache_options::lock_wait` at most.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "ferry/cache.hpp"

namespace ferry::ops::detail {

/// errno `e`'s text, for an error message.
inline std::string errno_text(int e) {
    return std::strerror(e);
}

/// A file descriptor, closed when it goes.
class unique_fd {
  public:
    unique_fd() = default;
    explicit unique_fd(int fd) noexcept : fd_(fd) {}
    unique_fd(unique_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    unique_fd& operator=(unique_fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    ~unique_fd() { reset(); }
    [[nodiscard]] int get() const noexcept { return fd_; }
    void reset() noexcept;

  private:
    int fd_ = -1;
};

/// A cache folder, open: what every later access goes through (`openat`, `renameat`,
/// `unlinkat`, `fstatat` with `AT_SYMLINK_NOFOLLOW`), so that a folder moved or re-linked after
/// the opening is never mistaken for it.
struct opened_folder {
    unique_fd fd;       ///< O_DIRECTORY, opened without following a link
    struct stat st {};  ///< its fstat, as checked
};

/// Opens the folder `o.dir`, walking its path one folder at a time from `/` (openat with
/// O_NOFOLLOW) and creating what is missing (the folder with mode 0700, or 2770 when
/// `o.shared_group`; folders above it 0755 at most). Refuses, with a `ferry::io_error` after
/// `where` that names what and how to fix it:
/// * a folder on the path that another user could use to move the cache folder away and put
///   their own in its place: one owned by neither this user nor root, or writable by group or
///   others without the sticky bit (as /tmp has). For a shared cache, a folder whose group is
///   one of this process's groups counts as this user's: its members share the cache anyway
///   (and only a member, or root, can give a folder its group);
/// * a symbolic link on the path owned by neither this user nor root (its owner could point it
///   anywhere); links of this user or root are followed, once, here;
/// * the folder itself: a private one must be this user's and not writable by group or others,
///   a shared one not writable by others.
opened_folder open_folder(const cache_options& o, const std::string& where);

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
