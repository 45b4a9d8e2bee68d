// A downstream program using an installed tessera::net_enet (find_package(tessera COMPONENTS
// net_enet), or pkg-config tessera-net-enet): a server on a free loopback port.
#include <tessera/net/enet.hpp>

#include <cstdio>

int main() {
    tessera::net::EnetServer server({.port = 0, .max_clients = 1});
    tessera::net::EnetClient client("127.0.0.1", server.port());
    if (server.port() == 0 || client.connected()) {
        std::fprintf(stderr, "net_enet consumer: port %u\n", unsigned(server.port()));
        return 1;
    }
    std::printf("net_enet consumer: ok, listening on 127.0.0.1:%u\n", unsigned(server.port()));
    return 0;
}
