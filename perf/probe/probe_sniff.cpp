// SPDX-License-Identifier: Apache-2.0
/// \file
/// ferry-probe: what a file is, from its first bytes (magic numbers), not its name. The extension
/// only breaks ties the bytes leave open (Matroska, Ogg, MP4 and ASF hold video or audio alone)
/// and names files whose bytes are not recognised (a damaged `.jpg` is still an image, which
/// then fails to decode and is reported).

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "probe.hpp"

namespace fs = std::filesystem;

namespace probe {
namespace {

using head_view = std::span<const unsigned char>;

bool at(head_view h, std::size_t pos, std::string_view magic) {
    return h.size() >= pos + magic.size() &&
           std::memcmp(h.data() + pos, magic.data(), magic.size()) == 0;
}

bool one_of(std::string_view ext, std::initializer_list<std::string_view> list) {
    return std::find(list.begin(), list.end(), ext) != list.end();
}

file_kind image_kind(const char* f) {
    return {media::image, f};
}
file_kind video_kind(const char* f) {
    return {media::video, f};
}
file_kind audio_kind(const char* f) {
    return {media::audio, f};
}
/// Recognised, but not something ferry decodes.
file_kind unsupported(const char* why) {
    return {media::other, why};
}

/// Audio-only files in containers that also hold video, by their usual extensions.
bool audio_extension(std::string_view ext) {
    return one_of(ext, {".m4a", ".m4b", ".m4p", ".mka", ".weba", ".oga", ".ogg", ".opus", ".spx",
                        ".wma", ".aac"});
}

/// MPEG-1/2 audio (layers II and III) or AAC in ADTS: an 11-bit frame sync and valid header
/// fields. Layer I (rare) is left to the extension: its first bytes (FF FE, FF FF) are also a
/// UTF-16 byte order mark and plain 0xFF fill.
file_kind mpeg_audio_frame(head_view h) {
    if (h.size() < 4 || h[0] != 0xFF || (h[1] & 0xE0) != 0xE0) return {};
    if ((h[1] & 0xF6) == 0xF0) return audio_kind("aac (adts)");  // MPEG-4 or -2 ADTS, layer 00
    const int version = (h[1] >> 3) & 3;
    const int layer = (h[1] >> 1) & 3;
    const int bitrate = h[2] >> 4;
    const int rate = (h[2] >> 2) & 3;
    if (version == 1 || layer == 0 || layer == 3 || bitrate == 15 || rate == 3) return {};
    return audio_kind("mpeg audio");
}

/// A start code (00 00 01 or 00 00 00 01) and what follows it: MPEG program stream, MPEG-1/2
/// or MPEG-4 Part 2 video, or an H.264/HEVC Annex B stream.
file_kind start_code(head_view h) {
    std::size_t n = 0;
    if (at(h, 0, std::string_view("\0\0\1", 3))) {
        n = 3;
    } else if (at(h, 0, std::string_view("\0\0\0\1", 4))) {
        n = 4;
    }
    if (n == 0 || h.size() <= n) return {};
    const unsigned char c = h[n];
    if (c == 0xBA) return video_kind("mpeg program stream");
    if (c == 0xB3) return video_kind("mpeg-1/2 video");
    if (c == 0xB0 || c == 0xB5) return video_kind("mpeg-4 video");
    const int h264 = c & 0x1F;
    if ((c & 0x80) == 0 && (h264 == 1 || h264 == 5 || h264 == 6 || h264 == 7 || h264 == 9)) {
        return video_kind("h.264 annex b");
    }
    const int hevc = (c >> 1) & 0x3F;
    if ((c & 0x81) == 0 && hevc >= 32 && hevc <= 39) return video_kind("hevc annex b");
    return {};
}

/// MPEG transport stream: a 0x47 sync byte every 188 bytes (or every 192, M2TS), as far as the
/// head goes (at least three packets).
file_kind transport_stream(head_view h) {
    for (const std::size_t offset : {std::size_t{0}, std::size_t{4}}) {
        const std::size_t step = offset == 0 ? 188 : 192;
        if (h.size() < offset + 2 * step + 1) continue;
        bool all = true;
        for (std::size_t p = offset; p < h.size(); p += step) all = all && h[p] == 0x47;
        if (all) return video_kind(offset == 0 ? "mpeg transport stream" : "m2ts");
    }
    return {};
}

/// Ogg: the codec of the first page's first packet.
file_kind ogg(head_view h, std::string_view ext) {
    const std::size_t packet = 27 + (h.size() > 26 ? h[26] : 0);
    if (at(h, packet, "\x01vorbis") || at(h, packet, "OpusHead") ||
        at(h, packet,
           "\x7F"
           "FLAC") ||
        at(h, packet, "Speex   ")) {
        return audio_kind("ogg audio");
    }
    if (at(h, packet, "\x80theora")) return video_kind("ogg theora");
    return one_of(ext, {".ogv", ".ogm"}) ? video_kind("ogg") : audio_kind("ogg");
}

/// Matroska/WebM: a video track's CodecID ("V_...") in the head makes it a video; audio
/// tracks' only ("A_...") audio; neither (the tracks lie further in) the extension decides.
file_kind matroska(head_view h, std::string_view ext) {
    // CodecID is element 0x86 with a one-byte size (0x80 | n), then the string.
    bool audio = false;
    for (std::size_t i = 0; i + 4 < h.size(); ++i) {
        if (h[i] != 0x86 || (h[i + 1] & 0x80) == 0) continue;
        if (h[i + 2] == 'V' && h[i + 3] == '_') return video_kind("matroska/webm");
        if (h[i + 2] == 'A' && h[i + 3] == '_') audio = true;
    }
    return audio || audio_extension(ext) ? audio_kind("matroska audio")
                                         : video_kind("matroska/webm");
}

/// ISO base media (MP4, MOV, 3GP, M4A, HEIF/AVIF): by the major brand, then by the tracks'
/// handlers where the index (moov) comes first, then the extension.
file_kind iso_media(head_view h, std::string_view ext) {
    constexpr std::string_view hdlr = "hdlr";
    for (const char* brand : {"M4A ", "M4B ", "M4P ", "F4A ", "F4B "}) {
        if (at(h, 8, brand)) return audio_kind("mp4 audio");
    }
    for (const char* brand :
         {"heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1", "avif", "avis"}) {
        if (at(h, 8, brand))
            return unsupported("HEIF/AVIF image: decode_image reads JPEG, PNG, WebP and BMP");
    }
    if (at(h, 8, "crx ")) return unsupported("Canon raw image (CR3)");
    // A handler box: "hdlr", version and flags (4), pre_defined (4), then the handler type.
    bool sound = false;
    for (auto it = h.begin(); (it = std::search(it, h.end(), hdlr.begin(), hdlr.end())) != h.end();
         ++it) {
        const auto type = static_cast<std::size_t>(it - h.begin()) + 12;
        if (at(h, type, "vide")) return video_kind("mp4");
        sound = sound || at(h, type, "soun");
    }
    if (sound) return audio_kind("mp4 audio");
    return audio_extension(ext) ? audio_kind("mp4 audio")
                                : video_kind(at(h, 8, "qt  ") ? "quicktime" : "mp4");
}

}  // namespace

file_kind sniff(head_view h, std::string_view ext) {
    // Images ferry decodes.
    if (at(h, 0, "\xFF\xD8\xFF")) return image_kind("jpeg");
    if (at(h, 0, "\x89PNG\r\n\x1A\n")) return image_kind("png");
    if (at(h, 0, "RIFF") && at(h, 8, "WEBP")) return image_kind("webp");
    if (at(h, 0, "BM") && h.size() >= 18) {
        // "BM" alone is weak: the DIB header's size must be one of the known ones.
        const std::uint32_t dib =
            h[14] | (h[15] << 8) | (h[16] << 16) | (std::uint32_t{h[17]} << 24);
        if (dib == 12 || dib == 40 || dib == 52 || dib == 56 || dib == 64 || dib == 108 ||
            dib == 124) {
            return image_kind("bmp");
        }
    }
    // Images it does not.
    if (at(h, 0, "GIF87a") || at(h, 0, "GIF89a"))
        return unsupported("GIF image: decode_image reads JPEG, PNG, WebP and BMP");
    if (at(h, 0, std::string_view("II*\0", 4)) || at(h, 0, std::string_view("MM\0*", 4))) {
        return unsupported(
            "TIFF image (or a camera raw): decode_image reads JPEG, PNG, WebP and BMP");
    }
    if (at(h, 0, std::string_view("\0\0\0\x0CjP  ", 8)) || at(h, 0, "\xFF\x4F\xFF\x51")) {
        return unsupported("JPEG 2000 image: decode_image reads JPEG, PNG, WebP and BMP");
    }
    if (at(h, 0, "\xFF\x0A") || at(h, 0, std::string_view("\0\0\0\x0CJXL ", 8))) {
        return unsupported("JPEG XL image: decode_image reads JPEG, PNG, WebP and BMP");
    }
    if (at(h, 0, "8BPS"))
        return unsupported("Photoshop image: decode_image reads JPEG, PNG, WebP and BMP");
    // Containers and streams FFmpeg reads.
    if (at(h, 4, "ftyp")) return iso_media(h, ext);
    if (at(h, 0, "\x1A\x45\xDF\xA3")) return matroska(h, ext);
    if (at(h, 0, "RIFF") && at(h, 8, "AVI ")) return video_kind("avi");
    if ((at(h, 0, "RIFF") || at(h, 0, "RF64") || at(h, 0, "BW64")) && at(h, 8, "WAVE"))
        return audio_kind("wav");
    if (at(h, 0, "OggS")) return ogg(h, ext);
    if (at(h, 0, "FLV\x01") && h.size() > 4) {
        // TypeFlags: 0x04 audio, 0x01 video.
        return (h[4] & 0x05) == 0x04 ? audio_kind("flv audio") : video_kind("flv");
    }
    if (at(h, 0, std::string_view("\x30\x26\xB2\x75\x8E\x66\xCF\x11", 8))) {
        return audio_extension(ext) ? audio_kind("asf audio") : video_kind("asf/wmv");
    }
    if (at(h, 0, ".RMF")) return video_kind("realmedia");
    if (at(h, 0, "YUV4MPEG2")) return video_kind("y4m");
    if (at(h, 0, "DKIF")) return video_kind("ivf");
    if (auto k = transport_stream(h); k.kind != media::other) return k;
    if (auto k = start_code(h); k.kind != media::other) return k;
    if (at(h, 0, "fLaC")) return audio_kind("flac");
    if (at(h, 0, "ID3")) return audio_kind("mp3 (id3)");
    if (at(h, 0, "FORM") && (at(h, 8, "AIFF") || at(h, 8, "AIFC"))) return audio_kind("aiff");
    // Where a magic number could start a text file, a binary field after it must agree.
    if (at(h, 0, std::string_view(".snd\0\0", 6))) return audio_kind("au");  // data offset
    if (at(h, 0, "#!AMR")) return audio_kind("amr");
    if (at(h, 0, "wvpk")) return audio_kind("wavpack");
    if (at(h, 0, "MAC ") && h.size() > 5 && h[5] == 0x0F) return audio_kind("ape");  // 39xx
    if (at(h, 0, std::string_view("caff\0\1", 6))) return audio_kind("caf");         // version 1
    if (at(h, 0, "\x0B\x77")) return audio_kind("ac-3");
    if (at(h, 0, "\x7F\xFE\x80\x01")) return audio_kind("dts");
    if (auto k = mpeg_audio_frame(h); k.kind != media::other) return k;
    return {};
}

media kind_of_extension(std::string_view ext) {
    if (one_of(ext, {".jpg", ".jpeg", ".jpe", ".jfif", ".png", ".webp", ".bmp", ".dib"})) {
        return media::image;
    }
    if (one_of(ext,
               {".mp4",  ".m4v", ".mkv", ".webm", ".avi", ".mov",  ".qt",   ".mpg", ".mpeg", ".mpe",
                ".m2p",  ".vob", ".ts",  ".m2ts", ".mts", ".ogv",  ".ogm",  ".flv", ".3gp",  ".3g2",
                ".wmv",  ".asf", ".m1v", ".m2v",  ".mpv", ".h264", ".264",  ".avc", ".h265", ".265",
                ".hevc", ".ivf", ".y4m", ".mxf",  ".nut", ".rm",   ".rmvb", ".dv"})) {
        return media::video;
    }
    if (one_of(ext, {".wav", ".flac", ".mp3",  ".mp2", ".mpa",  ".ogg", ".oga",  ".opus",
                     ".spx", ".m4a",  ".m4b",  ".aac", ".adts", ".ac3", ".eac3", ".dts",
                     ".aif", ".aiff", ".aifc", ".au",  ".snd",  ".amr", ".ape",  ".wv",
                     ".wma", ".mka",  ".weba", ".caf", ".ra"})) {
        return media::audio;
    }
    return media::other;
}

std::string lower_extension(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext;
}

file_kind kind_of_file(const fs::path& p) {
    // 4 KiB (one page, no dearer to read than a few bytes): the magic numbers, several transport
    // stream packets, and usually a Matroska file's tracks or a fast-start MP4's handlers.
    std::array<unsigned char, 4096> head{};
    std::size_t n = 0;
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return unsupported("cannot be opened");
    while (n < head.size()) {
        const ssize_t got = ::read(fd, head.data() + n, head.size() - n);
        if (got <= 0) break;
        n += static_cast<std::size_t>(got);
    }
    ::close(fd);
    const std::string ext = lower_extension(p);
    file_kind k = sniff(head_view(head.data(), n), ext);
    if (k.kind != media::other || !k.format.empty()) return k;
    // Not recognised: a known extension still counts (a damaged file is then reported as a
    // failed decode, as a training run would meet it); anything else is skipped, saying why.
    if (const media m = kind_of_extension(ext); m != media::other) {
        return {m, n == 0 ? "empty, by its extension" : "unrecognised, by its extension"};
    }
    if (n == 0) return unsupported("empty file");
    std::string why = "unrecognised content (first bytes:";
    for (std::size_t i = 0; i < n && i < 8; ++i) {
        char hex[4];
        std::snprintf(hex, sizeof hex, " %02x", head[i]);
        why += hex;
    }
    return unsupported((why + ")").c_str());
}

}  // namespace probe
