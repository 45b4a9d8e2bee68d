// Must not compile: a relation type that declares required components.
// expect: a relation type can't declare required components
#include <tessera/relation.hpp>

struct Speed {
    float v = 0;
};
struct Follows {};
template <>
struct tessera::component_traits<Follows> {
    using required = tessera::type_list<Speed>;
};

int main() {
    tessera::World world;
    const tessera::Entity a = world.spawn();
    const tessera::Entity b = world.spawn();
    world.relate(a, Follows{}, b);
}
