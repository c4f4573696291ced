// SPDX-License-Identifier: Apache-2.0
/// \file
/// The JPEG decoder's libjpeg decompressor: one per thread, reused, with an error manager that
/// turns libjpeg's errors and warnings into a longjmp and a message, and the header read that
/// every decode and probe starts with (jpeg_state.cpp). jpeg_decode.cpp decodes with it.
#pragma once

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include <csetjmp>
#include <memory>
#include <string>

#include "codecs.hpp"
#include "jpeg_huffman.hpp"

namespace ferry::ops::codec::jpeg {

/// A libjpeg decompressor and what its callbacks report. The setjmp functions below take it by
/// reference and hold no object with a destructor themselves.
struct decoder_state {
    jpeg_decompress_struct cinfo{};
    jpeg_error_mgr err{};
    jpeg_progress_mgr progress{};
    std::jmp_buf jump{};
    bool strict = true;
    bool warned = false;  ///< libjpeg papered over damage (lenient mode goes on)
    bool stopped_on_warning = false;
    bool data_ended = false;  ///< the bytes ran out (libjpeg went on with a fake EOI marker)
    bool created = false;     ///< jpeg_create_decompress succeeded: destroy it
    char message[JMSG_LENGTH_MAX] = {};
    huffman_decoder huffman;  ///< ferry's entropy decoder, where it covers the scan

    decoder_state() = default;
    decoder_state(const decoder_state&) = delete;
    decoder_state& operator=(const decoder_state&) = delete;
    ~decoder_state() {
        if (created) jpeg_destroy_decompress(&cinfo);
    }
};

/// The calling thread's decompressor slot (empty until first used, or after a reset).
std::unique_ptr<decoder_state>& thread_slot();

/// The thread's decompressor, reset to its start state, in `strict` or lenient mode.
decoder_state& thread_decoder(bool strict);

/// Fails with libjpeg's message, first discarding the thread's decompressor.
[[noreturn]] void fail_and_reset(decoder_state& s, const std::string& prefix);

/// The thread's decompressor with the header of `data` read; fails with a message that says
/// "truncated" when the bytes end before the image data starts.
decoder_state& read_header(byte_span data, bool strict);

}  // namespace ferry::ops::codec::jpeg
