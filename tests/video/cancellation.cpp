// SPDX-License-Identifier: Apache-2.0
/// \file
/// load_video and decode_audio reading FIFOs: a call waiting on one that never delivers ends
/// promptly when its pipeline is stopped or destroyed, and a FIFO whose writer opens late is
/// waited for and read whole.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <ferry/error.hpp>
#include <ferry/ferry.hpp>
#include <ferry/video.hpp>
#include <filesystem>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "../support/blocked_call.hpp"
#include "video_support.hpp"

namespace bdata = boost::unit_test::data;
using namespace video_test;
using ops_test::blocked_call_end;
using ops_test::cancel_bound;
using ops_test::end_blocked_call;
using ops_test::ending;

// Named, not anonymous: data test cases are templates with external linkage.
namespace video_cancel_test {

enum class media : std::uint8_t { video, audio };
/// A FIFO's writer: none at all, or one that wrote the file's first bytes and then nothing.
enum class fifo_writer : std::uint8_t { none, stalled };

struct fifo_case {
    media what;
    fifo_writer writer;
    ending end;
};
std::ostream& operator<<(std::ostream& os, media m) {
    return os << (m == media::video ? "load_video" : "decode_audio");
}
std::ostream& operator<<(std::ostream& os, const fifo_case& c) {
    return os << c.what << "/" << (c.writer == fifo_writer::none ? "no writer" : "stalled writer")
              << "/" << (c.end == ending::stop ? "stop" : "destroy");
}
// Each op meets each writer and each ending once.
const std::vector<fifo_case> fifo_cases{
    {media::video, fifo_writer::none, ending::stop},
    {media::video, fifo_writer::stalled, ending::destroy},
    {media::audio, fifo_writer::stalled, ending::stop},
    {media::audio, fifo_writer::none, ending::destroy},
};

/// A stream that can be read from a FIFO (no seeking back to an index at the end).
std::filesystem::path streamable(media what) {
    return what == media::video ? video_file({.codec = "libvpx-vp9", .ext = ".webm"})
                                : tone_file({440}, 44100, 0.5, "flac", ".flac");
}

/// The result's size, whatever the op returns.
std::size_t size_of(const ferry::video_clip& c) {
    return c.data().size();
}
std::size_t size_of(const ferry::audio& a) {
    return a.data().size();
}

template <class Out>
blocked_call_end run(Out (*op)(const std::filesystem::path&), const fifo_case& c,
                     const std::filesystem::path& fifo) {
    return end_blocked_call<Out>(op, streamable(c.what), fifo, c.end,
                                 std::chrono::milliseconds(200));
}

ferry::video_clip load(const std::filesystem::path& p) {
    return ferry::ops::load_video(p);
}
ferry::audio decode(const std::filesystem::path& p) {
    return ferry::ops::decode_audio(p);
}

}  // namespace video_cancel_test

using namespace video_cancel_test;

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(video)
BOOST_AUTO_TEST_SUITE(cancellation)

// A load_video or decode_audio call waiting on a FIFO that never delivers (no writer ever opens
// it, or its writer stalls after the first bytes) ends within the bound of stop() or
// destruction, as errc::cancelled naming the op and the path; it would otherwise wait for its
// 10 s stall timeout.
BOOST_DATA_TEST_CASE(reading_a_silent_fifo_ends_promptly_on_stop_and_destruction,
                     bdata::make(fifo_cases), c) {
    const auto fifo = scratch("silent-" + std::to_string(static_cast<int>(c.what)) + "-" +
                              std::to_string(static_cast<int>(c.writer)) + ".fifo");
    std::filesystem::remove(fifo);
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    int writer = -1;
    if (c.writer == fifo_writer::stalled) {
        // Read-write, so that this open does not wait for a reader; this end never reads.
        writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
        BOOST_TEST_REQUIRE(writer >= 0);
        const auto head = read_all(streamable(c.what));
        BOOST_TEST_REQUIRE(::write(writer, head.data(), 2000) == 2000);
    }
    const blocked_call_end r = c.what == media::video ? run(&load, c, fifo) : run(&decode, c, fifo);
    if (writer >= 0) ::close(writer);
    std::filesystem::remove(fifo);
    BOOST_TEST_MESSAGE(c << ": the loop ended " << r.loop_ms << " ms, destruction " << r.destroy_ms
                         << " ms after being asked");
    const std::string op = c.what == media::video ? "demux_video" : "decode_audio";
    check_ended_cancelled(r, op + ": " + fifo.string() + ": cancelled: the pipeline is stopping");
}

// A FIFO whose writer opens it only after the reader has: the reader waits for the writer
// (within its stall timeout) and reads the whole stream, frames and samples alike.
BOOST_DATA_TEST_CASE(a_fifo_whose_writer_opens_late_is_read_whole,
                     bdata::make(std::vector<media>{media::video, media::audio}), what) {
    const auto file = streamable(what);
    const auto fifo = scratch("late-" + std::to_string(static_cast<int>(what)) + ".fifo");
    std::filesystem::remove(fifo);
    BOOST_TEST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    const auto whole = read_all(file);
    std::thread writer([&] {
        // A reader that ended early makes write() fail with EPIPE instead of killing the test.
        sigset_t pipe_signal;
        sigemptyset(&pipe_signal);
        sigaddset(&pipe_signal, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_signal, nullptr);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        // Non-blocking open: fails at once, rather than waiting, if the reader is gone.
        const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) return;
        ::fcntl(fd, F_SETFL, 0);  // blocking writes from here on
        std::size_t at = 0;
        while (at < whole.size()) {
            const ssize_t n = ::write(fd, whole.data() + at, whole.size() - at);
            if (n <= 0) break;
            at += static_cast<std::size_t>(n);
        }
        ::close(fd);
    });
    std::size_t got = 0;
    std::size_t want = 0;
    try {
        if (what == media::video) {
            const auto clip = ferry::ops::load_video(fifo);
            const auto direct = ferry::ops::load_video(file);
            BOOST_TEST(frame_indices(clip) == frame_indices(direct),
                       boost::test_tools::per_element());
            got = size_of(clip);
            want = size_of(direct);
        } else {
            got = size_of(ferry::ops::decode_audio(fifo));
            want = size_of(ferry::ops::decode_audio(file));
        }
    } catch (const std::exception& e) {
        BOOST_ERROR("reading the FIFO failed: " << e.what());
    }
    writer.join();
    std::filesystem::remove(fifo);
    BOOST_TEST(got == want);
    BOOST_TEST(got > 0u);
}

BOOST_AUTO_TEST_SUITE_END()  // cancellation
BOOST_AUTO_TEST_SUITE_END()  // video
BOOST_AUTO_TEST_SUITE_END()  // ops
