// Prefab instantiation (prefab.hpp): the whole tree of a prefab and its child prefabs planned,
// reserved and copied into the instances' final tables before any entity exists, then
// committed at once; while the world defers, queued as spawns and relates.
#include "relation_index.hpp"
#include "required.hpp"

#include <tessera/prefab.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory_resource>

namespace tessera::detail {

namespace {

constexpr const char* op = "World::instantiate";
constexpr std::size_t no_level = std::numeric_limits<std::size_t>::max();

/// One prefab of the tree: `n` instances of it are made, rows [first_row, first_row + n) of
/// `target`, entities [first, first + n) of the call's list.
struct Level {
    Entity prefab;
    std::size_t parent;  ///< the level of the parent prefab, or no_level for the root
    const Archetype* source;
    std::uint32_t source_row;
    Archetype* target = nullptr;
    std::uint32_t first_row = 0;
    std::size_t first = 0;
    std::size_t children = 0;  ///< child levels
};

[[noreturn]] void throw_not_prefab(Entity e, const char* what) {
    std::ostringstream os;
    os << op << ": entity " << e << what;
    throw Error(e ? errc::invalid_argument : errc::not_alive, os.str());
}

/// Throws unless `e` is a live prefab.
void check_prefab(const Storage& s, Entity e) {
    if (s.try_record(e) == nullptr) {
        std::ostringstream os;
        os << op << ": prefab " << e << " is not alive";
        throw Error(errc::not_alive, os.str());
    }
    if (!s.has(e, lookup_id<Prefab>()))
        throw_not_prefab(e, " is not a prefab (make it with World::prefab)");
}

/// Whether an instance leaves `id` of its prefab behind: the tag and every relation's
/// components (the instance gets its own IsA and ChildOf).
bool left_behind(const Storage& s, ComponentId id, ComponentId prefab) noexcept {
    return id == prefab || s.info(id).reserved || s.reserved(id);
}

void check_copyable(const ComponentInfo& info, Entity prefab) {
    if (!info.is_tag() && !info.copyable()) {
        std::ostringstream os;
        os << op << ": component " << info.name << " of prefab " << prefab
           << " can't be copied (it has no copy constructor)";
        throw Error(errc::invalid_argument, os.str());
    }
}

/// The prefab's components an instance copies: its table's (ascending ids), then its sparse
/// ones (detail/sparse_set.hpp: in their sets, in the order the world made the sets).
void copied_ids(const Storage& s, const Level& l, std::pmr::vector<ComponentId>& out) {
    const ComponentId prefab = lookup_id<Prefab>();
    for (const ComponentId id : l.source->ids) {
        if (left_behind(s, id, prefab)) continue;
        check_copyable(s.info(id), l.prefab);
        out.push_back(id);
    }
    for (const SparseSet* set : s.sparse_sets()) {
        if (!set->contains(l.prefab)) continue;
        check_copyable(set->info(), l.prefab);
        out.push_back(set->info().id);
    }
}

/// The value an instance of `l` copies for `id` (a column of the prefab's row, or its sparse
/// entry).
const std::byte* source_value(const Storage& s, const Level& l, ComponentId id) noexcept {
    if (const SparseSet* set = s.sparse(id)) return set->value(set->find(l.prefab));
    const Column& c = l.source->columns[static_cast<std::uint32_t>(l.source->column_index(id))];
    return c.data + std::size_t{l.source_row} * c.size;
}

/// The sparse components of one level's instances (immediate path): `n` values built in the
/// set's room past its end, rows [size + offset, size + offset + n), then inserted in this
/// list's order (so each row lands on its value). `override_at` is the index of the call's
/// override, or `no_override` for a copy of the prefab's value.
struct SparseCopy {
    static constexpr std::size_t no_override = std::numeric_limits<std::size_t>::max();
    std::size_t level;
    SparseSet* set;
    std::size_t offset = 0;
    std::size_t override_at = no_override;
};

/// Copy-constructs `n` copies of the value at `src` into `dst` (uninitialised); when a copy
/// throws, the ones made are destroyed.
void fill_copies(const ComponentInfo& info, std::byte* dst, const std::byte* src, std::size_t n) {
    if (info.trivially_copyable) {
        for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + i * info.size, src, info.size);
        return;
    }
    std::size_t i = 0;
    try {
        for (; i < n; ++i) info.copy(dst + i * info.size, src);
    } catch (...) {
        if (info.destroy != nullptr) info.destroy(dst, i);
        throw;
    }
}

void destroy_value(const ComponentInfo& info, std::byte* value) noexcept {
    if (value != nullptr && info.destroy != nullptr) info.destroy(value, 1);
}

/// The prefab tree, breadth first: the root, then each level's child prefabs.
void plan_levels(const Storage& s, Entity prefab, std::pmr::vector<Level>& levels) {
    const ComponentId prefab_tag = lookup_id<Prefab>();
    const ComponentId child_of = lookup_id<ChildOf>();
    const EntityRecord& r = *s.try_record(prefab);
    levels.push_back(Level{prefab, no_level, &s.archetype(r.archetype), r.row});
    for (std::size_t i = 0; i < levels.size(); ++i) {
        for (const Entity c : sources(s, child_of, levels[i].prefab)) {
            if (!s.has(c, prefab_tag)) continue;
            const EntityRecord& cr = *s.try_record(c);
            levels.push_back(Level{c, i, &s.archetype(cr.archetype), cr.row});
            ++levels[i].children;
        }
    }
}

// ---------------------------------------------------------------------------- deferred

/// The overrides of a call, which it owns: the ones not moved into the world (or the queue)
/// are destroyed with this.
struct OverrideValues {
    std::span<const ComponentId> ids;
    std::byte* const* values;
    std::uint64_t moved = 0;  ///< bit i: values[i] was moved out
    OverrideValues(std::span<const ComponentId> i, std::byte* const* v) noexcept
        : ids(i), values(v) {}
    OverrideValues(const OverrideValues&) = delete;
    OverrideValues& operator=(const OverrideValues&) = delete;
    ~OverrideValues() {
        for (std::size_t i = 0; i < ids.size(); ++i)
            if ((moved >> i & 1u) == 0) destroy_value(component_info(ids[i]), values[i]);
    }
};

/// Queues one instance of `l`'s prefab (its place and values, its IsA, its ChildOf to
/// `parent` when not null) and returns it. Precondition: the world defers.
Entity queue_one(Storage& s, const Level& l, Entity parent, OverrideValues* overrides) {
    std::pmr::vector<ComponentId> ids(s.resource());
    copied_ids(s, l, ids);
    if (overrides != nullptr) {
        for (const ComponentId id : overrides->ids)
            if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    }
    const auto group = static_cast<std::uint16_t>(ids.size());
    s.deferred().reserve(1 + ids.size());
    s.reserve_watch(ids.size());
    const Entity e = s.spawn_pending();
    s.deferred().push_place(e, group);
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const ComponentInfo& info = s.ensure_component(ids[i]);
        std::byte* value = s.deferred().allocate_value(info);
        std::byte* given = nullptr;
        if (overrides != nullptr) {
            for (std::size_t k = 0; k < overrides->ids.size(); ++k) {
                if (overrides->ids[k] != ids[i]) continue;
                given = overrides->values[k];
                if (info.is_tag()) {
                    destroy_value(info, given);
                } else {
                    info.relocate_values(value, given, 1);
                }
                overrides->moved |= std::uint64_t{1} << k;
            }
        }
        if (given == nullptr && !info.is_tag())
            fill_copies(info, value, source_value(s, l, ids[i]), 1);
        s.watch(e, ids[i], s.deferred().mark());
        s.deferred().push_add(e, info, value, i == 0 ? group : 0);
    }
    std::byte none[1];  // IsA and ChildOf are tags: relate ignores the value
    relate(s, relation_type<IsA>(), e, l.prefab, none);
    if (parent) relate(s, relation_type<ChildOf>(), e, parent, none);
    return e;
}

std::span<const Entity> instantiate_deferred(Storage& s, Entity prefab, std::size_t n,
                                             OverrideValues& given) {
    OverrideValues* overrides = given.ids.empty() ? nullptr : &given;
    check_not_parallel(s, op);
    QueueGuard guard(s);
    std::pmr::vector<Level> levels(s.resource());
    plan_levels(s, prefab, levels);
    std::pmr::vector<Entity> made(s.resource());
    made.reserve(n * levels.size());
    for (std::size_t i = 0; i < n; ++i) {
        // Breadth first, as the immediate path: each level's instance under its parent's.
        const std::size_t base = made.size();
        for (std::size_t l = 0; l < levels.size(); ++l) {
            const Entity parent =
                levels[l].parent == no_level ? Entity::null() : made[base + levels[l].parent];
            made.push_back(queue_one(s, levels[l], parent, l == 0 ? overrides : nullptr));
        }
    }
    // The roots, as the immediate path returns them (in place: no allocation).
    for (std::size_t i = 0; i < n; ++i) made[i] = made[i * levels.size()];
    made.resize(n);
    guard.release();
    s.spawned().swap(made);  // one memory resource: no allocation
    return s.spawned();
}

// --------------------------------------------------------------------------- immediate

std::span<const Entity> instantiate_now(Storage& s, Entity prefab, std::size_t n,
                                        OverrideValues& overrides) {
    // What an earlier failed flush left goes first, as in program order.
    if (!s.deferred().empty()) [[unlikely]]
        flush(s);
    std::pmr::memory_resource* mr = s.resource();
    const RelationType& isa_type = relation_type<IsA>();
    const RelationType& child_type = relation_type<ChildOf>();
    // The plan's scratch (levels, id lists) is on the stack, the world's resource past it: a
    // small tree plans without an allocation.
    alignas(std::max_align_t) std::byte buffer[4096];
    std::pmr::monotonic_buffer_resource scratch(buffer, sizeof buffer, mr);
    std::pmr::vector<Level> levels(&scratch);
    levels.reserve(8);
    plan_levels(s, prefab, levels);
    // An override the prefab lacks brings its requirements the prefab lacks too (the copied
    // ones are kept as they are); they are placed as overrides.
    Required brought(s, overrides.ids, overrides.values);
    brought.bring(*levels.front().source, op, prefab);  // its sparse components count too
    const std::span<const ComponentId> override_ids = brought.ids();
    std::byte* const* override_values = brought.values();
    const std::size_t total = n * levels.size();

    // Everything that can fail first: the relation kinds, the tables, the rows, the entity
    // slots, the relation lists, the scratch.
    RelationIndex& index = s.relation_index();
    index.kind_for(s, isa_type, op);
    if (levels.size() > 1) index.kind_for(s, child_type, op);
    RelationIndex::Kind& isa = *index.find(isa_type.data);
    RelationIndex::Kind* child = levels.size() > 1 ? index.find(child_type.data) : nullptr;
    s.check_plain(override_ids, op);
    for (const ComponentId id : override_ids) s.ensure_component(id);
    std::pmr::vector<ComponentId> ids(&scratch);
    // Sparse components go to their sets, not the tables (rows counted per set in `offset`).
    std::pmr::vector<SparseCopy> sparse(&scratch);
    const auto split_sparse = [&](std::size_t l) {
        std::size_t kept = 0;
        for (const ComponentId id : ids) {
            SparseSet* set = s.sparse(id);
            if (set == nullptr) {
                ids[kept++] = id;
                continue;
            }
            bool seen = false;  // an override of a copied one: the override came first
            SparseCopy copy{l, set};
            for (const SparseCopy& c : sparse) {
                seen |= c.level == l && c.set == set;
                copy.offset += c.set == set ? n : 0;
            }
            if (seen) continue;
            if (l == 0) {
                const auto k = std::find(override_ids.begin(), override_ids.end(), id);
                if (k != override_ids.end())
                    copy.override_at = static_cast<std::size_t>(k - override_ids.begin());
            }
            sparse.push_back(copy);
        }
        ids.resize(kept);
    };
    for (std::size_t l = 0; l < levels.size(); ++l) {
        ids.clear();
        ids.reserve(levels[l].source->ids.size() + override_ids.size() + 4);
        copied_ids(s, levels[l], ids);
        // Overrides first, so a sparse one the prefab has too is placed as the override.
        if (l == 0) ids.insert(ids.begin(), override_ids.begin(), override_ids.end());
        if (!s.sparse_sets().empty()) [[unlikely]]
            split_sparse(l);
        ids.push_back(isa_type.data);
        ids.push_back(isa_type.targets);
        if (levels[l].parent != no_level) {
            ids.push_back(child_type.data);
            ids.push_back(child_type.targets);
        }
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        levels[l].target = &s.archetype_for(ids);
    }
    for (std::size_t l = 0, first = 0; l < levels.size(); ++l, first += n) {
        Level& level = levels[l];
        std::size_t before = 0;  // earlier levels in the same table
        std::size_t same = 0;    // all levels in the same table
        for (std::size_t k = 0; k < levels.size(); ++k) {
            if (levels[k].target != level.target) continue;
            ++same;
            if (k < l) ++before;
        }
        s.reserve_rows(*level.target, n * same);
        level.first_row = level.target->size + static_cast<std::uint32_t>(n * before);
        level.first = first;
    }
    s.reserve_entities(total);
    std::pmr::vector<Entity> made(total, Entity::null(), mr);
    s.next_entities(made);
    for (const Level& level : levels) {
        std::size_t same = 0;
        for (const Level& k : levels) same += k.prefab == level.prefab ? 1 : 0;
        EntityList& list = index.sources_at(isa, level.prefab.index);
        list.reserve(list.size() + n * same);
        if (level.children == 0) continue;
        for (std::size_t i = 0; i < n; ++i) {
            EntityList& kids = index.sources_at(*child, made[level.first + i].index);
            kids.reserve(kids.size() + level.children);
        }
    }
    index.reserve_log(total - n);
    // The sets' rows, then their pages (a later grow would move only the rows inserted).
    for (const SparseCopy& c : sparse) c.set->reserve_rows(c.offset + n);
    for (const SparseCopy& c : sparse) {
        for (std::size_t i = 0; i < n; ++i)
            c.set->reserve(made[levels[c.level].first + i].index, 0);
    }

    // The values, straight into the rows past each table's end (nothing visible yet).
    std::size_t done_levels = 0;
    std::size_t done_columns = 0;
    const auto is_override = [&](const Level& level, ComponentId id) {
        return &level == &levels.front() &&
               std::find(override_ids.begin(), override_ids.end(), id) != override_ids.end();
    };
    const auto destroy_tables = [&] {
        for (std::size_t l = 0; l <= done_levels && l < levels.size(); ++l) {
            const Level& level = levels[l];
            const std::size_t columns =
                l < done_levels ? level.target->columns.size() : done_columns;
            for (std::size_t k = 0; k < columns; ++k) {
                const Column& c = level.target->columns[k];
                if (c.destroy == nullptr || is_override(level, c.id)) continue;
                c.destroy(c.data + std::size_t{level.first_row} * c.size, n);
            }
        }
    };
    const auto slot = [](const SparseCopy& c) {
        return c.set->value(static_cast<std::uint32_t>(c.set->size() + c.offset));
    };
    try {
        for (; done_levels < levels.size(); ++done_levels) {
            const Level& level = levels[done_levels];
            Archetype& a = *level.target;
            for (done_columns = 0; done_columns < a.columns.size(); ++done_columns) {
                Column& c = a.columns[done_columns];
                std::byte* dst = c.data + std::size_t{level.first_row} * c.size;
                if (c.id == isa_type.targets || c.id == child_type.targets) {
                    const RelationType& type = c.id == isa_type.targets ? isa_type : child_type;
                    for (std::size_t i = 0; i < n; ++i) {
                        EntityList* list = type.make_targets(dst + i * c.size, mr);
                        // The inline slot: no allocation.
                        list->push_back(c.id == isa_type.targets
                                            ? level.prefab
                                            : made[levels[level.parent].first + i]);
                    }
                } else if (!is_override(level, c.id)) {
                    const Column& from =
                        level.source
                            ->columns[static_cast<std::uint32_t>(level.source->column_index(c.id))];
                    fill_copies(*c.info, dst, from.data + std::size_t{level.source_row} * from.size,
                                n);
                }
            }
        }
    } catch (...) {
        destroy_tables();
        throw;
    }
    // The sparse copies, into their sets' room past the end (not rows yet).
    std::size_t done_sparse = 0;
    try {
        for (; done_sparse < sparse.size(); ++done_sparse) {
            const SparseCopy& c = sparse[done_sparse];
            const ComponentInfo& info = c.set->info();
            if (c.override_at != SparseCopy::no_override || info.is_tag()) continue;
            fill_copies(info, slot(c), source_value(s, levels[c.level], info.id), n);
        }
    } catch (...) {
        for (std::size_t k = 0; k < done_sparse; ++k) {
            const SparseCopy& c = sparse[k];
            const ComponentInfo& info = c.set->info();
            if (c.override_at == SparseCopy::no_override && !info.is_tag() &&
                info.destroy != nullptr)
                info.destroy(slot(c), n);
        }
        destroy_tables();
        throw;
    }
    // Nothing fails from here on. The overrides go in last: they are relocated, not copied.
    for (std::size_t k = 0; k < override_ids.size(); ++k) {
        const Level& root = levels.front();
        const std::int32_t c = root.target->column_index(override_ids[k]);
        const ComponentInfo& info = s.info(override_ids[k]);
        if (info.is_tag()) {
            destroy_value(info, override_values[k]);
            continue;
        }
        if (c < 0) continue;  // a sparse override: below
        const Column& col = root.target->columns[static_cast<std::uint32_t>(c)];
        std::byte* dst = col.data + std::size_t{root.first_row} * col.size;
        info.relocate_values(dst, override_values[k], 1);
    }
    for (const SparseCopy& c : sparse) {
        const ComponentInfo& info = c.set->info();
        if (c.override_at != SparseCopy::no_override && !info.is_tag())
            info.relocate_values(slot(c), override_values[c.override_at], 1);
    }
    // Their rows, in the list's order: each lands on the value built for it (reserved).
    for (const SparseCopy& c : sparse) {
        for (std::size_t i = 0; i < n; ++i)
            (void)c.set->insert(made[levels[c.level].first + i], s.tick());
    }
    overrides.moved = ~std::uint64_t{0};
    brought.consumed();
    for (const Level& level : levels) {
        [[maybe_unused]] const std::span<const Entity> rows = s.commit_spawn_many(*level.target, n);
        TESSERA_ASSERT(rows.front() == made[level.first], "instantiate: unexpected entity ids");
        EntityList& list = *index.sources_if(isa, level.prefab.index);
        for (std::size_t i = 0; i < n; ++i) list.push_back(made[level.first + i]);  // reserved
        if (level.parent == no_level) continue;
        for (std::size_t i = 0; i < n; ++i) {
            const Entity e = made[level.first + i];
            index.sources_if(*child, made[levels[level.parent].first + i].index)->push_back(e);
            index.log(child_type, e);
        }
    }
    // The observers, once the whole tree exists; what they change is applied as they return.
    if (s.hooked()) {
        for (const Entity e : made) {
            const EntityRecord* r = s.try_record(e);
            if (r != nullptr && (s.hooked(s.archetype(r->archetype)) || sparse_hooked(s, e)))
                s.hooks().spawned(s, e);
        }
    }
    made.resize(n);          // the roots; no allocation
    s.spawned().swap(made);  // one memory resource: no allocation
    return s.spawned();
}

}  // namespace

std::span<const Entity> instantiate(Storage& s, Entity prefab, std::size_t n,
                                    std::span<const ComponentId> ids, std::byte* const* values) {
    OverrideValues overrides{ids, values};  // the call's: destroyed unless moved in
    const EntryCheck entry(s);
    TESSERA_ASSERT(ids.empty() || n == 1, "instantiate: overrides are for one instance");
    TESSERA_ASSERT(ids.size() <= 64, "instantiate: at most 64 overrides");
    check_prefab(s, prefab);
    if (n == 0) {
        s.spawned().clear();
        return {};
    }
    if (s.deferring()) return instantiate_deferred(s, prefab, n, overrides);
    check_not_parallel(s, op);
    return instantiate_now(s, prefab, n, overrides);
}

Entity prefab_of(const Storage& s, Entity e) noexcept {
    const EntityList* list = targets_of(s, lookup_id<Targets<IsA>>(), e);
    return list == nullptr ? Entity::null() : list->front();
}

}  // namespace tessera::detail
