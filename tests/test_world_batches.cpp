// Calls that change several components at once, and spawn_many (world.hpp; DESIGN.md "Layers"):
// one archetype move whether immediate, deferred or buffered, no intermediate archetype, all
// or nothing; spawn_many's init may change the world, and a failed spawn_many leaves the
// entity index as it was.
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
struct Vel {
    float v = 0;
};
struct Hp {
    int hp = 0;
};
struct Name {
    std::string s;
};
struct Tag {};

/// Despawns a few entities so the free list is not empty (ids of later spawns depend on it).
std::vector<ts::Entity> history(ts::World& w) {
    std::vector<ts::Entity> live;
    for (int i = 0; i < 8; ++i) live.push_back(w.spawn(Pos{float(i)}));
    w.despawn(live[2]);
    w.despawn(live[5]);
    w.despawn(live[6]);
    live.erase(live.begin() + 6);
    live.erase(live.begin() + 5);
    live.erase(live.begin() + 2);
    return live;
}

/// The ids the next `n` spawns get.
std::vector<ts::Entity> next_ids(ts::World& w, int n) {
    std::vector<ts::Entity> out;
    for (int i = 0; i < n; ++i) out.push_back(w.spawn());
    return out;
}
}  // namespace

// ------------------------------------------------------------------------ one move per call

TEST(Batches, DeferredMultiComponentAddIsOneMove) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1});
    const std::size_t before = w.archetype_count();
    w.query<const Pos&>().each([&](const Pos&) { w.add(e, Vel{2}, Hp{3}, Name{"n"}); });
    EXPECT_EQ(w.archetype_count(), before + 1) << "an intermediate archetype was made";
    EXPECT_EQ(w.get<Vel>(e).v, 2);
    EXPECT_EQ(w.get<Hp>(e).hp, 3);
    EXPECT_EQ(w.get<Name>(e).s, "n");
}

TEST(Batches, BufferedMultiComponentAddIsOneMove) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1});
    const std::size_t before = w.archetype_count();
    ts::CommandBuffer cb;
    cb.add(e, Vel{2}, Hp{3}, Tag{});
    EXPECT_EQ(cb.apply(w), 3u);
    EXPECT_EQ(w.archetype_count(), before + 1);
    EXPECT_TRUE((w.has<Pos, Vel, Hp, Tag>(e)));
}

TEST(Batches, DeferredAndBufferedSpawnsAreOneMove) {
    ts::World w;
    (void)w.spawn(Pos{0});
    const std::size_t before = w.archetype_count();  // the empty table and {Pos}
    ts::Entity deferred;
    w.query<const Pos&>().each([&](const Pos&) { deferred = w.spawn(Vel{1}, Hp{2}, Name{"d"}); });
    EXPECT_EQ(w.archetype_count(), before + 1) << "spawn(Vel, Hp, Name) made extra archetypes";
    EXPECT_EQ(w.get<Name>(deferred).s, "d");
    ts::CommandBuffer cb;
    const ts::Entity p = cb.spawn(Pos{4}, Hp{5}, Tag{});
    cb.apply(w);
    EXPECT_EQ(w.archetype_count(), before + 2);
    EXPECT_EQ(w.get<Hp>(cb.resolved(p)).hp, 5);
}

TEST(Batches, AReplacingDeferredAddMarksOnlyTheNewComponentsAdded) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1}, Hp{1});
    (void)w.added_tick<Hp>(e);  // tracking on
    (void)w.added_tick<Vel>(w.spawn(Vel{}));
    w.advance_tick();
    const std::uint64_t now = w.tick();
    w.query<const Pos&>().each([&](const Pos&) { w.add(e, Hp{9}, Vel{2}); });
    EXPECT_EQ(w.get<Hp>(e).hp, 9);
    EXPECT_LT(w.added_tick<Hp>(e), now) << "a replaced value keeps its added tick";
    EXPECT_EQ(w.changed_tick<Hp>(e), now);
    EXPECT_EQ(w.added_tick<Vel>(e), now);
}

// ------------------------------------------------------------------------------- spawn_many

TEST(SpawnMany, InitMaySpawnAndItsSpawnsApplyBeforeItReturns) {
    ts::World w;
    std::vector<ts::Entity> inner;
    const auto span = w.spawn_many(1000, [&](std::size_t i, Pos& p) {
        p.x = float(i);
        if (i % 100 == 0) inner.push_back(w.spawn(Pos{-1}, Vel{float(i)}));
    });
    ASSERT_EQ(span.size(), 1000u);
    for (std::size_t i = 0; i < span.size(); ++i) ASSERT_EQ(w.get<Pos>(span[i]).x, float(i));
    EXPECT_EQ(w.count(), 1010u);
    ASSERT_EQ(inner.size(), 10u);
    for (std::size_t k = 0; k < inner.size(); ++k) {
        EXPECT_EQ(w.get<Pos>(inner[k]).x, -1);
        EXPECT_EQ(w.get<Vel>(inner[k]).v, float(k * 100));
    }
}

TEST(SpawnMany, ANestedSpawnManyAppliesBeforeTheOuterReturns) {
    ts::World w;
    std::vector<ts::Entity> inner;
    const auto outer = w.spawn_many(100, [&](std::size_t i, Pos& p) {
        p.x = float(i);
        if (i == 50) {
            const auto made = w.spawn_many(10, [](std::size_t k, Pos& q) { q.x = 1000.0f + k; });
            inner.assign(made.begin(), made.end());
        }
    });
    ASSERT_EQ(outer.size(), 100u);
    for (std::size_t i = 0; i < outer.size(); ++i) EXPECT_EQ(w.get<Pos>(outer[i]).x, float(i));
    ASSERT_EQ(inner.size(), 10u);
    for (std::size_t k = 0; k < inner.size(); ++k) EXPECT_EQ(w.get<Pos>(inner[k]).x, 1000.0f + k);
    EXPECT_EQ(w.count(), 110u);
}

TEST(SpawnMany, ChangesFromAQueryLoopInInitKeepTheReturnedEntitiesRight) {
    ts::World w;
    std::vector<ts::Entity> old;
    for (int i = 0; i < 20; ++i) old.push_back(w.spawn(Pos{-1.0f - i}));
    const auto span = w.spawn_many(50, [&](std::size_t i, Pos& p) {
        p.x = float(i);
        if (i == 10) {
            // Despawns and moves rows of the table the new rows go into, once applied.
            w.query<ts::Entity, const Pos&>().each([&](ts::Entity e, const Pos& q) {
                if (q.x < -10)
                    w.despawn(e);
                else if (q.x < 0)
                    w.add(e, Vel{1});
            });
        }
    });
    ASSERT_EQ(span.size(), 50u);
    for (std::size_t i = 0; i < span.size(); ++i) {
        ASSERT_TRUE(w.is_alive(span[i]));
        EXPECT_EQ(w.get<Pos>(span[i]).x, float(i)) << i;
    }
    EXPECT_EQ(w.count(), 50u + 10u);
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(w.has<Vel>(old[i]));
    for (int i = 10; i < 20; ++i) EXPECT_FALSE(w.is_alive(old[i]));
}

TEST(SpawnMany, WithNoComponentsSpawnsEmptyEntities) {
    ts::World w;
    std::size_t calls = 0;
    const auto span = w.spawn_many(5, [&](std::size_t) { ++calls; });
    EXPECT_EQ(calls, 5u);
    ASSERT_EQ(span.size(), 5u);
    for (const ts::Entity e : span) {
        EXPECT_TRUE(w.is_alive(e));
        EXPECT_FALSE(w.has<Pos>(e));
    }
    EXPECT_EQ(w.count(), 5u);
}

TEST(SpawnMany, AThrowingInitTakesBackEverythingItQueuedAndTheIdsItTook) {
    ts::World clean;
    (void)history(clean);
    const std::vector<ts::Entity> expected = next_ids(clean, 5);

    ts::World w;
    const std::vector<ts::Entity> live = history(w);
    const std::size_t archetypes = w.archetype_count();
    EXPECT_THROW(w.spawn_many(100,
                              [&](std::size_t i, Pos& p, Name& n) {
                                  p.x = float(i);
                                  n.s = "row " + std::to_string(i);
                                  (void)w.spawn(Hp{int(i)});
                                  if (i == 3) w.despawn(live[0]);
                                  if (i == 7) throw std::runtime_error("init failed");
                              }),
                 std::runtime_error);
    EXPECT_EQ(w.count(), live.size());
    EXPECT_TRUE(w.is_alive(live[0])) << "the queued despawn was applied";
    EXPECT_GE(w.archetype_count(), archetypes);
    w.query<const Hp&>().each([](const Hp&) { ADD_FAILURE() << "a queued spawn was applied"; });
    EXPECT_EQ(next_ids(w, 5), expected) << "the failed spawn_many changed the entity index";
}

TEST(SpawnMany, AThrowingInitWhileDeferredTakesBackItsQueuedSpawns) {
    ts::World clean;
    (void)history(clean);
    const ts::Entity looper = clean.spawn(Vel{});
    const std::vector<ts::Entity> expected = next_ids(clean, 5);

    ts::World w;
    (void)history(w);
    EXPECT_EQ(w.spawn(Vel{}), looper);
    const std::size_t count = w.count();
    w.query<const Vel&>().each([&](const Vel&) {
        EXPECT_THROW(w.spawn_many(10,
                                  [&](std::size_t i, Pos&) {
                                      (void)w.spawn(Hp{});
                                      if (i == 4) throw std::runtime_error("init failed");
                                  }),
                     std::runtime_error);
    });
    EXPECT_EQ(w.count(), count);
    EXPECT_EQ(next_ids(w, 5), expected);
}

TEST(SpawnMany, ObserversSeeEveryEntityPlacedAndTheirChangesApplyBeforeItReturns) {
    ts::World w;
    std::vector<ts::Entity> seen;
    ts::Observer o = w.on_add<Pos>([&](ts::World& world, ts::Entity e, Pos& p) {
        seen.push_back(e);
        EXPECT_EQ(world.count(), 30u) << "observers run after all entities are made";
        if (p.x >= 20) world.add(e, Tag{});
    });
    const auto span = w.spawn_many(30, [](std::size_t i, Pos& p) { p.x = float(i); });
    ASSERT_EQ(seen.size(), 30u);
    for (std::size_t i = 0; i < 30; ++i) {
        EXPECT_EQ(seen[i], span[i]);
        EXPECT_EQ(w.has<Tag>(span[i]), i >= 20);
        EXPECT_EQ(w.get<Pos>(span[i]).x, float(i));
    }
}
