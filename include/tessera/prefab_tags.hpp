/// @file prefab_tags.hpp
/// The two marks of prefabs (prefab.hpp): the tag `Prefab` and the relation `IsA`. They live
/// apart from prefab.hpp so that the archetype matcher (query_spec.hpp) can know `Prefab`
/// without the world.
#pragma once

namespace tessera {

/// Marks a prefab (`World::prefab`): a template entity that queries, systems, query observers
/// and `DynamicQuery` skip unless they name `Prefab` (`with<ts::Prefab>()`, a `const
/// ts::Prefab*` term, `QuerySpec::all` or `any`). A plain tag otherwise.
struct Prefab {};

/// The relation from an instance to the prefab it was made from (`World::instantiate`):
/// `world.prefab_of(e)` is its target. Kept by `instantiate` (and relate) only, like `ChildOf`.
struct IsA {
    /// Kept by relate/unrelate only, in every world (`ComponentInfo::reserved`).
    static constexpr bool tessera_reserved = true;
};

}  // namespace tessera
