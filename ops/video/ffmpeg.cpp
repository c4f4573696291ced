// SPDX-License-Identifier: Apache-2.0
/// \file
/// FFmpeg plumbing for ops/video/: error text, the log callback, ferry's AVIOContext sources
/// (files and FIFOs with a stall deadline and cancellation, memory) and opening an input.
#include "ffmpeg.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>

namespace ferry {

namespace {
std::atomic<bool> ffmpeg_logging{false};
}

void set_ffmpeg_logging(bool enabled) {
    ops::av::init_ffmpeg();
    ffmpeg_logging.store(enabled, std::memory_order_relaxed);
}

namespace ops::av {

packet_ptr make_packet() {
    packet_ptr p(av_packet_alloc());
    if (!p) throw std::bad_alloc();
    return p;
}

frame_ptr make_frame() {
    frame_ptr f(av_frame_alloc());
    if (!f) throw std::bad_alloc();
    return f;
}

std::string error_text(int code) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {};
    if (av_strerror(code, text, sizeof text) < 0) {
        std::snprintf(text, sizeof text, "FFmpeg error %d", code);
    }
    return text;
}

namespace {

thread_local std::string last_log_line;

// FFmpeg logs from its own threads too (frame threading); each thread keeps its own last line.
void log_callback(void* avcl, int level, const char* fmt, va_list args) {
    const bool print = ffmpeg_logging.load(std::memory_order_relaxed) && level <= AV_LOG_WARNING;
    if (level > AV_LOG_ERROR && !print) return;  // cheap exit for the chatty levels
    char line[512];
    int prefix = 1;
    va_list copy;
    va_copy(copy, args);
    av_log_format_line2(avcl, level, fmt, copy, line, sizeof line, &prefix);
    va_end(copy);
    if (print) std::fputs(line, stderr);
    if (level <= AV_LOG_ERROR) {
        std::string text(line);
        while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
        if (!text.empty()) last_log_line = std::move(text);
    }
}

}  // namespace

void init_ffmpeg() {
    static std::once_flag once;
    std::call_once(once, [] {
        av_log_set_callback(log_callback);
        av_max_alloc(max_ffmpeg_alloc);
    });
}

std::string take_log_line() {
    return std::exchange(last_log_line, std::string());
}

std::string describe(const char* op, const std::string& source, const std::string& what, int code) {
    std::string msg = std::string(op) + ": " + source + ": " + what;
    if (code != 0) msg += ": " + error_text(code);
    if (std::string line = take_log_line(); !line.empty()) msg += " (FFmpeg: " + line + ")";
    return msg;
}

void throw_decode(const char* op, const std::string& source, const std::string& what, int code) {
    throw decode_error(describe(op, source, what, code));
}

void throw_cancelled(const char* op, const std::string& source) {
    take_log_line();
    throw error(errc::cancelled,
                std::string(op) + ": " + source + ": cancelled: the pipeline is stopping");
}

// --- byte sources --------------------------------------------------------------------------------

namespace {

class file_source final : public byte_source {
  public:
    file_source(int fd, bool regular, std::int64_t size, std::chrono::milliseconds timeout,
                std::optional<file_stamp> stamp)
        : byte_source(timeout), fd_(fd), regular_(regular), size_(size), stamp_(stamp) {}
    ~file_source() override { ::close(fd_); }

    int read(std::uint8_t* buf, int size) override {
        for (;;) {
            const ssize_t n = ::read(fd_, buf, static_cast<std::size_t>(size));
            if (n > 0) {
                touch();
                return static_cast<int>(n);
            }
            if (n == 0 && (regular_ || !awaiting_writer())) return AVERROR_EOF;
            if (n < 0) {
                if (errno == EINTR) continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK) return AVERROR(errno);
            }
            // A FIFO or pipe with nothing to read yet: wait for data, up to the deadline, in
            // slices short enough that a call told to give up does so promptly.
            if (check_cancelled()) return AVERROR_EXIT;
            const auto left = timeout_ - std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::steady_clock::now() - last_progress_);
            if (left.count() <= 0) {
                stalled_ = true;
                return AVERROR(ETIMEDOUT);
            }
            pollfd p{fd_, POLLIN, 0};
            ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), poll_slice_ms)));
        }
    }

    std::int64_t seek(std::int64_t offset, int whence) override {
        if (!regular_) return AVERROR(ESPIPE);
        if ((whence & AVSEEK_SIZE) != 0) return size_;
        const off_t at = ::lseek(fd_, offset, whence & ~AVSEEK_FORCE);
        return at < 0 ? AVERROR(errno) : static_cast<std::int64_t>(at);
    }
    [[nodiscard]] bool seekable() const override { return regular_; }
    [[nodiscard]] std::optional<file_stamp> stamp() const override { return stamp_; }
    [[nodiscard]] std::int64_t size() const noexcept { return size_; }

  private:
    // The longest a read waits before it checks the deadline and `this_call` again.
    static constexpr std::int64_t poll_slice_ms = 50;

    /// After a read of 0 bytes from a FIFO opened non-blocking: true when no writer has opened
    /// it yet (poll() then reports neither data nor a hang-up), which is a wait, not the end.
    [[nodiscard]] bool awaiting_writer() const noexcept {
        pollfd p{fd_, POLLIN, 0};
        return ::poll(&p, 1, 0) == 0;
    }

    int fd_;
    bool regular_;
    std::int64_t size_;
    std::optional<file_stamp> stamp_;
};

class memory_source final : public byte_source {
  public:
    memory_source(std::span<const std::byte> data, std::chrono::milliseconds timeout)
        : byte_source(timeout), data_(data) {}

    int read(std::uint8_t* buf, int size) override {
        if (pos_ >= data_.size()) return AVERROR_EOF;
        const std::size_t n = std::min(static_cast<std::size_t>(size), data_.size() - pos_);
        std::memcpy(buf, data_.data() + pos_, n);
        pos_ += n;
        return static_cast<int>(n);
    }
    std::int64_t seek(std::int64_t offset, int whence) override {
        const auto size = static_cast<std::int64_t>(data_.size());
        std::int64_t at = 0;
        switch (whence & ~AVSEEK_FORCE) {
            case AVSEEK_SIZE:
                return size;
            case SEEK_SET:
                at = offset;
                break;
            case SEEK_CUR:
                at = static_cast<std::int64_t>(pos_) + offset;
                break;
            case SEEK_END:
                at = size + offset;
                break;
            default:
                return AVERROR(EINVAL);
        }
        if (at < 0) return AVERROR(EINVAL);
        pos_ = static_cast<std::size_t>(std::min(at, size));
        return at;
    }
    [[nodiscard]] bool seekable() const override { return true; }

  private:
    std::span<const std::byte> data_;
    std::size_t pos_ = 0;
};

int read_cb(void* opaque, std::uint8_t* buf, int size) {
    return static_cast<byte_source*>(opaque)->read(buf, size);
}
std::int64_t seek_cb(void* opaque, std::int64_t offset, int whence) {
    return static_cast<byte_source*>(opaque)->seek(offset, whence);
}
// FFmpeg calls it on the thread that called into libavformat, so `this_call` is the stage's.
int interrupt_cb(void* opaque) {
    auto* source = static_cast<byte_source*>(opaque);
    return source->stalled() || source->check_cancelled() ? 1 : 0;
}
// Containers that reference other files (HLS, concat, ...) may not open anything: ferry reads
// exactly the bytes it was given.
int deny_io_open(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) {
    return AVERROR(EPERM);
}

}  // namespace

std::unique_ptr<byte_source> open_file(const std::filesystem::path& path,
                                       std::chrono::milliseconds timeout, const char* op) {
    // O_NONBLOCK: a FIFO opens without waiting for a writer and its reads can be polled with a
    // deadline; regular files are unaffected.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        throw io_error(std::string(op) + ": " + path.string() + ": " + std::strerror(errno));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw io_error(std::string(op) + ": " + path.string() + ": " + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        throw io_error(std::string(op) + ": " + path.string() + ": is a directory");
    }
    const bool regular = S_ISREG(st.st_mode);
    if (regular && st.st_size == 0) {
        ::close(fd);
        throw decode_error(std::string(op) + ": " + path.string() + ": empty input (0 bytes)");
    }
    std::optional<file_stamp> stamp;
    if (regular) {
        stamp = file_stamp{
            static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino),
            static_cast<std::int64_t>(st.st_size),
            static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    }
    return std::make_unique<file_source>(fd, regular, regular ? st.st_size : -1, timeout, stamp);
}

std::unique_ptr<byte_source> open_memory(std::span<const std::byte> data,
                                         std::chrono::milliseconds timeout, const char* op) {
    if (data.empty()) throw decode_error(std::string(op) + ": <memory>: empty input (0 bytes)");
    return std::make_unique<memory_source>(data, timeout);
}

void input::fail(const char* op, const std::string& what, int code) const {
    if (source && source->cancelled()) throw_cancelled(op, name);
    if (source && source->stalled()) {
        take_log_line();
        throw io_error(std::string(op) + ": " + name + ": read stalled: no data for " +
                       std::to_string(source->timeout().count()) + " ms (timeout) while " + what);
    }
    throw_decode(op, name, what, code);
}

std::string input::read_failure(const char* op, const std::string& what, int code) const {
    if (source && (source->stalled() || source->cancelled())) fail(op, what, code);
    std::string why = error_text(code);
    if (std::string line = take_log_line(); !line.empty()) why += " (FFmpeg: " + line + ")";
    return why;
}

std::int64_t saturate(double ticks) noexcept {
    // 2^63 is exact in a double; every double below it converts.
    constexpr double limit = 9223372036854775808.0;
    if (ticks >= limit) return std::numeric_limits<std::int64_t>::max();
    if (ticks < -limit) return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(ticks);
}

std::string seconds_text(double s) {
    char text[32];
    std::snprintf(text, sizeof text, std::abs(s) < 1e9 ? "%.3f s" : "%g s", s);
    return text;
}

void check_window(const char* op, double start, const std::optional<double>& end, int stream) {
    if (!std::isfinite(start)) {
        throw invalid_argument(std::string(op) + ": start " + seconds_text(start) +
                               " is not a finite time");
    }
    if (end && !std::isfinite(*end)) {
        throw invalid_argument(std::string(op) + ": end " + seconds_text(*end) +
                               " is not a finite time; leave end unset for the stream's end");
    }
    if (end && *end <= start) {
        throw invalid_argument(std::string(op) + ": end " + seconds_text(*end) +
                               " is not after start " + seconds_text(start));
    }
    if (stream < -1) {
        throw invalid_argument(std::string(op) + ": stream " + std::to_string(stream) +
                               " must be -1 (FFmpeg's best) or a stream's index");
    }
}

double declared_end(const AVFormatContext* fmt, const AVStream* st, bool container_too) {
    // Where nothing stated a length, FFmpeg fills the streams' durations from the bit rate too
    // (raw ADTS, MPEG elementary streams): a guess, not a declaration.
    if (fmt->duration_estimation_method == AVFMT_DURATION_FROM_BITRATE) return -1.0;
    if (st->duration != AV_NOPTS_VALUE && st->duration > 0) {
        const std::int64_t first = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
        return seconds(first + st->duration, st->time_base);
    }
    if (container_too && fmt->duration != AV_NOPTS_VALUE && fmt->duration > 0) {
        const std::int64_t first = fmt->start_time != AV_NOPTS_VALUE ? fmt->start_time : 0;
        return static_cast<double>(first + fmt->duration) / AV_TIME_BASE;
    }
    return -1.0;
}

input open_container(std::unique_ptr<byte_source> source, std::string name, const char* op) {
    init_ffmpeg();
    take_log_line();
    input in;
    in.name = std::move(name);
    in.source = std::move(source);

    constexpr int buffer_size = 64 * 1024;
    auto* buf = static_cast<unsigned char*>(av_malloc(buffer_size));
    if (buf == nullptr) throw std::bad_alloc();
    const bool seekable = in.source->seekable();
    AVIOContext* io = avio_alloc_context(buf, buffer_size, 0, in.source.get(), read_cb, nullptr,
                                         seekable ? seek_cb : nullptr);
    if (io == nullptr) {
        av_free(buf);
        throw std::bad_alloc();
    }
    in.io.reset(io);
    if (!seekable) in.io->seekable = 0;

    AVFormatContext* fmt = avformat_alloc_context();
    if (fmt == nullptr) throw std::bad_alloc();
    fmt->pb = in.io.get();
    fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    fmt->interrupt_callback.callback = interrupt_cb;
    fmt->interrupt_callback.opaque = in.source.get();
    fmt->io_open = deny_io_open;
    // On failure avformat_open_input frees the context (not our AVIOContext) and nulls `fmt`.
    if (const int ret = avformat_open_input(&fmt, nullptr, nullptr, nullptr); ret < 0) {
        in.fail(op, "cannot open the container", ret);
    }
    in.format.reset(fmt);
    return in;
}

void read_stream_info(input& in, const char* op) {
    if (const int ret = avformat_find_stream_info(in.format.get(), nullptr); ret < 0) {
        in.fail(op, "cannot read the stream information", ret);
    }
}

input open_input(std::unique_ptr<byte_source> source, std::string name, const char* op) {
    input in = open_container(std::move(source), std::move(name), op);
    read_stream_info(in, op);
    return in;
}

}  // namespace ops::av
}  // namespace ferry
