// observer.hpp alone: Observer, Observers and World's observer members (world.hpp says to
// include observer.hpp for them).
#include <tessera/observer.hpp>

#include <utility>

namespace ts = tessera;

namespace {
struct Hp {
    int v = 0;
};
struct Mana {
    int v = 0;
};
}  // namespace

int header_observer() {
    ts::World w;
    int calls = 0;
    ts::Observer add = w.on_add<Hp>([&](ts::World&, ts::Entity, Hp&) { ++calls; });
    ts::Observer remove = w.on_remove<Hp>([&](ts::World&, ts::Entity) { ++calls; });
    ts::Observer set = w.on_set<Hp>([&](ts::World&, ts::Entity) { ++calls; });
    ts::Observer add2 = w.on_add<Hp, Mana>([&](ts::World&, ts::Entity) { ++calls; });
    ts::Observer remove2 = w.on_remove<Hp, Mana>([&](ts::World&, ts::Entity) { ++calls; });
    ts::Observer set2 = w.on_set<Hp, Mana>([&](ts::World&, ts::Entity) { ++calls; });
    ts::Observer spawn = w.on_spawn([&](ts::World&, ts::Entity) { ++calls; });
    ts::Observer despawn = w.on_despawn([&](ts::World&, ts::Entity) { ++calls; });
    const ts::Entity e = w.spawn(Hp{1});
    w.set(e, Hp{2});
    w.despawn(e);
    if (calls != 8) return 1;

    ts::Observers switches = w.observers();
    switches.enable(ts::Event::add, false);
    switches.enable<Hp>(ts::Event::set, false);
    switches.enable(ts::Event::set, ts::component_id<Mana>(), false);
    if (switches.is_enabled(ts::Event::add) || switches.is_enabled<Hp>(ts::Event::set)) return 2;
    if (switches.is_enabled(ts::Event::set, ts::component_id<Mana>())) return 3;
    if (!switches.has(ts::Event::spawn) || !switches.has<Hp>(ts::Event::add)) return 4;
    if (switches.count() != 11) return 5;
    if (switches.clear<Mana>(ts::Event::add) != 1 || switches.clear(ts::Event::despawn) != 1)
        return 6;

    ts::Observer moved(std::move(add));
    add = std::move(moved);
    if (!add.active() || !add) return 7;
    add.reset();
    const ts::Observer none;
    if (none || add.active()) return 8;
    return 0;
}
