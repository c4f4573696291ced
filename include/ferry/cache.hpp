// SPDX-License-Identifier: Apache-2.0
/// \file
/// A local disk cache for remote objects and shards, shared by threads, pipelines and processes:
/// `ferry::ops::open_cache`, `http_options::cache` and `ferry::ops::cached_ranges`. Link
/// `ferry::http`.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "ferry/bytes.hpp"
#include "ferry/export.hpp"
#include "ferry/http.hpp"

namespace ferry {

/// Where and how big a cache is.
struct cache_options {
    /// The cache's folder, created if missing. Several processes may share one.
    std::filesystem::path dir{};
    /// Byte budget of the folder's entries (least recently used ones go first); 0: no limit.
    std::uint64_t max_bytes = 0;
    /// Ask the server on every hit whether the object changed (a conditional GET with
    /// `If-None-Match: <ETag>`): 304 reads the local copy, 200 replaces it. An entry without an
    /// ETag is fetched again. Off: a hit makes no request at all.
    bool revalidate = false;
    /// Who may use the folder. false (the default): this user alone. A folder `open_cache`
    /// creates is mode 0700 and its files (entries, temporary files, `.lock`) 0600; an existing
    /// folder owned by another user, or writable by group or others, is refused (an `io_error`
    /// that says how to fix it), and an entry file of another owner is never served. true: the
    /// folder's group shares it. A folder `open_cache` creates is mode 2770 (setgid: entries take
    /// the folder's group) and files are 0660, given the folder's group; a folder of another
    /// owner is accepted, one writable by others is refused; an entry of another group, or
    /// writable by others, is never served. Every member of the group can read every entry and
    /// plant one: share a folder only among users who may see each other's objects. Either way,
    /// every folder on the path must belong to this user or root (for a shared cache: or have
    /// one of this process's groups) and be writable by no one else unless sticky (as /tmp is),
    /// and a symbolic link on it must be this user's or root's: see `ferry::ops::open_cache`.
    bool shared_group = false;
    /// Longest wait for the folder's lock (`.lock`, taken to rename an entry into place and to
    /// evict). When it cannot be had in time (another process holds it), the object just
    /// downloaded is answered but not kept, and `cache_stats::lock_timeouts` counts it.
    std::chrono::milliseconds lock_wait{10'000};
    /// The largest object one fill writes to disk; 0: no cap but `max_bytes`. A body that passes
    /// it (one of unannounced length that does not end) stops there, the read is answered from
    /// the network, and the object is not kept (`cache_stats::not_kept`).
    std::uint64_t max_object_bytes = std::uint64_t{64} << 30;
    /// Whether reads carrying a credential whose identity ferry cannot tell are cached: a bearer
    /// token or cookie in `http_options::headers` (any header whose name says auth, token, key,
    /// secret, session, cookie, password, signature or credential), a token as a URL's user
    /// part or query parameter (`sig`, `token`, ...). false (the default): they bypass the cache
    /// (`cache_stats::bypassed`). true: they are cached under a key shared by every such
    /// credential, so one token's entry is served to another's reads (never to anonymous ones).
    /// Credentials whose identity is known need no opt-in: see `ferry::ops::open_cache`.
    bool cache_unidentified = false;
};

/// What this process's cache object has done (counters since `open_cache`), and how many entries
/// the folder holds as far as it knows (its last listing, and its own fills and evictions since).
struct cache_stats {
    std::uint64_t hits = 0;           ///< reads answered from the local file (304s included)
    std::uint64_t misses = 0;         ///< reads that found no valid entry and fetched the object
    std::uint64_t evictions = 0;      ///< entries this process removed to keep within the budget
    std::uint64_t bytes_fetched = 0;  ///< bytes of objects downloaded into the cache
    std::uint64_t bytes_stored = 0;   ///< bytes of objects that became entries
    std::uint64_t entries = 0;        ///< entries in the folder, as far as this process knows
    std::uint64_t revalidated = 0;    ///< hits confirmed by a 304 (with `revalidate`)
    std::uint64_t not_kept = 0;       ///< objects larger than `max_bytes`: served, not kept
    /// Reads where the cache failed (disk full, folder gone, ...) and the answer came from the
    /// network instead.
    std::uint64_t failures = 0;
    /// Times this process read the whole folder: at opening, then every 64 fills (to see other
    /// processes' entries) or when the entries it knows run out before the budget is met. Fills
    /// in between evict from what it knows, so a fill costs the same in a folder of a million
    /// entries as in one of ten.
    std::uint64_t listings = 0;
    /// Commits, evictions and openings that gave up waiting `cache_options::lock_wait` for the
    /// folder's lock: the object read was answered, not kept.
    std::uint64_t lock_timeouts = 0;
    /// Entries found unusable — not a regular file (a FIFO, a device), truncated or appended
    /// to, a record that does not read (one written by an older ferry included), a file another
    /// user could have written (see `cache_options::shared_group`): each a miss, fetched again.
    std::uint64_t invalid_entries = 0;
    /// Reads that went to the network past the cache: a credential whose identity ferry cannot
    /// tell (see `cache_options::cache_unidentified`), or a URL with a line break.
    std::uint64_t bypassed = 0;
};

namespace ops::detail {
class cache_store;
}

/// A cache folder opened by `ferry::ops::open_cache`; share the `shared_ptr` between pipelines
/// and threads. Entries are flat files in the folder named by the SHA-256 of the object's key
/// (its URL and who read it; never its path), each holding the object's bytes followed by its
/// key, size and ETag.
///
/// Safety: an object is written under a temporary name in the folder and renamed into place, so
/// no partial file is ever visible under an entry's name; a lock file (`flock`) serializes
/// eviction; two processes filling one entry at once both succeed and leave one complete file.
/// Temporary files of a process that died mid-write are removed by the next eviction pass.
/// Recency is the entry's mtime, set on every hit. Against other local users: see
/// `cache_options::shared_group` (who may use the folder) and `lock_wait` (a held lock costs
/// fills, never reads); an entry path that is not a regular file (a FIFO, a link), or a file
/// another user could have written, is a miss, never waited on, followed or served. The folder
/// is opened once, by `open_cache`, and used through that descriptor from then on: moving it,
/// its parents or a link on its path afterwards changes nothing the cache reads or writes.
class FERRY_API object_cache {
  public:
    explicit object_cache(std::unique_ptr<ops::detail::cache_store> store);
    object_cache(const object_cache&) = delete;
    object_cache& operator=(const object_cache&) = delete;
    ~object_cache();

    /// This process's counters (see `cache_stats`).
    [[nodiscard]] cache_stats stats() const;
    /// The options it was opened with.
    [[nodiscard]] const cache_options& options() const noexcept;
    /// The file an object's entry lives in (whether or not it exists) when `read_url(url)` reads
    /// it with no extra headers: to see what is cached. Empty when such a read is not cached
    /// (a credential of unknown identity in the URL, without `cache_unidentified`). It is the
    /// folder's path as given to `open_cache`, for display: the cache itself never opens it, and
    /// if that path names another folder now, the cache still uses the folder it opened.
    [[nodiscard]] std::filesystem::path entry_path(std::string_view url) const;

    /// For ferry::http's own code.
    [[nodiscard]] ops::detail::cache_store& store() const noexcept { return *store_; }

  private:
    std::unique_ptr<ops::detail::cache_store> store_;
};

namespace ops {

/// Opens (creating it if needed) a cache folder. Throws `ferry::io_error` naming the folder and
/// the cause when it cannot be created or written, or is refused for its owner or mode (see
/// `cache_options::shared_group`; the message says the fix), and removes temporary files left
/// by processes that died mid-write.
///
/// The folder's path is walked one folder at a time from `/` and used once: the folder is held
/// open, and every later access (entries, temporary files, the lock, eviction) is relative to
/// it. So that no other user can swap the folder before that, each folder on the path must
/// belong to this user or root and be writable by no one else, unless it is sticky (like /tmp,
/// where others cannot move what is not theirs; for a shared cache, a folder of one of the
/// process's groups counts as its own); a symbolic link on the path is followed only if it
/// belongs to this user or root. Folders it creates above the cache folder are 0755 at
/// most.
///
/// With it in `http_options::cache`, `read_url` of an `http(s)://` or `s3://` URL answers from
/// the local file when it can: a miss downloads the whole object into the cache (streamed to
/// disk) and answers from there; a `range` is read from the local file, and on a miss the whole
/// object is fetched first, so the next range is local. An object larger than `max_bytes` is
/// answered from the network (a ranged read by a ranged request) and not kept. When the cache
/// itself fails (disk full, folder removed), the answer comes from the network and
/// `cache_stats::failures` counts it. `max_bytes` holds for every answer, a cached `range`
/// included.
///
/// The key is the URL without credentials or presigning (the parameters `redact_url` redacts,
/// `X-Amz-Date`, `X-Amz-Expires`, `Expires`, `user:password@`) and, for a read with credentials,
/// a SHA-256 of who they say is asking: the user of `user:password@` or of
/// `Authorization: Basic`, the access key id of a signed `s3://` read, of `X-Amz-Credential`,
/// `AWSAccessKeyId` or `X-Goog-Credential` in a presigned URL. So an entry fetched with a
/// credential is served only to reads with the same identity (not to anonymous ones, not to
/// another user or key id), a re-presigned URL of the same key id hits the same entry, and no
/// secret reaches the folder (a password, signature or token is never part of the key). A read
/// with a credential of unknown identity (a bearer token, a cookie, an API-key header, a token
/// as a URL's user part) bypasses the cache unless `cache_options::cache_unidentified` is set.
/// The identity is a name, not a proof: who can read the folder can read every entry, which is
/// why the folder is this user's alone unless `cache_options::shared_group` says otherwise.
/// `file://` URLs are not cached.
/// \code
///   auto cache = ferry::ops::open_cache({.dir = "/scratch/ferry-cache", .max_bytes = 200ull <<
///   30}); auto b = ferry::ops::read_url("s3://bucket/a.jpg", {.cache = cache});
///   cache->stats().hits;
/// \endcode
[[nodiscard]] FERRY_API std::shared_ptr<object_cache> open_cache(const cache_options& options);

/// A `ferry::sources::tar_options::read_remote` that reads shards through a cache: the first read
/// of a shard downloads all of it into the cache (streamed to disk in the transfer's pieces; the
/// shard is never whole in memory), and every range after that (epoch 2, other pipelines or
/// processes sharing the folder) is read from the local file, with no request. It is
/// `ferry::ops::url_ranges` with `options.cache` set.
/// \code
///   auto cache = ferry::ops::open_cache({.dir = "/scratch/shards", .max_bytes = 500ull << 30});
///   ferry::sources::tar_samples(shards, {.read_remote = ferry::ops::cached_ranges{cache}});
/// \endcode
struct cached_ranges {
    std::shared_ptr<object_cache> cache;  ///< the cache (required)
    http_options options{};               ///< each request's options (`range`, `cache` are set)
    bytes operator()(const std::string& url, std::uint64_t offset, std::uint64_t length) const {
        http_options o = options;
        o.cache = cache;
        o.range = byte_range{.offset = offset, .length = length, .at_most = true};
        return read_url(url, o);
    }
};

}  // namespace ops
}  // namespace ferry
