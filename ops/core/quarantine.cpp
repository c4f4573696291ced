// SPDX-License-Identifier: Apache-2.0
/// \file
/// The quarantine file's format: one JSON object per line, written by `quarantine_line` and read
/// back by `load_quarantine`. A small hand-written JSON reader, because core links no JSON
/// library and a line holds only a flat object.

#include "ferry/quarantine.hpp"

#include <cstdint>
#include <fstream>
#include <string_view>

#include "ferry/detail/redact.hpp"
#include "ferry/error.hpp"

namespace ferry {
namespace {

/// Length of the valid UTF-8 sequence at `s[i]`, or 0 when the byte there does not start one
/// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
std::size_t utf8_length(std::string_view s, std::size_t i) noexcept {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = byte(i);
    std::size_t n = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        if (c == 0xe0) lo = 0xa0;  // no overlong forms
        if (c == 0xed) hi = 0x9f;  // no surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;  // nothing past U+10FFFF
    } else {
        return 0;
    }
    if (i + n > s.size()) return 0;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
    for (std::size_t k = 2; k < n; ++k) {
        if ((byte(i + k) & 0xc0) != 0x80) return 0;
    }
    return n;
}

void append_hex4(std::string& out, unsigned v) {
    constexpr char digits[] = "0123456789abcdef";
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4) out += digits[(v >> shift) & 0xf];
}

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '"':
                    out += "\\\"";
                    break;
                case '\\':
                    out += "\\\\";
                    break;
                case '\n':
                    out += "\\n";
                    break;
                case '\r':
                    out += "\\r";
                    break;
                case '\t':
                    out += "\\t";
                    break;
                default:
                    if (c < 0x20) {
                        append_hex4(out, c);
                    } else {
                        out += static_cast<char>(c);
                    }
            }
            ++i;
        } else if (const std::size_t n = utf8_length(s, i); n != 0) {
            out.append(s.substr(i, n));
            i += n;
        } else {
            append_hex4(out, 0xdc00u + c);  // surrogateescape: the byte itself comes back
            ++i;
        }
    }
    out += '"';
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

/// Reads one line's JSON object; throws `bad_line` with a column and what is wrong.
class line_reader {
  public:
    struct bad_line {
        std::size_t column;
        std::string what;
    };

    explicit line_reader(std::string_view text) : s_(text) {}

    /// The object's `"input"` string; throws bad_line when the line is not an object with one.
    std::string input() {
        std::string found;
        bool has_input = false;
        skip_space();
        expect('{', "a JSON object ('{')");
        skip_space();
        if (!eat('}')) {
            for (;;) {
                skip_space();
                const std::string key = string_value();
                skip_space();
                expect(':', "':' after a key");
                skip_space();
                if (key == "input") {
                    if (peek() != '"') fail("\"input\" must be a string");
                    found = string_value();
                    has_input = true;
                } else {
                    skip_value(0);
                }
                skip_space();
                if (eat('}')) break;
                expect(',', "',' or '}' after a value");
            }
        }
        skip_space();
        if (i_ != s_.size()) fail("text after the object");
        if (!has_input) fail("no \"input\" field");
        return found;
    }

  private:
    [[noreturn]] void fail(std::string what) const { throw bad_line{i_ + 1, std::move(what)}; }
    [[nodiscard]] char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
    bool eat(char c) {
        if (peek() != c || i_ >= s_.size()) return false;
        ++i_;
        return true;
    }
    void expect(char c, const char* what) {
        if (!eat(c)) fail(std::string("expected ") + what);
    }
    void skip_space() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
    }

    unsigned hex4() {
        unsigned v = 0;
        for (int k = 0; k < 4; ++k) {
            const char c = peek();
            unsigned d = 0;
            if (c >= '0' && c <= '9') {
                d = static_cast<unsigned>(c - '0');
            } else if (c >= 'a' && c <= 'f') {
                d = static_cast<unsigned>(c - 'a' + 10);
            } else if (c >= 'A' && c <= 'F') {
                d = static_cast<unsigned>(c - 'A' + 10);
            } else {
                fail("expected 4 hex digits after \\u");
            }
            v = v * 16 + d;
            ++i_;
        }
        return v;
    }

    std::string string_value() {
        expect('"', "a string ('\"')");
        std::string out;
        for (;;) {
            if (i_ >= s_.size()) fail("unterminated string");
            const auto c = static_cast<unsigned char>(s_[i_++]);
            if (c == '"') return out;
            if (c < 0x20) fail("a control character inside a string");
            if (c != '\\') {
                out += static_cast<char>(c);
                continue;
            }
            const char e = peek();
            ++i_;
            switch (e) {
                case '"':
                case '\\':
                case '/':
                    out += e;
                    break;
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u':
                    unicode_escape(out);
                    break;
                default:
                    --i_;
                    fail("an unknown escape in a string");
            }
        }
    }

    void unicode_escape(std::string& out) {
        const unsigned u = hex4();
        if (u >= 0xd800 && u <= 0xdbff && s_.substr(i_, 2) == "\\u") {
            const std::size_t at = i_;
            i_ += 2;
            const unsigned low = hex4();
            if (low >= 0xdc00 && low <= 0xdfff) {
                append_utf8(out, 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00));
                return;
            }
            i_ = at;  // not a pair: the high surrogate stands alone
        }
        if (u >= 0xdc80 && u <= 0xdcff) {
            out += static_cast<char>(u - 0xdc00);  // a raw byte (see quarantine_line)
        } else if (u >= 0xd800 && u <= 0xdfff) {
            append_utf8(out, 0xfffd);
        } else {
            append_utf8(out, u);
        }
    }

    void skip_value(int depth) {
        if (depth > 64) fail("nested too deeply");
        const char c = peek();
        if (c == '"') {
            (void)string_value();
        } else if (c == '{' || c == '[') {
            const char close = c == '{' ? '}' : ']';
            ++i_;
            skip_space();
            if (eat(close)) return;
            for (;;) {
                skip_space();
                if (c == '{') {
                    (void)string_value();
                    skip_space();
                    expect(':', "':' after a key");
                    skip_space();
                }
                skip_value(depth + 1);
                skip_space();
                if (eat(close)) return;
                expect(',', c == '{' ? "',' or '}'" : "',' or ']'");
            }
        } else if (s_.substr(i_, 4) == "true" || s_.substr(i_, 4) == "null") {
            i_ += 4;
        } else if (s_.substr(i_, 5) == "false") {
            i_ += 5;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            ++i_;
            while (i_ < s_.size() &&
                   (std::string_view("0123456789.eE+-").find(s_[i_]) != std::string_view::npos)) {
                ++i_;
            }
        } else {
            fail("expected a value");
        }
    }

    std::string_view s_;
    std::size_t i_ = 0;
};

}  // namespace

std::string quarantine_line(const failure& f) {
    std::string out;
    out.reserve(96 + f.input.size() + f.stage.size() + f.message.size());
    // Whoever made the failure, no credential reaches the file: inputs are URLs redacted (the
    // engine's names already are, so exclusion by name still matches) and messages made safe.
    out += "{\"input\": ";
    append_json_string(
        out, detail::may_hold_credentials(f.input) ? detail::redact_url(f.input) : f.input);
    out += ", \"stage\": ";
    append_json_string(out, f.stage);
    out += ", \"code\": ";
    append_json_string(out, to_string(f.code));
    out += ", \"message\": ";
    append_json_string(out, detail::redact_text(f.message));
    out += ", \"epoch\": " + std::to_string(f.epoch);
    out += ", \"item\": " + std::to_string(f.item);
    out += ", \"items\": " + std::to_string(f.items);
    out += '}';
    return out;
}

quarantine_list load_quarantine(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw io_error("load_quarantine: cannot open '" + file.string() + "'", false);
    }
    quarantine_list list;
    std::string line;
    std::size_t number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            list.insert(line_reader(line).input());
        } catch (const line_reader::bad_line& bad) {
            throw invalid_argument("load_quarantine: " + file.string() + ":" +
                                   std::to_string(number) + ": " + bad.what + " (column " +
                                   std::to_string(bad.column) + ")");
        }
    }
    if (in.bad()) {
        throw io_error("load_quarantine: reading '" + file.string() + "' failed after line " +
                       std::to_string(number));
    }
    return list;
}

}  // namespace ferry
