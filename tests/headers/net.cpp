// net.hpp: Replicator and Mirror (and rollback.hpp, which it includes). World is from world.hpp.
#include <tessera/net.hpp>
#include <tessera/world.hpp>

#include <cstdint>
#include <vector>

namespace ts = tessera;

namespace {
struct Spot {
    int x = 0;
};
struct Marked {};
}  // namespace

int header_net() {
    ts::World server;
    ts::net::Replicator rep(server);
    rep.replicate<Spot, Marked>();
    const ts::Entity e = server.spawn(Spot{3}, Marked{});
    const ts::net::ClientId c = rep.connect();
    ts::World client;
    ts::net::Mirror mirror(client);
    rep.ack(c, mirror.apply(rep.delta(c)));
    const ts::Entity l = mirror.local(e);
    if (!l || mirror.remote(l) != e) return 1;
    if (client.get<Spot>(l).x != 3 || !client.has<Marked>(l)) return 2;
    server.set(e, Spot{4});
    rep.ack(c, mirror.apply(rep.delta(c)));
    if (client.get<Spot>(l).x != 4 || rep.log_size() != 0) return 3;
    return 0;
}
