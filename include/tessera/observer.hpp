/// @file observer.hpp
/// Observers: callbacks on structural changes and writes (`on_add`, `on_remove`, `on_set`,
/// `on_spawn`, `on_despawn`, query `on_enter`/`on_exit`), the `Observer` handle that owns a
/// subscription, and the switches of `World::observers()`.
///
/// **Order.** For one add or remove: `on_remove` (values still readable), then `on_add`, then
/// `on_set` for replaced values, then query `on_exit`, then `on_enter`; several components of one
/// call go in ascending `ComponentId`. `spawn(components...)`: `on_spawn`, `on_add` per component
/// (ascending id), `on_enter`. `despawn`: `on_despawn`, `on_remove` per component (ascending id),
/// `on_exit`, then the entity dies. Several observers of one event run in registration order;
/// an observer registered while an event is being delivered first sees the next one.
///
/// **Changes from callbacks.** While a callback runs, the world defers structural changes (as
/// inside a query loop); they are applied, with their own observers, before the call that
/// triggered the first callback returns: one loop over the world's command queue, so chains of
/// reactions never deepen the stack. Value writes (`set`, `get_mut`) are immediate.
///
/// **Exceptions.** An exception from a callback propagates to the caller of the triggering call;
/// the change itself stands (a removal or despawn observed beforehand is still carried out) and
/// the observers after the failing one, for that change, are skipped.
///
/// **Cost.** In a world without subscriptions a structural change pays one predictable branch.
/// With subscriptions, a change takes the observed path only when it concerns a component that
/// has observers, or when the world has entity (`on_spawn`/`on_despawn`) or query observers;
/// otherwise it pays one flag test per component more. On the observed path each event looks
/// up its observer list by component id (an array index), and each query observer tests the
/// source and target archetypes against its terms. Figures: docs/benchmarks.md.
#pragma once

#include <tessera/detail/notify.hpp>
#include <tessera/detail/type_list.hpp>
#include <tessera/event_kind.hpp>
#include <tessera/world.hpp>

#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace tessera {

/// Owns one observer subscription: destroying or resetting it unsubscribes. Movable, not
/// copyable. It does not keep the world alive: once the world is gone it is inert. Destroying
/// a handle from inside a callback is allowed (the callback object lives until delivery ends).
class Observer {
public:
    /// An empty handle (no subscription).
    Observer() = default;
    /// The handle of subscription `id` in `registry` (made by `World::on_add` and the like).
    Observer(std::weak_ptr<detail::ObserverRegistry> registry, std::uint64_t id) noexcept
        : registry_(std::move(registry)), id_(id) {}
    /// Takes over `other`'s subscription; `other` becomes empty.
    Observer(Observer&& other) noexcept
        : registry_(std::move(other.registry_)), id_(std::exchange(other.id_, 0)) {}
    /// Unsubscribes this handle's subscription, then takes over `other`'s. @throws like `reset`.
    Observer& operator=(Observer&& other) {
        if (this != &other) {
            reset();
            registry_ = std::move(other.registry_);
            id_ = std::exchange(other.id_, 0);
        }
        return *this;
    }
    Observer(const Observer&) = delete;
    Observer& operator=(const Observer&) = delete;
    /// Unsubscribes. Not on a `par_each` worker of the world (a destructor can't report it:
    /// builds with assertions on stop there, docs/threading.md).
    ~Observer() { release(); }

    /// Unsubscribes now (no effect on an empty handle or once the world is destroyed).
    /// @throws Error(invalid_argument) on a `par_each` worker of the world (nothing changes).
    void reset();
    /// Whether the handle holds a subscription of a live world.
    [[nodiscard]] bool active() const noexcept;
    /// `active()`.
    explicit operator bool() const noexcept { return active(); }

private:
    /// `reset` for the destructor: asserts instead of throwing on a worker.
    void release() noexcept;

    std::weak_ptr<detail::ObserverRegistry> registry_;
    std::uint64_t id_ = 0;
};

/// The switches of a world's observers (`World::observers()`): a small handle, valid while the
/// world lives. A switched-off event delivers to nobody; subscriptions stay.
class Observers {
public:
    /// The switches of `registry` (`World::observers()` makes them).
    explicit Observers(detail::ObserverRegistry& registry) noexcept : registry_(&registry) {}

    /// Turns every observer of `kind` on or off.
    /// @throws Error(invalid_argument) on a `par_each` worker of the world (nothing changes).
    void enable(Event kind, bool on = true);
    /// Turns the observers of `kind` for component `T` on or off (`add`, `remove`, `set`, and
    /// `relate`/`unrelate` of relation `T`). @throws Error(invalid_argument) for another kind.
    template <class T>
    void enable(Event kind, bool on = true) {
        enable(kind, component_id<T>(), on);
    }
    /// Turns the observers of `kind` for component `id` on or off (kinds as for `enable<T>`).
    /// @throws Error(not_registered) for an id no component has, Error(invalid_argument) for
    /// another kind or on a `par_each` worker of the world (nothing changes).
    void enable(Event kind, ComponentId id, bool on);
    /// Whether `kind` is on.
    [[nodiscard]] bool is_enabled(Event kind) const noexcept;
    /// Whether `kind` is on for `T` (both the kind's and the type's switch).
    template <class T>
    [[nodiscard]] bool is_enabled(Event kind) const noexcept {
        return is_enabled(kind, detail::lookup_id<T>());
    }
    /// Whether `kind` is on for component `id` (both the kind's and the component's switch);
    /// false for an id no component has.
    [[nodiscard]] bool is_enabled(Event kind, ComponentId id) const noexcept;
    /// Whether any live observer is subscribed to `kind` for component `id` (for `spawn` and
    /// `despawn`, `id` is ignored; query events are never reported). Switches don't count.
    /// False (for the other kinds) for an id no component has.
    [[nodiscard]] bool has(Event kind, ComponentId id = {}) const noexcept;
    /// Whether any live observer is subscribed to `kind` for `T`.
    template <class T>
    [[nodiscard]] bool has(Event kind) const noexcept {
        return has(kind, detail::lookup_id<T>());
    }
    /// Ends every subscription to `kind` for component `id` (for `spawn` and `despawn`, every
    /// one of that kind); their handles become inactive. Returns how many ended. A
    /// subscription to several types (`on_add<A, B>`) keeps its other types. 0 for an id no
    /// component has (spawn and despawn aside). @throws Error(invalid_argument) on a
    /// `par_each` worker of the world (nothing changes).
    std::size_t clear(Event kind, ComponentId id = {});
    /// `clear` for `T`.
    template <class T>
    std::size_t clear(Event kind) {
        return clear(kind, detail::lookup_id<T>());
    }
    /// Number of live subscriptions, counting each type of one to several types.
    [[nodiscard]] std::size_t count() const noexcept;

private:
    detail::ObserverRegistry* registry_;
};

namespace detail {

/// The world's observer registry (shared so `Observer` handles can tell it is gone).
std::weak_ptr<ObserverRegistry> registry_of(Storage& s);

/// Whether an observer callback `Fn` of component `T` takes the value (`(World&, Entity, T&)`).
template <class Fn, class T>
struct takes_value : std::is_invocable<Fn&, World&, Entity, T&> {};
template <class Fn>
struct takes_value<Fn, void> : std::false_type {};

/// Moves `fn` into the world's memory resource as the context of a type-erased callback whose
/// `invoke` casts the context back to `Fn`.
template <class Fn, class F>
ObserverCallback erase_callback(std::pmr::memory_resource* mr, F&& fn,
                                void (*invoke)(void* ctx, World&, Entity, void*)) {
    void* mem = mr->allocate(sizeof(Fn), alignof(Fn));
    Fn* made = nullptr;
    try {
        made = ::new (mem) Fn(std::forward<F>(fn));
    } catch (...) {
        mr->deallocate(mem, sizeof(Fn), alignof(Fn));
        throw;
    }
    ObserverCallback cb;
    cb.ctx = made;
    cb.destroy = [](void* ctx, std::pmr::memory_resource* r) noexcept {
        static_cast<Fn*>(ctx)->~Fn();
        r->deallocate(ctx, sizeof(Fn), alignof(Fn));
    };
    cb.invoke = invoke;
    return cb;
}

/// Wraps `fn` as a type-erased callback whose functor lives in `mr`. `T` is the component
/// (void for entity events): `fn` takes `(World&, Entity)` or `(World&, Entity, T&)`.
template <class T, class F>
ObserverCallback make_callback(std::pmr::memory_resource* mr, F&& fn) {
    using Fn = std::decay_t<F>;
    static_assert(takes_value<Fn, T>::value || std::is_invocable_v<Fn&, World&, Entity>,
                  "tessera: an observer callback takes (tessera::World&, tessera::Entity) or, "
                  "for a component event, (tessera::World&, tessera::Entity, T&)");
    return erase_callback<Fn>(
        mr, std::forward<F>(fn), [](void* ctx, World& w, Entity e, [[maybe_unused]] void* value) {
            Fn& f = *static_cast<Fn*>(ctx);
            if constexpr (!takes_value<Fn, T>::value) {
                f(w, e);
            } else if constexpr (std::is_empty_v<T>) {
                static_assert(std::is_default_constructible_v<T>,
                              "tessera: an observer of a tag that is not default-constructible "
                              "takes (World&, Entity)");
                T tag{};  // tags have no storage: the callback gets a stand-in
                f(w, e, tag);
            } else {
                f(w, e, *static_cast<T*>(value));
            }
        });
}

template <class T, class F>
Observer subscribe(Storage& s, Event kind, F&& fn) {
    check_can_subscribe(s, kind);
    ComponentId id{};
    if constexpr (!std::is_void_v<T>) {
        static_assert(Component<T>, "tessera: observers watch component types");
        id = component_id<T>();
        s.ensure_component(id);
    }
    const ObserverCallback cb = make_callback<T>(s.resource(), std::forward<F>(fn));
    const std::uint64_t sub = subscribe(s, kind, id, cb);
    return Observer(registry_of(s), sub);
}

/// One subscription to `kind` for each of `Ts`: a copy of `fn` per type, one handle for all.
/// If a later type's subscription fails, the earlier ones end (the handle goes).
template <class... Ts, class F>
Observer subscribe_many(Storage& s, Event kind, F&& fn) {
    static_assert((Component<Ts> && ...), "tessera: observers watch component types");
    static_assert(unique_types_v<Ts...>, "tessera: an observer names a type twice");
    check_can_subscribe(s, kind);
    Observer handle;
    std::uint64_t id = 0;
    (
        [&] {
            s.ensure_component(component_id<Ts>());
            const std::uint64_t got =
                subscribe(s, kind, component_id<Ts>(), make_callback<Ts>(s.resource(), fn), id);
            if (id == 0) {
                id = got;
                handle = Observer(registry_of(s), id);
            }
        }(),
        ...);
    return handle;
}

template <class F>
Observer subscribe_query(Storage& s, Event kind, const QuerySpec& spec, F&& fn) {
    check_can_subscribe(s, kind);
    const ObserverCallback cb = make_callback<void>(s.resource(), std::forward<F>(fn));
    const std::uint64_t sub = subscribe_query(s, kind, spec, cb);
    return Observer(registry_of(s), sub);
}

}  // namespace detail

template <class T, class F>
Observer World::on_add(F&& fn) {
    return detail::subscribe<T>(*storage_, Event::add, std::forward<F>(fn));
}

template <class T, class F>
Observer World::on_remove(F&& fn) {
    return detail::subscribe<T>(*storage_, Event::remove, std::forward<F>(fn));
}

template <class T, class F>
Observer World::on_set(F&& fn) {
    static_assert(!std::is_empty_v<T>, "tessera: tags have no value to set: observe on_add");
    return detail::subscribe<T>(*storage_, Event::set, std::forward<F>(fn));
}

template <class T0, class T1, class... Ts, class F>
Observer World::on_add(F&& fn) {
    return detail::subscribe_many<T0, T1, Ts...>(*storage_, Event::add, std::forward<F>(fn));
}

template <class T0, class T1, class... Ts, class F>
Observer World::on_remove(F&& fn) {
    return detail::subscribe_many<T0, T1, Ts...>(*storage_, Event::remove, std::forward<F>(fn));
}

template <class T0, class T1, class... Ts, class F>
Observer World::on_set(F&& fn) {
    static_assert(!std::is_empty_v<T0> && !std::is_empty_v<T1> && (!std::is_empty_v<Ts> && ...),
                  "tessera: tags have no value to set: observe on_add");
    return detail::subscribe_many<T0, T1, Ts...>(*storage_, Event::set, std::forward<F>(fn));
}

template <class F>
Observer World::on_spawn(F&& fn) {
    return detail::subscribe<void>(*storage_, Event::spawn, std::forward<F>(fn));
}

template <class F>
Observer World::on_despawn(F&& fn) {
    return detail::subscribe<void>(*storage_, Event::despawn, std::forward<F>(fn));
}

}  // namespace tessera
