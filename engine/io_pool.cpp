// SPDX-License-Identifier: Apache-2.0
/// \file
/// io_pool: threads that take calls from one queue until the pool closes.

#include "io_pool.hpp"

#include "trace.hpp"

namespace ferry::detail {

io_pool::io_pool(int n, span_log* spans, const std::string& name) {
    threads_.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        threads_.emplace_back([this, spans, label = name + " #" + std::to_string(i + 1)] {
            if (spans != nullptr) spans->name_thread(label);
            run();
        });
    }
}

io_pool::~io_pool() {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

void io_pool::submit(job j) {
    {
        std::lock_guard lock(mutex_);
        jobs_.push_back(std::move(j));
        waiting_.store(jobs_.size(), std::memory_order_relaxed);
    }
    cv_.notify_one();
}

void io_pool::run() {
    for (;;) {
        job j;
        {
            std::unique_lock lock(mutex_);
            cv_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
            if (jobs_.empty()) return;
            j = std::move(jobs_.front());
            jobs_.pop_front();
            waiting_.store(jobs_.size(), std::memory_order_relaxed);
        }
        j();
    }
}

}  // namespace ferry::detail
