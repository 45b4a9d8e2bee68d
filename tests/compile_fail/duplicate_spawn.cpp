// Must not compile: the same component type twice in one spawn.
// expect: same component type twice
#include <tessera/world.hpp>

struct Position {
    float x, y;
};

int main() {
    tessera::World world;
    world.spawn(Position{}, Position{});
}
