// JSON snapshots (serialize.hpp: to_json, from_json): the world image (serialize_image.hpp) as
// an nlohmann::json document, with field descriptions and values by field name.
#include "serialize_image.hpp"
#include "utf8.hpp"

#include <tessera/detail/field_value.hpp>
#include <tessera/dynamic.hpp>
#include <tessera/error.hpp>
#include <tessera/names.hpp>
#include <tessera/reflect.hpp>
#include <tessera/relation.hpp>
#include <tessera/serialize.hpp>
#include <tessera/world.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory_resource>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tessera::detail::serial {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------- field descriptions

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
            return "saved field " + quote(prefix + name) + " is not in the program's " +
                   std::string(schema.name);
        const FieldInfo& p = schema.fields[i];
        const std::string type = f.value("type", std::string());
        const std::uint32_t count = f.contains("count") && f["count"].is_number_unsigned()
                                        ? f["count"].get<std::uint32_t>()
                                        : 1;
        if (name != p.name || type != to_string(p.type) || count != p.count ||
            f.value("enum", false) != p.is_enum) {
            return "field '" + prefix + std::string(p.name) + "' differs: saved as " + quote(name) +
                   " " + quote(type) + (count != 1 ? "[" + std::to_string(count) + "]" : "") +
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

using Bad = std::function<void(const std::string&)>;

// Floats are written so that loading gives back the same bits: a finite value as a JSON number
// (the shortest text that parses back to the same double; an f32 widened to double first, which
// is exact), an infinity as "inf" or "-inf", and a NaN as "nan:0x" and its bits in hex (8 digits
// for f32, 16 for f64: sign, quiet bit and payload kept).
template <class T>
json float_to_json(T v) {
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    if (!std::isnan(v)) return static_cast<double>(v);
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    Bits bits;
    std::memcpy(&bits, &v, sizeof bits);
    char text[32];
    const int n =
        std::snprintf(text, sizeof text, "nan:0x%0*llx", static_cast<int>(2 * sizeof bits),
                      static_cast<unsigned long long>(bits));
    return std::string(text, static_cast<std::size_t>(n));
}

// Reads a float written by float_to_json, or a plain number ("nan", "inf" and "-inf" too).
template <class T>
T float_from_json(const json& j, const Bad& bad) {
    using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    const char* type = sizeof(T) == 4 ? "f32" : "f64";
    if (j.is_number()) {
        const double d = j.get<double>();
        if (sizeof(T) == 4 && std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max())
            bad(std::string("out of the range of ") + type);
        return static_cast<T>(d);
    }
    if (!j.is_string()) bad("not a number");
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<T>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<T>::infinity();
    if (s == "-inf") return -std::numeric_limits<T>::infinity();
    const std::string_view prefix = "nan:0x";
    if (s.size() <= prefix.size() || s.size() > prefix.size() + 2 * sizeof(Bits) ||
        s.compare(0, prefix.size(), prefix) != 0)
        bad("not a number");
    Bits bits = 0;
    for (std::size_t i = prefix.size(); i < s.size(); ++i) {
        const char c = s[i];
        const int digit = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
        if (digit < 0) bad("not a number");
        bits = static_cast<Bits>(bits << 4 | static_cast<Bits>(digit));
    }
    T v;
    std::memcpy(&v, &bits, sizeof v);
    if (!std::isnan(v)) bad(quote(s) + " is not the bits of an " + type + " NaN");
    return v;
}

json scalar_to_json(Field t, const std::byte* p, const StringTable* strings, const Bad& bad) {
    if (t == Field::record) return nullptr;
    if (t == Field::string) {
        const std::string& text = *reinterpret_cast<const std::string*>(p);
        // (C++ code may have written anything there; JSON text must be UTF-8.)
        if (const std::size_t at = invalid_utf8_at(text); at != std::string::npos)
            bad("the text is not valid UTF-8 (byte " + std::to_string(at) + ")");
        return text;
    }
    return visit_scalar(t, p, [&](const auto& v) -> json {
        using V = std::remove_cvref_t<decltype(v)>;
        if constexpr (std::is_floating_point_v<V>) {
            return float_to_json(v);
        } else if constexpr (std::is_same_v<V, StringId>) {
            return v.value == 0 || strings == nullptr ? std::string()
                                                      : std::string(strings->get(v.value));
        } else {
            return v;
        }
    });
}

json value_to_json(const Schema& schema, const std::byte* v, const StringTable* strings,
                   const Bad& bad) {
    json out = json::object();
    for (const FieldInfo& f : schema.fields) {
        const Bad field_bad = [&](const std::string& why) {
            bad("field '" + std::string(f.name) + "': " + why);
        };
        auto one = [&](const std::byte* p) {
            return f.type == Field::record ? value_to_json(*f.schema, p, strings, field_bad)
                                           : scalar_to_json(f.type, p, strings, field_bad);
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
// With `intern`, a `str` field's text is interned there (new strings too); else it must be in
// `strings` already.
void json_to_scalar(const json& j, Field t, std::byte* p, const StringTable& strings,
                    const Bad& bad, StringTable* intern = nullptr) {
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
    switch (t) {
        case Field::f32: {
            const auto x = float_from_json<float>(j, bad);
            std::memcpy(p, &x, 4);
            return;
        }
        case Field::f64: {
            const auto x = float_from_json<double>(j, bad);
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
            if (intern != nullptr) {
                // Checked here, where the message can name the field (intern's would not).
                if (const std::size_t at = invalid_utf8_at(s); at != std::string::npos)
                    bad("the text is not valid UTF-8 (byte " + std::to_string(at) + ")");
            }
            const std::uint32_t id = s.empty()           ? 0
                                     : intern != nullptr ? intern->intern(s)
                                                         : strings.find(s);
            if (id == 0xFFFFFFFFu) bad("a string that is not in the saved strings");
            std::memcpy(p, &id, 4);
            return;
        }
        case Field::string: {
            if (!j.is_string()) bad("not a string");
            const std::string& text = j.get_ref<const std::string&>();
            if (const std::size_t at = invalid_utf8_at(text); at != std::string::npos)
                bad("the text is not valid UTF-8 (byte " + std::to_string(at) + ")");
            *reinterpret_cast<std::string*>(p) = text;
            return;
        }
        case Field::record: break;
    }
}

// Writes the fields `j` has into the value at `v`. In full form every field must be there; in
// `partial` form (writes of some fields: `set_fields`) the ones left out keep their values and
// a name that is no field is an error. `intern` as for `json_to_scalar`.
void json_to_value(const json& j, const Schema& schema, std::byte* v, const StringTable& strings,
                   const Bad& bad, bool partial = false, StringTable* intern = nullptr) {
    if (!j.is_object()) bad("a value is not an object");
    if (partial) {
        for (const auto& item : j.items()) {
            const std::string& key = item.key();
            if (std::none_of(schema.fields.begin(), schema.fields.end(),
                             [&](const FieldInfo& f) { return f.name == key; }))
                bad("there is no field " + quote(key));
        }
    }
    for (const FieldInfo& f : schema.fields) {
        const auto it = j.find(std::string(f.name));
        if (it == j.end()) {
            if (partial) continue;
            bad("a value lacks field '" + std::string(f.name) + "'");
        }
        auto one = [&](const json& e, std::byte* p) {
            if (f.type == Field::record)
                json_to_value(e, *f.schema, p, strings, bad, partial, intern);
            else
                json_to_scalar(
                    e, f.type, p, strings,
                    [&](const std::string& why) {
                        bad("field '" + std::string(f.name) + "': " + why);
                    },
                    intern);
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

// --------------------------------------------------------------------------- JSON

constexpr const char* json_format = "tessera-world";

std::string entity_text(Entity e) {
    return std::to_string(e.index) + ":" + std::to_string(e.generation);
}

json entity_json(Entity e) {
    return json::array({e.index, e.generation});
}

// A sparse set's changed ticks, row by row (its floor folded in).
std::vector<std::uint64_t> changed_ticks(const SparseSet& set) {
    std::vector<std::uint64_t> out(set.size());
    for (std::uint32_t r = 0; r < set.size(); ++r) out[r] = set.changed_at(r);
    return out;
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
        json c = {{"name", info.name}, {"kind", codec_name(codec)}, {"tracked", s.tracked(id)}};
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
            const std::int32_t slot = a.column_index(id);
            if (slot < 0 || a.size == 0) {  // nothing to hold (the same whatever the history)
                values.push_back(nullptr);
                flags.push_back(nullptr);
                ticks.push_back(nullptr);
                continue;
            }
            const Column& col = a.columns[static_cast<std::uint32_t>(slot)];
            json column = json::array();
            std::uint32_t r = 0;
            const Bad bad = [&](const std::string& why) {
                fail(op, "entity " + entity_text(a.entities[r]) + ", component " +
                             std::string(info.name) + ": " + why);
            };
            for (; r < a.size && !info.is_tag(); ++r) {  // an enableable tag: flags only
                const std::byte* v = col.data + std::size_t{r} * col.size;
                if (info.relation != nullptr) {
                    json list = json::array();
                    for (const Entity t : *reinterpret_cast<const Targets*>(v))
                        list.push_back(entity_json(t));
                    column.push_back(std::move(list));
                } else {
                    column.push_back(value_to_json(*info.schema, v, s.strings_if(), bad));
                }
            }
            values.push_back(info.is_tag() ? json(nullptr) : std::move(column));
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
    // The sparse sets (optional: a world without sparse values has none, as older files).
    json sparse = json::array();
    for (std::size_t si = 0; si < sc.sparse.size(); ++si) {
        const SparseSet& set = *sc.sparse[si];
        const ComponentInfo& info = set.info();
        json js;
        js["component"] = sc.sparse_component[si];
        std::vector<std::uint32_t> entities(set.size());
        for (std::uint32_t r = 0; r < set.size(); ++r) entities[r] = set.entities()[r].index;
        js["entities"] = std::move(entities);
        if (info.is_tag()) {
            js["values"] = nullptr;
        } else {
            json column = json::array();
            for (std::uint32_t r = 0; r < set.size(); ++r) {
                const Bad bad = [&](const std::string& why) {
                    fail(op, "entity " + entity_text(set.entities()[r]) + ", component " +
                                 std::string(info.name) + ": " + why);
                };
                column.push_back(value_to_json(*info.schema, set.value(r), s.strings_if(), bad));
            }
            js["values"] = std::move(column);
        }
        if (set.enabled() != nullptr)
            js["enabled"] = std::vector<std::uint8_t>(set.enabled(), set.enabled() + set.size());
        else
            js["enabled"] = nullptr;
        if (set.tracked()) {
            js["ticks"] =
                json::array({std::vector<std::uint64_t>(set.added(), set.added() + set.size()),
                             changed_ticks(set)});
        } else {
            js["ticks"] = nullptr;
        }
        sparse.push_back(std::move(js));
    }
    if (!sparse.empty()) out["sparse"] = std::move(sparse);
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
    json names = json::array();
    each_name(
        s,
        [](void* ctx, Entity e, std::string_view name) {
            static_cast<json*>(ctx)->push_back(json::array({e.index, std::string(name)}));
        },
        &names);
    if (!names.empty()) out["names"] = std::move(names);  // optional: older files have none
    return out;
}

// The loading program's component for a saved description, checked (its fields too, when
// the description has them).
SavedComponent resolve_json_component(const std::string& name, const std::string& kind,
                                      bool tracked, const json* fields, const char* op) {
    SavedComponent sc = resolve_component(name, kind, tracked, op);
    if (sc.codec == Codec::fields && fields != nullptr) {
        const std::string why = field_mismatch(*fields, *sc.info->schema, "");
        if (!why.empty()) fail(op, "component '" + name + "': " + why);
    }
    return sc;
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
    JsonColumns(const json& archetypes, const json* sparse, const Image& image)
        : archetypes_(archetypes), sparse_(sparse), image_(image) {}

    void values(std::size_t ai, std::size_t k, std::byte* dst, std::uint32_t n,
                Storage& b) override {
        fill(image_.components[image_.archetypes[ai].components[k]], image_.archetypes[ai].entities,
             cell(ai, "values", k, n), dst, n, b);
    }
    void sparse_values(std::size_t si, std::byte* dst, std::uint32_t n, Storage& b) override {
        const Image::Sparse& section = image_.sparse[si];
        fill(image_.components[section.component], section.entities, sparse_cell(si, "values", n),
             dst, n, b);
    }
    void sparse_flags(std::size_t si, std::uint8_t* dst, std::uint32_t n) override {
        read_flags(sparse_cell(si, "enabled", n), dst, n);
    }
    void sparse_ticks(std::size_t si, std::uint64_t* added, std::uint64_t* changed,
                      std::uint32_t n) override {
        read_ticks(member(sparse_at(si), "ticks", op_), added, changed, n);
    }
    void flags(std::size_t ai, std::size_t k, std::uint8_t* dst, std::uint32_t n) override {
        read_flags(cell(ai, "enabled", k, n), dst, n);
    }
    void ticks(std::size_t ai, std::size_t k, std::uint64_t* added, std::uint64_t* changed,
               std::uint32_t n) override {
        const json& pair = member(archetypes_[ai], "ticks", op_);
        if (!pair.is_array() || pair.size() <= k) fail(op_, "missing change ticks");
        read_ticks(pair[k], added, changed, n);
    }

private:
    /// Constructs `n` values of `sc` from `column`, row r being entity index `entities[r]`.
    void fill(const SavedComponent& sc, const std::vector<std::uint32_t>& entities,
              const json& column, std::byte* dst, std::uint32_t n, Storage& b) {
        construct_rows(*sc.info, dst, n, b, [&](std::uint32_t r, std::byte* v) {
            const json& j = column[r];
            auto bad = [&](const std::string& why) {
                const std::uint32_t index = entities[r];
                fail(op_, "entity " + entity_text(Entity{index, image_.generations[index]}) +
                              ", component '" + std::string(sc.info->name) + "', row " +
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
    void read_flags(const json& column, std::uint8_t* dst, std::uint32_t n) const {
        for (std::uint32_t r = 0; r < n; ++r) {
            if (!column[r].is_number_unsigned() || column[r].get<std::uint64_t>() > 1)
                fail(op_, "a bad enable flag");
            dst[r] = column[r].get<std::uint8_t>();
        }
    }
    void read_ticks(const json& pair, std::uint64_t* added, std::uint64_t* changed,
                    std::uint32_t n) const {
        if (!pair.is_array() || pair.size() != 2) fail(op_, "missing change ticks");
        const auto a = json_list<std::uint64_t>(pair[0], "ticks", op_);
        const auto c = json_list<std::uint64_t>(pair[1], "ticks", op_);
        if (a.size() != n || c.size() != n) fail(op_, "change ticks of the wrong length");
        std::copy(a.begin(), a.end(), added);
        std::copy(c.begin(), c.end(), changed);
    }
    const json& sparse_at(std::size_t si) const { return (*sparse_)[si]; }  // checked by load
    const json& sparse_cell(std::size_t si, const char* key, std::uint32_t n) const {
        const json& cells = member(sparse_at(si), key, op_);
        if (!cells.is_array() || cells.size() != n)
            fail(op_, std::string("'") + key + "' of a sparse section has the wrong shape");
        return cells;
    }
    const json& cell(std::size_t ai, const char* key, std::size_t k, std::uint32_t n) const {
        const json& cells = member(archetypes_[ai], key, op_);
        if (!cells.is_array() || cells.size() <= k || !cells[k].is_array() || cells[k].size() != n)
            fail(op_, std::string("'") + key + "' of an archetype has the wrong shape");
        return cells[k];
    }
    const json& archetypes_;
    const json* sparse_;  ///< the "sparse" sections, or null
    const Image& image_;
    const char* op_ = "from_json";
};

void load_json(const json& j, World& world) {
    const char* op = "from_json";
    if (!j.is_object() || j.value("format", std::string()) != json_format)
        fail(op, R"(not a tessera world (no "format": "tessera-world"))");
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
            resolve_json_component(name.get<std::string>(), kind.get<std::string>(), tracked,
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
    if (j.contains("names")) {  // optional: a world without names has none
        const json& names = j["names"];
        if (!names.is_array()) fail(op, "names is not an array");
        for (const json& n : names) {
            if (!n.is_array() || n.size() != 2 || !n[0].is_number_unsigned() ||
                n[0].get<std::uint64_t>() > 0xFFFFFFFFu || !n[1].is_string())
                fail(op, "a bad name");
            image.names.emplace_back(n[0].get<std::uint32_t>(), n[1].get<std::string>());
        }
    }
    const json* sparse = nullptr;
    if (j.contains("sparse")) {  // optional: a world without sparse values has none
        sparse = &j["sparse"];
        if (!sparse->is_array()) fail(op, "sparse is not an array");
        for (const json& section : *sparse) {
            const json& c = member(section, "component", op);
            if (!c.is_number_unsigned() || c.get<std::uint64_t>() > 0xFFFFFFFFu)
                fail(op, "a sparse section has a bad component");
            image.sparse.push_back(
                Image::Sparse{c.get<std::uint32_t>(),
                              json_list<std::uint32_t>(member(section, "entities", op),
                                                       "a sparse section's entities", op)});
        }
    }
    JsonColumns columns(archetypes, sparse, image);
    load_image(image, columns, world, op);
}

// "entity 4:1, Name": where a field error of `op` happened.
std::string where(Entity e, const ComponentInfo& info) {
    std::ostringstream os;
    os << "entity " << e << ", " << info.name;
    return os.str();
}

// The fields of `e`'s component `id`: its record, schema and value, or the right error naming
// `op` (not_registered, invalid_argument for a component without field metadata, not_alive,
// missing_component). A tag (C++ or runtime, ChildOf included) has no fields: `schema` and
// `value` are null.
struct FieldsOf {
    const ComponentInfo& info;
    const Schema* schema;
    std::byte* value;
};

FieldsOf fields_of(const Storage& s, Entity e, ComponentId id, const char* op) {
    const ComponentInfo& info = checked_info(id, op);
    if (!s.has(e, id)) throw_lookup(s, op, e, id);  // `has`, not the value: tags have none
    if (info.is_tag()) return {info, nullptr, nullptr};
    if (info.schema == nullptr) {
        fail(op, where(e, info) +
                     ": the component has no field metadata (TESSERA_REFLECT, or a runtime "
                     "component)");
    }
    return {info, info.schema, s.try_value(e, id)};
}

}  // namespace
}  // namespace tessera::detail::serial

namespace tessera {

nlohmann::json to_json(const World& world, Entity e, ComponentId id) {
    using namespace detail::serial;
    const detail::Storage& s = world.storage();
    const FieldsOf f = fields_of(s, e, id, "to_json");
    if (f.value == nullptr) return nlohmann::json::object();
    return value_to_json(*f.schema, f.value, s.strings_if(), [&](const std::string& why) {
        fail("to_json", where(e, f.info) + ": " + why);
    });
}

void set_fields(World& world, Entity e, ComponentId id, const nlohmann::json& fields) {
    using namespace detail::serial;
    constexpr const char* op = "set_fields";
    detail::Storage& s = world.storage();
    const FieldsOf f = fields_of(s, e, id, op);
    const ComponentInfo& info = f.info;
    const Bad bad = [&](const std::string& why) { fail(op, where(e, info) + ": " + why); };
    if (f.value == nullptr) {
        // A tag has no fields: only `{}` names none of them, and writes nothing.
        if (!fields.is_object()) bad("a value is not an object");
        if (!fields.empty()) bad("there is no field " + detail::quote(fields.begin().key()));
        return;
    }
    std::byte* const p = f.value;
    if (!info.copyable()) fail(op, std::string(info.name) + " can't be copied");
    const bool hooked = s.hooked(id);
    if (hooked) detail::check_not_parallel(s, op);
    // The fields go into a copy, which replaces the value once all of them were read: a bad
    // field changes nothing.
    std::pmr::memory_resource* mr = s.resource();
    const std::size_t align = std::max<std::size_t>(info.alignment, alignof(std::max_align_t));
    void* copy = mr->allocate(info.size, align);
    try {
        info.copy_values(copy, p, 1);
    } catch (...) {
        mr->deallocate(copy, info.size, align);
        throw;
    }
    try {
        json_to_value(fields, *f.schema, static_cast<std::byte*>(copy), s.strings(), bad, true,
                      &s.strings());
    } catch (...) {
        if (info.destroy != nullptr) info.destroy(copy, 1);
        mr->deallocate(copy, info.size, align);
        throw;
    }
    if (info.destroy != nullptr) info.destroy(p, 1);
    info.relocate_values(p, copy, 1);
    mr->deallocate(copy, info.size, align);
    s.stamp_changed_of(e, id);  // table or sparse
    if (hooked) s.hooks().set(s, e, id);
}

nlohmann::json to_json(const World& world) {
    return detail::serial::save_json(world.storage(), "to_json");
}

void from_json(const nlohmann::json& json, World& world) {
    try {
        detail::serial::load_json(json, world);
    } catch (const nlohmann::json::exception& e) {
        detail::serial::fail("from_json", std::string("malformed data: ") + e.what());
    }
}

}  // namespace tessera
