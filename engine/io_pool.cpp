// SPDX-License-Identifier: Apache-2.0
/// \file
/// io_pool: threads that take calls from one queue until the pool closes.

#include "io_pool.hpp"

#include "ferry/error.hpp"
#include "trace.hpp"

namespace ferry::detail {

io_pool::io_pool(int n, span_log* spans, const std::string& name) {
    threads_.reserve(static_cast<std::size_t>(n));
    try {
        for (int i = 0; i < n; ++i) {
            threads_.emplace_back([this, spans, label = name + " #" + std::to_string(i + 1)] {
                if (spans != nullptr) spans->name_thread(label);
                run();
            });
        }
    } catch (const std::exception& e) {
        // The threads already started must be joined (a joinable std::thread destroyed
        // terminates the process), and the caller gets an error it can act on.
        const std::size_t started = threads_.size();
        close_and_join();
        throw error(errc::invalid_argument, "stage '" + name.substr(name.find(' ') + 1) +
                                                "': could not start " + std::to_string(n) +
                                                " I/O threads (started " + std::to_string(started) +
                                                "): " + e.what());
    }
}

void io_pool::close_and_join() noexcept {
    {
        std::lock_guard lock(mutex_);
        closing_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) {
        if (t.joinable()) t.join();
    }
}

io_pool::~io_pool() {
    close_and_join();
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
