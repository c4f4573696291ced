// SPDX-License-Identifier: Apache-2.0
/// \file
/// EXIF orientation: where a JPEG (APP1) and a PNG (eXIf) keep their EXIF data, and the
/// orientation tag of its TIFF structure. Internal to ops/.
#pragma once

#include "codecs.hpp"

namespace ferry::ops::codec {

/// The orientation tag (0x0112) of IFD0 of a TIFF structure (what an EXIF block holds): either
/// byte order, the tag anywhere among IFD0's entries, as a SHORT or a LONG. 1 (as stored) when
/// the tag is absent, of another type, out of range (0, or 9 and above: not a defined
/// orientation) or the structure is truncated or damaged: metadata that cannot be read never
/// fails a decode.
int tiff_orientation(byte_span tiff) noexcept;

/// The EXIF orientation of a JPEG: the first APP1 segment holding "Exif\0\0" before the image
/// data (after JFIF's APP0 or any other segments); 1 when absent or unreadable.
int jpeg_orientation(byte_span data) noexcept;

/// The EXIF orientation of a PNG: its eXIf chunk, before or after the image data (PNG 1.5's
/// extension; a block that starts with JPEG's "Exif\0\0" is read too); 1 when absent or
/// unreadable.
int png_orientation(byte_span data) noexcept;

}  // namespace ferry::ops::codec
