// One side of the net_enet_two_processes test (run.cmake runs `peer server | peer client`).
//
//   server: binds a free port on 127.0.0.1 and prints it (one line on stdout); waits for one
//           client; checks its "hello" (control), its 200,000-byte message (control, many
//           fragments) and at least one of its 50 small acks (unreliable); answers with a
//           500,000-byte message on the delta channel and "done" on control; exits 0 once the
//           client has disconnected.
//   client: reads the port from stdin, connects, sends the above, checks the answer byte for
//           byte, disconnects gracefully and exits 0.
// Either side exits 1 on a wrong message and 2 when 20 s pass without the exchange finishing.
#include <tessera/error.hpp>
#include <tessera/net/enet.hpp>

#include "common/byte_pattern.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <span>
#include <string>
#include <vector>

namespace net = tessera::net;
using namespace std::chrono_literals;

namespace {

using Bytes = std::vector<std::byte>;

using tessera::test::bytes_of;
using tessera::test::pattern;

bool same(std::span<const std::byte> a, const Bytes& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

const auto deadline = std::chrono::steady_clock::now() + 20s;
bool late() {
    return std::chrono::steady_clock::now() > deadline;
}

int fail(const char* side, const std::string& why) {
    std::fprintf(stderr, "%s: %s\n", side, why.c_str());
    return 1;
}

int run_server() {
    net::EnetServer server({.port = 0, .max_clients = 1});
    std::printf("%u\n", static_cast<unsigned>(server.port()));
    std::fflush(stdout);
    const Bytes big_in = pattern(200'000, 7);
    const Bytes big_out = pattern(500'000, 8);
    bool hello = false;
    bool big = false;
    bool answered = false;
    bool gone = false;
    int acks = 0;
    std::string error;
    while (!gone && error.empty()) {
        if (late()) {
            fail("server", "timed out");
            return 2;
        }
        server.poll(10ms, [&](const net::EnetEvent& e) {
            switch (e.kind) {
                case net::EnetEvent::Kind::connected: break;
                case net::EnetEvent::Kind::disconnected: gone = true; break;
                case net::EnetEvent::Kind::received:
                    if (e.channel == net::Channel::ack) {
                        ++acks;
                    } else if (e.channel == net::Channel::control && !hello) {
                        hello = same(e.bytes, bytes_of("hello"));
                        if (!hello) error = "the first control message is not hello";
                    } else if (e.channel == net::Channel::control) {
                        big = same(e.bytes, big_in);
                        if (!big) error = "the big message differs";
                    } else {
                        error = "a message on the delta channel from a client";
                    }
                    if (hello && big && acks > 0 && !answered) {
                        server.send(e.peer, big_out, net::Channel::delta);
                        server.send(e.peer, bytes_of("done"), net::Channel::control);
                        answered = true;
                    }
                    break;
            }
        });
    }
    if (!error.empty()) return fail("server", error);
    if (!answered) return fail("server", "the client left before the exchange finished");
    std::fprintf(stderr, "server: ok (%d of 50 acks arrived; %llu bytes on the wire)\n", acks,
                 static_cast<unsigned long long>(server.stats().wire_bytes_sent));
    return 0;
}

int run_client() {
    unsigned port = 0;
    if (!(std::cin >> port) || port == 0 || port > 65535) return fail("client", "no port on stdin");
    net::EnetClient client("127.0.0.1", static_cast<std::uint16_t>(port));
    client.connect(5000ms);
    client.send(bytes_of("hello"), net::Channel::control);
    for (int i = 0; i < 50; ++i)
        client.send(bytes_of("ack " + std::to_string(i)), net::Channel::ack);
    client.send(pattern(200'000, 7), net::Channel::control);
    const Bytes big_out = pattern(500'000, 8);
    bool big = false;
    bool done = false;
    std::string error;
    while (!done && error.empty()) {
        if (late()) {
            fail("client", "timed out");
            return 2;
        }
        client.poll(10ms, [&](const net::EnetEvent& e) {
            if (e.kind == net::EnetEvent::Kind::disconnected) {
                error = "the server disconnected";
            } else if (e.channel == net::Channel::delta) {
                big = same(e.bytes, big_out);
                if (!big) error = "the big delta differs";
            } else if (e.channel == net::Channel::control) {
                done = same(e.bytes, bytes_of("done"));
                if (!done) error = "unexpected control message";
            }
        });
    }
    if (!error.empty()) return fail("client", error);
    // Both were sent before "done" on channels that deliver the big one whole (reliable
    // fragments); "done" is reliable too but on another channel, so give delta a moment.
    while (!big && !late())
        client.poll(10ms, [&](const net::EnetEvent& e) {
            if (e.kind == net::EnetEvent::Kind::received && e.channel == net::Channel::delta)
                big = same(e.bytes, big_out);
        });
    if (!big) return fail("client", "the big delta did not arrive");
    client.disconnect(2000ms);
    std::printf("client: ok (%llu bytes received)\n",
                static_cast<unsigned long long>(client.stats().bytes_received));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    try {
        if (mode == "server") return run_server();
        if (mode == "client") return run_client();
    } catch (const tessera::Error& e) {
        std::fprintf(stderr, "%s: %s: %s\n", mode.c_str(),
                     std::string(tessera::to_string(e.code())).c_str(), e.what());
        return 1;
    }
    std::fprintf(stderr, "usage: net_enet_peer server|client\n");
    return 64;
}
