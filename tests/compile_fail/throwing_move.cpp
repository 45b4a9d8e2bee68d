// Must not compile: a component whose move constructor may throw.
// expect: nothrow move constructible
#include <tessera/world.hpp>

struct Fragile {
    Fragile() = default;
    Fragile(Fragile&&) {}  // not noexcept
};

int main() {
    tessera::World world;
    world.spawn(Fragile{});
}
