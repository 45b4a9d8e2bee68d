// The map view's data (internal, not API): two numeric fields (and a colour) of every entity
// matching a filter, read on the world thread as one pass over those columns into plain
// arrays, and written as one compact JSON answer on the server thread (GET /api/points,
// docs/inspector.md). Also the numeric field paths of every component (GET /api/fields), for
// the page's pickers.
#pragma once

#include "world_json.hpp"

#include <tessera/detail/storage.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::detail::inspector {

/// Points one answer holds at most (`limit`'s bound), and when `limit` is not given.
inline constexpr std::size_t max_points = 100'000;
inline constexpr std::size_t default_points = 20'000;
/// The longest field spec ("Component.path") accepted.
inline constexpr std::size_t max_spec = 512;

/// A points request, checked for form on the server thread (names are resolved on the world
/// thread).
struct PointsRequest {
    std::string x, y;                        ///< "Component.path" each
    std::string color = "archetype";         ///< "archetype", or "Component.path"
    std::vector<std::string> with, without;  ///< component names, as /api/entities takes them
    std::size_t limit = default_points;      ///< 1..max_points
};

/// A numeric field of a component, resolved.
struct PointField {
    ComponentId component;
    std::uint32_t offset = 0;  ///< in the component's value
    Field type = Field::f32;
    std::string name;  ///< "arena::Position.x": the component's full name, '.', the path
};

/// The answer, filled on the world thread; `write_points` turns it into the response body.
struct Points {
    std::uint64_t frame = 0;
    PointField x, y, color;
    bool by_archetype = true;
    std::size_t total = 0;   ///< rows matching (the filter and having x's and y's components)
    std::size_t stride = 1;  ///< every stride-th matching row is returned
    std::size_t limit = default_points;
    std::vector<Entity> entities;
    /// x, y, colour per point (NaN: no value, written null; by archetype, the colour is the
    /// archetype's index).
    std::vector<double> values;
    /// The archetypes of the points returned: index and component names.
    std::vector<std::pair<std::uint32_t, nlohmann::json>> archetypes;
};

/// Whether `spec` looks like "Component.path" (the server thread's check); why not, or "".
std::string spec_problem(const std::string& what, const std::string& spec);

/// Resolves the request and reads the rows (world thread): O(archetypes + points returned).
/// @throws RequestError(400) naming the bad component, field or filter.
Points collect_points(const Storage& s, const PointsRequest& request, std::uint64_t frame);

/// The JSON body of `points` (server thread):
/// {"frame", "x", "y", "color", "total", "count", "stride", "limit", "entities": [index,
/// generation, ...], "points": [x, y, c, ...], "archetypes": {"<index>": [names]}}.
std::string write_points(const Points& points);

/// Every component of the world that has numeric fields, with their leaf paths ("pos.x",
/// "rgb[2]", "matrix[3].x"; at most `max_leaves` each): {"components": [{"name", "fields"}]}.
nlohmann::json numeric_fields(const Storage& s);

}  // namespace tessera::detail::inspector
