// Calls that change several components at once, and spawn_many (world.hpp; docs/design.md,
// "Layers"): one archetype move whether immediate, deferred or buffered, no intermediate archetype,
// all or nothing; spawn_many's init may change the world, and a failed spawn_many leaves the entity
// index as it was.
#include <tessera/relation.hpp>
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
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

// ------------------------------------------------------------------------------ bulk despawn

namespace {
struct Sleepy {
    int v = 0;
};
}  // namespace

template <>
struct tessera::component_traits<Sleepy> {
    static constexpr bool enableable = true;
};

namespace {
/// `n` entities of {Pos, Vel} with Pos{i}.
std::vector<ts::Entity> pos_vel(ts::World& w, int n) {
    std::vector<ts::Entity> out;
    for (int i = 0; i < n; ++i) out.push_back(w.spawn(Pos{float(i)}, Vel{float(-i)}));
    return out;
}

/// Each live entity with its Pos, for comparing worlds.
std::vector<std::pair<ts::Entity, float>> pos_by_entity(ts::World& w) {
    std::vector<std::pair<ts::Entity, float>> out;
    w.each([&](ts::Entity e, const Pos& p) { out.emplace_back(e, p.x); });
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first.to_bits() < b.first.to_bits(); });
    return out;
}
}  // namespace

TEST(BulkDespawn, SpanDespawnsEachLiveHandleOnceAndFreesIdsInTheOrderGiven) {
    ts::World bulk;
    ts::World single;
    const std::vector<ts::Entity> a = pos_vel(bulk, 300);
    const std::vector<ts::Entity> b = pos_vel(single, 300);
    ASSERT_EQ(a, b);
    (void)bulk.despawn(a[7]);
    (void)single.despawn(b[7]);
    // Rows spread over the table, some twice, a dead one and null.
    std::vector<ts::Entity> doomed;
    for (int i = 0; i < 300; i += 3) doomed.push_back(a[static_cast<std::size_t>(i)]);
    doomed.push_back(a[9]);
    doomed.push_back(a[7]);
    doomed.push_back(ts::Entity::null());
    doomed.push_back(a[299]);
    std::size_t expected = 0;
    for (const ts::Entity e : doomed) expected += single.despawn(e) ? 1 : 0;
    EXPECT_EQ(bulk.despawn(std::span<const ts::Entity>(doomed)), expected);
    EXPECT_EQ(expected, 101u);
    EXPECT_EQ(bulk.count(), single.count());
    for (const ts::Entity e : doomed) EXPECT_FALSE(bulk.is_alive(e)) << e;
    // The survivors keep their values, each in the row its handle finds.
    EXPECT_EQ(pos_by_entity(bulk), pos_by_entity(single));
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (bulk.is_alive(a[i])) {
            EXPECT_EQ(bulk.get<Vel>(a[i]).v, -float(i));
        }
    }
    // The next spawns reuse the freed ids exactly as after one despawn at a time.
    EXPECT_EQ(next_ids(bulk, 120), next_ids(single, 120));
    EXPECT_EQ(bulk.despawn(std::span<const ts::Entity>{}), 0u);
}

TEST(BulkDespawn, ComponentsWithDestructorsAreDestroyedOnceAndSurvivorsMoveIntact) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 100; ++i) es.push_back(w.spawn(Name{std::string(40, char('a' + i % 26))}));
    std::vector<ts::Entity> doomed;
    for (std::size_t i = 0; i < es.size(); i += 2) doomed.push_back(es[i]);
    EXPECT_EQ(w.despawn(std::span<const ts::Entity>(doomed)), 50u);
    for (std::size_t i = 1; i < es.size(); i += 2) {
        EXPECT_EQ(w.get<Name>(es[i]).s, std::string(40, char('a' + i % 26)));
    }
}

TEST(BulkDespawn, ObserversRelationsAndTheCascadeMatchOneAtATime) {
    // Two worlds built alike; one despawns a span, the other each handle in turn: the observer
    // logs, the relations left and the survivors are the same.
    const auto run = [](bool bulk) {
        ts::World w;
        std::vector<std::string> log;
        ts::Observer o1 = w.on_despawn(
            [&](ts::World&, ts::Entity e) { log.push_back("despawn " + std::to_string(e.index)); });
        ts::Observer o2 = w.on_remove<Pos>([&](ts::World& world, ts::Entity e) {
            log.push_back("remove Pos " + std::to_string(e.index) + " count " +
                          std::to_string(world.count()));
        });
        std::vector<ts::Entity> es = pos_vel(w, 12);
        w.relate(es[1], ts::ChildOf{}, es[0]);
        w.relate(es[2], ts::ChildOf{}, es[1]);
        w.relate(es[4], ts::ChildOf{}, es[3]);
        const std::vector<ts::Entity> doomed{es[5], es[0], es[2], es[9], es[5], es[11]};
        std::size_t n = 0;
        if (bulk) {
            n = w.despawn(std::span<const ts::Entity>(doomed));
        } else {
            // What the bulk call counts: each listed entity alive before, once (all die).
            std::vector<ts::Entity> listed;
            for (const ts::Entity e : doomed) {
                if (w.is_alive(e) && std::find(listed.begin(), listed.end(), e) == listed.end())
                    listed.push_back(e);
            }
            for (const ts::Entity e : doomed) (void)w.despawn(e);
            n = listed.size();
        }
        log.push_back("returned " + std::to_string(n));
        for (const ts::Entity e : es) log.push_back(w.is_alive(e) ? "alive" : "dead");
        log.push_back("children of 3: " + std::to_string(w.targets<ts::ChildOf>(es[4]).size()));
        return log;
    };
    const std::vector<std::string> bulk = run(true);
    EXPECT_EQ(bulk, run(false));
    EXPECT_NE(std::find(bulk.begin(), bulk.end(), "returned 5"), bulk.end())
        << "es[2] died in es[0]'s cascade and counts; es[5] is given twice";
}

TEST(BulkDespawn, APermanentEntityThrowsBeforeAnythingIsDespawned) {
    ts::World w;
    const std::vector<ts::Entity> es = pos_vel(w, 5);
    const ts::Entity p = w.spawn_permanent(Pos{9});
    const std::vector<ts::Entity> doomed{es[0], es[1], p, es[2]};
    try {
        (void)w.despawn(std::span<const ts::Entity>(doomed));
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::permanent_entity);
        EXPECT_NE(std::string(e.what()).find("World::despawn"), std::string::npos) << e.what();
    }
    EXPECT_EQ(w.count(), 6u);
    for (const ts::Entity e : es) EXPECT_TRUE(w.is_alive(e));
    auto q = w.query<const Pos&>();
    EXPECT_THROW((void)w.despawn_all(q), ts::Error);
    EXPECT_EQ(w.count(), 6u);
}

TEST(BulkDespawn, InsideALoopEachIsQueuedOnce) {
    ts::World w;
    const std::vector<ts::Entity> es = pos_vel(w, 10);
    bool once = false;
    w.query<const Pos&>().each([&](const Pos&) {
        if (once) return;
        once = true;
        EXPECT_TRUE(w.despawn(es[3]));  // queued before: not counted again
        const std::vector<ts::Entity> doomed{es[1], es[3], es[1], es[8]};
        EXPECT_EQ(w.despawn(std::span<const ts::Entity>(doomed)), 2u);
        EXPECT_TRUE(w.despawn_pending(es[1]));
        EXPECT_TRUE(w.despawn_pending(es[8]));
        EXPECT_TRUE(w.is_alive(es[8])) << "alive until the loop ends";
        EXPECT_EQ(w.despawn(std::span<const ts::Entity>(doomed)), 0u) << "all queued already";
    });
    EXPECT_EQ(w.count(), 7u);
    EXPECT_FALSE(w.is_alive(es[1]));
    EXPECT_FALSE(w.is_alive(es[3]));
    EXPECT_FALSE(w.is_alive(es[8]));
}

TEST(BulkDespawn, FromParEachIsRefused) {
    ts::World w;
    const std::vector<ts::Entity> es = pos_vel(w, 64);
    bool refused = false;
    w.query<const Pos&>().par_each([&](const Pos& p) {
        if (p.x != 0) return;
        try {
            (void)w.despawn(std::span<const ts::Entity>(es.data(), 2));
        } catch (const ts::Error& e) {
            refused = e.code() == ts::errc::invalid_argument;
        }
    });
    EXPECT_TRUE(refused);
    EXPECT_EQ(w.count(), 64u);
}

TEST(BulkDespawn, DespawnAllTakesExactlyWhatEachVisits) {
    ts::World w;
    const std::vector<ts::Entity> pv = pos_vel(w, 50);
    std::vector<ts::Entity> p_only;
    for (int i = 0; i < 30; ++i) p_only.push_back(w.spawn(Pos{float(i)}));
    std::vector<ts::Entity> with_hp;
    for (int i = 0; i < 20; ++i) with_hp.push_back(w.spawn(Pos{float(i)}, Vel{}, Hp{i}));
    const ts::Entity other = w.spawn(Hp{1});

    // Whole tables: {Pos, Vel} and {Pos, Vel, Hp} without... only {Pos, Vel}.
    auto moving = w.query<const Pos&, const Vel&>().without<Hp>();
    EXPECT_EQ(w.despawn_all(moving), 50u);
    for (const ts::Entity e : pv) EXPECT_FALSE(w.is_alive(e));
    EXPECT_EQ(w.count(), 51u);
    EXPECT_EQ(w.despawn_all(moving), 0u) << "nothing left to match";
    EXPECT_EQ(next_ids(w, 50).front().index, pv.back().index)
        << "ids are freed in table order, like one despawn per row";

    // Rows with a disabled term are skipped.
    std::vector<ts::Entity> sleepy;
    for (int i = 0; i < 10; ++i) sleepy.push_back(w.spawn(Sleepy{i}));
    w.enable<Sleepy>(sleepy[2], false);
    w.enable<Sleepy>(sleepy[7], false);
    auto awake = w.query<const Sleepy&>();
    EXPECT_EQ(w.despawn_all(awake), 8u);
    EXPECT_TRUE(w.is_alive(sleepy[2]));
    EXPECT_TRUE(w.is_alive(sleepy[7]));

    // A change filter: only the rows changed since the query's last run.
    auto changed = w.query<const Hp&>().changed<Hp>();
    changed.each([](const Hp&) {});  // the first run sees every row
    w.get_mut<Hp>(with_hp[4]).hp = 40;
    w.get_mut<Hp>(other).hp = 2;
    EXPECT_EQ(w.despawn_all(changed), 2u);
    EXPECT_FALSE(w.is_alive(with_hp[4]));
    EXPECT_FALSE(w.is_alive(other));
    EXPECT_TRUE(w.is_alive(with_hp[5]));

    // An empty query matches nothing; another world's query is an error.
    ts::Query<const Pos&> empty;
    EXPECT_EQ(w.despawn_all(empty), 0u);
    ts::World elsewhere;
    auto foreign = elsewhere.query<const Pos&>();
    try {
        (void)w.despawn_all(foreign);
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("World::despawn_all"), std::string::npos);
    }
    for (const ts::Entity e : p_only) EXPECT_TRUE(w.is_alive(e));
}

TEST(BulkDespawn, DespawnAllOfObservedTablesFiresLikeOneAtATime) {
    ts::World w;
    const std::vector<ts::Entity> es = pos_vel(w, 6);
    std::vector<ts::Entity> seen;
    ts::Observer o = w.on_remove<Vel>([&](ts::World&, ts::Entity e) { seen.push_back(e); });
    auto q = w.query<const Pos&>();
    EXPECT_EQ(w.despawn_all(q), 6u);
    EXPECT_EQ(seen, es) << "table order";
    EXPECT_EQ(w.count(), 0u);
}
