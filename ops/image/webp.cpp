// SPDX-License-Identifier: Apache-2.0
/// \file
/// WebP (lossy, lossless, with alpha) through libwebp, decoding straight into the output image.
#include <webp/decode.h>

#include "codecs.hpp"

namespace ferry::ops::codec {
namespace {

const char* status_text(VP8StatusCode s) {
    switch (s) {
        case VP8_STATUS_OK:
            return "ok";
        case VP8_STATUS_OUT_OF_MEMORY:
            return "out of memory";
        case VP8_STATUS_INVALID_PARAM:
            return "invalid parameter";
        case VP8_STATUS_BITSTREAM_ERROR:
            return "corrupt bitstream";
        case VP8_STATUS_UNSUPPORTED_FEATURE:
            return "unsupported feature";
        case VP8_STATUS_SUSPENDED:
            return "suspended";
        case VP8_STATUS_USER_ABORT:
            return "aborted";
        case VP8_STATUS_NOT_ENOUGH_DATA:
            return "truncated data (not enough data)";
    }
    return "unknown error";
}

WebPBitstreamFeatures features_of(byte_span data) {
    WebPBitstreamFeatures f{};
    const VP8StatusCode s =
        WebPGetFeatures(reinterpret_cast<const std::uint8_t*>(data.data()), data.size(), &f);
    if (s != VP8_STATUS_OK) fail("webp", std::string("bad header: ") + status_text(s));
    if (f.has_animation != 0) fail("webp", "animated WebP is not supported");
    return f;
}

}  // namespace

image_info probe_webp(byte_span data) {
    const WebPBitstreamFeatures f = features_of(data);
    image_info info;
    info.format = "webp";
    info.width = f.width;
    info.height = f.height;
    info.channels = f.has_alpha != 0 ? 4 : 3;
    info.bit_depth = 8;
    return info;
}

image decode_webp(byte_span data, const request& req) {
    const WebPBitstreamFeatures f = features_of(data);
    check_pixels("webp", f.width, f.height, req.max_pixels);
    // Gray comes from RGB; everything else is decoded directly into its final layout.
    const pixel_format direct = req.format == pixel_format::gray ? pixel_format::rgb : req.format;
    image out(f.width, f.height, direct);

    WebPDecoderConfig config;
    if (WebPInitDecoderConfig(&config) == 0) fail("webp", "libwebp version mismatch");
    switch (direct) {
        case pixel_format::bgr:
            config.output.colorspace = MODE_BGR;
            break;
        case pixel_format::rgba:
            config.output.colorspace = MODE_RGBA;
            break;
        default:
            config.output.colorspace = MODE_RGB;
            break;
    }
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = out.data().data();
    config.output.u.RGBA.stride = static_cast<int>(out.row_bytes());
    config.output.u.RGBA.size = out.data().size();
    const VP8StatusCode s =
        WebPDecode(reinterpret_cast<const std::uint8_t*>(data.data()), data.size(), &config);
    WebPFreeDecBuffer(&config.output);  // external memory: frees nothing of ours
    if (s != VP8_STATUS_OK) fail("webp", status_text(s));
    return direct == req.format ? std::move(out) : convert(std::move(out), req.format);
}

}  // namespace ferry::ops::codec
