// SPDX-License-Identifier: Apache-2.0
/// \file
/// Who may use a cache folder, and its lock (see cache_folder.hpp).
#include "cache_folder.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <system_error>
#include <thread>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/this_call.hpp"

namespace ferry::ops::detail {

namespace {

std::string folder_octal(unsigned mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", mode & 07777U);
    return text;
}

/// Whether `gid` is this process's group or one of its supplementary groups.
bool folder_in_my_groups(gid_t gid) {
    if (gid == ::getegid()) return true;
    const int n = ::getgroups(0, nullptr);
    if (n <= 0) return false;
    std::vector<gid_t> groups(static_cast<std::size_t>(n));
    const int got = ::getgroups(n, groups.data());
    return got > 0 && std::find(groups.begin(), groups.begin() + got, gid) != groups.begin() + got;
}

/// Why `st`, a folder on the cache folder's path, lets another user move the cache folder away
/// and put their own in its place; empty when it does not.
std::string folder_unsafe_above(const struct stat& st, bool shared_group) {
    const bool group_shares = shared_group && folder_in_my_groups(st.st_gid);
    if (st.st_uid != 0 && st.st_uid != ::geteuid() && !group_shares) {
        return "belongs to another user";
    }
    if ((st.st_mode & S_ISVTX) != 0) return {};  // sticky: only an entry's owner moves it
    if ((st.st_mode & S_IWOTH) != 0 || ((st.st_mode & S_IWGRP) != 0 && !group_shares)) {
        return "is writable by other users";
    }
    return {};
}

/// `path` joined to `name`, for messages.
std::string folder_join(const std::string& path, const std::string& name) {
    return path == "/" ? "/" + name : path + "/" + name;
}

/// The components of `p` to walk (no empty ones, no `.`).
std::deque<std::string> folder_components(const std::filesystem::path& p) {
    std::deque<std::string> out;
    for (const auto& c : p.relative_path()) {
        if (!c.empty() && c != ".") out.push_back(c.string());
    }
    return out;
}

// How the walk opens each folder. O_PATH: a folder on the way may be searchable and not readable
// (0711, as /scratch often is); the cache folder itself is opened for reading at the end.
#ifdef O_PATH
constexpr int folder_walk_flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
#else
constexpr int folder_walk_flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
#endif

/// One folder of the walk: open, and its path as walked (links resolved), for messages.
struct folder_step {
    unique_fd fd;
    std::string path;
};

/// Throws when the folder `f`, on the cache folder's path, lets another user move the cache
/// folder away and put their own in its place.
void folder_check_above(const folder_step& f, bool shared_group, const std::string& where) {
    struct stat st {};
    if (::fstat(f.fd.get(), &st) != 0) {
        throw io_error(where + "cannot stat '" + f.path + "': " + errno_text(errno), false);
    }
    const std::string why = folder_unsafe_above(st, shared_group);
    if (why.empty()) return;
    const std::string fix = why == "belongs to another user"
                                ? "keep the cache under folders that belong to you or root"
                                : "run `chmod go-w '" + f.path + "'` (or `chmod +t '" + f.path +
                                      "'`: sticky, as /tmp is), or keep the cache elsewhere";
    throw io_error(where + "the folder '" + f.path + "' on its path (owner uid " +
                       std::to_string(st.st_uid) + ", mode " + folder_octal(st.st_mode) + ") " +
                       why + ", who could move the cache folder away and put one of their own " +
                       "in its place; " + fix,
                   false);
}

/// Throws when the cache folder (its fstat `st`) is not one `o` may use: see `open_folder`.
void folder_check_own(const struct stat& st, const cache_options& o, const std::string& where) {
    const std::string dir = o.dir.string();
    const uid_t me = ::geteuid();
    if (o.shared_group) {
        if ((st.st_mode & S_IWOTH) != 0) {
            throw io_error(where + "the folder is writable by others (mode " +
                               folder_octal(st.st_mode) +
                               "): anyone could plant entries or hold its lock; run `chmod 2770 '" +
                               dir + "'` (a folder of the sharing group)",
                           false);
        }
    } else if (st.st_uid != me) {
        throw io_error(where + "the folder belongs to uid " + std::to_string(st.st_uid) +
                           ", not to this user (uid " + std::to_string(me) +
                           "): its owner could read and plant entries; use a folder of your own, "
                           "or set cache_options::shared_group to share it with its group",
                       false);
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        throw io_error(where + "the folder is writable by group or others (mode " +
                           folder_octal(st.st_mode) +
                           "): they could plant entries or hold its lock; run `chmod 700 '" + dir +
                           "'`, or set cache_options::shared_group for a cache shared with its "
                           "group (mode 2770)",
                       false);
    }
}

/// Where the link `name` in the folder open on `at` (`path`, for messages) points, `open_error`
/// being why it did not open as a folder: throws unless it is a link this user or root owns and
/// `followed` (links so far) is at most 40.
std::filesystem::path folder_link_target(int at, const std::string& name, const std::string& path,
                                         int open_error, int followed, const std::string& where) {
    struct stat link {};
    if ((open_error != ELOOP && open_error != ENOTDIR) ||
        ::fstatat(at, name.c_str(), &link, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(link.st_mode)) {
        throw io_error(where + "cannot create the folder '" + path + "': " + errno_text(open_error),
                       false);
    }
    const uid_t me = ::geteuid();
    if (link.st_uid != 0 && link.st_uid != me) {
        throw io_error(where + "'" + path + "' is a symbolic link of uid " +
                           std::to_string(link.st_uid) + ", neither this user (uid " +
                           std::to_string(me) + ") nor root: its owner could point the cache at " +
                           "another folder; give open_cache the folder's real path",
                       false);
    }
    char target[PATH_MAX];
    const ssize_t n = ::readlinkat(at, name.c_str(), target, sizeof target);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof target || followed > 40) {
        throw io_error(where + "cannot follow the symbolic link '" + path +
                           "': " + errno_text(n < 0 ? errno : ELOOP),
                       false);
    }
    return std::string(target, static_cast<std::size_t>(n));
}

}  // namespace

void unique_fd::reset() noexcept {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

opened_folder open_folder(const cache_options& o, const std::string& where) {
    if (o.dir.empty()) {
        throw io_error(where + "no folder given: cache_options::dir is empty", false);
    }
    const unsigned mode = o.shared_group ? 02770U : 0700U;
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(o.dir, ec).lexically_normal();
    if (ec) throw io_error(where + "cannot create the folder: " + ec.message(), false);
    std::vector<folder_step> walked;  // from `/` down to the folder; `..` pops
    walked.push_back({unique_fd(::open("/", folder_walk_flags)), "/"});
    if (walked.back().fd.get() < 0) {
        throw io_error(where + "cannot open '/': " + errno_text(errno), false);
    }
    std::deque<std::string> rest = folder_components(absolute);
    if (!rest.empty()) folder_check_above(walked.back(), o.shared_group, where);
    int links = 0;
    bool created = false;
    while (!rest.empty()) {
        const std::string name = std::move(rest.front());
        rest.pop_front();
        if (name == "..") {
            if (walked.size() > 1) walked.pop_back();
            continue;
        }
        const int at = walked.back().fd.get();
        const std::string path = folder_join(walked.back().path, name);
        unique_fd fd(::openat(at, name.c_str(), folder_walk_flags));
        if (fd.get() < 0 && errno == ENOENT) {
            // mkdir's mode passes through the umask: the folder's is set exactly below.
            if (::mkdirat(at, name.c_str(), rest.empty() ? mode : 0755U) == 0) {
                created = rest.empty();
            } else if (errno != EEXIST) {
                throw io_error(
                    where + "cannot create the folder '" + path + "': " + errno_text(errno), false);
            }
            fd = unique_fd(::openat(at, name.c_str(), folder_walk_flags));
        }
        if (fd.get() < 0) {
            // Not a folder: a link this user or root owns is followed, anything else refused.
            const int why = errno;
            const auto to = folder_link_target(at, name, path, why, ++links, where);
            auto parts = folder_components(to);
            rest.insert(rest.begin(), parts.begin(), parts.end());
            if (to.is_absolute()) walked.resize(1);
            continue;
        }
        walked.push_back({std::move(fd), path});
        if (!rest.empty()) folder_check_above(walked.back(), o.shared_group, where);
    }
    opened_folder folder{
        unique_fd(::openat(walked.back().fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)), {}};
    if (folder.fd.get() < 0) {
        throw io_error(where + "cannot open the folder: " + errno_text(errno), false);
    }
    // mkdir's mode passed through the umask (and dropped setgid): say it exactly.
    if (created) ::fchmod(folder.fd.get(), mode);
    if (::fstat(folder.fd.get(), &folder.st) != 0) {
        throw io_error(where + "cannot create the folder: " + errno_text(errno), false);
    }
    folder_check_own(folder.st, o, where);
    return folder;
}

bool deadline_mutex::try_lock_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(m_);
    if (!freed_.wait_until(lock, deadline, [this] { return !held_; })) return false;
    held_ = true;
    return true;
}

void deadline_mutex::unlock() {
    {
        const std::lock_guard lock(m_);
        held_ = false;
    }
    freed_.notify_one();
}

folder_lock::folder_lock(deadline_mutex& m, int fd, std::chrono::milliseconds wait) : fd_(fd) {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    if (!m.try_lock_until(deadline)) return;
    auto pause = std::chrono::milliseconds(1);
    for (;;) {
        if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) {
            held_ = &m;
            return;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) break;
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline || this_call::stop_requested()) break;
        std::this_thread::sleep_for(
            std::min<std::chrono::steady_clock::duration>(pause, deadline - now));
        pause = std::min(pause * 2, std::chrono::milliseconds(50));
    }
    m.unlock();
}

folder_lock::~folder_lock() {
    if (held_ == nullptr) return;
    ::flock(fd_, LOCK_UN);
    held_->unlock();
}

}  // namespace ferry::ops::detail
