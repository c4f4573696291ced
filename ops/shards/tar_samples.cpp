// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry::sources::tar_samples`: shards in the sampler's order, members grouped into samples by
/// key, and WebDataset's shuffle buffer with draws that depend only on (seed, epoch, rank).

#include <algorithm>
#include <cctype>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ferry/detail/redact.hpp"
#include "ferry/error.hpp"
#include "ferry/shards.hpp"
#include "tar_client.hpp"
#include "tar_reader.hpp"

namespace ferry {

const ferry::bytes& sample_fields::at(std::string_view ext) const {
    if (damage_) std::rethrow_exception(damage_);
    const auto it = map_.find(ext);
    if (it != map_.end()) return it->second;
    std::string have;
    for (const auto& [name, data] : map_) {
        have += (have.empty() ? "" : ", ") + ferry::detail::escape_controls(name);
    }
    throw decode_error(name_ + ": no member with extension '" +
                       ferry::detail::escape_controls(ext) +
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

// splitmix64's finaliser: spreads (seed, epoch, rank) over the generator's seed.
std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace

namespace detail {

// What a sample on its way holds, against tar_options' caps. (Outside tar_stream: clang cannot
// use a nested struct's member initializers before the enclosing class is complete.)
struct sample_tally {
    std::size_t members = 0;  // members so far, read or not
    std::uint64_t bytes = 0;  // their declared sizes, of those admitted
    bool over_limit = false;  // refused a member: the key's later members are not read
};

class tar_stream {
  public:
    tar_stream(std::shared_ptr<const std::vector<std::string>> shards, const tar_options& options,
               std::uint64_t epoch, std::uint64_t position)
        : shards_(std::move(shards)),
          options_(options),
          order_(shards_->size(), options.sampling),
          epoch_(epoch),
          rng_(mix(mix(mix(options.sampling.seed) ^ epoch) ^ options.sampling.rank)),
          initial_(std::min<std::size_t>(options.shuffle_buffer, 100)),
          position_(position) {}

    bool next(sample& out) {
        if (position_ > 0) seek();
        return draw(out);
    }

  private:
    // A member whose data was not read yet: where it lies in its sample's shard.
    struct unread {
        std::string ext;
        std::uint64_t offset = 0;
        std::uint64_t size = 0;
    };
    // A sample on its way: its members read, and those still to read.
    struct entry {
        sample s;
        std::vector<unread> later;
        sample_tally tally;
    };

    // Reaches position `position_` as reading would, but walking the shards' headers: the same
    // samples in the same order, the same draws from the buffer, the same damage (a shard the
    // walk finds damaged is read again up to there), only without their data. Then reads the
    // data of the samples not delivered yet: at most the buffer's, plus the sample being grouped.
    void seek() {
        const auto position = std::exchange(position_, 0);
        walking_ = true;  // each shard's reader walks from its open on
        sample skipped;
        for (std::uint64_t i = 0; i < position && draw(skipped); ++i) {
        }
        walking_ = false;
        if (reader_) reader_->walk(false);
        std::vector<entry*> pending;
        if (group_) pending.push_back(&*group_);
        for (auto& e : ready_) pending.push_back(&e);
        for (auto& e : buffer_) pending.push_back(&e);
        read_later(pending);
    }

    // WebDataset's shuffle: each step adds up to two samples to the buffer (so it fills while it
    // delivers) and, once it holds `initial_`, hands out one drawn at random.
    bool draw(sample& out) {
        if (options_.shuffle_buffer <= 1) {
            entry e;
            if (!pull(e)) return false;
            out = std::move(e.s);
            return true;
        }
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
        out = std::move(buffer_[j].s);
        if (j + 1 != buffer_.size()) buffer_[j] = std::move(buffer_.back());
        buffer_.pop_back();
        return true;
    }

    bool add() {
        if (exhausted_) return false;
        entry e;
        if (!pull(e)) {
            exhausted_ = true;
            return false;
        }
        buffer_.push_back(std::move(e));
        return true;
    }

    // The next sample in shard order.
    bool pull(entry& out) {
        for (;;) {
            if (!ready_.empty()) {
                out = std::move(ready_.front());
                ready_.pop_front();
                return true;
            }
            if (!reader_) {
                if (next_shard_ == order_.size()) return false;
                shard_ = (*shards_)[order_.index(epoch_, next_shard_++)];
                label_ = shards_detail::shard_label(shard_);
                reader_.emplace(shard_, options_, walking_);
                reader_->admit([this](const std::string& name, std::uint64_t size) {
                    return admit(name, size);
                });
            }
            read_member();
        }
    }

    void read_member() {
        const auto index = reader_->returned();
        auto m = reader_->next();
        if (walking_ && m.status == shards_detail::member_status::damaged) {
            // What reading finds here, exactly: the shard read again, without walking, up to
            // this member (only damaged shards cost this). The members before it were admitted
            // by the walk already: the hook judges only this one, against its sample so far.
            reader_.emplace(shard_, options_);
            for (std::uint64_t i = 0; i < index; ++i) (void)reader_->next();
            reader_->admit(
                [this](const std::string& name, std::uint64_t size) { return admit(name, size); });
            m = reader_->next();
        }
        std::string key;
        std::string ext;
        switch (m.status) {
            case shards_detail::member_status::member:
                if (!split_name(m.name, key, ext)) return;
                group_for(key);
                ++group_->tally.members;
                group_->tally.bytes += m.skipped ? m.size : m.data.size();
                if (!add_field(*group_, ext, m) && !group_->s.damaged()) {
                    group_->s.fields.set_damage(std::make_exception_ptr(
                        decode_error(sample_label(key) + ": two members with extension '" +
                                     ferry::detail::escape_controls(ext) + "'")));
                }
                return;
            case shards_detail::member_status::too_big:
            case shards_detail::member_status::damaged: {
                const bool ends = m.status == shards_detail::member_status::damaged;
                if (!m.name.empty()) {
                    if (!split_name(m.name, key, ext)) key = m.name;
                    group_for(key);
                    ++group_->tally.members;
                    if (m.refused) group_->tally.over_limit = true;
                    if (!group_->s.damaged()) group_->s.fields.set_damage(m.damage);
                }
                if (!ends) return;
                flush();
                if (m.name.empty()) {
                    // A shard that cannot be opened, or the rest of one after a bad header: what
                    // it held is unknown, one damaged sample stands for it.
                    entry rest;
                    rest.s.shard = shard_;
                    rest.s.path = m.offset == 0 ? shard_ : shard_ + "#@" + std::to_string(m.offset);
                    rest.s.fields.set_name("tar_samples: '" + label_ +
                                           (m.offset == 0 ? "" : "#@" + std::to_string(m.offset)) +
                                           "'");
                    rest.s.fields.set_damage(m.damage);
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

    // The reader's hook, before a member's data is read: whether it fits its sample's limits.
    // The member joins the sample being grouped when its key is that sample's (as read_member
    // will decide), else it starts a sample of its own. A sample over a limit is damaged at the
    // member that crosses it, and its later members are not read either.
    std::exception_ptr admit(const std::string& name, std::uint64_t size) {
        std::string key;
        std::string ext;
        if (!split_name(name, key, ext)) return nullptr;  // not a sample's member: skipped
        const bool same = group_ && group_->s.key == key;
        if (same && group_->tally.over_limit) return group_->s.fields.damage();
        const std::size_t members = (same ? group_->tally.members : 0) + 1;
        const std::uint64_t bytes = (same ? group_->tally.bytes : 0) + size;
        std::string why;
        if (members > options_.max_sample_members) {
            why = "more than max_sample_members (" + std::to_string(options_.max_sample_members) +
                  ") members";
        } else if (bytes > options_.max_sample_bytes || bytes < size) {
            why = std::to_string(bytes) + " bytes with this member, over max_sample_bytes (" +
                  std::to_string(options_.max_sample_bytes) + ")";
        } else {
            return nullptr;
        }
        return std::make_exception_ptr(decode_error(sample_label(key) + ": member '" +
                                                    ferry::detail::escape_controls(name) +
                                                    "' not read: " + why));
    }

    // How messages name sample `key` of the current shard.
    [[nodiscard]] std::string sample_label(const std::string& key) const {
        return "tar_samples: shard '" + label_ + "', sample '" +
               ferry::detail::escape_controls(key) + "'";
    }

    // Adds member `m` as field `ext` (its data, or where it lies); false when the sample has
    // that field already.
    static bool add_field(entry& e, const std::string& ext, shards_detail::member& m) {
        const auto later = std::find_if(e.later.begin(), e.later.end(),
                                        [&](const unread& u) { return u.ext == ext; });
        if (later != e.later.end() || e.s.fields.contains(ext)) return false;
        if (m.skipped) {
            e.later.push_back({ext, m.data_offset, m.size});
            return true;
        }
        return e.s.fields.insert(ext, std::move(m.data));
    }

    // Reads the members the walk skipped of the samples in `pending`: by shard and offset, runs
    // of nearby members in one read each. A read that fails damages the samples it was for.
    void read_later(const std::vector<entry*>& pending) {
        struct want {
            entry* e;
            const unread* u;
        };
        std::vector<want> wants;
        for (auto* e : pending) {
            for (const auto& u : e->later) wants.push_back({e, &u});
        }
        std::sort(wants.begin(), wants.end(), [](const want& a, const want& b) {
            return std::tie(a.e->s.shard, a.u->offset) < std::tie(b.e->s.shard, b.u->offset);
        });
        // A remote shard's members closer than this are read in one run (the bytes between,
        // a header or a small member, cost less than a request of their own); a local file's
        // are read one by one, straight into their own bytes.
        constexpr std::uint64_t gap = 4096;
        std::unique_ptr<shards_detail::shard_bytes> bytes;
        for (std::size_t i = 0; i < wants.size();) {
            const auto& shard = wants[i].e->s.shard;
            if (i == 0 || shard != wants[i - 1].e->s.shard) {
                bytes = std::make_unique<shards_detail::shard_bytes>(shard, options_);
            }
            const std::uint64_t first = wants[i].u->offset;
            std::uint64_t last = first + wants[i].u->size;
            std::size_t j = i + 1;
            while (bytes->remote() && j < wants.size() && wants[j].e->s.shard == shard &&
                   wants[j].u->offset <= last + gap &&
                   wants[j].u->offset + wants[j].u->size - first <= options_.remote_chunk) {
                last = std::max(last, wants[j].u->offset + wants[j].u->size);
                ++j;
            }
            ferry::bytes run;
            std::string failed;
            try {
                if (bytes->open_errno() != 0) {
                    throw io_error(
                        std::string("cannot open: ") + std::strerror(bytes->open_errno()), false);
                }
                run = bytes->read(first, last - first);
                if (run.size() < last - first) failed = "the shard is shorter than when walked";
            } catch (const std::exception& e) {
                failed = e.what();
            }
            const bool alone = j == i + 1;
            for (; i < j; ++i) {
                auto& [e, u] = wants[i];
                if (failed.empty()) {
                    const auto at = static_cast<std::size_t>(u->offset - first);
                    e->s.fields.insert(u->ext, alone ? std::move(run)
                                                     : ferry::bytes(run.span().subspan(
                                                           at, static_cast<std::size_t>(u->size))));
                } else if (!e->s.damaged()) {
                    e->s.fields.set_damage(std::make_exception_ptr(io_error(
                        "tar_samples: shard '" + shards_detail::shard_label(shard) + "', sample '" +
                            ferry::detail::escape_controls(e->s.key) + "': reading member data ('" +
                            ferry::detail::escape_controls(u->ext) + "', byte " +
                            std::to_string(u->offset) +
                            ") again failed: " + ferry::detail::redact_text(failed),
                        true)));
                }
            }
        }
        for (auto* e : pending) e->later.clear();
    }

    // Makes `group_` the sample of `key`: the current one, or a new one after handing that out.
    void group_for(const std::string& key) {
        if (group_ && group_->s.key == key) return;
        flush();
        group_.emplace();
        auto& s = group_->s;
        s.key = key;
        s.shard = shard_;
        s.path = shard_ + "#" + key;
        s.fields.set_name(sample_label(key));
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
    std::uint64_t position_;
    bool walking_ = false;
    std::uint64_t next_shard_ = 0;
    std::string shard_;
    std::string label_;  // shard_ as messages name it
    std::optional<shards_detail::tar_reader> reader_;
    std::optional<entry> group_;
    std::deque<entry> ready_;
    std::vector<entry> buffer_;
    bool exhausted_ = false;
};

std::shared_ptr<tar_stream> open_tar_stream(std::shared_ptr<const std::vector<std::string>> shards,
                                            const tar_options& options, std::uint64_t epoch,
                                            std::uint64_t position) {
    return std::make_shared<tar_stream>(std::move(shards), options, epoch, position);
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
                throw invalid_argument("tar_samples: shard '" + shards_detail::shard_label(s) +
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
