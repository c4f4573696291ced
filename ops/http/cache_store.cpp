// SPDX-License-Identifier: Apache-2.0
/// \file
/// The cache folder (see cache_store.hpp), and `object_cache` / `open_cache`, its public face.
///
/// Who may do what without the lock: anyone may open an entry and read it (a rename or an
/// unlink by someone else leaves an open file readable), set its mtime, and write their own
/// temporary file. Renames into place, removals and eviction happen under the lock (lock_mutex_
/// within the process, flock on `.lock` between processes), waited for `lock_wait` at most: who
/// holds it forever costs others their fills, never their reads.
///
/// Who may use the folder at all is its mode (see `cache_options::shared_group`): a private
/// folder that others could write, or that someone else owns, or one under a folder others
/// could write, is refused before anything in it is opened. The folder is opened once; every
/// later access is relative to that descriptor (openat, renameat, unlinkat, fstatat without
/// following links), so a folder re-linked or moved after the opening is never read or written
/// in its place.
#include "cache_store.hpp"

#include "ferry/this_call.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <vector>

#include "cache_folder.hpp"
#include "cache_key.hpp"
#include "sha256.hpp"

namespace ferry::ops::detail {

namespace {

constexpr char magic[8] = {'F', 'R', 'Y', 'C', 'A', 'C', 'H', '1'};
constexpr std::size_t footer = 16;  // record length (u64 LE) + magic
constexpr std::uint64_t max_record = 64 * 1024;
constexpr const char* temp_prefix = ".tmp-";
// A temporary file whose writer's flock is gone is removed once its writer's pid is gone too, or
// after this long (a pid from another pid namespace sharing the folder): the flock is taken a
// moment after the file is created, and this keeps that moment safe.
constexpr auto orphan_age = std::chrono::seconds(60);

bool pwrite_all(int fd, const void* data, std::size_t n, std::uint64_t at) {
    const auto* p = static_cast<const char*>(data);
    while (n > 0) {
        const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(at));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        p += w;
        n -= static_cast<std::size_t>(w);
        at += static_cast<std::uint64_t>(w);
    }
    return true;
}

bool pread_all(int fd, void* data, std::size_t n, std::uint64_t at) {
    auto* p = static_cast<char*>(data);
    while (n > 0) {
        const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(at));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<std::size_t>(r);
        at += static_cast<std::uint64_t>(r);
    }
    return true;
}

// Format 2: keys name who asked (cache_key.hpp). A format-1 entry may hold an object fetched
// with someone's credentials under the bare URL: it does not read, and is fetched again.
constexpr const char* record_format = "ferry-cache 2";

std::string encode(const entry_record& r) {
    return std::string(record_format) + "\n" + std::to_string(r.size) + "\n" + r.etag + "\n" +
           r.url;
}

std::optional<entry_record> decode(const std::string& s) {
    const auto a = s.find('\n');
    const auto b = a == std::string::npos ? a : s.find('\n', a + 1);
    const auto c = b == std::string::npos ? b : s.find('\n', b + 1);
    if (c == std::string::npos || s.compare(0, a, record_format) != 0) return std::nullopt;
    entry_record r;
    try {
        std::size_t used = 0;
        r.size = std::stoull(s.substr(a + 1, b - a - 1), &used);
        if (used != b - a - 1) return std::nullopt;
    } catch (const std::exception&) {
        return std::nullopt;
    }
    r.etag = s.substr(b + 1, c - b - 1);
    r.url = s.substr(c + 1);
    return r;
}

bool is_entry_name(const std::string& n) {
    return n.size() == 64 && std::all_of(n.begin(), n.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

std::int64_t mtime_ns(const struct stat& st) {
    return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

/// A fresh recency stamp: the wall clock in ns, strictly increasing within the process (file
/// systems keep ns, but the kernel's own "now" is only as fine as its tick).
std::int64_t next_stamp() {
    static std::atomic<std::int64_t> last{0};
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    std::int64_t want = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
    std::int64_t seen = last.load();
    for (;;) {
        const std::int64_t next = std::max(want, seen + 1);
        if (last.compare_exchange_weak(seen, next)) return next;
    }
}

/// Whether the temporary file `name` of the folder open on `folder` has lost its writer: its
/// flock is free, and its pid (in the name, `.tmp-<pid>-...`) is not running or the file is old.
bool orphaned(int folder, const std::string& name, const struct stat& st) {
    const unique_fd fd(
        ::openat(folder, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (fd.get() < 0) return false;
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;  // its writer holds it
    const auto age = std::chrono::system_clock::now().time_since_epoch() -
                     std::chrono::nanoseconds(mtime_ns(st));
    if (age > orphan_age) return true;
    const long pid = std::strtol(name.c_str() + std::strlen(temp_prefix), nullptr, 10);
    return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace

cache_writer::cache_writer(int folder, std::string name, unique_fd fd, std::uint64_t max_bytes)
    : folder_(folder), name_(std::move(name)), fd_(std::move(fd)), max_bytes_(max_bytes) {}

cache_writer::~cache_writer() {
    if (!committed_) ::unlinkat(folder_, name_.c_str(), 0);
}

bool cache_writer::write(const std::byte* data, std::size_t n) {
    if (max_bytes_ != 0 && size_ + n > max_bytes_) {
        too_big_ = true;
        return false;
    }
    if (size_ + n > expected_) return false;
    if (!pwrite_all(fd_.get(), data, n, size_)) return false;
    size_ += n;
    return true;
}

fill_turn::~fill_turn() {
    if (store_ != nullptr) store_->end_turn(key_);
}

cache_store::cache_store(cache_options options)
    : options_(std::move(options)), file_mode_(options_.shared_group ? 0660U : 0600U) {
    const std::string where = "open_cache: '" + options_.dir.string() + "': ";
    opened_folder folder = open_folder(options_, where);
    folder_gid_ = folder.st.st_gid;
    folder_ = std::move(folder.fd);
    const int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    lock_fd_ = unique_fd(::openat(folder_.get(), ".lock", flags | O_CREAT | O_EXCL, file_mode_));
    const bool created = lock_fd_.get() >= 0;
    if (!created && errno == EEXIST) lock_fd_ = unique_fd(::openat(folder_.get(), ".lock", flags));
    if (lock_fd_.get() < 0) {
        throw io_error(where + "cannot write the lock file: " + errno_text(errno), false);
    }
    struct stat lock_st {};
    if (::fstat(lock_fd_.get(), &lock_st) != 0 || !S_ISREG(lock_st.st_mode)) {
        throw io_error(where + "'.lock' is not a regular file", false);
    }
    // A lock file of ours gets the folder's file mode (one an older ferry made 0644 too).
    if (lock_st.st_uid == ::geteuid()) ::fchmod(lock_fd_.get(), file_mode_);
    if (created && options_.shared_group)
        ::fchown(lock_fd_.get(), static_cast<uid_t>(-1), folder_gid_);
    try {
        const auto probe = begin("open_cache probe");
        if (!probe->write(reinterpret_cast<const std::byte*>(magic), sizeof magic)) {
            throw io_error(where + "cannot write to the folder: " + errno_text(errno), false);
        }
    } catch (const io_error& e) {
        throw io_error(where + "cannot write to the folder: " + e.what(), false);
    }
    const folder_lock lock(lock_mutex_, lock_fd_.get(), options_.lock_wait);
    if (lock.held()) {
        sweep(std::string());
    } else {
        ++counters.lock_timeouts;  // the next fill lists the folder
    }
}

std::filesystem::path cache_store::path_of(const std::string& key) const {
    return options_.dir / sha256_hex(key);
}

bool cache_store::trusted(const struct stat& st) const noexcept {
    if (!options_.shared_group) return st.st_uid == ::geteuid();
    return st.st_gid == folder_gid_ && (st.st_mode & S_IWOTH) == 0;
}

std::optional<cache_hit> cache_store::find(const std::string& key) {
    const std::string name = sha256_hex(key);
    // Non-blocking: a FIFO planted here must not hold the read (a stop would not reach it).
    unique_fd fd(
        ::openat(folder_.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
    if (fd.get() < 0) {
        if (errno == ELOOP || errno == ENXIO) {  // a symbolic link, a socket
            ++counters.invalid_entries;
            remove_if_same(name, -1);
        }
        return std::nullopt;
    }
    struct stat st {};
    // Another user's file (planted by root's hand, or a group member's made writable by all)
    // is no entry of ours, whatever it says: it is replaced by the fill.
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !trusted(st)) {
        ++counters.invalid_entries;
        remove_if_same(name, fd.get());
        return std::nullopt;
    }
    const auto file_size = static_cast<std::uint64_t>(st.st_size);
    char tail[footer];
    std::uint64_t length = 0;
    std::optional<entry_record> record;
    if (file_size >= footer && pread_all(fd.get(), tail, footer, file_size - footer) &&
        std::memcmp(tail + 8, magic, sizeof magic) == 0) {
        for (int i = 7; i >= 0; --i) length = (length << 8) | static_cast<unsigned char>(tail[i]);
        if (length <= max_record && length <= file_size - footer) {
            std::string text(length, '\0');
            if (pread_all(fd.get(), text.data(), length, file_size - footer - length)) {
                record = decode(text);
            }
        }
    }
    if (record && record->url != key) return std::nullopt;  // another URL with this hash
    if (!record || record->size + length + footer != file_size) {
        ++counters.invalid_entries;
        remove_if_same(name, fd.get());
        return std::nullopt;
    }
    return cache_hit{std::move(fd), std::move(*record)};
}

std::int64_t cache_store::touch(int fd) {
    const std::int64_t stamp = next_stamp();
    const timespec times[2] = {{0, UTIME_OMIT},
                               {static_cast<time_t>(stamp / 1'000'000'000), stamp % 1'000'000'000}};
    ::futimens(fd, times);
    return stamp;
}

std::unique_ptr<cache_writer> cache_store::begin(const std::string& key) {
    const std::string name = temp_prefix + std::to_string(::getpid()) + "-" +
                             std::to_string(temp_counter_.fetch_add(1)) + "-" +
                             sha256_hex(key).substr(0, 16);
    unique_fd fd(::openat(folder_.get(), name.c_str(),
                          O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, file_mode_));
    if (fd.get() < 0) {
        throw io_error("cache: '" + (options_.dir / name).string() +
                       "': cannot create: " + errno_text(errno));
    }
    // The mode says who may read the entry it becomes: exactly the folder's, whatever the umask.
    ::fchmod(fd.get(), file_mode_);
    if (options_.shared_group) ::fchown(fd.get(), static_cast<uid_t>(-1), folder_gid_);
    ::flock(fd.get(), LOCK_EX);  // while it is held, no sweep takes the file for an orphan
    // The most one fill writes: the budget and max_object_bytes, the smaller that is set.
    std::uint64_t cap = options_.max_bytes;
    if (options_.max_object_bytes != 0 && (cap == 0 || options_.max_object_bytes < cap)) {
        cap = options_.max_object_bytes;
    }
    return std::make_unique<cache_writer>(folder_.get(), name, std::move(fd), cap);
}

bool cache_store::commit(cache_writer& w, const entry_record& r) {
    const std::string text = encode(r);
    char tail[footer];
    std::uint64_t length = text.size();
    for (int i = 0; i < 8; ++i) tail[i] = static_cast<char>((length >> (8 * i)) & 0xFF);
    std::memcpy(tail + 8, magic, sizeof magic);
    if (!pwrite_all(w.fd(), text.data(), text.size(), w.size()) ||
        !pwrite_all(w.fd(), tail, footer, w.size() + text.size())) {
        return false;
    }
    const std::string name = sha256_hex(r.url);
    const folder_lock lock(lock_mutex_, lock_fd_.get(), options_.lock_wait);
    if (!lock.held()) {
        ++counters.lock_timeouts;
        this_call::count("cache lock timeouts");
        return false;
    }
    const std::int64_t stamp = touch(w.fd());
    struct stat old {};
    // A key filled again.
    const bool replaced = ::fstatat(folder_.get(), name.c_str(), &old, AT_SYMLINK_NOFOLLOW) == 0;
    if (::renameat(folder_.get(), w.name_.c_str(), folder_.get(), name.c_str()) != 0) return false;
    w.committed_ = true;
    counters.bytes_stored += r.size;
    const std::uint64_t size = w.size() + text.size() + footer;
    known_.push_back({stamp, size, name});
    total_ += size;
    ++counters.entries;
    // A replaced entry is in `known_` twice now: the folder is listed again.
    if (replaced || ++fills_since_listing_ >= relist_every ||
        (options_.max_bytes != 0 && total_ > options_.max_bytes && !evict_known(name))) {
        sweep(name);
    }
    return true;
}

bool cache_store::evict_known(const std::string& keep) {
    // Each entry is looked at most once per call: one used since it was recorded goes to the
    // back with its new time.
    for (std::size_t looked = known_.size(); total_ > options_.max_bytes && looked > 0; --looked) {
        known_entry e = std::move(known_.front());
        known_.pop_front();
        struct stat st {};
        // Gone: another process evicted it.
        if (::fstatat(folder_.get(), e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            total_ -= std::min(total_, e.size);
            continue;
        }
        if (e.name == keep || mtime_ns(st) > e.mtime) {
            e.mtime = mtime_ns(st);
            e.size = static_cast<std::uint64_t>(st.st_size);
            known_.push_back(std::move(e));
            continue;
        }
        if (::unlinkat(folder_.get(), e.name.c_str(), 0) == 0) {
            ++counters.evictions;
            this_call::count("cache evictions");
            if (counters.entries > 0) --counters.entries;
        }
        total_ -= std::min(total_, e.size);
    }
    return total_ <= options_.max_bytes;
}

void cache_store::sweep(const std::string& keep) {
    struct entry {
        std::int64_t mtime;
        std::uint64_t size;
        std::string name;
    };
    std::vector<entry> entries;
    std::uint64_t total = 0;
    fills_since_listing_ = 0;
    ++counters.listings;
    // A descriptor of its own (not a dup, which would share the folder's read position).
    const int listing = ::openat(folder_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* d = listing < 0 ? nullptr : ::fdopendir(listing);
    if (d == nullptr) {
        if (listing >= 0) ::close(listing);
        return;
    }
    while (const dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        const bool temp = name.starts_with(temp_prefix);
        if (!temp && !is_entry_name(name)) continue;
        struct stat st {};
        if (::fstatat(folder_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode)) {
            continue;
        }
        if (temp) {
            if (orphaned(folder_.get(), name, st)) ::unlinkat(folder_.get(), name.c_str(), 0);
            continue;
        }
        // An entry of ours more open than the folder's files (an older ferry made them 0644):
        // changed through a descriptor, so that a link put in its place meanwhile is not followed.
        if ((st.st_mode & 0777U & ~file_mode_) != 0 && st.st_uid == ::geteuid()) {
            const unique_fd own(::openat(folder_.get(), name.c_str(),
                                         O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
            if (own.get() >= 0) ::fchmod(own.get(), file_mode_);
        }
        entries.push_back({mtime_ns(st), static_cast<std::uint64_t>(st.st_size), name});
        total += static_cast<std::uint64_t>(st.st_size);
    }
    ::closedir(d);
    std::sort(entries.begin(), entries.end(),
              [](const entry& a, const entry& b) { return a.mtime < b.mtime; });
    known_.clear();
    for (entry& e : entries) {
        if (options_.max_bytes != 0 && total > options_.max_bytes && e.name != keep) {
            if (::unlinkat(folder_.get(), e.name.c_str(), 0) == 0) {
                ++counters.evictions;
                this_call::count("cache evictions");
            }
            total -= e.size;
            continue;
        }
        known_.push_back({e.mtime, e.size, std::move(e.name)});
    }
    total_ = total;
    counters.entries = known_.size();
}

void cache_store::remove_if_same(const std::string& name, int fd) {
    const folder_lock lock(lock_mutex_, lock_fd_.get(), options_.lock_wait);
    if (!lock.held()) {
        ++counters.lock_timeouts;  // it stays; the next fill replaces it
        return;
    }
    struct stat named {
    }, open{};
    if (::fstatat(folder_.get(), name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) return;
    // Only the file we found damaged: another writer may have renamed a good one in since. With
    // no fd (what was there could not be opened), only what no writer makes: not a regular file.
    if (fd < 0 ? !S_ISREG(named.st_mode)
               : ::fstat(fd, &open) == 0 && named.st_dev == open.st_dev &&
                     named.st_ino == open.st_ino) {
        ::unlinkat(folder_.get(), name.c_str(), 0);
    }
}

fill_turn cache_store::take_turn(const std::string& key) {
    std::unique_lock lock(turns_mutex_);
    bool waited = false;
    while (turns_.count(key) != 0) {
        waited = true;
        turns_cv_.wait_for(lock, std::chrono::milliseconds(50));
        if (this_call::stop_requested()) return {nullptr, key, true};
    }
    turns_.insert(key);
    return {this, key, waited};
}

void cache_store::end_turn(const std::string& key) {
    {
        const std::lock_guard lock(turns_mutex_);
        turns_.erase(key);
    }
    turns_cv_.notify_all();
}

}  // namespace ferry::ops::detail

namespace ferry {

object_cache::object_cache(std::unique_ptr<ops::detail::cache_store> store)
    : store_(std::move(store)) {}

object_cache::~object_cache() = default;

cache_stats object_cache::stats() const {
    const auto& c = store_->counters;
    return {.hits = c.hits.load(),
            .misses = c.misses.load(),
            .evictions = c.evictions.load(),
            .bytes_fetched = c.bytes_fetched.load(),
            .bytes_stored = c.bytes_stored.load(),
            .entries = c.entries.load(),
            .revalidated = c.revalidated.load(),
            .not_kept = c.not_kept.load(),
            .failures = c.failures.load(),
            .listings = c.listings.load(),
            .lock_timeouts = c.lock_timeouts.load(),
            .invalid_entries = c.invalid_entries.load(),
            .bypassed = c.bypassed.load()};
}

const cache_options& object_cache::options() const noexcept {
    return store_->options();
}

std::filesystem::path object_cache::entry_path(std::string_view url) const {
    const auto key = ops::detail::cache_key(ops::detail::make_request(url), {}, store_->options());
    return key ? store_->path_of(*key) : std::filesystem::path();
}

std::shared_ptr<object_cache> ops::open_cache(const cache_options& options) {
    return std::make_shared<object_cache>(std::make_unique<detail::cache_store>(options));
}

}  // namespace ferry
