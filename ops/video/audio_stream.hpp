// SPDX-License-Identifier: Apache-2.0
/// \file
/// `decode_audio`'s choice of stream: which audio stream of an opened container, its decoder
/// (from the header alone where that suffices, else after `avformat_find_stream_info`), and
/// whether a seek in it lands on the right sample.
#pragma once

#include "ffmpeg.hpp"

namespace ferry::ops::av {

/// An audio stream of a container and its opened decoder.
struct audio_stream {
    int index = -1;
    codec_ptr decoder;
};

/// Stream `stream` of `in` (-1: FFmpeg's best audio stream) with its decoder open (one thread).
/// Without `avformat_find_stream_info` where the container's header says all the decoder needs
/// (`header_suffices`), the stream is certain (the one asked for, or the only audio stream), the
/// decoder then knows the rate and channels and, with `need_end`, the header gives the stream's
/// end (`stream_end`); else after it (called once: a second call after reading can crash
/// FFmpeg 5.1 on a damaged file). Errors, naming `op` and the input: `invalid_argument` for a
/// stream that does not exist, `decode_error` for one that is not audio, no audio stream, no
/// decoder or one that does not open.
[[nodiscard]] audio_stream open_audio_stream(input& in, int stream, bool need_end, const char* op);

/// Stream `st`'s end in seconds: as its header declares it, else as FFmpeg estimates it from
/// the bit rate (after `avformat_find_stream_info`); -1 where neither is known.
[[nodiscard]] double stream_end(const AVFormatContext* fmt, const AVStream* st);

/// False where a seek in stream `index` lands with the wrong times, so that a window must be
/// decoded from the start: FLAC in Ogg (FFmpeg 5.1's Ogg demuxer gives the packets after a seek
/// into a page of several the times of the packets after them, one FLAC block late).
[[nodiscard]] bool seeks_to_the_sample(const input& in, int index);

}  // namespace ferry::ops::av
