/// @file detail/notify.hpp
/// The untyped side of observers: type-erased callbacks, subscription, and the observed forms
/// of structural changes. Internal, not API (observer.hpp is the typed layer).
#pragma once

#include <tessera/component.hpp>
#include <tessera/detail/hooks.hpp>
#include <tessera/entity.hpp>

#include <cstddef>
#include <cstdint>
#include <memory_resource>
#include <span>

namespace tessera {
class World;
struct QuerySpec;
enum class Event : std::uint8_t;
}  // namespace tessera

namespace tessera::detail {

class Storage;
class ObserverRegistry;

/// A type-erased observer callback: `invoke(ctx, world, entity, value)`, where `value` is the
/// component (add, remove, set; null for tags) or null (spawn, despawn, enter, exit). `ctx` is a
/// functor allocated from the world's memory resource; `destroy` frees it.
struct ObserverCallback {
    void (*invoke)(void* ctx, World& world, Entity e, void* value) = nullptr;
    void (*destroy)(void* ctx, std::pmr::memory_resource* mr) noexcept = nullptr;
    void* ctx = nullptr;
};

/// Subscribes `cb` (which the registry owns from then on, even when this throws) to `kind` for
/// component `id` (add, remove, set) or for every entity (spawn, despawn). Returns its id: a
/// new one, or `join` (non-zero) to add this entry to that subscription (one handle then ends
/// them all).
/// Throws invalid_argument (naming the subscribing call of `kind`: `World::on_add`, ...) from
/// the workers of a `par_each`: subscriptions change the world's registry and hooks.
void check_can_subscribe(const Storage& s, Event kind);
std::uint64_t subscribe(Storage& s, Event kind, ComponentId id, ObserverCallback cb,
                        std::uint64_t join = 0);
/// Subscribes `cb` to `kind` (enter, exit) of the entities matching `spec`.
std::uint64_t subscribe_query(Storage& s, Event kind, const QuerySpec& spec, ObserverCallback cb);

// The observed forms of structural changes, used once the world has an observer registry
// (`Storage::observers()` is not null). Each fires the observers in the order
// docs/observers-and-events.md gives, with structural changes made by callbacks deferred
// and applied before it returns (iteratively, through the world's command queue). An exception
// from a callback propagates after the change itself is complete; the callbacks after it are
// skipped.

/// After `e` was spawned with its components: on_spawn, on_add per component (ascending id),
/// query on_enter.
void notify_spawned(Storage& s, Entity e);
/// After `ids` were added to (or replaced on) `e`, which was in archetype `from`: on_add for
/// the new ones, on_set for the replaced ones (each ascending id), then query on_exit, on_enter.
void notify_added(Storage& s, Entity e, std::uint32_t from, std::span<const ComponentId> ids,
                  const bool* existed);
/// After `e`'s `id` was written (set, modified): on_set.
void notify_set(Storage& s, Entity e, ComponentId id);
/// Removes `ids` from `e`: on_remove per present component (ascending id, values readable),
/// the move, then query on_exit, on_enter. False when `e` had none of them. `commit` runs once
/// nothing can fail, before the first callback. @throws Error(not_alive) naming `op`.
bool remove_notifying(Storage& s, Entity e, std::span<const ComponentId> ids, const char* op,
                      Commit commit = {});
/// Despawns `e`: on_despawn, on_remove per component (ascending id), query on_exit, then the
/// entity dies (also when a callback throws). False when `e` is not alive.
bool despawn_notifying(Storage& s, Entity e);
/// Despawns the live entities of `es` (distinct, not storage the despawns change), in order,
/// each as `despawn_notifying(s, e)` does; returns how many died. Nothing here allocates:
/// `commit` runs first. When a callback throws, the rest of `es` still dies (without
/// observers) and the exception propagates.
std::size_t despawn_notifying(Storage& s, std::span<const Entity> es, Commit commit);

// Delivery primitives, for changes made of several steps (relations). Each is a no-op when the
// world has no observer registry; callers wrap them in `observed`.

/// Fires the `kind` (add, remove, set) observers of `e`'s `id`.
void deliver(Storage& s, Event kind, ComponentId id, Entity e);
/// Fires the `kind` (spawn, despawn) observers of `e`.
void deliver(Storage& s, Event kind, Entity e);
/// Fires the `kind` (relate, unrelate) observers of the relation whose data is `data`.
void deliver_relation(Storage& s, Event kind, ComponentId data, Entity e, Entity target);
/// Fires query on_exit, then on_enter, for `e` having moved from archetype `from` to `to`
/// (`no_index`: none).
void deliver_move(Storage& s, Entity e, std::uint32_t from, std::uint32_t to);

/// Runs `deliver` with the world deferring structural changes, then applies what callbacks
/// queued (the outermost level only). When a callback throws, `finish` completes the change
/// first; queued changes are then applied as far as they go and the exception propagates.
void begin_notify(Storage& s) noexcept;
void end_notify(Storage& s);
void end_notify_noexcept(Storage& s) noexcept;
template <class Deliver, class Finish>
void notifying(Storage& s, Deliver&& deliver, Finish&& finish) {
    begin_notify(s);
    try {
        deliver();
    } catch (...) {
        finish();
        end_notify_noexcept(s);
        throw;
    }
    try {
        finish();
    } catch (...) {
        end_notify_noexcept(s);
        throw;
    }
    end_notify(s);
}

}  // namespace tessera::detail
