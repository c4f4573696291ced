// SPDX-License-Identifier: Apache-2.0
/// \file
/// A consumer of an installed ferry::video through pkg-config: demuxes bytes that are no
/// container and checks that FFmpeg's refusal arrives as ferry::decode_error. Linking it pulls
/// in libavformat and friends, which a static libferry_video.a only gets from ferry-video.pc's
/// Requires.private. Exits non-zero on any mismatch.

#include <cstdio>
#include <string>
#include <vector>

#include <ferry/error.hpp>
#include <ferry/video.hpp>

int main() {
    ferry::set_ffmpeg_logging(false);
    const std::vector<std::byte> not_a_container(64, std::byte{0x5a});
    try {
        (void)ferry::ops::demux_video(std::span<const std::byte>(not_a_container));
    } catch (const ferry::decode_error&) {
        std::puts("package test (video): ok");
        return 0;
    }
    std::fprintf(stderr, "package test (video): FAILED: garbage bytes demuxed without an error\n");
    return 1;
}
