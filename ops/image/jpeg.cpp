// SPDX-License-Identifier: Apache-2.0
/// \file
/// JPEG through libjpeg-turbo: whole images through the TurboJPEG API (DCT-scaled decoding,
/// CMYK/YCCK), regions (`decode_options::crop`) through the libjpeg API, whose
/// `jpeg_crop_scanline` and `jpeg_skip_scanlines` TurboJPEG 2.1 does not expose (the EXIF
/// orientation is read in exif.cpp). libjpeg reports errors by longjmp: as in png.cpp, the
/// functions that call setjmp hold no C++ object with a destructor, and every allocation is
/// made outside them.
#include <turbojpeg.h>

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <csetjmp>
#include <cstring>
#include <memory>
#include <vector>

#include "codecs.hpp"
#include "exif.hpp"

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

/// `cmyk` (4 channels, as libjpeg hands back CMYK and YCCK files) as `to`. Adobe's convention
/// (what Photoshop writes and libjpeg hands back): inverted CMYK. The same arithmetic as OpenCV,
/// so both decoders agree.
image cmyk_to(const image& cmyk, pixel_format to) {
    image rgb(cmyk.width(), cmyk.height(), pixel_format::rgb);
    const std::uint8_t* src = cmyk.data().data();
    std::uint8_t* dst = rgb.data().data();
    const std::size_t pixels =
        static_cast<std::size_t>(cmyk.width()) * static_cast<std::size_t>(cmyk.height());
    for (std::size_t i = 0; i < pixels; ++i, src += 4, dst += 3) {
        const int k = src[3];
        for (int c = 0; c < 3; ++c)
            dst[c] = static_cast<std::uint8_t>(k - (((255 - src[c]) * k) >> 8));
    }
    return to == pixel_format::rgb ? std::move(rgb) : convert(std::move(rgb), to);
}

// --- regions, through the libjpeg API ---------------------------------------------------------

/// TurboJPEG's TJFLAG_LIMITSCANS bound, kept for regions: a progressive file with more scans
/// than this is refused (each scan is a pass over the coefficients; thousands of tiny scans are
/// a denial-of-service pattern, not a photograph).
constexpr int max_scans = 500;

/// A libjpeg decompressor and what its callbacks report. The setjmp functions below take it by
/// reference and hold no object with a destructor themselves.
struct region_state {
    jpeg_decompress_struct cinfo{};
    jpeg_error_mgr err{};
    jpeg_progress_mgr progress{};
    std::jmp_buf jump{};
    bool strict = true;
    bool warned = false;  ///< libjpeg papered over damage (lenient mode goes on)
    bool stopped_on_warning = false;
    bool created = false;  ///< jpeg_create_decompress succeeded: destroy it
    char message[JMSG_LENGTH_MAX] = {};

    region_state() = default;
    region_state(const region_state&) = delete;
    region_state& operator=(const region_state&) = delete;
    ~region_state() {
        if (created) jpeg_destroy_decompress(&cinfo);
    }
};

region_state& state_of(j_common_ptr cinfo) {
    // `err` is the first thing the callbacks get; the state is found from the decompressor.
    return *reinterpret_cast<region_state*>(reinterpret_cast<char*>(cinfo) -
                                            offsetof(region_state, cinfo));
}

void on_error_exit(j_common_ptr cinfo) {
    region_state& s = state_of(cinfo);
    (*cinfo->err->format_message)(cinfo, s.message);
    std::longjmp(s.jump, 1);
}

void on_emit_message(j_common_ptr cinfo, int level) {
    if (level >= 0) return;  // trace messages
    region_state& s = state_of(cinfo);
    if (!s.warned) (*cinfo->err->format_message)(cinfo, s.message);
    s.warned = true;
    if (s.strict) {
        s.stopped_on_warning = true;
        std::longjmp(s.jump, 1);
    }
}

void on_output_message(j_common_ptr /*cinfo*/) {}  // nothing goes to stderr

void on_progress(j_common_ptr cinfo) {
    auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
    if (d->input_scan_number > max_scans) {
        region_state& s = state_of(cinfo);
        std::snprintf(s.message, sizeof s.message, "progressive JPEG image has more than %d scans",
                      max_scans);
        std::longjmp(s.jump, 1);
    }
}

/// One libjpeg decompressor per thread, reused (jpeg_create_decompress allocates its pools).
/// After any failure or warning it is destroyed and made anew: a decompressor left by a longjmp
/// is in whatever state the error found it in, and the TurboJPEG path above has shown that
/// libjpeg-turbo 2.1 does not always recover from that.
std::unique_ptr<region_state>& region_slot() {
    thread_local std::unique_ptr<region_state> slot;
    return slot;
}

/// Creates the decompressor (a function of its own: jpeg_create_decompress can fail by longjmp
/// when out of memory). False on error.
bool create_decompressor(region_state& s) {
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

region_state& region_decoder() {
    auto& slot = region_slot();
    if (!slot) {
        auto fresh = std::make_unique<region_state>();
        if (!create_decompressor(*fresh)) {
            fail("jpeg", std::string("cannot create a decompressor: ") + fresh->message);
        }
        slot = std::move(fresh);
    }
    region_state& s = *slot;
    // Back to the start state, whatever the last decode left (a header read, then a refused
    // size or box, leaves it mid-way); jpeg_abort_decompress cannot fail.
    jpeg_abort_decompress(&s.cinfo);
    s.warned = false;
    s.stopped_on_warning = false;
    s.message[0] = '\0';
    return s;
}

/// Reads the header of `data`. False (with `s.message`) on error.
bool region_read_header(region_state& s, const unsigned char* data, unsigned long size) {
    if (setjmp(s.jump)) return false;
    jpeg_mem_src(&s.cinfo, data, size);
    return jpeg_read_header(&s.cinfo, TRUE) == JPEG_HEADER_OK;
}

/// What `region_start` is asked for and answers.
struct region_plan {
    int denom = 1;  ///< DCT scale 1/denom
    J_COLOR_SPACE out_space = JCS_EXT_RGB;
    JDIMENSION x = 0;  ///< columns to decode (scaled): in, then as libjpeg widened them
    JDIMENSION width = 0;
    JDIMENSION skip_rows = 0;  ///< rows above the region (scaled)
};

/// Starts the decompression at 1/`plan.denom`, restricted to the columns `plan.x`,
/// `plan.width` (which libjpeg widens to the left, to an iMCU boundary), and skips to row
/// `plan.skip_rows`. False (with `s.message`) on error.
bool region_start(region_state& s, region_plan& plan) {
    if (setjmp(s.jump)) return false;
    j_decompress_ptr d = &s.cinfo;
    d->scale_num = 1;
    d->scale_denom = static_cast<unsigned int>(plan.denom);
    d->out_color_space = plan.out_space;
    // What TurboJPEG uses too: the accurate integer IDCT and fancy (smooth) upsampling, so a
    // region has the pixels of the whole image decoded by the TurboJPEG path.
    d->dct_method = JDCT_ISLOW;
    d->do_fancy_upsampling = TRUE;
    jpeg_start_decompress(d);
    jpeg_crop_scanline(d, &plan.x, &plan.width);
    if (plan.skip_rows > 0) jpeg_skip_scanlines(d, plan.skip_rows);
    return true;
}

/// Where `region_read` puts the rows: straight into the result when libjpeg's widened columns
/// are exactly the region's, else `chunk` rows at a time into `scratch` (rows of `scratch_row`
/// bytes), from which `row_bytes` bytes at `from` of each row are copied to the result. Rows
/// are read several at a time: one jpeg_read_scanlines call per row costs ~10% of a decode.
struct region_output {
    unsigned char* out = nullptr;  ///< the result's first row
    std::size_t row_bytes = 0;     ///< the result's row size
    int rows = 0;
    bool direct = false;
    unsigned char* scratch = nullptr;
    std::size_t scratch_row = 0;
    std::size_t from = 0;
    JSAMPROW* pointers = nullptr;  ///< room for `chunk` row pointers
    int chunk = 1;
};

/// Reads the region's rows (see `region_output`). Then, when `strict`, reads the rest of the
/// entropy data (jpeg_skip_scanlines to the last row, which decodes the skipped rows' Huffman
/// data without transforming it; then that row, then up to the EOI marker), so damage below the
/// region is still noticed, as in a whole-image decode; otherwise stops there. False (with
/// `s.message`) on error, or on a warning when strict.
bool region_read(region_state& s, const region_output& o, bool strict) {
    if (setjmp(s.jump)) return false;
    j_decompress_ptr d = &s.cinfo;
    for (int y = 0; y < o.rows;) {
        const int n = std::min(o.chunk, o.rows - y);
        for (int k = 0; k < n; ++k) {
            o.pointers[k] = o.direct ? o.out + static_cast<std::size_t>(y + k) * o.row_bytes
                                     : o.scratch + static_cast<std::size_t>(k) * o.scratch_row;
        }
        const auto got =
            static_cast<int>(jpeg_read_scanlines(d, o.pointers, static_cast<JDIMENSION>(n)));
        // 0 rows only comes from a suspending data source, which the memory source is not.
        if (got <= 0) ERREXIT(d, JERR_INPUT_EMPTY);
        if (!o.direct) {
            for (int k = 0; k < got; ++k) {
                std::memcpy(o.out + static_cast<std::size_t>(y + k) * o.row_bytes,
                            o.scratch + static_cast<std::size_t>(k) * o.scratch_row + o.from,
                            o.row_bytes);
            }
        }
        y += got;
    }
    if (!strict) {
        jpeg_abort_decompress(d);
        return true;
    }
    if (d->output_scanline + 1 < d->output_height) {
        // Not to the very end: skipping the last row marks the input finished without reading
        // it (libjpeg-turbo's jpeg_skip_scanlines), and truncation there would go unnoticed.
        jpeg_skip_scanlines(d, d->output_height - 1 - d->output_scanline);
    }
    JSAMPROW row = o.scratch;
    while (d->output_scanline < d->output_height) {
        if (jpeg_read_scanlines(d, &row, 1) != 1) ERREXIT(d, JERR_INPUT_EMPTY);
    }
    jpeg_finish_decompress(d);
    return true;
}

/// Fails with libjpeg's message, first discarding the thread's decompressor.
[[noreturn]] void fail_region(region_state& s, const std::string& prefix) {
    std::string why = prefix;
    why += s.stopped_on_warning ? "truncated or corrupt data: " : "";
    why += s.message;
    region_slot().reset();
    fail("jpeg", why);
}

J_COLOR_SPACE color_space_of(pixel_format f) {
    switch (f) {
        case pixel_format::rgb:
            return JCS_EXT_RGB;
        case pixel_format::bgr:
            return JCS_EXT_BGR;
        case pixel_format::gray:
            return JCS_GRAYSCALE;
        case pixel_format::rgba:
            return JCS_EXT_RGBA;  // libjpeg-turbo fills alpha with 255
    }
    return JCS_EXT_RGB;
}

/// The region `req.crop` of the JPEG in `data`, in the stored orientation, at the smallest DCT
/// scale at which it still covers `req.at_least`.
image decode_jpeg_region(byte_span data, const request& req) {
    region_state& s = region_decoder();
    s.strict = req.strict;
    const unsigned char* bytes = as_uchar(data);
    const auto size = static_cast<unsigned long>(data.size());
    if (!region_read_header(s, bytes, size)) {
        // As read_header above: say "truncated" when the bytes end before the image data.
        fail_region(s, jpeg_header_complete(data) ? "bad header: "
                                                  : "truncated data: the file ends inside the "
                                                    "header; bad header: ");
    }
    const int full_w = static_cast<int>(s.cinfo.image_width);
    const int full_h = static_cast<int>(s.cinfo.image_height);
    if (full_w <= 0 || full_h <= 0) {
        region_slot().reset();
        fail("jpeg", "bad header: no frame size (no SOF marker)");
    }
    check_pixels("jpeg", full_w, full_h, req.max_pixels);
    const crop_box box = stored_crop(*req.crop, req.orientation, full_w, full_h);

    // The box at 1/d, rounded outward: [floor(x / d), ceil((x + w) / d)).
    const auto scaled_box = [&](int d) {
        const int x0 = box.x / d;
        const int y0 = box.y / d;
        const int x1 = (box.x + box.width + d - 1) / d;
        const int y1 = (box.y + box.height + d - 1) / d;
        return crop_box{x0, y0, x1 - x0, y1 - y0};
    };
    int denom = 1;
    if (req.at_least.width > 0 && req.at_least.height > 0) {
        for (int d : {8, 4, 2}) {
            const crop_box b = scaled_box(d);
            if (b.width >= req.at_least.width && b.height >= req.at_least.height) {
                denom = d;
                break;
            }
        }
    }
    const crop_box want = scaled_box(denom);
    const int out_w = scaled(full_w, denom);

    const J_COLOR_SPACE in_space = s.cinfo.jpeg_color_space;
    const bool cmyk = in_space == JCS_CMYK || in_space == JCS_YCCK;
    region_plan plan;
    plan.denom = denom;
    plan.out_space = cmyk ? JCS_CMYK : color_space_of(req.format);
    // Decode a margin of one iMCU (16 pixels at most, at this scale) beyond the region's right
    // edge, and one pixel before its left edge (libjpeg rounds that down to an iMCU boundary):
    // fancy upsampling of subsampled chroma reads the neighbouring chroma sample, and at the
    // edges of what libjpeg decodes it repeats the edge sample instead, which would make the
    // region's outermost columns differ from the whole image's.
    const int margin = std::max(1, 16 / denom);
    const int left = std::max(0, want.x - 1);
    const int right = std::min(out_w, want.x + want.width + margin);
    plan.x = static_cast<JDIMENSION>(left);
    plan.width = static_cast<JDIMENSION>(right - left);
    plan.skip_rows = static_cast<JDIMENSION>(want.y);
    if (!region_start(s, plan)) fail_region(s, "");

    const int channels = static_cast<int>(s.cinfo.output_components);
    const pixel_format target = cmyk ? pixel_format::rgba : req.format;
    image out(want.width, want.height, target);
    if (channels != out.channels() || static_cast<int>(plan.x) > want.x ||
        static_cast<int>(plan.x + plan.width) < want.x + want.width) {
        fail("jpeg", "unexpected decoder geometry");  // not expected from libjpeg-turbo 2.1
    }
    region_output o;
    o.out = out.data().data();
    o.row_bytes = out.row_bytes();
    o.rows = want.height;
    o.direct = static_cast<int>(plan.x) == want.x && static_cast<int>(plan.width) == want.width;
    o.scratch_row = static_cast<std::size_t>(plan.width) * static_cast<std::size_t>(channels);
    o.from = static_cast<std::size_t>(want.x - static_cast<int>(plan.x)) *
             static_cast<std::size_t>(channels);
    o.chunk = o.direct ? std::max(1, want.height) : std::min(16, want.height);
    // The scratch rows are needed even when direct: the strict read of the last row uses one.
    std::vector<unsigned char> scratch(o.scratch_row *
                                       static_cast<std::size_t>(o.direct ? 1 : o.chunk));
    std::vector<JSAMPROW> pointers(static_cast<std::size_t>(o.chunk));
    o.scratch = scratch.data();
    o.pointers = pointers.data();
    if (!region_read(s, o, req.strict)) fail_region(s, "");
    if (s.warned) region_slot().reset();  // lenient: the image is kept, the decompressor is not
    if (!cmyk) return out;
    return cmyk_to(out, req.format);
}

}  // namespace

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
    if (req.crop != nullptr) return decode_jpeg_region(data, req);
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
    return cmyk_to(out, req.format);
}

}  // namespace ferry::ops::codec
