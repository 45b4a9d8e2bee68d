// hello: a tour of the tessera World API.
//
// Builds a few hundred entities with Position / Velocity / Health and a Frozen tag, despawns
// some, adds and removes components, runs a few ticks of a tiny simulation by hand (queries come
// later), then prints what the world holds: counts, archetypes, the component sets, a few
// entities, and which entities were written since a given tick.
#include <tessera/tessera.hpp>

#include <cstddef>
#include <cstdint>
#include <iomanip>
#include <iostream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace ts = tessera;

namespace {

struct Position {
    float x = 0;
    float y = 0;
    bool operator==(const Position&) const = default;
};

struct Velocity {
    float dx = 0;
    float dy = 0;
};

struct Health {
    int hp = 100;
    int max = 100;
    bool operator==(const Health&) const = default;
};

struct Frozen {};  // a tag: no data, no column bytes

/// "{Position, Velocity, Frozen}": the component set of `e`, from `has<T>`.
std::string component_set(ts::World& world, ts::Entity e) {
    std::string set;
    auto add_name = [&set](bool present, const char* name) {
        if (present) {
            set += set.empty() ? "" : ", ";
            set += name;
        }
    };
    add_name(world.has<Position>(e), "Position");
    add_name(world.has<Velocity>(e), "Velocity");
    add_name(world.has<Health>(e), "Health");
    add_name(world.has<Frozen>(e), "Frozen");
    return "{" + set + "}";
}

/// "index:generation", as a string so it can be padded.
std::string handle(ts::Entity e) {
    std::ostringstream out;
    out << e;
    return out.str();
}

void describe(ts::World& world, ts::Entity e) {
    std::cout << "    entity " << std::setw(7) << std::left << handle(e) << std::right;
    if (!world.is_alive(e)) {
        std::cout << " (dead)\n";
        return;
    }
    std::cout << std::fixed << std::setprecision(1);
    if (const Position* p = world.try_get<Position>(e)) {
        std::cout << " Position(" << p->x << ", " << p->y << ")";
    }
    if (const Velocity* v = world.try_get<Velocity>(e)) {
        std::cout << " Velocity(" << v->dx << ", " << v->dy << ")";
    }
    if (const Health* h = world.try_get<Health>(e)) {
        std::cout << " Health " << h->hp << "/" << h->max;
    }
    if (world.has<Frozen>(e)) {
        std::cout << " Frozen";
    }
    std::cout << "\n";
}

/// One frame of a hand-written "movement" and "poison" system (queries come in a later version).
void step(ts::World& world, const std::vector<ts::Entity>& all) {
    for (ts::Entity e : all) {
        if (world.has<Position, Velocity>(e) && !world.has<Frozen>(e)) {
            const Velocity v = world.get<Velocity>(e);
            Position& p = world.get_mut<Position>(e);  // marks Position changed at this tick
            p.x += v.dx;
            p.y += v.dy;
        }
        if (world.has<Health>(e) && e.index % 5 == 0) {
            Health h = world.get<Health>(e);
            h.hp = h.hp > 10 ? h.hp - 10 : 0;
            world.set_if_changed(e, h);  // stamps only when the value really changes
        }
    }
}

}  // namespace

int main() {
    ts::World world;
    std::cout << "tessera hello\n\n";

    // 1. Spawning: 300 movers in one batch, 100 one by one, and 20 bare entities.
    std::span<const ts::Entity> batch =
        world.spawn_many(300, [](std::size_t i, Position& p, Velocity& v) {
            p = {static_cast<float>(i), 0.0f};
            v = {1.0f, 0.5f * static_cast<float>(i % 3)};
        });
    std::vector<ts::Entity> all(batch.begin(), batch.end());  // the span dies at the next spawn
    for (int i = 0; i < 100; ++i) {
        all.push_back(world.spawn(Position{static_cast<float>(-i), 10.0f}, Health{100, 100}));
    }
    for (int i = 0; i < 20; ++i) {
        all.push_back(world.spawn());
    }
    std::cout << "spawned " << world.count() << " entities in " << world.archetype_count()
              << " archetypes\n";

    // Change tracking is lazy: reading a tick turns it on for that type in this world.
    const std::uint64_t start_tick = world.tick();
    (void)world.changed_tick<Position>(all.front());
    (void)world.changed_tick<Health>(all[300]);

    // 2. Structural changes: add Health to every third mover, freeze every tenth entity (a tag),
    //    take Velocity away from frozen movers, give the bare ones a Position, despawn every
    //    seventh.
    for (std::size_t i = 0; i < all.size(); ++i) {
        const ts::Entity e = all[i];
        if (i < 300 && i % 3 == 0) {
            world.add(e, Health{80, 100});
        }
        if (i % 10 == 0) {
            world.add<Frozen>(e);
            world.remove<Velocity>(e);
        }
        if (i >= 400) {
            world.add(e, Position{0.0f, -5.0f});
        }
    }
    std::size_t despawned = 0;
    for (std::size_t i = 0; i < all.size(); i += 7) {
        despawned += world.despawn(all[i]) ? 1 : 0;
    }
    std::cout << "despawned " << despawned << "; " << world.count() << " alive, "
              << world.archetype_count() << " archetypes (never destroyed, so empty ones stay)\n";

    // 3. Five frames of simulation.
    std::uint64_t before_last_frame = 0;
    for (int frame = 0; frame < 5; ++frame) {
        before_last_frame = world.tick();
        world.advance_tick();
        step(world, all);
    }
    // A write after the frames, at the current tick.
    const ts::Entity chosen = all[1];
    world.set(chosen, Position{42.0f, 42.0f});

    // 4. What the world holds now.
    std::cout << "\nafter 5 frames (tick " << start_tick << " -> " << world.tick() << "):\n";
    std::cout << "  live entities:  " << world.count() << "\n";
    std::cout << "  archetypes:     " << world.archetype_count() << "\n";

    std::map<std::string, std::size_t> sets;
    const std::vector<ts::Entity> live = world.entities();
    for (ts::Entity e : live) {
        ++sets[component_set(world, e)];
    }
    std::cout << "  component sets (entities):\n";
    for (const auto& [set, n] : sets) {
        std::cout << "    " << std::setw(36) << std::left << set << std::right << n << "\n";
    }

    std::cout << "  a few entities:\n";
    for (std::size_t i : {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{10},
                          std::size_t{300}, std::size_t{405}}) {
        describe(world, all[i]);
    }

    std::size_t moved = 0;
    std::size_t hurt = 0;
    for (ts::Entity e : live) {
        if (world.has<Position>(e) && world.changed_tick<Position>(e) > before_last_frame) {
            ++moved;
        }
        if (world.has<Health>(e) && world.changed_tick<Health>(e) > before_last_frame) {
            ++hurt;
        }
    }
    std::cout << "  changed since tick " << before_last_frame << ": Position on " << moved
              << " entities, Health on " << hurt << "\n";
    std::cout << "  entity " << chosen << ": Position changed at tick "
              << world.changed_tick<Position>(chosen) << ", added at tick "
              << world.added_tick<Position>(chosen) << "\n";

    // 5. Errors are values you can branch on: a despawned handle stays dead.
    const ts::Entity gone = all[0];
    try {
        (void)world.get<Position>(gone);
    } catch (const ts::Error& error) {
        std::cout << "  get on despawned " << gone << " -> errc::" << ts::to_string(error.code())
                  << " (\"" << error.what() << "\")\n";
    }
    return 0;
}
