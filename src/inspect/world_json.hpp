// JSON views of world parts for the inspector (internal, not API): a component's reflected
// fields flattened to editable leaves, component lookup by name, an archetype's names. Called
// on the world's thread only (Inspector::update).
#pragma once

#include <tessera/detail/storage.hpp>
#include <tessera/reflect.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::detail::inspector {

/// Field values shown per component at most (the rest: `"truncated": true`).
inline constexpr std::size_t max_leaves = 256;

/// A bad request: its HTTP status and message (thrown while answering, caught by the
/// inspector, which answers with it).
struct RequestError {
    int status;
    std::string message;
};

/// Throws RequestError{status, message}.
[[noreturn]] void fail(int status, std::string message);

/// "index:generation".
std::string entity_text(Entity e);

/// The comma-separated names of `list` (empty items skipped).
std::vector<std::string> split_names(const std::string& list);

/// Archetypes a user can see, in creation order (the empty one included, the sentinels not).
template <class F>
void each_archetype(const Storage& s, F&& fn) {
    for (std::size_t i = empty_archetype; i < s.archetype_end(); ++i) {
        if (i == pending_archetype) continue;
        fn(s.archetype(static_cast<std::uint32_t>(i)));
    }
}

/// The ids of component names (`find_by_name`), in order. @throws RequestError(400) naming
/// an unknown or ambiguous one.
std::vector<ComponentId> ids_by_name(const Storage& s, const std::vector<std::string>& names);

/// Whether archetype `a` has every one of `with` and none of `without`.
bool matches(const Archetype& a, const std::vector<ComponentId>& with,
             const std::vector<ComponentId>& without);

/// The component of the world named `name`: its exact name, or else the one whose name ends
/// in "::" + `name` (when exactly one does). Nothing when none, with `*problem` saying why
/// (unknown, or ambiguous when several end so).
std::optional<ComponentId> find_by_name(const Storage& s, std::string_view name,
                                        std::string* problem);

/// The JSON value of one scalar field of type `type` at `p` (null for a record, a non-finite
/// float or an unknown string id; a `str` field's text).
nlohmann::json leaf_value(const Storage& s, Field type, const std::byte* p);

/// Appends the leaves of field `f` (a record's fields, an array's elements) of the value at
/// `base` to `out` as {"path", "type", "value"} objects, paths prefixed by `prefix`; stops
/// at `max_leaves` with `truncated` set.
void add_leaves(const Storage& s, const FieldInfo& f, const std::byte* base,
                const std::string& prefix, nlohmann::json& out, bool& truncated);

/// The component names of archetype `a`, in its id order.
nlohmann::json names_of(const Archetype& a);

}  // namespace tessera::detail::inspector
