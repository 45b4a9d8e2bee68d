// A type without `void build(World&, Schedule&)` is no module: import says what it needs.
// expect: World::import<M> needs a module
#include <tessera/module.hpp>
#include <tessera/schedule.hpp>

struct NotAModule {
    int build = 0;
};

int main() {
    tessera::World world;
    tessera::Schedule schedule;
    world.import <NotAModule>(schedule);
}
