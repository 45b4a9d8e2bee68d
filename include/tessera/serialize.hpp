/// @file serialize.hpp
/// JSON save/load of a whole world (`to_json`, `from_json`, on nlohmann-json), and everything
/// of snapshot.hpp (`Snapshot`, binary `save`/`load`, `state_hash`), which it includes. Not
/// included by tessera/tessera.hpp (it brings nlohmann-json's headers): include it where you
/// save or load JSON.
#pragma once

#include <tessera/fwd.hpp>
#include <tessera/snapshot.hpp>

#include <nlohmann/json_fwd.hpp>

namespace tessera {

/// The world as JSON: a readable form of everything a snapshot holds (component values by
/// field name; `str` fields as their text). O(entities + values).
/// @throws Error(invalid_argument) naming a non-tag component without field metadata, or when
/// the world is iterating.
[[nodiscard]] nlohmann::json to_json(const World& world);

/// Fills the empty `world` from `json` (made by `to_json`), entity ids, generations, free list
/// and iteration order included. Components are found by name and must have the saved fields.
/// @throws Error(invalid_argument) for a non-empty world, malformed or inconsistent data, an
/// unknown component or a field that doesn't match (the message names them); the world is left
/// empty then.
void from_json(const nlohmann::json& json, World& world);

/// All fields of `e`'s component `id` as one JSON object (field name -> value, as `to_json` of
/// the world writes them: nested records as objects, arrays as arrays, `str` fields as their
/// text): a whole runtime component in one call. A tag `e` has (C++ or runtime, `ChildOf`
/// included) gives `{}`. @throws Error(not_registered) for an id no component has,
/// Error(not_alive), Error(missing_component), Error(invalid_argument) for a non-tag component
/// without field metadata.
[[nodiscard]] nlohmann::json to_json(const World& world, Entity e, ComponentId id);

/// Writes the fields `fields` names (a JSON object, nested records as objects) of `e`'s
/// component `id` in one call; the others keep their values. All or nothing: the value is
/// replaced once every field was read, and marked changed (`on_set` fires once). `str` fields
/// take text (interned). A tag `e` has takes `{}` only, and nothing changes.
/// @throws Error(invalid_argument) naming the entity, the component and the field for a name
/// that is no field, a value of the wrong type, out of range or text that is not UTF-8, or a
/// non-tag component without field metadata (nothing changes), Error(not_registered) for an id
/// no component has, Error(not_alive), Error(missing_component).
void set_fields(World& world, Entity e, ComponentId id, const nlohmann::json& fields);

}  // namespace tessera
