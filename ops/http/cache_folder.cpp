// SPDX-License-Identifier: Apache-2.0
/// \file
/// Who may use a cache folder, and its lock (see cache_folder.hpp).
#include "cache_folder.hpp"

#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>

#include "ferry/error.hpp"
#include "ferry/this_call.hpp"

namespace ferry::ops::detail {

namespace {

std::string octal(unsigned mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", mode & 07777U);
    return text;
}

}  // namespace

struct stat prepare_folder(const cache_options& o, const std::string& where) {
    const auto& dir = o.dir;
    const unsigned mode = o.shared_group ? 02770U : 0700U;
    std::error_code ec;
    if (const auto parent = dir.parent_path(); !parent.empty()) {
        std::filesystem::create_directories(parent, ec);
        if (ec) throw io_error(where + "cannot create the folder: " + ec.message(), false);
    }
    if (::mkdir(dir.c_str(), mode) == 0) {
        // mkdir's mode passes through the umask (and drops setgid): say it exactly.
        ::chmod(dir.c_str(), mode);
    } else if (errno != EEXIST) {
        throw io_error(where + "cannot create the folder: " + errno_text(errno), false);
    }
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
        throw io_error(where + "cannot create the folder: " + errno_text(errno), false);
    }
    if (!S_ISDIR(st.st_mode)) {
        throw io_error(where + "cannot create the folder: " + errno_text(ENOTDIR), false);
    }
    const uid_t me = ::geteuid();
    if (o.shared_group) {
        if ((st.st_mode & S_IWOTH) != 0) {
            throw io_error(where + "the folder is writable by others (mode " + octal(st.st_mode) +
                               "): anyone could plant entries or hold its lock; run `chmod 2770 '" +
                               dir.string() + "'` (a folder of the sharing group)",
                           false);
        }
    } else if (st.st_uid != me) {
        throw io_error(where + "the folder belongs to uid " + std::to_string(st.st_uid) +
                           ", not to this user (uid " + std::to_string(me) +
                           "): its owner could read and plant entries; use a folder of your own, "
                           "or set cache_options::shared_group to share it with its group",
                       false);
    } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        throw io_error(
            where + "the folder is writable by group or others (mode " + octal(st.st_mode) +
                "): they could plant entries or hold its lock; run `chmod 700 '" + dir.string() +
                "'`, or set cache_options::shared_group for a cache shared with its "
                "group (mode 2770)",
            false);
    }
    return st;
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
