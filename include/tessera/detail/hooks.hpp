/// @file detail/hooks.hpp
/// The points of a structural change where the layers above the core take part: observers,
/// relations with the ChildOf cascade. Internal, not API.
///
/// The operation layer (detail/operations.hpp) calls a world's hooks only when the core's flags
/// say a change may matter (`Core::hooked`), so a world with nothing attached pays one
/// predictable branch per change. Observers attach their hooks with their registry, relations
/// theirs with the first relate (relations' hooks forward to the observers'). The operation layer
/// knows only this interface, never the modules behind it, so no module calls back into one
/// that includes it.
#pragma once

#include <tessera/component.hpp>
#include <tessera/entity.hpp>

#include <cstdint>
#include <span>

namespace tessera::detail {

class Storage;
struct Command;

/// A callback run once a change can no longer fail, before its observers run (the command
/// queue pops the applied command there, so an observer that throws can't make it apply twice).
struct Commit {
    void (*fn)(void* ctx) noexcept = nullptr;
    void* ctx = nullptr;
    void operator()() const noexcept {
        if (fn != nullptr) fn(ctx);
    }
};

class Hooks {
public:
    /// After `e` was spawned with its components (spawn observers).
    virtual void spawned(Storage& s, Entity e) const = 0;
    /// After `ids` were added to (or replaced on, `existed[i]`) `e`, which was in archetype
    /// `from`.
    virtual void added(Storage& s, Entity e, std::uint32_t from, std::span<const ComponentId> ids,
                       const bool* existed) const = 0;
    /// After `e`'s `id` was written in place.
    virtual void set(Storage& s, Entity e, ComponentId id) const = 0;
    /// Removes the components of `ids` that `e` has, with what happens around it (on_remove
    /// before, query observers after), calling `commit` once nothing can fail (also when it
    /// had none). False when it had none. @throws Error(not_alive) naming `op`, bad_alloc;
    /// both before `commit` and any change.
    virtual bool remove(Storage& s, Entity e, std::span<const ComponentId> ids, const char* op,
                        Commit commit) const = 0;
    /// Despawns the live entities of `es` with what happens around them (observers, relations,
    /// the ChildOf cascade), as one call: everything that can fail (the cascade's plan, room for
    /// the moves) happens first, then `commit` runs, then the entities die in order, each with
    /// its observers. Returns how many of `es` died (dead handles are skipped). Preconditions:
    /// the handles are distinct and not world storage the despawns change (callers copy spans
    /// that may alias the world). @throws std::bad_alloc before `commit` and any change; an
    /// observer's exception after completing the call.
    virtual std::size_t despawn_many(Storage& s, std::span<const Entity> es,
                                     Commit commit) const = 0;
    /// Despawns `e` as `despawn_many` does, the common case (no span, no commit: the world's
    /// own call, not a queue's). False when `e` is not alive.
    virtual bool despawn(Storage& s, Entity e) const = 0;
    /// Applies a queued command of a kind only a layer above knows (relate, unrelate, clear) to
    /// `target` (and `other`, a relation's target), calling `pop` once it can no longer fail.
    /// False when it changed nothing (an unrelate of what was not related).
    virtual bool apply(Storage& s, const Command& c, Entity target, Entity other,
                       Commit pop) const = 0;

protected:
    Hooks() = default;
    Hooks(const Hooks&) = default;
    Hooks& operator=(const Hooks&) = default;
    ~Hooks() = default;
};

}  // namespace tessera::detail
