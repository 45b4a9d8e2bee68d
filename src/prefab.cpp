// Prefab instantiation (prefab.hpp): the whole tree of a prefab and its child prefabs planned,
// reserved and copied into the instances' final tables before any entity exists, then
// committed at once; while the world defers, queued as spawns and relates. A call without
// overrides uses the prefab's cached plan (its tables, copied columns and child prefabs),
// checked against the prefab tree on every use.
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

/// `n` copies of the `S` bytes at `src` at `dst`, as fixed-size stores.
template <std::size_t S>
void fill_fixed(std::byte* dst, const std::byte* src, std::size_t n) noexcept {
    if (n == 1) {  // one instance (instantiate): one store
        std::memcpy(dst, src, S);
        return;
    }
    std::byte value[S];
    std::memcpy(value, src, S);
    for (std::size_t i = 0; i < n; ++i) std::memcpy(dst + i * S, value, S);
}

/// `n` copies of the `size` bytes at `src` at `dst`: the common sizes as fixed-size stores,
/// others by copies of what is already written, doubling up to a block of about 4 KiB (which
/// stays in the cache), then block by block.
[[gnu::always_inline]] inline void fill_bytes(std::byte* dst, const std::byte* src,
                                              std::size_t size, std::size_t n) noexcept {
    switch (size) {
        case 0: return;
        case 4: return fill_fixed<4>(dst, src, n);
        case 8: return fill_fixed<8>(dst, src, n);
        case 12: return fill_fixed<12>(dst, src, n);
        case 16: return fill_fixed<16>(dst, src, n);
        default: break;
    }
    if (n == 0) return;
    std::memcpy(dst, src, size);
    const std::size_t block = std::max<std::size_t>(1, 4096 / size);
    for (std::size_t done = 1; done < n;) {
        const std::size_t k = std::min({done, block, n - done});
        std::memcpy(dst + done * size, dst, k * size);
        done += k;
    }
}

/// Copy-constructs `n` copies of the value at `src` into `dst` (uninitialised); when a copy
/// throws, the ones made are destroyed.
void fill_copies(const ComponentInfo& info, std::byte* dst, const std::byte* src, std::size_t n) {
    if (info.trivially_copyable) {
        fill_bytes(dst, src, info.size, n);
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

// ------------------------------------------------------------------------ cached plans

constexpr std::uint32_t no_parent = std::numeric_limits<std::uint32_t>::max();

/// One prefab of a cached plan's tree (breadth first, as `plan_levels`).
struct PlanLevel {
    Entity prefab;
    std::uint32_t parent;         ///< the level of the parent prefab, or no_parent for the root
    std::uint32_t source;         ///< the prefab's archetype when planned
    Archetype* target = nullptr;  ///< the instances' table (it lives as long as the layout)
    std::uint32_t fills_begin = 0, fills_end = 0;  ///< its columns' fills, in `Plan::fills`
    std::uint32_t kids_begin = 0, kids_end = 0;    ///< its ChildOf sources planned, in `Plan::kids`
    std::uint32_t table_before = 0;                ///< earlier levels with the same target
    // Counts kept on the first level of a group, 0 on the others: the levels with its target;
    // the levels next to each other with its target (committed at once); the levels of its
    // prefab.
    std::uint32_t table_levels = 1;
    std::uint32_t run_levels = 1;
    std::uint32_t prefab_levels = 1;
};

/// How one column of an instance's row is filled: from the prefab's column `from`, or a
/// relation's target list (`isa_list`, `child_list`).
struct Fill {
    static constexpr std::int32_t isa_list = -3;  // not a column index, nor absent or a tag
    static constexpr std::int32_t child_list = -4;
    std::uint32_t to;
    std::int32_t from;
    std::uint32_t bytes;  ///< the value's size when copied with memcpy (not 0), else 0
};

/// What instantiating a prefab without overrides needs, computed once: the tree, each level's
/// table and the fill of each of its columns. It holds while the world's layout (its
/// archetype indices) is the same, each prefab of the tree is in the table it was planned in
/// (its component set unchanged: the copied columns and the target table follow from it) and
/// each has the ChildOf sources it had (the same child prefabs, in order): `valid` checks
/// those on every use, so any change to the tree is seen without observers.
struct Plan {
    explicit Plan(std::pmr::memory_resource* mr) : levels(mr), fills(mr), kids(mr) {}
    Entity root;
    std::uint64_t epoch = 0;
    std::pmr::vector<PlanLevel> levels;
    std::pmr::vector<Fill> fills;
    std::pmr::vector<Entity> kids;
};

/// The plans of a world, by root prefab index (an open-addressing table of positions in
/// `plans`); the relation index holds it (`RelationIndex::plans`), so it dies with the lists
/// it was computed from and no copy of the world inherits it.
class PlanCache {
public:
    explicit PlanCache(std::pmr::memory_resource* mr) : plans_(mr), slots_(mr) {}

    /// The plan of the prefab at entity index `index`, or null.
    [[nodiscard]] Plan* find(std::uint32_t index) noexcept {
        if (last_ < plans_.size() && plans_[last_].root.index == index) return &plans_[last_];
        if (slots_.empty()) return nullptr;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = hash(index) & mask;; i = (i + 1) & mask) {
            const std::uint32_t at = slots_[i];
            if (at == empty) return nullptr;
            if (plans_[at].root.index == index) {
                last_ = at;
                return &plans_[at];
            }
        }
    }
    /// Keeps `plan` (replacing the plan of the same prefab index) and returns it. Strong
    /// guarantee: bad_alloc keeps the cache as it was.
    Plan& put(Plan& plan) {
        if (Plan* old = find(plan.root.index)) {
            swap(*old, plan);  // one memory resource: no allocation
            return *old;
        }
        if ((plans_.size() + 1) * 2 > slots_.size()) {
            std::pmr::vector<std::uint32_t> grown(std::max<std::size_t>(16, slots_.size() * 2),
                                                  empty, slots_.get_allocator());
            for (std::uint32_t at = 0; at < plans_.size(); ++at)
                place(grown, plans_[at].root.index, at);
            slots_.swap(grown);
        }
        if (plans_.size() == plans_.capacity())
            plans_.reserve(std::max<std::size_t>(4, plans_.capacity() * 2));
        place(slots_, plan.root.index, static_cast<std::uint32_t>(plans_.size()));
        plans_.emplace_back(plans_.get_allocator().resource());
        swap(plans_.back(), plan);
        last_ = static_cast<std::uint32_t>(plans_.size() - 1);
        return plans_.back();
    }

private:
    static constexpr std::uint32_t empty = std::numeric_limits<std::uint32_t>::max();
    static std::size_t hash(std::uint32_t index) noexcept {
        return static_cast<std::size_t>((std::uint64_t{index} * 0x9E3779B97F4A7C15ull) >> 32);
    }
    static void place(std::pmr::vector<std::uint32_t>& slots, std::uint32_t index,
                      std::uint32_t at) noexcept {
        const std::size_t mask = slots.size() - 1;
        std::size_t i = hash(index) & mask;
        while (slots[i] != empty) i = (i + 1) & mask;
        slots[i] = at;
    }
    static void swap(Plan& a, Plan& b) noexcept {
        std::swap(a.root, b.root);
        std::swap(a.epoch, b.epoch);
        a.levels.swap(b.levels);
        a.fills.swap(b.fills);
        a.kids.swap(b.kids);
    }

    std::pmr::vector<Plan> plans_;
    std::pmr::vector<std::uint32_t> slots_;  ///< positions in plans_, `empty` when free
    std::uint32_t last_ = empty;             ///< the plan found last
};

void destroy_cache(void* object, std::pmr::memory_resource* mr) noexcept {
    auto* cache = static_cast<PlanCache*>(object);
    cache->~PlanCache();
    mr->deallocate(cache, sizeof(PlanCache), alignof(PlanCache));
}

PlanCache& plan_cache(RelationIndex& index) {
    if (index.plans.object == nullptr) {
        std::pmr::memory_resource* mr = index.resource();
        void* mem = mr->allocate(sizeof(PlanCache), alignof(PlanCache));
        index.plans.object = ::new (mem) PlanCache(mr);  // allocates nothing
        index.plans.destroy = &destroy_cache;
    }
    return *static_cast<PlanCache*>(index.plans.object);
}

/// Whether a prefab of the tree is in a sparse set: such trees take the planning path, which
/// copies sparse components (a sparse add moves no prefab to another table, so a plan could
/// not see it).
bool has_sparse(const Storage& s, std::span<const PlanLevel> levels) noexcept {
    for (const SparseSet* set : s.sparse_sets()) {
        for (const PlanLevel& l : levels)
            if (set->contains(l.prefab)) return true;
    }
    return false;
}

/// Whether `plan` still describes the prefab tree (see `Plan`).
bool valid(const Storage& s, RelationIndex& index, const Plan& plan) noexcept {
    if (plan.epoch != s.layout_epoch()) return false;
    const RelationIndex::Kind* child = index.find(lookup_id<ChildOf>());
    const std::span<const EntityList> lists = child != nullptr
                                                  ? std::span<const EntityList>(child->sources)
                                                  : std::span<const EntityList>{};
    const EntityRecord* records = s.records();
    for (const PlanLevel& l : plan.levels) {
        // Its table: alive (a live prefab's table is never the dead one) and the same.
        if (l.prefab.index >= s.record_count()) return false;
        const EntityRecord& r = records[l.prefab.index];
        if (r.generation != l.prefab.generation || r.archetype != l.source) return false;
        // Its child prefabs.
        const std::size_t kids = l.kids_end - l.kids_begin;
        const std::span<const Entity> now = l.prefab.index < lists.size()
                                                ? lists[l.prefab.index].span()
                                                : std::span<const Entity>{};
        if (now.size() != kids) return false;
        const Entity* then = plan.kids.data() + l.kids_begin;
        for (std::size_t i = 0; i < kids; ++i)
            if (now[i] != then[i]) return false;
    }
    return s.sparse_sets().empty() || !has_sparse(s, plan.levels);
}

/// Plans the tree of the live prefab `prefab` into `plan`; false when it can't be cached (a
/// prefab of the tree has sparse components, or a child that is not a prefab). Registers the
/// relation kinds and makes the tables, as an uncached call would. @throws bad_alloc,
/// Error(invalid_argument) for a component that can't be copied.
bool make_plan(Storage& s, Entity prefab, Plan& plan) {
    const ComponentId prefab_tag = lookup_id<Prefab>();
    const RelationType& isa_type = relation_type<IsA>();
    const RelationType& child_type = relation_type<ChildOf>();
    RelationIndex& index = s.relation_index();
    index.kind_for(s, isa_type, op);
    plan.root = prefab;
    plan.epoch = s.layout_epoch();
    std::pmr::vector<PlanLevel>& levels = plan.levels;
    levels.push_back(PlanLevel{prefab, no_parent, s.try_record(prefab)->archetype});
    for (std::size_t i = 0; i < levels.size(); ++i) {
        levels[i].kids_begin = static_cast<std::uint32_t>(plan.kids.size());
        for (const Entity c : sources(s, child_type.data, levels[i].prefab)) {
            if (!s.has(c, prefab_tag)) return false;
            plan.kids.push_back(c);
            levels.push_back(
                PlanLevel{c, static_cast<std::uint32_t>(i), s.try_record(c)->archetype});
        }
        levels[i].kids_end = static_cast<std::uint32_t>(plan.kids.size());
    }
    if (has_sparse(s, levels)) return false;
    if (levels.size() > 1) index.kind_for(s, child_type, op);
    std::pmr::vector<ComponentId> ids(s.resource());
    for (std::size_t i = 0; i < levels.size(); ++i) {
        PlanLevel& l = levels[i];
        const Archetype& source = s.archetype(l.source);
        ids.clear();
        for (const ComponentId id : source.ids) {
            if (left_behind(s, id, prefab_tag)) continue;
            check_copyable(s.info(id), l.prefab);
            ids.push_back(id);
        }
        ids.push_back(isa_type.data);
        ids.push_back(isa_type.targets);
        if (l.parent != no_parent) {
            ids.push_back(child_type.data);
            ids.push_back(child_type.targets);
        }
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
        l.target = &s.archetype_for(ids);
        l.fills_begin = static_cast<std::uint32_t>(plan.fills.size());
        for (std::uint32_t k = 0; k < l.target->columns.size(); ++k) {
            const ComponentId id = l.target->columns[k].id;
            const std::int32_t from = id == isa_type.targets     ? Fill::isa_list
                                      : id == child_type.targets ? Fill::child_list
                                                                 : source.column_index(id);
            TESSERA_ASSERT(from >= 0 || from == Fill::isa_list || from == Fill::child_list,
                           "instantiate: a column of the instance the prefab lacks");
            const ComponentInfo& info = *l.target->columns[k].info;
            const bool bytes = from >= 0 && info.trivially_copyable && info.size != 0;
            plan.fills.push_back(Fill{k, from, bytes ? info.size : 0});
        }
        l.fills_end = static_cast<std::uint32_t>(plan.fills.size());
        for (std::size_t k = i; k-- > 0 && levels[k].target == l.target;) {
            if (levels[k].run_levels == 0) continue;
            ++levels[k].run_levels;
            l.run_levels = 0;
            break;
        }
        for (std::size_t k = 0; k < i; ++k) {
            PlanLevel& earlier = levels[k];
            if (earlier.target == l.target) {
                ++l.table_before;
                if (earlier.table_levels != 0) {
                    ++earlier.table_levels;
                    l.table_levels = 0;
                }
            }
            if (earlier.prefab == l.prefab && earlier.prefab_levels != 0) {
                ++earlier.prefab_levels;
                l.prefab_levels = 0;
            }
        }
    }
    return true;
}

/// The valid cached plan of `prefab`, or null (none yet, or the tree changed since).
const Plan* cached_plan(const Storage& s, Entity prefab) noexcept {
    RelationIndex* index = s.relations();
    if (index == nullptr || index->plans.object == nullptr) return nullptr;
    const Plan* plan = static_cast<PlanCache*>(index->plans.object)->find(prefab.index);
    if (plan == nullptr || plan->root != prefab || !valid(s, *index, *plan)) return nullptr;
    return plan;
}

/// The plan of the live prefab `prefab`, made and kept when none is valid; null when its tree
/// can't be cached. @throws as `make_plan`.
const Plan* plan_of(Storage& s, Entity prefab) {
    if (const Plan* plan = cached_plan(s, prefab)) return plan;
    Plan plan(s.resource());
    if (!make_plan(s, prefab, plan)) return nullptr;
    return &plan_cache(s.relation_index()).put(plan);
}

/// The target lists of relation `R` of `n` rows at `dst` (`stride` bytes apart), the `i`th
/// holding `target(i)` in its inline slot.
template <class R, class F>
void make_lists(std::byte* dst, std::size_t stride, std::size_t n, std::pmr::memory_resource* mr,
                F&& target) noexcept {
    if (n == 1) {  // one instance (instantiate): no loop to set up
        RelationAccess::make_one<R>(dst, mr, target(0));
        return;
    }
    for (std::size_t i = 0; i < n; ++i)
        RelationAccess::make_one<R>(dst + i * stride, mr, target(i));
}

/// `instantiate_now` along a plan: no override, no sparse component, the queue empty.
std::span<const Entity> instantiate_planned(Storage& s, const Plan& plan, std::size_t n) {
    std::pmr::memory_resource* mr = s.resource();
    RelationIndex& index = *s.relations();
    const RelationType& child_type = relation_type<ChildOf>();
    RelationIndex::Kind& isa = *index.find(lookup_id<IsA>());
    const std::span<const PlanLevel> levels = plan.levels;
    RelationIndex::Kind* child = levels.size() > 1 ? index.find(child_type.data) : nullptr;
    const std::size_t total = n * levels.size();
    // Spawn observers (the only hook a spawn has) get a copy of the entities, as the rows may
    // move while they run.
    const bool observed = s.observers() != nullptr;

    // Everything that can fail first: the rows, the entity slots, the relation lists.
    for (const PlanLevel& l : levels) {
        if (l.table_levels != 0) s.reserve_rows(*l.target, n * l.table_levels);
    }
    s.reserve_entities(total);
    // The handles the tree will get (its ChildOf lists are filled before it exists), on the
    // stack for a small tree.
    constexpr std::size_t small = 32;
    union Local {  // uninitialised: next_entities writes what is used
        // Not `= default`: Entity's members have initialisers, which would delete it.
        Local() noexcept {}  // NOLINT(modernize-use-equals-default)
        Entity at[small];
    } local;
    std::pmr::vector<Entity> heap(mr);
    std::span<Entity> made;
    if (levels.size() > 1 || observed) {
        if (total > small || observed) {
            heap.resize(total);
            made = heap;
        } else {
            made = std::span<Entity>(local.at, total);
        }
        s.next_entities(made);
    }
    for (std::size_t k = 0; k < levels.size(); ++k) {
        const PlanLevel& l = levels[k];
        if (l.prefab_levels != 0) {
            EntityList& list = index.sources_at(isa, l.prefab.index);
            list.reserve(list.size() + n * l.prefab_levels);
        }
        const std::uint32_t kids = l.kids_end - l.kids_begin;
        if (kids == 0) continue;
        for (std::size_t i = 0; i < n; ++i) {
            EntityList& list = index.sources_at(*child, made[k * n + i].index);
            list.reserve(list.size() + kids);
        }
    }
    index.reserve_log(total - n);

    // The values, straight into the rows past each table's end (nothing visible yet).
    std::size_t done_levels = 0;
    std::uint32_t done_fills = 0;
    try {
        for (; done_levels < levels.size(); ++done_levels) {
            const PlanLevel& l = levels[done_levels];
            Archetype& a = *l.target;
            const Archetype& source = s.archetype(l.source);
            const std::uint32_t source_row = s.try_record(l.prefab)->row;
            const std::size_t first_row = a.size + n * l.table_before;
            for (done_fills = l.fills_begin; done_fills < l.fills_end; ++done_fills) {
                const Fill& f = plan.fills[done_fills];
                Column& c = a.columns[f.to];
                std::byte* dst = c.data + first_row * c.size;
                if (f.from == Fill::isa_list) {
                    make_lists<IsA>(dst, c.size, n, mr, [&](std::size_t) { return l.prefab; });
                } else if (f.from == Fill::child_list) {
                    const Entity* parents = made.data() + std::size_t{l.parent} * n;
                    make_lists<ChildOf>(dst, c.size, n, mr,
                                        [&](std::size_t i) { return parents[i]; });
                } else {
                    const Column& from = source.columns[static_cast<std::uint32_t>(f.from)];
                    const std::byte* value = from.data + std::size_t{source_row} * from.size;
                    if (f.bytes != 0)
                        fill_bytes(dst, value, f.bytes, n);
                    else
                        fill_copies(*c.info, dst, value, n);
                }
            }
        }
    } catch (...) {
        for (std::size_t k = 0; k <= done_levels && k < levels.size(); ++k) {
            const PlanLevel& l = levels[k];
            const std::uint32_t end = k < done_levels ? l.fills_end : done_fills;
            const std::size_t first_row = l.target->size + n * l.table_before;
            for (std::uint32_t f = l.fills_begin; f < end; ++f) {
                const Column& c = l.target->columns[plan.fills[f].to];
                if (c.destroy != nullptr) c.destroy(c.data + first_row * c.size, n);
            }
        }
        throw;
    }

    // Nothing fails from here on. Consecutive levels with one table are committed at once:
    // their rows and entities follow each other.
    std::span<const Entity> roots;
    std::span<const Entity> run;
    for (std::size_t k = 0; k < levels.size(); ++k) {
        const PlanLevel& l = levels[k];
        if (l.run_levels != 0) run = s.commit_spawn_many(*l.target, n * l.run_levels);
        const std::span<const Entity> rows = run.first(n);
        run = run.subspan(n);
        TESSERA_ASSERT(made.empty() || rows.front() == made[k * n],
                       "instantiate: unexpected entity ids");
        if (k == 0) roots = rows;
        index.sources_if(isa, l.prefab.index)->append(rows);  // reserved
        if (l.parent == no_parent) continue;
        const Entity* parents = made.data() + std::size_t{l.parent} * n;
        for (std::size_t i = 0; i < n; ++i) {
            index.sources_if(*child, parents[i].index)->push_back(rows[i]);  // reserved
            index.log(child_type, rows[i]);
        }
    }
    if (!observed) return roots;  // a table's rows, as spawn_many's: valid until a change
    // The observers, once the whole tree exists; what they change is applied as they return.
    for (const Entity e : made) {
        const EntityRecord* r = s.try_record(e);
        if (r != nullptr && (s.hooked(s.archetype(r->archetype)) || sparse_hooked(s, e)))
            s.hooks().spawned(s, e);
    }
    heap.resize(n);          // the roots; no allocation
    s.spawned().swap(heap);  // one memory resource: no allocation
    return s.spawned();
}

}  // namespace

std::span<const Entity> instantiate(Storage& s, Entity prefab, std::size_t n,
                                    std::span<const ComponentId> ids, std::byte* const* values) {
    OverrideValues overrides{ids, values};  // the call's: destroyed unless moved in
    const EntryCheck entry(s);
    TESSERA_ASSERT(ids.empty() || n == 1, "instantiate: overrides are for one instance");
    TESSERA_ASSERT(ids.size() <= 64, "instantiate: at most 64 overrides");
    // The common case first: a valid plan proves the prefab alive and a prefab.
    if (n != 0 && ids.empty() && !s.deferring() && s.deferred().empty()) [[likely]] {
        if (const Plan* plan = cached_plan(s, prefab)) {
            check_not_parallel(s, op);
            return instantiate_planned(s, *plan, n);
        }
    }
    check_prefab(s, prefab);
    if (n == 0) {
        s.spawned().clear();
        return {};
    }
    if (s.deferring()) return instantiate_deferred(s, prefab, n, overrides);
    check_not_parallel(s, op);
    // What an earlier failed flush left goes first, as in program order.
    if (!s.deferred().empty()) [[unlikely]] {
        flush(s);
        check_prefab(s, prefab);  // the flush may have changed it
    }
    if (ids.empty()) {
        if (const Plan* plan = plan_of(s, prefab)) return instantiate_planned(s, *plan, n);
    }
    return instantiate_now(s, prefab, n, overrides);
}

Entity prefab_of(const Storage& s, Entity e) noexcept {
    const EntityList* list = targets_of(s, lookup_id<Targets<IsA>>(), e);
    return list == nullptr ? Entity::null() : list->front();
}

}  // namespace tessera::detail
