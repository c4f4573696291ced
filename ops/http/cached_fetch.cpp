// SPDX-License-Identifier: Apache-2.0
/// \file
/// `read_url` through a cache (see cached_fetch.hpp). A miss always fetches the whole object
/// (without `Range`), streamed to a temporary file in the folder, and answers from that file:
/// a ranged read on a miss pays for the whole object once so that every later range is local —
/// what shards read chunk by chunk want. Objects larger than the budget are not fetched whole:
/// the transfer stops at the announced size (or at the budget) and the read goes to the network
/// as it would without a cache.
#include "cached_fetch.hpp"

#include "ferry/this_call.hpp"

#include <unistd.h>

#include <cerrno>
#include <optional>

#include "cache_store.hpp"
#include "range.hpp"
#include "s3_text.hpp"

namespace ferry::ops::detail {

namespace {

/// What the cache does with one read: the request, the options without the cache, and the
/// answer's bounds.
struct cached_read {
    cache_store& store;
    const request& r;
    const http_options& options;  // the caller's
    http_options plain;           // the caller's without the cache: the network as it would be
    std::string key;
    std::string where;

    /// The answer, read from an entry's file of `size` bytes; nullopt when the read fails.
    std::optional<bytes> read_local(int fd, std::uint64_t size) const {
        std::uint64_t offset = 0;
        std::uint64_t n = size;
        if (options.range) {
            offset = options.range->offset;
            n = range_within(*options.range, size, 200, r.display, where);
        } else if (options.max_bytes != 0 && size > options.max_bytes) {
            throw http_error(r.display, 200,
                             where + "response body larger than max_bytes (" +
                                 std::to_string(options.max_bytes) + " bytes); Content-Length " +
                                 std::to_string(size),
                             false);
        }
        bytes out(static_cast<std::size_t>(n));
        auto* p = reinterpret_cast<char*>(out.data());
        while (n > 0) {
            const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(offset));
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) return std::nullopt;
            p += got;
            n -= static_cast<std::uint64_t>(got);
            offset += static_cast<std::uint64_t>(got);
        }
        return out;
    }

    /// A cache failure: the network answers, and the failure is counted.
    bytes from_network() const {
        ++store.counters.failures;
        this_call::count("cache failures");
        return fetch(r, plain);
    }

    bytes serve(const cache_hit& hit) const {
        store.touch(hit.fd.get());
        auto out = read_local(hit.fd.get(), hit.record.size);
        if (!out) return from_network();
        ++store.counters.hits;
        this_call::count("cache hits");
        return std::move(*out);
    }

    /// Fetches the object into the cache and answers from it; with `old`, conditionally (a 304
    /// answers from `old`).
    bytes fill(const cache_hit* old) const {
        std::unique_ptr<cache_writer> w;
        try {
            w = store.begin(key);
        } catch (const io_error&) {
            return from_network();
        }
        const std::uint64_t budget = store.options().max_bytes;
        bool too_big = false;
        body_sink sink;
        sink.start = [&](std::int64_t length) {
            too_big = budget != 0 && length > 0 && static_cast<std::uint64_t>(length) > budget;
            return !too_big;
        };
        sink.write = [&](const std::byte* data, std::size_t n) {
            if (w->write(data, n)) return true;
            too_big = w->too_big();
            return false;
        };
        http_options whole = plain;
        whole.range.reset();
        // A ranged caller bounds what it holds in memory; the whole object goes to disk.
        if (options.range) whole.max_bytes = 0;
        if (old != nullptr && !old->record.etag.empty()) {
            whole.headers.push_back("If-None-Match: " + old->record.etag);
        }
        fetch(r, whole, &sink);  // failures propagate; the temporary file goes with `w`
        if (sink.status == 304) {
            if (old == nullptr) return from_network();
            ++store.counters.revalidated;
            this_call::count("cache revalidated");
            return serve(*old);
        }
        if (sink.refused) {
            if (!too_big) return from_network();
            ++store.counters.not_kept;
            this_call::count("cache too big to keep");
            return fetch(r, plain);
        }
        ++store.counters.misses;
        this_call::count("cache misses");
        store.counters.bytes_fetched += w->size();
        // A commit that fails (folder gone, ...) still leaves the bytes in the open file.
        if (!store.commit(*w, {.url = key, .size = w->size(), .etag = sink.etag})) {
            ++store.counters.failures;
            this_call::count("cache failures");
        }
        auto out = read_local(w->fd(), w->size());
        if (!out) return from_network();
        return std::move(*out);
    }
};

/// Keys are stored in the entry's record, one per line: a URL with a line break is not cached.
bool cacheable(const std::string& key) {
    return key.find_first_of(std::string("\r\n\0", 3)) == std::string::npos;
}

}  // namespace

std::string cache_key(std::string_view url) {
    if (url.starts_with("s3://")) return unsigned_url(s3_object_request(url).url);
    return unsigned_url(url);
}

bytes cached_fetch(object_cache& cache, const request& r, const http_options& options) {
    http_options plain = options;
    plain.cache.reset();
    const cached_read read{cache.store(),
                           r,
                           options,
                           std::move(plain),
                           unsigned_url(r.url),
                           "read_url: '" + r.display + "': "};
    if (!cacheable(read.key)) return fetch(r, read.plain);
    cache_store& store = read.store;
    const bool revalidate = store.options().revalidate;
    std::optional<cache_hit> hit = store.find(read.key);
    if (hit && !revalidate) return read.serve(*hit);
    // One thread of this process fills a key at a time; the others wait, then read what it left
    // (without asking the server again: it was just asked).
    const fill_turn turn = store.take_turn(read.key);
    if (!hit || turn.waited()) {
        hit = store.find(read.key);
        if (hit && (turn.waited() || !revalidate)) return read.serve(*hit);
    }
    return read.fill(hit ? &*hit : nullptr);
}

}  // namespace ferry::ops::detail
