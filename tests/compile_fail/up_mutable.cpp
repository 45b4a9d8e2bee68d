// An Up term reads an ancestor's component: it is read-only, Up<T&> is refused.
// expect: an Up term is read-only
#include <tessera/traverse.hpp>

#include <tessera/query.hpp>

struct Armor {
    int value = 0;
};

int main() {
    tessera::World world;
    world.query<tessera::Up<Armor&>>().each([](Armor&) {});
}
