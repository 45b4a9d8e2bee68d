/// @file names.hpp
/// Entity names and paths: `world.set_name(e, "door")`, `world.name(e)` and
/// `world.lookup("level/room1/door")`, a path of names through `ChildOf` from a root.
///
/// **Uniqueness.** A name is unique among its siblings: the entities with the same first
/// `ChildOf` parent, or the roots (no parent). Naming an entity like a sibling is
/// `invalid_argument` naming both (nothing changes); so is a `relate(e, ChildOf{}, p)` that
/// makes `p` the first parent of a named `e` when a child of `p` already has that name (the
/// relate is refused). When an unrelate or a parent's despawn moves a named entity among
/// siblings that already hold its name, it keeps its name but `lookup` does not find it by the
/// new path until it is renamed.
///
/// **Lifetime.** A despawned entity's name is free at once (its entry is dropped lazily, so the
/// index stays O(named entities) amortised); renaming frees the old name.
///
/// **Cost.** A hash map from (parent, name) to entity: `lookup` is O(1) per path segment on
/// average, `set_name` O(1) plus the name's length. Names are copied by clone and snapshots
/// and are part of `state_hash`.
#pragma once

#include <tessera/world.hpp>

#include <string_view>

namespace tessera {

namespace detail {

// The untyped names (src/names.cpp).
void set_name(Storage& s, Entity e, std::string_view name);
std::string_view name(const Storage& s, Entity e) noexcept;
Entity lookup(const Storage& s, std::string_view path) noexcept;
/// Calls `fn(ctx, e, name)` for every named live entity, by entity index (snapshots,
/// state_hash, the inspector).
void each_name(const Storage& s, void (*fn)(void* ctx, Entity e, std::string_view name), void* ctx);

}  // namespace detail

inline void World::set_name(Entity e, std::string_view name) {
    detail::set_name(*storage_, e, name);
}

inline std::string_view World::name(Entity e) const noexcept {
    return detail::name(*storage_, e);
}

inline Entity World::lookup(std::string_view path) const noexcept {
    return detail::lookup(*storage_, path);
}

}  // namespace tessera
