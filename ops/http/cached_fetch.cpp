// SPDX-License-Identifier: Apache-2.0
/// \file
/// `read_url` through a cache (see cached_fetch.hpp). A miss always fetches the whole object
/// (without `Range`), streamed to a temporary file in the folder, and answers from that file:
/// a ranged read on a miss pays for the whole object once so that every later range is local —
/// what shards read chunk by chunk want. Objects larger than the writer's cap (the budget,
/// `max_object_bytes`) are not fetched whole: the transfer stops at the announced size (or at
/// the cap, for a body of unannounced length that may never end) and the read goes to the
/// network as it would without a cache. Whatever the path, the answer keeps to `max_bytes`.
#include "cached_fetch.hpp"

#include "ferry/this_call.hpp"

#include <unistd.h>

#include <cerrno>
#include <optional>

#include "cache_key.hpp"
#include "cache_store.hpp"
#include "range.hpp"

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
        }
        // As from the network: the answer (a range's bytes, or the whole object) within max_bytes.
        if (options.max_bytes != 0 && n > options.max_bytes) {
            throw http_error(r.display, options.range ? 206 : 200,
                             where + "response body larger than max_bytes (" +
                                 std::to_string(options.max_bytes) + " bytes); Content-Length " +
                                 std::to_string(n),
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
        const std::uint64_t cap = w->max_bytes();
        bool too_big = false;
        body_sink sink;
        sink.start = [&](std::int64_t length) {
            too_big = cap != 0 && length > 0 && static_cast<std::uint64_t>(length) > cap;
            // No more than announced reaches the disk, whatever the server sends.
            if (length >= 0) w->expect(static_cast<std::uint64_t>(length));
            return !too_big;
        };
        sink.write = [&](const std::byte* data, std::size_t n) {
            if (w->write(data, n)) return true;
            too_big = w->too_big();
            return false;
        };
        http_options whole = plain;
        whole.range.reset();
        // A ranged caller bounds what it holds in memory; the whole object goes to disk, within
        // the writer's cap (the budget, max_object_bytes).
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

}  // namespace

bytes cached_fetch(object_cache& cache, const request& r, const http_options& options) {
    http_options plain = options;
    plain.cache.reset();
    cache_store& store = cache.store();
    auto key = cache_key(r, options, store.options());
    if (!key) {
        ++store.counters.bypassed;
        this_call::count("cache bypassed");
        return fetch(r, plain);
    }
    const cached_read read{
        store, r, options, std::move(plain), std::move(*key), "read_url: '" + r.display + "': "};
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
