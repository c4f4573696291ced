// This program demonstrates the per-stage error policies: fail (the default), skip, retry
// (then fail or skip), and a failure budget that turns a skipping stage into a failing one.
//
// Each section runs a ten-item pipeline whose "parse" stage throws on some items and prints
// what the consumer sees: the items, the ferry::stage_error and its cause, pipe.failures(), and
// the lines ferry logged (captured with a logger instead of going to stderr).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include <ferry/ferry.hpp>

#include "checks.hpp"

namespace {

using ferry_examples::check;

std::vector<int> ten_items() {
    std::vector<int> v(10);
    std::iota(v.begin(), v.end(), 0);
    return v;
}

/// Collects what ferry logs, to print it at the end of a section in order.
struct captured_log {
    std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
    std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();

    ferry::logger sink() const {
        return [m = mutex, l = lines](ferry::log_level level, std::string_view line) {
            const char* tag = level == ferry::log_level::error     ? "error"
                              : level == ferry::log_level::warning ? "warning"
                                                                   : "info";
            std::lock_guard lock(*m);
            l->push_back(std::string(tag) + ": " + std::string(line));
        };
    }
    void print() const {
        std::lock_guard lock(*mutex);
        for (const auto& l : *lines) std::cout << "  ferry logged " << l << '\n';
        lines->clear();
    }
};

void print_items(const std::vector<int>& got) {
    std::cout << "  received:";
    for (int x : got) std::cout << ' ' << x;
    std::cout << '\n';
}

void print_failures(const std::vector<ferry::failure>& failures) {
    std::cout << "  failures: " << failures.size() << '\n';
    for (const auto& f : failures) {
        std::cout << "    stage '" << f.stage << "' item " << f.item << " (epoch " << f.epoch
                  << "): " << f.message << '\n';
    }
}

/// Throws ferry::decode_error on the items in `bad`, as a parser meeting corrupt input would.
auto failing_on(std::vector<int> bad) {
    return [bad](int i) {
        for (int b : bad) {
            if (i == b) throw ferry::decode_error("bad record #" + std::to_string(i));
        }
        return i * 10;
    };
}

void fail_policy() {
    std::cout << "1. fail (the default): the first error ends the epoch and reaches the consumer\n";
    captured_log log;
    auto pipe = ferry::from(ten_items())
                    .map(failing_on({3}), {.name = "parse"})
                    .build({.threads = 2, .logger = log.sink()});
    std::vector<int> got;
    try {
        for (int x : pipe) got.push_back(x);
        check(false, "the fail policy should have thrown");
    } catch (const ferry::stage_error& e) {
        print_items(got);
        std::cout << "  caught ferry::stage_error: " << e.what() << '\n';
        std::cout << "  stage() = '" << e.stage() << "', item() = " << e.item() << ", cause() = '"
                  << e.cause() << "', code = " << ferry::to_string(e.code()) << '\n';
        // The original exception is nested inside, with its type intact.
        try {
            std::rethrow_if_nested(e);
        } catch (const ferry::decode_error& cause) {
            std::cout << "  cause type: ferry::decode_error (code "
                      << ferry::to_string(cause.code()) << ")\n";
        } catch (...) {
            check(false, "the nested cause should be the decode_error");
        }
        check(e.stage() == "parse" && e.item() == 3, "stage_error names stage and item");
    }
    // In order (the default), everything before the failed item was delivered.
    check(got == std::vector<int>{0, 10, 20}, "items 0..2 delivered before the error");

    // The error is sticky: asking again throws it again rather than pretending all is well.
    bool again = false;
    try {
        (void)pipe.next();
    } catch (const ferry::stage_error&) {
        again = true;
    }
    std::cout << "  next() afterwards throws the same error again: " << (again ? "yes" : "no")
              << '\n';
    check(again, "stage_error is sticky");
    print_failures(pipe.failures());
    log.print();
}

void skip_policy() {
    std::cout << "\n2. skip: failing items are dropped, recorded, and the epoch goes on\n";
    captured_log log;
    auto pipe = ferry::from(ten_items())
                    .map(failing_on({3, 7}), {.name = "parse", .on_error = ferry::skip})
                    .build({.threads = 2, .logger = log.sink()});
    std::vector<int> got;
    for (int x : pipe) got.push_back(x);
    print_items(got);
    const auto st = pipe.stats();
    std::cout << "  delivered " << got.size() << " of 10; stats: " << st.delivered << " delivered, "
              << st.failed << " failed\n";
    print_failures(pipe.failures());
    log.print();
    check(got == std::vector<int>{0, 10, 20, 40, 50, 60, 80, 90}, "skip keeps the others in order");
    check(st.failed == 2 && pipe.failures().size() == 2, "two failures recorded");
}

/// A call that fails transiently: the first `failures_per_item` attempts on each item of `flaky`
/// throw ferry::io_error, later ones succeed; items in `broken` always fail.
struct flaky_fetch {
    std::vector<int> flaky;
    std::vector<int> broken;
    int failures_per_item = 2;
    std::shared_ptr<std::mutex> mutex = std::make_shared<std::mutex>();
    std::shared_ptr<std::map<int, int>> attempts = std::make_shared<std::map<int, int>>();

    int operator()(int i) const {
        int n = 0;
        {
            std::lock_guard lock(*mutex);
            n = (*attempts)[i]++;
        }
        for (int b : broken) {
            // Permanent: asking again cannot bring it back, so retry does not.
            if (i == b) {
                throw ferry::io_error("object #" + std::to_string(i) + " is gone",
                                      /*transient=*/false);
            }
        }
        for (int f : flaky) {
            if (i == f && n < failures_per_item) {
                throw ferry::io_error("timeout fetching object #" + std::to_string(i) +
                                      " (attempt " + std::to_string(n + 1) + ")");
            }
        }
        return i * 10;
    }
};

void retry_policy() {
    std::cout << "\n3. retry: transient errors are retried with backoff\n";
    {
        captured_log log;
        auto pipe = ferry::from(ten_items())
                        .map(flaky_fetch{{2, 5}, {}},
                             {.concurrency = 2,
                              .name = "fetch",
                              .on_error = ferry::retry{.attempts = 3,
                                                       .backoff = std::chrono::milliseconds(5)},
                              .executor = ferry::io})
                        .build({.threads = 2, .logger = log.sink()});
        std::vector<int> got;
        for (int x : pipe) got.push_back(x);
        const auto st = pipe.stats();
        std::uint64_t retries = 0;
        for (const auto& s : st.stages) retries += s.retries;
        std::cout << "  items 2 and 5 fail twice each, 3 attempts allowed\n";
        print_items(got);
        std::cout << "  delivered " << got.size() << " of 10 after " << retries << " retries\n";
        print_failures(pipe.failures());
        log.print();
        check(got.size() == 10 && retries == 4, "retries recover every item");
    }
    {
        std::cout << "  retry then skip: item 9 is gone (a permanent io_error): tried once\n";
        captured_log log;
        auto pipe = ferry::from(ten_items())
                        .map(flaky_fetch{{2, 5}, {9}},
                             {.concurrency = 2,
                              .name = "fetch",
                              .on_error = ferry::retry{.attempts = 3,
                                                       .backoff = std::chrono::milliseconds(5),
                                                       .then = ferry::skip},
                              .executor = ferry::io})
                        .build({.threads = 2, .logger = log.sink()});
        std::vector<int> got;
        for (int x : pipe) got.push_back(x);
        std::uint64_t retries = 0;
        for (const auto& s : pipe.stats().stages) retries += s.retries;
        print_items(got);
        std::cout << "  delivered " << got.size() << " of 10 after " << retries << " retries\n";
        print_failures(pipe.failures());
        log.print();
        check(got.size() == 9 && retries == 4 && pipe.failures().size() == 1,
              "retry then skip drops only the broken item, without retrying it");
    }
}

void failure_budget() {
    std::cout << "\n4. failure budget: skip at most 2 failures, then fail\n";
    captured_log log;
    auto pipe = ferry::from(ten_items())
                    .map(failing_on({1, 3, 5, 7, 9}),
                         {.name = "parse", .on_error = ferry::skip, .max_failures = 2})
                    .build({.threads = 2, .logger = log.sink()});
    std::vector<int> got;
    try {
        for (int x : pipe) got.push_back(x);
        check(false, "the budget should have been exhausted");
    } catch (const ferry::stage_error& e) {
        print_items(got);
        std::cout << "  caught ferry::stage_error: " << e.what() << '\n';
        check(e.item() == 5, "the third failure (item 5) exhausts the budget");
    }
    print_failures(pipe.failures());
    log.print();
    check(got == std::vector<int>{0, 20, 40}, "items before the third failure were delivered");
}

}  // namespace

int main() {
    fail_policy();
    skip_policy();
    retry_policy();
    failure_budget();
    return ferry_examples::checks_verdict();
}
