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

/// `spawn_many`'s way back when its `init` changed the world (src/spawn_rollback.cpp): a copy
/// of the world's state from before the commit, put back if applying those changes fails.
class SpawnRollback {
public:
    SpawnRollback() noexcept = default;
    SpawnRollback(const SpawnRollback&) = delete;
    SpawnRollback& operator=(const SpawnRollback&) = delete;
    ~SpawnRollback();
    /// Copies `s`'s state (O(entities + values)) and notes the entities `init` spawned (pending,
    /// queued since `queue_mark`). False, keeping nothing, when commands from before the call
    /// are queued or a component can't be copied. @throws std::bad_alloc.
    bool save(Storage& s, std::size_t queue_mark, Storage::IndexMark index_mark);
    /// Puts the saved state back, drops every queued command and gives the indices of
    /// `init`'s spawns back as they were. Precondition: `save` returned true.
    void restore(Storage& s) noexcept;
    [[nodiscard]] bool active() const noexcept { return copy_ != nullptr; }

private:
    Storage* copy_ = nullptr;
    std::pmr::vector<Entity>* pending_ = nullptr;
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
}

/// `spawn_many` applied now: every row is constructed and initialised in the table's spare
/// capacity while the world defers (so `init` may change the world: those changes queue), then
/// all `n` are committed at once, their spawn observers fire, and what was queued is applied.
/// Until the commit nothing is visible; a failure before it (an exception from `init`,
/// bad_alloc) destroys the rows and takes back what `init` queued, the entity index included.
/// When `init` queued changes, a copy of the state is kept until they are applied: a failure
/// after the commit puts it back (`SpawnRollback`).
template <class Init, class Index, class... Ts>
std::span<const Entity> spawn_many_now(Storage& s, std::size_t n, Init& init,
                                       std::tuple<Index, Ts...>*) {
    const std::array<ComponentId, sizeof...(Ts)> ids{component_id<std::remove_cvref_t<Ts>>()...};
    if (relation_only_v<Ts...> || s.relations() != nullptr) [[unlikely]]
        s.check_plain(ids, "World::spawn_many");
    const auto bundle = s.bundle(bundle_id<std::remove_cvref_t<Ts>...>(), ids);
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
                (bundle.slots[I] >= 0
                     ? column_ptr<std::remove_cvref_t<Ts>>(a, bundle.slots[I], first)
                     : nullptr)...};
            for (std::size_t i = 0; i < n; ++i) {
                ((std::is_empty_v<std::remove_cvref_t<Ts>>
                      ? void()
                      : void(::new (static_cast<void*>(std::get<I>(cols) + i))
                                 std::remove_cvref_t<Ts>())),
                 ...);
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
        // The state before the call, but for the pending spawns of init (the new rows are not
        // committed yet): what a failure while init's changes apply puts back.
        if (guard.queued()) (void)rollback.save(s, guard.queue_mark(), guard.index_mark());
    } catch (...) {
        s.destroy_rows(a, first, constructed);
        (void)s.leave_defer();  // the guard takes back what was queued: nothing to apply
        throw;
    }
    guard.release();
    std::span<const Entity> out = s.commit_spawn_many(a, n);
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
    try {
        end_defer(s);
    } catch (...) {
        rollback.restore(s);  // nothing of the call stays: not the entities, not init's changes
        throw;
    }
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
    return detail::spawn_many_now(s, n, init, static_cast<Args*>(nullptr));
}

}  // namespace tessera
