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

}  // namespace tessera
