// resource.hpp alone: World's resource members (world.hpp says to include resource.hpp).
#include <tessera/resource.hpp>

#include <utility>

namespace ts = tessera;

namespace {
struct Clock {
    double t = 0;
};
struct Gravity {
    float g = 9.8f;
};
}  // namespace

int header_resource() {
    ts::World w;
    w.insert_resource(Clock{1});
    w.insert_resource(Gravity{});
    const ts::World& cw = w;
    if (w.resource<Clock>().t != 1 || cw.resource<Gravity>().g != 9.8f) return 1;
    auto [clock, gravity] = w.resource<Clock, Gravity>();
    auto [cclock, cgravity] = cw.resource<Clock, Gravity>();
    clock.t = gravity.g + cgravity.g + cclock.t;
    if (w.try_resource<Clock>() == nullptr || cw.try_resource<Gravity>() == nullptr) return 2;
    if (!w.has_resource<Clock>() || !w.remove_resource<Clock>() || w.has_resource<Clock>())
        return 3;
    return 0;
}
