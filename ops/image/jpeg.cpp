// SPDX-License-Identifier: Apache-2.0
/// \file
/// JPEG through libjpeg-turbo's TurboJPEG API: DCT-scaled decoding, CMYK/YCCK, and the EXIF
/// orientation read from APP1.
#include <turbojpeg.h>

#include <cstring>
#include <memory>

#include "codecs.hpp"

namespace ferry::ops::codec {
namespace {

struct tj_deleter {
    void operator()(void* h) const noexcept { tjDestroy(h); }
};

/// One decompressor per thread, reused: creating one allocates libjpeg's state (~tens of KB),
/// which costs as much as decoding a thumbnail. After any failure it is replaced: libjpeg-turbo
/// 2.1 does not reset a decompressor whose header read failed, and the next file would be read
/// from that broken state.
std::unique_ptr<void, tj_deleter>& thread_slot() {
    thread_local std::unique_ptr<void, tj_deleter> handle;
    return handle;
}

tjhandle thread_handle() {
    auto& slot = thread_slot();
    if (!slot) slot.reset(tjInitDecompress());
    if (!slot) {
        fail("jpeg", std::string("cannot create a decompressor: ") + tjGetErrorStr2(nullptr));
    }
    return slot.get();
}

/// Fails with TurboJPEG's message for `h`, first discarding the thread's decompressor.
[[noreturn]] void fail_and_reset(tjhandle h, const std::string& prefix) {
    std::string why = prefix + tjGetErrorStr2(h);
    thread_slot().reset();
    fail("jpeg", why);
}

const unsigned char* as_uchar(byte_span data) {
    return reinterpret_cast<const unsigned char*>(data.data());
}

/// Whether the marker segments run up to the start of the image data (SOS) inside `data`.
bool jpeg_header_complete(byte_span data) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(data.data());
    const std::size_t n = data.size();
    std::size_t pos = 2;
    while (pos + 4 <= n) {
        if (p[pos] != 0xFF) return true;  // not a marker: corrupt rather than cut
        const unsigned char marker = p[pos + 1];
        if (marker == 0xFF) {
            ++pos;
            continue;
        }
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {
            pos += 2;
            continue;
        }
        const std::size_t len = (std::size_t{p[pos + 2]} << 8) | p[pos + 3];
        if (marker == 0xDA) return pos + 2 + len <= n;
        if (marker == 0xD9) return true;
        pos += 2 + len;
    }
    return false;
}

struct header {
    int width = 0;
    int height = 0;
    int subsamp = 0;
    int colorspace = 0;
};

header read_header(tjhandle h, byte_span data) {
    header hd;
    const bool ok = tjDecompressHeader3(h, as_uchar(data), static_cast<unsigned long>(data.size()),
                                        &hd.width, &hd.height, &hd.subsamp, &hd.colorspace) == 0;
    if (!ok || hd.width <= 0 || hd.height <= 0) {
        // A header cut short reads as anything from "Bogus DQT index" to a 0x0 frame; say what
        // it really is when the bytes end before the image data starts.
        const char* cut = jpeg_header_complete(data) ? ""
                                                     : "truncated data: the file ends inside "
                                                       "the header; ";
        if (ok) {
            thread_slot().reset();
            fail("jpeg", std::string(cut) + "bad header: no frame size (no SOF marker)");
        }
        fail_and_reset(h, std::string(cut) + "bad header: ");
    }
    return hd;
}

bool is_cmyk(int colorspace) {
    return colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
}

/// The scaled size TurboJPEG produces for 1/`denom`.
int scaled(int dim, int denom) {
    return (dim + denom - 1) / denom;
}

int pixel_format_of(pixel_format f) {
    switch (f) {
        case pixel_format::rgb:
            return TJPF_RGB;
        case pixel_format::bgr:
            return TJPF_BGR;
        case pixel_format::gray:
            return TJPF_GRAY;
        case pixel_format::rgba:
            return TJPF_RGBA;  // libjpeg-turbo fills alpha with 255
    }
    return TJPF_RGB;
}

std::uint16_t read16(const unsigned char* p, bool big_endian) {
    return big_endian ? static_cast<std::uint16_t>((p[0] << 8) | p[1])
                      : static_cast<std::uint16_t>((p[1] << 8) | p[0]);
}

std::uint32_t read32(const unsigned char* p, bool big_endian) {
    return big_endian ? (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                            (std::uint32_t{p[2]} << 8) | p[3]
                      : (std::uint32_t{p[3]} << 24) | (std::uint32_t{p[2]} << 16) |
                            (std::uint32_t{p[1]} << 8) | p[0];
}

/// The orientation tag (0x0112) of a TIFF structure (the body of an EXIF APP1 segment).
int tiff_orientation(const unsigned char* tiff, std::size_t size) {
    if (size < 8) return 1;
    bool big;
    if (tiff[0] == 'I' && tiff[1] == 'I') {
        big = false;
    } else if (tiff[0] == 'M' && tiff[1] == 'M') {
        big = true;
    } else {
        return 1;
    }
    if (read16(tiff + 2, big) != 42) return 1;
    const std::uint32_t ifd = read32(tiff + 4, big);
    if (ifd > size - 2 || ifd < 8) return 1;
    const std::uint16_t entries = read16(tiff + ifd, big);
    for (std::uint32_t i = 0; i < entries; ++i) {
        const std::size_t at = std::size_t{ifd} + 2 + std::size_t{i} * 12;
        if (at + 12 > size) return 1;
        if (read16(tiff + at, big) != 0x0112) continue;
        const std::uint16_t type = read16(tiff + at + 2, big);
        if (type != 3 /* SHORT */) return 1;
        const int v = read16(tiff + at + 8, big);
        return (v >= 1 && v <= 8) ? v : 1;
    }
    return 1;
}

}  // namespace

int jpeg_orientation(byte_span data) noexcept {
    const unsigned char* p = as_uchar(data);
    const std::size_t n = data.size();
    if (n < 4 || p[0] != 0xFF || p[1] != 0xD8) return 1;
    std::size_t pos = 2;
    while (pos + 4 <= n) {
        if (p[pos] != 0xFF) return 1;
        const unsigned char marker = p[pos + 1];
        if (marker == 0xFF) {  // fill byte
            ++pos;
            continue;
        }
        if (marker == 0xDA || marker == 0xD9) return 1;  // image data starts: no EXIF before it
        if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
            pos += 2;
            continue;
        }
        const std::size_t len = (std::size_t{p[pos + 2]} << 8) | p[pos + 3];
        if (len < 2 || pos + 2 + len > n) return 1;
        const unsigned char* body = p + pos + 4;
        const std::size_t body_len = len - 2;
        if (marker == 0xE1 && body_len >= 6 && std::memcmp(body, "Exif\0\0", 6) == 0) {
            return tiff_orientation(body + 6, body_len - 6);
        }
        pos += 2 + len;
    }
    return 1;
}

image_info probe_jpeg(byte_span data) {
    const header hd = read_header(thread_handle(), data);
    image_info info;
    info.format = "jpeg";
    info.width = hd.width;
    info.height = hd.height;
    info.channels = hd.colorspace == TJCS_GRAY ? 1 : is_cmyk(hd.colorspace) ? 4 : 3;
    info.bit_depth = 8;
    info.orientation = jpeg_orientation(data);
    return info;
}

image decode_jpeg(byte_span data, const request& req) {
    tjhandle h = thread_handle();
    const header hd = read_header(h, data);
    check_pixels("jpeg", hd.width, hd.height, req.max_pixels);

    // The smallest power-of-two reduction that still covers the request: libjpeg-turbo then
    // runs a 4x4, 2x2 or 1x1 inverse DCT per block instead of 8x8 — most of the decode's work.
    int width = hd.width;
    int height = hd.height;
    if (req.at_least.width > 0 && req.at_least.height > 0) {
        for (int denom : {8, 4, 2}) {
            if (scaled(hd.width, denom) >= req.at_least.width &&
                scaled(hd.height, denom) >= req.at_least.height) {
                width = scaled(hd.width, denom);
                height = scaled(hd.height, denom);
                break;
            }
        }
    }

    const bool cmyk = is_cmyk(hd.colorspace);
    // CMYK has no direct conversion in libjpeg: decode to CMYK, convert below.
    const pixel_format target = cmyk ? pixel_format::rgba : req.format;
    image out(width, height, target);
    int flags = TJFLAG_LIMITSCANS;  // refuse progressive files with absurd scan counts
    if (req.strict) flags |= TJFLAG_STOPONWARNING;
    const int rc =
        tjDecompress2(h, as_uchar(data), static_cast<unsigned long>(data.size()), out.data().data(),
                      width, 0, height, cmyk ? TJPF_CMYK : pixel_format_of(target), flags);
    if (rc != 0) {
        const bool warning = tjGetErrorCode(h) == TJERR_WARNING;
        if (!warning || req.strict) fail_and_reset(h, warning ? "truncated or corrupt data: " : "");
        thread_slot().reset();  // lenient: the image is kept, the decompressor is not
    }
    if (!cmyk) return out;

    // Adobe's convention (what Photoshop writes and libjpeg hands back): inverted CMYK. The
    // same arithmetic as OpenCV, so both decoders agree.
    image rgb(width, height, pixel_format::rgb);
    const std::uint8_t* src = out.data().data();
    std::uint8_t* dst = rgb.data().data();
    const std::size_t pixels = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    for (std::size_t i = 0; i < pixels; ++i, src += 4, dst += 3) {
        const int k = src[3];
        for (int c = 0; c < 3; ++c)
            dst[c] = static_cast<std::uint8_t>(k - (((255 - src[c]) * k) >> 8));
    }
    return req.format == pixel_format::rgb ? std::move(rgb) : convert(std::move(rgb), req.format);
}

}  // namespace ferry::ops::codec
