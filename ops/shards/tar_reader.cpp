// SPDX-License-Identifier: Apache-2.0
/// \file
/// `tar_reader`: libarchive's streaming read of one shard.

#include "tar_reader.hpp"

#include "tar_client.hpp"

#include <archive.h>
#include <archive_entry.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>

#include "ferry/detail/redact.hpp"
#include "ferry/error.hpp"

namespace ferry::shards_detail {

namespace {

// libarchive's read block: large enough that a local disk or page cache streams at full speed,
// small next to the members themselves.
constexpr std::size_t block_bytes = 256 * 1024;

/// A compression libarchive may read a shard with, if it does so in-process.
struct filter {
    const char* name;
    int (*support)(::archive*);
    std::string_view magic;  ///< the first bytes of such a stream
};

// gzip, bzip2, xz, zstd and lz4: what tar shards use, each with its library linked into Debian's
// libarchive. libarchive falls back to running an external program (found on PATH) where a
// library is missing; archive_read_support_filter_X then returns ARCHIVE_WARN, and such a filter
// is left out: a shard's first bytes must not choose a program to run.
const std::array<filter, 5> readable{{
    {"gzip", archive_read_support_filter_gzip, std::string_view("\x1f\x8b", 2)},
    {"bzip2", archive_read_support_filter_bzip2, "BZh"},
    {"xz", archive_read_support_filter_xz,
     std::string_view("\xfd"
                      "7zXZ\0",
                      6)},
    {"zstd", archive_read_support_filter_zstd, "\x28\xb5\x2f\xfd"},
    {"lz4", archive_read_support_filter_lz4, "\x04\x22\x4d\x18"},
}};

// Compressions ferry does not read, named when a shard that is none of the above starts with
// one: libarchive reads lrzip, grzip and lzop only through their programs; lzip and compress
// are not formats tar shards use.
const std::array<filter, 5> refused{{
    {"lrzip", nullptr, "LRZI"},
    {"grzip", nullptr, "GRZipII"},
    {"lzop", nullptr, std::string_view("\x89LZO\0\r\n\x1a\n", 9)},
    {"lzip", nullptr, "LZIP"},
    {"compress (.Z)", nullptr, "\x1f\x9d"},
}};

/// Whether libarchive reads `f` in-process: asked once per filter and process.
bool in_process(std::size_t i) {
    static const std::array<bool, readable.size()> ok = [] {
        std::array<bool, readable.size()> out{};
        for (std::size_t j = 0; j < readable.size(); ++j) {
            ::archive* probe = archive_read_new();
            out[j] = probe != nullptr && readable[j].support(probe) == ARCHIVE_OK;
            if (probe != nullptr) archive_read_free(probe);
        }
        return out;
    }();
    return ok[i];
}

std::string escaped(const char* libarchive_text, const char* otherwise) {
    return detail::escape_controls(libarchive_text != nullptr ? libarchive_text : otherwise);
}

}  // namespace

std::string shard_label(const std::string& shard) {
    return detail::escape_controls(detail::redact_url(shard));
}

tar_reader::tar_reader(const std::string& shard, const sources::tar_options& options, bool walking)
    : shard_(shard_label(shard)),
      max_member_bytes_(options.max_member_bytes),
      client_(std::make_unique<client>(shard, options)),
      chunk_(client_->bytes.remote() ? options.remote_chunk : block_bytes) {
    walk(walking);  // before the open, whose reads recognise the format
    if (client_->bytes.open_errno() != 0) {
        open_failed(client_->bytes.open_errno(), std::strerror(client_->bytes.open_errno()));
        return;
    }
    if (!new_archive()) return;
    if (client_->open(a_) != ARCHIVE_OK) {
        open_failed(archive_errno(a_), archive_error_string(a_));
        return;
    }
    // Filter 0 is the one the tar format reads from: a decompressor, or the shard's own bytes.
    compressed_ = archive_filter_code(a_, 0) != ARCHIVE_FILTER_NONE;
    walk(walking);
}

void tar_reader::walk(bool on) {
    walking_ = on;
    client_->min_window = on && !compressed_ ? std::min(walk_window, chunk_) : chunk_;
    client_->max_window = chunk_;
    client_->window = client_->min_window;
}

bool tar_reader::new_archive() {
    a_ = archive_read_new();
    if (a_ == nullptr) {
        open_error_ = std::make_exception_ptr(io_error(
            "tar_samples: shard '" + shard_ + "': libarchive could not allocate a reader"));
        return false;
    }
    // The compressions libarchive reads in-process (not filter_all, which lets a shard's first
    // bytes start lrzip, grzip or lzop), recognised from the bytes; tar formats only.
    archive_read_support_filter_none(a_);
    for (std::size_t i = 0; i < readable.size(); ++i) {
        if (in_process(i)) readable[i].support(a_);
    }
    archive_read_support_format_tar(a_);
    return true;
}

void tar_reader::open_failed(int err, const char* text) {
    // libarchive recognises the format while it opens: bytes that are no tar (an empty file
    // included) are a decode error; a missing file is for good; other failures (EIO, EMFILE)
    // may pass. A failed read is that read's own error.
    const std::string why = escaped(text, "unknown error");
    if (client_ && client_->error) {
        open_error_ = read_error();
    } else if (err == EILSEQ) {
        // ARCHIVE_ERRNO_FILE_FORMAT, which libarchive's public headers do not define: EFTYPE
        // where the system has it, else EILSEQ (Linux).
        const auto compression = unsupported_compression();
        open_error_ = std::make_exception_ptr(decode_error(
            "tar_samples: shard '" + shard_ +
            "': " + (compression.empty() ? "not a tar archive: " + why : compression)));
    } else {
        open_error_ = std::make_exception_ptr(
            io_error("tar_samples: shard '" + shard_ + "': cannot open: " + why,
                     err != ENOENT && err != EACCES && err != EISDIR));
    }
}

std::string tar_reader::unsupported_compression() const {
    // Only for a shard libarchive did not recognise: its first bytes again (one small read).
    std::string head;
    try {
        const auto bytes = client_->bytes.read(0, 16);
        head.assign(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    } catch (const std::exception&) {
        return {};
    }
    const auto starts = [&](std::string_view magic) { return head.starts_with(magic); };
    for (std::size_t i = 0; i < readable.size(); ++i) {
        if (!in_process(i) && starts(readable[i].magic)) {
            return std::string("compressed with ") + readable[i].name +
                   ", which this libarchive decompresses only by running an external program: "
                   "unsupported (ferry runs no program a shard names)";
        }
    }
    for (const auto& f : refused) {
        if (starts(f.magic)) {
            return std::string("compressed with ") + f.name +
                   ", which ferry does not read: unsupported (shards may be plain tar or "
                   "compressed with gzip, bzip2, xz, zstd or lz4)";
        }
    }
    return {};
}

std::exception_ptr tar_reader::read_error() const {
    // The read's failure, named with the shard and where it stopped; as transient as the cause,
    // so a retry of the sample's stage can tell.
    std::string cause = "unknown error";
    bool transient = true;
    try {
        std::rethrow_exception(client_->error);
    } catch (const ferry::error& e) {
        cause = e.what();
        transient = e.transient();
    } catch (const std::exception& e) {
        cause = e.what();
    } catch (...) {
    }
    // The cause is the range reader's, which may name the shard's URL in full.
    return std::make_exception_ptr(
        io_error("tar_samples: shard '" + shard_ + "': reading at byte " +
                     std::to_string(client_->offset) + " failed: " + detail::redact_text(cause),
                 transient));
}

tar_reader::~tar_reader() {
    if (a_ != nullptr) archive_read_free(a_);
}

std::string tar_reader::where(const std::string& name) const {
    return "tar_samples: shard '" + shard_ + "'" +
           (name.empty() ? "" : ", member '" + detail::escape_controls(name) + "'");
}

member tar_reader::fail(std::string name, const std::string& what, bool io) {
    finished_ = true;
    member m;
    m.status = member_status::damaged;
    // Where reading stopped, in the uncompressed tar: what names a shard's lost rest.
    m.offset = a_ != nullptr ? static_cast<std::uint64_t>(archive_filter_bytes(a_, 0)) : 0;
    const std::string text = where(name) + ": " + what;
    if (client_ && client_->error) {
        m.damage = read_error();
    } else {
        m.damage = io ? std::make_exception_ptr(io_error(text, false))
                      : std::make_exception_ptr(decode_error(text));
    }
    m.name = std::move(name);
    return m;
}

member tar_reader::next() {
    auto m = read_next();
    if (m.status != member_status::end) ++returned_;
    return m;
}

member tar_reader::read_next() {
    if (finished_) return {};
    if (open_error_) {
        finished_ = true;
        member m;
        m.status = member_status::damaged;
        m.damage = open_error_;
        return m;
    }
    for (;;) {
        archive_entry* entry = nullptr;
        const int rc = archive_read_next_header(a_, &entry);
        if (rc == ARCHIVE_EOF) {
            finished_ = true;
            return {};
        }
        if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN) {
            // RETRY (a damaged header libarchive would step over, block by block) ends the shard
            // as FATAL does: what follows a bad header cannot be trusted to be the next sample.
            const std::string after = last_.empty()
                                          ? "at the start"
                                          : "after member '" + detail::escape_controls(last_) + "'";
            return fail({},
                        "bad header " + after + " (read stopped at byte " +
                            std::to_string(archive_filter_bytes(a_, 0)) +
                            "): " + escaped(archive_error_string(a_), "unreadable"),
                        false);
        }
        const char* path = archive_entry_pathname(entry);
        std::string name = path != nullptr ? path : "";
        last_ = name;
        const auto offset = static_cast<std::uint64_t>(archive_read_header_position(a_));
        if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry) != nullptr) {
            continue;  // directories, links, devices: not samples
        }
        const auto declared = archive_entry_size_is_set(entry) != 0
                                  ? static_cast<std::uint64_t>(archive_entry_size(entry))
                                  : std::uint64_t{0};
        std::exception_ptr refusal;
        if (declared <= max_member_bytes_ && admit_) refusal = admit_(name, declared);
        if (declared > max_member_bytes_ || refusal) {
            member m;
            m.status = member_status::too_big;
            m.offset = offset;
            m.refused = refusal != nullptr;
            m.damage = refusal ? std::move(refusal)
                               : std::make_exception_ptr(
                                     decode_error(where(name) + ": " + std::to_string(declared) +
                                                  " bytes, over max_member_bytes (" +
                                                  std::to_string(max_member_bytes_) + ")"));
            m.name = std::move(name);
            // Skipping seeks past its data (or reads it, compressed). A shard cut inside it has
            // nothing after it to read: this member's damage says all there is.
            if (archive_read_data_skip(a_) != ARCHIVE_OK) finished_ = true;
            return m;
        }
        member m;
        m.status = member_status::member;
        m.offset = offset;
        // A sparse member's bytes are not its data (libarchive fills the holes): it is read.
        if (walking_ && !compressed_ && archive_entry_sparse_count(entry) == 0) {
            // The data starts where the header ends: what the format has consumed so far.
            m.skipped = true;
            m.data_offset = static_cast<std::uint64_t>(archive_filter_bytes(a_, 0));
            m.size = declared;
            if (archive_read_data_skip(a_) != ARCHIVE_OK) {
                return fail(std::move(name), "cut short (found while walking its headers)", false);
            }
            m.name = std::move(name);
            return m;
        }
        m.data = ferry::bytes(static_cast<std::size_t>(declared));
        std::size_t got = 0;
        while (got < m.data.size()) {
            const la_ssize_t n = archive_read_data(a_, m.data.data() + got, m.data.size() - got);
            if (n < 0) {
                return fail(std::move(name),
                            "cut short after " + std::to_string(got) + " of " +
                                std::to_string(declared) +
                                " bytes: " + escaped(archive_error_string(a_), "read error"),
                            false);
            }
            if (n == 0) break;
            got += static_cast<std::size_t>(n);
        }
        if (got < m.data.size()) {
            return fail(std::move(name),
                        "cut short after " + std::to_string(got) + " of " +
                            std::to_string(declared) + " bytes",
                        false);
        }
        m.name = std::move(name);
        return m;
    }
}

}  // namespace ferry::shards_detail
