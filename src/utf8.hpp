// UTF-8 validation for every place text enters a world (field writes, the string table, the
// loaders, runtime component definitions), so a world can always be written as JSON.
#pragma once

#include <cstddef>
#include <string_view>

namespace tessera::detail {

/// The offset of the first byte of `s` that is not part of well-formed UTF-8 (RFC 3629: no
/// overlong forms, no surrogates, nothing above U+10FFFF), or `std::string_view::npos` when
/// all of `s` is well formed. O(size).
[[nodiscard]] inline std::size_t invalid_utf8_at(std::string_view s) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    const std::size_t n = s.size();
    std::size_t i = 0;
    while (i < n) {
        const unsigned char c = p[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
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
            return i;
        }
        if (n - i < len || p[i + 1] < lo || p[i + 1] > hi) return i;
        for (std::size_t k = 2; k < len; ++k) {
            if ((p[i + k] & 0xC0) != 0x80) return i;
        }
        i += len;
    }
    return std::string_view::npos;
}

/// Whether all of `s` is well-formed UTF-8.
[[nodiscard]] inline bool valid_utf8(std::string_view s) noexcept {
    return invalid_utf8_at(s) == std::string_view::npos;
}

}  // namespace tessera::detail
