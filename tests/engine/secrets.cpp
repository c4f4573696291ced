// SPDX-License-Identifier: Apache-2.0
/// \file
/// The engine's last line of defence for secrets and forged lines: whatever a stage throws, no
/// URL credential and no control character reaches failures(), the log, the quarantine file or
/// the stage_error the consumer catches; a describe() that returns a URL is named redacted.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "../support/temp_folder.hpp"
#include "support.hpp"

using namespace ferry_test;
namespace fs = std::filesystem;

namespace secrets_test {

/// A message a careless op might throw: a presigned shard URL, a token in the user part and a
/// server's text with a newline and a terminal escape in it.
const std::string leaky =
    "tar_samples: shard 'https://h/x.tar?X-Amz-Credential=AKIDLEAK&X-Amz-Signature=SIGLEAK' "
    "failed; mirror https://ghp_TOKENLEAK@git.example/x.tar: server said \"bad\nferry error: "
    "forged\x1b[31m\"";

const std::vector<std::string> secrets{"AKIDLEAK", "SIGLEAK", "ghp_TOKENLEAK", "\nferry", "\x1b"};

struct job {
    std::string url;
    int n = 0;
};

std::string file_text(const fs::path& p) {
    std::ostringstream s;
    s << std::ifstream(p).rdbuf();
    return s.str();
}

void expect_clean(const std::string& text, const std::string& where) {
    for (const auto& s : secrets) {
        BOOST_TEST(text.find(s) == std::string::npos, where << " holds '" << s << "': " << text);
    }
}

}  // namespace secrets_test

BOOST_AUTO_TEST_SUITE(engine)
BOOST_AUTO_TEST_SUITE(secrets)
using namespace secrets_test;

// A skipping stage whose errors name presigned URLs: failures(), every log line and the
// quarantine file hold neither the credentials nor the raw control characters, and still say
// what failed.
BOOST_AUTO_TEST_CASE(failures_logs_and_quarantine_hold_no_secret) {
    const ferry_test::temp_folder dir("ferry-secrets");
    const fs::path q = dir / "quarantine.jsonl";
    fs::remove(q);
    std::mutex m;
    std::vector<std::string> lines;
    {
        auto p = ferry::from(std::vector<int>{0, 1, 2, 3})
                     .map([](int i) -> int { throw ferry::io_error(leaky + std::to_string(i)); },
                          {.name = "fetch", .on_error = ferry::skip})
                     .build({.threads = 2,
                             .logger =
                                 [&](ferry::log_level, std::string_view line) {
                                     const std::lock_guard lock(m);
                                     lines.emplace_back(line);
                                 },
                             .max_epoch_failure_rate = 1,
                             .quarantine = q});
        BOOST_TEST(drain(p).empty());
        BOOST_TEST(p.failures().size() == 4U);
        for (const auto& f : p.failures()) {
            expect_clean(f.message, "failure::message");
            BOOST_TEST(f.message.find("X-Amz-Signature=REDACTED") != std::string::npos, f.message);
            BOOST_TEST(f.message.find("bad\\nferry error: forged\\x1b[31m") != std::string::npos,
                       f.message);
            BOOST_TEST((f.code == ferry::errc::io));
        }
    }
    BOOST_TEST(lines.size() >= 4U);
    for (const auto& l : lines) expect_clean(l, "log line");
    const std::string quarantined = file_text(q);
    fs::remove(q);
    BOOST_TEST(quarantined.find("\"stage\": \"fetch\"") != std::string::npos, quarantined);
    expect_clean(quarantined, "quarantine file");
}

// Under the fail policy the consumer's stage_error (what() and cause()) is safe to print.
BOOST_AUTO_TEST_CASE(stage_error_is_safe_to_print) {
    auto p = ferry::from(std::vector<int>{0})
                 .map([](int) -> int { throw ferry::io_error(leaky); }, {.name = "fetch"})
                 .build({.threads = 1, .logger = quiet});
    try {
        (void)drain(p);
        BOOST_FAIL("the failing stage did not end the epoch");
    } catch (const ferry::stage_error& e) {
        expect_clean(e.what(), "stage_error::what()");
        expect_clean(e.cause(), "stage_error::cause()");
        BOOST_TEST(
            std::string(e.what()).find("https://REDACTED@git.example/x.tar") != std::string::npos,
            e.what());
    }
}

// A describe() that returns a presigned URL as a std::string names the item redacted in
// failure::input, and quarantining by that name still excludes the item on the next run.
BOOST_AUTO_TEST_CASE(described_urls_are_redacted_and_still_excluded) {
    const std::vector<job> jobs{{"https://h/a.jpg?X-Goog-Signature=GSIGLEAK", 0},
                                {"https://h/b.jpg?X-Goog-Signature=GSIGLEAK", 1}};
    const ferry_test::temp_folder dir("ferry-secrets-d");
    const fs::path q = dir / "quarantine.jsonl";
    fs::remove(q);
    const auto fail_a = [](const job& j) -> int {
        if (j.n == 0) throw ferry::decode_error("bad");
        return j.n;
    };
    {
        auto p = ferry::from(jobs)
                     .describe([](const job& j) { return j.url; })
                     .map(fail_a, {.on_error = ferry::skip})
                     .build({.logger = quiet, .quarantine = q});
        BOOST_TEST(drain(p).size() == 1U);
        BOOST_REQUIRE(p.failures().size() == 1U);
        BOOST_TEST(p.failures()[0].input == "https://h/a.jpg?X-Goog-Signature=REDACTED");
    }
    BOOST_TEST(file_text(q).find("GSIGLEAK") == std::string::npos);
    auto second = ferry::from(jobs)
                      .describe([](const job& j) { return j.url; })
                      .exclude(ferry::load_quarantine(q))
                      .map(fail_a, {.on_error = ferry::skip})
                      .build({.logger = quiet});
    fs::remove(q);
    BOOST_TEST(drain(second) == std::vector<int>{1});
    BOOST_TEST(second.stats().filtered == 1U);
    BOOST_TEST(second.failures().empty());
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
