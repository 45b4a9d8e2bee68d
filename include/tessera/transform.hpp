/// @file transform.hpp
/// Hierarchical transforms: `LocalTransform`, `WorldTransform` and
/// `propagate_transforms`, which computes every world matrix from the `ChildOf` hierarchy.
///
/// **Rules.** For every entity with a `LocalTransform`, `WorldTransform = parent world * local`,
/// where the parent is the entity's first `ChildOf` target (`world.parent(e)`) and an entity
/// without a parent has the identity as parent world. An entity with a parent but no
/// `LocalTransform` contributes an identity local matrix: its parent's world matrix passes
/// through to its children, and it gets no `WorldTransform`. An entity with neither is the
/// identity for its children. Matrices are glm's (column-major; `parent * local` maps local
/// coordinates to the parent's).
///
/// **Change ticks.** `propagate_transforms` writes a `WorldTransform` only when the computed
/// matrix differs (bitwise) from the stored one, stamping its changed tick like `World::set`,
/// so `query<const WorldTransform&>().changed<WorldTransform>()` sees exactly the entities whose
/// world matrix moved. It keeps the tick of its previous call in the world (a hidden resource)
/// and, like a query with a change filter, advances the world tick by one when it ends: a write
/// made after a call is seen by the next call, never twice.
///
/// **Invalidation.** A call may add `WorldTransform` to entities (structural changes, made
/// before anything is computed), so it invalidates pointers, spans and chunks into the world
/// like any `add`. It makes no other structural change.
///
/// **Reflection.** Both are reflected components (`component_info<T>().schema`), so the
/// inspector shows and edits their fields and snapshots write them by field: one field
/// `matrix`, an array of 4 columns, each a record of `x`, `y`, `z`, `w` (f32). Paths name one
/// value, e.g. `"matrix[3].x"`, the x of the translation column:
/// `world.set_field(e, component_id<LocalTransform>(), "matrix[3].x", 2.5f)`.
///
/// **Memory.** The per-world state (a cached plan of the hierarchy: about 56 bytes per entity
/// with a `LocalTransform` plus 36 per entity index) comes from the world's memory resource and
/// keeps its capacity: once warm, a call allocates nothing unless the world has grown (more
/// entity indices, new archetypes) or `WorldTransform`s must be added.
#pragma once

#include <tessera/component.hpp>
#include <tessera/fwd.hpp>

#include <glm/mat4x4.hpp>

#include <cstddef>

namespace tessera {

/// An entity's transform relative to its parent (its first `ChildOf` target), or to the world
/// when it has none. Defaults to the identity.
struct LocalTransform {
    glm::mat4 matrix{1.0f};  ///< column-major, glm conventions

    /// Exact (float ==) comparison of the 16 values.
    friend bool operator==(const LocalTransform& a, const LocalTransform& b) noexcept {
        return a.matrix == b.matrix;
    }
};

/// An entity's transform to world space, written by `propagate_transforms`: the parent's world
/// matrix times the `LocalTransform`. Defaults to the identity.
struct WorldTransform {
    glm::mat4 matrix{1.0f};  ///< column-major, glm conventions

    /// Exact (float ==) comparison of the 16 values.
    friend bool operator==(const WorldTransform& a, const WorldTransform& b) noexcept {
        return a.matrix == b.matrix;
    }
};

/// The field metadata of `LocalTransform`: `matrix`, 4 columns of {x, y, z, w} (f32).
template <>
struct reflect<LocalTransform> {
    /// Defined in src/transform_reflect.cpp (one schema for every translation unit).
    static const Schema& schema();
};

/// The field metadata of `WorldTransform`: `matrix`, 4 columns of {x, y, z, w} (f32).
template <>
struct reflect<WorldTransform> {
    /// Defined in src/transform_reflect.cpp (one schema for every translation unit).
    static const Schema& schema();
};

/// Computes `WorldTransform = parent world * LocalTransform` for every entity with a
/// `LocalTransform` (see the file comment for the rules), adding `WorldTransform` where it is
/// missing. Returns the number of `WorldTransform` values written; an added one always counts,
/// an existing one counts only when its value changed (bitwise).
///
/// Each entity is computed at most once per call, whatever the archetype or spawn order, with
/// explicit work stacks (hierarchies of any depth; no recursion). On the first call every
/// entity is computed. Later calls recompute only the subtrees (first-parent `ChildOf` links) of
/// the *dirty* entities, those whose
///   - `LocalTransform` changed or was added since the previous call,
///   - `WorldTransform` was written by someone else or added since then, or
///   - nearest ancestor with a `LocalTransform` changed (relate, unrelate, a parent's despawn,
///     an ancestor gaining or losing its `LocalTransform`),
/// and compute everything instead when many entities are dirty (over 1/8 of those with a
/// `LocalTransform`). A `WorldTransform` left on an entity without `LocalTransform` is neither
/// updated nor removed.
///
/// Writes fire `on_set<WorldTransform>` observers (through `World::set`) when there are any;
/// structural changes made by them are applied when the call ends. Meant to run once per frame,
/// on the world's thread, outside `par_each` (from its workers it throws `invalid_argument`);
/// called while the world iterates, the additions of `WorldTransform` are queued (those
/// entities are written by the next call).
///
/// **Complexity.** The hierarchy is cached as a plan (every entity with a `LocalTransform` in
/// depth-first order, pointing into the table columns), checked by every call: O(E + D) where E
/// is the number of entities with a `LocalTransform` (a compare of the tables' rows with the
/// plan's and a scan of change ticks, 24 bytes per entity) and D the entities in the dirty
/// subtrees (a matrix product each, streaming through the plan); O(A) in archetypes. A full
/// call is one pass over the plan. A call after a structural change of an entity with a
/// `LocalTransform` (spawn, despawn, archetype move, a table growing) or of the hierarchy
/// (re-parenting) first rebuilds the plan: one walk of the hierarchy, about the cost of a full
/// call.
///
/// @throws Error from the world (an `add` of `WorldTransform`, an observer), std::bad_alloc,
/// Error(invalid_argument) from the workers of a `par_each` (before anything changes).
/// Basic guarantee: after an exception, values already written stay written, and the next call
/// sees every change since the last complete call.
std::size_t propagate_transforms(World& world);

namespace detail {
/// How `propagate_transforms` chooses between recomputing the dirty subtrees and recomputing
/// everything (tests run every rule in each mode). The first call always computes everything.
enum class PropagationMode : unsigned char {
    automatic,    ///< everything when over 1/8 of the entities with a LocalTransform are dirty
    full,         ///< always everything
    incremental,  ///< always the dirty subtrees only
};
/// Sets `world`'s mode (default `automatic`). May allocate the per-world state.
void set_propagation_mode(World& world, PropagationMode mode);
}  // namespace detail

}  // namespace tessera
