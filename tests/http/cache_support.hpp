// SPDX-License-Identifier: Apache-2.0
/// \file
/// What the cache tests share: a server of named objects that counts what it is asked and what
/// it sends (ETags, 304s, ranges), a look at a cache folder's files, and an entry planted as
/// another user of the machine would plant one; the cases' folders are
/// `temp_folder`s (../support/temp_folder.hpp).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ferry/cache.hpp>
#include <ferry/http.hpp>

#include "../support/http_bodies.hpp"
#include "../support/http_server.hpp"
#include "../support/temp_folder.hpp"

namespace ferry_test {

/// Serves objects by target (query ignored), honouring Range and If-None-Match; counts GETs,
/// body bytes sent and 304s.
struct object_server {
    struct object {
        std::string body;
        std::string etag;  ///< sent as the ETag header when not empty
    };
    std::mutex m;
    std::map<std::string, object> objects;
    std::vector<std::string> conditions;  ///< every If-None-Match received
    std::vector<std::string> ranges;      ///< every Range received
    std::atomic<int> gets{0};
    std::atomic<int> not_modified{0};
    std::atomic<std::size_t> sent{0};
    http_server server{[this](const http_request& r) { return answer(r); }};

    void put(const std::string& path, std::string body, std::string etag = {}) {
        const std::lock_guard lock(m);
        objects[path] = {std::move(body), std::move(etag)};
    }
    [[nodiscard]] std::string url(const std::string& path) const { return server.url(path); }

    http_response answer(const http_request& r) {
        ++gets;
        object o;
        {
            const std::lock_guard lock(m);
            const auto it = objects.find(r.target.substr(0, r.target.find('?')));
            if (it == objects.end()) return {.status = 404, .body = "no such object"};
            o = it->second;
            if (!r.header("if-none-match").empty()) conditions.push_back(r.header("if-none-match"));
            if (!r.header("range").empty()) ranges.push_back(r.header("range"));
        }
        if (!o.etag.empty() && r.header("if-none-match") == o.etag) {
            ++not_modified;
            return {.status = 304, .headers = {{"ETag", o.etag}}};
        }
        http_response reply = ranged(o.body, r);
        if (!o.etag.empty()) reply.headers.emplace_back("ETag", o.etag);
        sent += reply.body.size();
        return reply;
    }
};

/// The names of everything in `dir`, recursively (relative, sorted), except its `.lock`.
inline std::vector<std::string> files_in(const std::filesystem::path& dir) {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
        const std::string name = std::filesystem::relative(e.path(), dir).string();
        if (name != ".lock") out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
}

/// The names in `dir` that are temporary files (`.tmp-...`).
inline std::vector<std::string> temp_files_in(const std::filesystem::path& dir) {
    std::vector<std::string> out;
    for (const auto& name : files_in(dir)) {
        if (name.starts_with(".tmp-")) out.push_back(name);
    }
    return out;
}

/// A file's bytes.
inline std::string file_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

/// Plants an entry for `path` in the cache folder `dir`, as another user of the machine would:
/// a cache of its own on `dir` fills it while `s` serves `bytes` for `path` (one GET), then `s`
/// serves what it served before. Returns the entry's file.
inline std::filesystem::path plant_entry(object_server& s, const std::string& path,
                                         const std::filesystem::path& dir, const std::string& bytes,
                                         bool shared_group = false) {
    object_server::object before;
    {
        const std::lock_guard lock(s.m);
        before = s.objects.at(path);
    }
    s.put(path, bytes);
    const auto planter = ferry::ops::open_cache({.dir = dir, .shared_group = shared_group});
    (void)ferry::ops::read_url(s.url(path), {.cache = planter});
    s.put(path, before.body, before.etag);
    return planter->entry_path(s.url(path));
}

/// What a read served, for a failure message: its first bytes (planted ones are text).
inline std::string served(const std::string& got) {
    return "served '" + got.substr(0, 32) + "'";
}

/// `url` read through `cache`, as text.
inline std::string read(const std::string& url, const std::shared_ptr<ferry::object_cache>& cache) {
    return as_string(ferry::ops::read_url(url, {.cache = cache}));
}

}  // namespace ferry_test
