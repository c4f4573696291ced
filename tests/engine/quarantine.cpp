// SPDX-License-Identifier: Apache-2.0
/// \file
/// Quarantine: a run appends its failed inputs to a JSON-lines file, whole lines even when many
/// threads fail at once; the next run loads it and leaves exactly those inputs out (filtered).
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "../support/temp_folder.hpp"
#include "support.hpp"

using namespace ferry_test;
namespace fs = std::filesystem;

namespace quarantine_test {

/// A quarantine file's name in a folder of its own, unique to this process and call, removed
/// (with the folder) at scope exit.
class temp_file {
  public:
    [[nodiscard]] const fs::path& path() const { return path_; }
    [[nodiscard]] std::vector<std::string> lines() const {
        std::ifstream in(path_);
        std::vector<std::string> out;
        for (std::string l; std::getline(in, l);) out.push_back(l);
        return out;
    }
    void write(const std::string& text) const { std::ofstream(path_) << text; }

  private:
    ferry_test::temp_folder dir_{"ferry-quarantine"};
    fs::path path_ = dir_ / "quarantine.jsonl";
};

/// `img/0.png`, ... `img/<n-1>.png`.
std::vector<std::string> files(int n) {
    std::vector<std::string> v;
    for (int i = 0; i < n; ++i) v.push_back("img/" + std::to_string(i) + ".png");
    return v;
}

/// Fails every 7th file with a decode error.
int decode(const std::string& f) {
    const int i = std::stoi(f.substr(4));
    if (i % 7 == 3) throw ferry::decode_error("truncated \"IDAT\" chunk in " + f);
    return i;
}

}  // namespace quarantine_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(quarantine)
using namespace quarantine_test;

// A run with skips writes one line per failure holding exactly the failed inputs, with their
// stage, code, message, epoch and item; a second run that excludes them delivers the rest, and
// counts the excluded ones as filtered.
BOOST_AUTO_TEST_CASE(quarantined_inputs_are_left_out_of_the_next_run) {
    temp_file q;
    constexpr int n = 200;
    std::set<std::string> want;
    for (const auto& f : files(n)) {
        if (std::stoi(f.substr(4)) % 7 == 3) want.insert(f);
    }
    {
        auto p = ferry::from(files(n))
                     .map(decode, {.concurrency = 4, .name = "decode", .on_error = ferry::skip})
                     .build({.threads = 2, .logger = quiet, .quarantine = q.path()});
        BOOST_TEST(drain(p).size() == n - want.size());
        // Written as recorded, not at the end: the lines are there before the pipeline goes.
        const auto lines = q.lines();
        BOOST_REQUIRE(lines.size() == want.size());
        for (const auto& l : lines) {
            BOOST_TEST(l.find("\"stage\": \"decode\", \"code\": \"decode\", \"message\": "
                              "\"truncated \\\"IDAT\\\" chunk in img/") != std::string::npos,
                       l);
            BOOST_TEST(l.find("\"epoch\": 0, \"item\": ") != std::string::npos, l);
        }
    }
    const ferry::quarantine_list bad = ferry::load_quarantine(q.path());
    BOOST_TEST(bad.size() == want.size());
    for (const auto& f : want) BOOST_TEST(bad.contains(f), f);

    auto second = ferry::from(files(n))
                      .exclude(bad)
                      .map(decode, {.concurrency = 4, .name = "decode", .on_error = ferry::skip})
                      .build({.threads = 2, .logger = quiet});
    const auto got = drain(second);
    BOOST_TEST(got.size() == n - want.size());
    for (const int i : got) BOOST_TEST(i % 7 != 3);
    const auto s = second.stats();
    BOOST_TEST(s.produced == static_cast<std::uint64_t>(n));
    BOOST_TEST(s.filtered == want.size());
    BOOST_TEST(s.stages.at(0).filtered == want.size());  // counted at the source
    BOOST_TEST(s.failed == 0u);
    check_complete_accounting(s);
}

// Many threads failing at once give whole lines: every line parses and each input appears once.
BOOST_AUTO_TEST_CASE(concurrent_failures_write_whole_lines) {
    temp_file q;
    constexpr int n = 600;
    const std::string padding(300, 'x');  // lines longer than one small write
    {
        auto p = ferry::from(files(n))
                     .map([&](const std::string& f) -> int { throw ferry::io_error(f + padding); },
                          {.concurrency = 8, .on_error = ferry::skip, .executor = ferry::io})
                     .build({.threads = 2,
                             .logger = quiet,
                             .max_epoch_failure_rate = 1,
                             .quarantine = q.path()});
        BOOST_TEST(drain(p).empty());
    }
    BOOST_TEST(q.lines().size() == static_cast<std::size_t>(n));
    const ferry::quarantine_list bad = ferry::load_quarantine(q.path());  // throws on a torn line
    BOOST_TEST(bad.size() == static_cast<std::size_t>(n));
}

// An existing file is appended to, not replaced: two runs' failures add up.
BOOST_AUTO_TEST_CASE(quarantine_file_is_appended_to) {
    temp_file q;
    for (int run = 0; run < 2; ++run) {
        auto p = ferry::from(std::vector<std::string>{"run" + std::to_string(run)})
                     .map([](const std::string&) -> int { throw ferry::decode_error("bad"); },
                          {.on_error = ferry::skip})
                     .build({.logger = quiet, .max_epoch_failure_rate = 1, .quarantine = q.path()});
        (void)drain(p);
    }
    const auto bad = ferry::load_quarantine(q.path());
    BOOST_TEST(bad.size() == 2u);
    BOOST_TEST(bad.contains("run0"));
    BOOST_TEST(bad.contains("run1"));
}

// A quarantine file ferry creates is readable by its user only (0600, like the cache): its lines
// name the inputs that failed and why, which other users of the machine have no business seeing.
// The umask is opened wide for the run, so only the mode ferry asks for decides it.
BOOST_AUTO_TEST_CASE(a_new_quarantine_file_is_private) {
    temp_file q;
    const ::mode_t before = ::umask(0);
    {
        auto p = ferry::from(std::vector<std::string>{"s3://bucket/private/report.pdf"})
                     .map([](const std::string&) -> int { throw ferry::decode_error("bad"); },
                          {.on_error = ferry::skip})
                     .build({.logger = quiet, .max_epoch_failure_rate = 1, .quarantine = q.path()});
        (void)drain(p);
    }
    ::umask(before);
    struct stat st {};
    BOOST_TEST_REQUIRE(::stat(q.path().c_str(), &st) == 0);
    BOOST_TEST((st.st_mode & 07777) == 0600U);
    BOOST_TEST(q.lines().size() == 1U);
}

// Inputs with quotes, backslashes, control characters, non-ASCII and bytes that are not UTF-8
// come back from the file exactly as they went in.
BOOST_AUTO_TEST_CASE(quarantine_lines_round_trip_any_bytes) {
    const std::vector<std::string> odd{
        "a\"b\\c",         "tab\there\nnewline",        "caf\xc3\xa9.jpg",
        "latin1-\xe9.jpg", std::string("nul\0byte", 8), "\x7f\x01"};
    ferry::failure f;
    f.input = "a\"b\\c\n";
    BOOST_TEST(ferry::quarantine_line(f) ==
               R"({"input": "a\"b\\c\n", "stage": "", "code": "stage_failed", "message": "", )"
               R"("epoch": 0, "item": 0, "items": 1})");
    f.input = "latin1-\xe9";
    BOOST_TEST(ferry::quarantine_line(f).find(R"("latin1-\udce9")") != std::string::npos);
    temp_file q;
    std::string text;
    for (const auto& input : odd) {
        f.input = input;
        text += ferry::quarantine_line(f) + "\n";
    }
    q.write(text);
    const auto bad = ferry::load_quarantine(q.path());
    BOOST_TEST(bad.size() == odd.size());
    for (const auto& input : odd) BOOST_TEST(bad.contains(input));
}

// A line that is not a JSON object with a string "input" is an invalid_argument naming the file
// and its line number; blank lines and unknown fields are fine; a missing file is an io_error.
BOOST_AUTO_TEST_CASE(bad_quarantine_file_names_the_line) {
    temp_file q;
    q.write(
        "{\"input\": \"a.jpg\", \"extra\": [1, {\"x\": null}], \"n\": -1.5e3}\n"
        "\n"
        "{\"input\": \"b.jpg\", \"stage\": \"decode\"\n");
    const auto e =
        expect_throw<ferry::invalid_argument>([&] { (void)ferry::load_quarantine(q.path()); });
    BOOST_REQUIRE(e.has_value());
    const std::string what = e->what();
    BOOST_TEST(what.find(q.path().string() + ":3: ") != std::string::npos, what);
    BOOST_TEST(what.find("expected ',' or '}'") != std::string::npos, what);

    q.write("{\"path\": \"a.jpg\"}\n");
    const auto no_input =
        expect_throw<ferry::invalid_argument>([&] { (void)ferry::load_quarantine(q.path()); });
    BOOST_REQUIRE(no_input.has_value());
    BOOST_TEST(std::string(no_input->what()).find(":1: no \"input\" field") != std::string::npos);

    BOOST_CHECK_THROW((void)ferry::load_quarantine(q.path().string() + ".missing"),
                      ferry::io_error);
}

// A quarantine path that cannot be opened fails build() with an io_error naming it.
BOOST_AUTO_TEST_CASE(unopenable_quarantine_path_fails_build) {
    const ferry_test::temp_folder dir("ferry-quarantine-missing");
    const fs::path where = dir / "no-such-dir" / "q.jsonl";
    const auto e = expect_throw<ferry::io_error>(
        [&] { (void)ferry::from(files(3)).build({.logger = quiet, .quarantine = where}); });
    BOOST_REQUIRE(e.has_value());
    BOOST_TEST(std::string(e->what()).find(where.string()) != std::string::npos, e->what());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
