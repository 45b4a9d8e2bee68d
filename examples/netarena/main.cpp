// netarena: the arena battle (examples/arena/sim.cpp) served over ENet to client processes
// that mirror it.
//
// One server process runs the battle and, each frame, sends every client what it has not
// acknowledged (ts::net::Replicator::delta) on the unreliable delta channel; each client
// applies it to its own world (ts::net::Mirror) and acknowledges the tick it now holds, with
// a hash of its replicated components, on the ack channel. At checkpoints (every
// --checkpoint frames and after the last frame) the server stops changing the world and keeps
// sending until every client has acknowledged that tick; then it compares the hashes and sends
// its own on the reliable control channel, and every side prints them side by side. With
// --chaos both sides' receiving ends go through a shim (chaos.hpp) that drops 20% of the
// messages, duplicates and reorders others: the hashes must agree all the same.
//
// The default mode runs the server here and starts --clients client processes of this
// program (--client), exits 0 when every checkpoint agreed and every client exited 0.
#include "../arena/sim.hpp"
#include "chaos.hpp"

#include <tessera/net.hpp>
#include <tessera/net/enet.hpp>

#ifdef TESSERA_NETARENA_INSPECT
#include <tessera/inspect.hpp>
#endif

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace netarena {

/// On the server, one entity per connected client, for the inspector (filter by NetPeer).
struct NetPeer {
    std::uint32_t peer = 0;        ///< the transport's id
    std::uint64_t acked_tick = 0;  ///< the last tick the client acknowledged
    std::uint64_t bytes_sent = 0;  ///< delta bytes sent to it
    std::uint32_t round_trip_ms = 0;
};

}  // namespace netarena

TESSERA_REFLECT(netarena::NetPeer, peer, acked_tick, bytes_sent, round_trip_ms)

namespace {

namespace net = ts::net;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;
using netarena::NetPeer;

// ----- options ------------------------------------------------------------------------------

struct Options {
    enum class Mode { demo, server, client };
    Mode mode = Mode::demo;
    std::size_t units = 1000;
    std::uint32_t frames = 180;
    std::uint32_t checkpoint_every = 60;
    std::uint32_t hz = 60;  ///< server frames per second (0: as fast as it can)
    int clients = 2;
    std::uint16_t port = 0;  ///< --server: 0 = any; --client: the server's
    int id = 1;              ///< --client: its number, for the output
    bool chaos = false;
    int inspect_port = -1;
    int timeout_s = 60;  ///< every mode gives up (exit 2) after this long
    std::uint64_t seed = 42;
};

[[noreturn]] void usage(int code) {
    std::fprintf(code == 0 ? stdout : stderr,
                 "usage: netarena [--server | --client] [options]\n"
                 "\n"
                 "The arena battle replicated over ENet. With neither mode it runs the server\n"
                 "and starts --clients client processes on 127.0.0.1, and exits 0 when every\n"
                 "checkpoint's hashes agree.\n"
                 "\n"
                 "  --server            run only the server (prints its port)\n"
                 "  --client            run one client (needs --port)\n"
                 "  --port N            server: the port (0 = any); client: the server's port\n"
                 "  --clients N         clients to serve and wait for (default 2)\n"
                 "  --id N              client: its number in the output (default 1)\n"
                 "  --units N           units in the battle (default 1000)\n"
                 "  --frames N          frames to simulate (default 180)\n"
                 "  --checkpoint N      compare hashes every N frames (default 60) and at the end\n"
                 "  --hz N              server frames per second, 0 = unpaced (default 60)\n"
                 "  --chaos             20%% loss, duplicates and reordering on every receiver\n"
                 "  --inspect PORT      server: serve the world inspector (clients as NetPeer)\n"
                 "  --timeout S         give up after S seconds, exit 2 (default 60)\n"
                 "  --seed N            the battle's seed (default 42)\n");
    std::exit(code);
}

template <class T>
T number(std::string_view flag, const char* text) {
    T value{};
    const std::string_view s(text);
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc{} || end != s.data() + s.size()) {
        std::fprintf(stderr, "netarena: %.*s: not a number: %s\n", static_cast<int>(flag.size()),
                     flag.data(), text);
        usage(64);
    }
    return value;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a(argv[i]);
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "netarena: %s needs a value\n", argv[i]);
                usage(64);
            }
            return argv[++i];
        };
        if (a == "--server")
            o.mode = Options::Mode::server;
        else if (a == "--client")
            o.mode = Options::Mode::client;
        else if (a == "--port")
            o.port = number<std::uint16_t>(a, value());
        else if (a == "--clients")
            o.clients = number<int>(a, value());
        else if (a == "--id")
            o.id = number<int>(a, value());
        else if (a == "--units")
            o.units = number<std::size_t>(a, value());
        else if (a == "--frames")
            o.frames = number<std::uint32_t>(a, value());
        else if (a == "--checkpoint")
            o.checkpoint_every = number<std::uint32_t>(a, value());
        else if (a == "--hz")
            o.hz = number<std::uint32_t>(a, value());
        else if (a == "--chaos")
            o.chaos = true;
        else if (a == "--inspect")
            o.inspect_port = number<std::uint16_t>(a, value());
        else if (a == "--timeout")
            o.timeout_s = number<int>(a, value());
        else if (a == "--seed")
            o.seed = number<std::uint64_t>(a, value());
        else if (a == "--help" || a == "-h")
            usage(0);
        else {
            std::fprintf(stderr, "netarena: unknown option %s\n", argv[i]);
            usage(64);
        }
    }
    if (o.clients < 1 || o.clients > 64) {
        std::fprintf(stderr, "netarena: --clients must be 1..64\n");
        usage(64);
    }
    if (o.mode == Options::Mode::client && o.port == 0) {
        std::fprintf(stderr, "netarena: --client needs --port\n");
        usage(64);
    }
    if (o.checkpoint_every == 0) o.checkpoint_every = o.frames == 0 ? 1 : o.frames;
#ifndef TESSERA_NETARENA_INSPECT
    if (o.inspect_port >= 0) {
        std::fprintf(stderr, "netarena: built without tessera::inspect (libcpp-httplib-dev)\n");
        usage(64);
    }
#endif
    return o;
}

// ----- messages -----------------------------------------------------------------------------
// Beside the replication's own (delta channel), three small ones, little-endian fields:
//   ack channel, client -> server:   tick u64, hash u64, entities u64
//   control, server -> client:       'C' tick u64 hash u64    (a checkpoint's server hash)
//                                    'D' checkpoints u32      (the end: how many there were)

void put(Bytes& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>(v >> (8 * i)));
}
std::optional<std::uint64_t> get(std::span<const std::byte>& in, int bytes) {
    if (in.size() < static_cast<std::size_t>(bytes)) return std::nullopt;
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
        v |= static_cast<std::uint64_t>(
                 std::to_integer<std::uint8_t>(in[static_cast<std::size_t>(i)]))
             << (8 * i);
    in = in.subspan(static_cast<std::size_t>(bytes));
    return v;
}

struct Ack {
    std::uint64_t tick = 0;
    std::uint64_t hash = 0;
    std::uint64_t entities = 0;
};

Bytes encode(const Ack& a) {
    Bytes b;
    put(b, a.tick, 8);
    put(b, a.hash, 8);
    put(b, a.entities, 8);
    return b;
}
std::optional<Ack> decode_ack(std::span<const std::byte> in) {
    const auto t = get(in, 8);
    const auto h = get(in, 8);
    const auto n = get(in, 8);
    if (!t || !h || !n || !in.empty()) return std::nullopt;
    return Ack{*t, *h, *n};
}

// ----- the replicated state's hash ----------------------------------------------------------
// The sum over every replicated component of every entity of a mix of (the server's entity,
// the component, its bytes): independent of order, so the server (keyed by its entities) and
// a client (keyed by each mirror's Replica::remote) compute it the same way.

std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::uint64_t key(ts::Entity e) {
    return (std::uint64_t{e.index} << 32) | e.generation;
}

template <class T>
std::uint64_t value_hash(const T& v) {
    // The replicated components have no padding: their bytes are their value.
    std::array<unsigned char, sizeof(T)> raw{};
    std::memcpy(raw.data(), &v, sizeof(T));
    std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
    for (unsigned char c : raw) h = (h ^ c) * 0x100000001b3ull;
    return h;
}

struct StateHash {
    std::uint64_t hash = 0;
    std::uint64_t entities = 0;
};

// The replicated components, in one place: what the server replicates and both sides hash.
using arena::Health;
using arena::Position;
using arena::Team;
using arena::Unit;
using arena::Velocity;

template <class T>
std::uint64_t term(std::uint64_t entity, std::uint64_t component, const T& v) {
    return mix(entity ^ mix(component) ^ value_hash(v));
}

class ServerHasher {
public:
    explicit ServerHasher(ts::World& w)
        : pos_(w.query<const Position&>()),
          vel_(w.query<const Velocity&>()),
          hp_(w.query<const Health&>()),
          team_(w.query<const Team&>()),
          unit_(w.query<const Unit&>()) {}
    StateHash operator()() {
        StateHash s;
        pos_.each([&](ts::Entity e, const Position& v) {
            s.hash += term(key(e), 1, v);
            ++s.entities;
        });
        vel_.each([&](ts::Entity e, const Velocity& v) { s.hash += term(key(e), 2, v); });
        hp_.each([&](ts::Entity e, const Health& v) { s.hash += term(key(e), 3, v); });
        team_.each([&](ts::Entity e, const Team& v) { s.hash += term(key(e), 4, v); });
        unit_.each([&](ts::Entity e, const Unit& v) { s.hash += term(key(e), 5, v); });
        return s;
    }

private:
    ts::Query<const Position&> pos_;
    ts::Query<const Velocity&> vel_;
    ts::Query<const Health&> hp_;
    ts::Query<const Team&> team_;
    ts::Query<const Unit&> unit_;
};

class ClientHasher {
public:
    explicit ClientHasher(ts::World& w)
        : pos_(w.query<const net::Replica&, const Position&>()),
          vel_(w.query<const net::Replica&, const Velocity&>()),
          hp_(w.query<const net::Replica&, const Health&>()),
          team_(w.query<const net::Replica&, const Team&>()),
          unit_(w.query<const net::Replica&, const Unit&>()) {}
    StateHash operator()() {
        StateHash s;
        pos_.each([&](const net::Replica& r, const Position& v) {
            s.hash += term(key(r.remote), 1, v);
            ++s.entities;
        });
        vel_.each(
            [&](const net::Replica& r, const Velocity& v) { s.hash += term(key(r.remote), 2, v); });
        hp_.each(
            [&](const net::Replica& r, const Health& v) { s.hash += term(key(r.remote), 3, v); });
        team_.each(
            [&](const net::Replica& r, const Team& v) { s.hash += term(key(r.remote), 4, v); });
        unit_.each(
            [&](const net::Replica& r, const Unit& v) { s.hash += term(key(r.remote), 5, v); });
        return s;
    }

private:
    ts::Query<const net::Replica&, const Position&> pos_;
    ts::Query<const net::Replica&, const Velocity&> vel_;
    ts::Query<const net::Replica&, const Health&> hp_;
    ts::Query<const net::Replica&, const Team&> team_;
    ts::Query<const net::Replica&, const Unit&> unit_;
};

double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
}

double kib_per_s(std::uint64_t bytes, Clock::time_point since) {
    const double s = std::max(seconds_since(since), 1e-3);
    return static_cast<double>(bytes) / 1024.0 / s;
}

// ----- server -------------------------------------------------------------------------------

struct Client {
    net::PeerId peer;
    net::ClientId id;
    std::uint64_t acked = 0;  ///< the newest tick it acknowledged
    Ack last;                 ///< its newest ack
    ts::Entity info;          ///< its NetPeer entity
    std::uint64_t bytes = 0;
    Bytes message;  ///< the delta being sent (its capacity reused frame after frame)
};

class Server {
public:
    Server(const Options& o, net::EnetServer& transport)
        : o_(o),
          transport_(transport),
          battle_(arena::Config{.units = o.units, .frames = o.frames, .workers = 1, .seed = o.seed},
                  1),
          rep_(battle_.world()),
          hasher_(battle_.world()),
          chaos_(o.chaos, o.seed ^ 0x5e7e7) {
        rep_.replicate<Position, Velocity, Health, Team, Unit>();
#ifdef TESSERA_NETARENA_INSPECT
        if (o.inspect_port >= 0) {
            inspector_.emplace(static_cast<std::uint16_t>(o.inspect_port));
            std::printf("server: inspector at %s (entities with NetPeer are the clients)\n",
                        inspector_->url().c_str());
        }
#endif
    }

    /// Runs the battle with the clients; true when every checkpoint agreed.
    bool run(Clock::time_point deadline) {
        if (!wait_for_clients(deadline)) return false;
        start_ = Clock::now();
        const auto frame_time = o_.hz == 0 ? Clock::duration::zero()
                                           : std::chrono::duration_cast<Clock::duration>(
                                                 std::chrono::duration<double>(1.0 / o_.hz));
        auto next = Clock::now();
        std::uint32_t checkpoints = 0;
        for (std::uint32_t frame = 1; frame <= o_.frames; ++frame) {
            battle_.step();
            // The frame's state: every delta made from here on holds it (each delta() then
            // advances the tick, with nothing replicated changing until the next step).
            const std::uint64_t tick = battle_.world().tick();
            send_deltas();
            const bool checkpoint = frame % o_.checkpoint_every == 0 || frame == o_.frames;
            if (checkpoint) {
                if (!run_checkpoint(frame, tick, deadline)) return false;
                ++checkpoints;
            }
            next += frame_time;
            do {  // serve acks until the next frame is due
                service(1ms);
                if (Clock::now() > deadline) return timed_out();
            } while (Clock::now() < next);
        }
        Bytes done{std::byte{'D'}};
        put(done, checkpoints, 4);
        for (Client& c : clients_) transport_.send(c.peer, done, net::Channel::control);
        for (Client& c : clients_) transport_.disconnect(c.peer);
        // Let the goodbyes go out and the clients answer.
        const auto end = Clock::now() + 2s;
        while (!clients_.empty() && Clock::now() < end) service(5ms);
        const net::EnetStats s = transport_.stats();
        std::printf(
            "server: %u checkpoints, %s; %llu bytes sent (%.1f KiB/s), %llu on the "
            "wire\n",
            checkpoints, ok_ ? "all equal" : "MISMATCH",
            static_cast<unsigned long long>(s.bytes_sent), kib_per_s(s.bytes_sent, start_),
            static_cast<unsigned long long>(s.wire_bytes_sent));
        if (o_.chaos) print_chaos("server", chaos_.counts());
        return ok_ && refused_acks_ == 0;
    }

    static void print_chaos(const char* who, const netarena::Chaos::Counts& c) {
        std::printf(
            "%s: chaos on %llu received messages: %llu dropped, %llu duplicated, %llu "
            "reordered\n",
            who, static_cast<unsigned long long>(c.fed), static_cast<unsigned long long>(c.dropped),
            static_cast<unsigned long long>(c.duplicated),
            static_cast<unsigned long long>(c.reordered));
    }

private:
    bool timed_out() {
        std::fprintf(stderr, "server: timed out after %d s\n", o_.timeout_s);
        return false;
    }

    bool wait_for_clients(Clock::time_point deadline) {
        while (clients_.size() < static_cast<std::size_t>(o_.clients)) {
            if (Clock::now() > deadline) return timed_out();
            service(10ms);
        }
        std::printf("server: %zu clients connected, %zu units, %u frames at %u Hz%s\n",
                    clients_.size(), o_.units, o_.frames, o_.hz, o_.chaos ? ", chaos on" : "");
        std::fflush(stdout);
        return true;
    }

    void send_deltas() {
        for (Client& c : clients_) {
            rep_.delta(c.id, c.message);
            transport_.send(c.peer, c.message, net::Channel::delta);
            c.bytes += c.message.size();
        }
    }

    // Keeps the world as it is at `tick` and sends until every client acknowledged it.
    bool run_checkpoint(std::uint32_t frame, std::uint64_t tick, Clock::time_point deadline) {
        const StateHash mine = hasher_();
        auto all_acked = [&] {
            return std::all_of(clients_.begin(), clients_.end(),
                               [&](const Client& c) { return c.acked >= tick; });
        };
        auto resend = Clock::now();
        while (!all_acked()) {
            if (clients_.size() < static_cast<std::size_t>(o_.clients)) {
                std::fprintf(stderr, "server: a client left during checkpoint %u\n", frame);
                return false;
            }
            if (Clock::now() > deadline) return timed_out();
            service(2ms);
            if (Clock::now() - resend > 10ms) {  // a lost delta (or ack): send again
                send_deltas();
                resend = Clock::now();
            }
        }
        std::string line = "checkpoint frame " + std::to_string(frame) + " tick " +
                           std::to_string(tick) + ": server " + hex(mine.hash);
        bool equal = true;
        for (std::size_t i = 0; i < clients_.size(); ++i) {
            const Ack& a = clients_[i].last;
            equal = equal && a.hash == mine.hash && a.entities == mine.entities;
            line += "  client" + std::to_string(i + 1) + " " + hex(a.hash);
        }
        std::uint64_t sent = 0;
        for (const Client& c : clients_) sent += c.bytes;
        std::printf("%s  %s | %llu entities replicated | %.1f KiB/s of deltas to %zu clients\n",
                    line.c_str(), equal ? "equal" : "DIFFER",
                    static_cast<unsigned long long>(mine.entities), kib_per_s(sent, start_),
                    clients_.size());
        std::fflush(stdout);
        ok_ = ok_ && equal;
        // Each client's hash is of the tick it acknowledged: `tick` or, when the messages
        // made while we waited (each delta() is a tick) were what got through, a later one
        // with the same replicated state, since nothing changed meanwhile.
        for (Client& c : clients_) {
            Bytes msg{std::byte{'C'}};
            put(msg, c.last.tick, 8);
            put(msg, mine.hash, 8);
            transport_.send(c.peer, msg, net::Channel::control);
        }
        return true;
    }

    static std::string hex(std::uint64_t v) {
        std::array<char, 24> buf{};
        std::snprintf(buf.data(), buf.size(), "%016llx", static_cast<unsigned long long>(v));
        return buf.data();
    }

    void service(std::chrono::milliseconds wait) {
        transport_.poll(wait, [&](const net::EnetEvent& e) {
            switch (e.kind) {
                case net::EnetEvent::Kind::connected: {
                    Client c{e.peer, rep_.connect(), 0, {}, {}, 0, {}};
                    c.info = battle_.world().spawn(NetPeer{e.peer.value, 0, 0, 0});
                    clients_.push_back(c);
                    break;
                }
                case net::EnetEvent::Kind::disconnected: {
                    const auto it = find(e.peer);
                    if (it == clients_.end()) break;
                    rep_.disconnect(it->id);
                    battle_.world().despawn(it->info);
                    clients_.erase(it);
                    break;
                }
                case net::EnetEvent::Kind::received:
                    if (e.channel != net::Channel::ack) break;
                    chaos_.feed(e.peer.value, e.bytes,
                                [&](std::uint32_t from, std::span<const std::byte> bytes) {
                                    on_ack(net::PeerId{from}, bytes);
                                });
                    break;
            }
        });
        for (Client& c : clients_) {  // what the inspector shows
            if (!transport_.connected(c.peer)) continue;
            battle_.world().set(
                c.info, NetPeer{c.peer.value, c.acked, c.bytes,
                                static_cast<std::uint32_t>(transport_.round_trip(c.peer).count())});
        }
#ifdef TESSERA_NETARENA_INSPECT
        if (inspector_) inspector_->update(battle_.world(), &battle_.schedule());
#endif
    }

    void on_ack(net::PeerId peer, std::span<const std::byte> bytes) {
        const auto it = find(peer);
        const std::optional<Ack> a = decode_ack(bytes);
        if (it == clients_.end() || !a) return;
        if (a->tick <= it->acked) return;  // late or repeated: we know better already
        try {
            rep_.ack(it->id, a->tick);
        } catch (const ts::Error& err) {  // a client can send anything: refuse it, go on
            ++refused_acks_;
            std::fprintf(stderr, "server: an ack was refused: %s\n", err.what());
            return;
        }
        it->acked = a->tick;
        it->last = *a;
    }

    std::vector<Client>::iterator find(net::PeerId peer) {
        return std::find_if(clients_.begin(), clients_.end(),
                            [&](const Client& c) { return c.peer == peer; });
    }

    const Options& o_;
    net::EnetServer& transport_;
    arena::Battle battle_;
    net::Replicator rep_;
    ServerHasher hasher_;
    netarena::Chaos chaos_;
    std::vector<Client> clients_;
    std::uint64_t refused_acks_ = 0;
    bool ok_ = true;
    Clock::time_point start_ = Clock::now();
#ifdef TESSERA_NETARENA_INSPECT
    std::optional<ts::Inspector> inspector_;
#endif
};

// ----- client -------------------------------------------------------------------------------

int run_client(const Options& o) {
    const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
    const std::string me = "client " + std::to_string(o.id);
    ts::World world;
    net::Mirror mirror(world);
    ClientHasher hasher(world);
    netarena::Chaos chaos(o.chaos, o.seed + static_cast<std::uint64_t>(o.id) * 7919);
    net::EnetClient transport("127.0.0.1", o.port);
    transport.connect(std::chrono::seconds(5));
    const auto start = Clock::now();

    std::map<std::uint64_t, StateHash> hashes;  // tick -> hash, the recent ones
    std::uint64_t applied = 0;
    StateHash current;
    std::uint32_t checkpoints = 0;
    std::optional<std::uint32_t> expected;  // from the server's 'D'
    bool ok = true;
    bool gone = false;
    std::uint64_t malformed = 0;

    auto on_delta = [&](std::span<const std::byte> bytes) {
        try {
            const std::uint64_t t = mirror.apply(bytes);
            if (t != applied) {
                applied = t;
                current = hasher();
                hashes[t] = current;
                while (hashes.size() > 512) hashes.erase(hashes.begin());
            }
        } catch (const ts::Error& e) {  // never from the server; a shim can't forge one either
            ++malformed;
            std::fprintf(stderr, "%s: a delta was refused: %s\n", me.c_str(), e.what());
        }
        // Acknowledge what we hold (again, when it was a duplicate: the first ack may be lost).
        transport.send(encode(Ack{applied, current.hash, current.entities}), net::Channel::ack);
    };
    auto on_control = [&](std::span<const std::byte> in) {
        const auto kind = get(in, 1);
        if (kind == 'C') {
            const auto tick = get(in, 8);
            const auto server_hash = get(in, 8);
            if (!tick || !server_hash) return;
            const auto it = hashes.find(*tick);
            const bool equal = it != hashes.end() && it->second.hash == *server_hash;
            ok = ok && equal;
            ++checkpoints;
            std::printf(
                "%s: tick %llu hash %016llx (server %016llx) %s | %llu entities mirrored "
                "| %.1f KiB/s received\n",
                me.c_str(), static_cast<unsigned long long>(*tick),
                static_cast<unsigned long long>(it != hashes.end() ? it->second.hash : 0),
                static_cast<unsigned long long>(*server_hash), equal ? "equal" : "DIFFER",
                static_cast<unsigned long long>(it != hashes.end() ? it->second.entities : 0),
                kib_per_s(transport.stats().bytes_received, start));
            std::fflush(stdout);
        } else if (kind == 'D') {
            const auto n = get(in, 4);
            expected = n ? static_cast<std::uint32_t>(*n) : 0;
        }
    };

    while (!gone) {
        if (Clock::now() > deadline) {
            std::fprintf(stderr, "%s: timed out after %d s\n", me.c_str(), o.timeout_s);
            return 2;
        }
        transport.poll(5ms, [&](const net::EnetEvent& e) {
            if (e.kind == net::EnetEvent::Kind::disconnected) {
                gone = true;
            } else if (e.channel == net::Channel::delta) {
                chaos.feed(0, e.bytes, [&](std::uint32_t, std::span<const std::byte> bytes) {
                    on_delta(bytes);
                });
            } else if (e.channel == net::Channel::control) {
                on_control(e.bytes);  // reliable: the shim leaves it alone
            }
        });
    }
    const bool complete = expected && *expected == checkpoints && checkpoints > 0;
    std::printf("%s: %u checkpoints %s, %llu bytes received (%.1f KiB/s)\n", me.c_str(),
                checkpoints, ok && complete ? "all equal" : "FAILED",
                static_cast<unsigned long long>(transport.stats().bytes_received),
                kib_per_s(transport.stats().bytes_received, start));
    if (o.chaos) Server::print_chaos(me.c_str(), chaos.counts());
    if (!complete)
        std::fprintf(stderr, "%s: saw %u checkpoints of %u\n", me.c_str(), checkpoints,
                     expected.value_or(0));
    return ok && complete && malformed == 0 ? 0 : 1;
}

// ----- the modes ----------------------------------------------------------------------------

pid_t spawn_client(const Options& o, std::uint16_t port, int id) {
    std::vector<std::string> args = {"netarena",  "--client",
                                     "--port",    std::to_string(port),
                                     "--id",      std::to_string(id),
                                     "--timeout", std::to_string(o.timeout_s),
                                     "--seed",    std::to_string(o.seed)};
    if (o.chaos) args.emplace_back("--chaos");
    std::vector<char*> argv;
    argv.reserve(args.size() + 1);
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ) != 0) {
        std::perror("netarena: posix_spawn");
        return -1;
    }
    return pid;
}

int run_server(const Options& o, bool spawn) {
    const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
    net::EnetServer transport({.port = o.port, .max_clients = static_cast<std::size_t>(o.clients)});
    std::printf("server: listening on 127.0.0.1:%u\n", static_cast<unsigned>(transport.port()));
    std::fflush(stdout);
    std::vector<pid_t> children;
    if (spawn)
        for (int i = 1; i <= o.clients; ++i)
            if (const pid_t pid = spawn_client(o, transport.port(), i); pid > 0)
                children.push_back(pid);
    bool ok = children.size() == (spawn ? static_cast<std::size_t>(o.clients) : 0);
    if (ok) {
        Server server(o, transport);
        ok = server.run(deadline);
    }
    // The clients end when the server disconnects them; past the deadline they are stopped.
    for (const pid_t pid : children) {
        int status = 0;
        for (;;) {
            const pid_t r = waitpid(pid, &status, WNOHANG);
            if (r == pid) break;
            if (Clock::now() > deadline + 5s) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                break;
            }
            std::this_thread::sleep_for(10ms);
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "server: client process %d failed (status %d)\n",
                         static_cast<int>(pid), status);
            ok = false;
        }
    }
    std::printf("netarena: %s\n", ok ? "the hashes agree" : "FAILED");
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    try {
        switch (o.mode) {
            case Options::Mode::client: return run_client(o);
            case Options::Mode::server: return run_server(o, false);
            case Options::Mode::demo: return run_server(o, true);
        }
    } catch (const ts::Error& e) {
        std::fprintf(stderr, "netarena: %s: %s\n", std::string(ts::to_string(e.code())).c_str(),
                     e.what());
        return 1;
    }
    return 1;
}
