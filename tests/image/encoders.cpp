// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image tests' encoders: OpenCV's, libjpeg's (every subsampling, YCCK), libpng's classic API
/// and hand-assembled palette BMPs (see support.hpp).
#include <png.h>

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include <csetjmp>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <stdexcept>

#include "byte_order.hpp"
#include "support.hpp"

namespace ops_test {

file_bytes encode(const std::string& ext, const cv::Mat& m, const std::vector<int>& params) {
    std::vector<uchar> buf;
    if (!cv::imencode(ext, m, buf, params)) throw std::runtime_error("cv::imencode failed: " + ext);
    return {buf.begin(), buf.end()};
}

namespace {

/// A libjpeg compressor writing to memory. `compress` calls setjmp: it holds no object with a
/// destructor (libjpeg reports errors by longjmp).
struct jpeg_writer {
    jpeg_compress_struct c{};
    jpeg_error_mgr err{};
    std::jmp_buf jump{};
    char message[JMSG_LENGTH_MAX] = {};
    unsigned char* buf = nullptr;
    unsigned long size = 0;
};

void on_writer_error(j_common_ptr c) {
    auto* w = reinterpret_cast<jpeg_writer*>(reinterpret_cast<char*>(c) - offsetof(jpeg_writer, c));
    (*c->err->format_message)(c, w->message);
    std::longjmp(w->jump, 1);
}

bool compress(jpeg_writer& w, const cv::Mat& m, jpeg_subsampling sampling, int quality,
              const jpeg_layout& layout, jpeg_scan_info* script, int script_scans) {
    w.c.err = jpeg_std_error(&w.err);
    w.err.error_exit = on_writer_error;
    if (setjmp(w.jump)) return false;
    jpeg_create_compress(&w.c);
    jpeg_mem_dest(&w.c, &w.buf, &w.size);
    const bool cmyk = m.channels() == 4;
    w.c.image_width = static_cast<JDIMENSION>(m.cols);
    w.c.image_height = static_cast<JDIMENSION>(m.rows);
    w.c.input_components = cmyk ? 4 : 3;
    w.c.in_color_space = cmyk ? JCS_CMYK : JCS_EXT_BGR;
    jpeg_set_defaults(&w.c);
    if (sampling == jpeg_subsampling::gray) {
        jpeg_set_colorspace(&w.c, JCS_GRAYSCALE);
    } else if (cmyk) {
        jpeg_set_colorspace(&w.c, JCS_YCCK);  // with an Adobe marker, as Photoshop writes it
    }
    jpeg_set_quality(&w.c, quality, TRUE);
    w.c.dct_method = JDCT_ISLOW;
    // Luma's factors (and K's, in CMYK, as TurboJPEG lays them out); chroma 1x1.
    int h = 1;
    int v = 1;
    switch (sampling) {
        case jpeg_subsampling::s422:
            h = 2;
            break;
        case jpeg_subsampling::s420:
            h = v = 2;
            break;
        case jpeg_subsampling::s440:
            v = 2;
            break;
        case jpeg_subsampling::s411:
            h = 4;
            break;
        default:
            break;
    }
    for (int ci = 0; ci < w.c.num_components; ++ci) {
        const bool full = ci == 0 || ci == 3;
        w.c.comp_info[ci].h_samp_factor = full ? h : 1;
        w.c.comp_info[ci].v_samp_factor = full ? v : 1;
    }
    if (layout.progressive) jpeg_simple_progression(&w.c);
    if (script_scans > 0) {
        w.c.scan_info = script;
        w.c.num_scans = script_scans;
    }
    w.c.arith_code = layout.arithmetic ? TRUE : FALSE;
    if (layout.optimize) w.c.optimize_coding = TRUE;
    w.c.restart_interval = static_cast<unsigned int>(layout.restart_interval);
    jpeg_start_compress(&w.c, TRUE);
    while (w.c.next_scanline < w.c.image_height) {
        JSAMPROW row =
            const_cast<unsigned char*>(m.ptr<unsigned char>(static_cast<int>(w.c.next_scanline)));
        jpeg_write_scanlines(&w.c, &row, 1);
    }
    jpeg_finish_compress(&w.c);
    return true;
}

}  // namespace

file_bytes write_jpeg(const cv::Mat& m, jpeg_subsampling sampling, int quality) {
    return write_jpeg(m, sampling, quality, jpeg_layout{});
}

file_bytes write_jpeg(const cv::Mat& m, jpeg_subsampling sampling, int quality,
                      const jpeg_layout& layout) {
    std::vector<jpeg_scan_info> script;
    for (const jpeg_scan& s : layout.scans) {
        jpeg_scan_info i{};
        i.comps_in_scan = static_cast<int>(s.components.size());
        for (std::size_t k = 0; k < s.components.size() && k < MAX_COMPS_IN_SCAN; ++k) {
            i.component_index[k] = s.components[k];
        }
        i.Ss = s.ss;
        i.Se = s.se;
        i.Ah = s.ah;
        i.Al = s.al;
        script.push_back(i);
    }
    jpeg_writer w;
    const bool ok =
        compress(w, m, sampling, quality, layout, script.data(), static_cast<int>(script.size()));
    file_bytes out;
    if (ok) out.assign(w.buf, w.buf + w.size);
    const std::string why = w.message;
    jpeg_destroy_compress(&w.c);
    std::free(w.buf);
    if (!ok) throw std::runtime_error("libjpeg compression failed: " + why);
    return out;
}

file_bytes write_png(int width, int height, int color_type, int bit_depth,
                     const std::vector<std::uint8_t>& rows, int channels,
                     const std::vector<std::array<std::uint8_t, 3>>& palette,
                     const std::vector<std::uint8_t>& trns, bool interlaced) {
    const std::size_t row_bytes =
        (static_cast<std::size_t>(width) * static_cast<std::size_t>(channels * bit_depth) + 7) / 8;
    if (rows.size() != row_bytes * static_cast<std::size_t>(height))
        throw std::logic_error("write_png: rows have the wrong size");
    std::vector<png_color> plte;
    for (const auto& p : palette) plte.push_back({p[0], p[1], p[2]});
    std::vector<png_bytep> row_ptrs;
    for (int y = 0; y < height; ++y)
        row_ptrs.push_back(
            const_cast<png_bytep>(rows.data() + static_cast<std::size_t>(y) * row_bytes));

    file_bytes out;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        throw std::runtime_error("libpng failed to write the test PNG");
    }
    png_set_write_fn(
        png, &out,
        [](png_structp p, png_bytep data, png_size_t n) {
            auto* o = static_cast<file_bytes*>(png_get_io_ptr(p));
            o->insert(o->end(), data, data + n);
        },
        nullptr);
    png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height),
                 bit_depth, color_type, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (!plte.empty()) png_set_PLTE(png, info, plte.data(), static_cast<int>(plte.size()));
    if (!trns.empty()) {
        png_set_tRNS(png, info, const_cast<png_bytep>(trns.data()), static_cast<int>(trns.size()),
                     nullptr);
    }
    png_write_info(png, info);
    png_write_image(png, row_ptrs.data());
    png_write_end(png, nullptr);
    png_destroy_write_struct(&png, &info);
    return out;
}

file_bytes write_palette_bmp(int width, int height, int bits,
                             const std::vector<std::uint8_t>& indices,
                             const std::vector<std::array<std::uint8_t, 3>>& palette_rgb) {
    const std::size_t colours = std::size_t{1} << bits;
    const std::size_t row_bytes = ((static_cast<std::size_t>(width) * bits + 31) / 32) * 4;
    const std::size_t header = 14 + 40 + colours * 4;
    file_bytes out(header + row_bytes * static_cast<std::size_t>(height), 0);
    out[0] = 'B';
    out[1] = 'M';
    put_le32(out, 2, static_cast<std::uint32_t>(out.size()));
    put_le32(out, 10, static_cast<std::uint32_t>(header));
    put_le32(out, 14, 40);
    put_le32(out, 18, static_cast<std::uint32_t>(width));
    put_le32(out, 22, static_cast<std::uint32_t>(height));  // positive: bottom-up
    out[26] = 1;                                            // planes
    out[28] = static_cast<std::uint8_t>(bits);
    put_le32(out, 34, static_cast<std::uint32_t>(row_bytes * static_cast<std::size_t>(height)));
    put_le32(out, 46, static_cast<std::uint32_t>(colours));
    for (std::size_t i = 0; i < palette_rgb.size() && i < colours; ++i) {
        out[54 + 4 * i + 0] = palette_rgb[i][2];  // stored B, G, R, 0
        out[54 + 4 * i + 1] = palette_rgb[i][1];
        out[54 + 4 * i + 2] = palette_rgb[i][0];
    }
    for (int y = 0; y < height; ++y) {
        std::uint8_t* row =
            out.data() + header + row_bytes * static_cast<std::size_t>(height - 1 - y);
        for (int x = 0; x < width; ++x) {
            const std::uint8_t v = indices[static_cast<std::size_t>(y) * width + x];
            const int bit = x * bits;
            row[bit / 8] |= static_cast<std::uint8_t>(v << (8 - bits - bit % 8));
        }
    }
    return out;
}

}  // namespace ops_test
