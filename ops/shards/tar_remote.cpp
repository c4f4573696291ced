// SPDX-License-Identifier: Apache-2.0
/// \file
/// libarchive's client callbacks for a remote shard (see tar_remote.hpp).

#include "tar_remote.hpp"

#include <archive.h>

#include <chrono>
#include <thread>

#include "ferry/error.hpp"
#include "ferry/this_call.hpp"

namespace ferry::shards_detail {

namespace {

// A transient failure (a reset connection, a 503) is tried again after these pauses.
constexpr std::chrono::milliseconds retry_pauses[] = {std::chrono::milliseconds(100),
                                                      std::chrono::milliseconds(400)};

la_ssize_t read_chunk(::archive* a, void* client, const void** out) {
    auto& r = *static_cast<tar_reader::remote*>(client);
    for (std::size_t attempt = 0;; ++attempt) {
        try {
            r.buffer = r.read(r.shard, r.offset, r.chunk);
            if (r.buffer.size() > r.chunk) r.buffer.truncate(r.chunk);
            r.offset += r.buffer.size();
            *out = r.buffer.data();
            return static_cast<la_ssize_t>(r.buffer.size());
        } catch (const ferry::error& e) {
            if (e.transient() && attempt < std::size(retry_pauses) &&
                !this_call::stop_requested()) {
                std::this_thread::sleep_for(retry_pauses[attempt]);
                continue;
            }
            r.error = std::current_exception();
        } catch (...) {  // nothing may cross libarchive's C frames
            r.error = std::current_exception();
        }
        archive_set_error(a, EIO, "reading the shard failed");
        return -1;
    }
}

// Skipping fetches nothing: the next chunk starts past what was skipped.
la_int64_t skip_bytes(::archive*, void* client, la_int64_t request) {
    auto& r = *static_cast<tar_reader::remote*>(client);
    r.offset += static_cast<std::uint64_t>(request);
    return request;
}

}  // namespace

int tar_reader::remote::open(::archive* a) {
    archive_read_set_read_callback(a, &read_chunk);
    archive_read_set_skip_callback(a, &skip_bytes);
    archive_read_set_callback_data(a, this);
    return archive_read_open1(a);
}

}  // namespace ferry::shards_detail
