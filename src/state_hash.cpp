// state_hash (serialize.hpp): a 64-bit hash of every entity and its saved component values, in
// a canonical order (components by name, not id), stable across processes and platforms.
#include "serialize_image.hpp"

#include <tessera/dynamic.hpp>
#include <tessera/error.hpp>
#include <tessera/names.hpp>
#include <tessera/reflect.hpp>
#include <tessera/relation.hpp>
#include <tessera/serialize.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

namespace tessera::detail::serial {
namespace {

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
    for (std::size_t i = empty_archetype; i < s.archetype_end(); ++i) {
        const Archetype& a = s.archetype(static_cast<std::uint32_t>(i));
        if (a.size == 0) continue;
        parts.clear();
        for (const ComponentId id : a.ids) {
            const ComponentInfo& info = component_info(id);
            Hasher n;
            n.add_text(info.name);
            const std::int32_t c = a.column_index(id);
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
    // Sparse components: a term per (entity, component), added in like the entities' (so set
    // order doesn't count), over the same fields a table component's value would give.
    for (const SparseSet* set : s.sparse_sets()) {
        const ComponentInfo& info = set->info();
        Hasher n;
        n.add_text(info.name);
        for (std::uint32_t row = 0; row < set->size(); ++row) {
            Hasher hs;
            hs.add(set->entities()[row].index);
            hs.add(set->entities()[row].generation);
            hs.add(n.h);
            if (set->enabled() != nullptr) hs.add(set->enabled()[row]);
            if (info.schema != nullptr && !info.is_tag())
                hash_fields(hs, *info.schema, set->value(row), s.strings_if());
            sum += mix(hs.h ^ 0x5bd1e9955bd1e995ull);
        }
    }
    Hasher total;
    total.add(sum);
    total.add(s.count());
    // Names (names.hpp), when the world has any: a world without names hashes as before.
    std::uint64_t names = 0;
    bool named = false;
    std::pair<std::uint64_t*, bool*> acc{&names, &named};
    each_name(
        s,
        [](void* ctx, Entity e, std::string_view name) {
            auto& [acc, any] = *static_cast<std::pair<std::uint64_t*, bool*>*>(ctx);
            Hasher hs;
            hs.add(e.index);
            hs.add(e.generation);
            hs.add_text(name);
            *acc += mix(hs.h);
            *any = true;
        },
        &acc);
    if (named) total.add(names);
    return total.h;
}

}  // namespace
}  // namespace tessera::detail::serial

namespace tessera {

std::uint64_t state_hash(const World& world) {
    return detail::serial::hash_world(world.storage());
}

}  // namespace tessera
