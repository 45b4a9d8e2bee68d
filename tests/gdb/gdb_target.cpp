// The program the gdb pretty-printer test (tests/gdb/check_printers.py) debugs: a world with a
// few entities and components, a query that has run, and a breakpoint function that receives
// one of each kind the printers show. Built with -g -O0 so every local is there to print.
#include <tessera/tessera.hpp>

#include <cstdio>
#include <string>
#include <utility>

struct Position {
    float x = 0;
    float y = 0;
};
struct Velocity {
    float dx = 0;
    float dy = 0;
};
struct Health {
    int hp = 100;
};
struct Frozen {};  // a tag
namespace game {
struct Label {
    std::string text;
};
}  // namespace game

/// The test's breakpoint: gdb stops here and prints each argument.
[[gnu::noinline]] void inspect_here(tessera::World& world, tessera::Entity mover,
                                    tessera::Entity labelled, tessera::Entity dead,
                                    tessera::Entity none,
                                    tessera::Query<Position&, const Velocity&>& moving,
                                    tessera::Query<const Health&>& unrun,
                                    const tessera::ArchetypeInfo& info, tessera::World& moved) {
    // Something the optimiser can't drop, so the frame keeps every parameter.
    // (`moved` may only be destroyed or assigned to: only its address is taken.)
    std::printf("inspect_here: %zu entities, %zu indices, %zu rows, %p\n", world.count(),
                static_cast<std::size_t>(mover.index + labelled.index + dead.index + none.index),
                moving.count() + info.size + unrun.count(), static_cast<void*>(&moved));
}

int main() {
    tessera::World world;
    const tessera::Entity mover = world.spawn(Position{1.5f, 2.5f}, Velocity{0.25f, -1.0f});
    world.spawn(Position{3.0f, 4.0f}, Velocity{1.0f, 1.0f}, Frozen{});
    const tessera::Entity labelled =
        world.spawn(Position{7.0f, 8.0f}, Health{42}, game::Label{"hero"});
    const tessera::Entity dead = world.spawn(Health{1});
    world.despawn(dead);
    const tessera::Entity respawned = world.spawn(Health{2});  // reuses dead's index
    (void)respawned;
    auto moving = world.query<Position&, const Velocity&>();
    moving.each([](Position& p, const Velocity& v) {
        p.x += v.dx;
        p.y += v.dy;
    });
    auto unrun = world.query<const Health&>();  // made, never run: nothing matched yet
    const tessera::ArchetypeInfo info = world.archetype_of(labelled);
    tessera::World moved;
    tessera::World taker(std::move(moved));  // `moved` is left without state
    inspect_here(world, mover, labelled, dead, tessera::Entity::null(), moving, unrun, info, moved);
    return 0;
}
