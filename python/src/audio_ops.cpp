// SPDX-License-Identifier: Apache-2.0
/// \file
/// `ferry.video.decode_audio(...)`: the factory of a native op from a path or bytes to the
/// audio as a ferry.Tensor of float32, channels x samples (ferry::ops::decode_audio).
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "convert.hpp"
#include "ferry/audio.hpp"
#include "ferry/error.hpp"
#include "io_ops.hpp"
#include "media_item.hpp"

namespace ferry::python {
namespace {

constexpr const char* op_name = "decode_audio";

/// What the op gives besides the audio.
struct extras {
    bool length = false;  ///< the samples per channel that decoded (before `samples`' silence)
    bool start = false;   ///< the first sample's position on the stream's time line, in samples
};

/// The audio as a tensor; with `extras`, the tuple (tensor, [length], [start]).
value decode(value&& v, const ferry::audio_options& options, extras with) {
    ferry::audio a = call_on_media_item(
        std::move(v), op_name, options,
        [](ferry::audio_options& o, double start, std::optional<double> end) {
            o.start = start;  // random_window draws in the item's window
            o.end = end;
        },
        [](const auto& in, const ferry::audio_options& o) {
            return ferry::ops::decode_audio(in, o);
        });
    const std::int64_t decoded = a.samples() - a.padded();
    const std::int64_t first = std::llround(a.start() * a.sample_rate());
    ferry::tensor t = std::move(a).to_tensor();
    if (with.length && with.start) {
        return value(value_tuple{{value(std::move(t)), value(decoded), value(first)}});
    }
    if (with.length) return value(value_tuple{{value(std::move(t)), value(decoded)}});
    if (with.start) return value(value_tuple{{value(std::move(t)), value(first)}});
    return value(std::move(t));
}

/// `what`'s value must be `lo` or more (and at most `hi`).
void require(const char* what, std::int64_t v, std::int64_t lo, std::int64_t hi,
             const char* meaning) {
    if (v < lo || v > hi) {
        throw ferry::invalid_argument(std::string("decode_audio(") + what + "=...): " + meaning +
                                      ", got " + std::to_string(v));
    }
}

}  // namespace

void bind_audio_ops(py::module_& video) {
    video.def(
        "decode_audio",
        [](int sample_rate, int channels, double start, const std::optional<double>& end,
           std::int64_t samples, double random_window, int stream, double timeout,
           std::int64_t max_samples, std::uint64_t max_bytes, bool strict, bool with_length,
           bool with_start) {
            ferry::audio_options o;
            std::vector<std::string> args;
            // swresample's limits: rates up to 768 kHz are in use (DXD), channels up to 64.
            require("sample_rate", sample_rate, 0, 768'000,
                    "the rate is 0 (the stream's) to 768000 Hz");
            require("channels", channels, 0, 64, "channels are 0 (the stream's) to 64");
            require("stream", stream, -1, 1 << 20, "stream is -1 (FFmpeg's best) or an index");
            require("max_samples", max_samples, 0, std::numeric_limits<std::int64_t>::max(),
                    "max_samples is 0 (no cap) or more");
            require("samples", samples, 0,
                    max_samples > 0 ? std::min(max_samples, std::int64_t{1} << 62)
                                    : std::int64_t{1} << 62,
                    "samples is 0 (as many as decode) up to max_samples");
            if (!(start >= 0.0) || !std::isfinite(start) ||
                (end && !(*end > start && std::isfinite(*end)))) {
                throw ferry::invalid_argument(
                    "decode_audio(start=..., end=...): the window is start >= 0 seconds up to a "
                    "finite end after it (None: the stream's end), got start " +
                    std::to_string(start) + (end ? ", end " + std::to_string(*end) : ""));
            }
            if (!(random_window >= 0.0) || !std::isfinite(random_window)) {
                throw ferry::invalid_argument(
                    "decode_audio(random_window=...): random_window is 0 (none) or a positive "
                    "length in seconds, got " +
                    std::to_string(random_window));
            }
            if (!(timeout > 0.0) || !std::isfinite(timeout)) {
                throw ferry::invalid_argument(
                    "decode_audio(timeout=...): timeout is a positive number of seconds, got " +
                    std::to_string(timeout));
            }
            o.sample_rate = sample_rate;
            if (sample_rate != 0) args.push_back("sample_rate=" + std::to_string(sample_rate));
            o.channels = channels;
            if (channels != 0) args.push_back("channels=" + std::to_string(channels));
            o.start = start;
            if (start != 0.0) {
                args.push_back("start=" + py::repr(py::float_(start)).cast<std::string>());
            }
            o.end = end;
            if (end) args.push_back("end=" + py::repr(py::float_(*end)).cast<std::string>());
            o.samples = samples;
            if (samples != 0) args.push_back("samples=" + std::to_string(samples));
            o.random_window = random_window;
            if (random_window != 0.0) {
                args.push_back("random_window=" +
                               py::repr(py::float_(random_window)).cast<std::string>());
            }
            o.stream = stream;
            if (stream != -1) args.push_back("stream=" + std::to_string(stream));
            o.timeout = ceil_millis(timeout);
            o.max_samples = max_samples;
            o.max_bytes = max_bytes;
            o.strict = strict;
            if (strict) args.push_back("strict=True");
            if (with_length) args.push_back("with_length=True");
            if (with_start) args.push_back("with_start=True");
            std::string name = "decode_audio(";
            for (std::size_t i = 0; i < args.size(); ++i) name += (i ? ", " : "") + args[i];
            name += ")";
            return py::cast(py_op{std::make_shared<const native_op>(
                native_op{std::move(name),
                          [o, with = extras{with_length, with_start}](value&& v) {
                              return decode(std::move(v), o, with);
                          },
                          // A random window draws its start from the item of the stage's call.
                          random_window > 0.0})});
        },
        py::kw_only(), py::arg("sample_rate") = 0, py::arg("channels") = 0, py::arg("start") = 0.0,
        py::arg("end") = py::none(), py::arg("samples") = 0, py::arg("random_window") = 0.0,
        py::arg("stream") = -1, py::arg("timeout") = 10.0,
        py::arg("max_samples") = ferry::audio_options{}.max_samples,
        py::arg("max_bytes") = ferry::audio_options{}.max_bytes, py::arg("strict") = false,
        py::arg("with_length") = false, py::arg("with_start") = false,
        R"doc(
A native op: ferry::ops::decode_audio on a path (str or os.PathLike: read from the file) or bytes
(ferry.Bytes or a bytes-like object: read from memory), or a tuple (source, start, end) in
seconds (end None: to the stream's end): the item's own window, which replaces the op's start
and end; giving the audio as a ferry.Tensor of float32, channels x samples (numpy.asarray(x) and
torch.from_dlpack(x) share it). The keywords are
ferry::audio_options' fields: sample_rate (Hz; 0 keeps the stream's; swresample converts),
channels (0 keeps the stream's; 1 mixes down, 2 up or down with FFmpeg's default layouts), start
and end (the window in seconds; end None: to the stream's end; exactly (end - start) x rate
samples where the stream holds them), random_window (seconds: a window of that length at a start
drawn per item from its numbers, uniformly over the stream, or over [start, end) where they are
given and inside it, the same on every run; in a pipeline only), samples (0: as many as decode;
more: exactly that many per channel, the window's first ones followed by silence where it holds fewer, so that windows
collate into one tensor; the stage counts the silence as "padded samples"), stream (-1: FFmpeg's best audio stream), timeout (seconds a
read may deliver nothing), max_samples (per channel) and max_bytes (all channels) (more is a
ferry.DecodeError, refused as it decodes), with_length (the op gives the tuple (audio, n): n the
samples per channel that decoded, before samples' silence, so that collate gives the batch and
its lengths, as a CTC loss or a mask needs), with_start (the tuple ends with the first sample's
position on the stream's time line, in samples at the output rate: where a random window fell),
strict (a cut or damaged file is a ferry.DecodeError
instead of the samples that decode). Errors: ferry.IOError (missing file, stalled read),
ferry.DecodeError (no audio stream, not a container, over a limit, no audio in the window),
naming the file.)doc");
}

}  // namespace ferry::python
