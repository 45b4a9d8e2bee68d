// Binary snapshots (serialize.hpp: save, load): the world image (serialize_image.hpp) in a
// compact little-endian form; flat values are copied as they lie in memory when the saved
// layout matches the program's.
#include "serialize_image.hpp"
#include "utf8.hpp"

#include <tessera/dynamic.hpp>
#include <tessera/error.hpp>
#include <tessera/names.hpp>
#include <tessera/reflect.hpp>
#include <tessera/relation.hpp>
#include <tessera/serialize.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

static_assert(std::endian::native == std::endian::little,
              "tessera: the binary snapshot format is little-endian; big-endian hosts need "
              "byte swapping in src/serialize_binary.cpp");

namespace tessera::detail::serial {
namespace {

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
                         "' differs from the saved field " + quote(prefix + name));
        }
        if (r.u32() != f.offset || r.u32() != f.stride) same_layout = false;
        if (f.type == Field::record)
            compare_binary(r, *f.schema, component, prefix + name + ".", same_layout);
    }
}

// "entity 3:1, component 'Label'": where a value is, for messages.
std::string place(Entity e, const ComponentInfo& info) {
    return "entity " + std::to_string(e.index) + ":" + std::to_string(e.generation) +
           ", component '" + std::string(info.name) + "'";
}

// Throws (naming `op`, the value's place and field `f`) unless `text` is valid UTF-8.
template <class Where>
void check_text(std::string_view text, const FieldInfo& f, const char* op, const Where& where) {
    if (const std::size_t at = invalid_utf8_at(text); at != std::string_view::npos) {
        fail(op, where() + ": field '" + std::string(f.name) +
                     "': the text is not valid UTF-8 (byte " + std::to_string(at) + ")");
    }
}

// Writes a value field by field; `where()` names it should a string not be valid UTF-8 (C++
// code may have written anything there; a loader would refuse it).
template <class Where>
void write_fields(Writer& w, const Schema& schema, const std::byte* v, const Where& where) {
    each_element(schema, v, [&](const FieldInfo& f, const std::byte* p) {
        if (f.type == Field::record) {
            write_fields(w, *f.schema, p, where);
        } else if (f.type == Field::string) {
            const std::string& text = *reinterpret_cast<const std::string*>(p);
            check_text(text, f, "save", where);
            w.text(text);
        } else {
            w.bytes(p, field_size(f.type));
        }
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

// Reads a value field by field; `where()` names it should a string not be valid UTF-8.
template <class Where>
void read_fields(Reader& r, const Schema& schema, std::byte* v, std::size_t n_strings,
                 const Where& where) {
    each_element(schema, v, [&](const FieldInfo& f, std::byte* p) {
        if (f.type == Field::record) {
            read_fields(r, *f.schema, p, n_strings, where);
        } else if (f.type == Field::string) {
            std::string text = r.text();
            check_text(text, f, "load", where);
            *reinterpret_cast<std::string*>(p) = std::move(text);
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
    w.u32(sc.sparse.empty() ? format_version : format_version_sparse);
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
    // Version 2: the sparse sections' components and entities (their values come after the
    // tables' columns).
    if (!sc.sparse.empty()) {
        w.u32(sc.sparse.size());
        for (std::size_t si = 0; si < sc.sparse.size(); ++si) {
            const SparseSet& set = *sc.sparse[si];
            w.u32(sc.sparse_component[si]);
            w.u32s(set.size(), [&](std::size_t r) { return set.entities()[r].index; });
        }
    }
    // The columns, archetype by archetype, in the order their components are listed.
    for (std::size_t ai = 0; ai < sc.archetypes.size(); ++ai) {
        const Archetype& a = s.archetype(sc.archetype_index[ai]);
        if (a.size == 0) continue;
        for (const std::uint32_t ci : sc.archetypes[ai]) {
            const ComponentId id = sc.components[ci];
            const ComponentInfo& info = component_info(id);
            const std::int32_t slot = a.column_index(id);
            if (slot < 0) continue;
            const Column& col = a.columns[static_cast<std::uint32_t>(slot)];
            if (info.is_tag()) {
                // An enableable tag: its column holds the flags below, no values.
            } else if (info.relation != nullptr) {
                for (std::uint32_t r = 0; r < a.size; ++r) {
                    const auto& list =
                        *reinterpret_cast<const Targets*>(col.data + std::size_t{r} * col.size);
                    w.u32(list.size());
                    w.bytes(list.begin(), list.size() * sizeof(Entity));
                }
            } else if (info.schema->flat) {
                w.bytes(col.data, std::size_t{a.size} * col.size);
            } else {
                for (std::uint32_t r = 0; r < a.size; ++r) {
                    write_fields(w, *info.schema, col.data + std::size_t{r} * col.size,
                                 [&] { return place(a.entities[r], info); });
                }
            }
            if (col.enabled != nullptr) w.bytes(col.enabled, a.size);
            if (col.changed != nullptr) {
                w.bytes(col.added, std::size_t{a.size} * sizeof(std::uint64_t));
                for (std::uint32_t r = 0; r < a.size; ++r) w.put<std::uint64_t>(col.changed_at(r));
            }
        }
    }
    // The sparse values, section by section (a flat value as it lies, others by field), then
    // the flags and ticks as a column's.
    for (const SparseSet* set : sc.sparse) {
        const ComponentInfo& info = set->info();
        const std::uint32_t n = set->size();
        if (info.is_tag()) {
            // flags and ticks only
        } else if (info.schema->flat) {
            w.bytes(set->data(), std::size_t{n} * info.size);
        } else {
            for (std::uint32_t r = 0; r < n; ++r) {
                write_fields(w, *info.schema, set->value(r),
                             [&] { return place(set->entities()[r], info); });
            }
        }
        if (set->enabled() != nullptr) w.bytes(set->enabled(), n);
        if (set->tracked()) {
            w.bytes(set->added(), std::size_t{n} * sizeof(std::uint64_t));
            for (std::uint32_t r = 0; r < n; ++r) w.put<std::uint64_t>(set->changed_at(r));
        }
    }
    // The names (names.hpp), last and only when there are any, so a world without names
    // saves as before: a count, then (entity index, name) each.
    std::vector<std::pair<std::uint32_t, std::string_view>> names;
    each_name(
        s,
        [](void* ctx, Entity e, std::string_view name) {
            static_cast<std::vector<std::pair<std::uint32_t, std::string_view>>*>(ctx)
                ->emplace_back(e.index, name);
        },
        &names);
    if (!names.empty()) {
        w.u32(static_cast<std::uint32_t>(names.size()));
        for (const auto& [index, name] : names) {
            w.u32(index);
            w.text(name);
        }
    }
    return out;
}

class BinaryColumns final : public ColumnSource {
public:
    BinaryColumns(Reader& r, const Image& image,
                  std::vector<std::pair<std::uint32_t, std::string>>& names)
        : r_(r), image_(image), names_(names) {}

    void values(std::size_t ai, std::size_t k, std::byte* dst, std::uint32_t n,
                Storage& b) override {
        fill(image_.components[image_.archetypes[ai].components[k]], image_.archetypes[ai].entities,
             dst, n, b);
    }
    void sparse_values(std::size_t si, std::byte* dst, std::uint32_t n, Storage& b) override {
        fill(image_.components[image_.sparse[si].component], image_.sparse[si].entities, dst, n, b);
    }
    void sparse_flags(std::size_t si, std::uint8_t* dst, std::uint32_t n) override {
        flags(si, 0, dst, n);
    }
    void sparse_ticks(std::size_t si, std::uint64_t* added, std::uint64_t* changed,
                      std::uint32_t n) override {
        ticks(si, 0, added, changed, n);
    }
    /// Constructs `n` values of `sc`, row r being entity index `entities[r]`.
    void fill(const SavedComponent& sc, const std::vector<std::uint32_t>& entities, std::byte* dst,
              std::uint32_t n, Storage& b) {
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
        construct_rows(info, dst, n, b, [&](std::uint32_t row, std::byte* v) {
            if (sc.codec == Codec::targets) {
                auto& list = *reinterpret_cast<Targets*>(v);
                const std::uint32_t count = r_.count(sizeof(Entity));
                list.reserve(count);
                for (std::uint32_t i = 0; i < count; ++i) list.push_back(r_.get<Entity>());
            } else {
                read_fields(r_, *info.schema, v, n_strings, [&] {
                    const std::uint32_t index = entities[row];
                    return place(Entity{index, image_.generations[index]}, info);
                });
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
        if (!r_.done()) {  // the names, when the world had any
            const std::uint32_t n = r_.count(5);
            if (n == 0) fail("load", "an empty name list");
            for (std::uint32_t i = 0; i < n; ++i) {
                const std::uint32_t index = r_.u32();
                names_.emplace_back(index, r_.text());
            }
        }
        if (!r_.done()) fail("load", "unexpected bytes after the world");
    }

private:
    Reader& r_;
    const Image& image_;
    std::vector<std::pair<std::uint32_t, std::string>>& names_;
};

void load_binary(std::span<const std::byte> bytes, World& world) {
    const char* op = "load";
    Reader r(bytes);
    if (bytes.size() < 8 || std::memcmp(r.take(4), binary_magic, 4) != 0)
        fail(op, "not a tessera world (bad magic)");
    const std::uint32_t version = r.u32();
    if (version != format_version && version != format_version_sparse)
        fail(op, "an unsupported format version");
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
        SavedComponent sc = resolve_component(name, kinds[codec], tracked, op);
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
    if (version == format_version_sparse) {
        const std::uint32_t n_sparse = r.count(8);
        if (n_sparse == 0) fail(op, "an empty sparse section list");
        for (std::uint32_t i = 0; i < n_sparse; ++i) {
            const std::uint32_t component = r.u32();
            image.sparse.push_back(Image::Sparse{component, r.u32s()});
        }
    }
    BinaryColumns columns(r, image, image.names);
    load_image(image, columns, world, op);
}

}  // namespace
}  // namespace tessera::detail::serial

namespace tessera {

std::vector<std::byte> save(const World& world) {
    return detail::serial::save_binary(world.storage(), "save");
}

void load(std::span<const std::byte> bytes, World& world) {
    detail::serial::load_binary(bytes, world);
}

}  // namespace tessera
