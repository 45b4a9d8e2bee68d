// The world image: what both snapshot formats (serialize_json.cpp, serialize_binary.cpp) hold,
// and the code they share to read a world into one and to build a world from one.
//
// Both formats hold the same image of a world:
//   - the tick, the generation of every entity index, the free list (in order), the permanent
//     entities and the interned strings;
//   - the components in use, each with its field description (checked against the loading
//     program's: components are matched by name, since ids differ between processes);
//   - the archetypes in creation order (the empty one first), each with its entities in row
//     order and, per component, its values, enable flags and change ticks;
//   - for each relation kind, the reverse lists (sources per target, in relate order);
//   - the sparse components (detail/sparse_set.hpp) that hold values, each with its entities in
//     its set's row order and their values, enable flags and change ticks (a world without
//     them saves as before: JSON without "sparse", binary as format version 1);
//   - the entity names (names.hpp), by entity index.
// Entity records are not stored: an entity's archetype and row are where its row is found,
// the free list links the dead ones. Loading builds a fresh storage and validates everything
// (any input is checked, so random bytes give an error); only a complete, consistent world is
// swapped into the target (`load_image`).
#pragma once

#include <tessera/detail/entity_list.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/reflect.hpp>
#include <tessera/relation.hpp>  // RelationType::make_targets in construct_rows (clang needs it complete)

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tessera::detail::serial {

/// Throws Error(invalid_argument) "`op`: `why`".
[[noreturn]] void fail(const char* op, const std::string& why);

/// The version both formats write and accept.
inline constexpr int format_version = 1;
/// The binary format's version of a world with sparse values (a sparse section after the
/// relations and after the columns); loaders accept both.
inline constexpr int format_version_sparse = 2;

// ------------------------------------------------------------------- what a column holds

/// How a component's values are saved: nothing (a tag), by fields, or as relation targets.
enum class Codec : std::uint8_t { tag, fields, targets };

/// The codec of `info`; throws (naming `op`) when its values can't be saved.
Codec codec_of(const ComponentInfo& info, const char* op);

/// The name a format writes for a codec ("tag", "fields", "targets").
const char* codec_name(Codec codec) noexcept;

using Targets = EntityList;  // Targets<R> adds no member to EntityList

// --------------------------------------------------------------------- the image on save

/// The components in use and, per archetype, its component indices (into `components`).
struct Scan {
    std::vector<ComponentId> components;
    std::vector<std::vector<std::uint32_t>> archetypes;  // from empty_archetype, pending skipped
    std::vector<std::uint32_t> archetype_index;          // storage index of each
    /// The sparse sets that hold values, in the world's order, and each one's component
    /// index (into `components`, where sparse components come after the tables' ones).
    std::vector<const SparseSet*> sparse;
    std::vector<std::uint32_t> sparse_component;
};

/// Scans a quiet storage; throws (naming `op`) when a component in use can't be saved.
Scan scan(const Storage& s, const char* op);

/// The free list, head first.
std::vector<std::uint32_t> free_list(const Storage& s);

/// The indices of the live permanent entities, ascending.
std::vector<std::uint32_t> permanent_list(const Storage& s);

// --------------------------------------------------------------------- the image on load

/// A saved component, resolved to the loading program's.
struct SavedComponent {
    ComponentId id;
    const ComponentInfo* info;
    Codec codec;
    bool tracked;
    bool same_layout;  // binary: flat values can be copied as they are
};

/// The reverse lists of one relation kind.
struct SavedRelation {
    std::uint32_t component;  // index of the Targets<R> component
    std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> sources;
};

/// Everything a loader reads before the columns.
struct Image {
    std::uint64_t tick = 1;
    std::vector<std::uint32_t> generations;
    std::vector<std::uint32_t> free;
    std::vector<std::uint32_t> permanent;
    std::vector<std::string> strings;  // from id 1
    std::vector<SavedComponent> components;
    struct Archetype {
        std::vector<std::uint32_t> components;
        std::vector<std::uint32_t> entities;
    };
    std::vector<Archetype> archetypes;
    std::vector<SavedRelation> relations;
    /// The sparse sections: a sparse component's index and its entities, in set order.
    struct Sparse {
        std::uint32_t component;
        std::vector<std::uint32_t> entities;
    };
    std::vector<Sparse> sparse;
    /// Entity names (names.hpp): (entity index, name), for live entities.
    std::vector<std::pair<std::uint32_t, std::string>> names;
};

/// The loading program's component `name`, saved as `kind` ("tag", "fields" or "targets"),
/// checked to exist and to have that kind (the formats compare field descriptions themselves).
SavedComponent resolve_component(const std::string& name, const std::string& kind, bool tracked,
                                 const char* op);

/// Fills the columns of an archetype being loaded (format specific). `values` constructs `n`
/// values at `dst` or throws having destroyed the ones it made.
class ColumnSource {
public:
    virtual ~ColumnSource() = default;
    /// Constructs the `n` values of component `component` (an index into the archetype's list)
    /// of archetype `archetype` at `dst`.
    virtual void values(std::size_t archetype, std::size_t component, std::byte* dst,
                        std::uint32_t n, Storage& built) = 0;
    /// Enable flags (1 byte per row); the default: all enabled.
    virtual void flags(std::size_t archetype, std::size_t component, std::uint8_t* dst,
                       std::uint32_t n) = 0;
    /// Change ticks of a tracked component.
    virtual void ticks(std::size_t archetype, std::size_t component, std::uint64_t* added,
                       std::uint64_t* changed, std::uint32_t n) = 0;
    /// Constructs the `n` values of sparse section `section` (an index into `Image::sparse`)
    /// at `dst` (not called for a tag).
    virtual void sparse_values(std::size_t section, std::byte* dst, std::uint32_t n,
                               Storage& built) = 0;
    /// Its enable flags (an enableable component).
    virtual void sparse_flags(std::size_t section, std::uint8_t* dst, std::uint32_t n) = 0;
    /// Its change ticks (a tracked set).
    virtual void sparse_ticks(std::size_t section, std::uint64_t* added, std::uint64_t* changed,
                              std::uint32_t n) = 0;
    /// Called once every column is filled (a reader checks it consumed its whole input).
    virtual void finish() {}
};

/// Fills an empty `world` from an image: builds a fresh storage, then swaps it in. Throws
/// (naming `op`) on anything inconsistent, leaving `world` as it was.
void load_image(const Image& image, ColumnSource& columns, World& world, const char* op);

// ------------------------------------------------------------------------- values

/// Calls `fn(field, element address)` for every element of every field of a value at `v`.
template <class Byte, class F>
void each_element(const Schema& schema, Byte* v, F&& fn) {
    for (const FieldInfo& f : schema.fields) {
        for (std::uint32_t k = 0; k < f.count; ++k) fn(f, v + f.offset + std::size_t{k} * f.stride);
    }
}

/// Constructs `n` values of `info` at `dst` with `fill(i, value)`; on a throw, destroys them.
template <class F>
void construct_rows(const ComponentInfo& info, std::byte* dst, std::uint32_t n, Storage& b,
                    F&& fill) {
    std::uint32_t made = 0;  // values constructed
    try {
        for (std::uint32_t i = 0; i < n; ++i) {
            std::byte* v = dst + std::size_t{i} * info.size;
            if (info.relation != nullptr)
                info.relation().make_targets(v, b.resource());
            else
                info.construct_value(v);
            made = i + 1;
            fill(i, v);
        }
    } catch (...) {
        if (info.destroy != nullptr) info.destroy(dst, made);
        throw;
    }
}

}  // namespace tessera::detail::serial
