// The components of the replication fuzz target (net_fuzz.cpp) and the server world its seed
// corpus (corpus-net/) was made from (make_corpus.cpp). Messages name their components, so a
// mirror only gets past the component table for inputs that name these. Changing a type here
// makes the seeds stale: regenerate them with make_corpus (see CMakeLists.txt).
#pragma once

#include <tessera/net.hpp>
#include <tessera/tessera.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace netfuzz {

struct Pos {
    float x = 0, y = 0;
};
struct Tag {};
struct Label {
    std::string text;
    bool on = false;
};
struct Flags {
    bool a = false;
    std::uint8_t b = 0;
};

}  // namespace netfuzz

TESSERA_REFLECT(netfuzz::Label, text, on)
TESSERA_REFLECT(netfuzz::Flags, a, b)

namespace netfuzz {

/// Registers the types, so a mirror finds them by name.
inline void setup() {
    (void)tessera::component_id<Pos>();
    (void)tessera::component_id<Tag>();
    (void)tessera::component_id<Label>();
    (void)tessera::component_id<Flags>();
}

/// A server with a few entities, its replicator and one client; `messages` gets the full state
/// and then deltas after changes of each kind (spawn, set, add, remove, despawn, visibility).
inline std::vector<std::vector<std::byte>> seed_messages() {
    tessera::World w;
    tessera::net::Replicator rep(w);
    rep.replicate<Pos, Tag, Label, Flags>();
    const tessera::net::ClientId c = rep.connect();
    std::vector<tessera::Entity> es;
    for (int i = 0; i < 4; ++i) es.push_back(w.spawn(Pos{float(i), 1}, Flags{i % 2 == 0, 7}));
    es.push_back(w.spawn(Label{"caf\xc3\xa9", true}, Tag{}));
    std::vector<std::vector<std::byte>> out;
    auto send = [&] {
        out.push_back(rep.delta(c));
        rep.ack(c, w.tick() - 1);
    };
    send();
    w.set(es[0], Pos{9, 9});
    w.add(es[1], Label{"x", false});
    send();
    w.remove<Flags>(es[2]);
    w.add<Tag>(es[3]);
    w.despawn(es[4]);
    send();
    rep.set_visibility(c, tessera::net::Visibility::whitelist);
    rep.show(c, es[0]);
    send();
    rep.show(c, es[1]);
    rep.hide(c, es[0]);
    send();
    return out;
}

}  // namespace netfuzz
