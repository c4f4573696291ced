// SPDX-License-Identifier: Apache-2.0
/// \file
/// failure_recorder and failure_budget: recording failures and judging the budgets.

#include "failure_recorder.hpp"

#include <map>

#include "ferry/error.hpp"
#include "input_label.hpp"

namespace ferry::detail {
namespace {

/// The ferry::errc of a ferry::error; `stage_failed` for any other exception.
errc code_of(const std::exception_ptr& e) noexcept {
    try {
        std::rethrow_exception(e);
    } catch (const error& x) {
        return x.code();
    } catch (...) {
        return errc::stage_failed;
    }
}

std::string percent(double f) {
    return std::to_string(static_cast<int>(f * 100 + 0.5));
}

}  // namespace

failure_budget::failure_budget(const stage_options& options)
    : skip_(options.on_error.action != error_action::fail),
      max_failures_(options.max_failures),
      max_failure_rate_(options.max_failure_rate),
      window_size_(options.failure_window) {
    if (max_failure_rate_ > 0) {
        window_ = std::make_unique<window>();
        window_->failed.assign(window_size_, 0);
    }
}

failure_budget::verdict failure_budget::failed(const std::string& text) {
    verdict v{!skip_, text};
    if (skip_) {
        const auto n = skipped_.fetch_add(1, std::memory_order_relaxed) + 1;
        if (max_failures_ > 0 && n > max_failures_) {
            v.fail = true;
            v.reason = "failure budget of " + std::to_string(max_failures_) +
                       " exhausted; last error: " + text;
        }
    }
    if (window_) {
        const std::size_t over = note(true);
        if (!v.fail && over > 0) {
            v.fail = true;
            v.reason = "failure rate budget of " + percent(max_failure_rate_) + "% exhausted (" +
                       std::to_string(over) + " of the last " + std::to_string(window_size_) +
                       " items failed); last error: " + text;
        }
    }
    return v;
}

std::size_t failure_budget::note(bool failed) noexcept {
    auto& w = *window_;
    const std::size_t size = w.failed.size();
    if (size == 0) return 0;
    std::lock_guard lock(w.mutex);
    if (w.seen == size) {
        w.failures -= w.failed[w.next];
    } else {
        ++w.seen;
    }
    w.failed[w.next] = failed ? 1 : 0;
    w.failures += failed ? 1 : 0;
    w.next = (w.next + 1) % size;
    const bool over = w.seen == size && static_cast<double>(w.failures) >
                                            max_failure_rate_ * static_cast<double>(size);
    return over ? w.failures : 0;
}

failure_recorder::failure_recorder(const pipeline_options& options)
    : log_(options.logger, options.log_burst, options.log_window) {
    if (!options.quarantine.empty()) {
        quarantine_ = std::make_unique<quarantine_writer>(options.quarantine);
    }
}

void failure_recorder::record(const std::string& stage, std::uint64_t item, std::uint64_t items,
                              std::uint64_t epoch, const std::exception_ptr& cause,
                              const std::string& text, log_level level, const std::string& line,
                              const std::string& input) {
    failure f{stage, item, items, epoch, text, code_of(cause), input};
    if (quarantine_) quarantine_->append(f, log_);
    counts.add_failure(std::move(f));
    if (!line.empty()) log_.log(stage, level, line);
}

std::exception_ptr failure_recorder::epoch_failure(double limit, std::uint64_t epoch,
                                                   std::uint64_t produced,
                                                   std::uint64_t failed) const {
    if (!(limit < 1.0)) return nullptr;
    if (produced == 0 || static_cast<double>(failed) <= limit * static_cast<double>(produced)) {
        return nullptr;
    }
    // Name the stage most of them failed in, and its last message.
    std::string where;
    std::string last;
    {
        std::map<std::string, std::uint64_t> by_stage;
        for (const auto& f : counts.failures()) {
            if (f.epoch != epoch) continue;
            by_stage[f.stage] += f.items;
            last = "stage '" + f.stage + "' on item " + std::to_string(f.item) +
                   quoted_input(f.input) + ": " + f.message;
        }
        std::uint64_t most = 0;
        for (const auto& [stage, n] : by_stage) {
            if (n > most) {
                most = n;
                where = "; most in stage '" + stage + "' (" + std::to_string(n) + ")";
            }
        }
    }
    return std::make_exception_ptr(
        error(errc::stage_failed,
              "epoch " + std::to_string(epoch) + ": " + std::to_string(failed) + " of " +
                  std::to_string(produced) + " items failed (" +
                  percent(static_cast<double>(failed) / static_cast<double>(produced)) +
                  "%), more than max_epoch_failure_rate = " + percent(limit) + "%" + where +
                  (last.empty() ? "" : "; the last: " + last) + " (see pipeline::failures())"));
}

}  // namespace ferry::detail
