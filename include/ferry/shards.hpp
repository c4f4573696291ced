// SPDX-License-Identifier: Apache-2.0
/// \file
/// Tar shards in the WebDataset layout: `ferry::sources::tar_samples`, a source of samples
/// (`ferry::sample`: the members of a shard that share a key) read as a stream, shards shuffled
/// and split over ranks, samples shuffled in a bounded buffer. Component `ferry::shards`
/// (libarchive).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ferry/bytes.hpp"
#include "ferry/export.hpp"
#include "ferry/retry.hpp"
#include "ferry/sampling.hpp"

namespace ferry {

/// A sample's members by extension (`"jpg"`, `"cls"`, `"seg.png"`): what `sample::fields` holds.
/// A map you read as `std::map`'s, whose `at` says which sample lacked which field, and which
/// carries the shard's damage: the fields of a damaged sample (`sample::damaged()`) throw its
/// `ferry::decode_error` or `ferry::io_error` from `at`, so the stage that reads them fails the
/// sample under its own error policy and the failure is counted like any other.
class FERRY_API sample_fields {
  public:
    /// The map's type: ordered by extension, looked up with any string type.
    using map_type = std::map<std::string, ferry::bytes, std::less<>>;
    using const_iterator = map_type::const_iterator;

    /// The member with extension `ext`. Throws the sample's damage when it is damaged, else
    /// `ferry::decode_error` naming the shard, the key and the missing extension (and those the
    /// sample has).
    [[nodiscard]] const ferry::bytes& at(std::string_view ext) const;
    /// Whether the sample has a member with extension `ext` (false for a damaged sample's lost
    /// members).
    [[nodiscard]] bool contains(std::string_view ext) const { return map_.find(ext) != map_.end(); }
    /// The member with extension `ext`, or null.
    [[nodiscard]] const ferry::bytes* find(std::string_view ext) const {
        const auto it = map_.find(ext);
        return it == map_.end() ? nullptr : &it->second;
    }
    /// How many members.
    [[nodiscard]] std::size_t size() const noexcept { return map_.size(); }
    /// Whether there are none.
    [[nodiscard]] bool empty() const noexcept { return map_.empty(); }
    /// The members in extension order.
    [[nodiscard]] const_iterator begin() const noexcept { return map_.begin(); }
    [[nodiscard]] const_iterator end() const noexcept { return map_.end(); }

    /// Adds a member (the reader's call; false when `ext` is there already).
    bool insert(std::string ext, ferry::bytes data);
    /// Makes the sample damaged (the reader's call): `at` throws `damage` from now on.
    void set_damage(std::exception_ptr damage) noexcept { damage_ = std::move(damage); }
    /// The damage, or null.
    [[nodiscard]] const std::exception_ptr& damage() const noexcept { return damage_; }
    /// What `at`'s "no such field" message calls the sample (the reader's call).
    void set_name(std::string name) { name_ = std::move(name); }

  private:
    map_type map_;
    std::exception_ptr damage_;
    std::string name_;
};

/// One sample of a tar shard: the consecutive members whose names share a key (WebDataset's
/// rule: `dir/000123.jpg` and `dir/000123.seg.png` are fields `jpg` and `seg.png` of key
/// `dir/000123`; the extension is everything after the first dot of the file name, lower-cased).
struct sample {
    std::string key;    ///< the members' common name before the extension
    std::string shard;  ///< the shard it was read from, as given to `tar_samples`
    /// Names the sample in failure records, log lines and quarantine files: `<shard>#<key>` (for a
    /// shard's lost rest, `<shard>#@<byte offset>`). `ferry::from` uses it by itself.
    std::string path;
    /// The members by extension; see `sample_fields` for what a damaged sample's fields do.
    sample_fields fields;

    /// Whether the shard was damaged here: a member cut short, over `max_member_bytes`, a
    /// duplicate extension, a bad header (the rest of the shard is lost: this sample stands for
    /// it), or a shard that cannot be opened. Its `fields.at()` throws the cause.
    [[nodiscard]] bool damaged() const noexcept { return fields.damage() != nullptr; }
};

namespace sources {

/// Reads up to `length` bytes at `offset` of a shard that is no local file (its URL as given to
/// `tar_samples`): fewer only where the shard ends, none past it. A failure throws (a
/// `ferry::error`; transient ones are read again as `tar_options::remote_retry` says).
/// `ferry::ops::url_ranges` (ferry::http) is one for `s3://` and `http(s)://` shards.
using range_reader = std::function<ferry::bytes(const std::string& shard, std::uint64_t offset,
                                                std::uint64_t length)>;

/// How `tar_samples` reads its shards.
struct tar_options {
    /// Over shards: each epoch visits the shards in `ferry::sampler(shards.size(), sampling)`'s
    /// order (shuffled per (seed, epoch) with `.shuffle`) and reads this rank's share
    /// (`.rank`/`.world_size`; `remainder::pad` reads a few shards twice so that every rank reads
    /// as many shards). Ranks get as many shards, not as many samples: shards of equal sample
    /// counts give equal epochs.
    ferry::sampling sampling{};
    /// Samples are shuffled within a buffer of this many (WebDataset's `shuffle(n)`): memory is
    /// at most this many samples (each at most `max_sample_bytes` of member data and
    /// `max_sample_members` members, plus the one being grouped); 0 or 1 delivers them in shard
    /// order. The buffer's draws depend only on (`sampling.seed`, epoch, rank), so a resumed
    /// epoch delivers the same order.
    std::size_t shuffle_buffer = 0;
    /// A member larger than this (as its header declares) is not read: its sample is damaged.
    std::uint64_t max_member_bytes = std::uint64_t{1} << 30;
    /// A sample whose members together declare more bytes than this is damaged at the member
    /// that crosses it: that member and the key's later members are not read (a small
    /// compressed shard can expand into one huge sample of many members under
    /// `max_member_bytes` each).
    std::uint64_t max_sample_bytes = std::uint64_t{1} << 30;
    /// A sample with more members than this is damaged at the first one past it; that member and
    /// the key's later members are not read.
    std::size_t max_sample_members = 256;
    /// How shards that are not local files (`s3://...`, `https://...`) are read, chunk by chunk:
    /// e.g. `ferry::ops::url_ranges{}`. Empty: only local paths and `file://` URLs.
    range_reader read_remote{};
    /// Bytes per read of a remote shard (memory per shard being read); members larger than a
    /// chunk stream through it, members skipped (over `max_member_bytes`) are not fetched.
    std::size_t remote_chunk = std::size_t{8} << 20;
    /// How a read of a remote shard (`read_remote`) that failed is tried again: up to
    /// `attempts` reads in all; after a transient failure (`when`, by default
    /// `ferry::is_transient`: a reset, a timeout, a 5xx, S3's `SlowDown`; a failure that is not a
    /// `ferry::error` is not read again) a pause of `backoff * multiplier^k` (times a random
    /// factor in [1 - jitter, 1]), at least the failure's `retry_after()` (a server's
    /// `Retry-After`). The default reads 3 times, pausing 100 ms, then 400 ms. A pause ends
    /// within about 10 ms when the pipeline stops (`stop()`, destruction, an epoch left early):
    /// no read follows, and the read fails with its last failure. `then` does not apply: a read
    /// that failed every attempt damages its sample, which fails under the reading stage's
    /// `on_error`. The pause blocks the thread reading the shard (the source's).
    ferry::retry remote_retry{
        .attempts = 3, .backoff = std::chrono::milliseconds(100), .multiplier = 4.0};
};

namespace detail {
class tar_stream;  // the shards' reader (libarchive), in the ferry::shards library
/// Epoch `epoch` from its `position`th sample on.
FERRY_API std::shared_ptr<tar_stream> open_tar_stream(
    std::shared_ptr<const std::vector<std::string>> shards, const tar_options& options,
    std::uint64_t epoch, std::uint64_t position);
/// The next sample into `out`; false at the epoch's end.
FERRY_API bool next_tar_sample(tar_stream& stream, ferry::sample& out);
}  // namespace detail

/// One epoch of samples: a single-pass input range (each sample is moved out as it is read).
class tar_epoch {
  public:
    class iterator {
      public:
        using value_type = ferry::sample;
        using difference_type = std::ptrdiff_t;
        using reference = ferry::sample&&;
        iterator() = default;
        reference operator*() const { return std::move(owner_->current_); }
        iterator& operator++() {
            owner_->advance();
            return *this;
        }
        void operator++(int) { ++*this; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) { return it.at_end(); }

      private:
        friend class tar_epoch;
        explicit iterator(tar_epoch* owner) : owner_(owner) {}
        [[nodiscard]] bool at_end() const { return owner_ == nullptr || owner_->done_; }
        tar_epoch* owner_ = nullptr;
    };

    explicit tar_epoch(std::shared_ptr<detail::tar_stream> stream) : stream_(std::move(stream)) {}
    /// Reads the first sample (once: the range is single-pass).
    [[nodiscard]] iterator begin() {
        if (!started_) {
            started_ = true;
            advance();
        }
        return iterator(this);
    }
    [[nodiscard]] std::default_sentinel_t end() const noexcept { return {}; }

  private:
    void advance() { done_ = !detail::next_tar_sample(*stream_, current_); }
    std::shared_ptr<detail::tar_stream> stream_;
    ferry::sample current_{};
    bool started_ = false;
    bool done_ = false;
};

/// What `tar_samples` returns: an epoch factory for `ferry::from` (each call opens an epoch).
class FERRY_API tar_samples_source {
  public:
    /// Checks `options` (see `tar_samples`).
    tar_samples_source(std::vector<std::string> shards, const tar_options& options);
    /// The samples of `epoch` on this rank.
    [[nodiscard]] tar_epoch operator()(std::uint64_t epoch) const {
        return tar_epoch(detail::open_tar_stream(shards_, options_, epoch, 0));
    }
    /// The samples of `epoch` on this rank from its `position`th on (0: the first): what the
    /// one-argument call delivers after its first `position` samples, read without their data
    /// where the shards allow (see `tar_samples`). `ferry::from` calls it to resume.
    [[nodiscard]] tar_epoch operator()(std::uint64_t epoch, std::uint64_t position) const {
        return tar_epoch(detail::open_tar_stream(shards_, options_, epoch, position));
    }
    /// The shards, as given.
    [[nodiscard]] const std::vector<std::string>& shards() const noexcept { return *shards_; }

  private:
    std::shared_ptr<const std::vector<std::string>> shards_;
    tar_options options_;
};

/// Samples from tar shards in WebDataset's layout (`.tar`, `.tar.gz`, `.tar.zst`, `.tar.xz`,
/// `.tar.bz2`, `.tar.lz4`; the compression is recognised from the bytes, and only those that
/// libarchive decompresses in-process are read: a shard compressed otherwise, e.g. with lrzip,
/// grzip or lzop, for which libarchive would run an external program, is one damaged sample
/// saying so), for `ferry::from`. Each shard is
/// read as a stream with libarchive — one member in memory at a time, plus the shuffle buffer —
/// and its consecutive members with one key make one sample (a key that continues in the next
/// shard starts a new sample there). Members that are not regular files and names without an
/// extension are skipped. Shards are local paths or `file://` URLs, or with
/// `tar_options::read_remote` any URL it reads (`s3://`, `https://` with `ferry::ops::url_ranges`).
/// \code
///   auto shards = ferry::sources::list_objects("s3://bucket/train/");
///   auto src = ferry::sources::tar_samples(shards, {.read_remote = ferry::ops::url_ranges{}});
/// \endcode
///
/// Nothing is lost silently: a shard that cannot be opened, a bad header (the rest of that shard
/// cannot be read), a member cut short or over `max_member_bytes`, a sample over
/// `max_sample_bytes` or `max_sample_members`, or a key with two members of one extension gives
/// a damaged sample (`sample::damaged()`) whose `fields.at()` throws the cause, so the first
/// stage that reads it fails it under its error policy and the pipeline's accounting counts it.
/// Messages name the shard with its URL's credentials redacted (`X-Amz-Signature=REDACTED`) and
/// member names and keys with control characters escaped (`\n`, `\x1b`).
///
/// Resume (`build({.resume_from = st})`) is exact and cheap: `ferry::from` opens the saved epoch
/// at its position (`tar_samples_source(epoch, position)`), which reaches it as reading would —
/// the same samples, shuffle-buffer draws and damage — but without reading member bodies where
/// the shards allow: a local or uncompressed remote shard before the position is walked header
/// by header (one read of 1.5 KiB per member, fewer for small members; a remote shard's skipped
/// bodies are not fetched), and only the samples still in the shuffle buffer at the position
/// (at most `shuffle_buffer`, plus the one being grouped) have their bodies read, by offset. A
/// compressed shard (`.tar.gz`, `.tar.zst`, ...) before the position is decompressed and read
/// whole, as an uninterrupted run reads it; a shard the walk finds damaged is read again up to
/// the damage, so that its damaged sample says exactly what an uninterrupted run's says. At the
/// middle of an epoch of 20 local shards of 500 samples of 20 KB (page cache warm), the first
/// resumed sample comes 1.6x sooner than by reading the epoch again (4x with 100 KB samples;
/// `perf/shard_resume`), and an uncompressed remote shard fetches 7% of the bytes before the
/// position (tests/shards/resume.cpp).
///
/// Throws `ferry::invalid_argument` for options `ferry::sampler` rejects and, without
/// `read_remote`, for shards that are neither local paths nor `file://` URLs.
/// \code
///   auto shards = ferry::sources::lines("shards.txt");
///   auto pipe = ferry::from(ferry::sources::tar_samples(shards, {.sampling = {.shuffle = true,
///                               .seed = 1, .rank = w.rank, .world_size = w.size},
///                               .shuffle_buffer = 1000}))
///                   .map([](const ferry::sample& s) {
///                       return decode(s.fields.at("jpg"), s.fields.at("cls"));
///                   }, {.concurrency = 8, .on_error = ferry::skip})
///                   .batch(32)
///                   .build();
/// \endcode
[[nodiscard]] FERRY_API tar_samples_source tar_samples(std::vector<std::string> shards,
                                                       const tar_options& options = {});
/// The same for shards given as paths (e.g. `ferry::sources::files(dir, {.extensions =
/// {".tar"}})`).
[[nodiscard]] FERRY_API tar_samples_source
tar_samples(std::span<const std::filesystem::path> shards, const tar_options& options = {});

}  // namespace sources
}  // namespace ferry
