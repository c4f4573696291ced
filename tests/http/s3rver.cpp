// SPDX-License-Identifier: Apache-2.0
/// \file
/// s3:// against a real S3-compatible server: s3rver (npm), started by the test on 127.0.0.1 and
/// stopped by it, filled by an independent client (boto3, tools/s3_fill.py). ferry lists the
/// prefix, reads every object and a range of one, and gets the store's NoSuchKey
/// and NoSuchBucket as s3_errors. s3rver does not check signatures (any secret is accepted), so
/// tests/http/s3.cpp checks them with an independent SigV4 implementation.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdlib>
#include <ferry/http.hpp>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../support/expect.hpp"
#include "../support/http_bodies.hpp"
#include "../support/temp_folder.hpp"
#include "../support/tied_child.hpp"
#include "s3_support.hpp"

using ferry_test::as_string;

namespace {

using namespace std::chrono_literals;

/// A free TCP port on 127.0.0.1 (bound and released: s3rver takes it a moment later).
int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
}

bool accepts(int port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

/// s3rver on 127.0.0.1:<port> over a fresh folder, for the object's lifetime: started in its
/// constructor (which waits until it accepts connections, at most 30 s), stopped in its
/// destructor (SIGTERM, then SIGKILL after 5 s), or by the kernel (SIGTERM) if the thread that
/// started it ends first.
class s3rver {
  public:
    s3rver() : port_(free_port()) {
        const std::string port = std::to_string(port_);
        const std::string dir = dir_.path().string();
        std::vector<const char*> argv{
            FERRY_TEST_S3RVER, "-d",       dir.c_str(), "-a", "127.0.0.1", "-p",
            port.c_str(),      "--silent", nullptr};
        // Tied to this thread: a test process that crashes or is killed by ctest's timeout
        // takes the server with it.
        pid_ = ferry_test::spawn_tied(FERRY_TEST_S3RVER, const_cast<char* const*>(argv.data()));
        if (pid_ < 0) throw std::runtime_error("cannot start " FERRY_TEST_S3RVER ": fork failed");
        const auto deadline = std::chrono::steady_clock::now() + 30s;
        while (!accepts(port_)) {
            int status = 0;
            if (::waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("s3rver exited at start");
            }
            if (std::chrono::steady_clock::now() > deadline) {
                stop();
                throw std::runtime_error("s3rver did not listen within 30 s");
            }
            std::this_thread::sleep_for(50ms);
        }
    }
    ~s3rver() { stop(); }
    s3rver(const s3rver&) = delete;
    s3rver& operator=(const s3rver&) = delete;
    [[nodiscard]] std::string endpoint() const {
        return "http://127.0.0.1:" + std::to_string(port_);
    }

  private:
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGTERM);
        for (int i = 0; i < 100; ++i) {
            if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
                pid_ = -1;
                return;
            }
            std::this_thread::sleep_for(50ms);
        }
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
        pid_ = -1;
    }
    int port_;
    pid_t pid_ = -1;
    ferry_test::temp_folder dir_{"ferry-s3rver"};
};

std::string body(int i) {
    std::string s = "object " + std::to_string(i);
    for (int k = 0; k < i * 37; ++k) s += static_cast<char>((i + k) % 251);
    return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(http)

// The store's objects, listed and read back byte for byte; a range of one; the
// store's own errors for a missing key and a missing bucket.
BOOST_AUTO_TEST_CASE(s3rver_objects_are_listed_and_read) {
    const s3rver server;
    constexpr int n = 25;
    const std::string fill = "'" FERRY_TEST_SOURCE_DIR "/tests/http/tools/s3_fill.py' " +
                             server.endpoint() + " ferry-test " + std::to_string(n);
    BOOST_TEST_REQUIRE(std::system(fill.c_str()) == 0);
    const ferry_test::scoped_env env({{"AWS_ENDPOINT_URL", server.endpoint()},
                                      {"AWS_ACCESS_KEY_ID", "S3RVER"},
                                      {"AWS_SECRET_ACCESS_KEY", "S3RVER"}});
    // One page: s3rver 3.7 answers a truncated listing (max-keys below the count) with
    // InternalError, to boto3 as well; s3.cpp tests paging against the in-process server.
    const auto urls = ferry::sources::list_objects("s3://ferry-test/train/");
    BOOST_TEST_REQUIRE(urls.size() == static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        char key[32];
        std::snprintf(key, sizeof key, "s3://ferry-test/train/%04d.bin", i);
        BOOST_TEST(urls[static_cast<std::size_t>(i)] == key);
        BOOST_TEST((as_string(ferry::ops::read_url(urls[static_cast<std::size_t>(i)])) == body(i)),
                   key);
    }
    BOOST_TEST(ferry::sources::list_objects("s3://ferry-test/").size() ==
               static_cast<std::size_t>(n + 1));
    BOOST_TEST((as_string(ferry::ops::read_url(
                    "s3://ferry-test/train/0020.bin",
                    {.range = ferry::byte_range{.offset = 100, .length = 200}})) ==
                body(20).substr(100, 200)));
    const auto missing = ferry_test::expect_throw<ferry::s3_error>(
        [] { (void)ferry::ops::read_url("s3://ferry-test/train/nope.bin"); });
    BOOST_REQUIRE(missing.has_value());
    BOOST_TEST(missing->code() == "NoSuchKey");
    BOOST_TEST(missing->status() == 404);
    BOOST_TEST(!missing->transient());
    const auto bucket = ferry_test::expect_throw<ferry::s3_error>(
        [] { (void)ferry::sources::list_objects("s3://no-such-bucket/"); });
    BOOST_REQUIRE(bucket.has_value());
    BOOST_TEST(bucket->code() == "NoSuchBucket");
}

BOOST_AUTO_TEST_SUITE_END()
