/// @file net/mirror.hpp
/// The client side of replication (docs/networking.md): `Mirror` applies a `Replicator`'s
/// messages to a client world. Each mirrored entity is a local entity of the client world
/// carrying `Replica{remote}`, the server's handle; `local` and `remote` translate.
///
/// **Messages are checked whole before anything changes.** A truncated or malformed message,
/// bad counts, an unknown component or one whose size or fields differ from the client's, an
/// entity handle that can't be a server entity (null, generation 0) or appears twice, a bool
/// that is not 0 or 1, text that is not UTF-8: `Error(invalid_argument)` naming what was wrong,
/// and the client world is unchanged. A message older than (or as old as) the last one applied
/// changes nothing. The changes of a message are queued and applied as one structural batch
/// (the world's deferral), so observers see each entity's change once.
#pragma once

#include <tessera/entity.hpp>
#include <tessera/fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace tessera::net {

/// The component every mirrored entity carries: the server's handle of the entity.
struct Replica {
    Entity remote;  ///< the entity in the server world
};

/// Applies replication messages to one client world. The world must outlive it. One thread:
/// the world's.
class Mirror {
public:
    /// Mirrors into `world` (no entity yet).
    explicit Mirror(World& world);
    ~Mirror();
    /// Moves the mirror; `other` is left empty (unusable).
    Mirror(Mirror&& other) noexcept;
    /// Moves the mirror; `other` is left empty (unusable).
    Mirror& operator=(Mirror&& other) noexcept;
    Mirror(const Mirror&) = delete;
    Mirror& operator=(const Mirror&) = delete;

    /// Applies `message` (from `Replicator::delta`) and returns the server tick now applied:
    /// the tick to acknowledge. A full state replaces every mirrored entity (those it lacks
    /// are despawned); a delta spawns, despawns, adds, removes and writes what it says (adds
    /// and writes mark the components changed). An older or duplicate message changes nothing
    /// and returns the current tick. The client's own components on mirrored entities stay.
    /// @throws Error(invalid_argument) naming what is wrong with a malformed or hostile message
    /// (nothing changes then), or for a delta relative to a tick this mirror never applied
    /// (a new mirror needs a full state: reconnect); std::bad_alloc, and nothing changes:
    /// the mirror's allocations and the client world's room for the whole batch (its target
    /// tables, rows and sparse entries) are all made before the first change (in a client
    /// world without observers or relations: docs/networking.md, "What it does not do").
    /// Applying the same message again gives exactly the world a run without the failure
    /// gives.
    std::uint64_t apply(std::span<const std::byte> message);
    /// The local entity mirroring server entity `remote`, or null when unknown (or despawned
    /// on the client).
    [[nodiscard]] Entity local(Entity remote) const noexcept;
    /// The server entity that `local` mirrors (its `Replica`), or null when it is not a
    /// mirrored entity.
    [[nodiscard]] Entity remote(Entity local) const noexcept;
    /// The server tick of the last message applied (0: none).
    [[nodiscard]] std::uint64_t tick() const noexcept;
    /// Mirrored entities.
    [[nodiscard]] std::size_t size() const noexcept;

    struct Impl;  ///< the state (src/net/mirror.cpp)

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::net
