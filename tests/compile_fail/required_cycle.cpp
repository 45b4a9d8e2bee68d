// Must not compile: two components that require each other.
// expect: required forms a cycle
#include <tessera/world.hpp>

struct Egg {};
struct Hen {};
template <>
struct tessera::component_traits<Egg> {
    using required = tessera::type_list<Hen>;
};
template <>
struct tessera::component_traits<Hen> {
    using required = tessera::type_list<Egg>;
};

int main() {
    tessera::World world;
    world.spawn(Egg{});
}
