// Relations: relate/unrelate (immediate and deferred), the reverse lookup and the hierarchy
// log; the relation index is in relation_index.hpp, despawns that follow relations in
// relation_despawn.cpp.
#include "observer_hooks.hpp"
#include "relation_index.hpp"

#include <tessera/prefab_tags.hpp>

namespace tessera::detail {

namespace {

[[noreturn]] void throw_dead(const char* op, const RelationType& type, Entity e, const char* role) {
    std::ostringstream os;
    os << op << '<' << relation_type_name(type) << ">: " << role << ' ' << e << " is not alive";
    throw Error(errc::not_alive, os.str());
}

/// A prefab's ChildOf children are prefabs (prefab.hpp): relating another entity under one is
/// refused.
void check_prefab_child(const Storage& s, const RelationType& type, Entity e, Entity target,
                        const char* op) {
    if (!type.hierarchy) return;
    const ComponentId prefab = lookup_id<Prefab>();
    if (!s.has(target, prefab) || s.has(e, prefab)) return;
    std::ostringstream os;
    os << op << "<ChildOf>: " << e << " is not a prefab and can't be a child of prefab " << target
       << " (spawn the child with World::prefab)";
    throw Error(errc::invalid_argument, os.str());
}

/// Runs a one-step change: `pre` observers, the mechanics, `post` observers. Without observers
/// only the mechanics run; when an observer throws, the mechanics still run (once).
template <class Pre, class Mechanics, class Post>
void change(Storage& s, Pre&& pre, Mechanics&& mechanics, Post&& post) {
    if (s.observers() == nullptr) {
        mechanics();
        return;
    }
    bool done = false;
    auto finish = [&]() noexcept {
        if (!done) {
            done = true;
            mechanics();
        }
    };
    notifying(
        s,
        [&] {
            pre();
            finish();
            post();
        },
        finish);
}

}  // namespace

// ------------------------------------------------------------------------ relate / unrelate

void relation_add(Storage& s, const RelationType& type, Entity e, Entity target, std::byte* value,
                  Commit commit) {
    constexpr const char* op = "World::relate";
    if (s.try_record(e) == nullptr) throw_dead(op, type, e, "entity");
    if (s.try_record(target) == nullptr) throw_dead(op, type, target, "target");
    RelationIndex& index = s.relation_index();
    RelationIndex::Kind& k = index.kind_for(s, type, op);
    if (type.hierarchy) index.check_cycle(s, k, e, target, op);
    check_prefab_child(s, type, e, target, op);
    EntityList& back = index.sources_at(k, target.index);
    const std::uint32_t from = s.try_record(e)->archetype;
    if (s.archetype(from).contains(type.targets)) {
        EntityList& list = *targets_of(s, type.targets, e);
        const bool had = list.contains(target);
        if (!had) {
            list.reserve(list.size() + 1);
            back.reserve(back.size() + 1);
        }
        const EntityRecord& r = *s.try_record(e);
        put_value(s, {&s.archetype(r.archetype), r.row}, type.data, value, true);
        if (!had) {
            list.push_back(target);
            back.push_back(e);
            const Location loc = s.try_location(e, type.targets);
            s.stamp_changed(*loc.archetype, loc.row, loc.column);
        }
        commit();
        change(
            s, [] {}, [] {},
            [&] {
                if (!component_info(type.data).is_tag()) deliver(s, Event::set, type.data, e);
                if (!had) deliver_relation(s, Event::relate, type.data, e, target);
            });
        return;
    }
    // The first target: R and Targets<R> arrive in one archetype move.
    if (type.hierarchy) s.check_name(e, target);  // a new first parent: its children's names
    back.reserve(back.size() + 1);
    index.reserve_log(1);
    ComponentId ids[2] = {type.data, type.targets};
    if (ids[1] < ids[0]) std::swap(ids[0], ids[1]);
    bool existed[2] = {false, false};
    const TableRow at = s.prepare_add(e, ids, existed, op);
    put_value(s, at, type.data, value, false);
    const std::int32_t c = at.archetype->column_index(type.targets);
    Column& col = at.archetype->columns[static_cast<std::uint32_t>(c)];
    EntityList* list = type.make_targets(col.data + std::size_t{at.row} * col.size, s.resource());
    list->push_back(target);  // the inline slot: no allocation
    s.stamp_added(at, c);
    back.push_back(e);
    index.log(type, e);
    if (type.hierarchy) s.name_moved(e);
    commit();
    const std::uint32_t to = at.archetype->index;
    change(
        s, [] {}, [] {},
        [&] {
            for (const ComponentId id : ids) deliver(s, Event::add, id, e);
            deliver_move(s, e, from, to);
            deliver_relation(s, Event::relate, type.data, e, target);
        });
}

void relate_many(Storage& s, const RelationType& type, Entity e, std::span<const Entity> targets,
                 std::byte* value) {
    constexpr const char* op = "World::relate";
    const EntryCheck entry(s);
    const ComponentInfo& data_info = component_info(type.data);
    struct Value {  // destroys the value unless the world took it
        std::byte* p;
        const ComponentInfo& info;
        ~Value() {
            if (p != nullptr && info.destroy != nullptr) info.destroy(p, 1);
        }
    } owned{value, data_info};
    // Everything that can fail first: the checks, then room for every change.
    RelationIndex& index = s.relation_index();
    RelationIndex::Kind& k = index.kind_for(s, type, op);
    if (type.hierarchy) {
        // New links all start at `e`: a loop would need a path from a target back to `e` that
        // is there already, so each target is checked against the hierarchy as it is.
        for (const Entity t : targets) {
            index.check_cycle(s, k, e, t, op);
            check_prefab_child(s, type, e, t, op);
        }
    }
    const std::uint32_t from = s.try_record(e)->archetype;
    const bool had = s.archetype(from).contains(type.targets);
    EntityList* list = had ? targets_of(s, type.targets, e) : nullptr;
    // The targets to add, in order, each once.
    std::pmr::vector<Entity> fresh(s.resource());
    fresh.reserve(targets.size());
    for (const Entity t : targets) {
        if ((list == nullptr || !list->contains(t)) &&
            std::find(fresh.begin(), fresh.end(), t) == fresh.end()) {
            fresh.push_back(t);
        }
    }
    std::uint32_t top = 0;
    for (const Entity t : fresh) top = std::max(top, t.index);
    if (!fresh.empty()) (void)index.sources_at(k, top);  // the lists stay where they are below
    for (const Entity t : fresh) {
        EntityList& back = index.sources_at(k, t.index);
        back.reserve(back.size() + 1);
    }
    std::uint32_t to = from;
    if (had) {
        list->reserve(list->size() + fresh.size());
        // Nothing below throws until the observers.
        const EntityRecord& r = *s.try_record(e);
        put_value(s, {&s.archetype(r.archetype), r.row}, type.data, std::exchange(owned.p, nullptr),
                  true);
    } else {
        if (type.hierarchy && !fresh.empty()) s.check_name(e, fresh.front());
        index.reserve_log(1);
        EntityList room(s.resource());  // the new list takes it over: no allocation after the move
        room.reserve(fresh.size());
        ComponentId ids[2] = {type.data, type.targets};
        if (ids[1] < ids[0]) std::swap(ids[0], ids[1]);
        bool existed[2] = {false, false};
        const TableRow at = s.prepare_add(e, ids, existed, op);
        // Nothing below throws until the observers.
        put_value(s, at, type.data, std::exchange(owned.p, nullptr), false);
        const std::int32_t c = at.archetype->column_index(type.targets);
        Column& col = at.archetype->columns[static_cast<std::uint32_t>(c)];
        list = type.make_targets(col.data + std::size_t{at.row} * col.size, s.resource());
        list->take(room);
        s.stamp_added(at, c);
        index.log(type, e);
        to = at.archetype->index;
    }
    for (const Entity t : fresh) {
        list->push_back(t);
        index.sources_at(k, t.index).push_back(e);
    }
    if (had && !fresh.empty()) {
        const Location loc = s.try_location(e, type.targets);
        s.stamp_changed(*loc.archetype, loc.row, loc.column);
    }
    if (type.hierarchy && !had) s.name_moved(e);
    // The events of one relate per target, in order: the first target of a new relation adds
    // R and Targets<R> (a move); every later one replaces the data (`set`, but for a tag), and
    // a target not related before is related.
    change(
        s, [] {}, [] {},
        [&] {
            std::size_t next = 0;  // the next of `fresh` to meet
            for (std::size_t i = 0; i < targets.size(); ++i) {
                const Entity t = targets[i];
                const bool added = next < fresh.size() && fresh[next] == t;
                if (added) ++next;
                if (i == 0 && !had) {
                    ComponentId ids[2] = {type.data, type.targets};
                    if (ids[1] < ids[0]) std::swap(ids[0], ids[1]);
                    for (const ComponentId id : ids) deliver(s, Event::add, id, e);
                    deliver_move(s, e, from, to);
                } else if (!data_info.is_tag()) {
                    deliver(s, Event::set, type.data, e);
                }
                if (added) deliver_relation(s, Event::relate, type.data, e, t);
            }
        });
}

namespace {

/// Removes targets from `e`'s relation `k`: `some` (targets `e` has, each once; copied by the
/// caller when it may be `e`'s own list), or all of them when `some` is null. The relation goes
/// with its last target. Returns how many targets were removed.
std::size_t unlink(Storage& s, RelationIndex& index, RelationIndex::Kind& k, Entity e,
                   const std::span<const Entity>* some, Commit commit) {
    const RelationType& type = k.type;
    EntityList* list = targets_of(s, type.targets, e);
    const std::size_t n = list == nullptr ? 0 : some != nullptr ? some->size() : list->size();
    if (n == 0) {
        commit();
        return 0;
    }
    const bool whole = n == list->size();
    ComponentId ids[2] = {type.data, type.targets};
    if (ids[1] < ids[0]) std::swap(ids[0], ids[1]);
    const std::uint32_t from = s.try_record(e)->archetype;
    std::uint32_t to = from;
    if (whole) {
        Archetype& dest = s.removal_target(s.archetype(from), ids);
        s.reserve_rows(dest, 1);
        to = dest.index;
    }
    index.reserve_log(1);
    commit();
    change(
        s,
        [&] {
            const std::span<const Entity> gone = some != nullptr ? *some : list->span();
            for (const Entity t : gone) deliver_relation(s, Event::unrelate, type.data, e, t);
            if (whole) {
                for (const ComponentId id : ids) deliver(s, Event::remove, id, e);
            }
        },
        [&]() noexcept {
            EntityList& targets = *targets_of(s, type.targets, e);
            const std::span<const Entity> gone = some != nullptr ? *some : targets.span();
            if (whole || std::find(gone.begin(), gone.end(), targets.front()) != gone.end())
                index.log(type, e);
            for (const Entity t : gone) {
                if (EntityList* back = index.sources_if(k, t.index)) back->erase(e);
            }
            const Entity first = targets.front();
            if (whole) {
                s.move_entity(e, *s.try_record(e), s.archetype(to));
            } else {
                for (const Entity t : gone) targets.erase(t);
                const Location loc = s.try_location(e, type.targets);
                s.stamp_changed(*loc.archetype, loc.row, loc.column);
            }
            if (type.hierarchy && (whole || targets_of(s, type.targets, e)->front() != first))
                s.name_moved(e);
        },
        [&] { deliver_move(s, e, from, to); });
    return n;
}

RelationIndex::Kind* kind_of(Storage& s, const RelationType& type) noexcept {
    RelationIndex* index = s.relations();
    return index == nullptr ? nullptr : index->find(type.data);
}

}  // namespace

bool relation_remove(Storage& s, const RelationType& type, Entity e, Entity target, Commit commit) {
    if (s.try_record(e) == nullptr) throw_dead("World::unrelate", type, e, "entity");
    RelationIndex::Kind* k = kind_of(s, type);
    if (k == nullptr) {
        commit();
        return false;
    }
    const EntityList* list = targets_of(s, type.targets, e);
    const std::span<const Entity> one(&target, list != nullptr && list->contains(target) ? 1 : 0);
    return unlink(s, *s.relations(), *k, e, &one, commit) != 0;
}

std::size_t relation_clear(Storage& s, const RelationType& type, Entity e, Commit commit) {
    if (s.try_record(e) == nullptr) throw_dead("World::unrelate", type, e, "entity");
    RelationIndex::Kind* k = kind_of(s, type);
    if (k == nullptr) {
        commit();
        return 0;
    }
    return unlink(s, *s.relations(), *k, e, nullptr, commit);
}

namespace {
/// How many of `targets` `list` holds, each counted once; appended to `out` in the order given
/// when given (room for them reserved). Reads all of `targets` before `out` changes.
std::size_t held_targets(const EntityList* list, std::span<const Entity> targets,
                         std::pmr::vector<Entity>* out) noexcept {
    if (list == nullptr) return 0;
    std::size_t n = 0;
    for (auto t = targets.begin(); t != targets.end(); ++t) {
        if (!list->contains(*t) || std::find(targets.begin(), t, *t) != t) continue;
        if (out != nullptr) out->push_back(*t);
        ++n;
    }
    return n;
}

/// Removes each of `targets` that `e` has from its relation, as one change (`unlink`).
std::size_t relation_remove_many(Storage& s, const RelationType& type, Entity e,
                                 std::span<const Entity> targets) {
    if (s.try_record(e) == nullptr) throw_dead("World::unrelate", type, e, "entity");
    RelationIndex::Kind* k = kind_of(s, type);
    const EntityList* list = targets_of(s, type.targets, e);
    if (k == nullptr || list == nullptr) return 0;
    // A copy, as `targets` may be `e`'s own list (`unrelate<R>(e, targets<R>(e))`), which the
    // removal changes.
    std::pmr::vector<Entity> gone(s.resource());
    gone.reserve(std::min(targets.size(), list->size()));
    (void)held_targets(list, targets, &gone);
    const std::span<const Entity> some(gone);
    return unlink(s, *s.relations(), *k, e, &some, {});
}
}  // namespace

// ------------------------------------------------------------- the deferring entry points

void relate(Storage& s, const RelationType& type, Entity e, Entity target, std::byte* value) {
    const EntryCheck entry(s);
    if (!s.deferring()) return relation_add(s, type, e, target, value, {});
    constexpr const char* op = "World::relate";
    check_not_parallel(s, op);
    if (s.try_record(e) == nullptr) throw_dead(op, type, e, "entity");
    if (s.try_record(target) == nullptr) throw_dead(op, type, target, "target");
    RelationIndex::Kind& k = s.relation_index().kind_for(s, type, op);
    if (type.hierarchy && e == target) s.relations()->check_cycle(s, k, e, target, op);
    const ComponentInfo& info = s.ensure_component(type.data);
    s.deferred().reserve(1);
    s.reserve_watch(1);  // writes to the data until it applies are refused (it replaces them)
    std::byte* buffer = nullptr;
    if (!info.is_tag()) {
        buffer = s.deferred().allocate_value(info);
        info.relocate_values(buffer, value, 1);
    } else if (info.destroy != nullptr) {
        info.destroy(value, 1);
    }
    s.watch(e, type.data, s.deferred().mark());
    s.deferred().push_relation(Command::Kind::relate, e, target, type, relation_hooks(), info,
                               buffer);
}

namespace {
bool queue_unrelate(Storage& s, const RelationType& type, Entity e, Entity target, bool all) {
    check_not_parallel(s, "World::unrelate");
    if (s.try_record(e) == nullptr) throw_dead("World::unrelate", type, e, "entity");
    s.deferred().reserve(1);
    s.reserve_watch(1);  // writes to the data until it applies are refused (it may remove it)
    s.watch(e, type.data, s.deferred().mark());
    s.deferred().push_relation(Command::Kind::unrelate, e, target, type, relation_hooks(),
                               component_info(type.data), nullptr, all);
    const EntityList* list = targets_of(s, type.targets, e);
    return list != nullptr && (all || list->contains(target));
}
}  // namespace

bool unrelate(Storage& s, const RelationType& type, Entity e, Entity target) {
    const EntryCheck entry(s);
    if (!s.deferring()) return relation_remove(s, type, e, target, {});
    return queue_unrelate(s, type, e, target, false);
}

std::size_t unrelate_many(Storage& s, const RelationType& type, Entity e,
                          std::span<const Entity> targets) {
    const EntryCheck entry(s);
    if (!s.deferring()) return relation_remove_many(s, type, e, targets);
    check_not_parallel(s, "World::unrelate");
    if (s.try_record(e) == nullptr) throw_dead("World::unrelate", type, e, "entity");
    s.deferred().reserve(targets.size());
    s.reserve_watch(1);
    // Nothing below throws. Counted: the distinct targets `e` has now.
    const std::size_t n = held_targets(targets_of(s, type.targets, e), targets, nullptr);
    for (const Entity t : targets) {
        s.watch(e, type.data, s.deferred().mark());  // the last unrelate stays noted
        s.deferred().push_relation(Command::Kind::unrelate, e, t, type, relation_hooks(),
                                   component_info(type.data), nullptr, false);
    }
    return n;
}

std::size_t unrelate_all(Storage& s, const RelationType& type, Entity e) {
    const EntryCheck entry(s);
    if (!s.deferring()) return relation_clear(s, type, e, {});
    const EntityList* list = targets_of(s, type.targets, e);
    const std::size_t n = list == nullptr ? 0 : list->size();
    queue_unrelate(s, type, e, Entity::null(), true);
    return n;
}

std::span<const Entity> sources(const Storage& s, ComponentId data, Entity target) noexcept {
    RelationIndex* index = s.relations();
    if (index == nullptr || s.try_record(target) == nullptr) return {};
    RelationIndex::Kind* k = index->find(data);
    if (k == nullptr) return {};
    const EntityList* list = index->sources_if(*k, target.index);
    return list == nullptr ? std::span<const Entity>{} : list->span();
}

void track_hierarchy(Storage& s) {
    RelationIndex& index = s.relation_index();
    if (!index.logging_) {
        index.log_.reserve(64);
        index.logging_ = true;
    }
}

std::span<const Entity> hierarchy_changes(const Storage& s) noexcept {
    const RelationIndex* index = s.relations();
    return index == nullptr ? std::span<const Entity>{} : std::span<const Entity>(index->log_);
}

void clear_hierarchy_changes(Storage& s) noexcept {
    if (RelationIndex* index = s.relations()) {
        index->log_.clear();
        index->overflowed_ = false;
    }
}

HierarchyRecent hierarchy_recent(const Storage& s) noexcept {
    const RelationIndex* index = s.relations();
    if (index == nullptr) return {};
    return {index, index->recent_count_, index->recent_};
}

bool hierarchy_overflowed(const Storage& s) noexcept {
    const RelationIndex* index = s.relations();
    return index != nullptr && index->overflowed_;
}

// ------------------------------------------------------------------------------ storage

namespace {

/// The relations' hooks: despawns follow relations (the ChildOf cascade), queued relate and
/// unrelate commands apply here; everything else is the observers' (no-ops without them).
class RelationHooks final : public ObserverHooks {
public:
    std::size_t despawn_many(Storage& s, std::span<const Entity> es, Commit commit) const override {
        return despawn_related(s, es, commit);
    }
    bool despawn(Storage& s, Entity e) const override {
        return despawn_related(s, {&e, 1}, {}) != 0;
    }
    bool apply(Storage& s, const Command& c, Entity target, Entity other,
               Commit pop) const override {
        if (c.kind == Command::Kind::relate) {
            relation_add(s, *c.relation, target, other, c.value, pop);
            return true;
        }
        return c.group != 0 ? relation_clear(s, *c.relation, target, pop) != 0
                            : relation_remove(s, *c.relation, target, other, pop);
    }
};

const RelationHooks the_relation_hooks;

void destroy_index(void* object, std::pmr::memory_resource* mr) noexcept {
    auto* index = static_cast<RelationIndex*>(object);
    index->~RelationIndex();
    mr->deallocate(index, sizeof(RelationIndex), alignof(RelationIndex));
}

RelationIndex* new_index(std::pmr::memory_resource* mr) {
    void* mem = mr->allocate(sizeof(RelationIndex), alignof(RelationIndex));
    try {
        return ::new (mem) RelationIndex(mr);  // the deque allocates already
    } catch (...) {
        mr->deallocate(mem, sizeof(RelationIndex), alignof(RelationIndex));
        throw;
    }
}

void* copy_index(const void* object, Storage& dst) {
    RelationIndex* copy = new_index(dst.resource());
    try {
        copy->copy_kinds(*static_cast<const RelationIndex*>(object));
    } catch (...) {
        destroy_index(copy, dst.resource());
        throw;
    }
    return copy;
}

}  // namespace

RelationIndex& Storage::relation_index() {
    if (relations_.object == nullptr)
        attach_relations({new_index(resource()), &destroy_index, &copy_index, &the_relation_hooks});
    return *relations();
}

const Hooks& relation_hooks() noexcept {
    return the_relation_hooks;
}

std::vector<RelationKindView> relation_kinds(const Storage& s) {
    std::vector<RelationKindView> out;
    if (s.relations() == nullptr) return out;
    for (const RelationIndex::Kind& k : s.relations()->kinds())
        out.push_back(RelationKindView{&k.type, k.sources});
    return out;
}

void register_relation(Storage& s, const RelationType& type, const char* op) {
    s.relation_index().kind_for(s, type, op);
}

void set_sources(Storage& s, const RelationType& type, std::uint32_t target,
                 std::span<const Entity> sources) {
    RelationIndex& index = s.relation_index();
    EntityList& list = index.sources_at(*index.find(type.data), target);
    list.reserve(sources.size());
    for (const Entity e : sources) list.push_back(e);
}

}  // namespace tessera::detail

namespace tessera {

std::span<const Entity> World::children(Entity parent) const noexcept {
    return detail::sources(*storage_, component_id<ChildOf>(), parent);
}

std::span<const Entity> World::parents(Entity child) const noexcept {
    return targets<ChildOf>(child);
}

Entity World::child(Entity parent) const noexcept {
    const std::span<const Entity> c = children(parent);
    return c.empty() ? Entity::null() : c.front();
}

namespace {
/// Calls `fn(list)` for each relation's target list `e` has (its `Targets<R>` columns: the
/// relation-only components with a value; `ChildOf` itself is a tag).
template <class F>
void each_target_list(const detail::Storage& s, Entity e, F&& fn) {
    const detail::EntityRecord* r = s.try_record(e);
    if (r == nullptr) return;
    for (const ComponentId id : s.archetype(r->archetype).ids) {
        if (!detail::Storage::relation_only(id)) continue;
        if (const std::byte* p = s.try_value(e, id))
            fn(*reinterpret_cast<const detail::EntityList*>(p));
    }
}
}  // namespace

bool World::related(Entity e, Entity target) const noexcept {
    return relation_count(e, target) != 0;
}

bool World::has_relation(Entity e) const noexcept {
    bool any = false;
    each_target_list(*storage_, e, [&](const detail::EntityList& l) { any = any || !l.empty(); });
    return any;
}

std::size_t World::relation_count(Entity e, Entity target) const noexcept {
    std::size_t n = 0;
    each_target_list(*storage_, e,
                     [&](const detail::EntityList& l) { n += l.contains(target) ? 1 : 0; });
    return n;
}

Entity World::parent(Entity child) const noexcept {
    const std::span<const Entity> p = parents(child);
    return p.empty() ? Entity::null() : p.front();
}

}  // namespace tessera
