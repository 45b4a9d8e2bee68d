// transform.hpp alone (it includes glm), with world.hpp to have a world to propagate and
// relation.hpp for the hierarchy it follows.
#include <tessera/relation.hpp>
#include <tessera/transform.hpp>
#include <tessera/world.hpp>

namespace ts = tessera;

int header_transform() {
    ts::World w;
    const ts::Entity parent = w.spawn(ts::LocalTransform{});
    const ts::Entity child = w.spawn(ts::LocalTransform{});
    w.relate(child, ts::ChildOf{}, parent);
    if (ts::propagate_transforms(w) != 2) return 1;
    if (!(w.get<ts::WorldTransform>(child) == ts::WorldTransform{})) return 2;
    if (!(w.get<ts::LocalTransform>(child) == ts::LocalTransform{})) return 3;
    // The schemas are declared here; reading one needs reflect.hpp (Schema is incomplete).
    const ts::Schema& local = ts::reflect<ts::LocalTransform>::schema();
    const ts::Schema& world = ts::reflect<ts::WorldTransform>::schema();
    return static_cast<const void*>(&world) != static_cast<const void*>(&local) ? 0 : 4;
}
