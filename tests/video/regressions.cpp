// SPDX-License-Identifier: Apache-2.0
/// \file
/// The decode_media fuzzer's past findings (tests/fuzz/media_regressions/), replayed in the
/// ordinary suite: each file through `load_video`, `probe_video` and `decode_audio` (plain, a
/// fixed length, a random window) gives a result or a typed error, never a crash.
#include <sys/resource.h>

#include <boost/test/data/monomorphic.hpp>
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <ferry/error.hpp>
#include <ferry/video.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "video_support.hpp"

namespace bdata = boost::unit_test::data;

namespace media_regressions_test {

/// Every file of tests/fuzz/media_regressions/, by name.
std::vector<std::string> findings() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(FERRY_MEDIA_REGRESSIONS)) {
        names.push_back(e.path().filename().string());
    }
    return names;
}

/// Runs `f`; a `decode_error` or `invalid_argument` is an answer too.
template <class F>
bool answers(F&& f) {
    try {
        f();
        return true;
    } catch (const ferry::decode_error&) {
        return true;
    } catch (const ferry::invalid_argument&) {
        return true;
    }
}

BOOST_AUTO_TEST_SUITE(ops)
BOOST_AUTO_TEST_SUITE(fuzz_findings)

// Before the case that replays every finding, which would raise the peak first.
// wav-list-chunk-declares-2gb: a WAV file of 3 KB whose LIST chunk declares 2 GB. libavformat's
// INFO reader sized a buffer from the chunk's declared size and zeroed 1.9 GB before reading
// it (the fuzzer's out-of-memory). FFmpeg's allocations are capped at 512 MiB
// (av::max_ffmpeg_alloc): that buffer is refused, the WAV reader goes on without the chunk, and
// the file is a decode_error ("no 'data' tag found") with the process's peak memory unmoved.
BOOST_AUTO_TEST_CASE(a_header_that_declares_gigabytes_is_refused_without_allocating_them) {
    const auto bytes = video_test::read_all(std::filesystem::path(FERRY_MEDIA_REGRESSIONS) /
                                            "wav-list-chunk-declares-2gb");
    const auto peak_mb = [] {
        rusage u{};
        ::getrusage(RUSAGE_SELF, &u);
        return u.ru_maxrss / 1024;  // KiB
    };
    const long before = peak_mb();
    BOOST_TEST(answers([&] { (void)ferry::ops::load_video(bytes); }));
    BOOST_TEST(answers([&] { (void)ferry::ops::decode_audio(bytes); }));
    // The process's peak: 1.9 GB zeroed would raise it far past anything the suite holds.
    BOOST_TEST(peak_mb() - before < 256, "the peak rose by " << peak_mb() - before << " MB");
}

// webm-random-window-stream-info-twice: a damaged WebM whose header states no length, with a
// random window: avformat_find_stream_info called after the header-only open crashed FFmpeg.
BOOST_DATA_TEST_CASE(each_finding_gives_a_result_or_a_typed_error, bdata::make(findings()), name) {
    const auto bytes = video_test::read_all(std::filesystem::path(FERRY_MEDIA_REGRESSIONS) / name);
    const ferry::item_info item{.epoch = 1, .index = 7, .position = 7, .seed = 3};
    BOOST_TEST(answers([&] { (void)ferry::ops::load_video(bytes); }));
    BOOST_TEST(answers([&] { (void)ferry::ops::probe_video(bytes, {.require_video = false}); }));
    BOOST_TEST(answers([&] { (void)ferry::ops::decode_audio(bytes); }));
    BOOST_TEST(answers([&] { (void)ferry::ops::decode_audio(bytes, {.samples = 300}); }));
    BOOST_TEST(answers(
        [&] { (void)ferry::ops::decode_audio(bytes, {.random_window = 0.02, .item = item}); }));
}

BOOST_AUTO_TEST_SUITE_END()  // fuzz_findings
BOOST_AUTO_TEST_SUITE_END()  // ops

}  // namespace media_regressions_test
