// tessera::net_enet (include/tessera/net/enet.hpp), over loopback in one process: the server
// and the client are polled in turn by the test's thread.
#include <tessera/error.hpp>
#include <tessera/net/enet.hpp>

#include "common/byte_pattern.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ts = tessera;
namespace net = tessera::net;
using namespace std::chrono_literals;

namespace {

using Bytes = std::vector<std::byte>;

using tessera::test::bytes_of;
using tessera::test::pattern;

struct Got {
    net::EnetEvent::Kind kind;
    net::PeerId peer;
    net::Channel channel;
    Bytes bytes;
};

Got copy(const net::EnetEvent& e) {
    return Got{e.kind, e.peer, e.channel, Bytes(e.bytes.begin(), e.bytes.end())};
}

// A server and its clients' events, pumped until a condition holds (or 5 s pass).
struct Loop {
    Loop(net::EnetServer& s, std::vector<net::EnetClient*> c) : server(s), clients(std::move(c)) {}

    net::EnetServer& server;
    std::vector<net::EnetClient*> clients;
    std::vector<Got> at_server;
    std::vector<std::vector<Got>> at_client = std::vector<std::vector<Got>>(8);

    void step() {
        server.poll(1ms, [&](const net::EnetEvent& e) { at_server.push_back(copy(e)); });
        for (std::size_t i = 0; i < clients.size(); ++i)
            clients[i]->poll(1ms,
                             [&](const net::EnetEvent& e) { at_client[i].push_back(copy(e)); });
    }
    bool until(const std::function<bool()>& done, std::chrono::milliseconds limit = 5000ms) {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (!done()) {
            if (std::chrono::steady_clock::now() > end) return false;
            step();
        }
        return true;
    }
    std::size_t count_at_server(net::EnetEvent::Kind k) const {
        std::size_t n = 0;
        for (const Got& g : at_server) n += g.kind == k ? 1 : 0;
        return n;
    }
};

// Runs `f` (a blocking client call: connect, disconnect) while a second thread polls the
// loop's server, which answers the client meanwhile; the server is not touched by this thread
// until `f` returns.
template <class F>
void with_server_polled(Loop& loop, F&& f) {
    std::atomic<bool> stop{false};
    std::thread poller([&] {
        while (!stop.load())
            loop.server.poll(1ms,
                             [&](const net::EnetEvent& e) { loop.at_server.push_back(copy(e)); });
    });
    try {
        f();
    } catch (...) {
        stop = true;
        poller.join();
        throw;
    }
    stop = true;
    poller.join();
}

// Connects `client` and returns the server's id for it.
net::PeerId connect(Loop& loop, net::EnetClient& client) {
    const std::size_t before = loop.count_at_server(net::EnetEvent::Kind::connected);
    with_server_polled(loop, [&] { client.connect(2000ms); });
    EXPECT_TRUE(
        loop.until([&] { return loop.count_at_server(net::EnetEvent::Kind::connected) > before; }));
    for (auto it = loop.at_server.rbegin(); it != loop.at_server.rend(); ++it)
        if (it->kind == net::EnetEvent::Kind::connected) return it->peer;
    return {};
}

template <class F>
ts::errc code_of(F&& f) {
    try {
        f();
    } catch (const ts::Error& e) {
        return e.code();
    }
    throw std::logic_error("no tessera::Error thrown");
}

}  // namespace

TEST(NetEnet, ChannelsHaveStableNamesAndIds) {
    EXPECT_STREQ(net::to_string(net::Channel::delta), "delta");
    EXPECT_STREQ(net::to_string(net::Channel::ack), "ack");
    EXPECT_STREQ(net::to_string(net::Channel::control), "control");
    EXPECT_EQ(static_cast<int>(net::Channel::delta), 0);
    EXPECT_EQ(static_cast<int>(net::Channel::ack), 1);
    EXPECT_EQ(static_cast<int>(net::Channel::control), 2);
    EXPECT_EQ(net::channel_count, 3u);
}

TEST(NetEnet, ServerOnPortZeroGetsAPortAndClientConnects) {
    net::EnetServer server({.port = 0, .max_clients = 4});
    ASSERT_NE(server.port(), 0);
    net::EnetClient client("127.0.0.1", server.port());
    EXPECT_FALSE(client.connected());
    Loop loop{server, {&client}};
    const net::PeerId peer = connect(loop, client);
    EXPECT_TRUE(client.connected());
    EXPECT_NE(peer.value, 0u);
    EXPECT_TRUE(server.connected(peer));
    EXPECT_EQ(server.client_count(), 1u);
    EXPECT_EQ(server.clients(), std::vector<net::PeerId>{peer});
    EXPECT_EQ(server.address(peer).rfind("127.0.0.1:", 0), 0u) << server.address(peer);
    EXPECT_EQ(client.address(), "127.0.0.1:" + std::to_string(server.port()));
    client.connect(10ms);  // connected already: nothing happens
    EXPECT_TRUE(client.connected());
}

TEST(NetEnet, MessagesTravelOnEveryChannelBothWays) {
    net::EnetServer server;
    net::EnetClient client("localhost", server.port());
    Loop loop{server, {&client}};
    const net::PeerId peer = connect(loop, client);

    server.send(peer, bytes_of("delta 1"), net::Channel::delta);
    server.send(peer, bytes_of("control 1"), net::Channel::control);
    server.send(peer, {}, net::Channel::delta);  // empty messages are messages too
    client.send(bytes_of("ack 7"), net::Channel::ack);
    client.send(bytes_of("hello"), net::Channel::control);
    ASSERT_TRUE(
        loop.until([&] { return loop.at_client[0].size() >= 3 && loop.at_server.size() >= 3; }));

    std::vector<std::pair<net::Channel, Bytes>> to_client;
    for (const Got& g : loop.at_client[0]) {
        EXPECT_EQ(g.kind, net::EnetEvent::Kind::received);
        EXPECT_EQ(g.peer, net::PeerId{});
        to_client.emplace_back(g.channel, g.bytes);
    }
    EXPECT_EQ(to_client.size(), 3u);
    EXPECT_NE(std::find(to_client.begin(), to_client.end(),
                        std::pair{net::Channel::delta, bytes_of("delta 1")}),
              to_client.end());
    EXPECT_NE(std::find(to_client.begin(), to_client.end(),
                        std::pair{net::Channel::control, bytes_of("control 1")}),
              to_client.end());
    EXPECT_NE(
        std::find(to_client.begin(), to_client.end(), std::pair{net::Channel::delta, Bytes{}}),
        to_client.end());

    // at_server[0] is the connection.
    ASSERT_EQ(loop.at_server.size(), 3u);
    for (std::size_t i = 1; i < 3; ++i) {
        EXPECT_EQ(loop.at_server[i].kind, net::EnetEvent::Kind::received);
        EXPECT_EQ(loop.at_server[i].peer, peer);
    }
    const bool ack_first = loop.at_server[1].channel == net::Channel::ack;
    const Got& ack = loop.at_server[ack_first ? 1 : 2];
    const Got& hello = loop.at_server[ack_first ? 2 : 1];
    EXPECT_EQ(ack.channel, net::Channel::ack);
    EXPECT_EQ(ack.bytes, bytes_of("ack 7"));
    EXPECT_EQ(hello.channel, net::Channel::control);
    EXPECT_EQ(hello.bytes, bytes_of("hello"));

    const net::EnetStats s = server.stats();
    EXPECT_EQ(s.messages_sent, 3u);
    EXPECT_EQ(s.bytes_sent, 16u);
    EXPECT_EQ(s.messages_received, 2u);
    EXPECT_EQ(s.bytes_received, 10u);
    EXPECT_GT(s.wire_bytes_sent, s.bytes_sent);  // ENet's headers, the connection's commands
    const net::EnetStats c = client.stats();
    EXPECT_EQ(c.messages_sent, 2u);
    EXPECT_EQ(c.messages_received, 3u);
    EXPECT_EQ(c.bytes_received, 16u);
}

TEST(NetEnet, LargeMessagesAreFragmentedAndReassembled) {
    net::EnetServer server;
    net::EnetClient client("127.0.0.1", server.port());
    Loop loop{server, {&client}};
    const net::PeerId peer = connect(loop, client);

    // Far over the 1,400-byte MTU: hundreds of fragments each.
    const Bytes big_delta = pattern(1u << 20, 1);
    const Bytes big_control = pattern(300'000, 2);
    const Bytes big_ack = pattern(200'000, 3);
    server.send(peer, big_delta, net::Channel::delta);
    server.send(peer, big_control, net::Channel::control);
    client.send(big_ack, net::Channel::ack);
    ASSERT_TRUE(loop.until(
        [&] { return loop.at_client[0].size() >= 2 && loop.at_server.size() >= 2; }, 10000ms));
    ASSERT_EQ(loop.at_client[0].size(), 2u);
    for (const Got& g : loop.at_client[0]) {
        if (g.channel == net::Channel::delta) {
            EXPECT_TRUE(g.bytes == big_delta) << g.bytes.size() << " bytes";
        } else {
            EXPECT_EQ(g.channel, net::Channel::control);
            EXPECT_TRUE(g.bytes == big_control) << g.bytes.size() << " bytes";
        }
    }
    EXPECT_EQ(loop.at_server[1].channel, net::Channel::ack);
    EXPECT_TRUE(loop.at_server[1].bytes == big_ack) << loop.at_server[1].bytes.size() << " bytes";
    EXPECT_GT(server.stats().wire_bytes_sent, big_delta.size() + big_control.size());
}

TEST(NetEnet, UnreliableChannelIsSequenced) {
    net::EnetServer server;
    net::EnetClient client("127.0.0.1", server.port());
    Loop loop{server, {&client}};
    const net::PeerId peer = connect(loop, client);
    for (std::uint32_t i = 1; i <= 200; ++i) {
        Bytes b(sizeof i);
        std::memcpy(b.data(), &i, sizeof i);
        server.send(peer, b, net::Channel::delta);
        if (i % 20 == 0) loop.step();
    }
    server.send(peer, bytes_of("end"), net::Channel::control);
    ASSERT_TRUE(loop.until([&] {
        return !loop.at_client[0].empty() &&
               loop.at_client[0].back().channel == net::Channel::control;
    }));
    std::uint32_t last = 0;
    std::size_t deltas = 0;
    for (const Got& g : loop.at_client[0]) {
        if (g.channel != net::Channel::delta) continue;
        ASSERT_EQ(g.bytes.size(), sizeof last);
        std::uint32_t i = 0;
        std::memcpy(&i, g.bytes.data(), sizeof i);
        EXPECT_GT(i, last) << "an older delta after a newer one";
        last = i;
        ++deltas;
    }
    EXPECT_GT(deltas, 0u);
}

TEST(NetEnet, ClientDisconnectIsReportedToServer) {
    net::EnetServer server;
    net::EnetClient client("127.0.0.1", server.port());
    Loop loop{server, {&client}};
    const net::PeerId peer = connect(loop, client);
    client.send(bytes_of("last words"), net::Channel::control);
    ASSERT_TRUE(loop.until([&] { return loop.at_server.size() == 2; }));
    EXPECT_EQ(loop.at_server[1].bytes, bytes_of("last words"));
    loop.clients.clear();  // disconnect() services the client itself
    with_server_polled(loop, [&] { client.disconnect(2000ms); });  // answered: graceful
    EXPECT_FALSE(client.connected());
    EXPECT_EQ(client.poll(1ms, [](const net::EnetEvent&) {}), 0u);  // unconnected: nothing
    ASSERT_TRUE(
        loop.until([&] { return loop.count_at_server(net::EnetEvent::Kind::disconnected) == 1; }));
    EXPECT_EQ(loop.at_server.back().peer, peer);
    EXPECT_FALSE(server.connected(peer));
    EXPECT_EQ(server.client_count(), 0u);
    EXPECT_TRUE(server.clients().empty());
    EXPECT_EQ(code_of([&] { server.send(peer, bytes_of("x"), net::Channel::delta); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(code_of([&] { client.send(bytes_of("x"), net::Channel::ack); }), ts::errc::network);
}

TEST(NetEnet, ServerDisconnectIsReportedToBothSides) {
    net::EnetServer server;
    net::EnetClient client("127.0.0.1", server.port());
    Loop loop{server, {&client}};
    const net::PeerId peer = connect(loop, client);
    server.send(peer, bytes_of("bye"), net::Channel::control);
    server.disconnect(peer);
    EXPECT_FALSE(server.connected(peer));  // at once
    EXPECT_EQ(server.client_count(), 0u);
    EXPECT_EQ(code_of([&] { server.disconnect(peer); }), ts::errc::invalid_argument);
    ASSERT_TRUE(loop.until([&] {
        return !loop.at_client[0].empty() &&
               loop.at_client[0].back().kind == net::EnetEvent::Kind::disconnected &&
               loop.count_at_server(net::EnetEvent::Kind::disconnected) == 1;
    }));
    // What was queued before the disconnect still arrived, first.
    ASSERT_EQ(loop.at_client[0].size(), 2u);
    EXPECT_EQ(loop.at_client[0][0].bytes, bytes_of("bye"));
    EXPECT_FALSE(client.connected());
    EXPECT_EQ(loop.at_server.back().peer, peer);
}

TEST(NetEnet, DestroyedServerIsReportedToClient) {
    std::optional<net::EnetServer> server(std::in_place);
    net::EnetClient client("127.0.0.1", server->port());
    {
        Loop loop{*server, {&client}};
        connect(loop, client);
    }
    server.reset();
    bool gone = false;
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (!gone && std::chrono::steady_clock::now() < end)
        client.poll(5ms, [&](const net::EnetEvent& e) {
            gone = gone || e.kind == net::EnetEvent::Kind::disconnected;
        });
    EXPECT_TRUE(gone);
    EXPECT_FALSE(client.connected());
}

TEST(NetEnet, PeerIdsAreNotReused) {
    net::EnetServer server({.port = 0, .max_clients = 1});
    Loop loop{server, {}};
    net::PeerId first;
    {
        net::EnetClient client("127.0.0.1", server.port());
        first = connect(loop, client);
        client.disconnect(20ms);
    }
    ASSERT_TRUE(
        loop.until([&] { return loop.count_at_server(net::EnetEvent::Kind::disconnected) == 1; }));
    net::EnetClient again("127.0.0.1", server.port());
    const net::PeerId second = connect(loop, again);
    EXPECT_NE(second, first);  // the same slot (max_clients 1), another id
    EXPECT_FALSE(server.connected(first));
    EXPECT_TRUE(server.connected(second));
}

TEST(NetEnet, FullServerTimesOutThenAcceptsAfterALeave) {
    net::EnetServer server({.port = 0, .max_clients = 1});
    net::EnetClient a("127.0.0.1", server.port());
    Loop loop{server, {&a}};
    connect(loop, a);
    net::EnetClient b("127.0.0.1", server.port());
    // b's attempt gets no answer, though the server is polled: it has no free peer.
    with_server_polled(loop,
                       [&] { EXPECT_EQ(code_of([&] { b.connect(300ms); }), ts::errc::network); });
    EXPECT_FALSE(b.connected());
    loop.step();
    a.disconnect(20ms);
    loop.clients.clear();
    ASSERT_TRUE(
        loop.until([&] { return loop.count_at_server(net::EnetEvent::Kind::disconnected) == 1; }));
    // The failed connect left b as it was: it can try again.
    loop.clients = {&b};
    const net::PeerId peer = connect(loop, b);
    EXPECT_TRUE(b.connected());
    EXPECT_TRUE(server.connected(peer));
}

TEST(NetEnet, ConnectToNoServerTimesOut) {
    std::uint16_t port = 0;
    {
        net::EnetServer gone;
        port = gone.port();
    }
    net::EnetClient client("127.0.0.1", port);
    const auto start = std::chrono::steady_clock::now();
    try {
        client.connect(200ms);
        FAIL() << "connected to nobody";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::network);
        EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)),
                  std::string::npos)
            << e.what();
    }
    EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
    EXPECT_FALSE(client.connected());
}

TEST(NetEnet, BindingATakenPortIsANetworkError) {
    net::EnetServer first;
    try {
        net::EnetServer second({.port = first.port()});
        FAIL() << "bound a taken port";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::network);
        EXPECT_NE(std::string(e.what()).find(std::to_string(first.port())), std::string::npos)
            << e.what();
    }
}

TEST(NetEnet, BadArgumentsAreInvalid) {
    EXPECT_EQ(code_of([] { net::EnetServer s({.port = 0, .max_clients = 0}); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(code_of([] { net::EnetServer s({.port = 0, .max_clients = 4096}); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(
        code_of([] { net::EnetServer s({.port = 0, .max_clients = 1, .host = "bad host!"}); }),
        ts::errc::invalid_argument);
    EXPECT_EQ(code_of([] { net::EnetClient c("bad host!", 4000); }), ts::errc::invalid_argument);
    EXPECT_EQ(code_of([] { net::EnetClient c("127.0.0.1", 0); }), ts::errc::invalid_argument);
    EXPECT_EQ(code_of([] { net::EnetClient c("", 4000); }), ts::errc::invalid_argument);

    net::EnetServer server;
    net::EnetClient client("127.0.0.1", server.port());
    EXPECT_EQ(code_of([&] { client.send(bytes_of("x"), net::Channel::ack); }), ts::errc::network);
    EXPECT_EQ(client.poll(1ms, [](const net::EnetEvent&) {}), 0u);
    const net::PeerId nobody{(5u << 12) | 0u};
    try {
        server.send(nobody, bytes_of("x"), net::Channel::delta);
        FAIL() << "sent to nobody";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("peer " + std::to_string(nobody.value)),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(code_of([&] { server.send(net::PeerId{}, {}, net::Channel::delta); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(code_of([&] { server.disconnect(nobody); }), ts::errc::invalid_argument);
    EXPECT_EQ(code_of([&] { (void)server.address(nobody); }), ts::errc::invalid_argument);
    EXPECT_EQ(code_of([&] { (void)server.round_trip(nobody); }), ts::errc::invalid_argument);
    EXPECT_FALSE(server.connected(nobody));

    Loop loop{server, {&client}};
    const net::PeerId peer = connect(loop, client);
    EXPECT_EQ(code_of([&] { server.send(peer, {}, static_cast<net::Channel>(3)); }),
              ts::errc::invalid_argument);
    const Bytes too_big(32u * 1024 * 1024 + 1);
    EXPECT_EQ(code_of([&] { server.send(peer, too_big, net::Channel::delta); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(code_of([&] { client.send(too_big, net::Channel::ack); }),
              ts::errc::invalid_argument);
    EXPECT_EQ(server.stats().messages_sent, 0u);  // the failed sends sent nothing
    EXPECT_EQ(client.stats().messages_sent, 0u);
}

TEST(NetEnet, MovedServerAndClientKeepTheirConnection) {
    net::EnetServer first;
    net::EnetClient first_client("127.0.0.1", first.port());
    Loop loop0{first, {&first_client}};
    const net::PeerId peer = connect(loop0, first_client);

    net::EnetServer server(std::move(first));
    net::EnetClient client(std::move(first_client));
    EXPECT_EQ(first.port(), 0);  // NOLINT(bugprone-use-after-move): moved-from is specified
    EXPECT_EQ(first.client_count(), 0u);     // NOLINT(bugprone-use-after-move)
    EXPECT_FALSE(first_client.connected());  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(code_of([&] {
                  first.send(peer, {}, net::Channel::delta);
              }),  // NOLINT(bugprone-use-after-move)
              ts::errc::invalid_argument);
    EXPECT_EQ(code_of([&] {
                  first_client.poll(1ms, [](const net::EnetEvent&) {});
              }),  // NOLINT(bugprone-use-after-move)
              ts::errc::invalid_argument);

    EXPECT_TRUE(server.connected(peer));
    EXPECT_TRUE(client.connected());
    Loop loop{server, {&client}};
    server.send(peer, bytes_of("after the move"), net::Channel::control);
    ASSERT_TRUE(loop.until([&] { return !loop.at_client[0].empty(); }));
    EXPECT_EQ(loop.at_client[0][0].bytes, bytes_of("after the move"));

    net::EnetServer other;
    other = std::move(server);  // the old `other` closes; `server`'s connection carries on
    other.send(peer, bytes_of("assigned"), net::Channel::control);
    Loop loop2{other, {&client}};
    ASSERT_TRUE(loop2.until([&] { return !loop2.at_client[0].empty(); }));
    EXPECT_EQ(loop2.at_client[0][0].bytes, bytes_of("assigned"));
}

TEST(NetEnet, ThrowingCallbackLeavesLaterEventsQueued) {
    net::EnetServer server;
    net::EnetClient client("127.0.0.1", server.port());
    Loop loop{server, {&client}};
    const net::PeerId peer = connect(loop, client);
    for (const char* m : {"one", "two", "three"})
        server.send(peer, bytes_of(m), net::Channel::control);
    server.flush();
    // Wait (without taking events) until all three are in: one poll waits for the first,
    // then the rest are drained; a callback that throws on the first stops there.
    std::vector<Bytes> seen;
    bool thrown = false;
    const auto end = std::chrono::steady_clock::now() + 5s;
    while (seen.size() < 3 && std::chrono::steady_clock::now() < end) {
        try {
            client.poll(5ms, [&](const net::EnetEvent& e) {
                seen.emplace_back(e.bytes.begin(), e.bytes.end());
                if (!thrown) {
                    thrown = true;
                    throw std::runtime_error("callback failed");
                }
            });
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "callback failed");
        }
        server.poll(0ms, [](const net::EnetEvent&) {});
    }
    EXPECT_TRUE(thrown);
    ASSERT_EQ(seen.size(), 3u);  // the one it threw on, then the other two, in order
    EXPECT_EQ(seen[0], bytes_of("one"));
    EXPECT_EQ(seen[1], bytes_of("two"));
    EXPECT_EQ(seen[2], bytes_of("three"));
    EXPECT_TRUE(client.connected());
}

TEST(NetEnet, ServesSeveralClients) {
    net::EnetServer server({.port = 0, .max_clients = 3});
    net::EnetClient a("127.0.0.1", server.port());
    net::EnetClient b("127.0.0.1", server.port());
    Loop loop{server, {&a, &b}};
    const net::PeerId pa = connect(loop, a);
    const net::PeerId pb = connect(loop, b);
    EXPECT_NE(pa, pb);
    EXPECT_EQ(server.client_count(), 2u);
    server.send(pa, bytes_of("to a"), net::Channel::control);
    server.send(pb, bytes_of("to b"), net::Channel::control);
    a.send(bytes_of("from a"), net::Channel::ack);
    b.send(bytes_of("from b"), net::Channel::ack);
    ASSERT_TRUE(loop.until([&] {
        return !loop.at_client[0].empty() && !loop.at_client[1].empty() &&
               loop.at_server.size() >= 4;
    }));
    EXPECT_EQ(loop.at_client[0][0].bytes, bytes_of("to a"));
    EXPECT_EQ(loop.at_client[1][0].bytes, bytes_of("to b"));
    for (const Got& g : loop.at_server) {
        if (g.kind != net::EnetEvent::Kind::received) continue;
        EXPECT_EQ(g.bytes, bytes_of(g.peer == pa ? "from a" : "from b"));
    }
    EXPECT_GE(server.round_trip(pa).count(), 0);
}
