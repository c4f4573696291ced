// SPDX-License-Identifier: Apache-2.0
/// \file
/// libFuzzer target for `demux_video` + `decode_video` (through `load_video`), `decode_audio` and
/// `probe_video` from memory: any input must give a clip, audio or video_info whose fields agree
/// with each other, a `ferry::decode_error` (also for a selection past the frames that decode),
/// or a `ferry::invalid_argument` (a clip over `max_bytes`); any other exception escapes and
/// counts as a crash, and so do a crash, a leak, an out-of-bounds access and an allocation past
/// libFuzzer's limit. The last byte also picks the
/// options (the whole input is decoded, so the seed files stay valid media): the frame
/// selection, scaling, pixel format, a time window, decoder threads, and the audio's rate,
/// channels, fixed length and random window. FFmpeg itself is not instrumented; ferry's glue around
/// it is.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "ferry/error.hpp"
#include "ferry/video.hpp"

namespace {

/// Reads every byte of `data` (so that ASan checks the size claims).
template <class T>
void touch(std::span<const T> data) {
    volatile T sink{};
    for (const T v : data) sink = v;
    (void)sink;
}

ferry::frame_selection selection(std::uint8_t selector) {
    switch (selector & 0x03) {
        case 0:
            return ferry::frame_selection::all();
        case 1:
            return ferry::frame_selection::uniform(3);
        case 2:
            return ferry::frame_selection::clip(2, 2);
        default:
            return ferry::frame_selection::indices({1, 0, 1});
    }
}

void fuzz_video(std::span<const std::byte> bytes, std::uint8_t selector) {
    ferry::video_options o;
    // Small limits keep each input's work small; the checks against them are fuzzed too.
    o.demux.max_pixels = 1U << 16;
    o.decode.max_pixels = 1U << 16;
    o.decode.max_bytes = 1U << 24;
    o.decode.select = selection(selector);
    o.decode.format = static_cast<ferry::frame_format>((selector >> 2) % 3);
    if ((selector & 0x10) != 0) o.decode.resize = {7, 5};
    if ((selector & 0x20) != 0) o.demux.start = 0.04;
    if ((selector & 0x40) != 0) o.demux.end = 0.2;
    if ((selector & 0x80) != 0) o.decode.threads = 2;
    try {
        const ferry::video_clip clip = ferry::ops::load_video(bytes, o);
        if (clip.frames() <= 0 ||
            clip.data().size() != static_cast<std::size_t>(clip.frames()) * clip.frame_bytes()) {
            std::abort();
        }
        touch(clip.data());
    } catch (const ferry::decode_error&) {
    } catch (const ferry::invalid_argument&) {
    }
}

void fuzz_probe(std::span<const std::byte> bytes, std::uint8_t selector) {
    try {
        const ferry::video_info info =
            ferry::ops::probe_video(bytes, {.require_video = (selector & 0x01) != 0});
        const auto n = static_cast<int>(info.streams.size());
        if (info.stream < -1 || info.stream >= n || info.frames < 0 || info.duration < 0.0 ||
            info.frame_rate < 0.0 || info.width < 0 || info.height < 0) {
            std::abort();
        }
        if (info.stream >= 0 &&
            info.streams[static_cast<std::size_t>(info.stream)].type != ferry::stream_type::video) {
            std::abort();
        }
        if ((info.frames_from == ferry::frame_count_source::unknown) != (info.frames == 0)) {
            std::abort();
        }
        for (int i = 0; i < n; ++i) {
            if (info.streams[static_cast<std::size_t>(i)].index != i) std::abort();
        }
    } catch (const ferry::decode_error&) {
    }
}

void fuzz_audio(std::span<const std::byte> bytes, std::uint8_t selector) {
    ferry::audio_options o;
    o.max_samples = 1 << 18;
    if ((selector & 0x01) != 0) o.sample_rate = 8000;
    if ((selector & 0x02) != 0) o.channels = 1;
    if ((selector & 0x04) != 0) o.start = 0.01;
    if ((selector & 0x08) != 0) o.end = 0.03;
    if ((selector & 0x10) != 0) o.samples = 300;  // a fixed length: cut or padded to it
    if ((selector & 0x20) != 0) {
        // A random window of the stream's declared (or estimated) length, from a fixed item;
        // with bits 0x04 and 0x08, drawn inside the span they give.
        o.random_window = 0.02;
        o.item = ferry::item_info{.epoch = 1, .index = 7, .position = 7, .seed = 3};
    }
    try {
        const ferry::audio a = ferry::ops::decode_audio(bytes, o);
        if (a.channels() <= 0 || a.sample_rate() <= 0 ||
            a.data().size() !=
                static_cast<std::size_t>(a.channels()) * static_cast<std::size_t>(a.samples())) {
            std::abort();
        }
        if (o.samples > 0 &&
            (a.samples() != o.samples || a.padded() < 0 || a.padded() >= o.samples)) {
            std::abort();  // exactly the length, and some of it decoded
        }
        if (!std::isfinite(a.start())) std::abort();
        touch(a.data());
    } catch (const ferry::decode_error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::uint8_t selector = data[size - 1];
    const auto bytes = std::as_bytes(std::span<const std::uint8_t>(data, size));
    fuzz_video(bytes, selector);
    fuzz_audio(bytes, selector);
    fuzz_probe(bytes, selector);
    return 0;
}
