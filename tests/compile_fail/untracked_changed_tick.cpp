// Must not compile: asking for the change ticks of a type that opted out of tracking.
// expect: track_changes = false
#include <tessera/world.hpp>

struct Cache {
    int v;
};
template <>
struct tessera::component_traits<Cache> {
    static constexpr bool track_changes = false;
};

int main() {
    tessera::World world;
    const tessera::Entity e = world.spawn(Cache{1});
    return static_cast<int>(world.changed_tick<Cache>(e));
}
