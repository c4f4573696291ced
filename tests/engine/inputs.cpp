// SPDX-License-Identifier: Apache-2.0
/// \file
/// failure::input: every failure names the source item it is about (a path, a URL, a describe
/// text), whichever stage fails it and whatever the element has become, and messages say it.
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <future>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "support.hpp"

namespace bdata = boost::unit_test::data;
using namespace ferry_test;

namespace inputs_test {

/// `data/0.jpg`, `data/1.jpg`, ...
std::vector<std::string> paths(int n) {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) v.push_back("data/" + std::to_string(i) + ".jpg");
    return v;
}

/// The element a future `labelled_file` source yields: a path and a label.
struct labelled_file {
    std::filesystem::path path;
    int label = 0;
};
static_assert(ferry::describable<labelled_file>);
static_assert(ferry::describable<std::string_view>);
static_assert(!ferry::describable<int>);

struct job {
    std::string url;
    int id = 0;
};
static_assert(!ferry::describable<job>);

/// Log lines, from any thread.
class log_lines {
  public:
    ferry::logger sink() {
        return [this](ferry::log_level, std::string_view line) {
            std::lock_guard lock(mutex_);
            lines_.emplace_back(line);
        };
    }
    [[nodiscard]] bool has(const std::string& line) {
        std::lock_guard lock(mutex_);
        return std::find(lines_.begin(), lines_.end(), line) != lines_.end();
    }

  private:
    std::mutex mutex_;
    std::vector<std::string> lines_;
};

/// The stage kinds a failure can happen in, for the sweep below.
enum class where { compute, io, retry_then_skip, async_completion, async_future };
/// Every `where`, as ints (data test cases print their samples).
const std::vector<int> stage_kinds{0, 1, 2, 3, 4};

/// One stage over `data/<i>.jpg` (turned into its length first, so the element no longer says
/// which file it was) that fails item 5 with a transient io_error, skipping it.
ferry::pipeline<std::size_t> failing_on_item_5(where w, async_service& service,
                                               const ferry::logger& log) {
    auto lengths = ferry::from(paths(12)).map(
        [](const std::string& s) { return s == "data/5.jpg" ? std::size_t{0} : s.size(); });
    const auto check = [](std::size_t n) {
        if (n == 0) throw ferry::io_error("connection reset");
        return n;
    };
    ferry::stage_options o{.concurrency = 4, .name = "load", .on_error = ferry::skip};
    if (w == where::io) o.executor = ferry::io;
    if (w == where::retry_then_skip) {
        o.on_error = ferry::retry{.attempts = 3,
                                  .backoff = std::chrono::milliseconds(1),
                                  .then = ferry::error_action::skip};
    }
    const ferry::pipeline_options po{.threads = 2, .logger = log};
    if (w == where::async_completion) {
        return lengths
            .map_async<std::size_t>(
                [&service, check](std::size_t n, ferry::completion<std::size_t> done) {
                    service.post([n, done, check] {
                        try {
                            done(check(n));
                        } catch (...) {
                            done.fail(std::current_exception());
                        }
                    });
                },
                o)
            .build(po);
    }
    if (w == where::async_future) {
        return lengths
            .map_async([check](std::size_t n) { return std::async(std::launch::async, check, n); },
                       o)
            .build(po);
    }
    return lengths.map(check, o).build(po);
}

}  // namespace inputs_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(inputs)
using namespace inputs_test;

// Whatever kind of stage fails an item (compute, I/O, after retries, map_async either way), the
// failure, the log line and the message name the source item's path, not what it became.
BOOST_DATA_TEST_CASE(failure_names_the_input_in_every_kind_of_stage, bdata::make(stage_kinds),
                     kind) {
    const auto w = static_cast<where>(kind);
    async_service service;
    log_lines log;
    auto p = failing_on_item_5(w, service, log.sink());
    BOOST_TEST(drain(p).size() == 11u);
    const auto f = p.failures();
    BOOST_REQUIRE(f.size() == 1u);
    BOOST_TEST(f[0].input == "data/5.jpg");
    BOOST_TEST(f[0].item == 5u);
    BOOST_TEST(f[0].stage == "load");
    BOOST_TEST(log.has("stage 'load' skipped item 5 ('data/5.jpg'): connection reset"));
    if (w == where::retry_then_skip) BOOST_TEST(p.stats().stages.at(2).retries == 2u);
    check_complete_accounting(p.stats());
}

// Under `fail`, the stage_error names the input in what() and in input().
BOOST_AUTO_TEST_CASE(stage_error_names_the_input) {
    auto p = ferry::from(paths(30))
                 .map(
                     [](const std::string& s) {
                         if (s == "data/17.jpg") throw ferry::decode_error("not a JPEG file");
                         return s.size();
                     },
                     {.concurrency = 4, .name = "decode"})
                 .build({.threads = 2, .logger = quiet});
    const auto e = expect_throw<ferry::stage_error>([&] { drain(p); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(std::string(e->what()) ==
               "stage 'decode' failed on item 17 ('data/17.jpg'): not a JPEG file");
    BOOST_TEST(e->input() == "data/17.jpg");
    BOOST_TEST(p.failures().at(0).input == "data/17.jpg");
}

// std::filesystem::path elements and elements with a .path member (a labelled file) name
// themselves by their path.
BOOST_AUTO_TEST_CASE(path_and_labelled_file_elements_name_themselves) {
    const auto fail_on_b = [](const std::filesystem::path& p) {
        if (p.filename() == "b.jpg") throw ferry::io_error("gone", false);
        return 1;
    };
    std::vector<std::filesystem::path> files{"x/a.jpg", "x/b.jpg", "x/c.jpg"};
    auto by_path =
        ferry::from(files).map(fail_on_b, {.on_error = ferry::skip}).build({.logger = quiet});
    BOOST_TEST(drain(by_path).size() == 2u);
    BOOST_REQUIRE(by_path.failures().size() == 1u);
    BOOST_TEST(by_path.failures()[0].input == "x/b.jpg");

    std::vector<labelled_file> labelled{{"y/a.jpg", 0}, {"y/b.jpg", 1}, {"y/c.jpg", 2}};
    auto by_member = ferry::from(labelled)
                         .map([&](const labelled_file& f) { return fail_on_b(f.path); },
                              {.on_error = ferry::skip})
                         .build({.logger = quiet});
    BOOST_TEST(drain(by_member).size() == 2u);
    BOOST_REQUIRE(by_member.failures().size() == 1u);
    BOOST_TEST(by_member.failures()[0].input == "y/b.jpg");
}

// A URL's credentials never reach a failure record: presigned query values and a password come
// out REDACTED (names compared without case), other query parameters and paths as they are.
BOOST_AUTO_TEST_CASE(url_inputs_are_named_without_their_credentials) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"https://b.s3.amazonaws.com/k.jpg?X-Amz-Credential=AKID%2Fx&x-amz-signature=abc123"
         "&X-Amz-Security-Token=TOK&size=2",
         "https://b.s3.amazonaws.com/k.jpg?X-Amz-Credential=REDACTED&x-amz-signature=REDACTED"
         "&X-Amz-Security-Token=REDACTED&size=2"},
        {"http://h/a?AWSAccessKeyId=AK&Signature=SIG&Expires=1#frag",
         "http://h/a?AWSAccessKeyId=REDACTED&Signature=REDACTED&Expires=1#frag"},
        {"https://user:pa55:word@host:8080/x.jpg", "https://user:REDACTED@host:8080/x.jpg"},
        {"https://host/a@b.jpg?page=2", "https://host/a@b.jpg?page=2"},
        {"data/me@home/?.jpg", "data/me@home/?.jpg"},
    };
    std::vector<std::string> urls;
    for (const auto& c : cases) urls.push_back(c.first);
    auto p = ferry::from(urls)
                 .map([](const std::string&) -> int { throw ferry::io_error("gone", false); },
                      {.on_error = ferry::skip})
                 .build({.logger = quiet, .max_epoch_failure_rate = 1.0});
    BOOST_TEST(drain(p).empty());
    BOOST_REQUIRE(p.failures().size() == cases.size());
    for (std::size_t i = 0; i < cases.size(); ++i) {
        BOOST_TEST(p.failures()[i].input == cases[i].second);
        BOOST_TEST(ferry::input_name(cases[i].first) == cases[i].second);
    }
}

// Other elements are named by the user's describe function, called on the element the source
// made; without one, failures carry no input and messages stay as they were.
BOOST_AUTO_TEST_CASE(describe_names_other_elements) {
    std::vector<job> jobs;
    for (int i = 0; i < 20; ++i) jobs.push_back({"http://store/" + std::to_string(i), i});
    const auto fetch = [](const job& j) {
        if (j.id == 9) throw ferry::io_error("HTTP 404", false);
        return j.id;
    };
    auto described = ferry::from(jobs)
                         .describe([](const job& j) { return j.url; })
                         .map(fetch, {.concurrency = 2, .on_error = ferry::skip})
                         .build({.threads = 2, .logger = quiet});
    BOOST_TEST(drain(described).size() == 19u);
    BOOST_REQUIRE(described.failures().size() == 1u);
    BOOST_TEST(described.failures()[0].input == "http://store/9");

    auto plain = ferry::from(jobs).map(fetch, {.on_error = ferry::skip}).build({.logger = quiet});
    BOOST_TEST(drain(plain).size() == 19u);
    BOOST_REQUIRE(plain.failures().size() == 1u);
    BOOST_TEST(plain.failures()[0].input.empty());
}

// A source that throws has no item to name: its failure's input is empty and its message names
// the item before, so the user can find where in the source it broke.
BOOST_AUTO_TEST_CASE(source_failure_names_the_item_before) {
    auto p = ferry::from([i = 0]() mutable -> std::optional<std::string> {
                 if (i == 5) throw std::runtime_error("listing truncated");
                 return "s3://bucket/" + std::to_string(i++);
             }).build({.threads = 2, .logger = quiet});
    const auto e = expect_throw<ferry::stage_error>([&] { drain(p); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(std::string(e->what()) ==
               "stage 'source' failed on item 5 (after 's3://bucket/4'): listing truncated");
    BOOST_REQUIRE(p.failures().size() == 1u);
    BOOST_TEST(p.failures()[0].input.empty());
}

// A failed batch names its first item's input and how many items it held.
BOOST_AUTO_TEST_CASE(failed_batch_names_its_first_input_and_size) {
    log_lines log;
    auto p = ferry::from(paths(16))
                 .batch(4)
                 .map(
                     [](const std::vector<std::string>& b) {
                         if (b.front() == "data/8.jpg") throw ferry::decode_error("bad batch");
                         return b.size();
                     },
                     {.name = "collate", .on_error = ferry::skip})
                 .build({.threads = 2, .logger = log.sink()});
    BOOST_TEST(drain(p).size() == 3u);
    BOOST_REQUIRE(p.failures().size() == 1u);
    BOOST_TEST(p.failures()[0].input == "data/8.jpg");
    BOOST_TEST(p.failures()[0].items == 4u);
    BOOST_TEST(
        log.has("stage 'collate' skipped 4 items from item 8 (the first 'data/8.jpg'): bad batch"));
}

// An output of flat_map that fails later names the input it came from.
BOOST_AUTO_TEST_CASE(flat_map_output_names_its_parents_input) {
    auto p = ferry::from(paths(6))
                 .flat_map([](const std::string& s) {
                     return std::vector<std::string>{s + "#frame0", s + "#frame1"};
                 })
                 .map(
                     [](const std::string& frame) {
                         if (frame == "data/2.jpg#frame1") throw ferry::decode_error("bad frame");
                         return frame;
                     },
                     {.concurrency = 2, .on_error = ferry::skip})
                 .build({.threads = 2, .logger = quiet});
    BOOST_TEST(drain(p).size() == 11u);
    BOOST_REQUIRE(p.failures().size() == 1u);
    BOOST_TEST(p.failures()[0].input == "data/2.jpg");
}

// The epoch failure-rate error quotes the last failure with its input.
BOOST_AUTO_TEST_CASE(epoch_failure_rate_message_names_the_last_input) {
    auto p = ferry::from(paths(10))
                 .map([](const std::string&) -> int { throw ferry::io_error("refused"); },
                      {.name = "read", .on_error = ferry::skip})
                 .build({.threads = 1, .logger = quiet});
    const auto e = expect_throw<ferry::error>([&] { drain(p); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(std::string(e->what()).find("the last: stage 'read' on item 9 ('data/9.jpg'): "
                                           "refused") != std::string::npos,
               e->what());
}

// exclude() needs something to match: elements without a description are refused at once.
BOOST_AUTO_TEST_CASE(exclude_without_a_description_is_invalid) {
    BOOST_CHECK_THROW((void)ferry::from(iota(3)).exclude({"1"}), ferry::invalid_argument);
    auto p = ferry::from(iota(3))
                 .describe([](int x) { return std::to_string(x); })
                 .exclude({"1"})
                 .build({.logger = quiet});
    BOOST_TEST(drain(p) == (std::vector<int>{0, 2}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
