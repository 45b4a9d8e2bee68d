/// @file detail/spawn_many.hpp
/// `World::spawn_many`: the component set deduced from `init`, the rows built in place, and
/// the way back when `init` changed the world. Internal, not API; included at the end of
/// detail/world_impl.hpp, whose helpers (QueueGuard, construct_at) it uses.
#pragma once

#include <tessera/detail/storage.hpp>

#include <memory_resource>
#include <span>
#include <tuple>
#include <vector>

namespace tessera {

namespace detail {

/// `spawn_many`'s way back when its `init` changed the world (src/spawn_rollback.cpp): the
/// call's rows and ids taken back when `init` only spawned (they are the last rows of their
/// tables until the queue applies), else a copy of the state from before the commit.
class SpawnRollback {
public:
    SpawnRollback() noexcept = default;
    SpawnRollback(const SpawnRollback&) = delete;
    SpawnRollback& operator=(const SpawnRollback&) = delete;
    ~SpawnRollback();
    /// Before the commit of `n` rows, with init's commands (everything queued, since
    /// `queue_mark`) in the queue: notes init's spawns, or copies the state (O(entities +
    /// values)). Stays inactive when neither can undo them. @throws std::bad_alloc.
    void save(Storage& s, std::size_t queue_mark, Storage::IndexMark index_mark, std::size_t n);
    /// After the commit: the call's own entities (room reserved by `save`).
    void committed(std::span<const Entity> own) noexcept;
    /// Ends the call's deferral and applies the queue; a failure puts the world back, rethrown.
    void apply(Storage& s);
    /// Puts the world back as before the call, queue emptied. Precondition: active, undeferred.
    void restore(Storage& s) noexcept;
    [[nodiscard]] bool active() const noexcept { return copy_ != nullptr || truncate_; }

private:
    Storage* copy_ = nullptr;
    bool truncate_ = false;
    /// The call's spawns in the order their ids were taken: init's, its own, then observers'
    /// met while applying (truncation); the counts of the first two, and of spawns met.
    std::pmr::vector<Entity>* taken_ = nullptr;
    std::size_t init_spawns_ = 0, own_ = 0, places_seen_ = 0;
    std::pmr::memory_resource* resource_ = nullptr;
    Storage::IndexMark index_mark_{};
};

}  // namespace detail

namespace detail {
/// Row `i` of a column, or a stand-in object for a tag (tags have no column).
template <class U>
U& element(U* column, std::size_t i) noexcept {
    if constexpr (std::is_empty_v<U>) {
        static U tag{};
        return tag;
    } else {
        return column[i];
    }
}

template <class Index, class... Ts>
void check_spawn_many_init(std::tuple<Index, Ts...>*) noexcept {
    static_assert(std::is_integral_v<std::remove_cvref_t<Index>>,
                  "tessera: spawn_many's init must take (std::size_t index, Components&...)");
    static_assert((std::is_lvalue_reference_v<Ts> && ...),
                  "tessera: spawn_many's init must take its components by reference (T&)");
    static_assert(unique_types_v<std::remove_cvref_t<Ts>...>,
                  "tessera: spawn_many's init names the same component type twice");
    static_assert((std::is_default_constructible_v<std::remove_cvref_t<Ts>> && ...),
                  "tessera: spawn_many needs default-constructible components");
    static_assert(!any_sparse_v<Ts...>,
                  "tessera: spawn_many builds rows in one table: add sparse components "
                  "(storage_kind::sparse) to the new entities with World::add");
}

/// Value-initialises row `row` of `a` for `Us` (at `columns`, in order); when a constructor
/// throws, the values of the row made before it are destroyed first.
template <class... Us>
void construct_row(Archetype& a, const std::int32_t* columns, std::uint32_t row) {
    std::size_t made = 0;
    try {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            ((std::is_empty_v<Us>
                  ? void()
                  : void(::new (static_cast<void*>(column_ptr<Us>(a, columns[K], row))) Us()),
              ++made),
             ...);
        }
        (std::index_sequence_for<Us...>{});
    } catch (...) {
        [&]<std::size_t... K>(std::index_sequence<K...>) {
            (
                [&] {
                    if constexpr (!std::is_empty_v<Us>) {
                        if (K < made) std::destroy_at(column_ptr<Us>(a, columns[K], row));
                    }
                }(),
                ...);
        }
        (std::index_sequence_for<Us...>{});
        throw;
    }
}

template <class Args>
struct spawn_many_required;
template <class Index, class... Ts>
struct spawn_many_required<std::tuple<Index, Ts...>> {
    using type = required_extra_t<std::remove_cvref_t<Ts>...>;
};
/// The components a `spawn_many` whose `init` takes `Args` brings along.
template <class Args>
using spawn_many_required_t = typename spawn_many_required<Args>::type;

/// `spawn_many` applied now: every row is constructed and initialised in the table's spare
/// capacity while the world defers (so `init` may change the world: those changes queue), then
/// all `n` are committed at once, their spawn observers fire, and what was queued is applied.
/// Until the commit nothing is visible; a failure before it (an exception from `init`,
/// bad_alloc) destroys the rows and takes back what `init` queued, the entity index included.
/// When `init` queued changes, a failure after the commit while they apply puts the world back
/// (`SpawnRollback`).
/// What the components require comes along: `Rs` (`required_extra_t`), value-initialised
/// in each row before `init` runs.
template <class Init, class Index, class... Ts, class... Rs>
std::span<const Entity> spawn_many_now(Storage& s, std::size_t n, Init& init,
                                       std::tuple<Index, Ts...>*, type_list<Rs...>) {
    const std::array<ComponentId, sizeof...(Ts) + sizeof...(Rs)> ids{
        component_id<std::remove_cvref_t<Ts>>()..., component_id<Rs>()...};
    if (relation_only_v<Ts...> || s.relations() != nullptr) [[unlikely]]
        s.check_plain(ids, "World::spawn_many");
    // What an earlier failed flush left goes first, as in program order: the queue then holds
    // only this call's commands, which a failure takes back whole.
    if (!s.deferred().empty()) [[unlikely]]
        flush(s);
    const auto bundle = s.bundle(bundle_id<std::remove_cvref_t<Ts>..., Rs...>(), ids);
    Archetype& a = *bundle.archetype;
    s.reserve_spawn(a, n);
    const std::uint32_t first = a.size;
    std::size_t constructed = 0;  // rows whose values exist, for rollback
    QueueGuard guard(s);
    SpawnRollback rollback;
    s.begin_defer();
    bool copy = false;  // return a copy of the entities: rows may move before the return
    try {
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            const std::tuple<std::remove_cvref_t<Ts>*...> cols{
                (bundle.columns[I] >= 0
                     ? column_ptr<std::remove_cvref_t<Ts>>(a, bundle.columns[I], first)
                     : nullptr)...};
            for (std::size_t i = 0; i < n; ++i) {
                construct_row<std::remove_cvref_t<Ts>..., Rs...>(
                    a, bundle.columns, static_cast<std::uint32_t>(first + i));
                constructed = i + 1;
                init(static_cast<std::remove_cvref_t<Index>>(i), element(std::get<I>(cols), i)...);
            }
        }
        (std::index_sequence_for<Ts...>{});
        // Spawns queued by init took entity slots: make room again (the table's rows are
        // untouched while deferred).
        s.reserve_spawn(a, n);
        copy = guard.queued() || s.hooked(a);
        if (copy) s.spawned().reserve(n);
        // What a failure while init's changes apply needs to put the world back.
        if (guard.queued()) rollback.save(s, guard.queue_mark(), guard.index_mark(), n);
    } catch (...) {
        s.destroy_rows(a, first, constructed);
        (void)s.leave_defer();  // the guard takes back what was queued: nothing to apply
        throw;
    }
    guard.release();
    std::span<const Entity> out = s.commit_spawn_many(a, n);
    rollback.committed(out);
    if (copy) {
        s.spawned().assign(out.begin(), out.end());  // capacity reserved: no throw
        out = s.spawned();
        try {
            if (s.hooked(a)) {
                for (const Entity e : out) s.hooks().spawned(s, e);
            }
        } catch (...) {
            if (!rollback.active()) {
                end_defer_noexcept(s);
                throw;
            }
            (void)s.leave_defer();
            rollback.restore(s);
            throw;
        }
    }
    if (!rollback.active()) {
        end_defer(s);
        return out;
    }
    rollback.apply(s);  // a failure leaves nothing of the call: no entity, none of init's changes
    return out;
}

/// `spawn_many` while the world defers: one deferred `spawn` per entity (each value
/// initialised by `init` first). A failure takes back everything the call queued.
template <class Init, class Index, class... Ts>
std::span<const Entity> spawn_many_deferred(World& w, Storage& s, std::size_t n, Init& init,
                                            std::tuple<Index, Ts...>*) {
    check_not_parallel(s, "World::spawn_many");
    QueueGuard guard(s);
    std::pmr::vector<Entity> made(s.resource());  // not spawned(): a nested spawn_many uses it
    made.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::tuple<std::remove_cvref_t<Ts>...> values{};
        std::apply([&](auto&... v) { init(static_cast<std::remove_cvref_t<Index>>(i), v...); },
                   values);
        made.push_back(std::apply([&](auto&... v) { return w.spawn(std::move(v)...); }, values));
    }
    guard.release();
    s.spawned().swap(made);
    return s.spawned();
}
}  // namespace detail

template <class Init>
std::span<const Entity> World::spawn_many(std::size_t n, Init&& init) {
    using Args = detail::callable_args_t<Init>;
    detail::check_spawn_many_init(static_cast<Args*>(nullptr));
    detail::Storage& s = *storage_;
    const detail::EntryCheck entry(s);
    if (s.deferring()) [[unlikely]]
        return detail::spawn_many_deferred(*this, s, n, init, static_cast<Args*>(nullptr));
    return detail::spawn_many_now(s, n, init, static_cast<Args*>(nullptr),
                                  detail::spawn_many_required_t<Args>{});
}

}  // namespace tessera
