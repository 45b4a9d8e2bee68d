// traverse.hpp alone: it includes query.hpp and relation.hpp (an Up term follows ChildOf).
#include <tessera/traverse.hpp>

namespace ts = tessera;

namespace {
struct Armor {
    int value = 0;
};
}  // namespace

int header_traverse() {
    ts::World w;
    const ts::Entity parent = w.spawn(Armor{3});
    const ts::Entity child = w.spawn();
    w.relate(child, ts::ChildOf{}, parent);
    int seen = 0;
    auto q = w.query<ts::Entity, ts::Up<const Armor&>>().cascade();
    q.each([&](ts::Entity e, const Armor& a) { seen += e == child ? a.value : 100; });
    return seen == 3 ? 0 : 1;
}
