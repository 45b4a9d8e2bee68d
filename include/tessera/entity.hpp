/// @file entity.hpp
/// The generational entity handle.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <typeindex>  // declares std::hash, as <functional> does, at a fraction of its cost

namespace tessera {

/// A generational handle to an entity: an index into the world's entity index plus the
/// generation that index had when the entity was spawned.
///
/// Despawning frees the index; reusing it bumps the generation, so a stale handle never names a
/// later entity. A default-constructed `Entity` is `Entity::null()`. Handles are plain values:
/// copying one never touches the world.
struct Entity {
    std::uint32_t index = 0xFFFFFFFFu;  ///< slot in the entity index
    std::uint32_t generation = 0;       ///< incremented each time the slot is reused

    /// The null entity: index 0xFFFFFFFF, generation 0. Never alive; false as a bool.
    [[nodiscard]] static constexpr Entity null() noexcept { return Entity{}; }

    /// Whether this is not the null index (the generation is not compared).
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return index != 0xFFFFFFFFu; }

    /// Packs the handle: index in the low 32 bits, generation in the high 32.
    [[nodiscard]] constexpr std::uint64_t to_bits() const noexcept {
        return std::uint64_t{generation} << 32 | index;
    }

    /// Inverse of `to_bits()`.
    [[nodiscard]] static constexpr Entity from_bits(std::uint64_t bits) noexcept {
        return Entity{static_cast<std::uint32_t>(bits), static_cast<std::uint32_t>(bits >> 32)};
    }

    /// Equality compares index and generation.
    friend constexpr bool operator==(Entity a, Entity b) noexcept = default;
    /// Orders by `to_bits()` value: by generation, then by index.
    friend constexpr std::strong_ordering operator<=>(Entity a, Entity b) noexcept {
        return a.to_bits() <=> b.to_bits();
    }
};

/// Writes `index:generation` (or `null`), the form used in every error message.
std::ostream& operator<<(std::ostream& os, Entity e);

}  // namespace tessera

/// Hash of the packed bits, so entities can key unordered containers.
template <>
struct std::hash<tessera::Entity> {
    /// A splitmix64 mix of `e.to_bits()`.
    std::size_t operator()(tessera::Entity e) const noexcept {
        // splitmix64 finaliser: packed handles differ mostly in low bits.
        std::uint64_t x = e.to_bits() + 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        return static_cast<std::size_t>(x ^ (x >> 31));
    }
};
