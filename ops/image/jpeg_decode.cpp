// SPDX-License-Identifier: Apache-2.0
/// \file
/// JPEG decoding and probing through libjpeg-turbo's libjpeg API: whole images, regions
/// (`decode_options::crop`, with `jpeg_crop_scanline` and `jpeg_skip_scanlines`) and DCT-scaled
/// decodes (1/2, 1/4, 1/8), for every sampling factor and colour space libjpeg-turbo decodes.
/// libjpeg reports errors by longjmp: as in png.cpp, the functions that call setjmp hold no C++
/// object with a destructor, and every allocation is made outside them.

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jerror.h>
#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstring>
#include <memory>
#include <vector>

#include "codecs.hpp"
#include "exif.hpp"
#include "jpeg_state.hpp"
#include "transform.hpp"

namespace ferry::ops::codec {
namespace {

using jpeg::decoder_state;
using jpeg::fail_and_reset;
using jpeg::read_header;
using jpeg::thread_slot;

bool is_cmyk(J_COLOR_SPACE space) {
    return space == JCS_CMYK || space == JCS_YCCK;
}

/// The size libjpeg-turbo produces for `dim` at 1/`denom`.
int scaled(int dim, int denom) {
    return (dim + denom - 1) / denom;
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

JDIMENSION div_round_up(JDIMENSION a, JDIMENSION b) {
    return (a + b - 1) / b;
}

/// Whether `jpeg_crop_scanline(d, x, width)` narrows the decode and gives the pixels of the
/// full-width decode, for the decompressor `d` just started. libjpeg-turbo 2.1 sets each
/// component's cropped width
/// (`downsampled_width`) to `width * h / max_h`, leaving out the component's DCT scale, which
/// differs from the smallest one when DCT scaling lets libjpeg-turbo shrink a subsampled
/// component's upsampling (4x2 or 2x4 sampling, or 4x1,2x1,1x1 at 1/2 and below). That width
/// is harmless where the component is not upsampled (4:2:0 at 1/2), but fancy upsampling reads
/// it as the component's right edge, so the pixels past it come out wrong; and a cropped width
/// under 2 samples makes libjpeg choose another upsampler for the narrow strip. Both are
/// refused here (the caller then decodes full rows and copies the region out), whichever
/// formula the library in use has.
bool crop_is_exact(const jpeg_decompress_struct& d, JDIMENSION x, JDIMENSION width) {
    const auto min_size = static_cast<JDIMENSION>(d.min_DCT_scaled_size);
    const auto max_h = static_cast<JDIMENSION>(d.max_h_samp_factor);
    const auto max_v = static_cast<JDIMENSION>(d.max_v_samp_factor);
    const JDIMENSION align =
        d.comps_in_scan == 1 && d.num_components == 1 ? min_size : min_size * max_h;
    const JDIMENSION left = x / align * align;
    const JDIMENSION cropped = width + x - left;
    // Aligned, the crop is the whole width: full rows are the same columns, without the widths
    // jpeg_crop_scanline would still recompute (it only skips that for an unaligned full width).
    if (cropped >= d.output_width) return false;
    for (int ci = 0; ci < d.num_components; ++ci) {
        const jpeg_component_info& c = d.comp_info[ci];
        const auto h = static_cast<JDIMENSION>(c.h_samp_factor);
        const auto v = static_cast<JDIMENSION>(c.v_samp_factor);
        const auto size = static_cast<JDIMENSION>(c.DCT_scaled_size);
        const JDIMENSION as_21 = div_round_up(cropped * h, max_h);
        const JDIMENSION exact = div_round_up(cropped * h * size, max_h * min_size);
        const bool not_upsampled = h * size == max_h * min_size && v * size == max_v * min_size;
        if (as_21 != exact && !not_upsampled) return false;
        if ((as_21 < 2 || exact < 2) && c.downsampled_width >= 2) return false;
    }
    return true;
}

/// Whether jpeg_skip_scanlines can be trusted on the decompressor `d` just started.
/// libjpeg-turbo 2.1 mis-skips when a component whose DCT scale DCT scaling changed is still
/// upsampled vertically (2x4 sampling at 1/2: chroma upsampled 1x2, with context rows): in a
/// progressive file it can loop forever near the end of an iMCU row, in a baseline one it reads
/// past the data ("premature end of data segment"). There the rows are read and dropped.
bool skip_is_safe(const jpeg_decompress_struct& d) {
    // Plain upsampling of subsampled YCbCr to 3-channel colour is libjpeg-turbo's merged
    // upsampler (upsampling and colour conversion in one), and jpeg_skip_scanlines reads past
    // its buffers there (valgrind: an invalid read in 2.1.5, even for whole iMCU rows skipped
    // from the first row; rows after the skip then come out wrong now and then).
    if (!d.do_fancy_upsampling && d.jpeg_color_space == JCS_YCbCr && d.num_components == 3 &&
        (d.max_h_samp_factor > 1 || d.max_v_samp_factor > 1)) {
        return false;
    }
    for (int ci = 0; ci < d.num_components; ++ci) {
        const jpeg_component_info& c = d.comp_info[ci];
        if (c.DCT_scaled_size != d.min_DCT_scaled_size &&
            c.v_samp_factor * c.DCT_scaled_size != d.max_v_samp_factor * d.min_DCT_scaled_size) {
            return false;
        }
    }
    return true;
}

/// What `start` is asked for and answers.
struct decode_plan {
    int denom = 1;      ///< DCT scale 1/denom
    bool fast = false;  ///< fast IDCT, plain upsampling
    J_COLOR_SPACE out_space = JCS_EXT_RGB;
    /// Columns to decode (scaled): in, then as libjpeg widened them (to the left, to an iMCU
    /// boundary); the whole width when the crop would not be exact.
    JDIMENSION x = 0;
    JDIMENSION width = 0;
    JDIMENSION skip_rows = 0;  ///< rows above the region (scaled)
    JDIMENSION drop_rows = 0;  ///< answer: rows above the region still to read and drop
    bool can_skip = true;      ///< answer: whether jpeg_skip_scanlines may be used
};

/// Starts the decompression at 1/`plan.denom`, restricted to the columns `plan.x`,
/// `plan.width` where that is exact, and skips to row `plan.skip_rows`. False (with
/// `s.message`) on error.
bool start(decoder_state& s, decode_plan& plan) {
    if (setjmp(s.jump)) return false;
    j_decompress_ptr d = &s.cinfo;
    d->scale_num = 1;
    d->scale_denom = static_cast<unsigned int>(plan.denom);
    d->out_color_space = plan.out_space;
    // The accurate integer IDCT and fancy (smooth) upsampling: djpeg's defaults, and what the
    // TurboJPEG API decodes with; with `fast`, the fast integer IDCT and plain upsampling
    // (tjbench -fastdct -fastupsample).
    d->dct_method = plan.fast ? JDCT_IFAST : JDCT_ISLOW;
    d->do_fancy_upsampling = plan.fast ? FALSE : TRUE;
    // A file of several scans is read whole by jpeg_start_decompress, which puts ferry's
    // decoder in place first (through the progress monitor).
    const bool several_scans = jpeg_has_multiple_scans(d) != FALSE;
    jpeg::entropy_choice choice =
        several_scans ? jpeg::prepare_scans(*d, s.huffman) : jpeg::entropy_choice::ferry;
    jpeg_start_decompress(d);
    if (!several_scans) {
        choice = jpeg::use_ferry_huffman(*d, s.huffman);
    } else if (choice == jpeg::entropy_choice::ferry_scans) {
        choice = s.huffman.scans_choice;
    }
    jpeg::count(choice);
    if (plan.width < d->output_width) {
        if (crop_is_exact(*d, plan.x, plan.width)) {
            jpeg_crop_scanline(d, &plan.x, &plan.width);
        } else {
            plan.x = 0;
            plan.width = d->output_width;
        }
    }
    plan.can_skip = skip_is_safe(*d);
    if (plan.skip_rows > 0) {
        if (plan.can_skip) {
            jpeg_skip_scanlines(d, plan.skip_rows);
        } else {
            plan.drop_rows = plan.skip_rows;
        }
    }
    return true;
}

/// Where a decode that resizes (`request::resize_to`) puts the decoder's rows: the thread's own
/// buffer, reused from call to call (no allocation, no fresh pages to fault in), for regions of
/// up to `kept_bytes`; a larger one gets a buffer of its own, freed after the call, so that a
/// thread never keeps more than that.
class rows_buffer {
  public:
    static constexpr std::size_t kept_bytes = std::size_t{4} << 20;

    /// Room for `bytes` bytes, valid until this object goes.
    unsigned char* get(std::size_t bytes) {
        if (bytes > kept_bytes) {
            own_ = std::make_unique_for_overwrite<unsigned char[]>(bytes);
            size_ = bytes;
            return own_.get();
        }
        thread_local std::unique_ptr<unsigned char[]> kept;
        thread_local std::size_t kept_size = 0;
        if (kept_size < bytes) {
            kept.reset();  // the old one goes first: never two at once
            kept = std::make_unique_for_overwrite<unsigned char[]>(bytes);
            kept_size = bytes;
        }
        size_ = kept_size;
        return kept.get();
    }
    /// The bytes usable from what `get` returned (at least what it was asked for).
    [[nodiscard]] std::size_t size() const noexcept { return size_; }

  private:
    std::unique_ptr<unsigned char[]> own_;
    std::size_t size_ = 0;
};

/// Where `read_rows` puts the rows: straight into the result when the decoded columns are
/// exactly the result's, else `chunk` rows at a time into `scratch` (rows of `scratch_row`
/// bytes), from which `row_bytes` bytes at `from` of each row are copied to the result. Rows
/// are read several at a time: one jpeg_read_scanlines call per row costs ~10% of a decode.
struct row_output {
    unsigned char* out = nullptr;  ///< the result's first row
    std::size_t row_bytes = 0;     ///< the result's row size
    int rows = 0;
    bool direct = false;
    unsigned char* scratch = nullptr;
    std::size_t scratch_row = 0;
    std::size_t from = 0;
    JSAMPROW* pointers = nullptr;  ///< room for `chunk` row pointers
    int chunk = 1;
    JDIMENSION drop_rows = 0;  ///< rows to read into `scratch` and drop first
    bool can_skip = true;      ///< see `skip_is_safe`
};

/// Whether the data libjpeg has not read yet holds an EOI marker. Entropy-coded data never
/// holds 0xFF 0xD9 (an 0xFF there is followed by 0x00 or a restart marker's 0xD0..0xD7), so the
/// first such pair is the end of the image; it is almost always the last two bytes.
bool eoi_follows(const jpeg_decompress_struct& d) {
    if (d.unread_marker == JPEG_EOI) return true;
    const unsigned char* p = d.src->next_input_byte;
    std::size_t n = d.src->bytes_in_buffer;
    if (n >= 2 && p[n - 2] == 0xFF && p[n - 1] == JPEG_EOI) return true;
    while (n >= 2) {
        const auto* ff = static_cast<const unsigned char*>(std::memchr(p, 0xFF, n - 1));
        if (ff == nullptr) return false;
        if (ff[1] == JPEG_EOI) return true;
        const auto step = static_cast<std::size_t>(ff - p) + 1;
        p += step;
        n -= step;
    }
    return false;
}

/// Reads the result's rows (see `row_output`). Then, when `strict`, makes sure of the rest of
/// a region's data: with `check_rest`, reads the rest of the entropy data (jpeg_skip_scanlines
/// to the last row, which decodes the skipped rows' Huffman data without transforming it; then
/// that row, then up to the EOI marker), so damage below a region is noticed as in a
/// whole-image decode; without it, only looks for the EOI marker in the bytes left (a truncated
/// file has none; the message is libjpeg's for a whole decode of it). False (with `s.message`)
/// on error, or on a warning when strict.
bool read_rows(decoder_state& s, const row_output& o, bool strict, bool check_rest) {
    if (setjmp(s.jump)) return false;
    j_decompress_ptr d = &s.cinfo;
    JSAMPROW row = o.scratch;
    // The row pointers, set once: a call returns a few rows (an iMCU row at most), and setting
    // every pointer left before each call costs ~2% of a region decode.
    for (int k = 0; k < o.chunk; ++k) {
        o.pointers[k] = o.direct ? o.out + static_cast<std::size_t>(k) * o.row_bytes
                                 : o.scratch + static_cast<std::size_t>(k) * o.scratch_row;
    }
    // Rows above the region that cannot be skipped are read into the region's own rows, which
    // the region overwrites next: several per call, as libjpeg makes them (the merged upsampler
    // makes two at a time, and one row per call would have it copy every other row aside).
    for (JDIMENSION y = 0; y < o.drop_rows;) {
        const auto n = std::min(static_cast<JDIMENSION>(o.chunk), o.drop_rows - y);
        const JDIMENSION got = jpeg_read_scanlines(d, o.pointers, n);
        if (got == 0) ERREXIT(d, JERR_INPUT_EMPTY);
        y += got;
    }
    for (int y = 0; y < o.rows;) {
        const int n = std::min(o.chunk, o.rows - y);
        JSAMPARRAY into = o.direct ? o.pointers + y : o.pointers;
        const auto got = static_cast<int>(jpeg_read_scanlines(d, into, static_cast<JDIMENSION>(n)));
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
    // A multi-scan file was read up to its EOI marker by jpeg_start_decompress: nothing below
    // the region is left unread.
    if (!strict || jpeg_has_multiple_scans(d)) {
        jpeg_abort_decompress(d);
        return true;
    }
    if (!check_rest && d->output_scanline < d->output_height) {
        if (!eoi_follows(*d)) {
            std::snprintf(s.message, sizeof s.message, "Premature end of JPEG file");
            s.stopped_on_warning = true;
            return false;
        }
        jpeg_abort_decompress(d);
        return true;
    }
    if (o.can_skip && d->output_scanline + 1 < d->output_height) {
        // Not to the very end: skipping the last row marks the input finished without reading
        // it (libjpeg-turbo's jpeg_skip_scanlines), and truncation there would go unnoticed.
        jpeg_skip_scanlines(d, d->output_height - 1 - d->output_scanline);
    }
    while (d->output_scanline < d->output_height) {
        if (jpeg_read_scanlines(d, &row, 1) != 1) ERREXIT(d, JERR_INPUT_EMPTY);
    }
    jpeg_finish_decompress(d);
    return true;
}

image decode(byte_span data, const request& req, bool may_trim);

/// A decode that failed: lenient, after the bytes ran out inside a table between two scans of
/// a progressive file (libjpeg then reads its fake EOI marker as the table and fails, e.g. on a
/// "Bogus Huffman table definition"), the file is decoded again up to that table, so it keeps
/// the scans that are there, as a cut inside a scan does; otherwise fails with libjpeg's message.
image decode_or_fail(decoder_state& s, byte_span data, const request& req, bool may_trim) {
    if (!req.strict && s.data_ended && may_trim) {
        const std::size_t clean_end = jpeg_complete_prefix(data);
        if (clean_end > 0 && clean_end < data.size()) {
            thread_slot().reset();
            return decode(data.first(clean_end), req, false);
        }
    }
    fail_and_reset(s, "");
}

image decode(byte_span data, const request& req, bool may_trim) {
    decoder_state& s = read_header(data, req.strict);
    const int full_w = static_cast<int>(s.cinfo.image_width);
    const int full_h = static_cast<int>(s.cinfo.image_height);
    check_pixels("jpeg", full_w, full_h, req.max_pixels);
    const crop_box box = req.crop != nullptr
                             ? stored_crop(*req.crop, req.orientation, full_w, full_h)
                             : crop_box{0, 0, full_w, full_h};

    // The box at 1/d, rounded outward: [floor(x / d), ceil((x + w) / d)); the whole image at
    // 1/d when there is no crop.
    const auto scaled_box = [&](int d) {
        const int x0 = box.x / d;
        const int y0 = box.y / d;
        const int x1 = (box.x + box.width + d - 1) / d;
        const int y1 = (box.y + box.height + d - 1) / d;
        return crop_box{x0, y0, x1 - x0, y1 - y0};
    };
    // The smallest power-of-two reduction that still covers the request: libjpeg-turbo then
    // runs a 4x4, 2x2 or 1x1 inverse DCT per block instead of 8x8 — most of the decode's work.
    // With a slack, a scale whose result comes at most that fraction under the target will do.
    int denom = 1;
    if (req.at_least.width > 0 && req.at_least.height > 0) {
        const auto need = [&](int target) {
            return std::max(1, static_cast<int>(std::ceil(target * (1.0 - req.slack) - 1e-9)));
        };
        const int need_w = need(req.at_least.width);
        const int need_h = need(req.at_least.height);
        for (int d : {8, 4, 2}) {
            const crop_box b = scaled_box(d);
            if (b.width >= need_w && b.height >= need_h) {
                denom = d;
                break;
            }
        }
    }
    const crop_box want = scaled_box(denom);
    const int out_w = scaled(full_w, denom);
    const int out_h = scaled(full_h, denom);

    const bool cmyk = is_cmyk(s.cinfo.jpeg_color_space);
    decode_plan plan;
    plan.denom = denom;
    plan.fast = req.fast;
    // CMYK has no conversion to RGB in libjpeg: decode to CMYK, convert below.
    plan.out_space = cmyk ? JCS_CMYK : color_space_of(req.format);
    // A region decodes a margin of one iMCU (16 pixels at most, at this scale) beyond its right
    // edge, and one pixel before its left edge (libjpeg rounds that down to an iMCU boundary):
    // fancy upsampling of subsampled chroma reads the neighbouring chroma sample, and at the
    // edges of what libjpeg decodes it repeats the edge sample instead, which would make the
    // region's outermost columns differ from the whole image's.
    const int margin = std::max(1, 16 / denom);
    const int left = req.crop != nullptr ? std::max(0, want.x - 1) : 0;
    const int right = req.crop != nullptr ? std::min(out_w, want.x + want.width + margin) : out_w;
    plan.x = static_cast<JDIMENSION>(left);
    plan.width = static_cast<JDIMENSION>(right - left);
    plan.skip_rows = static_cast<JDIMENSION>(want.y);
    if (!start(s, plan)) return decode_or_fail(s, data, req, may_trim);

    const int channels = static_cast<int>(s.cinfo.output_components);
    const pixel_format target = cmyk ? pixel_format::rgba : req.format;
    if (channels != channels_of(target) || static_cast<int>(s.cinfo.output_height) != out_h ||
        static_cast<int>(plan.x) > want.x ||
        static_cast<int>(plan.x + plan.width) < want.x + want.width) {
        thread_slot().reset();
        fail("jpeg", "unexpected decoder geometry");  // not expected from libjpeg-turbo 2.1
    }
    row_output o;
    o.rows = want.height;
    o.scratch_row = static_cast<std::size_t>(plan.width) * static_cast<std::size_t>(channels);
    o.from = static_cast<std::size_t>(want.x - static_cast<int>(plan.x)) *
             static_cast<std::size_t>(channels);
    o.drop_rows = plan.drop_rows;
    o.can_skip = plan.can_skip;
    // Resized here: the decoder's rows, whole, go to a buffer the resize reads the region from.
    const bool resize_here = req.resize_to.width > 0 && req.resize_to.height > 0 && !cmyk &&
                             req.resize_to != image_size{want.width, want.height};
    rows_buffer rows;
    image out;
    if (resize_here) {
        o.out = rows.get(o.scratch_row * static_cast<std::size_t>(want.height));
        o.row_bytes = o.scratch_row;
        o.direct = true;
    } else {
        out = image(want.width, want.height, target);
        o.out = out.data().data();
        o.row_bytes = out.row_bytes();
        o.direct = static_cast<int>(plan.x) == want.x && static_cast<int>(plan.width) == want.width;
    }
    // Direct: every row at once, as one jpeg_read_scanlines call can fill them.
    o.chunk = o.direct ? want.height : std::min(16, want.height);
    // The scratch rows are needed even when direct: the strict read of the last row uses one.
    std::vector<unsigned char> scratch(o.scratch_row *
                                       static_cast<std::size_t>(o.direct ? 1 : o.chunk));
    std::vector<JSAMPROW> pointers(static_cast<std::size_t>(o.chunk));
    o.scratch = scratch.data();
    o.pointers = pointers.data();
    if (!read_rows(s, o, req.strict, req.check_rest)) return decode_or_fail(s, data, req, may_trim);
    if (s.warned) thread_slot().reset();  // lenient: the image is kept, the decompressor is not
    if (resize_here) {
        const pixel_view region{o.out + o.from, o.scratch_row, want.width,
                                want.height,    channels,      o.out + rows.size()};
        if (req.into != nullptr) {
            resample_view_into(region, target, req.resize_to.width, req.resize_to.height,
                               req.interp, req.into);
            return image{};
        }
        return resample_view(region, target, req.resize_to.width, req.resize_to.height, req.interp);
    }
    if (!cmyk) return out;
    return cmyk_to(out, req.format);
}

}  // namespace

image_info probe_jpeg(byte_span data) {
    // Lenient: a header libjpeg warns about still has a size (decode_image decides).
    decoder_state& s = read_header(data, false);
    image_info info;
    info.format = "jpeg";
    info.width = static_cast<int>(s.cinfo.image_width);
    info.height = static_cast<int>(s.cinfo.image_height);
    const J_COLOR_SPACE space = s.cinfo.jpeg_color_space;
    info.channels = space == JCS_GRAYSCALE ? 1 : is_cmyk(space) ? 4 : 3;
    info.bit_depth = 8;
    info.orientation = jpeg_orientation(data);
    if (s.warned) thread_slot().reset();
    return info;
}

image decode_jpeg(byte_span data, const request& req) {
    return decode(data, req, true);
}

}  // namespace ferry::ops::codec
