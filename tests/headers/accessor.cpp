// accessor.hpp alone: Accessor's members, and World::accessor (world.hpp says to include
// accessor.hpp for it).
#include <tessera/accessor.hpp>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
}  // namespace

int header_accessor() {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1});
    const ts::Accessor<Pos> a = w.accessor<Pos>();
    const ts::Accessor<Pos> empty;
    if (!a.has(e) || empty.has(e) || a.get(e).x != 1 || a.try_get(e) == nullptr) return 1;
    a.get_mut(e).x = 2;
    if (a.try_get_mut(e) == nullptr || a.get(e).x != 2) return 2;
    return 0;
}
