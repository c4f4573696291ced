// SPDX-License-Identifier: Apache-2.0
/// \file
/// The entropy-decoder layout checks (jpeg_abi.hpp): at build time against jpegint.h where it
/// lies beside jpeglib.h (CMake defines FERRY_JPEGINT_H to its path), at run time against the
/// libjpeg this process loaded.
#include "jpeg_abi.hpp"

#include <dlfcn.h>

#include <atomic>

#if defined(FERRY_JPEGINT_H) && FERRY_JPEG_BUILT_LAYOUT != 0
#include FERRY_JPEGINT_H

// Where this fails, jpegint.h's layout is not the one jpeg_abi.hpp mirrors for this
// LIBJPEG_TURBO_VERSION_NUMBER: mirror the new layout there.
#define FERRY_JPEG_MIRROR(member)                                                      \
    static_assert(offsetof(ferry::ops::codec::jpeg::entropy_decoder_header, member) == \
                      offsetof(jpeg_entropy_decoder, member),                          \
                  "jpeg_abi.hpp's entropy_decoder_header differs from jpegint.h at " #member)
FERRY_JPEG_MIRROR(start_pass);
FERRY_JPEG_MIRROR(decode_mcu);
#if FERRY_JPEG_BUILT_LAYOUT == 3
FERRY_JPEG_MIRROR(decode_mcus);
FERRY_JPEG_MIRROR(process_restart);
#endif
FERRY_JPEG_MIRROR(insufficient_data);
#undef FERRY_JPEG_MIRROR
static_assert(sizeof(ferry::ops::codec::jpeg::entropy_decoder_header) ==
                  sizeof(jpeg_entropy_decoder),
              "jpeg_abi.hpp's entropy_decoder_header differs from jpegint.h in size");
#endif

namespace ferry::ops::codec::jpeg {
namespace {

std::atomic<int> pretended{0};

/// Any address inside this object (ferry's library, or the program it is linked into).
void here() {}

int find_loaded_layout() noexcept {
    // The library that defines libjpeg's messages is the one whose functions ferry calls:
    // jpeg_std_error hands out its own table. (A function's address could be the program's
    // PLT entry; a table the library returns is the library's.)
    jpeg_error_mgr err{};
    jpeg_std_error(&err);
    Dl_info lib{};
    Dl_info self{};
    if (err.jpeg_message_table == nullptr ||
        dladdr(static_cast<const void*>(err.jpeg_message_table), &lib) == 0 ||
        lib.dli_fname == nullptr) {
        return 0;
    }
    if (dladdr(reinterpret_cast<void*>(&here), &self) != 0 && self.dli_fbase == lib.dli_fbase) {
        // Linked statically into the same object: nothing to ask at run time (a static
        // program exports no symbols), and the archive came with the headers compiled against.
        return built_layout;
    }
    void* handle = dlopen(lib.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) return 0;
    const bool twelve_bit = dlsym(handle, "jpeg12_read_scanlines") != nullptr;
    dlclose(handle);
    return twelve_bit ? 3 : 2;
}

}  // namespace

int loaded_layout() noexcept {
    const int p = pretended.load(std::memory_order_relaxed);
    if (p != 0) return p;
    static const int found = find_loaded_layout();
    return found;
}

void pretend_loaded_layout(int layout) noexcept {
    pretended.store(layout, std::memory_order_relaxed);
}

}  // namespace ferry::ops::codec::jpeg
