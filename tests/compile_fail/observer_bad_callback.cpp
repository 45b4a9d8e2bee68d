// Must not compile: an observer callback with parameters an observer can't pass.
// expect: an observer callback takes
#include <tessera/observer.hpp>

struct Health {
    int hp;
};

int main() {
    tessera::World world;
    tessera::Observer o = world.on_add<Health>([](int) {});
}
