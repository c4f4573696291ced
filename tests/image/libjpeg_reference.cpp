// SPDX-License-Identifier: Apache-2.0
/// \file
/// libjpeg's decode through its API (libjpeg_reference.hpp): a chunked source, errors and
/// warnings recorded instead of exiting.
#include "libjpeg_reference.hpp"

// jpeglib.h needs FILE and size_t first.
#include <cstddef>
#include <cstdio>

#include <jerror.h>
#include <jpeglib.h>

#include <csetjmp>

namespace ops_test {
namespace {

/// A libjpeg source that hands out `chunk` bytes per fill_input_buffer call; at the end, as
/// jpeg_mem_src, a warning and a fake EOI marker. With fewer than 512 bytes in its buffer,
/// libjpeg-turbo's Huffman decoder never takes its fast path.
struct chunked_source {
    jpeg_source_mgr pub{};
    const JOCTET* data = nullptr;
    std::size_t size = 0;
    std::size_t pos = 0;
    std::size_t chunk = 1;
};

void no_op(j_decompress_ptr /*d*/) {}

boolean fill_chunk(j_decompress_ptr d) {
    static const JOCTET fake_eoi[2] = {0xFF, JPEG_EOI};
    auto* s = reinterpret_cast<chunked_source*>(d->src);
    if (s->pos >= s->size) {
        WARNMS(d, JWRN_JPEG_EOF);
        s->pub.next_input_byte = fake_eoi;
        s->pub.bytes_in_buffer = 2;
        return TRUE;
    }
    const std::size_t n = std::min(s->chunk, s->size - s->pos);
    s->pub.next_input_byte = s->data + s->pos;
    s->pub.bytes_in_buffer = n;
    s->pos += n;
    return TRUE;
}

void skip_chunks(j_decompress_ptr d, long count) {
    if (count <= 0) return;
    auto* s = reinterpret_cast<chunked_source*>(d->src);
    auto n = static_cast<std::size_t>(count);
    while (n > s->pub.bytes_in_buffer) {
        n -= s->pub.bytes_in_buffer;
        (void)fill_chunk(d);
    }
    s->pub.next_input_byte += n;
    s->pub.bytes_in_buffer -= n;
}

/// libjpeg decoding on its own, lenient: warnings are counted (and the first kept), not fatal.
struct reference_state {
    jpeg_decompress_struct d{};
    jpeg_error_mgr err{};
    std::jmp_buf jump{};
    chunked_source source;
    int warnings = 0;
    int first_warning = 0;
};

reference_state& state_of(j_common_ptr c) {
    return *reinterpret_cast<reference_state*>(reinterpret_cast<char*>(c) -
                                               offsetof(reference_state, d));
}
void on_error(j_common_ptr c) {
    std::longjmp(state_of(c).jump, 1);
}
void on_message(j_common_ptr c, int level) {
    if (level >= 0) return;
    reference_state& s = state_of(c);
    if (s.warnings++ == 0) s.first_warning = c->err->msg_code;
}

bool start(reference_state& s, int denom) {
    if (setjmp(s.jump)) return false;
    jpeg_read_header(&s.d, TRUE);
    s.d.scale_num = 1;
    s.d.scale_denom = static_cast<unsigned int>(denom);
    s.d.out_color_space = JCS_RGB;
    s.d.dct_method = JDCT_ISLOW;
    s.d.do_fancy_upsampling = TRUE;
    jpeg_start_decompress(&s.d);
    return true;
}

bool read(reference_state& s, unsigned char* out, std::size_t row_bytes, bool finish) {
    if (setjmp(s.jump)) return false;
    while (s.d.output_scanline < s.d.output_height) {
        JSAMPROW row = out + row_bytes * s.d.output_scanline;
        jpeg_read_scanlines(&s.d, &row, 1);
    }
    if (finish) {
        jpeg_finish_decompress(&s.d);
    } else {
        jpeg_abort_decompress(&s.d);
    }
    return true;
}

}  // namespace

reference libjpeg_decode(const file_bytes& f, int denom, std::size_t chunk, bool finish) {
    reference_state s;
    s.d.err = jpeg_std_error(&s.err);
    s.err.error_exit = on_error;
    s.err.emit_message = on_message;
    jpeg_create_decompress(&s.d);
    if (chunk == 0) {
        jpeg_mem_src(&s.d, f.data(), static_cast<unsigned long>(f.size()));
    } else {
        s.source.data = f.data();
        s.source.size = f.size();
        s.source.chunk = chunk;
        s.source.pub.init_source = no_op;
        s.source.pub.fill_input_buffer = fill_chunk;
        s.source.pub.skip_input_data = skip_chunks;
        s.source.pub.resync_to_restart = jpeg_resync_to_restart;
        s.source.pub.term_source = no_op;
        s.d.src = &s.source.pub;
    }
    reference out;
    if (start(s, denom)) {
        out.pixels.create(static_cast<int>(s.d.output_height), static_cast<int>(s.d.output_width),
                          CV_8UC3);
        if (!read(s, out.pixels.data, out.pixels.step, finish)) out.pixels = cv::Mat();
    }
    jpeg_destroy_decompress(&s.d);
    out.warnings = s.warnings;
    out.first_warning = s.first_warning;
    return out;
}

}  // namespace ops_test
