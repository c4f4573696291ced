// SPDX-License-Identifier: Apache-2.0
/// \file
/// Test media for the video and audio tests, made with the `ffmpeg` command-line tool: clips whose
/// frames show their own index (four gray bars, one base-6 digit each, over a red strip), and
/// tones of known frequency; plus helpers to read a frame's index back, to estimate a tone's
/// frequency, and to mutate files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ferry/bytes.hpp>
#include <ferry/stats.hpp>
#include <ferry/video.hpp>
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace video_test {

/// A video to generate: codec settings for ffmpeg and the clip's shape.
struct video_spec {
    std::string codec = "libx264";  ///< libx264, libvpx-vp9 or mpeg4
    std::string ext = ".mp4";       ///< container, by extension
    int frames = 50;
    int width = 96;
    int height = 64;
    int fps = 25;
    int gop = 25;             ///< keyframe interval
    bool with_audio = false;  ///< add a 440 Hz sine stream
    std::string extra{};      ///< more ffmpeg output options, e.g. "-movflags +faststart"
};

/// A file of the B-frame matrix that the clip tests run on: how the `ffmpeg` CLI encodes it.
struct coded_file {
    std::string name;
    std::string ext;    ///< the container, by extension
    std::string codec;  ///< ffmpeg's output options for the video
    /// Every packet has a presentation time, so a decoder may start at any keyframe; false:
    /// frames are counted by decoding, and a pass decodes from the window's first packet.
    bool timed = true;
};

/// The B-frame matrix with a keyframe every `gop` frames: H.264 with a B-pyramid (MP4), H.264
/// with a B-pyramid and open GOPs (Matroska), HEVC with a B-pyramid, MPEG-4 Part 2 with
/// B-frames (MP4), VP9 (WebM), and MPEG-4 with B-frames in AVI (decode times only).
std::vector<coded_file> b_frame_matrix(int gop);

/// File `i` of a matrix made by `make_matrix` with `prefix`, and the ffmpeg CLI's frames of it.
std::filesystem::path matrix_file(const std::string& prefix, std::size_t i,
                                  const std::vector<coded_file>& files);
std::filesystem::path matrix_rgb(const std::string& prefix, std::size_t i);

/// Makes every file of `files` once: `length` frames of `testsrc2` at 64x48, 25 fps, encoded by
/// the `ffmpeg` CLI, then the CLI's frames of each (rgb24, presentation order, bilinear), the
/// reference that does not go through ferry, beside the commands `more(i)` gives for file `i`.
void make_matrix(const std::string& prefix, const std::vector<coded_file>& files, int length,
                 const std::function<std::string(std::size_t)>& more = {});

/// A FIFO at `fifo` fed `path`'s bytes by a thread (SIGPIPE blocked: a reader that gives up makes
/// its writes fail instead); `finish()` lets a writer still waiting for a reader go, joins it and
/// removes the FIFO.
class fifo_feed {
  public:
    fifo_feed(const std::filesystem::path& path, const std::filesystem::path& fifo);
    void finish();
    ~fifo_feed() { finish(); }
    fifo_feed(const fifo_feed&) = delete;
    fifo_feed& operator=(const fifo_feed&) = delete;

  private:
    std::filesystem::path fifo_;
    std::thread writer_;
};

/// The file for `spec`, generated once per test run (cached by its settings) in a temporary
/// directory removed at exit. Fails the test when ffmpeg fails.
std::filesystem::path video_file(const video_spec& spec);

/// A copy of the AVI `avi`, named `name` in the run's temporary folder, whose header claims
/// `frames` frames: the main header's dwTotalFrames and the first stream header's dwLength (the
/// video's), as AVIs cut or badly written in the wild claim more than their data holds.
std::filesystem::path with_claimed_frames(const std::filesystem::path& avi, std::uint32_t frames,
                                          const std::string& name);

/// A tone file: channel `c` is a sine of `freqs[c]` Hz at `rate` Hz for `seconds`, encoded with
/// `codec` (flac, aac, libopus, libvorbis) into `ext`.
std::filesystem::path tone_file(const std::vector<int>& freqs, int rate, double seconds,
                                const std::string& codec, const std::string& ext);

/// The whole file in memory.
ferry::bytes read_all(const std::filesystem::path& path);

/// The frame index drawn into frame `t` of `clip` (read from the bar centres), or -1 when the
/// bars do not read as digits.
int frame_index(const ferry::video_clip& clip, int t);
/// The indices of every frame of `clip`.
std::vector<int> frame_indices(const ferry::video_clip& clip);
/// `count` indices from `from`, `step` apart: the frame indices a selection should give.
std::vector<int> iota(int from, int count, int step = 1);

/// The frequency of a sine from its zero crossings.
double tone_frequency(std::span<const float> samples, int sample_rate);

/// Root-mean-square level.
double rms(std::span<const float> samples);

/// A scratch path in the test run's temporary directory.
std::filesystem::path scratch(const std::string& name);

/// Runs the shell `commands` all at once (ffmpeg starts slowly; a matrix has dozens) and waits
/// for them; fails the test naming the first that failed.
void run_all(const std::vector<std::string>& commands);

/// The whole file as bytes (empty when it cannot be read).
std::vector<std::uint8_t> bytes_of(const std::filesystem::path& path);

/// The value of the counter `name` of the stage named `stage` in a pipeline's stats (0 when not
/// counted).
std::uint64_t stage_counter(const ferry::pipeline_stats& stats, const std::string& stage,
                            const std::string& name);

/// The frame times ffprobe wrote to `path` (`-show_entries frame=..._time -of csv=p=0`): one
/// per frame in seconds, NaN for its "N/A" lines; side data's commas and blank lines skipped.
std::vector<double> probed_times_in(const std::filesystem::path& path);

}  // namespace video_test
