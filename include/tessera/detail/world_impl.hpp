/// @file detail/world_impl.hpp
/// Definitions of `World`'s member templates: thin adapters that compute component ids, cast
/// pointers and construct values, leaving the rest to the untyped `detail::Storage`.
#pragma once

#include <tessera/detail/operations.hpp>
#include <tessera/detail/sparse_access.hpp>
#include <tessera/detail/type_list.hpp>
#include <tessera/fwd.hpp>

#include <array>
#include <memory>
#include <memory_resource>
#include <new>
#include <utility>
#include <vector>

namespace tessera {

namespace detail {

/// Cold paths of the typed API: they build the message and throw.
[[noreturn]] void throw_not_alive(const char* op, Entity e, ComponentId id);
[[noreturn]] void throw_missing(const char* op, Entity e, ComponentId id);
/// Throws permanent_entity (naming `op`) when `e` is alive and permanent.
void check_despawnable(const Storage& s, const char* op, Entity e);
/// Throws invalid_argument when a par_each is running (structural calls from its workers).
void check_not_parallel(const Storage& s, const char* op);
/// Throws invalid_argument (naming `op`, `e` and the component) when an add or a remove of `id`
/// on `e` is queued: a value written now would be lost or overwritten when it applies. Call it
/// when `s.writes_watched()` only (value writes while the world defers).
void check_write(Storage& s, const char* op, Entity e, ComponentId id);
/// Throws the right error for a failed lookup of `id` on `e`.
[[noreturn]] void throw_lookup(const Storage& s, const char* op, Entity e, ComponentId id);

/// Every type of `Ts` (cv and references stripped) is a valid component.
template <class... Ts>
inline constexpr bool components_v = (Component<std::remove_cvref_t<Ts>> && ...);
#define TESSERA_COMPONENT_REQUIREMENT                                                          \
    "tessera: a component type must be an object type that is nothrow move constructible and " \
    "nothrow destructible (mark its move constructor noexcept)"

/// Whether `T` is a relation's own component in every world: `ChildOf`, or a `Targets<R>`
/// (`ComponentInfo::reserved`).
template <class T>
concept relation_only = requires {
    T::tessera_reserved;
}
|| requires {
    T::tessera_relation();
};
/// Whether one of `Ts` is: typed adds and removes of them are refused at run time
/// (`check_plain`), even in a world whose fast path would not look.
template <class... Ts>
inline constexpr bool relation_only_v = (relation_only<std::remove_cvref_t<Ts>> || ...);

/// Whether every `U` can be constructed from its argument without throwing; when not, the
/// typed calls first materialise the values (copies may throw while nothing has changed).
template <class... Ts>
inline constexpr bool nothrow_forward_v =
    (std::is_nothrow_constructible_v<std::remove_cvref_t<Ts>, Ts&&> && ...);

template <class U>
U* column_ptr(const Archetype& a, std::int32_t column, std::uint32_t row) noexcept;

/// Takes back, unless released, what a call queued in the world and the entities it spawned
/// pending since the guard was made (`take_back_queued`): a failed deferred call changes
/// nothing, the entity index included.
class QueueGuard {
public:
    explicit QueueGuard(Storage& s) noexcept
        : s_(&s), queue_(s.deferred().mark()), index_(s.index_mark()) {}
    QueueGuard(const QueueGuard&) = delete;
    QueueGuard& operator=(const QueueGuard&) = delete;
    ~QueueGuard() {
        if (s_ != nullptr) take_back_queued(*s_, queue_, index_);
    }
    /// Whether commands were queued since the guard was made.
    [[nodiscard]] bool queued() const noexcept { return s_->deferred().mark() != queue_; }
    /// Keeps what was queued.
    void release() noexcept { s_ = nullptr; }
    /// The queue and the entity index when the guard was made.
    [[nodiscard]] std::size_t queue_mark() const noexcept { return queue_; }
    [[nodiscard]] Storage::IndexMark index_mark() const noexcept { return index_; }

private:
    Storage* s_;
    std::size_t queue_;
    Storage::IndexMark index_;
};

/// Throws the lookup error (naming `op`) for the first of `Ts` that `e` lacks (not_alive when
/// `e` is dead); does nothing when `e` has them all.
template <class... Ts>
void require_all(const Storage& s, Entity e, const char* op) {
    (
        [&] {
            const ComponentId id = component_id<Ts>();
            if (!s.has(e, id)) throw_lookup(s, op, e, id);
        }(),
        ...);
}

/// `check_write` for each of `Ts` (before any is written), when writes are watched.
template <class... Ts>
void check_writes(Storage& s, Entity e, const char* op) {
    if (s.writes_watched()) [[unlikely]]
        (check_write(s, op, e, component_id<Ts>()), ...);
}

/// `throw_lookup` for `T`, out of line: a loop of lookups keeps neither the id nor anything
/// else of the error alive in its registers.
template <class T>
[[noreturn, gnu::noinline, gnu::cold]] void throw_lookup_of(const Storage& s, const char* op,
                                                            Entity e) {
    throw_lookup(s, op, e, component_id<T>());
}

/// `T`'s column data holding `e` and its row there (data null when dead, absent or a tag), by
/// `lookup_id<T>()`: the lookup the retry of `try_value` makes when `T`'s id was not yet set.
/// Declared `pure` (it only reads, as far as callers can tell; the registration it may make is
/// invisible to them), so a loop of lookups hoists its loads across the call.
struct ColumnRow {
    std::byte* data;
    std::uint32_t row;
};
template <class T>
[[gnu::noinline, gnu::cold, gnu::pure]] ColumnRow late_column(const Storage& s, Entity e) noexcept {
    std::uint32_t row = 0;
    std::byte* data = s.try_column(e, lookup_id<T>(), row);
    return {data, row};
}

/// `e`'s `T`, or null when `e` is dead or lacks `T`: the typed fast path of every read. The
/// id is `registered_id<T> - 1` with no test: before the registration ran it is the invalid id,
/// which no world holds, so the lookup finds nothing and the cold retry asks for the real id.
/// With no branch before the loads, a loop of lookups keeps `T`'s column table in a register.
template <class T>
[[gnu::always_inline]] inline T* try_value(const Storage& s, Entity e) noexcept {
    using U = std::remove_cv_t<T>;
    if constexpr (sparse_v<U>) {  // sparse storage: the entity's set entry
        const SparseSet* set = s.sparse(lookup_id<U>());
        return set == nullptr ? nullptr : reinterpret_cast<T*>(set->try_value(e));
    }
    const std::uint32_t id_plus_one = registered_id<U>;
    std::uint32_t row = 0;
    std::byte* data = s.try_column(e, ComponentId{id_plus_one - 1}, row);
    if (data != nullptr) [[likely]]
        return reinterpret_cast<T*>(data) + row;
    if (id_plus_one != 0) return nullptr;
    const ColumnRow late = late_column<U>(s, e);
    return late.data == nullptr ? nullptr : reinterpret_cast<T*>(late.data) + late.row;
}

/// Constructs (or, when `existed`, replaces) the `U` at column `c` of row `at` (none for a tag:
/// no bytes), stamping it when tracked.
template <class U, class... Args>
[[gnu::always_inline]] inline void place(Storage& s, TableRow at, std::int32_t c, bool existed,
                                         Args&&... args) noexcept {
    if constexpr (std::is_empty_v<U>) {
        return;
    }
    if constexpr (sparse_v<U>) {
        // A sparse component: `prepare_add` made its entry in the set (the row did not move).
        SparseSet* set = s.sparse(component_id<U>());
        const std::uint32_t row = set->find(at.archetype->entities[at.row]);
        U* p = reinterpret_cast<U*>(set->value(row));
        if (existed) {
            p->~U();
            set->stamp_changed(row, s.tick());
        }
        emplace_at<U>(p, std::forward<Args>(args)...);
        return;
    }
    if (c < 0) return;
    Column& col = at.archetype->columns[static_cast<std::uint32_t>(c)];
    U* p = reinterpret_cast<U*>(col.data) + at.row;
    if (existed) {
        p->~U();
        emplace_at<U>(p, std::forward<Args>(args)...);
        s.stamp_changed(*at.archetype, at.row, c);
    } else {
        emplace_at<U>(p, std::forward<Args>(args)...);
        s.stamp_added(at, c);
    }
}

/// Constructs a `U` at `p` (a new component's uninitialised storage; not written for a tag).
template <class U, class Arg>
[[gnu::always_inline]] inline void construct_new(std::byte* p, Arg&& arg) noexcept {
    if constexpr (!std::is_empty_v<U>) ::new (static_cast<void*>(p)) U(std::forward<Arg>(arg));
}

template <class U, class Arg>
void construct_at(TableRow at, std::int32_t column, Arg&& arg) noexcept {
    if constexpr (!std::is_empty_v<U>) {
        ::new (static_cast<void*>(column_ptr<U>(*at.archetype, column, at.row)))
            U(std::forward<Arg>(arg));
    }
}

template <class U>
U* column_ptr(const Archetype& a, std::int32_t column, std::uint32_t row) noexcept {
    if constexpr (std::is_empty_v<U>) {
        return nullptr;  // an enableable tag's column has flags, no values
    } else {
        return reinterpret_cast<U*>(a.columns[static_cast<std::uint32_t>(column)].data) + row;
    }
}

}  // namespace detail

template <class... Ts>
requires(sizeof...(Ts) > 0) Entity World::spawn(Ts&&... components) {
    static_assert(detail::components_v<Ts...>, TESSERA_COMPONENT_REQUIREMENT);
    static_assert(detail::unique_types_v<std::remove_cvref_t<Ts>...>,
                  "tessera: World::spawn got the same component type twice");
    if constexpr (detail::brings_required_v<std::remove_cvref_t<Ts>...>) {
        // What the types require comes along, value-initialised, in the same spawn.
        return [&]<class... Rs>(type_list<Rs...>) {
            return spawn(std::forward<Ts>(components)..., Rs{}...);
        }(detail::required_extra_t<std::remove_cvref_t<Ts>...>{});
    } else if constexpr (!detail::nothrow_forward_v<Ts...>) {
        return spawn(std::remove_cvref_t<Ts>(std::forward<Ts>(components))...);
    } else {
        const detail::EntryCheck entry(*storage_);
        if (storage_->deferring()) [[unlikely]] {
            detail::QueueGuard guard(*storage_);  // a failure takes back the entity and its place
            const Entity e = spawn_deferred(sizeof...(Ts));
            add_deferred(e, std::forward<Ts>(components)...);
            guard.release();
            return e;
        }
        if constexpr (detail::any_sparse_v<Ts...>) {
            // Sparse components are in no table: the untyped placement splits them off.
            return detail::spawn_split<std::remove_cvref_t<Ts>...>(*storage_,
                                                                   std::forward<Ts>(components)...);
        }
        const ComponentId ids[] = {component_id<std::remove_cvref_t<Ts>>()...};
        detail::Storage& s = *storage_;
        if (detail::relation_only_v<Ts...> || s.relations() != nullptr) [[unlikely]]
            s.check_plain(ids, "World::spawn");
        const auto bundle = s.bundle(detail::bundle_id<std::remove_cvref_t<Ts>...>(), ids);
        const detail::TableRow at = s.prepare_spawn(*bundle.archetype);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (detail::construct_at<std::remove_cvref_t<Ts>>(at, bundle.columns[I],
                                                           std::forward<Ts>(components)),
             ...);
        }
        (std::index_sequence_for<Ts...>{});
        const Entity e = s.commit_spawn(at);
        if (s.hooked(*bundle.archetype)) [[unlikely]]
            s.hooks().spawned(s, e);
        return e;
    }
}

namespace detail {
/// Uninitialised storage for one `U` (a byte for a tag, which has no value).
template <class U>
struct ValueSlot {
    alignas(U) std::byte bytes[std::is_empty_v<U> ? 1 : sizeof(U)];
};

/// `add` of components that bring required ones along: the values go to `apply_add`, which
/// adds the missing requirements in the same move (it reads the entity's archetype now).
template <class... Ts>
[[gnu::noinline]] void add_bringing_required(Storage& s, Entity e, std::span<const ComponentId> ids,
                                             Ts&&... components) {
    std::tuple<ValueSlot<std::remove_cvref_t<Ts>>...> slots;
    std::byte* values[sizeof...(Ts)];
    bool consumed = false;  // the values are in the table (an observer may throw later)
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((values[I] = std::is_empty_v<std::remove_cvref_t<Ts>> ? nullptr : std::get<I>(slots).bytes,
          construct_new<std::remove_cvref_t<Ts>>(values[I], std::forward<Ts>(components))),
         ...);
        try {
            apply_add(s, e, ids, values, "World::add",
                      {[](void* flag) noexcept { *static_cast<bool*>(flag) = true; }, &consumed});
        } catch (...) {
            if (!consumed)
                (std::destroy_at(reinterpret_cast<std::remove_cvref_t<Ts>*>(values[I])), ...);
            throw;
        }
    }
    (std::index_sequence_for<Ts...>{});
}

/// Adds (or replaces) the components on `e` in one move; `existed[i]` tells which were there.
template <class... Ts>
[[gnu::always_inline]] inline void add_now(Storage& s, Entity e, std::span<const ComponentId> ids,
                                           bool* existed, Ts&&... components) {
    if constexpr (sizeof...(Ts) == 1) {
        std::int32_t column;
        const TableRow at = s.prepare_add_one(e, ids[0], existed[0], column, "World::add");
        (place<std::remove_cvref_t<Ts>>(s, at, column, existed[0], std::forward<Ts>(components)),
         ...);
    } else {
        const TableRow at = s.prepare_add(e, ids, existed, "World::add");
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            (place<std::remove_cvref_t<Ts>>(s, at, at.archetype->column_index(ids[I]), existed[I],
                                            std::forward<Ts>(components)),
             ...);
        }
        (std::index_sequence_for<Ts...>{});
    }
}
}  // namespace detail

template <class... Ts>
requires(sizeof...(Ts) > 0) inline void World::add(Entity e, Ts&&... components) {
    static_assert(detail::components_v<Ts...>, TESSERA_COMPONENT_REQUIREMENT);
    static_assert(detail::unique_types_v<std::remove_cvref_t<Ts>...>,
                  "tessera: World::add got the same component type twice");
    if constexpr (sizeof...(Ts) == 1 && detail::nothrow_forward_v<Ts...> &&
                  detail::any_sparse_v<Ts...> &&
                  !detail::brings_required_v<std::remove_cvref_t<Ts>...>) {
        // A new sparse component: an insert into its set, no row moves.
        const detail::EntryCheck entry(*storage_);
        if ((detail::sparse_add_fast<std::remove_cvref_t<Ts>>(*storage_, e,
                                                              std::forward<Ts>(components)) ||
             ...)) [[likely]] {
            return;
        }
    } else if constexpr (sizeof...(Ts) == 1 && detail::nothrow_forward_v<Ts...> &&
                         !detail::relation_only_v<Ts...> &&
                         !detail::brings_required_v<std::remove_cvref_t<Ts>...>) {
        // The common case inline, everything else out of line: a new component on a live
        // entity, nothing deferring or hooked, the table move cached (`Core::add_bytes`).
        detail::Storage& s = *storage_;
        const detail::EntryCheck entry(s);
        const ComponentId id = component_id<std::remove_cvref_t<Ts>...>();
        if (!s.deferring()) [[likely]] {
            if (s.hooked(id)) [[unlikely]] {
                add_notifying(e, {&id, 1}, std::forward<Ts>(components)...);
                return;
            }
            if (std::byte* value = s.add_bytes(e, id)) [[likely]] {
                (detail::construct_new<std::remove_cvref_t<Ts>>(value,
                                                                std::forward<Ts>(components)),
                 ...);
                return;
            }
        }
    }
    add_slow(e, std::forward<Ts>(components)...);
}

template <class... Ts>
[[gnu::noinline]] void World::add_slow(Entity e, Ts&&... components) {
    if constexpr (!detail::nothrow_forward_v<Ts...>) {
        add(e, std::remove_cvref_t<Ts>(std::forward<Ts>(components))...);
    } else {
        const detail::EntryCheck entry(*storage_);
        if (storage_->deferring()) [[unlikely]] {
            if (!is_alive(e)) {
                detail::throw_not_alive(
                    "World::add", e,
                    component_id<
                        std::tuple_element_t<0, std::tuple<std::remove_cvref_t<Ts>...>>>());
            }
            add_deferred(e, std::forward<Ts>(components)...);
            return;
        }
        const ComponentId ids[] = {component_id<std::remove_cvref_t<Ts>>()...};
        detail::Storage& s = *storage_;
        if constexpr (detail::brings_required_v<std::remove_cvref_t<Ts>...>) {
            detail::add_bringing_required(s, e, ids, std::forward<Ts>(components)...);
            return;
        }
        if constexpr (detail::relation_only_v<Ts...>) s.check_plain(ids, "World::add");
        if (s.hooked(ids)) [[unlikely]] {
            add_notifying(e, ids, std::forward<Ts>(components)...);
            return;
        }
        bool existed[sizeof...(Ts)];
        detail::add_now<Ts...>(s, e, ids, existed, std::forward<Ts>(components)...);
    }
}

// Out of line, so the common path of `add` stays as small as before observers existed.
template <class... Ts>
[[gnu::noinline]] void World::add_notifying(Entity e, std::span<const ComponentId> ids,
                                            Ts&&... components) {
    detail::Storage& s = *storage_;
    s.check_plain(ids, "World::add");
    const detail::EntityRecord* before = s.try_record(e);
    const std::uint32_t from = before != nullptr ? before->archetype : detail::no_index;
    bool existed[sizeof...(Ts)];
    detail::add_now<Ts...>(s, e, ids, existed, std::forward<Ts>(components)...);
    s.hooks().added(s, e, from, ids, existed);
}

template <class... Ts>
void World::add_deferred(Entity e, Ts&&... components) {
    // Values move into the queue's stable storage now; the adds apply at the flush. Room for
    // every command and value is taken before any value is moved, so a bad_alloc queues nothing.
    detail::Storage& s = *storage_;
    detail::check_not_parallel(s, "World::add");
    const ComponentId ids[] = {component_id<std::remove_cvref_t<Ts>>()...};
    s.check_plain(ids, "World::add");
    s.deferred().reserve(sizeof...(Ts));
    s.reserve_watch(sizeof...(Ts));  // value writes until the adds apply are refused
    const ComponentInfo* infos[] = {
        &s.ensure_component(component_id<std::remove_cvref_t<Ts>>())...};
    std::byte* values[sizeof...(Ts)];
    for (std::size_t i = 0; i < sizeof...(Ts); ++i)
        values[i] = s.deferred().allocate_value(*infos[i]);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        // construct_at rather than a placement new-expression: nvcc 13's front end cannot
        // parse the latter inside this fold (docs/gpu.md: tessera's headers in .cu files).
        ((std::construct_at(reinterpret_cast<std::remove_cvref_t<Ts>*>(values[I]),
                            std::forward<Ts>(components)),
          s.watch(e, ids[I], s.deferred().mark()),
          s.deferred().push_add(e, *infos[I], values[I], I == 0 ? sizeof...(Ts) : 0)),
         ...);
    }
    (std::index_sequence_for<Ts...>{});
}

template <class... Ts>
Entity World::spawn_permanent(Ts&&... components) {
    // Room for the bit first (the index is the one the spawn will take), so nothing can fail
    // after the entity exists.
    detail::Storage& s = *storage_;
    detail::check_not_parallel(s, "World::spawn_permanent");  // before the bit's room is taken
    s.reserve_permanent(s.next_index());
    Entity e;
    if constexpr (sizeof...(Ts) == 0)
        e = spawn();
    else
        e = spawn(std::forward<Ts>(components)...);
    s.set_permanent(e.index);
    return e;
}

template <class F>
void World::each_entity(F&& fn, Lifetime lifetime) {
    detail::Storage& s = *storage_;
    detail::DeferScope defer(s);
    for (std::size_t i = detail::empty_archetype; i < s.archetype_end(); ++i) {
        const detail::Archetype& a = s.archetype(static_cast<std::uint32_t>(i));
        for (std::uint32_t row = 0; row < a.size; ++row) {
            const Entity e = a.entities[row];
            if (lifetime != Lifetime::any &&
                s.permanent(e.index) != (lifetime == Lifetime::permanent)) {
                continue;
            }
            fn(e);
        }
    }
    defer.close();
}

template <class T>
void World::add(Entity e) {
    static_assert(std::is_default_constructible_v<T>,
                  "tessera: World::add<T>(e) needs a default-constructible T; pass a value");
    add(e, T{});
}

template <class... Ts>
std::uint32_t World::archetype_index(const char* op) {
    static_assert(detail::components_v<Ts...>, TESSERA_COMPONENT_REQUIREMENT);
    static_assert(detail::unique_types_v<Ts...>, "tessera: a component set names a type twice");
    static_assert(!detail::any_sparse_v<Ts...>,
                  "tessera: an archetype's set has table components only: sparse components "
                  "(storage_kind::sparse) are kept in no table");
    detail::check_not_parallel(*storage_, op);  // it may make the archetype
    if constexpr (sizeof...(Ts) == 0) {
        return detail::empty_archetype;
    } else {
        const ComponentId ids[] = {component_id<Ts>()...};
        return storage_->bundle(detail::bundle_id<Ts...>(), ids).archetype->index;
    }
}

template <class... Ts>
ArchetypeInfo World::archetype() {
    return archetype_info(archetype_index<Ts...>("World::archetype"));
}

template <class... Ts>
void World::reserve(std::size_t n) {
    reserve_table(archetype_index<Ts...>("World::reserve"), n);
}

template <class T, class... Args>
void World::emplace(Entity e, Args&&... args) {
    static_assert(detail::components_v<T>, TESSERA_COMPONENT_REQUIREMENT);
    static_assert(detail::emplaceable_v<T, Args&&...>,
                  "tessera: World::emplace<T>(e, args...) needs a T constructible from args "
                  "(or an aggregate initialisable from them)");
    const ComponentId id = component_id<T>();
    if constexpr (detail::nothrow_emplaceable_v<T, Args&&...> && !detail::relation_only_v<T> &&
                  !detail::brings_required_v<T>) {
        detail::Storage& s = *storage_;
        const detail::EntryCheck entry(s);
        if (!s.deferring() && !s.hooked(id)) [[likely]] {
            bool existed = false;
            std::int32_t column = 0;
            // Throws (not_alive, bad_alloc) before changing anything; nothing throws after.
            const detail::TableRow at = s.prepare_add_one(e, id, existed, column, "World::emplace");
            detail::place<T>(s, at, column, existed, std::forward<Args>(args)...);
            return;
        }
    }
    if (!is_alive(e)) [[unlikely]]
        detail::throw_not_alive("World::emplace", e, id);
    add(e, detail::make_value<T>(std::forward<Args>(args)...));
}

template <class... Ts>
requires(sizeof...(Ts) > 0) inline bool World::remove(Entity e) {
    if constexpr (sizeof...(Ts) == 1 && detail::any_sparse_v<Ts...>) {
        const detail::EntryCheck entry(*storage_);
        const int removed = detail::sparse_remove_fast<Ts...>(*storage_, e);
        if (removed >= 0) [[likely]]
            return removed != 0;
    } else if constexpr (sizeof...(Ts) == 1 && !detail::relation_only_v<Ts...>) {
        // The common case inline, as for `add`.
        detail::Storage& s = *storage_;
        const detail::EntryCheck entry(s);
        const ComponentId id = component_id<Ts...>();
        if (!s.deferring()) [[likely]] {
            if (s.hooked(id)) [[unlikely]]
                return s.hooks().remove(s, e, {&id, 1}, "World::remove", {});
            if (s.remove_bytes(e, id)) [[likely]]
                return true;
        }
    }
    return remove_slow<Ts...>(e);
}

template <class... Ts>
[[gnu::noinline]] bool World::remove_slow(Entity e) {
    const detail::EntryCheck entry(*storage_);
    if constexpr (detail::relation_only_v<Ts...>) {
        const ComponentId ids[] = {component_id<Ts>()...};
        storage_->check_plain(ids, "World::remove");
    }
    if (storage_->deferring() || storage_->hooked()) [[unlikely]] {
        const ComponentId ids[] = {component_id<Ts>()...};
        if (storage_->deferring()) return remove_deferred(e, ids);
        if (storage_->hooked(ids)) return detail::apply_remove(*storage_, e, ids, "World::remove");
        // Observers of other types only: the usual path.
    }
    const ComponentId ids[] = {component_id<Ts>()...};
    return storage_->remove(e, ids, "World::remove");
}

template <class... Ts>
requires(sizeof...(Ts) > 0) bool World::has(Entity e) const noexcept {
    const detail::EntityRecord* r = storage_->try_record(e);
    if (r == nullptr) return false;
    if constexpr (detail::any_sparse_v<Ts...>) {
        return (storage_->has(e, detail::lookup_id<Ts>()) && ...);  // sparse-aware, slower
    } else {
        const detail::Archetype& a = storage_->archetype(r->archetype);
        return (a.contains(detail::lookup_id<Ts>()) && ...);
    }
}

template <class T>
[[gnu::always_inline]] inline T& World::checked(Entity e, const char* op) const {
    if constexpr (detail::sparse_v<T>) return *detail::sparse_checked<T>(*storage_, e, op).value;
    T* p = detail::try_value<T>(*storage_, e);
    if (p == nullptr) [[unlikely]]
        detail::throw_lookup_of<T>(*storage_, op, e);
    return *p;
}

template <class... Ts>
requires(sizeof...(Ts) > 0) [[gnu::always_inline]] inline auto World::get(Entity e) const {
    if constexpr (sizeof...(Ts) > 1) {
        return std::tuple<Ts...>{get<Ts>(e)...};
    } else {
        using T = std::tuple_element_t<0, std::tuple<Ts...>>;
        if constexpr (std::is_empty_v<T>) {
            const ComponentId id = component_id<T>();
            if (!storage_->has(e, id)) detail::throw_lookup(*storage_, "World::get", e, id);
            return T{};
        } else {
            return T(checked<T>(e, "World::get"));
        }
    }
}

template <class T>
[[gnu::always_inline]] inline const T* World::try_get(Entity e) const noexcept {
    // A type that cannot be registered (type_conflict) is in no table: not there.
    return detail::try_value<const T>(*storage_, e);
}

template <class T>
[[gnu::always_inline]] inline T& World::get_mut(Entity e) {
    static_assert(!std::is_empty_v<T>, "tessera: tags have no value to write");
    if (storage_->writes_watched()) [[unlikely]]
        return get_mut_watched<T>(e);
    return get_mut_value<T>(e);
}

template <class T>
[[gnu::always_inline]] inline T& World::get_mut_value(Entity e) {
    if constexpr (detail::sparse_v<T>) {
        const detail::SparseRef<T> r = detail::sparse_checked<T>(*storage_, e, "World::get_mut");
        r.set->stamp_changed(r.row, storage_->tick());
        return *r.value;
    }
    const ComponentId id = component_id<T>();
    const detail::Location loc = storage_->try_location(e, id);
    if (loc.archetype == nullptr) detail::throw_lookup(*storage_, "World::get_mut", e, id);
    storage_->stamp_changed(*loc.archetype, loc.row, loc.column);
    return *detail::column_ptr<T>(*loc.archetype, loc.column, loc.row);
}

template <class T>
[[gnu::noinline]] T& World::get_mut_watched(Entity e) {
    // A lookup error first (an add queued for a component `e` lacks is no reason to refuse).
    if (storage_->has(e, component_id<T>()))
        detail::check_write(*storage_, "World::get_mut", e, component_id<T>());
    return get_mut_value<T>(e);
}

template <class T>
[[gnu::always_inline]] inline T* World::try_get_mut(Entity e) noexcept {
    static_assert(!std::is_empty_v<T>, "tessera: tags have no value to write");
    if (storage_->writes_watched()) [[unlikely]]
        return try_get_mut_watched<T>(e);
    return try_get_mut_value<T>(e);
}

template <class T>
[[gnu::always_inline]] inline T* World::try_get_mut_value(Entity e) noexcept {
    if constexpr (detail::sparse_v<T>) {
        const detail::SparseRef<T> r = detail::sparse_find<T>(*storage_, e);
        if (r.value != nullptr) r.set->stamp_changed(r.row, storage_->tick());
        return r.value;
    }
    // A type that cannot be registered (type_conflict) is in no table: not there.
    const detail::Location loc = storage_->try_location(e, detail::lookup_id<T>());
    if (loc.archetype == nullptr) return nullptr;
    storage_->stamp_changed(*loc.archetype, loc.row, loc.column);
    return detail::column_ptr<T>(*loc.archetype, loc.column, loc.row);
}

template <class T>
[[gnu::noinline]] T* World::try_get_mut_watched(Entity e) noexcept {
    if (storage_->queued_change(e, detail::lookup_id<T>()) != nullptr)
        return nullptr;  // an add or remove of it is queued: a write would be lost
    return try_get_mut_value<T>(e);
}

template <class T>
void World::set(Entity e, T&& value) {
    static_assert(detail::components_v<T>, TESSERA_COMPONENT_REQUIREMENT);
    using U = std::remove_cvref_t<T>;
    static_assert(!std::is_empty_v<U>, "tessera: tags have no value to set");
    if constexpr (!std::is_nothrow_constructible_v<U, T&&>) {
        set(e, U(std::forward<T>(value)));
    } else {
        if (storage_->writes_watched()) [[unlikely]]
            return set_watched(e, std::forward<T>(value));
        set_value(e, std::forward<T>(value));
    }
}

template <class T>
[[gnu::noinline]] void World::set_watched(Entity e, T&& value) {
    // A lookup error first (an add queued for a component `e` lacks is no reason to refuse).
    const ComponentId id = component_id<std::remove_cvref_t<T>>();
    if (storage_->has(e, id)) detail::check_write(*storage_, "World::set", e, id);
    set_value(e, std::forward<T>(value));
}

template <class T>
[[gnu::always_inline]] inline void World::set_value(Entity e, T&& value) {
    using U = std::remove_cvref_t<T>;
    const ComponentId id = component_id<U>();
    if constexpr (detail::sparse_v<U>) {
        const detail::SparseRef<U> r = detail::sparse_checked<U>(*storage_, e, "World::set");
        const bool hooked = storage_->hooked(id);
        if (hooked) [[unlikely]]
            detail::check_not_parallel(*storage_, "World::set");
        r.value->~U();
        ::new (static_cast<void*>(r.value)) U(std::forward<T>(value));
        r.set->stamp_changed(r.row, storage_->tick());
        if (hooked) [[unlikely]]
            storage_->hooks().set(*storage_, e, id);
        return;
    }
    const detail::Location loc = storage_->try_location(e, id);
    if (loc.archetype == nullptr) detail::throw_lookup(*storage_, "World::set", e, id);
    const bool hooked = storage_->hooked(id);
    if (hooked) [[unlikely]]
        detail::check_not_parallel(*storage_, "World::set");  // observers are not thread-safe
    U* p = detail::column_ptr<U>(*loc.archetype, loc.column, loc.row);
    p->~U();
    ::new (static_cast<void*>(p)) U(std::forward<T>(value));
    storage_->stamp_changed(*loc.archetype, loc.row, loc.column);
    if (hooked) [[unlikely]]
        storage_->hooks().set(*storage_, e, id);
}

template <class T0, class T1, class... Ts>
void World::set(Entity e, T0&& first, T1&& second, Ts&&... rest) {
    static_assert(detail::unique_types_v<std::remove_cvref_t<T0>, std::remove_cvref_t<T1>,
                                         std::remove_cvref_t<Ts>...>,
                  "tessera: World::set got the same component type twice");
    if constexpr (!(std::is_nothrow_constructible_v<std::remove_cvref_t<T0>, T0&&> &&
                    std::is_nothrow_constructible_v<std::remove_cvref_t<T1>, T1&&> &&
                    (std::is_nothrow_constructible_v<std::remove_cvref_t<Ts>, Ts&&> && ...))) {
        // Copies that may throw are made before anything is written.
        set(e, std::remove_cvref_t<T0>(std::forward<T0>(first)),
            std::remove_cvref_t<T1>(std::forward<T1>(second)),
            std::remove_cvref_t<Ts>(std::forward<Ts>(rest))...);
    } else {
        // Every one present first, so a missing one writes nothing.
        detail::require_all<std::remove_cvref_t<T0>, std::remove_cvref_t<T1>,
                            std::remove_cvref_t<Ts>...>(*storage_, e, "World::set");
        detail::check_writes<std::remove_cvref_t<T0>, std::remove_cvref_t<T1>,
                             std::remove_cvref_t<Ts>...>(*storage_, e, "World::set");
        set(e, std::forward<T0>(first));
        set(e, std::forward<T1>(second));
        (set(e, std::forward<Ts>(rest)), ...);
    }
}

template <class T0, class T1, class... Ts>
std::tuple<T0&, T1&, Ts&...> World::get_mut(Entity e) {
    static_assert(!std::is_empty_v<T0> && !std::is_empty_v<T1> && (!std::is_empty_v<Ts> && ...),
                  "tessera: tags have no value to write");
    detail::require_all<T0, T1, Ts...>(*storage_, e, "World::get_mut");
    detail::check_writes<T0, T1, Ts...>(*storage_, e, "World::get_mut");
    return {get_mut<T0>(e), get_mut<T1>(e), get_mut<Ts>(e)...};
}

template <class T>
bool World::set_if_changed(Entity e, T&& value) {
    using U = std::remove_cvref_t<T>;
    static_assert(std::equality_comparable<U>, "tessera: set_if_changed needs operator== on T");
    static_assert(detail::track_changes_v<U>,
                  "tessera: set_if_changed on a type with component_traits<T>::track_changes "
                  "= false");
    const ComponentId id = component_id<U>();
    U* p = nullptr;
    if constexpr (detail::sparse_v<U>) {  // sparse sets keep ticks already
        p = detail::sparse_checked<U>(*storage_, e, "World::set_if_changed").value;
        if (storage_->writes_watched()) [[unlikely]]
            detail::check_write(*storage_, "World::set_if_changed", e, id);
    } else {
        const detail::Location loc = storage_->try_location(e, id);
        if (loc.archetype == nullptr)
            detail::throw_lookup(*storage_, "World::set_if_changed", e, id);
        if (storage_->writes_watched()) [[unlikely]]
            detail::check_write(*storage_, "World::set_if_changed", e, id);
        p = detail::column_ptr<U>(*loc.archetype, loc.column, loc.row);
        storage_->track(id);  // may allocate; nothing written yet
    }
    if (*p == value) return false;
    set(e, std::forward<T>(value));
    return true;
}

template <class T>
std::uint64_t World::tick_of(Entity e, bool added, const char* op) {
    static_assert(detail::track_changes_v<T>,
                  "tessera: T has component_traits<T>::track_changes = false; its change ticks "
                  "can't be read");
    static_assert(!std::is_empty_v<T>, "tessera: tags carry no change ticks");
    const ComponentId id = component_id<T>();
    if constexpr (detail::sparse_v<T>) {  // sparse sets keep ticks from the start
        const detail::SparseRef<T> r = detail::sparse_checked<T>(*storage_, e, op);
        return added ? r.set->added()[r.row] : r.set->changed_at(r.row);
    }
    const detail::Location loc = storage_->try_location(e, id);
    if (loc.archetype == nullptr) detail::throw_lookup(*storage_, op, e, id);
    storage_->track(id);
    const detail::Column& col = loc.archetype->columns[static_cast<std::uint32_t>(loc.column)];
    return added ? col.added[loc.row] : col.changed_at(loc.row);
}

template <class T>
std::uint64_t World::changed_tick(Entity e) {
    return tick_of<T>(e, false, "World::changed_tick");
}

template <class T>
std::uint64_t World::added_tick(Entity e) {
    return tick_of<T>(e, true, "World::added_tick");
}

template <class T>
void World::enable(Entity e, bool on) {
    enable(e, component_id<T>(), on);
}

template <class T>
bool World::is_enabled(Entity e) const {
    return storage_->enable_flag(e, component_id<T>(), "World::is_enabled") != 0;
}

template <class T>
void World::modified(Entity e) {
    const ComponentId id = component_id<T>();
    if constexpr (std::is_empty_v<T>) {
        if (!storage_->has(e, id)) detail::throw_lookup(*storage_, "World::modified", e, id);
        if (storage_->writes_watched()) [[unlikely]]
            detail::check_write(*storage_, "World::modified", e, id);
    } else if constexpr (detail::sparse_v<T>) {
        const detail::SparseRef<T> r = detail::sparse_checked<T>(*storage_, e, "World::modified");
        if (storage_->writes_watched()) [[unlikely]]
            detail::check_write(*storage_, "World::modified", e, id);
        r.set->stamp_changed(r.row, storage_->tick());
    } else {
        const detail::Location loc = storage_->try_location(e, id);
        if (loc.archetype == nullptr) detail::throw_lookup(*storage_, "World::modified", e, id);
        if (storage_->writes_watched()) [[unlikely]]
            detail::check_write(*storage_, "World::modified", e, id);
        storage_->stamp_changed(*loc.archetype, loc.row, loc.column);
    }
    if (storage_->hooked(id)) {
        detail::check_not_parallel(*storage_, "World::modified");
        storage_->hooks().set(*storage_, e, id);
    }
}

template <class T>
ComponentId World::register_component() {
    detail::check_not_parallel(*storage_, "World::register_component");
    const ComponentId id = component_id<T>();
    storage_->ensure_component(id);
    return id;
}

}  // namespace tessera

// spawn_many's definitions (one concept, its own file); they use the helpers above.
#include <tessera/detail/spawn_many.hpp>
