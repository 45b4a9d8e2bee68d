// Save and load (JSON and binary) and state_hash (serialize.hpp).
//
// Both formats hold the same image of a world:
//   - the tick, the generation of every entity index, the free list (in order), the permanent
//     entities and the interned strings;
//   - the components in use, each with its field description (checked against the loading
//     program's: components are matched by name, since ids differ between processes);
//   - the archetypes in creation order (the empty one first), each with its entities in row
//     order and, per component, its values, enable flags and change ticks;
//   - for each relation kind, the reverse lists (sources per target, in relate order).
// Entity records are not stored: an entity's archetype and row are where its row is found,
// the free list links the dead ones. Loading builds a fresh storage and validates everything
// (any input is checked, so random bytes give an error); only a complete, consistent world is
// swapped into the target.
#include <tessera/detail/field_value.hpp>
#include <tessera/detail/storage.hpp>
#include <tessera/dynamic.hpp>
#include <tessera/error.hpp>
#include <tessera/reflect.hpp>
#include <tessera/relation.hpp>
#include <tessera/serialize.hpp>
#include <tessera/world.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

static_assert(std::endian::native == std::endian::little,
              "tessera: the binary snapshot format is little-endian; big-endian hosts need "
              "byte swapping in src/serialize.cpp");

namespace tessera::detail {

// Storage internals a loader needs (a friend of Storage).
struct StorageAccess {
    static void set_tracked(Storage& s, ComponentId id) { s.components_[id.value].tracked = true; }
    static Archetype& create(Storage& s, std::span<const ComponentId> sorted) {
        return s.create_archetype(sorted);
    }
    static void grow(Storage& s, Archetype& a, std::size_t n) { s.reserve_rows(a, n); }
    static void records(Storage& s, std::span<const std::uint32_t> generations) {
        s.reserve_records(generations.size());
        for (std::size_t i = 0; i < generations.size(); ++i)
            s.record_data_[i] = EntityRecord{dead_archetype, no_index, generations[i]};
        s.record_count_ = static_cast<std::uint32_t>(generations.size());
        s.free_count_ = generations.size();  // all dead until placed
    }
    static EntityRecord& record(Storage& s, std::uint32_t index) { return s.record_data_[index]; }
    static void finish(Storage& s, std::uint32_t free_head, std::size_t free_count,
                       std::size_t alive, std::uint64_t tick) {
        s.free_head_ = free_head;
        s.free_count_ = free_count;
        s.alive_ = alive;
        s.tick_ = tick;
    }
};

namespace {

// ------------------------------------------------------------------------------ errors

[[noreturn]] void fail(const char* op, const std::string& why) {
    throw Error(errc::invalid_argument, std::string(op) + ": " + why);
}

// ------------------------------------------------------------------- what a column holds

enum class Codec : std::uint8_t { tag, fields, targets };

Codec codec_of(const ComponentInfo& info, const char* op) {
    if (info.is_tag()) return Codec::tag;
    if (info.relation != nullptr) return Codec::targets;
    if (info.schema != nullptr) return Codec::fields;
    fail(op, "component " + std::string(info.name) +
                 " has no field metadata, so its values can't be saved (describe it with "
                 "TESSERA_REFLECT, or leave it out of saved worlds)");
}

using Targets = EntityList;  // Targets<R> adds no member to EntityList

// --------------------------------------------------------------------- the image on save

// The components in use and, per archetype, its component indices (into `components`).
struct Scan {
    std::vector<ComponentId> components;
    std::vector<std::vector<std::uint32_t>> archetypes;  // from empty_archetype, pending skipped
    std::vector<std::uint32_t> archetype_index;          // storage index of each
};

Scan scan(const Storage& s, const char* op) {
    check_quiet(s, op);
    Scan out;
    std::vector<std::int64_t> slot;
    for (std::size_t i = empty_archetype; i < s.archetype_slots(); ++i) {
        if (i == pending_archetype) continue;
        const Archetype& a = s.archetype(static_cast<std::uint32_t>(i));
        std::vector<std::uint32_t> comps;
        for (const ComponentId id : a.ids) {
            if (id.value >= slot.size()) slot.resize(id.value + 1, -1);
            if (slot[id.value] < 0) {
                codec_of(component_info(id), op);
                slot[id.value] = static_cast<std::int64_t>(out.components.size());
                out.components.push_back(id);
            }
            comps.push_back(static_cast<std::uint32_t>(slot[id.value]));
        }
        out.archetypes.push_back(std::move(comps));
        out.archetype_index.push_back(static_cast<std::uint32_t>(i));
    }
    return out;
}

// The free list, head first.
std::vector<std::uint32_t> free_list(const Storage& s) {
    std::vector<std::uint32_t> out;
    for (std::uint32_t i = s.free_head(); i != no_index; i = s.records()[i].row) out.push_back(i);
    return out;
}

std::vector<std::uint32_t> permanent_list(const Storage& s) {
    std::vector<std::uint32_t> out;
    const std::span<const std::uint64_t> words = s.permanent_words();
    for (std::size_t w = 0; w < words.size(); ++w) {
        for (std::uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
            const auto i = static_cast<std::uint32_t>(
                w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
            if (i < s.record_count() && s.records()[i].archetype != dead_archetype)
                out.push_back(i);
        }
    }
    return out;
}

// --------------------------------------------------------------------- the image on load

struct SavedComponent {
    ComponentId id;
    const ComponentInfo* info;
    Codec codec;
    bool tracked;
    bool same_layout;  // binary: flat values can be copied as they are
};

struct SavedRelation {
    std::uint32_t component;  // index of the Targets<R> component
    std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> sources;
};

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
};

// Fills the columns of an archetype being loaded (format specific). `values` constructs `n`
// values at `dst` or throws having destroyed the ones it made.
class ColumnSource {
public:
    virtual ~ColumnSource() = default;
    virtual void values(std::size_t archetype, std::size_t component, std::byte* dst,
                        std::uint32_t n, Storage& built) = 0;
    /// Enable flags (1 byte per row); the default: all enabled.
    virtual void flags(std::size_t archetype, std::size_t component, std::uint8_t* dst,
                       std::uint32_t n) = 0;
    /// Change ticks of a tracked component.
    virtual void ticks(std::size_t archetype, std::size_t component, std::uint64_t* added,
                       std::uint64_t* changed, std::uint32_t n) = 0;
    /// Called once every column is filled (a reader checks it consumed its whole input).
    virtual void finish() {}
};

// Checks the relations of `b` (built from `image`, tables complete) and sets the reverse lists:
// every target list is non-empty, of live distinct entities; a relation's data and targets
// come together; the saved reverse lists hold exactly the same pairs; ChildOf has no loop.
void check_relations(const Image& image, Storage& b, const char* op) {
    const std::size_t n_records = image.generations.size();
    auto alive = [&](Entity e) { return b.record(e) != nullptr; };
    for (std::size_t ci = 0; ci < image.components.size(); ++ci) {
        const SavedComponent& sc = image.components[ci];
        if (sc.codec != Codec::targets) continue;
        const RelationType& type = sc.info->relation();
        // Duplicates are found with stamps by entity index (lists may be long: no quadratic
        // scans).
        std::vector<std::uint64_t> stamp(n_records, 0);
        std::uint64_t list_no = 0;
        std::vector<std::uint64_t> forward;  // (target index, source index) pairs
        for (std::size_t i = empty_archetype; i < b.archetype_slots(); ++i) {
            const Archetype& a = b.archetype(static_cast<std::uint32_t>(i));
            if (a.contains(type.data) != a.contains(type.targets))
                fail(op, std::string(sc.info->name) +
                             ": a relation's data and targets must come together");
            if (!a.contains(type.targets)) continue;
            for (std::uint32_t row = 0; row < a.size; ++row) {
                const auto& list =
                    *reinterpret_cast<const Targets*>(b.find(a.entities[row], type.targets));
                if (list.empty()) fail(op, std::string(sc.info->name) + ": an empty target list");
                ++list_no;
                for (const Entity t : list) {
                    if (!alive(t)) fail(op, std::string(sc.info->name) + ": a target is not alive");
                    if (stamp[t.index] == list_no)
                        fail(op, std::string(sc.info->name) + ": a target appears twice");
                    stamp[t.index] = list_no;
                    forward.push_back(std::uint64_t{t.index} << 32 | a.entities[row].index);
                }
            }
        }
        std::vector<std::uint64_t> reverse;
        std::vector<std::uint8_t> listed(n_records, 0);
        std::vector<Entity> sources;
        for (const SavedRelation& sr : image.relations) {
            if (sr.component != ci) continue;
            for (const auto& [target, saved] : sr.sources) {
                if (target >= n_records || listed[target] != 0)
                    fail(op, std::string(sc.info->name) + ": a bad or repeated reverse list");
                listed[target] = 1;
                const Entity t{target, image.generations[target]};
                if (!alive(t))
                    fail(op, std::string(sc.info->name) + ": a reverse list of a dead target");
                sources.clear();
                for (const std::uint32_t index : saved) {
                    if (index >= n_records)
                        fail(op,
                             std::string(sc.info->name) + ": a reverse list names a bad source");
                    sources.push_back(Entity{index, image.generations[index]});
                    reverse.push_back(std::uint64_t{target} << 32 | index);
                }
                if (!sources.empty()) set_sources(b, type, target, sources);
            }
        }
        // The reverse lists hold exactly the relations' pairs (the forward ones are distinct).
        std::sort(forward.begin(), forward.end());
        std::sort(reverse.begin(), reverse.end());
        if (reverse != forward)
            fail(op, std::string(sc.info->name) + ": the reverse lists disagree with the targets");
        if (!type.hierarchy) continue;
        // No loop: a depth-first walk up the parents, iterative (0 new, 1 on the path, 2 done).
        std::vector<std::uint8_t> state(n_records, 0);
        std::vector<std::pair<Entity, std::size_t>> path;
        for (std::uint32_t i = 0; i < n_records; ++i) {
            if (state[i] != 0) continue;
            const Entity root{i, image.generations[i]};
            if (!alive(root)) continue;
            path.emplace_back(root, 0);
            state[i] = 1;
            while (!path.empty()) {
                auto& [e, next] = path.back();
                const auto* parents = reinterpret_cast<const Targets*>(b.find(e, type.targets));
                if (parents == nullptr || next == parents->size()) {
                    state[e.index] = 2;
                    path.pop_back();
                    continue;
                }
                const Entity p = parents->span()[next++];
                if (state[p.index] == 1)
                    fail(op, std::string(sc.info->name) + ": the hierarchy has a loop");
                if (state[p.index] == 0) {
                    state[p.index] = 1;
                    path.emplace_back(p, 0);
                }
            }
        }
    }
}

// Builds `b` (fresh, the target's resource) from `image` and `columns`, checking everything.
void build(const Image& image, ColumnSource& columns, Storage& b, const char* op) {
    const std::size_t n_records = image.generations.size();
    if (n_records >= 0xFFFFFFFEu) fail(op, "too many entities");
    for (std::size_t i = 0; i < image.strings.size(); ++i) {
        if (b.strings().intern(image.strings[i]) != i + 1)
            fail(op, "string " + std::to_string(i + 1) + " is empty or repeated");
    }
    // Components: recorded, tracked ones tracked, relations registered before any table.
    for (const SavedComponent& c : image.components) {
        b.ensure_component(c.id);
        if (c.tracked) {
            if (!c.info->track_changes || c.info->is_tag())
                fail(op, "component " + std::string(c.info->name) + " can't carry change ticks");
            StorageAccess::set_tracked(b, c.id);
        }
    }
    for (const SavedComponent& c : image.components) {
        if (c.codec == Codec::targets) register_relation(b, c.info->relation(), op);
    }
    for (const std::uint32_t g : image.generations) {
        if (g == 0 || g == 0xFFFFFFFFu) fail(op, "an entity has generation " + std::to_string(g));
    }
    StorageAccess::records(b, image.generations);
    std::size_t alive = 0;
    std::vector<ComponentId> ids;
    std::vector<ComponentId> sorted;
    for (std::size_t ai = 0; ai < image.archetypes.size(); ++ai) {
        const Image::Archetype& sa = image.archetypes[ai];
        ids.clear();
        for (const std::uint32_t c : sa.components) {
            if (c >= image.components.size()) fail(op, "an archetype names an unknown component");
            ids.push_back(image.components[c].id);
        }
        sorted = ids;
        std::sort(sorted.begin(), sorted.end());
        if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
            fail(op, "an archetype lists a component twice");
        if ((ai == 0) != sorted.empty())
            fail(op, "the first archetype must be the empty one, and only it");
        Archetype* a = &b.archetype(empty_archetype);
        if (ai != 0) {
            if (b.find_archetype(sorted) != nullptr)
                fail(op, "two archetypes have the same components");
            a = &StorageAccess::create(b, sorted);
        }
        const auto n = static_cast<std::uint32_t>(sa.entities.size());
        if (n == 0) continue;
        StorageAccess::grow(b, *a, n);
        for (std::uint32_t row = 0; row < n; ++row) {
            const std::uint32_t index = sa.entities[row];
            if (index >= n_records) fail(op, "a row names an entity index past the entity count");
            EntityRecord& r = StorageAccess::record(b, index);
            if (r.archetype != dead_archetype) fail(op, "an entity has two rows");
            r.archetype = a->index;
            r.row = row;
            a->entities[row] = Entity{index, r.generation};
        }
        std::vector<Column*> filled;  // columns whose values exist
        try {
            for (std::size_t k = 0; k < sa.components.size(); ++k) {
                const std::int32_t c = a->slot(ids[k]);
                if (c < 0) continue;  // a tag
                Column& col = a->columns[static_cast<std::uint32_t>(c)];
                filled.reserve(filled.size() + 1);
                columns.values(ai, k, col.data, n, b);
                filled.push_back(&col);
                if (col.enabled != nullptr) columns.flags(ai, k, col.enabled, n);
                if (col.changed != nullptr) {
                    columns.ticks(ai, k, col.added, col.changed, n);
                    col.bound_blocks(n);
                }
            }
        } catch (...) {
            for (Column* col : filled) {
                if (col->destroy != nullptr) col->destroy(col->data, n);
            }
            throw;
        }
        a->size = n;
        alive += n;
    }
    if (image.free.size() + alive != n_records)
        fail(op, "the free list doesn't hold exactly the dead entities");
    std::uint32_t head = no_index;
    std::vector<std::uint8_t> freed(n_records, 0);
    for (std::size_t i = image.free.size(); i-- > 0;) {
        const std::uint32_t index = image.free[i];
        if (index >= n_records) fail(op, "the free list names an index past the entity count");
        EntityRecord& r = StorageAccess::record(b, index);
        if (r.archetype != dead_archetype || freed[index] != 0)
            fail(op, "the free list names a live or repeated index");
        freed[index] = 1;
        r.row = head;
        head = index;
    }
    StorageAccess::finish(b, head, image.free.size(), alive,
                          std::max<std::uint64_t>(image.tick, 1));
    for (const std::uint32_t index : image.permanent) {
        if (index >= n_records || StorageAccess::record(b, index).archetype == dead_archetype)
            fail(op, "a permanent entity is not alive");
        b.reserve_permanent(index);
        b.set_permanent(index);
    }
    check_relations(image, b, op);
}

// Fills an empty `world` from an image: builds a fresh storage, then swaps it in.
void load_image(const Image& image, ColumnSource& columns, World& world, const char* op) {
    Storage& target = world.storage();
    check_quiet(target, op);
    if (target.count() != 0) fail(op, "the target world is not empty");
    const StorageGuard guard{new_storage(target.resource())};
    Storage* b = guard.s;
    build(image, columns, *b, op);
    columns.finish();
    replace_state(target, *b);
}

// ---------------------------------------------------------------- field descriptions

using nlohmann::json;

// Calls `fn(field, element address)` for every element of every field of a value at `v`.
template <class Byte, class F>
void each_element(const Schema& schema, Byte* v, F&& fn) {
    for (const FieldInfo& f : schema.fields) {
        for (std::uint32_t k = 0; k < f.count; ++k) fn(f, v + f.offset + std::size_t{k} * f.stride);
    }
}

json describe_json(const Schema& schema) {
    json fields = json::array();
    for (const FieldInfo& f : schema.fields) {
        json d = {{"name", f.name}, {"type", to_string(f.type)}};
        if (f.count != 1) d["count"] = f.count;
        if (f.is_enum) d["enum"] = true;
        if (f.type == Field::record) d["fields"] = describe_json(*f.schema);
        fields.push_back(std::move(d));
    }
    return fields;
}

// Whether the saved description `d` has the program's fields; else names the first difference.
std::string field_mismatch(const json& d, const Schema& schema, const std::string& prefix) {
    if (!d.is_array()) return "a bad field description";
    for (std::size_t i = 0; i < std::max(d.size(), schema.fields.size()); ++i) {
        if (i >= d.size())
            return "field '" + prefix + std::string(schema.fields[i].name) +
                   "' is not in the saved data";
        const json& f = d[i];
        if (!f.is_object() || !f.contains("name") || !f["name"].is_string())
            return "a bad field description";
        const std::string name = f["name"].get<std::string>();
        if (i >= schema.fields.size())
            return "saved field '" + prefix + name + "' is not in the program's " +
                   std::string(schema.name);
        const FieldInfo& p = schema.fields[i];
        const std::string type = f.value("type", std::string());
        const std::uint32_t count = f.contains("count") && f["count"].is_number_unsigned()
                                        ? f["count"].get<std::uint32_t>()
                                        : 1;
        if (name != p.name || type != to_string(p.type) || count != p.count ||
            f.value("enum", false) != p.is_enum) {
            return "field '" + prefix + std::string(p.name) + "' differs: saved as '" + name +
                   "' " + type + (count != 1 ? "[" + std::to_string(count) + "]" : "") +
                   ", the program has " + std::string(to_string(p.type)) +
                   (p.count != 1 ? "[" + std::to_string(p.count) + "]" : "");
        }
        if (p.type == Field::record) {
            std::string inner = field_mismatch(f.contains("fields") ? f["fields"] : json(),
                                               *p.schema, prefix + name + ".");
            if (!inner.empty()) return inner;
        }
    }
    return {};
}

// ---------------------------------------------------------------------- JSON values

json scalar_to_json(Field t, const std::byte* p, const StringTable* strings) {
    if (t == Field::record) return nullptr;
    return visit_scalar(t, p, [&](const auto& v) -> json {
        using V = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_floating_point_v<V>) {
            if (std::isnan(v)) return "nan";
            if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
            return static_cast<double>(v);
        } else if constexpr (std::is_same_v<V, StringId>) {
            return v.value == 0 || strings == nullptr ? std::string()
                                                      : std::string(strings->get(v.value));
        } else {
            return v;
        }
    });
}

json value_to_json(const Schema& schema, const std::byte* v, const StringTable* strings) {
    json out = json::object();
    for (const FieldInfo& f : schema.fields) {
        auto one = [&](const std::byte* p) {
            return f.type == Field::record ? value_to_json(*f.schema, p, strings)
                                           : scalar_to_json(f.type, p, strings);
        };
        if (f.count == 1) {
            out[std::string(f.name)] = one(v + f.offset);
        } else {
            json a = json::array();
            for (std::uint32_t k = 0; k < f.count; ++k)
                a.push_back(one(v + f.offset + std::size_t{k} * f.stride));
            out[std::string(f.name)] = std::move(a);
        }
    }
    return out;
}

// Parses one scalar into `p` (already holding a value-initialised value), or throws `why`.
void json_to_scalar(const json& j, Field t, std::byte* p, const StringTable& strings,
                    const std::function<void(const std::string&)>& bad) {
    auto integer = [&]<class T>(T*) {
        T x{};
        if (j.is_number_unsigned()) {
            const auto u = j.get<std::uint64_t>();
            if (u > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) bad("out of range");
            x = static_cast<T>(u);
        } else if (j.is_number_integer()) {
            const auto i = j.get<std::int64_t>();
            if constexpr (std::is_signed_v<T>) {
                if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max())
                    bad("out of range");
            } else {
                if (i < 0 || static_cast<std::uint64_t>(i) > std::numeric_limits<T>::max())
                    bad("out of range");
            }
            x = static_cast<T>(i);
        } else {
            bad("not an integer");
        }
        std::memcpy(p, &x, sizeof(T));
    };
    auto real = [&]() -> double {
        if (j.is_number()) return j.get<double>();
        if (j.is_string()) {
            const std::string s = j.get<std::string>();
            if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
            if (s == "inf") return std::numeric_limits<double>::infinity();
            if (s == "-inf") return -std::numeric_limits<double>::infinity();
        }
        bad("not a number");
        return 0;
    };
    switch (t) {
        case Field::f32: {
            const auto x = static_cast<float>(real());
            std::memcpy(p, &x, 4);
            return;
        }
        case Field::f64: {
            const double x = real();
            std::memcpy(p, &x, 8);
            return;
        }
        case Field::i8: return integer(static_cast<std::int8_t*>(nullptr));
        case Field::i16: return integer(static_cast<std::int16_t*>(nullptr));
        case Field::i32: return integer(static_cast<std::int32_t*>(nullptr));
        case Field::i64: return integer(static_cast<std::int64_t*>(nullptr));
        case Field::u8: return integer(static_cast<std::uint8_t*>(nullptr));
        case Field::u16: return integer(static_cast<std::uint16_t*>(nullptr));
        case Field::u32: return integer(static_cast<std::uint32_t*>(nullptr));
        case Field::u64: return integer(static_cast<std::uint64_t*>(nullptr));
        case Field::boolean:
            if (!j.is_boolean()) bad("not a bool");
            *p = std::byte{static_cast<unsigned char>(j.get<bool>() ? 1 : 0)};
            return;
        case Field::str: {
            if (!j.is_string()) bad("not a string");
            const std::string& s = j.get_ref<const std::string&>();
            const std::uint32_t id = s.empty() ? 0 : strings.find(s);
            if (id == 0xFFFFFFFFu) bad("a string that is not in the saved strings");
            std::memcpy(p, &id, 4);
            return;
        }
        case Field::string:
            if (!j.is_string()) bad("not a string");
            *reinterpret_cast<std::string*>(p) = j.get<std::string>();
            return;
        case Field::record: break;
    }
}

void json_to_value(const json& j, const Schema& schema, std::byte* v, const StringTable& strings,
                   const std::function<void(const std::string&)>& bad) {
    if (!j.is_object()) bad("a value is not an object");
    for (const FieldInfo& f : schema.fields) {
        const auto it = j.find(std::string(f.name));
        if (it == j.end()) bad("a value lacks field '" + std::string(f.name) + "'");
        auto one = [&](const json& e, std::byte* p) {
            if (f.type == Field::record)
                json_to_value(e, *f.schema, p, strings, bad);
            else
                json_to_scalar(e, f.type, p, strings, [&](const std::string& why) {
                    bad("field '" + std::string(f.name) + "': " + why);
                });
        };
        if (f.count == 1) {
            one(*it, v + f.offset);
        } else {
            if (!it->is_array() || it->size() != f.count)
                bad("field '" + std::string(f.name) + "' is not an array of " +
                    std::to_string(f.count));
            for (std::uint32_t k = 0; k < f.count; ++k)
                one((*it)[k], v + f.offset + std::size_t{k} * f.stride);
        }
    }
}

// Constructs `n` values of `info` at `dst` with `fill(i, value)`; on a throw, destroys them.
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

// --------------------------------------------------------------------------- JSON

constexpr const char* json_format = "tessera-world";
constexpr int format_version = 1;

json entity_json(Entity e) {
    return json::array({e.index, e.generation});
}

json save_json(const Storage& s, const char* op) {
    const Scan sc = scan(s, op);
    json out;
    out["format"] = json_format;
    out["version"] = format_version;
    out["tick"] = s.tick();
    std::vector<std::uint32_t> generations(s.record_count());
    for (std::uint32_t i = 0; i < s.record_count(); ++i) generations[i] = s.records()[i].generation;
    out["generations"] = generations;
    out["free"] = free_list(s);
    out["permanent"] = permanent_list(s);
    json strings = json::array();
    if (const StringTable* t = s.strings_if()) {
        for (std::uint32_t i = 1; i < t->size(); ++i) strings.push_back(std::string(t->get(i)));
    }
    out["strings"] = std::move(strings);
    json comps = json::array();
    for (const ComponentId id : sc.components) {
        const ComponentInfo& info = component_info(id);
        const Codec codec = codec_of(info, op);
        json c = {{"name", info.name},
                  {"kind", codec == Codec::tag       ? "tag"
                           : codec == Codec::targets ? "targets"
                                                     : "fields"},
                  {"tracked", s.tracked(id)}};
        if (codec == Codec::fields) c["fields"] = describe_json(*info.schema);
        comps.push_back(std::move(c));
    }
    out["components"] = std::move(comps);
    json archetypes = json::array();
    for (std::size_t ai = 0; ai < sc.archetypes.size(); ++ai) {
        const Archetype& a = s.archetype(sc.archetype_index[ai]);
        json ja;
        ja["components"] = sc.archetypes[ai];
        std::vector<std::uint32_t> entities(a.size);
        for (std::uint32_t r = 0; r < a.size; ++r) entities[r] = a.entities[r].index;
        ja["entities"] = std::move(entities);
        json values = json::array();
        json flags = json::array();
        json ticks = json::array();
        for (const std::uint32_t ci : sc.archetypes[ai]) {
            const ComponentId id = sc.components[ci];
            const ComponentInfo& info = component_info(id);
            const std::int32_t slot = a.slot(id);
            if (slot < 0 || a.size == 0) {  // nothing to hold (the same whatever the history)
                values.push_back(nullptr);
                flags.push_back(nullptr);
                ticks.push_back(nullptr);
                continue;
            }
            const Column& col = a.columns[static_cast<std::uint32_t>(slot)];
            json column = json::array();
            for (std::uint32_t r = 0; r < a.size; ++r) {
                const std::byte* v = col.data + std::size_t{r} * col.size;
                if (info.relation != nullptr) {
                    json list = json::array();
                    for (const Entity t : *reinterpret_cast<const Targets*>(v))
                        list.push_back(entity_json(t));
                    column.push_back(std::move(list));
                } else {
                    column.push_back(value_to_json(*info.schema, v, s.strings_if()));
                }
            }
            values.push_back(std::move(column));
            if (col.enabled != nullptr)
                flags.push_back(std::vector<std::uint8_t>(col.enabled, col.enabled + a.size));
            else
                flags.push_back(nullptr);
            if (col.changed != nullptr) {
                std::vector<std::uint64_t> added(col.added, col.added + a.size);
                std::vector<std::uint64_t> changed(a.size);
                for (std::uint32_t r = 0; r < a.size; ++r) changed[r] = col.changed_at(r);
                ticks.push_back(json::array({added, changed}));
            } else {
                ticks.push_back(nullptr);
            }
        }
        ja["values"] = std::move(values);
        ja["enabled"] = std::move(flags);
        ja["ticks"] = std::move(ticks);
        archetypes.push_back(std::move(ja));
    }
    out["archetypes"] = std::move(archetypes);
    json relations = json::array();
    for (const RelationKindView& k : relation_kinds(s)) {
        json lists = json::array();
        for (std::size_t t = 0; t < k.sources.size(); ++t) {
            if (k.sources[t].empty()) continue;
            std::vector<std::uint32_t> sources;
            for (const Entity e : k.sources[t]) sources.push_back(e.index);
            lists.push_back(json::array({t, sources}));
        }
        relations.push_back(
            {{"targets", component_info(k.type->targets).name}, {"sources", std::move(lists)}});
    }
    out["relations"] = std::move(relations);
    return out;
}

// The loading program's component for a saved description, checked.
SavedComponent resolve_component(const std::string& name, const std::string& kind, bool tracked,
                                 const json* fields, const char* op) {
    const ComponentId id = find_component(name);
    if (!id.valid())
        fail(op,
             "unknown component '" + name + "' (not defined or not registered in this program)");
    const ComponentInfo& info = component_info(id);
    const Codec codec = codec_of(info, op);
    const char* expected = codec == Codec::tag       ? "tag"
                           : codec == Codec::targets ? "targets"
                                                     : "fields";
    if (kind != expected)
        fail(op,
             "component '" + name + "' was saved as " + kind + ", the program's is " + expected);
    if (codec == Codec::fields && fields != nullptr) {
        const std::string why = field_mismatch(*fields, *info.schema, "");
        if (!why.empty()) fail(op, "component '" + name + "': " + why);
    }
    return SavedComponent{id, &info, codec, tracked, true};
}

template <class T>
std::vector<T> json_list(const json& j, const char* what, const char* op) {
    if (!j.is_array()) fail(op, std::string(what) + " is not an array");
    std::vector<T> out;
    out.reserve(j.size());
    for (const json& e : j) {
        if (!e.is_number_unsigned() || e.get<std::uint64_t>() > std::numeric_limits<T>::max())
            fail(op, std::string(what) + " holds a bad number");
        out.push_back(e.get<T>());
    }
    return out;
}

const json& member(const json& j, const char* key, const char* op) {
    if (!j.is_object() || !j.contains(key)) fail(op, std::string("missing '") + key + "'");
    return j[key];
}

class JsonColumns final : public ColumnSource {
public:
    JsonColumns(const json& archetypes, const Image& image)
        : archetypes_(archetypes), image_(image) {}

    void values(std::size_t ai, std::size_t k, std::byte* dst, std::uint32_t n,
                Storage& b) override {
        const SavedComponent& sc = image_.components[image_.archetypes[ai].components[k]];
        const json& column = cell(ai, "values", k, n);
        construct_rows(*sc.info, dst, n, b, [&](std::uint32_t r, std::byte* v) {
            const json& j = column[r];
            auto bad = [&](const std::string& why) {
                fail(op_, "component '" + std::string(sc.info->name) + "', row " +
                              std::to_string(r) + ": " + why);
            };
            if (sc.codec == Codec::targets) {
                if (!j.is_array()) bad("targets are not an array");
                auto& list = *reinterpret_cast<Targets*>(v);
                list.reserve(j.size());
                for (const json& e : j) {
                    if (!e.is_array() || e.size() != 2 || !e[0].is_number_unsigned() ||
                        !e[1].is_number_unsigned() || e[0].get<std::uint64_t>() > 0xFFFFFFFFu ||
                        e[1].get<std::uint64_t>() > 0xFFFFFFFFu)
                        bad("a bad target entity");
                    list.push_back(Entity{e[0].get<std::uint32_t>(), e[1].get<std::uint32_t>()});
                }
            } else {
                json_to_value(j, *sc.info->schema, v, b.strings(), bad);
            }
        });
    }
    void flags(std::size_t ai, std::size_t k, std::uint8_t* dst, std::uint32_t n) override {
        const json& column = cell(ai, "enabled", k, n);
        for (std::uint32_t r = 0; r < n; ++r) {
            if (!column[r].is_number_unsigned() || column[r].get<std::uint64_t>() > 1)
                fail(op_, "a bad enable flag");
            dst[r] = column[r].get<std::uint8_t>();
        }
    }
    void ticks(std::size_t ai, std::size_t k, std::uint64_t* added, std::uint64_t* changed,
               std::uint32_t n) override {
        const json& pair = member(archetypes_[ai], "ticks", op_);
        if (!pair.is_array() || pair.size() <= k || !pair[k].is_array() || pair[k].size() != 2)
            fail(op_, "missing change ticks");
        const auto a = json_list<std::uint64_t>(pair[k][0], "ticks", op_);
        const auto c = json_list<std::uint64_t>(pair[k][1], "ticks", op_);
        if (a.size() != n || c.size() != n) fail(op_, "change ticks of the wrong length");
        std::copy(a.begin(), a.end(), added);
        std::copy(c.begin(), c.end(), changed);
    }

private:
    const json& cell(std::size_t ai, const char* key, std::size_t k, std::uint32_t n) const {
        const json& cells = member(archetypes_[ai], key, op_);
        if (!cells.is_array() || cells.size() <= k || !cells[k].is_array() || cells[k].size() != n)
            fail(op_, std::string("'") + key + "' of an archetype has the wrong shape");
        return cells[k];
    }
    const json& archetypes_;
    const Image& image_;
    const char* op_ = "from_json";
};

void load_json(const json& j, World& world) {
    const char* op = "from_json";
    if (!j.is_object() || j.value("format", std::string()) != json_format)
        fail(op, "not a tessera world (no \"format\": \"tessera-world\")");
    if (j.value("version", 0) != format_version) fail(op, "an unsupported format version");
    Image image;
    const json& tick = member(j, "tick", op);
    if (!tick.is_number_unsigned()) fail(op, "a bad tick");
    image.tick = tick.get<std::uint64_t>();
    image.generations = json_list<std::uint32_t>(member(j, "generations", op), "generations", op);
    image.free = json_list<std::uint32_t>(member(j, "free", op), "free", op);
    image.permanent = json_list<std::uint32_t>(member(j, "permanent", op), "permanent", op);
    for (const json& s : member(j, "strings", op)) {
        if (!s.is_string()) fail(op, "a string is not a string");
        image.strings.push_back(s.get<std::string>());
    }
    const json& comps = member(j, "components", op);
    if (!comps.is_array()) fail(op, "components is not an array");
    for (const json& c : comps) {
        const json& name = member(c, "name", op);
        const json& kind = member(c, "kind", op);
        if (!name.is_string() || !kind.is_string()) fail(op, "a bad component description");
        const bool tracked = c.value("tracked", false);
        image.components.push_back(
            resolve_component(name.get<std::string>(), kind.get<std::string>(), tracked,
                              c.contains("fields") ? &c["fields"] : nullptr, op));
        if (image.components.back().codec == Codec::fields && !c.contains("fields"))
            fail(op, "component '" + name.get<std::string>() + "' has no field description");
    }
    const json& archetypes = member(j, "archetypes", op);
    if (!archetypes.is_array()) fail(op, "archetypes is not an array");
    for (const json& a : archetypes) {
        image.archetypes.push_back(Image::Archetype{
            json_list<std::uint32_t>(member(a, "components", op), "an archetype's components", op),
            json_list<std::uint32_t>(member(a, "entities", op), "an archetype's entities", op)});
    }
    const json& relations = member(j, "relations", op);
    if (!relations.is_array()) fail(op, "relations is not an array");
    for (const json& r : relations) {
        const json& targets = member(r, "targets", op);
        if (!targets.is_string()) fail(op, "a bad relation");
        SavedRelation sr{static_cast<std::uint32_t>(image.components.size()), {}};
        for (std::size_t i = 0; i < image.components.size(); ++i) {
            if (image.components[i].info->name == targets.get_ref<const std::string&>())
                sr.component = static_cast<std::uint32_t>(i);
        }
        const json& lists = member(r, "sources", op);
        if (!lists.is_array()) fail(op, "a bad relation");
        for (const json& l : lists) {
            if (!l.is_array() || l.size() != 2 || !l[0].is_number_unsigned() ||
                l[0].get<std::uint64_t>() > 0xFFFFFFFFu)
                fail(op, "a bad reverse relation list");
            sr.sources.emplace_back(l[0].get<std::uint32_t>(),
                                    json_list<std::uint32_t>(l[1], "sources", op));
        }
        image.relations.push_back(std::move(sr));
    }
    JsonColumns columns(archetypes, image);
    load_image(image, columns, world, op);
}

// ------------------------------------------------------------------------- binary

constexpr char binary_magic[4] = {'T', 'S', 'R', 'W'};

class Writer {
public:
    explicit Writer(std::vector<std::byte>& out) : out_(out) {}
    void bytes(const void* p, std::size_t n) {
        const auto* b = static_cast<const std::byte*>(p);
        out_.insert(out_.end(), b, b + n);
    }
    template <class T>
    void put(T v) {
        bytes(&v, sizeof(T));
    }
    void u32(std::size_t v) { put(static_cast<std::uint32_t>(v)); }
    void text(std::string_view s) {
        u32(s.size());
        bytes(s.data(), s.size());
    }
    template <class T>
    void list(std::span<const T> v) {
        u32(v.size());
        bytes(v.data(), v.size_bytes());
    }
    /// Appends `n` 32-bit values `at(i)` (one resize, no per-value insert).
    template <class F>
    void u32s(std::size_t n, F&& at) {
        u32(n);
        const std::size_t base = out_.size();
        out_.resize(base + n * 4);
        std::byte* p = out_.data() + base;
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint32_t v = at(i);
            std::memcpy(p + i * 4, &v, 4);
        }
    }

private:
    std::vector<std::byte>& out_;
};

class Reader {
public:
    explicit Reader(std::span<const std::byte> in) : in_(in) {}
    const std::byte* take(std::size_t n) {
        if (n > in_.size() - at_) fail("load", "the input is truncated or corrupt");
        const std::byte* p = in_.data() + at_;
        at_ += n;
        return p;
    }
    template <class T>
    T get() {
        T v;
        std::memcpy(&v, take(sizeof(T)), sizeof(T));
        return v;
    }
    std::uint32_t u32() { return get<std::uint32_t>(); }
    /// A count of items of at least `item` bytes each: never more than the input can hold.
    std::uint32_t count(std::size_t item) {
        const std::uint32_t n = u32();
        if (std::size_t{n} * std::max<std::size_t>(item, 1) > in_.size() - at_)
            fail("load", "a count larger than the input");
        return n;
    }
    std::string text() {
        const std::uint32_t n = count(1);
        const std::byte* p = take(n);
        return std::string(reinterpret_cast<const char*>(p), n);
    }
    std::vector<std::uint32_t> u32s() {
        const std::uint32_t n = count(4);
        std::vector<std::uint32_t> v(n);
        if (n != 0) std::memcpy(v.data(), take(std::size_t{n} * 4), std::size_t{n} * 4);
        return v;
    }
    [[nodiscard]] bool done() const noexcept { return at_ == in_.size(); }

private:
    std::span<const std::byte> in_;
    std::size_t at_ = 0;
};

void describe_binary(Writer& w, const Schema& schema) {
    w.u32(schema.size);
    w.u32(schema.fields.size());
    for (const FieldInfo& f : schema.fields) {
        w.text(f.name);
        w.put(static_cast<std::uint8_t>(f.type));
        w.put(static_cast<std::uint8_t>(f.is_enum));
        w.u32(f.count);
        w.u32(f.offset);
        w.u32(f.stride);
        if (f.type == Field::record) describe_binary(w, *f.schema);
    }
}

// Reads a saved description and compares it with `schema`: a difference of fields is an error
// naming the field; a difference of layout only clears `same_layout`.
void compare_binary(Reader& r, const Schema& schema, const std::string& component,
                    const std::string& prefix, bool& same_layout) {
    const char* op = "load";
    if (r.u32() != schema.size) same_layout = false;
    const std::uint32_t n = r.count(14);
    if (n != schema.fields.size())
        fail(op, "component '" + component + "': saved with " + std::to_string(n) +
                     " fields, the program's has " + std::to_string(schema.fields.size()));
    for (const FieldInfo& f : schema.fields) {
        const std::string name = r.text();
        const auto type = r.get<std::uint8_t>();
        const auto is_enum = r.get<std::uint8_t>();
        const std::uint32_t count = r.u32();
        if (name != f.name || type != static_cast<std::uint8_t>(f.type) ||
            (is_enum != 0) != f.is_enum || count != f.count) {
            fail(op, "component '" + component + "': field '" + prefix + std::string(f.name) +
                         "' differs from the saved field '" + prefix + name + "'");
        }
        if (r.u32() != f.offset || r.u32() != f.stride) same_layout = false;
        if (f.type == Field::record)
            compare_binary(r, *f.schema, component, prefix + name + ".", same_layout);
    }
}

void write_fields(Writer& w, const Schema& schema, const std::byte* v) {
    each_element(schema, v, [&](const FieldInfo& f, const std::byte* p) {
        if (f.type == Field::record)
            write_fields(w, *f.schema, p);
        else if (f.type == Field::string)
            w.text(*reinterpret_cast<const std::string*>(p));
        else
            w.bytes(p, field_size(f.type));
    });
}

// Checks the values of a flat schema read as raw bytes: bools are 0 or 1, str ids known.
void check_flat(const Schema& schema, const std::byte* v, std::size_t n_strings) {
    each_element(schema, v, [&](const FieldInfo& f, const std::byte* p) {
        if (f.type == Field::record) {
            check_flat(*f.schema, p, n_strings);
        } else if (f.type == Field::boolean) {
            if (*p != std::byte{0} && *p != std::byte{1})
                fail("load", "field '" + std::string(f.name) + "': a bool that is not 0 or 1");
        } else if (f.type == Field::str) {
            std::uint32_t id;
            std::memcpy(&id, p, 4);
            if (id >= n_strings)
                fail("load", "field '" + std::string(f.name) + "': an unknown string id");
        }
    });
}

bool needs_check(const Schema& schema) {
    return std::any_of(schema.fields.begin(), schema.fields.end(), [](const FieldInfo& f) {
        return f.type == Field::boolean || f.type == Field::str ||
               (f.type == Field::record && needs_check(*f.schema));
    });
}

void read_fields(Reader& r, const Schema& schema, std::byte* v, std::size_t n_strings) {
    each_element(schema, v, [&](const FieldInfo& f, std::byte* p) {
        if (f.type == Field::record) {
            read_fields(r, *f.schema, p, n_strings);
        } else if (f.type == Field::string) {
            *reinterpret_cast<std::string*>(p) = r.text();
        } else {
            const std::size_t size = field_size(f.type);
            std::memcpy(p, r.take(size), size);
            if (f.type == Field::boolean && *p != std::byte{0} && *p != std::byte{1})
                fail("load", "field '" + std::string(f.name) + "': a bool that is not 0 or 1");
            if (f.type == Field::str) {
                std::uint32_t id;
                std::memcpy(&id, p, 4);
                if (id >= n_strings)
                    fail("load", "field '" + std::string(f.name) + "': an unknown string id");
            }
        }
    });
}

std::vector<std::byte> save_binary(const Storage& s, const char* op) {
    const Scan sc = scan(s, op);
    std::vector<std::byte> out;
    // The size of what follows, but for strings and non-flat values: one allocation for most
    // worlds (growing a large buffer by doubling would copy it several times).
    std::size_t estimate = 64 + std::size_t{s.record_count()} * 8;
    for (const std::uint32_t index : sc.archetype_index) {
        const Archetype& a = s.archetype(index);
        estimate += 64 + std::size_t{a.size} * 4;
        for (const Column& c : a.columns) {
            estimate += std::size_t{a.size} *
                        (c.size + (c.enabled != nullptr ? 1 : 0) + (c.changed != nullptr ? 16 : 0));
        }
    }
    out.reserve(estimate);
    Writer w(out);
    w.bytes(binary_magic, 4);
    w.u32(format_version);
    w.put<std::uint64_t>(s.tick());
    w.u32s(s.record_count(), [&](std::size_t i) { return s.records()[i].generation; });
    w.list<std::uint32_t>(free_list(s));
    w.list<std::uint32_t>(permanent_list(s));
    const StringTable* strings = s.strings_if();
    w.u32(strings == nullptr ? 0 : strings->size() - 1);
    if (strings != nullptr) {
        for (std::uint32_t i = 1; i < strings->size(); ++i) w.text(strings->get(i));
    }
    w.u32(sc.components.size());
    for (const ComponentId id : sc.components) {
        const ComponentInfo& info = component_info(id);
        const Codec codec = codec_of(info, op);
        w.text(info.name);
        w.put(static_cast<std::uint8_t>(codec));
        w.put(static_cast<std::uint8_t>(s.tracked(id)));
        w.put(static_cast<std::uint8_t>(info.enableable));
        if (codec == Codec::fields) describe_binary(w, *info.schema);
    }
    w.u32(sc.archetypes.size());
    for (std::size_t ai = 0; ai < sc.archetypes.size(); ++ai) {
        const Archetype& a = s.archetype(sc.archetype_index[ai]);
        w.list<std::uint32_t>(sc.archetypes[ai]);
        w.u32s(a.size, [&](std::size_t r) { return a.entities[r].index; });
    }
    const std::vector<RelationKindView> kinds = relation_kinds(s);
    w.u32(kinds.size());
    for (const RelationKindView& k : kinds) {
        const auto it = std::find(sc.components.begin(), sc.components.end(), k.type->targets);
        w.u32(it == sc.components.end() ? 0xFFFFFFFFu
                                        : static_cast<std::uint32_t>(it - sc.components.begin()));
        std::uint32_t lists = 0;
        for (const EntityList& l : k.sources) lists += l.empty() ? 0 : 1;
        w.u32(lists);
        for (std::size_t t = 0; t < k.sources.size(); ++t) {
            if (k.sources[t].empty()) continue;
            w.u32(t);
            w.u32(k.sources[t].size());
            for (const Entity e : k.sources[t]) w.u32(e.index);
        }
    }
    // The columns, archetype by archetype, in the order their components are listed.
    for (std::size_t ai = 0; ai < sc.archetypes.size(); ++ai) {
        const Archetype& a = s.archetype(sc.archetype_index[ai]);
        if (a.size == 0) continue;
        for (const std::uint32_t ci : sc.archetypes[ai]) {
            const ComponentId id = sc.components[ci];
            const ComponentInfo& info = component_info(id);
            const std::int32_t slot = a.slot(id);
            if (slot < 0) continue;
            const Column& col = a.columns[static_cast<std::uint32_t>(slot)];
            if (info.relation != nullptr) {
                for (std::uint32_t r = 0; r < a.size; ++r) {
                    const auto& list =
                        *reinterpret_cast<const Targets*>(col.data + std::size_t{r} * col.size);
                    w.u32(list.size());
                    w.bytes(list.begin(), list.size() * sizeof(Entity));
                }
            } else if (info.schema->flat) {
                w.bytes(col.data, std::size_t{a.size} * col.size);
            } else {
                for (std::uint32_t r = 0; r < a.size; ++r)
                    write_fields(w, *info.schema, col.data + std::size_t{r} * col.size);
            }
            if (col.enabled != nullptr) w.bytes(col.enabled, a.size);
            if (col.changed != nullptr) {
                w.bytes(col.added, std::size_t{a.size} * sizeof(std::uint64_t));
                for (std::uint32_t r = 0; r < a.size; ++r) w.put<std::uint64_t>(col.changed_at(r));
            }
        }
    }
    return out;
}

class BinaryColumns final : public ColumnSource {
public:
    BinaryColumns(Reader& r, const Image& image) : r_(r), image_(image) {}

    void values(std::size_t ai, std::size_t k, std::byte* dst, std::uint32_t n,
                Storage& b) override {
        const SavedComponent& sc = image_.components[image_.archetypes[ai].components[k]];
        const ComponentInfo& info = *sc.info;
        const std::size_t n_strings = b.strings().size();
        if (sc.codec == Codec::fields && info.schema->flat) {
            if (!sc.same_layout)
                fail("load", "component '" + std::string(info.name) +
                                 "' was saved with another memory layout; "
                                 "load it from JSON instead");
            std::memcpy(dst, r_.take(std::size_t{n} * info.size), std::size_t{n} * info.size);
            if (needs_check(*info.schema)) {
                for (std::uint32_t i = 0; i < n; ++i)
                    check_flat(*info.schema, dst + std::size_t{i} * info.size, n_strings);
            }
            return;
        }
        construct_rows(info, dst, n, b, [&](std::uint32_t, std::byte* v) {
            if (sc.codec == Codec::targets) {
                auto& list = *reinterpret_cast<Targets*>(v);
                const std::uint32_t count = r_.count(sizeof(Entity));
                list.reserve(count);
                for (std::uint32_t i = 0; i < count; ++i) list.push_back(r_.get<Entity>());
            } else {
                read_fields(r_, *info.schema, v, n_strings);
            }
        });
    }
    void flags(std::size_t, std::size_t, std::uint8_t* dst, std::uint32_t n) override {
        std::memcpy(dst, r_.take(n), n);
        for (std::uint32_t i = 0; i < n; ++i) {
            if (dst[i] > 1) fail("load", "an enable flag that is not 0 or 1");
        }
    }
    void ticks(std::size_t, std::size_t, std::uint64_t* added, std::uint64_t* changed,
               std::uint32_t n) override {
        std::memcpy(added, r_.take(std::size_t{n} * 8), std::size_t{n} * 8);
        std::memcpy(changed, r_.take(std::size_t{n} * 8), std::size_t{n} * 8);
    }
    void finish() override {
        if (!r_.done()) fail("load", "unexpected bytes after the world");
    }

private:
    Reader& r_;
    const Image& image_;
};

void load_binary(std::span<const std::byte> bytes, World& world) {
    const char* op = "load";
    Reader r(bytes);
    if (bytes.size() < 8 || std::memcmp(r.take(4), binary_magic, 4) != 0)
        fail(op, "not a tessera world (bad magic)");
    if (r.u32() != format_version) fail(op, "an unsupported format version");
    Image image;
    image.tick = r.get<std::uint64_t>();
    image.generations = r.u32s();
    image.free = r.u32s();
    image.permanent = r.u32s();
    const std::uint32_t n_strings = r.count(4);
    for (std::uint32_t i = 0; i < n_strings; ++i) image.strings.push_back(r.text());
    const std::uint32_t n_comps = r.count(7);
    for (std::uint32_t i = 0; i < n_comps; ++i) {
        const std::string name = r.text();
        const auto codec = r.get<std::uint8_t>();
        const bool tracked = r.get<std::uint8_t>() != 0;
        const bool enableable = r.get<std::uint8_t>() != 0;
        if (codec > 2) fail(op, "a bad component description");
        const char* kinds[] = {"tag", "fields", "targets"};
        SavedComponent sc = resolve_component(name, kinds[codec], tracked, nullptr, op);
        if (sc.info->enableable != enableable)
            fail(op, "component '" + name + "': saved " + (enableable ? "" : "not ") +
                         "enableable, the program's is " + (sc.info->enableable ? "" : "not ") +
                         "enableable");
        if (sc.codec == Codec::fields)
            compare_binary(r, *sc.info->schema, name, "", sc.same_layout);
        image.components.push_back(sc);
    }
    const std::uint32_t n_archetypes = r.count(8);
    for (std::uint32_t i = 0; i < n_archetypes; ++i) {
        Image::Archetype a;
        a.components = r.u32s();
        a.entities = r.u32s();
        image.archetypes.push_back(std::move(a));
    }
    const std::uint32_t n_relations = r.count(8);
    for (std::uint32_t i = 0; i < n_relations; ++i) {
        SavedRelation sr{r.u32(), {}};
        const std::uint32_t lists = r.count(8);
        for (std::uint32_t l = 0; l < lists; ++l) {
            const std::uint32_t target = r.u32();
            sr.sources.emplace_back(target, r.u32s());
        }
        image.relations.push_back(std::move(sr));
    }
    BinaryColumns columns(r, image);
    load_image(image, columns, world, op);
}

// --------------------------------------------------------------------------- hash

// A 64-bit mix (the splitmix64 finaliser) and a combiner; fixed, so hashes agree across
// processes and platforms.
std::uint64_t mix(std::uint64_t x) noexcept {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

struct Hasher {
    std::uint64_t h = 0x8b4e0b1a6c3d2f17ull;
    void add(std::uint64_t v) noexcept {
        h = mix(h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)));
    }
    void add_text(std::string_view s) noexcept {
        std::uint64_t x = 0xcbf29ce484222325ull;
        for (const char c : s) x = (x ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
        add(x);
        add(s.size());
    }
};

void hash_fields(Hasher& hs, const Schema& schema, const std::byte* v, const StringTable* strings) {
    each_element(schema, v, [&](const FieldInfo& f, const std::byte* p) {
        switch (f.type) {
            case Field::record: hash_fields(hs, *f.schema, p, strings); return;
            case Field::string: hs.add_text(*reinterpret_cast<const std::string*>(p)); return;
            case Field::str: {
                std::uint32_t id;
                std::memcpy(&id, p, 4);
                hs.add_text(id == 0 || strings == nullptr ? std::string_view() : strings->get(id));
                return;
            }
            default: {
                std::uint64_t x = 0;
                std::memcpy(&x, p, field_size(f.type));
                hs.add(x);
                return;
            }
        }
    });
}

std::uint64_t hash_world(const Storage& s) {
    std::uint64_t sum = 0;  // per-entity hashes add up: the result doesn't depend on row order
    struct Part {
        std::uint64_t name;
        const ComponentInfo* info;
        const Column* column;
    };
    std::vector<Part> parts;
    for (std::size_t i = empty_archetype; i < s.archetype_slots(); ++i) {
        const Archetype& a = s.archetype(static_cast<std::uint32_t>(i));
        if (a.size == 0) continue;
        parts.clear();
        for (const ComponentId id : a.ids) {
            const ComponentInfo& info = component_info(id);
            Hasher n;
            n.add_text(info.name);
            const std::int32_t c = a.slot(id);
            parts.push_back(
                {n.h, &info, c < 0 ? nullptr : &a.columns[static_cast<std::uint32_t>(c)]});
        }
        std::sort(parts.begin(), parts.end(),
                  [](const Part& x, const Part& y) { return x.info->name < y.info->name; });
        for (std::uint32_t row = 0; row < a.size; ++row) {
            Hasher hs;
            hs.add(a.entities[row].index);
            hs.add(a.entities[row].generation);
            for (const Part& part : parts) {
                hs.add(part.name);
                if (part.column == nullptr) continue;
                const std::byte* v = part.column->data + std::size_t{row} * part.column->size;
                if (part.column->enabled != nullptr) hs.add(part.column->enabled[row]);
                if (part.info->relation != nullptr) {
                    for (const Entity t : *reinterpret_cast<const Targets*>(v)) {
                        hs.add(t.index);
                        hs.add(t.generation);
                    }
                } else if (part.info->schema != nullptr) {
                    hash_fields(hs, *part.info->schema, v, s.strings_if());
                }
            }
            sum += mix(hs.h);
        }
    }
    Hasher total;
    total.add(sum);
    total.add(s.count());
    return total.h;
}

}  // namespace
}  // namespace tessera::detail

namespace tessera {

nlohmann::json to_json(const World& world) {
    return detail::save_json(world.storage(), "to_json");
}

void from_json(const nlohmann::json& json, World& world) {
    try {
        detail::load_json(json, world);
    } catch (const nlohmann::json::exception& e) {
        detail::fail("from_json", std::string("malformed data: ") + e.what());
    }
}

std::vector<std::byte> save(const World& world) {
    return detail::save_binary(world.storage(), "save");
}

void load(std::span<const std::byte> bytes, World& world) {
    detail::load_binary(bytes, world);
}

std::uint64_t state_hash(const World& world) {
    return detail::hash_world(world.storage());
}

}  // namespace tessera
