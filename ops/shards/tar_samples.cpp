// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::sources::tar_samples`: shards in the sampler's order, members grouped into samples by
/// key, and WebDataset's shuffle buffer with draws that depend only on (seed, epoch, rank).

#include <algorithm>
#include <cctype>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "ferry/error.hpp"
#include "ferry/shards.hpp"
#include "tar_reader.hpp"

namespace ferry {

const ferry::bytes& sample_fields::at(std::string_view ext) const {
    if (damage_) std::rethrow_exception(damage_);
    const auto it = map_.find(ext);
    if (it != map_.end()) return it->second;
    std::string have;
    for (const auto& [name, data] : map_) have += (have.empty() ? "" : ", ") + name;
    throw decode_error(name_ + ": no member with extension '" + std::string(ext) +
                       "' (it has: " + (have.empty() ? "none" : have) + ")");
}

bool sample_fields::insert(std::string ext, ferry::bytes data) {
    return map_.emplace(std::move(ext), std::move(data)).second;
}

namespace sources {

namespace {

// WebDataset's key rule (webdataset's base_plus_ext): the key is the name up to the first dot of
// its last component, the extension the rest, lower-cased. Names whose last component has no dot,
// or starts with one, have no key.
bool split_name(const std::string& name, std::string& key, std::string& ext) {
    const auto slash = name.rfind('/');
    const std::size_t base = slash == std::string::npos ? 0 : slash + 1;
    const auto dot = name.find('.', base);
    if (dot == std::string::npos || dot == base || dot + 1 == name.size()) return false;
    key.assign(name, 0, dot);
    ext.assign(name, dot + 1);
    for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return true;
}

std::string local_file(const std::string& shard) {
    constexpr std::string_view file_scheme = "file://";
    if (shard.starts_with(file_scheme)) return shard.substr(file_scheme.size());
    return shard;
}

// splitmix64's finaliser: spreads (seed, epoch, rank) over the generator's seed.
std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace

namespace detail {

class tar_stream {
  public:
    tar_stream(std::shared_ptr<const std::vector<std::string>> shards, const tar_options& options,
               std::uint64_t epoch)
        : shards_(std::move(shards)),
          options_(options),
          order_(shards_->size(), options.sampling),
          epoch_(epoch),
          rng_(mix(mix(mix(options.sampling.seed) ^ epoch) ^ options.sampling.rank)),
          initial_(std::min<std::size_t>(options.shuffle_buffer, 100)) {}

    // WebDataset's shuffle: each step adds up to two samples to the buffer (so it fills while it
    // delivers) and, once it holds `initial_`, hands out one drawn at random.
    bool next(sample& out) {
        if (options_.shuffle_buffer <= 1) return pull(out);
        while (!exhausted_) {
            if (!add()) break;
            if (buffer_.size() < options_.shuffle_buffer) add();
            if (buffer_.size() >= initial_) break;
        }
        if (buffer_.empty()) return false;
        // A plain modulo, not std::uniform_int_distribution, whose results differ between
        // standard libraries: every machine must deliver the same order (the bias of a 64-bit
        // draw over a buffer's size is negligible).
        const auto j = static_cast<std::size_t>(rng_() % buffer_.size());
        out = std::move(buffer_[j]);
        if (j + 1 != buffer_.size()) buffer_[j] = std::move(buffer_.back());
        buffer_.pop_back();
        return true;
    }

  private:
    bool add() {
        if (exhausted_) return false;
        sample s;
        if (!pull(s)) {
            exhausted_ = true;
            return false;
        }
        buffer_.push_back(std::move(s));
        return true;
    }

    // The next sample in shard order.
    bool pull(sample& out) {
        for (;;) {
            if (!ready_.empty()) {
                out = std::move(ready_.front());
                ready_.pop_front();
                return true;
            }
            if (!reader_) {
                if (next_shard_ == order_.size()) return false;
                shard_ = (*shards_)[order_.index(epoch_, next_shard_++)];
                const bool remote = options_.read_remote &&
                                    shard_.find("://") != std::string::npos &&
                                    !shard_.starts_with("file://");
                if (remote) {
                    reader_.emplace(options_.read_remote, options_.remote_chunk, shard_,
                                    options_.max_member_bytes);
                } else {
                    reader_.emplace(local_file(shard_), shard_, options_.max_member_bytes);
                }
            }
            read_member();
        }
    }

    void read_member() {
        auto m = reader_->next();
        std::string key;
        std::string ext;
        switch (m.status) {
            case shards_detail::member_status::member:
                if (!split_name(m.name, key, ext)) return;
                group_for(key);
                if (!group_->fields.insert(ext, std::move(m.data)) && !group_->damaged()) {
                    group_->fields.set_damage(std::make_exception_ptr(
                        decode_error("tar_samples: shard '" + shard_ + "', sample '" + key +
                                     "': two members with extension '" + ext + "'")));
                }
                return;
            case shards_detail::member_status::too_big:
            case shards_detail::member_status::damaged: {
                const bool ends = m.status == shards_detail::member_status::damaged;
                if (!m.name.empty()) {
                    if (!split_name(m.name, key, ext)) key = m.name;
                    group_for(key);
                    if (!group_->damaged()) group_->fields.set_damage(m.damage);
                }
                if (!ends) return;
                flush();
                if (m.name.empty()) {
                    // A shard that cannot be opened, or the rest of one after a bad header: what
                    // it held is unknown, one damaged sample stands for it.
                    sample rest;
                    rest.shard = shard_;
                    rest.path = m.offset == 0 ? shard_ : shard_ + "#@" + std::to_string(m.offset);
                    rest.fields.set_name("tar_samples: '" + rest.path + "'");
                    rest.fields.set_damage(m.damage);
                    ready_.push_back(std::move(rest));
                }
                reader_.reset();
                return;
            }
            case shards_detail::member_status::end:
                flush();
                reader_.reset();
                return;
        }
    }

    // Makes `group_` the sample of `key`: the current one, or a new one after handing that out.
    void group_for(const std::string& key) {
        if (group_ && group_->key == key) return;
        flush();
        group_.emplace();
        group_->key = key;
        group_->shard = shard_;
        group_->path = shard_ + "#" + key;
        group_->fields.set_name("tar_samples: shard '" + shard_ + "', sample '" + key + "'");
    }

    void flush() {
        if (group_) ready_.push_back(std::move(*group_));
        group_.reset();
    }

    std::shared_ptr<const std::vector<std::string>> shards_;
    tar_options options_;
    ferry::sampler order_;
    std::uint64_t epoch_;
    std::mt19937_64 rng_;
    std::size_t initial_;
    std::uint64_t next_shard_ = 0;
    std::string shard_;
    std::optional<shards_detail::tar_reader> reader_;
    std::optional<sample> group_;
    std::deque<sample> ready_;
    std::vector<sample> buffer_;
    bool exhausted_ = false;
};

std::shared_ptr<tar_stream> open_tar_stream(std::shared_ptr<const std::vector<std::string>> shards,
                                            const tar_options& options, std::uint64_t epoch) {
    return std::make_shared<tar_stream>(std::move(shards), options, epoch);
}

bool next_tar_sample(tar_stream& stream, ferry::sample& out) {
    return stream.next(out);
}

}  // namespace detail

tar_samples_source::tar_samples_source(std::vector<std::string> shards, const tar_options& options)
    : shards_(std::make_shared<const std::vector<std::string>>(std::move(shards))),
      options_(options) {
    if (!options.read_remote) {
        for (const auto& s : *shards_) {
            if (s.find("://") != std::string::npos && !s.starts_with("file://")) {
                throw invalid_argument("tar_samples: shard '" + s +
                                       "': not a local file; give tar_options::read_remote "
                                       "(e.g. ferry::ops::url_ranges{}) to read it");
            }
        }
    }
    if (options.remote_chunk == 0) {
        throw invalid_argument("tar_samples: remote_chunk must be at least 1 byte");
    }
    (void)ferry::sampler(shards_->size(), options.sampling);  // checks rank and world size now
}

tar_samples_source tar_samples(std::vector<std::string> shards, const tar_options& options) {
    return tar_samples_source(std::move(shards), options);
}

tar_samples_source tar_samples(std::span<const std::filesystem::path> shards,
                               const tar_options& options) {
    std::vector<std::string> names;
    names.reserve(shards.size());
    for (const auto& p : shards) names.push_back(p.string());
    return tar_samples_source(std::move(names), options);
}

}  // namespace sources
}  // namespace ferry
