// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry::video alone (no engine, no TBB): a clip made in memory, and
/// FFmpeg's verdict on bytes that are no video and on a missing file, through
/// `find_package(ferry COMPONENTS video)`. Exits non-zero on any mismatch.

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include <ferry/error.hpp>
#include <ferry/video.hpp>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "package test (video): FAILED: %s\n", what);
        ++failures;
    }
}

}  // namespace

int main() {
    const ferry::video_clip clip(3, 8, 6, ferry::frame_format::rgb);
    check(clip.frames() == 3 && clip.width() == 8 && clip.height() == 6 &&
              clip.data().size() == 3U * 8U * 6U * 3U,
          "a 3-frame 8x6 rgb clip has 432 bytes");

    // Not a container FFmpeg knows: read by libavformat, rejected as a decode_error.
    const std::vector<std::byte> junk(4096, std::byte{0x5a});
    try {
        (void)ferry::ops::demux_video(junk);
        check(false, "demux_video of junk throws");
    } catch (const ferry::decode_error& e) {
        check(std::string(e.what()).size() > 0, "the decode_error says why");
    }
    try {
        (void)ferry::ops::load_video("/nonexistent/ferry-package-test.mp4");
        check(false, "load_video of a missing file throws");
    } catch (const ferry::io_error& e) {
        check(std::string(e.what()).find("ferry-package-test.mp4") != std::string::npos,
              "the io_error names the path");
    }

    if (failures != 0) return 1;
    std::puts("package test (video): ok");
    return 0;
}
