// tessera.hpp alone: the umbrella gives every member of every header it includes.
#include <tessera/tessera.hpp>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
struct Likes {};
}  // namespace

int header_tessera() {
    ts::World w;
    const ts::Entity a = w.spawn(Pos{});
    const ts::Entity b = w.spawn();
    w.relate(a, Likes{}, b);
    w.insert_resource(Pos{2});
    w.send_event(Pos{3});
    ts::Observer o = w.on_add<Pos>([](ts::World&, ts::Entity) {});
    std::size_t n = 0;
    w.each([&](const Pos&) { ++n; });
    (void)w.accessor<Pos>().has(a);
    return n == 1 && w.related<Likes>(a, b) && w.resource<Pos>().x == 2 ? 0 : 1;
}
