/// @file relation.hpp
/// Relations between entities: `world.relate(e, R{data}, target)`, the built-in
/// hierarchy relation `ChildOf`, reverse lookup, cascading despawn and relation observers.
///
/// **Model.** A relation type `R` is any component type. An entity has at most one `R` relation:
/// one value of `R` (its data) and one or more targets, in the order they were related. The
/// entity carries the data as its component `R` (a tag when `R` is empty) and the targets as the
/// component `Targets<R>`, so `with<R>()`, `without<R>()` and the query terms `const R&` and
/// `const Targets<R>&` work like any component's. Relating to a further target replaces the data
/// (one `R` per source); the first relate adds both components and the last unrelate removes them,
/// one archetype move each. `R` and `Targets<R>` are kept by these calls only: in a world where `R`
/// is related, `add`, `remove` and `spawn` of `R` or `Targets<R>` throw `invalid_argument`, and
/// a type already used as a plain component can't become a relation (`invalid_argument`).
///
/// **Reverse lookup.** `sources<R>(target)` lists the entities related to `target` by `R`, in
/// the order they were related (a side index per relation type, by target index: O(1)).
///
/// **Despawn.** Despawning an entity removes every relation pointing at it (each source loses
/// that target, and the relation when it was the last). `ChildOf` also cascades: the children
/// left without a living parent are despawned too, and theirs, breadth first, with no recursion
/// (any depth). Permanent entities are never despawned by a cascade: they lose the parent.
///
/// **Hierarchy.** `relate(child, ChildOf{}, parent)` throws `hierarchy_cycle` when `parent` is
/// `child` or one of its descendants (the check walks the parent's ancestors: O(ancestors)). A
/// child may have several parents; `parent(c)` is the first.
///
/// **Deferral.** Like every structural change, relate and unrelate made while the world iterates
/// (or from an observer) are queued and applied when the iteration ends. A queued `ChildOf` that
/// would close a loop is dropped there; the call that flushed throws `hierarchy_cycle` after the
/// rest of the queue was applied.
///
/// **Events.** `on_relate<R>` fires after a target is added (the data in place), `on_unrelate<R>`
/// before one is removed (the data still readable), once per target: for `unrelate`, and for
/// relations removed by a despawn (of the source or of the target). A first relate is also an
/// add of `R` and `Targets<R>` (`on_add`, query `on_enter` fire first), a last unrelate a removal.
/// During a despawn, each despawned entity fires `on_despawn`, `on_unrelate` for its own
/// relations, `on_remove` per component, `on_exit`, then `on_unrelate` at each source relating to
/// it (both ends alive), `on_remove` for sources left without a target; then those relations go
/// and it dies. Cascaded children follow, breadth first.
#pragma once

#include <tessera/commands.hpp>
#include <tessera/detail/entity_list.hpp>
#include <tessera/detail/world_impl.hpp>
#include <tessera/event_kind.hpp>
#include <tessera/observer.hpp>
#include <tessera/world.hpp>

#include <cstddef>
#include <memory_resource>
#include <new>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera {

namespace detail {
struct RelationAccess;
}

/// The built-in hierarchy relation: `world.relate(child, ChildOf{}, parent)`. Cascades on
/// despawn, refuses loops; `children`, `parents`, `parent` and `propagate_transforms` use it.
struct ChildOf {
    /// Kept by relate/unrelate only, in every world (`ComponentInfo::reserved`).
    static constexpr bool tessera_reserved = true;
};

/// The targets of an entity's `R` relation, in the order they were related: a component kept by
/// `relate`/`unrelate`, readable as a query term (`const ts::Targets<Joint>&`). A range of
/// `Entity`; one target is held inline, more on the heap (from the world's memory resource).
/// Besides the members below it has `begin()`, `end()`, `size()`, `empty()`, `span()`,
/// `front()` (the first target; a relation always has one) and `contains(e)` (O(targets)).
/// References to it, like any component's, last until the next structural change. It is never
/// empty while present.
template <class R>
class Targets : private detail::EntityList {
public:
    /// A copy of the targets, allocating from the same memory resource.
    Targets(const Targets&) = default;
    /// Takes over `other`'s targets.
    Targets(Targets&&) noexcept = default;

    using detail::EntityList::begin;
    using detail::EntityList::contains;
    using detail::EntityList::empty;
    using detail::EntityList::end;
    using detail::EntityList::size;
    using detail::EntityList::span;
    /// The `i`th target.
    [[nodiscard]] Entity operator[](std::size_t i) const noexcept { return span()[i]; }
    /// The first target.
    using detail::EntityList::front;
    /// The targets as a span (`span()`), so `Targets` passes where a span is expected.
    operator std::span<const Entity>() const noexcept { return span(); }  // NOLINT

    /// The relation these are the targets of (for the untyped core: snapshots).
    static const detail::RelationType& tessera_relation();

private:
    friend struct detail::RelationAccess;
    friend class World;
    explicit Targets(std::pmr::memory_resource* mr) noexcept : detail::EntityList(mr) {}
    Targets(std::pmr::memory_resource* mr, Entity target) noexcept
        : detail::EntityList(mr, target) {}
};

namespace detail {

/// What the untyped core knows of a relation type.
struct RelationType {
    ComponentId data;     ///< R (a tag when R is empty)
    ComponentId targets;  ///< Targets<R>
    bool hierarchy;       ///< ChildOf: loops refused, children cascade on despawn
    /// Constructs an empty `Targets<R>` at `slot`.
    EntityList* (*make_targets)(void* slot, std::pmr::memory_resource* mr) noexcept;
};

struct RelationAccess {
    template <class R>
    static EntityList* make(void* slot, std::pmr::memory_resource* mr) noexcept {
        return static_cast<EntityList*>(::new (slot) Targets<R>(mr));
    }
    /// `make`, holding `target` (in the inline slot).
    template <class R>
    static void make_one(void* slot, std::pmr::memory_resource* mr, Entity target) noexcept {
        ::new (slot) Targets<R>(mr, target);
    }
};

template <class R>
const RelationType& relation_type() {
    static_assert(Component<R>, "tessera: a relation type must be a valid component type");
    static_assert(!detail::brings_required_v<R>,
                  "tessera: a relation type can't declare required components (relate and "
                  "unrelate keep its data; add what it needs to the source yourself)");
    static const RelationType type{component_id<R>(), component_id<Targets<R>>(),
                                   std::is_same_v<R, ChildOf>, &RelationAccess::make<R>};
    return type;
}

}  // namespace detail

template <class R>
const detail::RelationType& Targets<R>::tessera_relation() {
    return detail::relation_type<R>();
}

namespace detail {

// The untyped core (src/relation.cpp). `value` points at an R (ignored for tags) that the call
// relocates into the world on success; on an exception it is left as it was. These queue the
// change while the world defers.
void relate(Storage& s, const RelationType& type, Entity e, Entity target, std::byte* value);
/// Relates `e` to every one of `targets` (live, checked by the caller; not empty) at once, the
/// world not deferring: everything that can fail (hierarchy_cycle, bad_alloc) happens before
/// anything changes, then the observers get the events relating one target at a time gives.
/// Takes `value` over whatever happens (destroyed when it throws before using it).
void relate_many(Storage& s, const RelationType& type, Entity e, std::span<const Entity> targets,
                 std::byte* value);
bool unrelate(Storage& s, const RelationType& type, Entity e, Entity target);
std::size_t unrelate_all(Storage& s, const RelationType& type, Entity e);
/// Unrelates `e` from each of `targets` it has, as one change (strong guarantee); `targets`
/// may be `e`'s own list. Returns how many distinct targets it had (queued ones, deferring).
std::size_t unrelate_many(Storage& s, const RelationType& type, Entity e,
                          std::span<const Entity> targets);

// The immediate forms (the queue applies commands through these). Each calls `commit` exactly
// once unless it throws, and throws only before changing anything (observers aside).
void relation_add(Storage& s, const RelationType& type, Entity e, Entity target, std::byte* value,
                  Commit commit);
bool relation_remove(Storage& s, const RelationType& type, Entity e, Entity target, Commit commit);
std::size_t relation_clear(Storage& s, const RelationType& type, Entity e, Commit commit);
/// The relations' hooks (detail/hooks.hpp): queued relate and unrelate commands carry them.
const Hooks& relation_hooks() noexcept;
/// Despawns the live entities of `es` (distinct, not storage the call changes) and, for
/// `ChildOf`, their children left without a living parent; removes every relation pointing at
/// the despawned entities. Everything that can fail comes before `commit` and the first change.
/// Returns how many of `es` died.
std::size_t despawn_related(Storage& s, std::span<const Entity> es, Commit commit);
/// The entities related to `target` by the relation whose data is `data` (empty when none).
std::span<const Entity> sources(const Storage& s, ComponentId data, Entity target) noexcept;
/// The hierarchy log (for `propagate_transforms`): once turned on, every entity whose `ChildOf`
/// targets change (relate, unrelate, a parent's despawn) is appended; duplicates and entities
/// dead since are possible. `track_hierarchy` may allocate (once); clearing keeps the capacity.
void track_hierarchy(Storage& s);
std::span<const Entity> hierarchy_changes(const Storage& s) noexcept;
void clear_hierarchy_changes(Storage& s) noexcept;
/// Whether the log was dropped since it was last cleared (it holds at most 65,536 entries):
/// every entity may have changed then.
bool hierarchy_overflowed(const Storage& s) noexcept;

/// The recent first-parent changes of the hierarchy (for cascade queries): `count` changes
/// since the world's relation index was made (`index` tells it apart from another), the last
/// `recent.size()` of them in a ring (change `n` at `recent[n % recent.size()]`). Entities
/// whose first `ChildOf` target changed (relate, unrelate, a parent's despawn); possibly some
/// that did not change and some dead since. Empty (count 0, index null) before any relation.
struct HierarchyRecent {
    const void* index = nullptr;
    std::uint64_t count = 0;
    std::span<const Entity> recent{};
};
[[nodiscard]] HierarchyRecent hierarchy_recent(const Storage& s) noexcept;

/// A relation observer's callback: `(World&, Entity, Entity target, R&)` or without the data.
template <class R, class F>
ObserverCallback make_relation_callback(std::pmr::memory_resource* mr, F&& fn);

}  // namespace detail

template <class R>
void World::relate(Entity e, R&& data, Entity target) {
    using U = std::remove_cvref_t<R>;
    const detail::RelationType& type = detail::relation_type<U>();
    alignas(U) std::byte buffer[sizeof(U)];
    U* value = ::new (static_cast<void*>(buffer)) U(std::forward<R>(data));
    try {
        detail::relate(*storage_, type, e, target, buffer);
    } catch (...) {
        value->~U();
        throw;
    }
}

template <class R>
void World::relate(Entity e, Entity target) {
    static_assert(std::is_default_constructible_v<R>,
                  "tessera: relate<R>(e, target) needs a default-constructible R; pass a value");
    relate(e, R{}, target);
}

template <class R>
bool World::unrelate(Entity e, Entity target) {
    return detail::unrelate(*storage_, detail::relation_type<R>(), e, target);
}

template <class R>
std::size_t World::unrelate(Entity e) {
    return detail::unrelate_all(*storage_, detail::relation_type<R>(), e);
}

template <class R>
std::span<const Entity> World::targets(Entity e) const noexcept {
    const Targets<R>* t = try_get<Targets<R>>(e);
    return t == nullptr ? std::span<const Entity>{} : t->span();  // NOLINT
}

template <class R>
bool World::related(Entity e, Entity target) const noexcept {
    const Targets<R>* t = try_get<Targets<R>>(e);
    return t != nullptr && t->contains(target);
}

template <class R>
bool World::related(Entity e, std::span<const Entity> targets) const noexcept {
    const Targets<R>* t = try_get<Targets<R>>(e);
    if (targets.empty()) return true;
    if (t == nullptr) return false;
    for (const Entity target : targets)
        if (!t->contains(target)) return false;
    return true;
}

template <class R>
bool World::has_relation(Entity e) const noexcept {
    return try_get<Targets<R>>(e) != nullptr;
}

template <class R>
std::size_t World::relation_count(Entity e) const noexcept {
    const Targets<R>* t = try_get<Targets<R>>(e);
    return t == nullptr ? 0 : t->size();
}

template <class R>
void World::relate(Entity e, R&& data, std::span<const Entity> targets) {
    using U = std::remove_cvref_t<R>;
    static_assert(std::is_copy_constructible_v<U>,
                  "tessera: relate(e, data, targets) copies the data for each target");
    const ComponentId id = component_id<U>();
    if (!is_alive(e)) detail::throw_not_alive("World::relate", e, id);
    for (const Entity t : targets) {
        if (!is_alive(t)) detail::throw_not_alive("World::relate", t, id);
    }
    if (storage_->deferring()) {
        // One queued relate per target; a failure takes back what this call queued.
        detail::QueueGuard guard(*storage_);
        for (const Entity t : targets) relate(e, U(data), t);
        guard.release();
        return;
    }
    if (targets.empty()) return;
    const detail::RelationType& type = detail::relation_type<U>();
    alignas(U) std::byte buffer[sizeof(U)];
    ::new (static_cast<void*>(buffer)) U(std::forward<R>(data));
    detail::relate_many(*storage_, type, e, targets, buffer);  // takes the value over
}

template <class R>
std::size_t World::unrelate(Entity e, std::span<const Entity> targets) {
    return detail::unrelate_many(*storage_, detail::relation_type<R>(), e, targets);
}

template <class R>
std::span<const Entity> World::sources(Entity target) const noexcept {
    return detail::sources(*storage_, detail::lookup_id<R>(), target);
}

template <class R>
R* World::relation(Entity e) {
    if (try_get<Targets<R>>(e) == nullptr) return nullptr;
    if constexpr (std::is_empty_v<R>) {
        static R tag{};  // tags have no storage: a stand-in, as observers get
        return &tag;
    } else {
        return &get_mut<R>(e);
    }
}

template <class R>
const R* World::relation(Entity e) const noexcept {
    if (try_get<Targets<R>>(e) == nullptr) return nullptr;
    if constexpr (std::is_empty_v<R>) {
        static const R tag{};
        return &tag;
    } else {
        return try_get<R>(e);
    }
}

namespace detail {

template <class R, class F>
ObserverCallback make_relation_callback(std::pmr::memory_resource* mr, F&& fn) {
    using Fn = std::decay_t<F>;
    static_assert(std::is_invocable_v<Fn&, World&, Entity, Entity, R&> ||
                      std::is_invocable_v<Fn&, World&, Entity, Entity>,
                  "tessera: a relation observer takes (tessera::World&, tessera::Entity source, "
                  "tessera::Entity target) or (World&, Entity, Entity, R& data)");
    return erase_callback<Fn>(mr, std::forward<F>(fn), [](void* ctx, World& w, Entity e, void* v) {
        Fn& f = *static_cast<Fn*>(ctx);
        const RelationEvent& a = *static_cast<const RelationEvent*>(v);
        if constexpr (!std::is_invocable_v<Fn&, World&, Entity, Entity, R&>) {
            f(w, e, a.target);
        } else if constexpr (std::is_empty_v<R>) {
            R tag{};  // tags have no storage: a stand-in
            f(w, e, a.target, tag);
        } else {
            f(w, e, a.target, *static_cast<R*>(a.data));
        }
    });
}

template <class R, class F>
Observer subscribe_relation(Storage& s, Event kind, F&& fn) {
    check_can_subscribe(s, kind);
    const RelationType& type = relation_type<R>();
    s.ensure_component(type.data);
    const ObserverCallback cb = make_relation_callback<R>(s.resource(), std::forward<F>(fn));
    const std::uint64_t sub = subscribe(s, kind, type.data, cb);
    return Observer(registry_of(s), sub);
}

}  // namespace detail

template <class R>
void CommandBuffer::relate(Entity e, R&& data, Entity target) {
    using U = std::remove_cvref_t<R>;
    const detail::RelationType& type = detail::relation_type<U>();
    const ComponentInfo& info = component_info<U>();
    begin_record();
    queue_.reserve(1);
    std::byte* buffer = nullptr;
    if constexpr (!std::is_empty_v<U>) {
        if constexpr (!std::is_nothrow_constructible_v<U, R&&>) {
            U copy(std::forward<R>(data));  // may throw before the buffer changes
            buffer = queue_.allocate_value(info);
            ::new (static_cast<void*>(buffer)) U(std::move(copy));
        } else {
            buffer = queue_.allocate_value(info);
            ::new (static_cast<void*>(buffer)) U(std::forward<R>(data));
        }
    }
    queue_.push_relation(detail::Command::Kind::relate, e, target, type, detail::relation_hooks(),
                         info, buffer);
}

template <class R>
void CommandBuffer::unrelate(Entity e, Entity target) {
    begin_record();
    queue_.reserve(1);
    queue_.push_relation(detail::Command::Kind::unrelate, e, target, detail::relation_type<R>(),
                         detail::relation_hooks(), component_info<R>(), nullptr);
}

template <class R>
void CommandBuffer::unrelate(Entity e) {
    begin_record();
    queue_.reserve(1);
    queue_.push_relation(detail::Command::Kind::unrelate, e, Entity::null(),
                         detail::relation_type<R>(), detail::relation_hooks(), component_info<R>(),
                         nullptr, true);
}

template <class R, class F>
Observer World::on_relate(F&& fn) {
    return detail::subscribe_relation<R>(*storage_, Event::relate, std::forward<F>(fn));
}

template <class R, class F>
Observer World::on_unrelate(F&& fn) {
    return detail::subscribe_relation<R>(*storage_, Event::unrelate, std::forward<F>(fn));
}

}  // namespace tessera
