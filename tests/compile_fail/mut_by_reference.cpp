// A Mut<T> term is taken by value: a reference (or a pointer) to one would name Mut<T> itself
// as a component.
// expect: take a Mut<T> term by value
#include <tessera/tessera.hpp>

struct Health {
    int hp = 0;
};

int main() {
    tessera::World world;
    world.query<const tessera::Mut<Health>&>().each([](const tessera::Mut<Health>&) {});
}
