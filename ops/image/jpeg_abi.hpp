// SPDX-License-Identifier: Apache-2.0
/// \file
/// The part of libjpeg-turbo's private ABI that ferry's Huffman decoder (jpeg_huffman.hpp)
/// depends on: the layout of `struct jpeg_entropy_decoder` (jpegint.h), mirrored per supported
/// libjpeg-turbo version, and the run-time check that the libjpeg this process loaded has the
/// layout ferry was built against (jpeg_abi.cpp).
///
/// Why a run-time check: libjpeg-turbo 2.x and 3.x are both `libjpeg.so.62`, so a binary built
/// on 2.1 loads 3.x without a word from the dynamic linker, and 3.0 added two members
/// (`decode_mcus`, `process_restart`) before `insufficient_data`. Where the loaded library's
/// layout is not the one built against, the decode keeps libjpeg's own entropy decoder.
#pragma once

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

namespace ferry::ops::codec::jpeg {

/// The libjpeg-turbo major version whose entropy-decoder layout ferry was built for: 2 (1.x and
/// 2.x share it), 3 (3.x), or 0 when the headers are not libjpeg-turbo's (IJG libjpeg 9 has
/// another layout) or are of a version ferry does not know: then ferry's decoder is not used.
#if !defined(LIBJPEG_TURBO_VERSION_NUMBER)
#define FERRY_JPEG_BUILT_LAYOUT 0
#elif LIBJPEG_TURBO_VERSION_NUMBER < 3000000
#define FERRY_JPEG_BUILT_LAYOUT 2
#elif LIBJPEG_TURBO_VERSION_NUMBER < 4000000
#define FERRY_JPEG_BUILT_LAYOUT 3
#else
#define FERRY_JPEG_BUILT_LAYOUT 0
#endif
inline constexpr int built_layout = FERRY_JPEG_BUILT_LAYOUT;

/// libjpeg-turbo's `struct jpeg_entropy_decoder` as the version built against lays it out; the
/// object that replaces libjpeg's entropy decoder starts with it. libjpeg reaches the entropy
/// decoder only through these members. jpeg_abi.cpp checks the offsets against jpegint.h where
/// it is installed beside jpeglib.h (Debian's libjpeg62-turbo-dev installs it).
struct entropy_decoder_header {
    void (*start_pass)(j_decompress_ptr) = nullptr;
    boolean (*decode_mcu)(j_decompress_ptr, JBLOCKROW*) = nullptr;
#if FERRY_JPEG_BUILT_LAYOUT == 3
    /// 3.x, lossless JPEG only (jddiffct.c); ferry never takes lossless scans. The first
    /// argument after cinfo is a JDIFFIMAGE, declared in jpegint.h only.
    JDIMENSION(*decode_mcus)
    (j_decompress_ptr, void*, JDIMENSION, JDIMENSION, JDIMENSION) = nullptr;
    /// 3.x, lossless JPEG only (jddiffct.c).
    boolean (*process_restart)(j_decompress_ptr) = nullptr;
#endif
    boolean insufficient_data = FALSE;
};

/// The entropy-decoder layout of the libjpeg this process runs, found once: 3 when the library
/// that defines libjpeg's error messages also exports `jpeg12_read_scanlines` (libjpeg-turbo
/// 3.0 added the 12-bit API to libjpeg.so.62, in the same release that added the two members),
/// 2 when it does not; `built_layout` when libjpeg is linked statically into the same object as
/// ferry (then headers and library are taken to come from one build: a static archive of another
/// major than its headers is not noticed); 0 when it cannot tell. A later major that exports
/// `jpeg12_read_scanlines` and changes the layout again would read as 3: `built_layout` is 0 for
/// headers of a major ferry does not know, but the run-time check cannot tell 3.x from 4.x.
[[nodiscard]] int loaded_layout() noexcept;

/// Whether the loaded libjpeg has the entropy-decoder layout ferry was built for.
[[nodiscard]] inline bool loaded_layout_matches() noexcept {
    return built_layout != 0 && loaded_layout() == built_layout;
}

/// For tests: makes `loaded_layout()` answer `layout` (0: the real answer again).
void pretend_loaded_layout(int layout) noexcept;

}  // namespace ferry::ops::codec::jpeg
