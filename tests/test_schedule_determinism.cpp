// Schedule determinism (schedule.hpp): a ten-system simulation with spawns, despawns, events,
// parallel writes and change filters, run for 200 frames on 1, 2 and 8 workers, ends in the
// same world, value for value.
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <tbb/task_arena.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace ts = tessera;

namespace {
struct Position {
    float x = 0;
    float y = 0;
};
struct Velocity {
    float dx = 0;
    float dy = 0;
};
struct Health {
    int hp = 0;
};
struct Age {
    int frames = 0;
};
struct Team {
    int id = 0;
};
struct Frozen {};

struct Clock {
    int frame = 0;
};
struct Stats {
    std::uint64_t added = 0;          // Added<Position> rows seen
    std::uint64_t changed = 0;        // Changed<Position> rows seen
    std::uint64_t killed = 0;         // died of damage
    std::uint64_t expired = 0;        // died of old age
    std::uint64_t death_bits = 0;     // a sum over the dead entities' handles
    std::uint64_t damage_events = 0;  // Damage events read
};

struct Damage {
    ts::Entity target;
    int amount = 0;
};
struct Died {
    ts::Entity who;
    bool killed = false;
};

constexpr int frames = 200;
constexpr int spawns_per_frame = 12;
constexpr int max_age = 90;

std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

// FNV-1a over values, in the order they are fed.
struct Hash {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    void bytes(const void* p, std::size_t n) {
        const auto* b = static_cast<const unsigned char*>(p);
        for (std::size_t i = 0; i < n; ++i) {
            h ^= b[i];
            h *= 0x100000001b3ULL;
        }
    }
    void u64(std::uint64_t v) { bytes(&v, sizeof v); }
    void i32(int v) { u64(static_cast<std::uint64_t>(static_cast<std::int64_t>(v))); }
    void f32(float v) { u64(std::bit_cast<std::uint32_t>(v)); }
};

// Every live entity (by handle) and all its component values, then the resources.
std::uint64_t world_digest(const ts::World& world) {
    std::vector<ts::Entity> all = world.entities();
    std::sort(all.begin(), all.end());
    Hash h;
    h.u64(all.size());
    for (const ts::Entity e : all) {
        h.u64(e.to_bits());
        if (const Position* p = world.try_get<Position>(e)) {
            h.u64(1);
            h.f32(p->x);
            h.f32(p->y);
        }
        if (const Velocity* v = world.try_get<Velocity>(e)) {
            h.u64(2);
            h.f32(v->dx);
            h.f32(v->dy);
        }
        if (const Health* hp = world.try_get<Health>(e)) {
            h.u64(3);
            h.i32(hp->hp);
        }
        if (const Age* a = world.try_get<Age>(e)) {
            h.u64(4);
            h.i32(a->frames);
        }
        if (const Team* t = world.try_get<Team>(e)) {
            h.u64(5);
            h.i32(t->id);
        }
        if (world.has<Frozen>(e)) h.u64(6);
    }
    const Stats& s = world.resource<Stats>();
    for (const std::uint64_t v :
         {s.added, s.changed, s.killed, s.expired, s.death_bits, s.damage_events})
        h.u64(v);
    h.i32(world.resource<Clock>().frame);
    return h.h;
}

struct Outcome {
    std::vector<std::uint64_t> checkpoints;  // the state hash every 25 frames
    std::size_t entities = 0;
    std::size_t frozen = 0;
    Stats stats;
    std::size_t threads = 0;  // distinct threads that ran update-phase systems
};

Outcome simulate(int workers) {
    ts::World world;
    world.insert_resource(Clock{});
    world.insert_resource(Stats{});
    std::mutex m;
    std::set<std::thread::id> threads;
    auto note_thread = [&] {
        std::lock_guard lock(m);
        threads.insert(std::this_thread::get_id());
    };

    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));

    // 1. Spawns a wave of entities per frame (several archetypes).
    s.add("spawn", [](ts::ResMut<Clock> clock, ts::Commands cmds) {
         const int f = ++clock->frame;
         for (int i = 0; i < spawns_per_frame; ++i) {
             const Position p{float(i * 3 + f % 17), float(f % 5)};
             const Velocity v{0.5f * float(i % 4) - 0.75f, 0.25f * float(i % 3)};
             const Health h{5 + (i * 7 + f) % 20};
             if (i % 3 == 0)
                 cmds.spawn(p, v, h, Age{}, Team{(i + f) % 4});
             else
                 cmds.spawn(p, v, h, Age{});
         }
     }).phase(ts::Phase::pre_update);

    // 2. Moves what isn't frozen (parallel rows).
    s.add("move", [&](ts::View<Position&, const Velocity&, ts::Without<Frozen>> v) {
        note_thread();
        v.par_each([](Position& p, const Velocity& vel) {
            p.x += vel.dx;
            p.y += vel.dy;
            if (p.x > 100) p.x -= 200;
            if (p.x < -100) p.x += 200;
            if (p.y > 50) p.y = -50;
        });
    });
    // 3. Ages everything (parallel rows; beside `move`).
    s.add("age", [&](ts::View<Age&> v) {
        note_thread();
        // Long enough for a second worker to wake and take `move` (the systems are tiny).
        std::this_thread::sleep_for(std::chrono::microseconds(100));
        v.par_each([](Age& a) { ++a.frames; });
    });
    // 4. Turns every tenth frame of an entity's life (after move and age).
    s.add("steer", [&](ts::View<ts::Entity, Velocity&, const Age&> v) {
        note_thread();
        v.par_each([](ts::Entity e, Velocity& vel, const Age& a) {
            if (a.frames % 10 != 0) return;
            vel.dx = -vel.dx + float(mix(e.to_bits()) % 5) * 0.125f;
            vel.dy = -vel.dy * 0.5f;
        });
    });
    // 5. Freezes some middle-aged entities (a structural change through Commands).
    s.add("freeze",
          [&](ts::View<ts::Entity, const Age&, ts::Without<Frozen>> v, ts::Commands cmds) {
              note_thread();
              v.each([&](ts::Entity e, const Age& a) {
                  if (a.frames == 25 && e.index % 2 == 0) cmds.add<Frozen>(e);
              });
          });
    // 6. Team members hurt themselves now and then (events).
    s.add("attack", [&](ts::View<ts::Entity, const Position&, const Team&> v, ts::Res<Clock> clock,
                        ts::EventWriter<Damage> out) {
        note_thread();
        v.each([&](ts::Entity e, const Position& p, const Team& t) {
            const std::uint64_t h =
                mix(e.to_bits() ^ (std::uint64_t(clock->frame) << 40) ^ std::uint64_t(t.id));
            if (h % 3 == 0 || p.x > 90) out.send(Damage{e, 1 + int(h % 4)});
        });
    });

    // 7. Applies damage (exclusive: reads events, writes through the world).
    s.add("hurt", [](ts::World& w, ts::EventReader<Damage> in, ts::ResMut<Stats> stats) {
         for (const Damage& d : in.read()) {
             ++stats->damage_events;
             if (w.is_alive(d.target)) w.get_mut<Health>(d.target).hp -= d.amount;
         }
     }).phase(ts::Phase::post_update);
    // 8. Despawns the dead (changed health) and the old, announcing each.
    s.add("reap", [](ts::View<ts::Entity, const Health&, ts::Changed<Health>> hurt,
                     ts::View<ts::Entity, const Health&, const Age&> all, ts::Commands cmds,
                     ts::EventWriter<Died> died) {
         hurt.each([&](ts::Entity e, const Health& h) {
             if (h.hp > 0) return;
             cmds.despawn(e);
             died.send(Died{e, true});
         });
         all.each([&](ts::Entity e, const Health& h, const Age& a) {
             if (a.frames <= max_age || h.hp <= 0) return;
             cmds.despawn(e);
             died.send(Died{e, false});
         });
     }).phase(ts::Phase::post_update);
    // 9. Team members regenerate (parallel rows; reap sees it through Changed next frame).
    s.add("regen", [](ts::View<Health&, ts::With<Team>> v) {
         v.par_each([](Health& h) {
             if (h.hp < 3) h.hp += 1;
         });
     }).phase(ts::Phase::post_update);
    // 10. Counts deaths (last frame's events), new and moved positions (change filters).
    s.add("census", [](ts::EventReader<Died> died, ts::ResMut<Stats> stats,
                       ts::View<ts::Entity, ts::Added<Position>> added,
                       ts::View<const Position&, ts::Changed<Position>> moved) {
         for (const Died& d : died.read()) {
             ++(d.killed ? stats->killed : stats->expired);
             stats->death_bits += mix(d.who.to_bits());
         }
         added.each([&](ts::Entity) { ++stats->added; });
         moved.each([&](const Position&) { ++stats->changed; });
     }).phase(ts::Phase::post_update);

    // oneTBB caps the workers at the machine's cores; on a small machine 8 means fewer threads.
    // With real workers, see ScheduleBug.DISABLED_ParEachInsideAParallelPhaseDoesNotDeadlock.
    tbb::task_arena arena(workers);
    Outcome out;
    for (int frame = 1; frame <= frames; ++frame) {
        s.run(world, arena);
        if (frame % 25 == 0) out.checkpoints.push_back(world_digest(world));
    }
    out.entities = world.count();
    for (const ts::Entity e : world.entities()) out.frozen += world.has<Frozen>(e) ? 1 : 0;
    out.stats = world.resource<Stats>();
    out.threads = threads.size();
    return out;
}
}  // namespace

TEST(ScheduleDeterminism, TheSameWorldOnOneTwoAndEightWorkers) {
    const Outcome one = simulate(1);
    // The simulation does what it claims: a steady population with deaths of both kinds.
    EXPECT_GT(one.entities, 500u);
    EXPECT_LT(one.entities, 2000u);
    EXPECT_GT(one.frozen, 0u);
    EXPECT_GT(one.stats.killed, 0u);
    EXPECT_GT(one.stats.expired, 0u);
    EXPECT_GT(one.stats.damage_events, 0u);
    EXPECT_EQ(one.stats.added, std::uint64_t{frames} * spawns_per_frame);
    EXPECT_GT(one.stats.changed, 0u);
    EXPECT_EQ(one.threads, 1u);
    ASSERT_EQ(one.checkpoints.size(), std::size_t{frames / 25});

    std::size_t most_threads = 0;
    for (const int workers : {2, 8}) {
        const Outcome many = simulate(workers);
        EXPECT_EQ(many.checkpoints, one.checkpoints) << workers << " workers";
        EXPECT_EQ(many.entities, one.entities) << workers << " workers";
        EXPECT_EQ(many.stats.killed, one.stats.killed) << workers << " workers";
        EXPECT_EQ(many.stats.changed, one.stats.changed) << workers << " workers";
        most_threads = std::max(most_threads, many.threads);
    }
    // The parallel executor really ran systems on more than one thread (in at least one of the
    // runs: oneTBB moves its few worker threads between arenas when it likes, and this machine
    // may have only one to lend).
    EXPECT_GT(most_threads, 1u);
}
