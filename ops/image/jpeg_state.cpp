// SPDX-License-Identifier: Apache-2.0
/// \file
/// The JPEG decoder's per-thread libjpeg decompressor and error manager (jpeg_state.hpp).
/// libjpeg reports errors by longjmp: the functions that call setjmp hold no C++ object with a
/// destructor, and every allocation is made outside them.
#include "jpeg_state.hpp"

#include <jerror.h>

#include <cstring>

namespace ferry::ops::codec::jpeg {
namespace {

/// A progressive file with more scans than this is refused (each scan is a pass over the
/// coefficients; thousands of tiny scans are a denial-of-service pattern, not a photograph).
/// TurboJPEG's TJFLAG_LIMITSCANS bound.
constexpr int max_scans = 500;

decoder_state& state_of(j_common_ptr cinfo) {
    // `err` is the first thing the callbacks get; the state is found from the decompressor.
    return *reinterpret_cast<decoder_state*>(reinterpret_cast<char*>(cinfo) -
                                             offsetof(decoder_state, cinfo));
}

void on_error_exit(j_common_ptr cinfo) {
    decoder_state& s = state_of(cinfo);
    (*cinfo->err->format_message)(cinfo, s.message);
    std::longjmp(s.jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    decoder_state& s = state_of(cinfo);
    if (!s.warned) (*cinfo->err->format_message)(cinfo, s.message);
    s.warned = true;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF) s.data_ended = true;
    if (s.strict) {
        s.stopped_on_warning = true;
        std::longjmp(s.jump, 1);
    }
}

void on_output_message(j_common_ptr /*cinfo*/) {}  // nothing goes to stderr

void on_progress(j_common_ptr cinfo) {
    auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
    decoder_state& s = state_of(cinfo);
    if (d->input_scan_number > max_scans) {
        std::snprintf(s.message, sizeof s.message, "progressive JPEG image has more than %d scans",
                      max_scans);
        std::longjmp(s.jump, 1);
    }
    // Its first call from jpeg_start_decompress comes before any scan data is read.
    if (s.huffman.take_over_pending) take_over_scans(*d, s.huffman);
}

/// Creates the decompressor (a function of its own: jpeg_create_decompress can fail by longjmp
/// when out of memory). False on error.
bool create_decompressor(decoder_state& s) {
    s.cinfo.err = jpeg_std_error(&s.err);
    s.err.error_exit = on_error_exit;
    s.err.emit_message = on_emit_message;
    s.err.output_message = on_output_message;
    if (setjmp(s.jump)) return false;
    jpeg_create_decompress(&s.cinfo);
    s.created = true;
    s.progress.progress_monitor = on_progress;
    s.cinfo.progress = &s.progress;
    return true;
}

/// Reads the header of `data`. False (with `s.message`) on error.
bool read_header_of(decoder_state& s, byte_span data) {
    if (setjmp(s.jump)) return false;
    jpeg_mem_src(&s.cinfo, reinterpret_cast<const unsigned char*>(data.data()),
                 static_cast<unsigned long>(data.size()));
    return jpeg_read_header(&s.cinfo, TRUE) == JPEG_HEADER_OK;
}

}  // namespace

/// One decompressor per thread, reused: jpeg_create_decompress allocates libjpeg's pools
/// (~tens of KB), which costs as much as decoding a thumbnail. After any failure or warning it
/// is destroyed and made anew: a decompressor left by a longjmp is in whatever state the error
/// found it in, and libjpeg-turbo 2.1 does not always recover from that (a header read that
/// failed is not reset, and the next file would be read from that broken state).
std::unique_ptr<decoder_state>& thread_slot() {
    thread_local std::unique_ptr<decoder_state> slot;
    return slot;
}

decoder_state& thread_decoder(bool strict) {
    auto& slot = thread_slot();
    if (!slot) {
        auto fresh = std::make_unique<decoder_state>();
        if (!create_decompressor(*fresh)) {
            fail("jpeg", std::string("cannot create a decompressor: ") + fresh->message);
        }
        slot = std::move(fresh);
    }
    decoder_state& s = *slot;
    // Back to the start state, whatever the last decode left (a header read, then a refused
    // size or box, leaves it mid-way); jpeg_abort_decompress cannot fail.
    jpeg_abort_decompress(&s.cinfo);
    s.strict = strict;
    s.huffman.take_over_pending = false;
    s.warned = false;
    s.stopped_on_warning = false;
    s.data_ended = false;
    s.message[0] = '\0';
    return s;
}

/// Fails with libjpeg's message, first discarding the thread's decompressor.
[[noreturn]] void fail_and_reset(decoder_state& s, const std::string& prefix) {
    std::string why = prefix;
    why += s.stopped_on_warning ? "truncated or corrupt data: " : "";
    why += s.message;
    thread_slot().reset();
    fail("jpeg", why);
}

/// The thread's decompressor with the header of `data` read; fails with a message that says
/// "truncated" when the bytes end before the image data starts (a header cut short reads as
/// anything from "Bogus DQT index" to a missing frame).
decoder_state& read_header(byte_span data, bool strict) {
    decoder_state& s = thread_decoder(strict);
    const auto cut = [&] {
        return std::string(
            jpeg_header_complete(data) ? "" : "truncated data: the file ends inside the header; ");
    };
    if (!read_header_of(s, data)) fail_and_reset(s, cut() + "bad header: ");
    if (s.cinfo.image_width == 0 || s.cinfo.image_height == 0) {
        thread_slot().reset();
        fail("jpeg", cut() + "bad header: no frame size (no SOF marker)");
    }
    return s;
}

}  // namespace ferry::ops::codec::jpeg
