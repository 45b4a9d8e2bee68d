// UTF-8 validation for every place text enters a world (field writes, the string table, the
// loaders, runtime component definitions), so a world can always be written as JSON.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tessera::detail {

/// The length of the well-formed UTF-8 sequence starting at byte `i` of `s` (RFC 3629: no
/// overlong forms, no surrogates, nothing above U+10FFFF), or 0 when none starts there.
/// Precondition: `i < s.size()`.
[[nodiscard]] inline std::size_t utf8_sequence_at(std::string_view s, std::size_t i) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    const unsigned char c = p[i];
    if (c < 0x80) return 1;
    std::size_t len = 0;
    unsigned char lo = 0x80;  // the range of the second byte
    unsigned char hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;  // overlong
        if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;  // overlong
        if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
        return 0;
    }
    if (n - i < len || p[i + 1] < lo || p[i + 1] > hi) return 0;
    for (std::size_t k = 2; k < len; ++k) {
        if ((p[i + k] & 0xC0) != 0x80) return 0;
    }
    return len;
}

/// The offset of the first byte of `s` that is not part of well-formed UTF-8, or
/// `std::string_view::npos` when all of `s` is well formed. O(size).
[[nodiscard]] inline std::size_t invalid_utf8_at(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t len = utf8_sequence_at(s, i);
        if (len == 0) return i;
        i += len;
    }
    return std::string_view::npos;
}

/// User text (a field name or path, a component name, a JSON key, an inspector query) as error
/// messages quote it: between single quotes, with every control character (NUL included), DEL,
/// `\`, `'` and every byte that is not part of well-formed UTF-8 written as `\xNN`. The
/// result is printable UTF-8 that no NUL cuts short, whatever `text` holds. O(size).
[[nodiscard]] inline std::string quote(std::string_view text) {
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(text.size() + 2);
    out += '\'';
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        std::size_t len = utf8_sequence_at(text, i);
        if (len == 1 && (c < 0x20 || c == 0x7F || c == '\\' || c == '\'')) len = 0;
        if (len == 0) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xF];
            ++i;
        } else {
            out.append(text.substr(i, len));
            i += len;
        }
    }
    out += '\'';
    return out;
}

/// The offset of the first byte of `s` that is not well-formed UTF-8 or is a control character
/// (U+0000 to U+001F, U+007F), or `std::string_view::npos`: what a name must not hold.
[[nodiscard]] inline std::size_t unprintable_at(std::string_view s) noexcept {
    for (std::size_t i = 0; i < s.size();) {
        const std::size_t len = utf8_sequence_at(s, i);
        const auto c = static_cast<unsigned char>(s[i]);
        if (len == 0 || (len == 1 && (c < 0x20 || c == 0x7F))) return i;
        i += len;
    }
    return std::string_view::npos;
}

/// Why `s` fails `unprintable_at` at `at`: "is not valid UTF-8 (byte 3)" or "holds a control
/// character (byte 3)".
[[nodiscard]] inline std::string unprintable_why(std::string_view s, std::size_t at) {
    return std::string(utf8_sequence_at(s, at) == 0 ? "is not valid UTF-8"
                                                    : "holds a control character") +
           " (byte " + std::to_string(at) + ")";
}

/// Whether all of `s` is well-formed UTF-8.
[[nodiscard]] inline bool valid_utf8(std::string_view s) noexcept {
    return invalid_utf8_at(s) == std::string_view::npos;
}

}  // namespace tessera::detail
