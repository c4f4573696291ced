// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry::bytes and read_file: exact contents (empty, small, 5 MB, files of unknown size),
/// io_errors that name the path, and reads from FIFOs that stop() and destruction cut short.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <ferry/ferry.hpp>
#include <fstream>
#include <random>
#include <string>
#include <thread>

#include "../support/blocked_call.hpp"
#include "../support/ops_support.hpp"

using namespace ops_test;
using ferry::ops::read_file;

// Named, not anonymous: shared by several cases.
namespace bytes_test {

file_bytes random_bytes(std::size_t n, std::uint32_t seed) {
    std::mt19937 rng(seed);
    file_bytes out(n);
    for (auto& b : out) b = static_cast<std::uint8_t>(rng());
    return out;
}

bool same_contents(const ferry::bytes& got, const file_bytes& want) {
    return got.size() == want.size() &&
           (want.empty() || std::memcmp(got.data(), want.data(), want.size()) == 0);
}

/// A FIFO's writer: none at all, or one that wrote 1000 bytes and then nothing.
enum class fifo_writer : std::uint8_t { none, stalled };

struct fifo_case {
    fifo_writer writer;
    ending end;
};
std::ostream& operator<<(std::ostream& os, const fifo_case& c) {
    return os << (c.writer == fifo_writer::none ? "no writer" : "stalled writer") << "/"
              << (c.end == ending::stop ? "stop" : "destroy");
}
const std::vector<fifo_case> fifo_cases{{fifo_writer::none, ending::stop},
                                        {fifo_writer::none, ending::destroy},
                                        {fifo_writer::stalled, ending::stop},
                                        {fifo_writer::stalled, ending::destroy}};

}  // namespace bytes_test

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(bytes)
using namespace bytes_test;

// read_file returns a file's bytes exactly: empty, small, and 5 MB.
BOOST_AUTO_TEST_CASE(read_file_returns_the_exact_contents) {
    const temp_folder dir;
    for (const std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{4097}, std::size_t{5} << 20}) {
        const file_bytes want = random_bytes(n, static_cast<std::uint32_t>(n));
        const ferry::bytes got = read_file(dir.write("f" + std::to_string(n), want));
        BOOST_TEST(got.size() == n);
        BOOST_TEST(got.empty() == (n == 0));
        BOOST_TEST(same_contents(got, want), n << " bytes");
    }
}

// Files whose size is not known up front (procfs, a pipe) are read to their end.
BOOST_AUTO_TEST_CASE(read_file_reads_files_of_unknown_size_to_the_end) {
    const ferry::bytes status = read_file("/proc/self/status");
    BOOST_TEST_REQUIRE(status.size() > 5U);
    BOOST_TEST(std::string(reinterpret_cast<const char*>(status.data()), 5) == "Name:");

    const temp_folder dir;
    const auto fifo = dir.path() / "pipe";
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const file_bytes want = random_bytes(300'000, 5);  // several pipe buffers
    std::thread writer([&] {
        std::ofstream out(fifo, std::ios::binary);  // blocks until read_file opens the pipe
        out.write(reinterpret_cast<const char*>(want.data()),
                  static_cast<std::streamsize>(want.size()));
    });
    ferry::bytes got;
    try {
        got = read_file(fifo);
    } catch (...) {
        // Unblock the writer before failing, or the join below would hang.
        std::ifstream drain(fifo, std::ios::binary);
        writer.join();
        throw;
    }
    writer.join();
    BOOST_TEST(same_contents(got, want), "pipe: got " << got.size() << " of " << want.size());
}

// A read_file call waiting on a FIFO that never delivers (no writer ever opens it, or its writer
// stalls after 1000 bytes) ends within the bound of stop() or destruction, as errc::cancelled
// naming the path: it would otherwise block for ever.
BOOST_DATA_TEST_CASE(read_file_on_a_silent_fifo_ends_promptly_on_stop_and_destruction,
                     boost::unit_test::data::make(fifo_cases), c) {
    const temp_folder dir;
    const auto first = dir.write("first", random_bytes(10, 1));
    const auto fifo = dir.path() / "silent";
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    int writer = -1;
    if (c.writer == fifo_writer::stalled) {
        // Read-write, so that this open does not wait for a reader; this end never reads.
        writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
        BOOST_TEST_REQUIRE(writer >= 0);
        const file_bytes some = random_bytes(1000, 2);
        BOOST_TEST_REQUIRE(::write(writer, some.data(), some.size()) == 1000);
    }
    const blocked_call_end r =
        end_blocked_call<ferry::bytes>([](const std::filesystem::path& p) { return read_file(p); },
                                       first, fifo, c.end, std::chrono::milliseconds(200));
    if (writer >= 0) ::close(writer);
    BOOST_TEST_MESSAGE(c << ": the loop ended " << r.loop_ms << " ms, destruction " << r.destroy_ms
                         << " ms after being asked");
    check_ended_cancelled(
        r, "read_file: '" + fifo.string() + "': cancelled: the pipeline is stopping");
}

// A missing file is an io_error whose message names the path.
BOOST_AUTO_TEST_CASE(missing_file_is_an_io_error_naming_the_path) {
    const temp_folder dir;
    const auto path = dir.path() / "no_such_image.jpg";
    const std::string msg = expect_throw<ferry::io_error>([&] { (void)read_file(path); }).what();
    BOOST_TEST(msg.find(path.string()) != std::string::npos, "message: " << msg);
}

// A directory is an io_error naming the path, not an empty file.
BOOST_AUTO_TEST_CASE(directory_is_an_io_error_naming_the_path) {
    const temp_folder dir;
    const std::string msg =
        expect_throw<ferry::io_error>([&] { (void)read_file(dir.path()); }).what();
    BOOST_TEST(msg.find(dir.path().string()) != std::string::npos, "message: " << msg);
}

// Neither a missing file nor a directory will read on another attempt: their io_errors are not
// transient, so ferry::retry goes to its `then` at once; the file is tried once.
BOOST_AUTO_TEST_CASE(a_missing_file_is_not_retried) {
    const temp_folder dir;
    for (const auto& path : {dir.path() / "no_such_image.jpg", dir.path()}) {
        try {
            (void)read_file(path);
            BOOST_ERROR("read " << path);
        } catch (const ferry::io_error& e) {
            BOOST_TEST(!e.transient(), e.what());
        }
    }
    std::atomic<int> calls{0};
    auto p = ferry::from(std::vector<std::filesystem::path>{dir.path() / "missing.jpg"})
                 .map(
                     [&](const std::filesystem::path& f) {
                         ++calls;
                         return read_file(f);
                     },
                     {.on_error = ferry::retry{.attempts = 3, .then = ferry::error_action::skip},
                      .executor = ferry::io})
                 // The one item fails on purpose: the epoch must end, not raise the "most items
                 // failed" error.
                 .build({.threads = 1,
                         .logger = [](ferry::log_level, std::string_view) {},
                         .max_epoch_failure_rate = 1.0});
    BOOST_TEST(!p.next().has_value());
    BOOST_TEST(calls.load() == 1);
    BOOST_TEST(p.stats().failed == 1u);
}

// bytes: copies copy, moves hand the memory over, truncate keeps a prefix in place.
BOOST_AUTO_TEST_CASE(bytes_copy_move_and_truncate) {
    ferry::bytes a = ferry::bytes::from_string("hello, ferry");
    BOOST_TEST(a.size() == 12U);
    const ferry::bytes copy = a;
    BOOST_TEST(copy.data() != a.data());
    BOOST_TEST(std::memcmp(copy.data(), a.data(), 12) == 0);

    const std::byte* where = a.data();
    ferry::bytes moved = std::move(a);
    BOOST_TEST(moved.data() == where);
    BOOST_TEST(moved.size() == 12U);

    moved.truncate(5);
    BOOST_TEST(moved.size() == 5U);
    BOOST_TEST(moved.data() == where);
    const std::span<const std::byte> view = moved;
    BOOST_TEST(std::string(reinterpret_cast<const char*>(view.data()), view.size()) == "hello");
    moved.truncate(100);  // longer than it is: unchanged
    BOOST_TEST(moved.size() == 5U);
}

// A moved-from bytes is empty, and so is a copy of an empty one; copy-assignment copies the
// (truncated) bytes into memory of its own.
BOOST_AUTO_TEST_CASE(bytes_moved_from_and_copies_of_empty_are_empty) {
    ferry::bytes a = ferry::bytes::from_string("abcdef");
    ferry::bytes b = std::move(a);
    BOOST_TEST(a.empty());  // NOLINT(bugprone-use-after-move): what a move leaves is the point
    BOOST_TEST(a.size() == 0U);
    const ferry::bytes copy_of_empty = a;
    BOOST_TEST(copy_of_empty.empty());

    b.truncate(3);
    ferry::bytes assigned = ferry::bytes::from_string("longer than three");
    assigned = b;
    BOOST_TEST(assigned.size() == 3U);
    BOOST_TEST(assigned.data() != b.data());
    BOOST_TEST(std::string(reinterpret_cast<const char*>(assigned.data()), 3) == "abc");
}

BOOST_AUTO_TEST_SUITE_END()
BOOST_AUTO_TEST_SUITE_END()
