/// @file detail/operations.hpp
/// The operation layer: the one untyped path every structural change takes once the typed
/// layer has computed ids and constructed values. Internal, not API.
///
/// A call is routed once: while the world defers (inside a loop, an observer, a `spawn_many`
/// init) it is queued; otherwise it applies now, through the observed form when observers or
/// relations may care, else through the core's fast path. Every apply is one archetype move
/// with the strong guarantee: everything that can fail (allocation, archetype creation,
/// reserving rows) happens before the first change. Commands queued by the world and recorded
/// in a `CommandBuffer` are applied by `apply_front`, which calls the same functions.
#pragma once

#include <tessera/detail/storage.hpp>

#include <cstddef>
#include <span>
#include <utility>

namespace tessera::detail {

/// What `apply_front` did: commands that took effect and commands skipped.
struct Applied {
    std::size_t applied = 0;
    std::size_t skipped = 0;
};

// ---- applying now (the world is not deferring, or a queue is being applied) ----

/// Moves the value at `value` (consumed) into `at`'s column of `id`: a tag's value (or null)
/// just ends; a value that replaces one (`existed`) destroys it first and marks changed, a new
/// one goes into an uninitialised row and marks added.
void put_value(Storage& s, TableRow at, ComponentId id, std::byte* value, bool existed) noexcept;

/// Adds (or replaces) `ids` on live `e` in one archetype move. `values[i]` is `ids[i]`'s value,
/// relocated into the table (consumed) once nothing can fail; on a throw every value is left as
/// it was. Fires on_add / on_set and query observers when observed. `commit` runs after the
/// change and before the observers.
/// @throws Error(not_alive) naming `op`, Error(invalid_argument) for a relation's component,
/// std::bad_alloc; all before changing anything.
void apply_add(Storage& s, Entity e, std::span<const ComponentId> ids, std::byte* const* values,
               const char* op, Commit commit = {});
/// Places the pending entity `e` (spawned while deferred) in the table of exactly `ids`, in one
/// move, with `values` as in `apply_add`, then fires its spawn observers.
void apply_place(Storage& s, Entity e, std::span<const ComponentId> ids, std::byte* const* values,
                 Commit commit = {});
/// Removes the components of `ids` that live `e` has, in one move (observed when needed).
/// False when it had none. `commit` runs once nothing can fail (before the observers).
/// @throws Error(not_alive) naming `op`; std::bad_alloc; both before `commit` and any change.
bool apply_remove(Storage& s, Entity e, std::span<const ComponentId> ids, const char* op,
                  Commit commit = {});
/// Whether a despawn of live `e` concerns a hooked sparse component (one `e` has): the core's
/// per-table flags don't say. O(sparse components of the world).
[[nodiscard]] bool sparse_hooked(const Storage& s, Entity e) noexcept;
/// Despawns `e` (observers, relations and the ChildOf cascade when present); false when it is
/// not alive. @throws std::bad_alloc before any change (a queue's despawn takes
/// `Hooks::despawn_many`, which pops the command once it can no longer fail).
bool apply_despawn(Storage& s, Entity e);
/// Despawns the live entities of `es` (dead and repeated handles skipped) and what cascades
/// from them; returns how many of `es` died. Strong guarantee: when no observer or relation is
/// concerned, in one pass per table (`Core::despawn_many`); otherwise one call through the
/// hooks, planned whole before the first change, with the observers and the cascade of one
/// despawn per handle in the order given. `es` may alias world storage (it is read, or
/// copied, before anything changes).
std::size_t apply_despawns(Storage& s, std::span<const Entity> es);
/// Queues a despawn of each live entity of `es` not queued for despawn yet (the world
/// defers); returns how many it queued. O(n + queued commands). @throws std::bad_alloc
/// before queuing any.
std::size_t queue_despawns(Storage& s, std::span<const Entity> es);

// ---- deferral ----

/// Applies the world's queued commands in order (a command whose entity died meanwhile is
/// skipped). Observers of the changes applied queue their own behind the rest, so one loop
/// applies everything. A command that throws stays queued with the ones after it, and the
/// exception propagates; a queued ChildOf that would close a loop is dropped, the rest still
/// applies, and the flush then reports the first such error.
void flush(Storage& s);
/// Makes room for applying the world's queued commands in order: each spawn's, add's and
/// remove's target table (made when new, left empty) with room for the rows it gains, the
/// entries they make in sparse sets and the core's set buffer. After it, a flush of those
/// commands allocates nothing in the core: in a world without observers or relations
/// (`!s.hooked()`), where no call brings a required component it lacks or names more than 16
/// components, it cannot fail. O(queued commands). @throws std::bad_alloc, changing nothing a
/// user can see.
void reserve_queued(Storage& s);
/// Leaves one deferral level; the outermost applies the queued commands (may throw; they stay
/// queued then).
inline void end_defer(Storage& s) {
    if (s.leave_defer()) flush(s);
}
/// Like end_defer, for paths that can't throw (an exception already in flight, a destructor):
/// a failing command and the rest stay queued for the next flush.
void end_defer_noexcept(Storage& s) noexcept;

/// Keeps the world deferring structural changes for a scope; the outermost scope applies them.
class DeferScope {
public:
    /// An inactive scope (`active` false) does nothing: a query run by a system in a schedule
    /// doesn't touch the world's queue, which other workers share. Nor does a scope opened
    /// inside a `par_each` (a loop on a worker): that loop already defers the world, and the
    /// depth is the world's thread's.
    explicit DeferScope(Storage& s, bool active = true) noexcept
        : s_(active && !s.parallel() ? &s : nullptr) {
        if (s_ != nullptr) s.begin_defer();
    }
    DeferScope(const DeferScope&) = delete;
    DeferScope& operator=(const DeferScope&) = delete;
    /// Ends the scope, applying the queued changes (may throw; they stay queued then).
    void close() {
        if (Storage* s = std::exchange(s_, nullptr)) end_defer(*s);
    }
    ~DeferScope() {
        if (s_ != nullptr) end_defer_noexcept(*s_);
    }

private:
    Storage* s_;
};

/// Applies the front command of `q` to `target` (its entity, or the entity a placeholder stands
/// for; `other` is a relate/unrelate's target, resolved likewise) and pops it, with the commands
/// of the same call behind it (a spawn's components, the components of one multi-component add
/// or remove): one call, one archetype move, all of it or none of it. Commands on a dead target
/// and removes of absent components are skipped. A failure of the change itself (bad_alloc)
/// leaves the call's commands queued and the world unchanged; an exception from an observer
/// propagates after the call was applied and popped.
Applied apply_front(Storage& s, CommandQueue& q, Entity target, Entity other = {});

/// Takes back what a failed call queued in the world since `queue_mark` (its commands and
/// values) and the entities it spawned pending since `index_mark`, so that the entity index
/// (generations, free list) is exactly as before. Precondition: no command was applied since
/// the marks (the world deferred throughout).
void take_back_queued(Storage& s, std::size_t queue_mark, Storage::IndexMark index_mark) noexcept;

}  // namespace tessera::detail
