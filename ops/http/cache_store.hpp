// SPDX-License-Identifier: Apache-2.0
/// \file
/// The cache folder: entries (an object's bytes, then a record of its URL, size and ETag), the
/// temporary files they are written to, the lock around renames and eviction, recency, and
/// which thread of this process fills which entry.
///
/// An entry file is `<object bytes><record><u64 record length, little-endian><"FRYCACH1">`,
/// named by the SHA-256 of the key (cache_key.hpp: the URL without credentials, and a hash of
/// who asked). The record sits at the end so that any truncation or append shows: such a file
/// is invalid, and removed; so is one of an older record format.
///
/// Against other local users: the folder is this user's (0700, files 0600) or its group's
/// (2770, files 0660), and one that others can write, or under a folder others can write, is
/// refused; it is opened once (cache_folder.hpp) and every later access goes through that
/// descriptor, never the folder's path; entries are opened without following links or blocking,
/// must be regular files and this user's (a shared folder's: its group's, not writable by
/// others); the lock is waited for `cache_options::lock_wait` at most.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "cache_folder.hpp"
#include "ferry/cache.hpp"

namespace ferry::ops::detail {

/// What an entry records of its object.
struct entry_record {
    std::string url;  ///< the key: the URL without credentials (compared on every read)
    std::uint64_t size = 0;
    std::string etag;  ///< as the server sent it; empty: none
};

/// A valid entry, open: readable even if it is replaced or evicted meanwhile.
struct cache_hit {
    unique_fd fd;
    entry_record record;
};

/// An object being written to a temporary file in the folder (locked with flock while its
/// writer lives, which is how a dead writer's file is told from a live one's). The file is
/// removed when the writer goes, unless committed.
class cache_writer {
  public:
    /// The file `name` in the folder open on `folder` (which outlives the writer), open on `fd`.
    cache_writer(int folder, std::string name, unique_fd fd, std::uint64_t max_bytes);
    cache_writer(const cache_writer&) = delete;
    cache_writer& operator=(const cache_writer&) = delete;
    ~cache_writer();

    /// Appends; false when the object passes the cap (`too_big()`), passes what `expect` said,
    /// or the write fails.
    bool write(const std::byte* data, std::size_t n);
    /// The object is `n` bytes (as announced): no more is written.
    void expect(std::uint64_t n) noexcept { expected_ = n; }
    [[nodiscard]] bool too_big() const noexcept { return too_big_; }
    /// The most this writer takes (0: no cap).
    [[nodiscard]] std::uint64_t max_bytes() const noexcept { return max_bytes_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    [[nodiscard]] int fd() const noexcept { return fd_.get(); }

  private:
    friend class cache_store;
    int folder_;
    std::string name_;
    unique_fd fd_;
    std::uint64_t max_bytes_;
    std::uint64_t expected_ = UINT64_MAX;
    std::uint64_t size_ = 0;
    bool too_big_ = false;
    bool committed_ = false;
};

class cache_store;

/// This thread's turn to fill a key (see `cache_store::take_turn`); ends when it goes.
class fill_turn {
  public:
    fill_turn(cache_store* store, std::string key, bool waited)
        : store_(store), key_(std::move(key)), waited_(waited) {}
    fill_turn(const fill_turn&) = delete;
    fill_turn& operator=(const fill_turn&) = delete;
    ~fill_turn();
    /// Another thread was filling the key, and this one waited for it to end.
    [[nodiscard]] bool waited() const noexcept { return waited_; }

  private:
    cache_store* store_;  // null: not this thread's turn (the wait was cut short by a stop)
    std::string key_;
    bool waited_;
};

/// This process's counters, as `cache_stats` reports them.
struct cache_counters {
    std::atomic<std::uint64_t> hits{0}, misses{0}, evictions{0}, bytes_fetched{0}, bytes_stored{0},
        entries{0}, revalidated{0}, not_kept{0}, failures{0}, listings{0}, lock_timeouts{0},
        invalid_entries{0}, bypassed{0};
};

class cache_store {
  public:
    /// Opens the folder (`open_folder`: creates it, or checks an existing one's owner and mode,
    /// and the folders on its path) and its lock file, checks that it can be written, removes
    /// temporary files of dead writers. Throws `ferry::io_error` naming the folder.
    explicit cache_store(cache_options options);
    cache_store(const cache_store&) = delete;
    cache_store& operator=(const cache_store&) = delete;

    [[nodiscard]] const cache_options& options() const noexcept { return options_; }
    /// Where `key`'s entry is, for display: the folder's path as given to `open_cache`. Nothing
    /// opens by it: if that path names another folder now, the cache still uses the one it
    /// opened.
    [[nodiscard]] std::filesystem::path path_of(const std::string& key) const;

    /// The valid entry for `key`, or nullopt. A damaged one (size not its record's) is removed;
    /// one whose record names another URL (a hash collision) is a miss and stays; one that is
    /// not a regular file (a FIFO, a link) is never waited on, and removed too; so is one that
    /// another user could have written (`trusted`): never served.
    std::optional<cache_hit> find(const std::string& key);
    /// Marks the entry open on `fd` as used now (its mtime: the LRU order); returns that time
    /// (ns since the epoch).
    std::int64_t touch(int fd);
    /// A temporary file for `key`'s object; throws `ferry::io_error` when none can be made.
    std::unique_ptr<cache_writer> begin(const std::string& key);
    /// Appends the record, renames the file into place and evicts least recently used entries
    /// (never this one) down to the budget. False when that failed or the lock could not be had
    /// within `lock_wait` (counted in `lock_timeouts`): the writer's file still holds the
    /// object, to be read from its fd.
    bool commit(cache_writer& w, const entry_record& r);
    /// Waits while another thread of this process fills `key`, then holds the turn.
    fill_turn take_turn(const std::string& key);

    cache_counters counters;

  private:
    friend class fill_turn;
    void end_turn(const std::string& key);
    /// Under the lock: lists the folder (into `known_`), removes dead writers' temporary files,
    /// then entries, least recently used first, until the rest fit the budget (`keep` is never
    /// removed); counts what remains.
    void sweep(const std::string& keep);
    /// Under the lock: evicts from `known_` (least recently used first, checking each entry's
    /// mtime, so one used since the listing is kept) until `total_` fits the budget. False when
    /// `known_` ran out first: the folder must be listed again.
    bool evict_known(const std::string& keep);
    /// Under the lock: removes the folder's file `name` if it is still the file open on `fd`
    /// (-1: if it is still not a regular file).
    void remove_if_same(const std::string& name, int fd);
    /// Whether an entry's file (its fstat) is one only who may use the cache could have written:
    /// this user's, in a private folder; in a shared one, of the folder's group and not writable
    /// by others.
    [[nodiscard]] bool trusted(const struct stat& st) const noexcept;

    cache_options options_;
    unsigned file_mode_;   // entries', temporary files' and the lock's: 0600, or 0660 when shared
    unsigned folder_gid_;  // given to files of a shared folder
    unique_fd folder_;     // the folder, open: every access is relative to it (openat, ...)
    unique_fd lock_fd_;
    // flock excludes other processes, not threads sharing lock_fd_; timed, as the flock is.
    deadline_mutex lock_mutex_;
    std::mutex turns_mutex_;
    std::condition_variable turns_cv_;
    std::set<std::string> turns_;  // keys a thread of this process is filling
    std::atomic<std::uint64_t> temp_counter_{0};

    // The folder as this process knows it (under the lock): the entries of the last listing and
    // those this process stored since, least recently used first (as of when each was last
    // seen), and their bytes. A fill lists the folder again only every `relist_every` fills (to
    // see other processes' entries and dead writers' files) or when `known_` runs out: a
    // folder of a million entries is not read through at every fill.
    struct known_entry {
        std::int64_t mtime;
        std::uint64_t size;
        std::string name;
    };
    static constexpr std::size_t relist_every = 64;
    std::deque<known_entry> known_;
    std::uint64_t total_ = 0;
    std::size_t fills_since_listing_ = 0;
};

}  // namespace ferry::ops::detail
