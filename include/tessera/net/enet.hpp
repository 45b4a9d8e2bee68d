/// @file net/enet.hpp
/// `EnetServer` and `EnetClient`: byte messages between one server and its clients over ENet
/// (reliable and unreliable sequenced channels, fragmentation and reassembly over UDP). Target
/// `tessera::net_enet` (built when ENet is installed: Debian `libenet-dev`); the core library
/// has no networking. docs/networking-enet.md documents it.
///
/// The transport carries bytes only: it knows nothing of worlds. A replication server sends
/// what `ts::net::Replicator::delta` made on `Channel::delta` and reads the client's acks on
/// `Channel::ack`:
///
/// @code
/// ts::net::EnetServer server({.port = 0, .max_clients = 8});  // 0: any free port, see port()
/// ts::net::EnetClient client("127.0.0.1", server.port());
/// client.connect(std::chrono::seconds(1));    // the server sees connected(peer) at its next poll
/// server.poll(std::chrono::milliseconds(10), [&](const ts::net::EnetEvent& ev) {
///     if (ev.kind == ts::net::EnetEvent::Kind::connected)
///         server.send(ev.peer, bytes, ts::net::Channel::delta);
/// });
/// @endcode
///
/// **Channels.** `Channel::delta` (server to client) and `Channel::ack` (client to server) are
/// unreliable and sequenced: a message may be lost, never duplicated, and one older than the
/// last delivered on its channel is dropped. `Channel::control` is reliable and ordered, both
/// ways. ENet fragments a message larger than the path's MTU and reassembles it; on the two
/// unreliable channels such a message travels as reliable fragments (ENet's rule), so a big
/// message (a new client's full state) arrives whole. No channel is encrypted or authenticated
/// (ENet has neither): use DTLS or a VPN on an untrusted network.
///
/// **Threads and time.** An object is used by one thread at a time. `send` only queues a
/// message; `poll` (or `flush`) transmits what is queued, receives, and reports events.
/// Nothing happens between two polls, so poll at least every few hundred milliseconds (ENet
/// keeps the connection alive and retransmits reliable messages from there).
///
/// **Errors.** `Error(errc::network)` when a socket can't be bound, a server does not answer
/// in time or a connection is closed; `Error(errc::invalid_argument)` for a host name that does
/// not resolve, a peer that is not (or no longer) connected, a message ENet can't carry, or a
/// moved-from object. Messages name the host, the port and the peer. A call that throws sends
/// nothing and changes nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>  // std::unique_ptr, std::addressof
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tessera::net {

/// The channels of a connection (ENet channel ids 0, 1 and 2).
enum class Channel : std::uint8_t {
    delta = 0,    ///< unreliable sequenced: replication deltas, server to client
    ack = 1,      ///< unreliable sequenced: acks and inputs, client to server
    control = 2,  ///< reliable ordered, both ways: what must arrive (hand-shakes, checkpoints)
};

/// How many channels a connection has.
inline constexpr std::size_t channel_count = 3;

/// The stable name of a channel: "delta", "ack" or "control".
[[nodiscard]] const char* to_string(Channel channel) noexcept;

/// A client connected to an `EnetServer`, as the server names it. Ids are never reused by one
/// server, so an id of a client that has gone names no one (rather than a newcomer). Value 0
/// is no peer. It is the transport's id: map it to a `ts::net::ClientId` of a `Replicator`
/// where the two meet.
struct PeerId {
    /// The id's bits (the peer's slot in the low 12 bits, a connection count above them).
    std::uint32_t value = 0;
    /// Equal ids name the same connection.
    friend bool operator==(PeerId, PeerId) noexcept = default;
};

/// What `poll` reports. `bytes` points into ENet's packet and is valid only during the callback
/// (copy what you keep).
struct EnetEvent {
    /// What happened.
    enum class Kind : std::uint8_t {
        connected,     ///< a client connected (servers only; `EnetClient::connect` waits for it)
        received,      ///< a message arrived on `channel`
        disconnected,  ///< the connection ended: either side closed it, or the peer timed out
    };
    /// What happened.
    Kind kind = Kind::received;
    /// On a server, the client; on a client, always `PeerId{}` (its one peer is the server).
    PeerId peer;
    /// The message's channel (`received` only).
    Channel channel = Channel::delta;
    /// The message (`received` only; empty messages are allowed).
    std::span<const std::byte> bytes;
};

/// Message and byte counts of one server or client since it was made.
struct EnetStats {
    std::uint64_t messages_sent = 0;        ///< messages given to `send`
    std::uint64_t bytes_sent = 0;           ///< their payload bytes
    std::uint64_t messages_received = 0;    ///< `received` events
    std::uint64_t bytes_received = 0;       ///< their payload bytes
    std::uint64_t wire_bytes_sent = 0;      ///< UDP payload bytes sent (ENet headers, acks,
                                            ///< retransmissions and pings included)
    std::uint64_t wire_bytes_received = 0;  ///< UDP payload bytes received
};

/// How an `EnetServer` listens.
struct EnetServerOptions {
    /// The UDP port; 0 lets the system pick a free one (`EnetServer::port()` tells which).
    std::uint16_t port = 0;
    /// Clients connected at once, 1 to 4095 (ENet's peer limit); a client beyond them gets no
    /// answer, so its `connect` times out.
    std::size_t max_clients = 8;
    /// The IPv4 address or host name to bind: "127.0.0.1" (the default) takes connections
    /// from this machine only, "0.0.0.0" (or "") from every interface. Nothing is encrypted.
    std::string host = "127.0.0.1";
    /// A client that answers nothing this long (ENet's pings and acks) is disconnected.
    std::chrono::milliseconds peer_timeout{5000};
};

/// Sink for `poll`'s events (the type-erased callback).
struct EnetEventSink {
    void* context = nullptr;                          ///< the callable
    void (*call)(void*, const EnetEvent&) = nullptr;  ///< calls it

    /// The sink that calls `f` (which must outlive the sink).
    template <class F>
    static EnetEventSink of(F& f) noexcept {
        return {const_cast<void*>(static_cast<const void*>(std::addressof(f))),
                [](void* c, const EnetEvent& e) { (*static_cast<F*>(c))(e); }};
    }
};

/// A server that many `EnetClient`s connect to (see the file comment). Move-only; a moved-from
/// server can only be destroyed or assigned to (its other calls throw invalid_argument).
class EnetServer {
public:
    /// Binds a UDP socket at `options.host`:`options.port` and starts listening.
    /// @throws Error(invalid_argument) when `max_clients` is 0 or above 4095 or the host does
    /// not resolve; Error(network) when the socket can't be bound (the port is taken).
    explicit EnetServer(const EnetServerOptions& options = {});
    /// Tells every connected client it is disconnected (one unreliable notice each, sent now)
    /// and closes the socket.
    ~EnetServer();
    /// Takes over `other`'s socket and clients; `other` is left moved-from.
    EnetServer(EnetServer&& other) noexcept;
    /// Closes this server (as the destructor does), then takes over `other`'s.
    EnetServer& operator=(EnetServer&& other) noexcept;
    EnetServer(const EnetServer&) = delete;
    EnetServer& operator=(const EnetServer&) = delete;

    /// The port it listens on (the system's pick when the options said 0); 0 when moved-from.
    [[nodiscard]] std::uint16_t port() const noexcept;

    /// Transmits what is queued, waits up to `timeout` for the first event, then reports it and
    /// every other event already received to `on_event(const EnetEvent&)`, in arrival order;
    /// returns how many it reported. A peer is connected from its `connected` event until its
    /// `disconnected` event (or `disconnect`). If `on_event` throws, the exception propagates:
    /// the event it threw on is consumed, the ones after it stay queued for the next poll.
    /// @throws Error(network) when the socket fails.
    template <class F>
    std::size_t poll(std::chrono::milliseconds timeout, F&& on_event) {
        return poll_sink(timeout, EnetEventSink::of(on_event));
    }
    /// `poll` with a type-erased callback.
    std::size_t poll_sink(std::chrono::milliseconds timeout, EnetEventSink sink);

    /// Queues `bytes` (copied) for `peer` on `channel`; the next `poll` or `flush` sends it.
    /// @throws Error(invalid_argument) when `peer` is not connected (never was, has gone, or
    /// was disconnected by `disconnect`) or the message is larger than ENet's packet limit
    /// (32 MiB).
    void send(PeerId peer, std::span<const std::byte> bytes, Channel channel);
    /// Sends what is queued now, without waiting or receiving.
    void flush();

    /// Starts closing `peer`'s connection gracefully (after what is queued for it); from now on
    /// it is not connected (what it still sends is dropped), and a later poll reports its
    /// `disconnected` event.
    /// @throws Error(invalid_argument) when `peer` is not connected.
    void disconnect(PeerId peer);

    /// Whether `peer` is connected now.
    [[nodiscard]] bool connected(PeerId peer) const noexcept;
    /// The connected clients, by slot.
    [[nodiscard]] std::vector<PeerId> clients() const;
    /// How many clients are connected.
    [[nodiscard]] std::size_t client_count() const noexcept;
    /// "ip:port" of a connected peer. @throws Error(invalid_argument) when it is not connected.
    [[nodiscard]] std::string address(PeerId peer) const;
    /// ENet's current estimate of the round trip to a connected peer.
    /// @throws Error(invalid_argument) when it is not connected.
    [[nodiscard]] std::chrono::milliseconds round_trip(PeerId peer) const;
    /// Counts since the server was made (wire counts as of the last poll or flush).
    [[nodiscard]] EnetStats stats() const noexcept;

    /// The ENet host and the peer slots (src/net_enet/enet.cpp).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

/// How an `EnetClient` connects.
struct EnetClientOptions {
    /// The server is disconnected when it answers nothing this long (once connected).
    std::chrono::milliseconds peer_timeout{5000};
};

/// A client of one `EnetServer` (see the file comment). Move-only; a moved-from client can
/// only be destroyed or assigned to (its other calls throw invalid_argument).
class EnetClient {
public:
    /// A client of the server at `host`:`port` (an IPv4 address or a name); not connected yet.
    /// @throws Error(invalid_argument) when the host does not resolve or `port` is 0;
    /// Error(network) when no socket can be made.
    EnetClient(const std::string& host, std::uint16_t port, EnetClientOptions options = {});
    /// Drops the connection (one unreliable notice to the server, sent now).
    ~EnetClient();
    /// Takes over `other`'s socket and connection; `other` is left moved-from.
    EnetClient(EnetClient&& other) noexcept;
    /// Closes this client (as the destructor does), then takes over `other`'s.
    EnetClient& operator=(EnetClient&& other) noexcept;
    EnetClient(const EnetClient&) = delete;
    EnetClient& operator=(const EnetClient&) = delete;

    /// Connects, waiting up to `timeout` for the server's answer. Does nothing when connected.
    /// @throws Error(network) when the server does not answer in time (none listens, or it is
    /// full) or refuses; the client is then unconnected as before, and may try again.
    void connect(std::chrono::milliseconds timeout);
    /// Whether it is connected now.
    [[nodiscard]] bool connected() const noexcept;

    /// Queues `bytes` (copied) for the server on `channel`; the next `poll` or `flush` sends it.
    /// @throws Error(network) when not connected; Error(invalid_argument) when the message is
    /// larger than ENet's packet limit (32 MiB).
    void send(std::span<const std::byte> bytes, Channel channel);
    /// Sends what is queued now, without waiting or receiving.
    void flush();

    /// As `EnetServer::poll`: transmits, waits up to `timeout` for the first event, reports it
    /// and every other one already received (`received` and `disconnected`; after
    /// `disconnected` the client is unconnected). Returns how many it reported; 0 at once when
    /// not connected.
    /// @throws Error(network) when the socket fails.
    template <class F>
    std::size_t poll(std::chrono::milliseconds timeout, F&& on_event) {
        return poll_sink(timeout, EnetEventSink::of(on_event));
    }
    /// `poll` with a type-erased callback.
    std::size_t poll_sink(std::chrono::milliseconds timeout, EnetEventSink sink);

    /// Closes the connection gracefully: sends what is queued, tells the server once that has
    /// been acknowledged, and waits up to `timeout` for the server's answer. Past `timeout` it
    /// drops the connection with one unreliable notice to the server (a reliable message still
    /// unacknowledged then may be lost). Messages arriving meanwhile are discarded. Does
    /// nothing when not connected.
    void disconnect(std::chrono::milliseconds timeout);

    /// "ip:port" of the server.
    [[nodiscard]] std::string address() const;
    /// ENet's current estimate of the round trip to the server (0 when not connected).
    [[nodiscard]] std::chrono::milliseconds round_trip() const noexcept;
    /// Counts since the client was made (wire counts as of the last poll or flush).
    [[nodiscard]] EnetStats stats() const noexcept;

    /// The ENet host and the server's peer (src/net_enet/enet.cpp).
    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::net
