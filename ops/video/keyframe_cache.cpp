// SPDX-License-Identifier: Apache-2.0
/// \file
/// The process-wide keyframe cache: one stream's keyframe list per file version (device, inode,
/// size, modification time), least recently used first out once its entry or byte bound is
/// passed (`keyframe_cache_limits`); and `keyframes_of`, which reads through it.
#include <list>
#include <mutex>
#include <unordered_map>

#include "keyframes.hpp"

namespace ferry {
namespace ops::av {
namespace {

struct keyframe_key {
    file_stamp file;
    int stream = -1;
    std::size_t cap = 0;
    friend bool operator==(const keyframe_key&, const keyframe_key&) = default;
};

struct keyframe_key_hash {
    std::size_t operator()(const keyframe_key& k) const noexcept {
        std::size_t h = std::hash<std::uint64_t>{}(k.file.device);
        const auto mix = [&h](std::uint64_t v) {
            h ^= std::hash<std::uint64_t>{}(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
        };
        mix(k.file.inode);
        mix(static_cast<std::uint64_t>(k.file.size));
        mix(static_cast<std::uint64_t>(k.file.mtime_ns));
        mix(static_cast<std::uint64_t>(k.stream));
        mix(k.cap);
        return h;
    }
};

/// The lists, most recently used first, and the counts `keyframe_cache_snapshot` reports; all
/// under one mutex (a lookup is a hash and a splice; reading a list happens outside it).
class keyframe_cache {
  public:
    static keyframe_cache& instance() {
        static keyframe_cache cache;
        return cache;
    }

    std::shared_ptr<const keyframe_list> find(const keyframe_key& key) {
        const std::lock_guard lock(mutex_);
        const auto it = index_.find(key);
        if (it == index_.end()) return nullptr;
        order_.splice(order_.begin(), order_, it->second);
        ++stats_.hits;
        return it->second->second;
    }

    void insert(const keyframe_key& key, std::shared_ptr<const keyframe_list> list) {
        const std::lock_guard lock(mutex_);
        ++stats_.builds;
        if (const auto it = index_.find(key); it != index_.end()) drop(it->second);
        if (list->bytes() > limits_.bytes || limits_.entries == 0) return;
        order_.emplace_front(key, std::move(list));
        index_.emplace(key, order_.begin());
        stats_.bytes += order_.front().second->bytes();
        ++stats_.entries;
        trim();
    }

    void set_limits(const keyframe_cache_limits& limits) {
        const std::lock_guard lock(mutex_);
        limits_ = limits;
        trim();
    }

    keyframe_cache_stats snapshot() const {
        const std::lock_guard lock(mutex_);
        return stats_;
    }

  private:
    using entry = std::pair<keyframe_key, std::shared_ptr<const keyframe_list>>;

    void drop(std::list<entry>::iterator it) {
        stats_.bytes -= it->second->bytes();
        --stats_.entries;
        index_.erase(it->first);
        order_.erase(it);
    }

    void trim() {
        while (!order_.empty() &&
               (stats_.entries > limits_.entries || stats_.bytes > limits_.bytes)) {
            drop(std::prev(order_.end()));
            ++stats_.evictions;
        }
    }

    mutable std::mutex mutex_;
    keyframe_cache_limits limits_{};
    keyframe_cache_stats stats_{};
    std::list<entry> order_;
    std::unordered_map<keyframe_key, std::list<entry>::iterator, keyframe_key_hash> index_;
};

}  // namespace

std::shared_ptr<const keyframe_list> keyframes_of(const input& in, int index, std::size_t cap,
                                                  const std::function<input()>& reopen,
                                                  const char* op) {
    const std::optional<file_stamp> stamp = in.source->stamp();
    const keyframe_key key{stamp.value_or(file_stamp{}), index, cap};
    if (stamp) {
        if (auto found = keyframe_cache::instance().find(key)) return found;
    }
    if (!reopen) {
        auto list = std::make_shared<const keyframe_list>(read_keyframes(in, index, cap, op));
        if (stamp) keyframe_cache::instance().insert(key, list);
        return list;
    }
    const input other = reopen();
    if (other.format->nb_streams <= static_cast<unsigned>(index)) {
        throw decode_error(std::string(op) + ": " + in.name + ": stream " + std::to_string(index) +
                           " is gone when reading its keyframes");
    }
    auto list = std::make_shared<const keyframe_list>(read_keyframes(other, index, cap, op));
    // The file read must be the one stamped: one rewritten in between is not cached.
    if (stamp && other.source->stamp() == stamp) keyframe_cache::instance().insert(key, list);
    return list;
}

}  // namespace ops::av

void set_keyframe_cache_limits(const keyframe_cache_limits& limits) {
    ops::av::keyframe_cache::instance().set_limits(limits);
}

keyframe_cache_stats keyframe_cache_snapshot() {
    return ops::av::keyframe_cache::instance().snapshot();
}

}  // namespace ferry
