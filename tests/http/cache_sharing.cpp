// SPDX-License-Identifier: Apache-2.0
/// \file
/// The cache shared and failing: threads and processes filling one entry at once, a writer
/// killed mid-write, a server that dies mid-body, and a cache that fails (file size limit, folder
/// removed) while the network answers. What must hold: every caller gets the whole object, no
/// partial file ever carries an entry's name, no temporary file stays.
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <condition_variable>
#include <ferry/cache.hpp>
#include <ferry/http.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../support/expect.hpp"
#include "cache_support.hpp"

using ferry_test::as_string;
using ferry_test::file_text;
using ferry_test::files_in;
using ferry_test::http_request;
using ferry_test::http_response;
using ferry_test::http_server;
using ferry_test::object_server;
using ferry_test::random_body;
using ferry_test::read;
using ferry_test::temp_files_in;
using ferry_test::temp_folder;

namespace cache_sharing_test {

/// Starts tests/http/cache_reader: another process that reads `url` through a cache of its own
/// on `dir` and exits 0 when the bytes are `random_body(size, seed)`. -1 when it cannot start.
pid_t spawn_reader(const std::string& url, const std::filesystem::path& dir, std::size_t size,
                   std::uint32_t seed) {
    std::vector<std::string> args{FERRY_CACHE_READER, url, dir.string(), std::to_string(size),
                                  std::to_string(seed)};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    return ::posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0 ? pid : -1;
}

int exit_code(pid_t pid) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace cache_sharing_test

BOOST_AUTO_TEST_SUITE(http)
BOOST_AUTO_TEST_SUITE(cache)
using namespace cache_sharing_test;

// Eight threads reading one uncached URL at once all get the whole object; one of them fetches
// it (the others wait for it), and the folder holds one complete entry.
BOOST_AUTO_TEST_CASE(threads_filling_one_entry_share_one_fetch) {
    temp_folder dir("ferry-cache-threads");
    object_server s;
    const std::string body = random_body(2 << 20, 21);
    s.put("/shared", body);
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    std::vector<std::string> got(8);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < got.size(); ++i) {
        threads.emplace_back([&, i] { got[i] = read(s.url("/shared"), cache); });
    }
    for (auto& t : threads) t.join();
    for (std::size_t i = 0; i < got.size(); ++i) BOOST_TEST((got[i] == body), "thread " << i);
    BOOST_TEST(s.gets.load() == 1);
    const auto names = files_in(dir.path());
    BOOST_TEST_REQUIRE(names.size() == 1U);
    BOOST_TEST(file_text(dir / names[0]).substr(0, body.size()) == body);
    const auto st = cache->stats();
    BOOST_TEST(st.misses == 1U);
    BOOST_TEST(st.hits == 7U);
}

// Two processes filling one entry at once (the server answers neither until both asked) both get
// the whole object; one complete entry stays, and no temporary file.
BOOST_AUTO_TEST_CASE(two_processes_filling_one_entry_leave_one_file) {
    temp_folder dir("ferry-cache-processes");
    const std::string body = random_body(1 << 20, 22);
    std::mutex m;
    std::condition_variable cv;
    int asked = 0;
    http_server server([&](const http_request&) {
        std::unique_lock lock(m);
        ++asked;
        cv.notify_all();
        cv.wait_for(lock, std::chrono::seconds(10), [&] { return asked >= 2; });
        return http_response{.body = body};
    });
    const pid_t child = spawn_reader(server.url("/o"), dir.path(), 1 << 20, 22);
    BOOST_TEST_REQUIRE(child > 0);
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    BOOST_TEST(read(server.url("/o"), cache) == body);
    BOOST_TEST(exit_code(child) == 0);
    BOOST_TEST(asked == 2);
    const auto names = files_in(dir.path());
    BOOST_TEST_REQUIRE(names.size() == 1U, "files: " << names.size());
    BOOST_TEST(names[0] == cache->entry_path(server.url("/o")).filename().string());
    // The entry is whole: read with the server gone.
    server.stop();
    BOOST_TEST(read(server.url("/o"), ferry::ops::open_cache({.dir = dir.path()})) == body);
}

// A writer killed mid-write leaves no file under the entry's name; its temporary file is
// removed by the next process that opens the folder.
BOOST_AUTO_TEST_CASE(a_writer_killed_mid_write_leaves_no_entry) {
    temp_folder dir("ferry-cache-killed");
    const std::string body = random_body(1 << 20, 23);
    http_server server([&](const http_request&) {
        return http_response{.body = body, .send_only = 4096, .after = http_response::then::stall};
    });
    const pid_t child = spawn_reader(server.url("/slow"), dir.path(), 1 << 20, 23);
    BOOST_TEST_REQUIRE(child > 0);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool writing = false;
    while (!writing && std::chrono::steady_clock::now() < until) {
        for (const auto& t : temp_files_in(dir.path())) {
            writing = writing || std::filesystem::file_size(dir / t) == 4096;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    BOOST_TEST_REQUIRE(writing, "the child never wrote 4096 bytes");
    ::kill(child, SIGKILL);
    BOOST_TEST(exit_code(child) == -1);
    const auto entry = dir / ferry::ops::open_cache({.dir = dir.path()})
                                 ->entry_path(server.url("/slow"))
                                 .filename()
                                 .string();
    BOOST_TEST(!std::filesystem::exists(entry));
    BOOST_TEST(files_in(dir.path()).empty(), "left: " << files_in(dir.path()).size());
}

// A server that dies mid-body fails the read as it would without a cache, and leaves neither an
// entry nor a temporary file; the next read, from a server that works, is cached.
BOOST_AUTO_TEST_CASE(a_body_cut_short_leaves_nothing) {
    temp_folder dir("ferry-cache-cut");
    const std::string body = random_body(100000, 24);
    std::atomic<int> calls{0};
    http_server server([&](const http_request&) {
        if (calls++ == 0) {
            return http_response{
                .body = body, .send_only = 50000, .after = http_response::then::close};
        }
        return http_response{.body = body};
    });
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    const auto e =
        ferry_test::expect_throw<ferry::http_error>([&] { (void)read(server.url("/cut"), cache); });
    BOOST_TEST(e.what().find("truncated body") != std::string::npos, e.what());
    BOOST_TEST(files_in(dir.path()).empty());
    BOOST_TEST(read(server.url("/cut"), cache) == body);
    BOOST_TEST(files_in(dir.path()).size() == 1U);
}

// A cache that fails mid-write (the process's file size limit: EFBIG, as a full disk gives
// ENOSPC) does not lose the read: the network answers, the failure is counted, nothing stays.
BOOST_AUTO_TEST_CASE(a_failing_disk_falls_back_to_the_network) {
    temp_folder dir("ferry-cache-full");
    object_server s;
    const std::string body = random_body(200000, 25);
    s.put("/f", body);
    const auto cache = ferry::ops::open_cache({.dir = dir.path()});
    rlimit before{};
    ::getrlimit(RLIMIT_FSIZE, &before);
    const auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit small = before;
    small.rlim_cur = 64 * 1024;
    ::setrlimit(RLIMIT_FSIZE, &small);
    std::string got;
    try {
        got = read(s.url("/f"), cache);
    } catch (...) {
        ::setrlimit(RLIMIT_FSIZE, &before);
        ::signal(SIGXFSZ, old_handler);
        throw;
    }
    ::setrlimit(RLIMIT_FSIZE, &before);
    ::signal(SIGXFSZ, old_handler);
    BOOST_TEST(got == body);
    BOOST_TEST(cache->stats().failures == 1U);
    BOOST_TEST(files_in(dir.path()).empty());
    // The folder removed under an open cache: the same.
    std::filesystem::remove_all(dir.path());
    BOOST_TEST(read(s.url("/f"), cache) == body);
    BOOST_TEST(cache->stats().failures == 2U);
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
