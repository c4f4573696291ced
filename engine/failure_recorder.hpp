// SPDX-License-Identifier: Apache-2.0
/// \file
/// failure_recorder: where the engine's failures go (the ledger, the rate-limited log, the
/// quarantine file) and the budgets that decide whether one more failure ends the run. No TBB.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "failure_log.hpp"
#include "ferry/options.hpp"
#include "ferry/stats.hpp"
#include "ledger.hpp"
#include "quarantine_writer.hpp"

namespace ferry::detail {

/// One stage's failure budget: its error action, `max_failures` and the window of
/// `max_failure_rate`. Any thread may report an outcome; the window has its own lock.
class failure_budget {
  public:
    explicit failure_budget(const stage_options& options);

    /// What one more failed item means for the pipeline.
    struct verdict {
        bool fail = false;   ///< it fails the pipeline (the action is fail, or a budget is spent)
        std::string reason;  ///< `text`, or which budget was spent and then `text`
    };
    /// One more failed item of the stage, whose error reads `text`.
    [[nodiscard]] verdict failed(const std::string& text);
    /// One more item of the stage that did not fail (a pointer test without a rate budget).
    void succeeded() noexcept {
        if (window_) (void)note(false);
    }

  private:
    /// The outcomes of the stage's last `failure_window` items, when it has a rate budget.
    struct window {
        std::mutex mutex;
        std::vector<std::uint8_t> failed;  ///< a ring: 1 for a failed item
        std::size_t next = 0;
        std::size_t seen = 0;      ///< items in the ring (up to its size)
        std::size_t failures = 0;  ///< failed items in the ring
    };
    /// Counts one outcome in the window. Returns the failed items in the window when it is full
    /// and over the rate, else 0.
    std::size_t note(bool failed) noexcept;

    bool skip_;  ///< the action is skip: budgets apply
    std::uint64_t max_failures_;
    double max_failure_rate_;
    std::size_t window_size_;
    std::atomic<std::uint64_t> skipped_{0};  ///< failures skipped: the budget's exact count
    std::unique_ptr<window> window_;         ///< null without a rate budget
};

/// The pipeline's record of failures: every failure lands in `failures()`, in the quarantine
/// file (if any) and, rate-limited, in the log; `counts` is where every source item ended.
class failure_recorder {
  public:
    /// Opens `options.quarantine` (if set): throws there, before any thread starts.
    explicit failure_recorder(const pipeline_options& options);

    /// The one record of a failure; the log gets `line` unless it is empty.
    void record(const std::string& stage, std::uint64_t item, std::uint64_t items,
                std::uint64_t epoch, const std::exception_ptr& cause, const std::string& text,
                log_level level, const std::string& line, const std::string& input = {});
    [[nodiscard]] std::vector<failure> failures() const { return counts.failures(); }
    /// A line for the log that is no failure of an item (a report callback that threw).
    void log(const std::string& stage, log_level level, const std::string& line) {
        log_.log(stage, level, line);
    }
    /// Prints the log's pending summaries (an epoch's end, destruction).
    void flush() { log_.flush(); }

    /// The error that ends epoch `epoch` when more than `limit` of its `produced` items failed
    /// (`failed` of them), naming the stage most of them failed in; null otherwise.
    [[nodiscard]] std::exception_ptr epoch_failure(double limit, std::uint64_t epoch,
                                                   std::uint64_t produced,
                                                   std::uint64_t failed) const;

    ledger counts;

  private:
    failure_log log_;
    std::unique_ptr<quarantine_writer> quarantine_;  ///< `pipeline_options::quarantine` set
};

}  // namespace ferry::detail
