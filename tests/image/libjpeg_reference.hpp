// SPDX-License-Identifier: Apache-2.0
/// \file
/// The reference the JPEG decoder guard tests compare ferry with: libjpeg's own decode through
/// its API, fed a few bytes at a time so that its Huffman fast path never runs.
#pragma once

#include <cstddef>
#include <opencv2/core.hpp>

#include "support.hpp"

namespace ops_test {

struct reference {
    cv::Mat pixels;  ///< RGB; empty when libjpeg failed
    int warnings = 0;
    int first_warning = 0;
};

/// libjpeg's RGB decode of `f` at 1/`denom`, fed `chunk` bytes at a time (0: all at once,
/// jpeg_mem_src), lenient; with `finish`, read up to the EOI marker (jpeg_finish_decompress).
reference libjpeg_decode(const file_bytes& f, int denom, std::size_t chunk, bool finish);

}  // namespace ops_test
