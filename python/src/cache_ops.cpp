// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.http.open_cache`: a local disk cache for remote objects and shards
/// (`ferry::ops::open_cache`), as `ferry.http.Cache`, which `read_url(cache=...)` reads through.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "convert.hpp"
#include "ferry/cache.hpp"
#include "ferry/error.hpp"
#include "io_ops.hpp"

namespace ferry::python {
namespace {

/// `lock_wait` as Python gives it: finite seconds, at least 0.
std::chrono::milliseconds lock_wait_of(double seconds) {
    if (!std::isfinite(seconds) || seconds < 0.0) {
        throw ferry::invalid_argument(
            "open_cache(lock_wait=...): lock_wait is a number of seconds, at least 0, got " +
            std::to_string(seconds));
    }
    return ceil_millis(seconds);
}

std::string repr_of_stats(const ferry::cache_stats& s) {
    return "CacheStats(hits=" + std::to_string(s.hits) + ", misses=" + std::to_string(s.misses) +
           ", evictions=" + std::to_string(s.evictions) +
           ", bytes_fetched=" + std::to_string(s.bytes_fetched) +
           ", bytes_stored=" + std::to_string(s.bytes_stored) +
           ", entries=" + std::to_string(s.entries) +
           ", revalidated=" + std::to_string(s.revalidated) +
           ", not_kept=" + std::to_string(s.not_kept) + ", failures=" + std::to_string(s.failures) +
           ", listings=" + std::to_string(s.listings) +
           ", lock_timeouts=" + std::to_string(s.lock_timeouts) +
           ", invalid_entries=" + std::to_string(s.invalid_entries) +
           ", bypassed=" + std::to_string(s.bypassed) + ")";
}

std::string cache_repr(const ferry::object_cache& cache) {
    const auto& o = cache.options();
    std::string out = "Cache(" + py::repr(py::str(o.dir.string())).cast<std::string>();
    if (o.max_bytes != 0) out += ", max_bytes=" + std::to_string(o.max_bytes);
    if (o.revalidate) out += ", revalidate=True";
    if (o.shared_group) out += ", shared_group=True";
    if (o.cache_unidentified) out += ", cache_unidentified=True";
    return out + ")";
}

}  // namespace

void bind_cache_ops(py::module_& http) {
    py::class_<ferry::cache_stats>(http, "CacheStats", R"doc(
What this process's Cache has done since open_cache (ferry::cache_stats): hits, misses,
evictions, bytes_fetched, bytes_stored, entries (in the folder, as far as this process knows),
revalidated (hits a 304 confirmed), not_kept (objects over max_bytes or max_object_bytes: served,
not kept), failures (the cache failed and the network answered), listings, lock_timeouts,
invalid_entries (entry files found unusable: fetched again) and bypassed (reads with a credential
whose identity ferry cannot tell, or a URL with a line break, that went past the cache).)doc")
        .def_readonly("hits", &ferry::cache_stats::hits)
        .def_readonly("misses", &ferry::cache_stats::misses)
        .def_readonly("evictions", &ferry::cache_stats::evictions)
        .def_readonly("bytes_fetched", &ferry::cache_stats::bytes_fetched)
        .def_readonly("bytes_stored", &ferry::cache_stats::bytes_stored)
        .def_readonly("entries", &ferry::cache_stats::entries)
        .def_readonly("revalidated", &ferry::cache_stats::revalidated)
        .def_readonly("not_kept", &ferry::cache_stats::not_kept)
        .def_readonly("failures", &ferry::cache_stats::failures)
        .def_readonly("listings", &ferry::cache_stats::listings)
        .def_readonly("lock_timeouts", &ferry::cache_stats::lock_timeouts)
        .def_readonly("invalid_entries", &ferry::cache_stats::invalid_entries)
        .def_readonly("bypassed", &ferry::cache_stats::bypassed)
        .def("__repr__", &repr_of_stats);

    py::class_<ferry::object_cache, std::shared_ptr<ferry::object_cache>>(http, "Cache", R"doc(
A cache folder opened by ferry.http.open_cache (ferry::object_cache). Pass it to
read_url(cache=...): that op, every tar_samples(read_remote=...) and pipeline using it, and
other processes opening the same folder share its entries. stats() gives its counters;
entry_path(url) the file an object's entry lives in.)doc")
        .def("stats", &ferry::object_cache::stats,
             "This process's counters since open_cache (a CacheStats).")
        .def(
            "entry_path",
            [](const ferry::object_cache& c,
               const std::string& url) -> std::optional<std::filesystem::path> {
                auto path = c.entry_path(url);
                if (path.empty()) return std::nullopt;
                return path;
            },
            py::arg("url"), R"doc(
The file (pathlib.Path) that url's entry lives in, whether or not it exists, for a read_url with no
extra headers: to see what is cached. None when such a read is not cached (a credential of
unknown identity in the URL, without cache_unidentified).)doc")
        .def_property_readonly(
            "dir", [](const ferry::object_cache& c) { return c.options().dir; },
            "The folder, as given to open_cache (for display: the cache uses the folder it "
            "opened, even if this path names another one now).")
        .def_property_readonly(
            "max_bytes", [](const ferry::object_cache& c) { return c.options().max_bytes; },
            "The byte budget of the folder's entries; 0: no limit.")
        .def("__repr__", &cache_repr);

    http.def(
        "open_cache",
        [](const std::filesystem::path& dir, std::uint64_t max_bytes, bool revalidate,
           bool shared_group, double lock_wait, std::uint64_t max_object_bytes,
           bool cache_unidentified) {
            ferry::cache_options o;
            o.dir = dir;
            o.max_bytes = max_bytes;
            o.revalidate = revalidate;
            o.shared_group = shared_group;
            o.lock_wait = lock_wait_of(lock_wait);
            o.max_object_bytes = max_object_bytes;
            o.cache_unidentified = cache_unidentified;
            py::gil_scoped_release released;  // walks the path, lists the folder
            return ferry::ops::open_cache(o);
        },
        py::arg("dir"), py::kw_only(), py::arg("max_bytes") = 0, py::arg("revalidate") = false,
        py::arg("shared_group") = false, py::arg("lock_wait") = 10.0,
        py::arg("max_object_bytes") = std::uint64_t{64} << 30,
        py::arg("cache_unidentified") = false, R"doc(
Opens (creating it if needed) a cache folder for remote objects (ferry::ops::open_cache) and
returns a ferry.http.Cache; read_url(cache=it) reads http(s):// and s3:// URLs through it: a miss
downloads the whole object into the folder (streamed to disk) and answers from there, a hit reads
the local file with no request, a range is read from the local file. dir: a str or path;
max_bytes: the entries' byte budget, least recently used first out (0: no limit); revalidate:
ask the server on every hit whether the object changed (If-None-Match); shared_group: the
folder's group shares it (else this user alone); lock_wait: seconds to wait for the folder's
lock before answering a fill without keeping it; max_object_bytes: the largest object kept;
cache_unidentified: also cache reads carrying a credential whose identity ferry cannot tell (a
bearer token, a cookie). Raises ferry.IOError naming the folder and the fix when it cannot be
created or written or is refused for its owner or mode, ValueError for a bad lock_wait.)doc");
}

}  // namespace ferry::python
