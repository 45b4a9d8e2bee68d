// prefab.hpp, names.hpp and module.hpp alone: World's authoring members (world.hpp says which
// header each needs; module.hpp's import takes a Schedule, which schedule.hpp defines).
#include <tessera/module.hpp>
#include <tessera/names.hpp>
#include <tessera/prefab.hpp>
#include <tessera/schedule.hpp>

namespace ts = tessera;

namespace {
struct Hp {
    int v = 0;
};
struct Mod {
    void build(ts::World& w, ts::Schedule&) { w.spawn(Hp{1}); }
};
}  // namespace

int header_authoring() {
    ts::World w;
    const ts::Entity p = w.prefab(Hp{3});
    const ts::Entity e = w.instantiate(p, Hp{4});
    if (w.prefab_of(e) != p || w.get<Hp>(e).v != 4) return 1;
    if (w.instantiate_many(p, 2).size() != 2) return 2;
    w.set_name(e, "e");
    if (w.name(e) != "e" || w.lookup("e") != e) return 3;
    ts::Schedule s;
    w.import <Mod>(s);
    if (w.modules().size() != 1) return 4;
    return 0;
}
