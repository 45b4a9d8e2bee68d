/// @file net/replicator.hpp
/// The server side of replication (docs/networking.md): `Replicator` watches one world and
/// makes, for each client, a message of what that client has not acknowledged yet. Transport
/// free: messages are bytes, the program sends them with the library of its choice.
///
/// **Model.** Each client has a *baseline*: the server tick of the last message it
/// acknowledged (`ack`). `delta(c)` holds everything that changed after the baseline, as of
/// `World::tick()`: spawned entities, despawned ones, components added and removed, values
/// changed. A message is self-contained over the baseline, so a lost message is covered by the
/// next one and nothing is ever resent by hand; a client that acknowledged nothing yet, or
/// lags more than `ReplicatorOptions::max_lag` ticks behind, gets the full state instead.
///
/// **What is replicated.** The components given to `replicate<Ts...>()` (tags, trivially
/// copyable types, and `TESSERA_REFLECT`ed types, `std::string` fields included), of every
/// entity that has at least one of them and that the client's visibility lets it see.
/// Components are matched on the client by name (`ComponentInfo::name`), checked by size and
/// field layout.
///
/// **Cost.** Changed values are found from change ticks (the Replicator turns tracking on for
/// its components): a table with nothing newer than the baseline is skipped in O(1); inside a
/// table each replicated column lists the rows written since the oldest baseline a client may
/// still build on (a row log, kept by the world's writes and row moves), so a delta visits the
/// changed rows only (or, when they are many, the 16-row blocks whose tick bound is newer).
/// Structural events that leave no tick (removals, despawns, tags added) go to a log, kept only as
/// long as a client that may still acknowledge needs it, and visibility changes to a per-client
/// log: a delta is O(tables + changes), never a scan of every entity. A full state is O(entities).
#pragma once

#include <tessera/component.hpp>
#include <tessera/entity.hpp>
#include <tessera/fwd.hpp>
#include <tessera/reflect.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace tessera::net {

/// A client of a `Replicator`, from `connect()`. Ids are never reused by one Replicator.
struct ClientId {
    std::uint32_t value = 0xFFFFFFFFu;  ///< the id; 0xFFFFFFFF is no client
    /// Same client.
    friend constexpr bool operator==(ClientId, ClientId) noexcept = default;
};

/// Which entities a client sees.
enum class Visibility : std::uint8_t {
    all,        ///< every replicated entity (the default); `show`/`hide` are refused
    whitelist,  ///< only the entities given to `show`
    blacklist,  ///< every replicated entity but those given to `hide`
};

/// Options of a `Replicator`.
struct ReplicatorOptions {
    /// A client whose baseline is more than this many ticks behind `World::tick()` gets the
    /// full state, so the log of removals never holds more than this many ticks of changes
    /// for it. Each `delta()` call advances the world tick by one.
    std::uint64_t max_lag = 1024;
};

/// Whether `T` can be replicated: a tag, a trivially copyable type, or a `TESSERA_REFLECT`ed
/// one (whose values travel field by field when not flat).
template <class T>
concept replicable = Component<T> &&
    (std::is_empty_v<T> || std::is_trivially_copyable_v<T> || tessera::detail::reflected<T>);

/// Makes replication messages of one world for its clients. The world must outlive it; the
/// Replicator may be moved (its observers stay registered). One thread: the world's.
class Replicator {
public:
    /// Watches `world`. Nothing is replicated until `replicate`.
    explicit Replicator(World& world, ReplicatorOptions options = {});
    ~Replicator();
    /// Moves the replicator (clients and logs included); `other` is left empty (unusable).
    Replicator(Replicator&& other) noexcept;
    /// Moves the replicator; `other` is left empty (unusable).
    Replicator& operator=(Replicator&& other) noexcept;
    Replicator(const Replicator&) = delete;
    Replicator& operator=(const Replicator&) = delete;

    /// Replicates components `Ts` (turns change tracking on for the non-tags). Called again
    /// with more types, it adds them; every client then gets a full state next. At most 63
    /// components. @throws Error(invalid_argument) for a component with
    /// `track_changes = false`, a `ts::StringId` (`str`) field (use `std::string`), or a
    /// relation's component; Error(limit_exceeded) past 63 components.
    template <class... Ts>
    void replicate() {
        static_assert((replicable<Ts> && ...),
                      "tessera::net: a replicated component is a tag, trivially copyable, or "
                      "described with TESSERA_REFLECT");
        const ComponentId ids[] = {component_id<Ts>()...};
        replicate_ids(ids);
    }

    /// The untyped form of `replicate` (component ids of C++ or runtime components with field
    /// metadata, or trivially copyable ones). @throws like `replicate`.
    void replicate_ids(std::span<const ComponentId> ids);

    /// A new client; its first message (`delta`) is the full state.
    ClientId connect();
    /// Forgets client `c` (its logs go). @throws Error(invalid_argument) for an unknown client.
    void disconnect(ClientId c);
    /// The message for `c`: everything after its baseline as of `World::tick()`, or the full
    /// state (see the file comment). Then advances the world tick by one, so that a write made
    /// after the message is in the next one and never lost (as a change-filter query does).
    /// @throws Error(invalid_argument) for an unknown client, or while the world iterates.
    [[nodiscard]] std::vector<std::byte> delta(ClientId c);
    /// `delta(c)` into `out` (cleared; its capacity is reused, so a steady state allocates
    /// nothing). @throws like `delta(c)`.
    void delta(ClientId c, std::vector<std::byte>& out);
    /// Client `c` applied the message of server tick `tick` (what `Mirror::apply` returned):
    /// it becomes the baseline when newer than the current one. Logs no client needs any more
    /// are trimmed. @throws Error(invalid_argument) for an unknown client or a tick later than
    /// the last message made for it.
    void ack(ClientId c, std::uint64_t tick);
    /// Sets which entities `c` sees; the list of `show`n / `hide`n entities starts empty, and
    /// the next message is a full state. @throws Error(invalid_argument) for an unknown client.
    void set_visibility(ClientId c, Visibility v);
    /// Lets `c` see `e` (whitelist: adds it; blacklist: takes it off the list). Entering the
    /// view sends the whole entity in the next message. @throws Error(invalid_argument) for an
    /// unknown client or in `Visibility::all`.
    void show(ClientId c, Entity e);
    /// Stops `c` seeing `e` (whitelist: takes it off; blacklist: adds it): the next message
    /// despawns it on the client. @throws like `show`.
    void hide(ClientId c, Entity e);

    /// The baseline of `c` (0: none yet). @throws Error(invalid_argument) for an unknown client.
    [[nodiscard]] std::uint64_t baseline(ClientId c) const;
    /// Connected clients.
    [[nodiscard]] std::size_t client_count() const noexcept;
    /// Entries of the structural log (removals, despawns, tags added) kept for clients that
    /// may still acknowledge older ticks: bounded by the changes of `max_lag` ticks.
    [[nodiscard]] std::size_t log_size() const noexcept;
    /// Entries of `c`'s visibility log plus its `show`/`hide` list. @throws like `baseline`.
    [[nodiscard]] std::size_t client_state_size(ClientId c) const;
    /// The components replicated, in message order.
    [[nodiscard]] std::span<const ComponentId> components() const noexcept;

    struct Impl;  ///< the state (src/net/replicator.cpp)

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::net
