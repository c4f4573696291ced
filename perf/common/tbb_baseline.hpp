// SPDX-License-Identifier: Apache-2.0
/// \file
/// The hand-written baseline the image benchmarks (image_pipeline, compare_runner) measure ferry
/// against: what a C++ programmer writes without ferry, a `tbb::parallel_pipeline` in a
/// `task_arena(threads)` (parallelism capped at threads + 1 with `global_control`) with
/// 4 x threads tokens: a serial in-order source of indices, `load(i)` in parallel (read, decode,
/// transform), and serial in-order batching into `on_batch(std::vector<ferry::image>)`.
#pragma once

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "ferry/image.hpp"

namespace ferry_perf {

template <class Load, class OnBatch>
void run_tbb_image_pipeline(std::size_t count, int threads, std::size_t batch_size, Load load,
                            OnBatch on_batch) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism,
                              static_cast<std::size_t>(threads) + 1);
    tbb::task_arena arena(threads, 1);
    arena.execute([&] {
        std::size_t next = 0;
        std::vector<ferry::image> batch;
        tbb::parallel_pipeline(
            static_cast<std::size_t>(4 * threads),
            tbb::make_filter<void, std::size_t>(tbb::filter_mode::serial_in_order,
                                                [&](tbb::flow_control& fc) -> std::size_t {
                                                    if (next == count) {
                                                        fc.stop();
                                                        return 0;
                                                    }
                                                    return next++;
                                                }) &
                tbb::make_filter<std::size_t, ferry::image>(tbb::filter_mode::parallel, load) &
                tbb::make_filter<ferry::image, void>(tbb::filter_mode::serial_in_order,
                                                     [&](ferry::image img) {
                                                         batch.push_back(std::move(img));
                                                         if (batch.size() == batch_size) {
                                                             on_batch(std::move(batch));
                                                             batch = {};
                                                         }
                                                     }));
        if (!batch.empty()) on_batch(std::move(batch));
    });
}

}  // namespace ferry_perf
