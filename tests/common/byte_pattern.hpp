// Test helpers for byte messages (the ENet transport's tests): a deterministic pattern, so a
// reordered or truncated fragment shows, and the bytes of a string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace tessera::test {

/// A deterministic pattern of `n` bytes (xorshift from `seed`).
inline std::vector<std::byte> pattern(std::size_t n, std::uint32_t seed) {
    std::vector<std::byte> b(n);
    std::uint32_t x = seed * 2654435761u + 1;
    for (std::size_t i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = static_cast<std::byte>(x);
    }
    return b;
}

/// The bytes of `s`.
inline std::vector<std::byte> bytes_of(const std::string& s) {
    std::vector<std::byte> b(s.size());
    if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
    return b;
}

}  // namespace tessera::test
