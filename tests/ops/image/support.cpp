// SPDX-License-Identifier: Apache-2.0
/// \file
/// The image tests' helpers: content, encoders, reference decoding, comparisons (see support.hpp).
#include "support.hpp"

#include <png.h>

// jpeglib.h needs FILE and size_t declared first.
#include <cstddef>
#include <cstdio>

#include <jpeglib.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numbers>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <stdexcept>

namespace ops_test {

namespace {

std::uint8_t clamp_u8(double v) {
    return static_cast<std::uint8_t>(std::clamp(std::lround(v), 0L, 255L));
}

/// One colour sample of the photo-like content at (x, y), in [0, 255] before noise.
double smooth_value(int x, int y, int width, int height, int channel, double phase) {
    const double fx = static_cast<double>(x) / width;
    const double fy = static_cast<double>(y) / height;
    // Channels ramp along different axes (0: down, 1: right, 2: diagonal), so that any of the
    // eight EXIF orientations changes the picture.
    const double ramp = channel == 0 ? fy : channel == 1 ? fx : 0.6 * fx + 0.4 * (1.0 - fy);
    return 40.0 + 150.0 * ramp + 30.0 * std::sin(5.0 * fx + 3.0 * fy + phase);
}

void put_be16(file_bytes& out, std::size_t at, std::uint32_t v) {
    out[at] = static_cast<std::uint8_t>(v >> 8);
    out[at + 1] = static_cast<std::uint8_t>(v);
}

void put_le32(file_bytes& out, std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint32_t crc32(const std::uint8_t* p, std::size_t n) {
    std::uint32_t c = 0xFFFFFFFFU;
    for (std::size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320U & (0U - (c & 1U)));
    }
    return c ^ 0xFFFFFFFFU;
}

}  // namespace

cv::Mat photo(int width, int height, int channels, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> phase(0.0, 2.0 * std::numbers::pi);
    std::normal_distribution<double> noise(0.0, 2.0);
    const double phases[3] = {phase(rng), phase(rng), phase(rng)};
    cv::Mat m(height, width, CV_8UC(channels));
    for (int y = 0; y < height; ++y) {
        auto* row = m.ptr<std::uint8_t>(y);
        for (int x = 0; x < width; ++x) {
            for (int c = 0; c < channels; ++c) {
                double v;
                if (channels == 1) {
                    v = 0.5 * (smooth_value(x, y, width, height, 1, phases[0]) +
                               smooth_value(x, y, width, height, 0, phases[1]));
                } else if (c < 3) {
                    v = smooth_value(x, y, width, height, c, phases[c]);
                } else {
                    // Alpha: a smooth ramp that reaches both 0 and 255.
                    v = 255.0 * (1.2 * x / (width - 1) - 0.1);
                }
                if (c < 3) v += noise(rng);
                row[x * channels + c] = clamp_u8(v);
            }
        }
    }
    return m;
}

cv::Mat photo16(int width, int height, std::uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> phase(0.0, 2.0 * std::numbers::pi);
    std::normal_distribution<double> noise(0.0, 300.0);
    const double phases[3] = {phase(rng), phase(rng), phase(rng)};
    cv::Mat m(height, width, CV_16UC3);
    for (int y = 0; y < height; ++y) {
        auto* row = m.ptr<std::uint16_t>(y);
        for (int x = 0; x < width; ++x) {
            for (int c = 0; c < 3; ++c) {
                const double v =
                    257.0 * smooth_value(x, y, width, height, c, phases[c]) + noise(rng);
                row[x * 3 + c] = static_cast<std::uint16_t>(std::clamp(std::lround(v), 0L, 65535L));
            }
        }
    }
    return m;
}

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

bool compress(jpeg_writer& w, const cv::Mat& m, jpeg_subsampling sampling, int quality) {
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
    jpeg_writer w;
    const bool ok = compress(w, m, sampling, quality);
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

file_bytes exif_tiff(std::uint32_t value, const exif_layout& layout) {
    const bool big = layout.big_endian;
    const auto u16 = [big](std::uint32_t v) {
        return big ? file_bytes{static_cast<std::uint8_t>(v >> 8), static_cast<std::uint8_t>(v)}
                   : file_bytes{static_cast<std::uint8_t>(v), static_cast<std::uint8_t>(v >> 8)};
    };
    const auto u32 = [&](std::uint32_t v) {
        file_bytes hi = u16(v >> 16);
        file_bytes lo = u16(v & 0xFFFFU);
        file_bytes out = big ? hi : lo;
        const file_bytes& second = big ? lo : hi;
        out.insert(out.end(), second.begin(), second.end());
        return out;
    };
    const auto cat = [](file_bytes a, const file_bytes& b) {
        a.insert(a.end(), b.begin(), b.end());
        return a;
    };
    // An IFD entry: its value's bytes as stored (inline when at most 4, else after the IFD).
    struct entry {
        std::uint32_t tag;
        std::uint32_t type;
        std::uint32_t count;
        file_bytes value;
        bool sub_ifd = false;  // the value is the offset of the Exif sub-IFD
    };
    const file_bytes orientation = layout.type == 4 ? u32(value) : u16(value);
    std::vector<entry> ifd0;
    if (layout.camera) {
        const file_bytes make{'C', 'a', 'n', 'o', 'n', 0};
        const file_bytes model{'X', '1', '0', 0};
        const file_bytes dpi = cat(u32(72), u32(1));
        ifd0 = {{0x010F, 2, 6, make},
                {0x0110, 2, 4, model},
                {0x0112, static_cast<std::uint32_t>(layout.type), 1, orientation},
                {0x011A, 5, 1, dpi},
                {0x011B, 5, 1, dpi},
                {0x0128, 3, 1, u16(2)},
                {0x8769, 4, 1, {}, true}};
    } else {
        ifd0 = {{0x0112, static_cast<std::uint32_t>(layout.type), 1, orientation}};
    }
    // The header, IFD0, its out-of-line values, then (camera) the Exif sub-IFD with one entry.
    const std::size_t ifd_size = 2 + ifd0.size() * 12 + 4;
    file_bytes out = {static_cast<std::uint8_t>(big ? 'M' : 'I'),
                      static_cast<std::uint8_t>(big ? 'M' : 'I')};
    out = cat(out, u16(42));
    out = cat(out, u32(8));
    file_bytes values;
    std::size_t values_at = 8 + ifd_size;
    for (const entry& e : ifd0) {
        if (e.value.size() > 4) values_at += e.value.size();
    }
    out = cat(out, u16(static_cast<std::uint32_t>(ifd0.size())));
    for (const entry& e : ifd0) {
        out = cat(out, u16(e.tag));
        out = cat(out, u16(e.type));
        out = cat(out, u32(e.count));
        if (e.sub_ifd) {
            out = cat(out, u32(static_cast<std::uint32_t>(values_at)));
        } else if (e.value.size() > 4) {
            out = cat(out, u32(static_cast<std::uint32_t>(8 + ifd_size + values.size())));
            values = cat(values, e.value);
        } else {
            file_bytes inline_value = e.value;
            inline_value.resize(4, 0);  // left-justified
            out = cat(out, inline_value);
        }
    }
    out = cat(out, u32(0));  // no IFD1
    out = cat(out, values);
    if (layout.camera) {  // the Exif sub-IFD: ExifVersion "0230"
        out = cat(out, u16(1));
        out = cat(out, cat(cat(u16(0x9000), u16(7)), u32(4)));
        out = cat(out, file_bytes{'0', '2', '3', '0'});
        out = cat(out, u32(0));
    }
    return out;
}

file_bytes with_exif_app1(const file_bytes& jpeg, const file_bytes& tiff, bool after_app0) {
    std::size_t at = 2;  // after SOI
    if (after_app0) {
        if (jpeg.size() < 6 || jpeg[2] != 0xFF || jpeg[3] != 0xE0) {
            throw std::logic_error("with_exif_app1: the JPEG has no APP0 after SOI");
        }
        at += 2 + ((std::size_t{jpeg[4]} << 8) | jpeg[5]);
    }
    const char exif_id[6] = {'E', 'x', 'i', 'f', '\0', '\0'};
    const std::size_t len = 2 + sizeof exif_id + tiff.size();
    file_bytes out(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(at));
    out.push_back(0xFF);
    out.push_back(0xE1);
    out.push_back(static_cast<std::uint8_t>(len >> 8));
    out.push_back(static_cast<std::uint8_t>(len));
    out.insert(out.end(), exif_id, exif_id + sizeof exif_id);
    out.insert(out.end(), tiff.begin(), tiff.end());
    out.insert(out.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(at), jpeg.end());
    return out;
}

file_bytes with_exif_orientation(const file_bytes& jpeg, int orientation, bool big_endian) {
    return with_exif_app1(
        jpeg, exif_tiff(static_cast<std::uint32_t>(orientation), {.big_endian = big_endian}));
}

file_bytes with_png_exif(const file_bytes& png, const file_bytes& body, bool after_idat) {
    // After the signature and IHDR (8 + 25 bytes), or before the 12-byte IEND at the end.
    const std::size_t at = after_idat ? png.size() - 12 : 8 + 25;
    file_bytes chunk(8);
    put_be16(chunk, 0, static_cast<std::uint32_t>(body.size() >> 16));
    put_be16(chunk, 2, static_cast<std::uint32_t>(body.size() & 0xFFFFU));
    std::memcpy(chunk.data() + 4, "eXIf", 4);
    chunk.insert(chunk.end(), body.begin(), body.end());
    const std::uint32_t crc = crc32(chunk.data() + 4, chunk.size() - 4);
    for (int i = 0; i < 4; ++i) chunk.push_back(static_cast<std::uint8_t>(crc >> (24 - 8 * i)));
    file_bytes out(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(at));
    out.insert(out.end(), chunk.begin(), chunk.end());
    out.insert(out.end(), png.begin() + static_cast<std::ptrdiff_t>(at), png.end());
    return out;
}

cv::Mat oriented(const cv::Mat& stored, int orientation) {
    cv::Mat out;
    switch (orientation) {
        case 2:
            cv::flip(stored, out, 1);
            break;
        case 3:
            cv::rotate(stored, out, cv::ROTATE_180);
            break;
        case 4:
            cv::flip(stored, out, 0);
            break;
        case 5:
            cv::transpose(stored, out);
            break;
        case 6:
            cv::rotate(stored, out, cv::ROTATE_90_CLOCKWISE);
            break;
        case 7: {
            cv::Mat t;
            cv::transpose(stored, t);
            cv::rotate(t, out, cv::ROTATE_180);
            break;
        }
        case 8:
            cv::rotate(stored, out, cv::ROTATE_90_COUNTERCLOCKWISE);
            break;
        default:
            out = stored.clone();
    }
    return out;
}

std::size_t jpeg_header_length(const file_bytes& jpeg) {
    std::size_t i = 2;
    while (i + 4 <= jpeg.size() && jpeg[i] == 0xFF) {
        const std::size_t len = (std::size_t{jpeg[i + 2]} << 8) | jpeg[i + 3];
        if (jpeg[i + 1] == 0xDA) return i + 2 + len;
        i += 2 + len;
    }
    throw std::logic_error("jpeg_header_length: no SOS");
}

file_bytes jpeg_declaring(file_bytes jpeg, int width, int height) {
    std::size_t i = 2;
    while (i + 9 < jpeg.size() && jpeg[i] == 0xFF) {
        const std::uint8_t marker = jpeg[i + 1];
        const std::size_t len = (std::size_t{jpeg[i + 2]} << 8) | jpeg[i + 3];
        if (marker >= 0xC0 && marker <= 0xC2) {
            put_be16(jpeg, i + 5, static_cast<std::uint32_t>(height));
            put_be16(jpeg, i + 7, static_cast<std::uint32_t>(width));
            return jpeg;
        }
        i += 2 + len;
    }
    throw std::logic_error("jpeg_declaring: no SOF marker");
}

file_bytes png_declaring(file_bytes png, std::uint32_t width, std::uint32_t height) {
    // Signature (8), then the IHDR chunk: length (4), "IHDR" (4), width, height, ..., CRC.
    for (int i = 0; i < 4; ++i) {
        png[16 + i] = static_cast<std::uint8_t>(width >> (24 - 8 * i));
        png[20 + i] = static_cast<std::uint8_t>(height >> (24 - 8 * i));
    }
    const std::uint32_t crc = crc32(png.data() + 12, 4 + 13);
    for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<std::uint8_t>(crc >> (24 - 8 * i));
    return png;
}

file_bytes webp_lossless_declaring(file_bytes webp, int width, int height) {
    // RIFF (12), "VP8L" + size (8), signature 0x2f, then 14 bits width-1, 14 bits height-1.
    if (std::memcmp(webp.data() + 12, "VP8L", 4) != 0 || webp[20] != 0x2F)
        throw std::logic_error("webp_lossless_declaring: not a simple lossless WebP");
    std::uint32_t bits = 0;
    for (int i = 0; i < 4; ++i) bits |= std::uint32_t{webp[21 + i]} << (8 * i);
    bits = (bits & 0xF0000000U) | static_cast<std::uint32_t>(width - 1) |
           (static_cast<std::uint32_t>(height - 1) << 14);
    put_le32(webp, 21, bits);
    return webp;
}

file_bytes bmp_declaring(file_bytes bmp, std::int32_t width, std::int32_t height) {
    put_le32(bmp, 18, static_cast<std::uint32_t>(width));
    put_le32(bmp, 22, static_cast<std::uint32_t>(height));
    return bmp;
}

cv::Mat reference_decode(const file_bytes& f, int flags) {
    const cv::Mat raw(1, static_cast<int>(f.size()), CV_8U, const_cast<std::uint8_t*>(f.data()));
    const cv::Mat m = cv::imdecode(raw, flags);
    if (m.empty()) throw std::runtime_error("OpenCV could not decode a test file");
    return swap_red_blue(m);
}

cv::Mat swap_red_blue(const cv::Mat& m) {
    cv::Mat out;
    if (m.channels() == 3) {
        cv::cvtColor(m, out, cv::COLOR_BGR2RGB);
    } else if (m.channels() == 4) {
        cv::cvtColor(m, out, cv::COLOR_BGRA2RGBA);
    } else {
        out = m.clone();
    }
    return out;
}

cv::Mat to_mat(const ferry::image& img) {
    if (img.empty()) return {};
    const cv::Mat view(img.height(), img.width(), CV_8UC(img.channels()),
                       const_cast<std::uint8_t*>(img.data().data()), img.row_bytes());
    return view.clone();
}

ferry::image to_image(const cv::Mat& m, ferry::pixel_format format) {
    ferry::image img(m.cols, m.rows, format);
    if (m.type() != CV_8UC(img.channels())) throw std::logic_error("to_image: channel mismatch");
    for (int y = 0; y < m.rows; ++y) {
        std::memcpy(img.data().data() + static_cast<std::size_t>(y) * img.row_bytes(), m.ptr(y),
                    img.row_bytes());
    }
    return img;
}

double mean_abs_diff(const cv::Mat& a, const cv::Mat& b) {
    if (a.size() != b.size() || a.type() != b.type() || a.empty())
        return std::numeric_limits<double>::infinity();
    return cv::norm(a, b, cv::NORM_L1) / static_cast<double>(a.total() * a.channels());
}

double max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
    if (a.size() != b.size() || a.type() != b.type() || a.empty())
        return std::numeric_limits<double>::infinity();
    return cv::norm(a, b, cv::NORM_INF);
}

void check_pixels(const ferry::image& got, const cv::Mat& want, double mean_tol, double max_tol,
                  const std::string& what) {
    BOOST_TEST_CONTEXT(what) {
        BOOST_TEST(got.width() == want.cols);
        BOOST_TEST(got.height() == want.rows);
        BOOST_TEST(got.channels() == want.channels());
        if (got.size() != ferry::image_size{want.cols, want.rows} ||
            got.channels() != want.channels())
            return;
        BOOST_TEST(got.data().size() == want.total() * want.elemSize());
        const cv::Mat g = to_mat(got);
        const double mean = mean_abs_diff(g, want);
        BOOST_TEST(mean <= mean_tol, "mean abs diff " << mean << " > " << mean_tol);
        if (max_tol >= 0) {
            const double worst = max_abs_diff(g, want);
            BOOST_TEST(worst <= max_tol, "max abs diff " << worst << " > " << max_tol);
        }
    }
}

}  // namespace ops_test
