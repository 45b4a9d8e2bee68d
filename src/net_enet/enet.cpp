// EnetServer and EnetClient (include/tessera/net/enet.hpp) over ENet 1.3.
#include <tessera/error.hpp>
#include <tessera/net/enet.hpp>

#include <enet/enet.h>

#include <algorithm>
#include <array>
#include <limits>
#include <mutex>
#include <new>
#include <string>
#include <utility>

namespace tessera::net {

namespace {

// ENet's peer ids are 12 bits (ENET_PROTOCOL_MAXIMUM_PEER_ID); a PeerId keeps the slot there
// and a connection count above it, so an id is never reused by one server.
constexpr std::uint32_t slot_bits = 12;
constexpr std::uint32_t slot_mask = (1u << slot_bits) - 1;
constexpr std::size_t max_peers = ENET_PROTOCOL_MAXIMUM_PEER_ID;

// enet_initialize once per process while any server or client lives.
std::mutex init_mutex;
std::size_t init_count = 0;

class EnetLibrary {
public:
    explicit EnetLibrary(const char* who) {
        const std::lock_guard lock(init_mutex);
        if (init_count == 0 && enet_initialize() != 0)
            throw Error(errc::network, std::string(who) + ": enet_initialize failed");
        ++init_count;
    }
    ~EnetLibrary() {
        const std::lock_guard lock(init_mutex);
        if (--init_count == 0) enet_deinitialize();
    }
    EnetLibrary(const EnetLibrary&) = delete;
    EnetLibrary& operator=(const EnetLibrary&) = delete;
};

std::string format_address(const ENetAddress& a) {
    std::array<char, 64> ip{};
    const std::string host =
        enet_address_get_host_ip(&a, ip.data(), ip.size()) == 0 ? std::string(ip.data()) : "?";
    return host + ":" + std::to_string(a.port);
}

std::string peer_name(PeerId p) {
    return "peer " + std::to_string(p.value);
}

enet_uint32 wait_ms(std::chrono::milliseconds t) {
    if (t.count() <= 0) return 0;
    return static_cast<enet_uint32>(std::min<std::chrono::milliseconds::rep>(
        t.count(), std::numeric_limits<enet_uint32>::max()));
}

enet_uint32 packet_flags(Channel c) {
    // Unreliable channels stay sequenced (flags 0); a message over the MTU is sent as reliable
    // fragments by ENet, so it arrives whole.
    return c == Channel::control ? static_cast<enet_uint32>(ENET_PACKET_FLAG_RELIABLE) : 0u;
}

bool valid_channel(Channel c) noexcept {
    return static_cast<std::size_t>(c) < channel_count;
}

// Makes the packet and hands it to ENet; nothing is queued when it throws.
void send_packet(ENetPeer* peer, std::span<const std::byte> bytes, Channel channel, const char* who,
                 const std::string& target) {
    if (!valid_channel(channel))
        throw Error(errc::invalid_argument, std::string(who) + ": channel " +
                                                std::to_string(static_cast<unsigned>(channel)) +
                                                " does not exist (to " + target + ")");
    if (bytes.size() > ENET_HOST_DEFAULT_MAXIMUM_PACKET_SIZE)
        throw Error(errc::invalid_argument,
                    std::string(who) + ": a message of " + std::to_string(bytes.size()) +
                        " bytes to " + target + " is over ENet's limit of " +
                        std::to_string(ENET_HOST_DEFAULT_MAXIMUM_PACKET_SIZE) + " bytes");
    ENetPacket* packet = enet_packet_create(bytes.data(), bytes.size(), packet_flags(channel));
    if (packet == nullptr) throw std::bad_alloc();
    if (enet_peer_send(peer, static_cast<enet_uint8>(channel), packet) != 0) {
        enet_packet_destroy(packet);  // not taken: still ours
        throw Error(errc::network, std::string(who) + ": ENet refused a message of " +
                                       std::to_string(bytes.size()) + " bytes to " + target);
    }
}

// Destroys a received packet after its event was reported, also when the callback throws.
struct PacketGuard {
    explicit PacketGuard(ENetPacket* p) noexcept : packet(p) {}
    ENetPacket* packet;
    ~PacketGuard() {
        if (packet != nullptr) enet_packet_destroy(packet);
    }
    PacketGuard(const PacketGuard&) = delete;
    PacketGuard& operator=(const PacketGuard&) = delete;
};

// ENet's 32-bit wire counters, folded into 64-bit totals and reset (as ENet asks).
void take_wire_counts(ENetHost* host, EnetStats& stats) {
    stats.wire_bytes_sent += host->totalSentData;
    stats.wire_bytes_received += host->totalReceivedData;
    host->totalSentData = 0;
    host->totalReceivedData = 0;
}

ENetAddress resolve(const std::string& host, std::uint16_t port, const char* who) {
    ENetAddress address{};
    address.port = port;
    if (host.empty() || host == "0.0.0.0") {
        address.host = ENET_HOST_ANY;
    } else if (enet_address_set_host(&address, host.c_str()) != 0) {
        throw Error(errc::invalid_argument,
                    std::string(who) + ": host '" + host + "' does not resolve to an IPv4 address");
    }
    return address;
}

void set_timeout(ENetPeer* peer, std::chrono::milliseconds timeout) {
    const enet_uint32 ms = std::max<enet_uint32>(wait_ms(timeout), 1);
    enet_peer_timeout(peer, 0, ms, ms);
}

}  // namespace

const char* to_string(Channel channel) noexcept {
    switch (channel) {
        case Channel::delta: return "delta";
        case Channel::ack: return "ack";
        case Channel::control: return "control";
    }
    return "unknown";
}

// ---------------------------------------------------------------------------------------------
// Server

struct EnetServer::Impl {
    struct Slot {
        PeerId id;          // {} when free
        bool open = false;  // connected and not being disconnected by us
        std::string address;
    };

    EnetLibrary library{"EnetServer"};
    ENetHost* host = nullptr;
    std::uint16_t port = 0;
    std::string bound;  // "host:port" for messages
    std::chrono::milliseconds peer_timeout{};
    std::vector<Slot> slots;  // by ENet peer index
    std::uint32_t connections = 0;
    std::size_t open_count = 0;
    EnetStats stats;

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl() {
        if (host == nullptr) return;
        for (std::size_t i = 0; i < host->peerCount; ++i) {
            ENetPeer& p = host->peers[i];
            if (p.state != ENET_PEER_STATE_DISCONNECTED) enet_peer_disconnect_now(&p, 0);
        }
        enet_host_flush(host);
        enet_host_destroy(host);
    }

    // The slot of a connected peer, or null.
    Slot* find(PeerId id) noexcept {
        const std::uint32_t index = id.value & slot_mask;
        if (id.value == 0 || index >= slots.size()) return nullptr;
        Slot& s = slots[index];
        return s.open && s.id == id ? &s : nullptr;
    }
    Slot& require(PeerId id, const char* who) {
        Slot* s = find(id);
        if (s == nullptr)
            throw Error(errc::invalid_argument, std::string(who) + ": " + peer_name(id) +
                                                    " is not connected to the server at " + bound);
        return *s;
    }
    ENetPeer* peer_of(const Slot& s) noexcept { return &host->peers[&s - slots.data()]; }

    // One ENet event to an EnetEvent (or none, for an event of no interest); the slot
    // bookkeeping is done first, so it holds whatever the callback does.
    bool translate(const ENetEvent& ev, EnetEvent& out) {
        const auto index = static_cast<std::size_t>(ev.peer - host->peers);
        Slot& s = slots[index];
        switch (ev.type) {
            case ENET_EVENT_TYPE_CONNECT: {
                ++connections;
                s.id = PeerId{(connections << slot_bits) | static_cast<std::uint32_t>(index)};
                // Connection counts past 2^20 would wrap into a reused id: skip 0 and go on.
                if ((s.id.value >> slot_bits) == 0) s.id.value |= 1u << slot_bits;
                s.open = true;
                s.address = format_address(ev.peer->address);
                ++open_count;
                set_timeout(ev.peer, peer_timeout);
                out = EnetEvent{EnetEvent::Kind::connected, s.id, Channel::delta, {}};
                return true;
            }
            case ENET_EVENT_TYPE_RECEIVE: {
                // Nothing from a peer we are disconnecting: it is no longer connected.
                if (!s.open || ev.channelID >= channel_count) return false;
                out = EnetEvent{
                    EnetEvent::Kind::received,
                    s.id,
                    static_cast<Channel>(ev.channelID),
                    {reinterpret_cast<const std::byte*>(ev.packet->data), ev.packet->dataLength}};
                ++stats.messages_received;
                stats.bytes_received += ev.packet->dataLength;
                return true;
            }
            case ENET_EVENT_TYPE_DISCONNECT: {
                if (s.id.value == 0) return false;  // a connection attempt that never finished
                out = EnetEvent{EnetEvent::Kind::disconnected, s.id, Channel::delta, {}};
                if (s.open) --open_count;
                s = Slot{};
                return true;
            }
            case ENET_EVENT_TYPE_NONE: break;
        }
        return false;
    }
};

EnetServer::EnetServer(const EnetServerOptions& options) : impl_(std::make_unique<Impl>()) {
    const std::string where = options.host + ":" + std::to_string(options.port);
    if (options.max_clients == 0 || options.max_clients > max_peers)
        throw Error(errc::invalid_argument, "EnetServer at " + where + ": max_clients " +
                                                std::to_string(options.max_clients) +
                                                " is not in 1.." + std::to_string(max_peers));
    const ENetAddress address = resolve(options.host, options.port, "EnetServer");
    impl_->host = enet_host_create(&address, options.max_clients, channel_count, 0, 0);
    if (impl_->host == nullptr)
        throw Error(errc::network, "EnetServer: cannot bind UDP " + where +
                                       " (the port is taken, or the address is not this "
                                       "machine's)");
    ENetAddress actual{};
    impl_->port =
        enet_socket_get_address(impl_->host->socket, &actual) == 0 ? actual.port : options.port;
    impl_->bound = options.host + ":" + std::to_string(impl_->port);
    impl_->peer_timeout = options.peer_timeout;
    impl_->slots.resize(options.max_clients);
}

EnetServer::~EnetServer() = default;
EnetServer::EnetServer(EnetServer&& other) noexcept = default;
EnetServer& EnetServer::operator=(EnetServer&& other) noexcept = default;

std::uint16_t EnetServer::port() const noexcept {
    return impl_ ? impl_->port : 0;
}

namespace {

template <class Object>
auto& live(Object& impl, const char* who) {
    if (!impl)
        throw Error(errc::invalid_argument, std::string(who) + ": the object was moved from");
    return *impl;
}

}  // namespace

std::size_t EnetServer::poll_sink(std::chrono::milliseconds timeout, EnetEventSink sink) {
    Impl& s = live(impl_, "EnetServer::poll");
    std::size_t reported = 0;
    ENetEvent ev{};
    // The first service waits and does the socket work; the rest only drain what it received.
    int got = enet_host_service(s.host, &ev, wait_ms(timeout));
    for (;;) {
        if (got < 0) {
            take_wire_counts(s.host, s.stats);
            throw Error(errc::network, "EnetServer::poll: the socket of " + s.bound + " failed");
        }
        if (got == 0) break;
        const PacketGuard guard(ev.type == ENET_EVENT_TYPE_RECEIVE ? ev.packet : nullptr);
        EnetEvent out;
        if (s.translate(ev, out)) {
            ++reported;
            sink.call(sink.context, out);
        }
        got = enet_host_check_events(s.host, &ev);
    }
    enet_host_flush(s.host);  // what the callbacks sent
    take_wire_counts(s.host, s.stats);
    return reported;
}

void EnetServer::send(PeerId peer, std::span<const std::byte> bytes, Channel channel) {
    Impl& s = live(impl_, "EnetServer::send");
    Impl::Slot& slot = s.require(peer, "EnetServer::send");
    send_packet(s.peer_of(slot), bytes, channel, "EnetServer::send",
                peer_name(peer) + " (" + slot.address + ")");
    ++s.stats.messages_sent;
    s.stats.bytes_sent += bytes.size();
}

void EnetServer::flush() {
    Impl& s = live(impl_, "EnetServer::flush");
    enet_host_flush(s.host);
    take_wire_counts(s.host, s.stats);
}

void EnetServer::disconnect(PeerId peer) {
    Impl& s = live(impl_, "EnetServer::disconnect");
    Impl::Slot& slot = s.require(peer, "EnetServer::disconnect");
    enet_peer_disconnect_later(s.peer_of(slot), 0);
    slot.open = false;
    --s.open_count;
}

bool EnetServer::connected(PeerId peer) const noexcept {
    return impl_ && impl_->find(peer) != nullptr;
}

std::vector<PeerId> EnetServer::clients() const {
    std::vector<PeerId> out;
    if (!impl_) return out;
    for (const Impl::Slot& s : impl_->slots)
        if (s.open) out.push_back(s.id);
    return out;
}

std::size_t EnetServer::client_count() const noexcept {
    return impl_ ? impl_->open_count : 0;
}

std::string EnetServer::address(PeerId peer) const {
    return live(impl_, "EnetServer::address").require(peer, "EnetServer::address").address;
}

std::chrono::milliseconds EnetServer::round_trip(PeerId peer) const {
    Impl& s = live(impl_, "EnetServer::round_trip");
    return std::chrono::milliseconds(
        s.peer_of(s.require(peer, "EnetServer::round_trip"))->roundTripTime);
}

EnetStats EnetServer::stats() const noexcept {
    return impl_ ? impl_->stats : EnetStats{};
}

// ---------------------------------------------------------------------------------------------
// Client

struct EnetClient::Impl {
    EnetLibrary library{"EnetClient"};
    ENetHost* host = nullptr;
    ENetAddress server{};
    std::string name;  // "host:port" as given
    std::chrono::milliseconds peer_timeout{};
    ENetPeer* peer = nullptr;  // while connected
    EnetStats stats;

    Impl() = default;
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl() {
        if (host == nullptr) return;
        if (peer != nullptr) enet_peer_disconnect_now(peer, 0);
        enet_host_flush(host);
        enet_host_destroy(host);
    }
};

EnetClient::EnetClient(const std::string& host, std::uint16_t port, EnetClientOptions options)
    : impl_(std::make_unique<Impl>()) {
    impl_->name = host + ":" + std::to_string(port);
    if (port == 0)
        throw Error(errc::invalid_argument,
                    "EnetClient: port 0 names no server (" + impl_->name + ")");
    if (host.empty() || host == "0.0.0.0")
        throw Error(errc::invalid_argument, "EnetClient: '" + host + "' names no server host");
    impl_->server = resolve(host, port, "EnetClient");
    impl_->peer_timeout = options.peer_timeout;
    impl_->host = enet_host_create(nullptr, 1, channel_count, 0, 0);
    if (impl_->host == nullptr)
        throw Error(errc::network,
                    "EnetClient: cannot make a UDP socket (for " + impl_->name + ")");
}

EnetClient::~EnetClient() = default;
EnetClient::EnetClient(EnetClient&& other) noexcept = default;
EnetClient& EnetClient::operator=(EnetClient&& other) noexcept = default;

void EnetClient::connect(std::chrono::milliseconds timeout) {
    Impl& c = live(impl_, "EnetClient::connect");
    if (c.peer != nullptr) return;
    ENetPeer* peer = enet_host_connect(c.host, &c.server, channel_count, 0);
    if (peer == nullptr)
        throw Error(errc::network,
                    "EnetClient::connect: ENet could not start a connection to " + c.name);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        ENetEvent ev{};
        const int got = enet_host_service(c.host, &ev, wait_ms(left));
        if (got > 0 && ev.type == ENET_EVENT_TYPE_CONNECT) {
            c.peer = peer;
            set_timeout(peer, c.peer_timeout);
            // The server reports the connection once it has our acknowledgement: send it now,
            // not at the next poll.
            enet_host_flush(c.host);
            take_wire_counts(c.host, c.stats);
            return;
        }
        if (got > 0 && ev.type == ENET_EVENT_TYPE_RECEIVE) enet_packet_destroy(ev.packet);
        const bool refused = got > 0 && ev.type == ENET_EVENT_TYPE_DISCONNECT;
        if (got < 0 || refused || std::chrono::steady_clock::now() >= deadline) {
            enet_peer_reset(peer);  // back to unconnected: the next connect starts afresh
            take_wire_counts(c.host, c.stats);
            if (got < 0)
                throw Error(errc::network,
                            "EnetClient::connect: the socket failed (to " + c.name + ")");
            throw Error(errc::network,
                        "EnetClient::connect: " + c.name +
                            (refused ? " refused the connection"
                                     : " did not answer within " + std::to_string(timeout.count()) +
                                           " ms (no server there, or it is full)"));
        }
    }
}

bool EnetClient::connected() const noexcept {
    return impl_ && impl_->peer != nullptr;
}

void EnetClient::send(std::span<const std::byte> bytes, Channel channel) {
    Impl& c = live(impl_, "EnetClient::send");
    if (c.peer == nullptr)
        throw Error(errc::network, "EnetClient::send: not connected to " + c.name);
    send_packet(c.peer, bytes, channel, "EnetClient::send", "the server at " + c.name);
    ++c.stats.messages_sent;
    c.stats.bytes_sent += bytes.size();
}

void EnetClient::flush() {
    Impl& c = live(impl_, "EnetClient::flush");
    enet_host_flush(c.host);
    take_wire_counts(c.host, c.stats);
}

std::size_t EnetClient::poll_sink(std::chrono::milliseconds timeout, EnetEventSink sink) {
    Impl& c = live(impl_, "EnetClient::poll");
    if (c.peer == nullptr) return 0;
    std::size_t reported = 0;
    ENetEvent ev{};
    int got = enet_host_service(c.host, &ev, wait_ms(timeout));
    for (;;) {
        if (got < 0) {
            take_wire_counts(c.host, c.stats);
            throw Error(errc::network, "EnetClient::poll: the socket failed (to " + c.name + ")");
        }
        if (got == 0) break;
        const PacketGuard guard(ev.type == ENET_EVENT_TYPE_RECEIVE ? ev.packet : nullptr);
        if (ev.type == ENET_EVENT_TYPE_RECEIVE && ev.channelID < channel_count) {
            ++c.stats.messages_received;
            c.stats.bytes_received += ev.packet->dataLength;
            ++reported;
            sink.call(sink.context, EnetEvent{EnetEvent::Kind::received,
                                              PeerId{},
                                              static_cast<Channel>(ev.channelID),
                                              {reinterpret_cast<const std::byte*>(ev.packet->data),
                                               ev.packet->dataLength}});
        } else if (ev.type == ENET_EVENT_TYPE_DISCONNECT) {
            c.peer = nullptr;
            ++reported;
            sink.call(sink.context,
                      EnetEvent{EnetEvent::Kind::disconnected, PeerId{}, Channel::delta, {}});
            break;  // nothing more comes from a closed connection
        }
        got = enet_host_check_events(c.host, &ev);
    }
    if (c.peer != nullptr) enet_host_flush(c.host);
    take_wire_counts(c.host, c.stats);
    return reported;
}

void EnetClient::disconnect(std::chrono::milliseconds timeout) {
    Impl& c = live(impl_, "EnetClient::disconnect");
    if (c.peer == nullptr) return;
    enet_peer_disconnect_later(c.peer, 0);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    ENetEvent ev{};
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        const int got = enet_host_service(c.host, &ev, wait_ms(left));
        if (got > 0 && ev.type == ENET_EVENT_TYPE_RECEIVE) {
            enet_packet_destroy(ev.packet);
            continue;
        }
        if (got > 0 && ev.type == ENET_EVENT_TYPE_DISCONNECT) break;
        if (got < 0 || std::chrono::steady_clock::now() >= deadline) {
            // No answer in time (or what was queued is still unacknowledged): one unreliable
            // notice, sent now, and the connection is dropped.
            enet_peer_disconnect_now(c.peer, 0);
            break;
        }
    }
    c.peer = nullptr;
    take_wire_counts(c.host, c.stats);
}

std::string EnetClient::address() const {
    return format_address(live(impl_, "EnetClient::address").server);
}

std::chrono::milliseconds EnetClient::round_trip() const noexcept {
    if (!impl_ || impl_->peer == nullptr) return std::chrono::milliseconds(0);
    return std::chrono::milliseconds(impl_->peer->roundTripTime);
}

EnetStats EnetClient::stats() const noexcept {
    return impl_ ? impl_->stats : EnetStats{};
}

}  // namespace tessera::net
