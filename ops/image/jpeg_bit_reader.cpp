// SPDX-License-Identifier: Apache-2.0
/// \file
/// The parts of ferry's Huffman bit reader (jpeg_bit_reader.hpp) that run per refill from a
/// byte near 0xFF, per restart interval and per scan.
#include "jpeg_bit_reader.hpp"

namespace ferry::ops::codec::jpeg {
namespace {

/// The next byte of the source, asking it for more when its buffer is used up (the memory
/// source then warns JWRN_JPEG_EOF and gives a fake EOI marker). -1 when it has none.
int source_byte(reader_t& r, j_decompress_ptr cinfo) {
    if (r.next == r.end) {
        cinfo->src->next_input_byte = r.next;
        cinfo->src->bytes_in_buffer = 0;
        if ((*cinfo->src->fill_input_buffer)(cinfo) == FALSE || cinfo->src->bytes_in_buffer == 0) {
            return -1;
        }
        r.next = cinfo->src->next_input_byte;
        r.end = r.next + cinfo->src->bytes_in_buffer;
        r.fast_end = r.next;  // no 8-byte loads from a source's refilled buffer
    }
    return *r.next++;
}

/// libjpeg's next_marker: the next marker's code, skipping (and counting in `discarded`)
/// anything else; -1 when the source has nothing more.
int next_marker(reader_t& r, j_decompress_ptr cinfo, unsigned int& discarded) {
    for (;;) {
        int c = source_byte(r, cinfo);
        while (c != 0xFF) {
            if (c < 0) return -1;
            ++discarded;
            c = source_byte(r, cinfo);
        }
        do {
            c = source_byte(r, cinfo);
        } while (c == 0xFF);
        if (c != 0) return c;
        discarded += 2;  // 0xFF 0x00: data, not a marker
    }
}

/// Drops the bits left in `r` and reads on to the next marker (cinfo->unread_marker, unless
/// libjpeg holds one already): the whole bytes passed over, which are extraneous data.
unsigned int drop_to_marker(reader_t& r, j_decompress_ptr cinfo) {
    const int real = r.at_marker ? r.bits - r.fake : r.bits;
    unsigned int discarded = real > 0 ? static_cast<unsigned int>(real) / 8 : 0;
    r.acc = 0;
    r.bits = 0;
    r.fake = 0;
    if (cinfo->unread_marker == 0) {
        const int c = next_marker(r, cinfo, discarded);
        if (c > 0) cinfo->unread_marker = c;
    }
    return discarded;
}

}  // namespace

/// 0xFF 0x00 is a 0xFF byte (after any number of padding 0xFF), 0xFF then anything else is a
/// marker, which ends the data: libjpeg gets it as `unread_marker`, and zeros follow.
reader_t refill_slow(reader_t r, j_decompress_ptr cinfo) {
    while (r.bits <= 56) {
        if (r.at_marker) {
            r.bits += 8;
            r.fake += 8;
            continue;
        }
        int c = source_byte(r, cinfo);
        if (c == 0xFF) {
            do {
                c = source_byte(r, cinfo);
            } while (c == 0xFF);
            if (c > 0) cinfo->unread_marker = c;
            c = c == 0 ? 0xFF : -1;  // a data byte, or the end of the data
        }
        if (c < 0) {
            r.at_marker = true;
            r.fast_end = r.next;
            // Nothing but zeros below the valid bits from here on.
            r.acc = r.bits == 0 ? 0 : r.acc & (~std::uint64_t{0} << (64 - r.bits));
            continue;
        }
        r.acc |= static_cast<std::uint64_t>(c) << (56 - r.bits);
        r.bits += 8;
    }
    return r;
}

reader_t restart(huffman_decoder& h, reader_t r, j_decompress_ptr cinfo) {
    const unsigned int discarded = drop_to_marker(r, cinfo);
    if (discarded != 0) {
        sync_source(r, cinfo);
        WARNMS2(cinfo, JWRN_EXTRANEOUS_DATA, static_cast<int>(discarded), cinfo->unread_marker);
    }
    if (cinfo->unread_marker == JPEG_RST0 + h.next_restart) {
        cinfo->unread_marker = 0;
    } else {
        sync_source(r, cinfo);
        (void)(*cinfo->src->resync_to_restart)(cinfo, h.next_restart);
        r.next = cinfo->src->next_input_byte;
        r.end = r.next + cinfo->src->bytes_in_buffer;
    }
    h.next_restart = (h.next_restart + 1) & 7;
    for (int& v : h.last_dc) v = 0;
    h.eob_run = 0;
    h.restarts_to_go = cinfo->restart_interval;
    if (cinfo->unread_marker == 0) {
        // On with the next interval's data (after a marker it stays out: zeros, warned once).
        h.pub.insufficient_data = FALSE;
        r.at_marker = false;
        r.fast_end = r.end;
    } else {
        r.at_marker = true;
        r.fast_end = r.next;
    }
    sync_source(r, cinfo);
    return r;
}

/// libjpeg's marker reader takes over after the scan's last MCU, and its next_marker warns about
/// bytes before the marker that follows (JWRN_EXTRANEOUS_DATA). Those it sees are the ones its own
/// look-ahead (up to 7 bytes) has not read; this reader reads further ahead, and would hide what
/// libjpeg reports. So the whole bytes left in the bit buffer and any before the next marker are
/// counted here. A valid scan leaves only the padding bits of its last byte: this warns wherever
/// libjpeg does, and also about the few (up to 6 in the tests) that libjpeg-turbo's look-ahead
/// swallows silently.
reader_t end_scan(reader_t r, j_decompress_ptr cinfo) {
    const unsigned int discarded = drop_to_marker(r, cinfo);
    // Nothing more is read: should libjpeg ask for another block, it gets zero bits.
    r.at_marker = true;
    r.fast_end = r.next;
    sync_source(r, cinfo);
    if (discarded != 0) {
        WARNMS2(cinfo, JWRN_EXTRANEOUS_DATA, static_cast<int>(discarded), cinfo->unread_marker);
    }
    return r;
}

void reset_scan(huffman_decoder& h, j_decompress_ptr cinfo) {
    h.pub.insufficient_data = FALSE;
    h.mcus_left = std::uint64_t{cinfo->MCUs_per_row} * cinfo->MCU_rows_in_scan;
    h.reader = {};
    h.reader.next = cinfo->src->next_input_byte;
    h.reader.end = h.reader.next + cinfo->src->bytes_in_buffer;
    h.reader.fast_end = h.reader.end;
    for (int& v : h.last_dc) v = 0;
    h.eob_run = 0;
    h.restarts_to_go = cinfo->restart_interval;
    h.next_restart = 0;  // as libjpeg's marker reader sets it at each SOS
}

}  // namespace ferry::ops::codec::jpeg
