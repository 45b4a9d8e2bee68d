/// @file snapshot.hpp
/// Whole-world copies: `Snapshot` (with `World::clone`, `World::snapshot`, `World::restore`),
/// binary save/load, and `state_hash`, the desync detector. JSON save/load (`to_json`,
/// `from_json`) is in serialize.hpp, which includes this header.
///
/// What a copy holds: every entity with its id and generation, the free list (so the next
/// spawns reuse the same indices), the archetypes in creation order with their rows in table
/// order (so every query iterates a copy exactly as it iterated the original), component
/// values, enable flags, change ticks, relations (targets and reverse lists in relate order),
/// permanent entities, the world tick and the interned strings. Resources, observers, events
/// and schedules are not part of a world's state here.
///
/// Save and load (JSON or binary) need each component's values described: runtime components
/// and `TESSERA_REFLECT` structs are; tags and relation targets need nothing. Saving a world
/// holding a non-tag component without field metadata throws `invalid_argument` naming it.
#pragma once

#include <tessera/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace tessera {

namespace detail {
class Storage;
}

/// A copy of a world's state, made by `World::snapshot()` and put back by `World::restore`.
/// Movable, not copyable; it allocates from the world's memory resource, which must outlive it.
class Snapshot {
public:
    /// An empty snapshot (restoring it throws).
    Snapshot() noexcept = default;
    /// Takes over `other`'s state; `other` becomes empty.
    Snapshot(Snapshot&& other) noexcept;
    /// Frees this snapshot's state, then takes over `other`'s; `other` becomes empty.
    Snapshot& operator=(Snapshot&& other) noexcept;
    Snapshot(const Snapshot&) = delete;
    Snapshot& operator=(const Snapshot&) = delete;
    ~Snapshot();

    /// Whether it holds no state (default-constructed or moved from).
    [[nodiscard]] bool empty() const noexcept { return storage_ == nullptr; }
    /// Live entities in it.
    [[nodiscard]] std::size_t count() const noexcept;
    /// The world tick it was taken at.
    [[nodiscard]] std::uint64_t tick() const noexcept;

private:
    friend class World;
    explicit Snapshot(detail::Storage* storage) noexcept : storage_(storage) {}
    detail::Storage* storage_ = nullptr;
};

/// The world in a compact binary form (little-endian): everything a snapshot holds, with
/// trivially laid out columns written as they are in memory (serialize.hpp's `to_json` holds
/// the same, readable). O(entities + values).
/// @throws Error(invalid_argument) naming a non-tag component without field metadata, or when
/// the world is iterating.
[[nodiscard]] std::vector<std::byte> save(const World& world);

/// Fills the empty `world` from `bytes` made by `save` (any input is checked: random bytes give
/// an error, never a crash), entity ids, generations, free list and iteration order included.
/// @throws Error(invalid_argument) for a non-empty world, malformed or inconsistent data, an
/// unknown component or a field that doesn't match (the message names them); the world is left
/// empty then.
void load(std::span<const std::byte> bytes, World& world);

/// A 64-bit hash of the world's state: every live entity (index and generation) with its
/// components (by name, not id) and their values (reflected and runtime fields; `str` and
/// `std::string` by content), enable flags and relation targets. Independent of history:
/// equal worlds hash equal, whatever order their entities and archetypes were made in, in any
/// process. Change ticks, the tick and unreflected values (only their presence counts) are left
/// out. Compare it across machines or runs to detect a desync. O(entities + values).
[[nodiscard]] std::uint64_t state_hash(const World& world);

}  // namespace tessera
