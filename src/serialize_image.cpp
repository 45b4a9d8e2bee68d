// The world image (serialize_image.hpp): scanning a world to save it, and building a world from a
// loaded image, checking everything, then swapping it into the target.
#include "serialize_image.hpp"
#include "utf8.hpp"

#include <tessera/dynamic.hpp>
#include <tessera/error.hpp>
#include <tessera/names.hpp>
#include <tessera/relation.hpp>
#include <tessera/world.hpp>

#include <algorithm>
#include <bit>
#include <string>
#include <utility>
#include <vector>

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

namespace serial {

void fail(const char* op, const std::string& why) {
    throw Error(errc::invalid_argument, std::string(op) + ": " + why);
}

Codec codec_of(const ComponentInfo& info, const char* op) {
    if (info.is_tag()) return Codec::tag;
    if (info.relation != nullptr) return Codec::targets;
    if (info.schema != nullptr) return Codec::fields;
    fail(op, "component " + std::string(info.name) +
                 " has no field metadata, so its values can't be saved (describe it with "
                 "TESSERA_REFLECT, or leave it out of saved worlds)");
}

const char* codec_name(Codec codec) noexcept {
    return codec == Codec::tag ? "tag" : codec == Codec::targets ? "targets" : "fields";
}

Scan scan(const Storage& s, const char* op) {
    check_quiet(s, op);
    Scan out;
    std::vector<std::int64_t> slot;
    for (std::size_t i = empty_archetype; i < s.archetype_end(); ++i) {
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
    // The sparse sets that hold values (an empty one is as good as none, as an empty table).
    for (const SparseSet* set : s.sparse_sets()) {
        if (set->size() == 0) continue;
        codec_of(set->info(), op);
        out.sparse.push_back(set);
        out.sparse_component.push_back(static_cast<std::uint32_t>(out.components.size()));
        out.components.push_back(set->info().id);
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

SavedComponent resolve_component(const std::string& name, const std::string& kind, bool tracked,
                                 const char* op) {
    if (!valid_utf8(name)) fail(op, "a component name is not valid UTF-8");
    const ComponentId id = find_component(name);
    if (!id.valid())
        fail(op, "unknown component " + quote(name) +
                     " (not defined or not registered in this program)");
    const ComponentInfo& info = component_info(id);
    const Codec codec = codec_of(info, op);
    const char* expected = codec_name(codec);
    if (kind != expected)
        fail(op, "component '" + name + "' was saved as " + quote(kind) + ", the program's is " +
                     expected);
    return SavedComponent{id, &info, codec, tracked, true};
}

namespace {

// Checks the relations of `b` (built from `image`, tables complete) and sets the reverse lists:
// every target list is non-empty, of live distinct entities; a relation's data and targets
// come together; the saved reverse lists hold exactly the same pairs; ChildOf has no loop.
void check_relations(const Image& image, Storage& b, const char* op) {
    const std::size_t n_records = image.generations.size();
    auto alive = [&](Entity e) { return b.try_record(e) != nullptr; };
    for (std::size_t ci = 0; ci < image.components.size(); ++ci) {
        const SavedComponent& sc = image.components[ci];
        if (sc.codec != Codec::targets) continue;
        const RelationType& type = sc.info->relation();
        // Duplicates are found with stamps by entity index (lists may be long: no quadratic
        // scans).
        std::vector<std::uint64_t> stamp(n_records, 0);
        std::uint64_t list_no = 0;
        std::vector<std::uint64_t> forward;  // (target index, source index) pairs
        for (std::size_t i = empty_archetype; i < b.archetype_end(); ++i) {
            const Archetype& a = b.archetype(static_cast<std::uint32_t>(i));
            if (a.contains(type.data) != a.contains(type.targets))
                fail(op, std::string(sc.info->name) +
                             ": a relation's data and targets must come together");
            if (!a.contains(type.targets)) continue;
            for (std::uint32_t row = 0; row < a.size; ++row) {
                const auto& list =
                    *reinterpret_cast<const Targets*>(b.try_value(a.entities[row], type.targets));
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
                const auto* parents =
                    reinterpret_cast<const Targets*>(b.try_value(e, type.targets));
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

// Fills the sparse sets of `b` (its tables and entities complete) from the image's sections:
// each names a sparse component once and live, distinct entities. A set's values are built in
// its room before its rows exist, so a throw leaves the set consistent (b is then dropped).
void build_sparse(const Image& image, ColumnSource& columns, Storage& b, const char* op) {
    const std::size_t n_records = image.generations.size();
    std::vector<std::uint8_t> seen_component(image.components.size(), 0);
    std::vector<std::uint32_t> stamp(n_records, 0);
    for (std::size_t si = 0; si < image.sparse.size(); ++si) {
        const Image::Sparse& section = image.sparse[si];
        if (section.component >= image.components.size())
            fail(op, "a sparse section names an unknown component");
        const SavedComponent& c = image.components[section.component];
        const std::string name(c.info->name);
        if (!c.info->sparse) fail(op, "a sparse section names " + name + ", which is not sparse");
        if (seen_component[section.component] != 0) fail(op, "two sparse sections of " + name);
        seen_component[section.component] = 1;
        SparseSet& set = *b.sparse(c.id);
        const auto n = static_cast<std::uint32_t>(section.entities.size());
        if (n == 0) continue;
        set.reserve_rows(n);
        for (const std::uint32_t index : section.entities) {
            if (index >= n_records || StorageAccess::record(b, index).archetype == dead_archetype)
                fail(op, name + ": a sparse value of an entity that is not alive");
            if (stamp[index] == si + 1) fail(op, name + ": an entity has two sparse values");
            stamp[index] = static_cast<std::uint32_t>(si + 1);
            set.reserve(index, 0);
        }
        if (!c.info->is_tag()) columns.sparse_values(si, set.value(0), n, b);  // set is empty
        for (const std::uint32_t index : section.entities)
            (void)set.insert(Entity{index, StorageAccess::record(b, index).generation}, b.tick());
        if (set.enabled() != nullptr) columns.sparse_flags(si, set.enabled(), n);
        if (set.tracked()) columns.sparse_ticks(si, set.added(), set.changed(), n);
    }
}

// Builds `b` (fresh, the target's resource) from `image` and `columns`, checking everything.
void build(const Image& image, ColumnSource& columns, Storage& b, const char* op) {
    const std::size_t n_records = image.generations.size();
    if (n_records >= 0xFFFFFFFEu) fail(op, "too many entities");
    // A tick at the top leaves no room to advance (World::advance_tick would throw at once).
    if (image.tick >= World::max_tick)
        fail(op, "tick " + std::to_string(image.tick) +
                     " leaves no room to advance (a loaded tick must be below World::max_tick, "
                     "2^63 - 1)");
    for (std::size_t i = 0; i < image.strings.size(); ++i) {
        if (const std::size_t at = invalid_utf8_at(image.strings[i]); at != std::string::npos) {
            fail(op, "string " + std::to_string(i + 1) + " is not valid UTF-8 (byte " +
                         std::to_string(at) + ")");
        }
        if (b.strings().intern(image.strings[i]) != i + 1)
            fail(op, "string " + std::to_string(i + 1) + " is empty or repeated");
    }
    // Components: recorded, tracked ones tracked, relations registered before any table.
    for (const SavedComponent& c : image.components) {
        b.ensure_component(c.id);
        if (c.info->sparse) {
            // Its set keeps ticks or not by its type (tracked from the start): the saved
            // data must agree, or the ticks would be misread.
            if (c.tracked != b.sparse(c.id)->tracked())
                fail(op, "component " + std::string(c.info->name) + " was saved " +
                             (c.tracked ? "with" : "without") +
                             " change ticks; the program's sparse set keeps " +
                             (c.tracked ? "none" : "them"));
            continue;
        }
        if (c.tracked) {
            if (!c.info->track_changes || c.info->is_tag())
                fail(op, "component " + std::string(c.info->name) + " can't carry change ticks");
            StorageAccess::set_tracked(b, c.id);
        }
    }
    for (const SavedComponent& c : image.components) {
        if (c.codec == Codec::targets) register_relation(b, c.info->relation(), op);
    }
    // ChildOf is a relation in every world: saved without its targets it would load as a
    // plain component and refuse every later relate<ChildOf>.
    const RelationType& hierarchy = relation_type<ChildOf>();
    const auto saved = [&](ComponentId id) {
        return std::any_of(image.components.begin(), image.components.end(),
                           [&](const SavedComponent& c) { return c.id == id; });
    };
    if (saved(hierarchy.data) && !saved(hierarchy.targets))
        fail(op, std::string(component_info(hierarchy.data).name) +
                     " is saved without its targets (a relation's data and targets must come "
                     "together)");
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
            if (image.components[c].info->sparse)
                fail(op, "an archetype names the sparse component " +
                             std::string(image.components[c].info->name) +
                             " (sparse components are in their sets, not in tables)");
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
                const std::int32_t c = a->column_index(ids[k]);
                if (c < 0) continue;  // a tag
                Column& col = a->columns[static_cast<std::uint32_t>(c)];
                if (!col.info->is_tag()) {  // an enableable tag's column has flags only
                    filled.reserve(filled.size() + 1);
                    columns.values(ai, k, col.data, n, b);
                    filled.push_back(&col);
                }
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
    build_sparse(image, columns, b, op);
    check_relations(image, b, op);
}

}  // namespace

// Fills an empty `world` from an image: builds a fresh storage, then swaps it in.
void load_image(const Image& image, ColumnSource& columns, World& world, const char* op) {
    Storage& target = world.storage();
    check_quiet(target, op);
    if (target.count() != 0) fail(op, "the target world is not empty");
    const StorageGuard guard{new_storage(target.resource())};
    Storage* b = guard.s;
    build(image, columns, *b, op);
    columns.finish();
    for (const auto& [index, name] : image.names) {
        if (index >= image.generations.size()) fail(op, "a name of an entity that is not alive");
        const Entity e{index, image.generations[index]};
        if (!b->try_record(e)) fail(op, "a name of an entity that is not alive");
        set_name(*b, e, name);  // checks the name and its uniqueness (invalid_argument)
    }
    replace_state(target, *b);
}

}  // namespace serial
}  // namespace tessera::detail
