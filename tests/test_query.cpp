// Tests for include/tessera/query.hpp: terms, filters, iteration forms, incremental matching,
// change filters, QuerySpec + collect_chunks, allocation-freedom and a randomized model test.
#include <tessera/query.hpp>
#include <tessera/serialize.hpp>

#include <nlohmann/json.hpp>

#include "common/counting_resource.hpp"

#include "common/tick.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <new>
#include <random>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// ---------------------------------------------------------------------------------------------
#include "common/global_new_counter.hpp"

namespace ts = tessera;
using ts::test::CountingResource;

namespace {

struct Position {
    float x = 0, y = 0;
    bool operator==(const Position&) const = default;
};
struct Velocity {
    float dx = 0, dy = 0;
    bool operator==(const Velocity&) const = default;
};
struct Health {
    int hp = 0;
    bool operator==(const Health&) const = default;
};
struct Name {
    std::string s;
};
struct Frozen {};
struct Enemy {};

using Entities = std::vector<ts::Entity>;

/// The entities a query's `each` visits, in visiting order.
template <class Q>
Entities visit(Q& q) {
    Entities out;
    q.each([&](ts::Entity e, auto&&...) { out.push_back(e); });
    return out;
}

/// The live entities satisfying `pred`, in `world.entities()` order (the documented iteration
/// order: archetype by archetype in creation order, rows in table order).
Entities brute(const ts::World& w, const std::function<bool(ts::Entity)>& pred) {
    Entities out;
    for (ts::Entity e : w.entities()) {
        if (pred(e)) out.push_back(e);
    }
    return out;
}

/// The entities of a list of chunks, concatenated.
Entities chunk_entities(std::span<const ts::Chunk> chunks) {
    Entities out;
    for (const ts::Chunk& c : chunks)
        out.insert(out.end(), c.entities().begin(), c.entities().end());
    return out;
}

std::set<ts::Entity> as_set(const Entities& v) {
    return {v.begin(), v.end()};
}

/// A world with entities in several archetypes, created in this order:
/// P, PV, PF, PVF, PE, PVE, V, F, (empty), PH.
struct Zoo {
    ts::World w;
    Entities p, pv, pf, pvf, pe, pve, v, f, none, ph;
    Zoo() {
        for (int i = 0; i < 3; ++i) {
            const float x = float(i);
            p.push_back(w.spawn(Position{x, 0}));
            pv.push_back(w.spawn(Position{x, 1}, Velocity{1, 0}));
            pf.push_back(w.spawn(Position{x, 2}, Frozen{}));
            pvf.push_back(w.spawn(Position{x, 3}, Velocity{2, 0}, Frozen{}));
            pe.push_back(w.spawn(Position{x, 4}, Enemy{}));
            pve.push_back(w.spawn(Position{x, 5}, Velocity{3, 0}, Enemy{}));
            v.push_back(w.spawn(Velocity{4, 0}));
            f.push_back(w.spawn(Frozen{}));
            none.push_back(w.spawn());
            ph.push_back(w.spawn(Position{x, 6}, Health{i}));
        }
    }
};

}  // namespace

// =============================================================================================
// Terms
// =============================================================================================

TEST(Query, MutableTermWritesAreVisibleAfterwards) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 1}, Velocity{1, 2});
    const ts::Entity b = w.spawn(Position{5, 5}, Velocity{-1, 0}, Frozen{});
    const ts::Entity c = w.spawn(Position{7, 7});  // no Velocity: not visited
    auto q = w.query<Position&, const Velocity&>();
    q.each([](Position& p, const Velocity& v) {
        p.x += v.dx;
        p.y += v.dy;
    });
    EXPECT_EQ(w.get<Position>(a), (Position{2, 3}));
    EXPECT_EQ(w.get<Position>(b), (Position{4, 5}));
    EXPECT_EQ(w.get<Position>(c), (Position{7, 7}));
    q.each([](Position& p, const Velocity& v) { p.x += v.dx; });
    EXPECT_EQ(w.get<Position>(a), (Position{3, 3}));
}

TEST(Query, ConstTermReadsTheStoredValues) {
    Zoo z;
    auto q = z.w.query<const Position&, const Velocity&>();
    std::vector<std::pair<ts::Entity, float>> seen;
    q.each([&](ts::Entity e, const Position& p, const Velocity& v) {
        EXPECT_EQ(p, z.w.get<Position>(e));
        EXPECT_EQ(v, z.w.get<Velocity>(e));
        seen.emplace_back(e, p.y);
    });
    EXPECT_EQ(seen.size(), 9u);  // PV, PVF, PVE: 3 each
}

TEST(Query, OptionalTermIsNullExactlyWhenTheEntityLacksIt) {
    Zoo z;
    auto q = z.w.query<const Position&, const Velocity*>();
    std::size_t with_v = 0, without_v = 0;
    q.each([&](ts::Entity e, const Position& p, const Velocity* v) {
        EXPECT_EQ(p, z.w.get<Position>(e));
        EXPECT_EQ(v == nullptr, !z.w.has<Velocity>(e));
        if (v != nullptr) {
            EXPECT_EQ(*v, z.w.get<Velocity>(e));
            EXPECT_EQ(v, z.w.try_get<Velocity>(e));  // the stored value, not a copy
            ++with_v;
        } else {
            ++without_v;
        }
    });
    EXPECT_EQ(with_v, 9u);
    EXPECT_EQ(without_v, 12u);  // P, PF, PE, PH
    // An optional term adds no requirement: every entity with Position is visited.
    EXPECT_EQ(q.count(), 21u);
}

TEST(Query, MutableOptionalTermWritesThroughThePointer) {
    Zoo z;
    auto q = z.w.query<const Position&, Velocity*>();
    q.each([](const Position& p, Velocity* v) {
        if (v != nullptr) v->dy = p.y;
    });
    for (ts::Entity e : z.pve) EXPECT_EQ(z.w.get<Velocity>(e).dy, 5.0f);
    for (ts::Entity e : z.pv) EXPECT_EQ(z.w.get<Velocity>(e).dy, 1.0f);
    for (ts::Entity e : z.v) EXPECT_EQ(z.w.get<Velocity>(e).dy, 0.0f);  // no Position: not visited
}

TEST(Query, LeadingEntityParameterIsTheRowsEntity) {
    Zoo z;
    auto q = z.w.query<const Position&>().with<Frozen>();
    Entities seen;
    q.each([&](ts::Entity e, const Position& p) {
        EXPECT_TRUE(z.w.is_alive(e));
        EXPECT_EQ(p, z.w.get<Position>(e));
        seen.push_back(e);
    });
    Entities expected = z.pf;
    expected.insert(expected.end(), z.pvf.begin(), z.pvf.end());
    EXPECT_EQ(seen, expected);
    // Without the leading Entity the same rows are visited.
    std::size_t n = 0;
    q.each([&](const Position&) { ++n; });
    EXPECT_EQ(n, expected.size());
}

TEST(Query, EntityAsAnExplicitTerm) {
    Zoo z;
    auto q = z.w.query<ts::Entity, const Health&>();
    Entities seen;
    q.each([&](ts::Entity e, const Health& h) {
        EXPECT_EQ(h, z.w.get<Health>(e));
        seen.push_back(e);
    });
    EXPECT_EQ(seen, z.ph);
}

TEST(Query, TagsAreTermsAndFilters) {
    Zoo z;
    // A tag as a required term: only entities with the tag.
    Entities seen;
    z.w.query<const Position&, const Frozen&>().each(
        [&](ts::Entity e, const Position&, const Frozen&) { seen.push_back(e); });
    EXPECT_EQ(as_set(seen),
              as_set(brute(z.w, [&](ts::Entity e) { return z.w.has<Position, Frozen>(e); })));
    EXPECT_EQ(seen.size(), 6u);
    // A mutable tag term compiles and visits the same rows.
    std::size_t n = 0;
    z.w.query<Frozen&>().each([&](Frozen&) { ++n; });
    EXPECT_EQ(n, 9u);  // PF, PVF, F
    // An optional tag term: non-null exactly when the entity has the tag.
    std::size_t tagged = 0;
    z.w.query<const Position&, const Enemy*>().each(
        [&](ts::Entity e, const Position&, const Enemy* en) {
            EXPECT_EQ(en != nullptr, z.w.has<Enemy>(e));
            if (en != nullptr) ++tagged;
        });
    EXPECT_EQ(tagged, 6u);
}

// =============================================================================================
// Filters
// =============================================================================================

TEST(Query, WithWithoutAndAnyFilterArchetypes) {
    Zoo z;
    ts::World& w = z.w;
    auto check = [&](auto&& q, const std::function<bool(ts::Entity)>& pred, const char* what) {
        SCOPED_TRACE(what);
        const Entities expected = brute(w, pred);
        EXPECT_FALSE(expected.empty());
        EXPECT_EQ(visit(q), expected);
        EXPECT_EQ(q.count(), expected.size());
    };
    check(
        w.query<const Position&>().with<Frozen>(),
        [&](ts::Entity e) { return w.has<Position, Frozen>(e); }, "with<Frozen>");
    check(
        w.query<const Position&>().with<Velocity, Frozen>(),
        [&](ts::Entity e) { return w.has<Position, Velocity, Frozen>(e); },
        "with<Velocity, Frozen>");
    check(
        w.query<const Position&>().without<Frozen>(),
        [&](ts::Entity e) { return w.has<Position>(e) && !w.has<Frozen>(e); }, "without<Frozen>");
    check(
        w.query<const Position&>().without<Frozen, Enemy>(),
        [&](ts::Entity e) { return w.has<Position>(e) && !w.has<Frozen>(e) && !w.has<Enemy>(e); },
        "without<Frozen, Enemy>");
    check(
        w.query<const Position&>().any<Velocity, Enemy>(),
        [&](ts::Entity e) { return w.has<Position>(e) && (w.has<Velocity>(e) || w.has<Enemy>(e)); },
        "any<Velocity, Enemy>");
    check(
        w.query<const Position&>().without<Frozen>().any<Velocity, Enemy>(),
        [&](ts::Entity e) {
            return w.has<Position>(e) && !w.has<Frozen>(e) &&
                   (w.has<Velocity>(e) || w.has<Enemy>(e));
        },
        "without<Frozen> any<Velocity, Enemy>");
    check(
        w.query<const Position&>().with<Velocity>().without<Enemy>().any<Frozen, Health>(),
        [&](ts::Entity e) {
            return w.has<Position, Velocity>(e) && !w.has<Enemy>(e) &&
                   (w.has<Frozen>(e) || w.has<Health>(e));
        },
        "with<Velocity> without<Enemy> any<Frozen, Health>");
    // Filters alone, without a component term: the Entity-only query.
    check(
        w.query<ts::Entity>().any<Velocity, Frozen>().without<Position>(),
        [&](ts::Entity e) {
            return (w.has<Velocity>(e) || w.has<Frozen>(e)) && !w.has<Position>(e);
        },
        "Entity any<Velocity, Frozen> without<Position>");
    check(
        w.query<ts::Entity>(), [](ts::Entity) { return true; }, "every entity");
}

TEST(Query, ContradictoryFiltersMatchNothing) {
    Zoo z;
    auto q = z.w.query<const Position&>().without<Position>();
    EXPECT_EQ(q.count(), 0u);
    EXPECT_TRUE(visit(q).empty());
    auto q2 = z.w.query<const Position&>().with<Frozen>().without<Frozen>();
    EXPECT_EQ(q2.count(), 0u);
}

TEST(Query, CountIsTheNumberOfMatchingEntitiesAndIgnoresChangeFilters) {
    Zoo z;
    auto q = z.w.query<const Position&>().without<Enemy>();
    EXPECT_EQ(q.count(), 15u);  // P, PV, PF, PVF, PH
    z.w.despawn(z.p[0]);
    z.w.add<Enemy>(z.pv[0]);
    z.w.add(z.v[0], Position{});
    EXPECT_EQ(q.count(), 14u);
    auto changed = z.w.query<const Position&>().changed<Position>();
    visit(changed);  // the first run sees everything; later ones see nothing new
    EXPECT_TRUE(visit(changed).empty());
    EXPECT_EQ(changed.count(), 21u);
    const std::uint64_t t = z.w.tick();
    (void)changed.count();
    EXPECT_EQ(z.w.tick(), t) << "count() is not a run: it must not advance the tick";
}

// =============================================================================================
// Order and incremental matching
// =============================================================================================

TEST(Query, IteratesArchetypesInCreationOrderAndRowsInTableOrder) {
    ts::World w;
    // Interleave spawns so creation order of entities differs from archetype order.
    Entities pv, p, ph;
    for (int i = 0; i < 5; ++i) {
        pv.push_back(w.spawn(Position{float(i), 0}, Velocity{}));
        p.push_back(w.spawn(Position{float(i), 1}));
        ph.push_back(w.spawn(Health{i}, Position{float(i), 2}));
    }
    // Despawning moves the last row into the hole: table order is no longer spawn order.
    w.despawn(pv[1]);
    w.despawn(p[0]);
    // Moving an entity appends it to the end of its new table.
    w.add(p[2], Velocity{});
    auto q = w.query<const Position&>();
    const Entities seen = visit(q);
    EXPECT_EQ(seen, brute(w, [&](ts::Entity e) { return w.has<Position>(e); }));
    // Archetype PV (created first) comes first, and p[2] is the last row of PV.
    ASSERT_EQ(seen.size(), 13u);
    EXPECT_EQ(seen[0], pv[0]);
    EXPECT_EQ(seen[1], pv[4]);  // the last row filled the hole of pv[1]
    EXPECT_EQ(seen[4], p[2]);
    // each, chunks and collect_chunks agree on the order.
    Entities via_chunks;
    for (ts::Chunk& c : q.chunks())
        via_chunks.insert(via_chunks.end(), c.entities().begin(), c.entities().end());
    EXPECT_EQ(via_chunks, seen);
    std::vector<ts::Chunk> out;
    w.collect_chunks(ts::QuerySpec().with<Position>(), out);
    EXPECT_EQ(chunk_entities(out), seen);
}

TEST(Query, QueryBuiltBeforeItsArchetypesPicksThemUp) {
    ts::World w;
    auto q = w.query<Position&>().without<Frozen>();
    auto all = w.query<ts::Entity>();
    EXPECT_EQ(q.count(), 0u);
    EXPECT_TRUE(visit(q).empty());
    const ts::Entity a = w.spawn(Position{1, 0});  // new archetype P
    EXPECT_EQ(visit(q), (Entities{a}));
    const ts::Entity b = w.spawn(Velocity{}, Position{2, 0});  // new archetype PV
    const ts::Entity c = w.spawn(Position{3, 0}, Frozen{});    // new archetype PF: excluded
    const ts::Entity d = w.spawn(Velocity{});                  // no Position
    EXPECT_EQ(visit(q), (Entities{a, b}));
    EXPECT_EQ(q.count(), 2u);
    // A move into a new matching archetype; a move out into an excluded one.
    w.add(d, Position{4, 0}, Health{});  // new archetype PVH
    w.add<Frozen>(a);                    // into PF
    EXPECT_EQ(visit(q), (Entities{b, d}));
    q.each([](Position& p) { p.y = 9; });
    EXPECT_EQ(w.get<Position>(b).y, 9.0f);
    EXPECT_EQ(w.get<Position>(d).y, 9.0f);
    EXPECT_EQ(w.get<Position>(a).y, 0.0f);
    EXPECT_EQ(w.get<Position>(c).y, 0.0f);
    EXPECT_EQ(visit(all), w.entities());
}

TEST(Query, QueryBuiltAfterItsArchetypesMatchesThem) {
    Zoo z;
    auto q = z.w.query<const Position&, const Velocity&>();
    EXPECT_EQ(q.count(), 9u);
    // ...and keeps matching new ones afterwards.
    const ts::Entity e = z.w.spawn(Velocity{}, Name{"n"}, Position{});
    EXPECT_EQ(q.count(), 10u);
    EXPECT_EQ(visit(q).back(), e);
}

// =============================================================================================
// Chunk iteration
// =============================================================================================

TEST(Query, EachChunkPassesOneSpanPerTermPerNonEmptyArchetype) {
    Zoo z;
    // Empty the PF archetype: it must not be passed.
    for (ts::Entity e : z.pf) z.w.despawn(e);
    auto q = z.w.query<ts::Entity, Position&, const Velocity*>().without<Enemy>();
    std::size_t chunks = 0, rows = 0, with_v = 0;
    Entities order;
    q.each_chunk([&](ts::Chunk& c, std::span<const ts::Entity> ents, std::span<Position> pos,
                     std::span<const Velocity> vel) {
        ++chunks;
        EXPECT_GT(c.count(), 0u);
        EXPECT_EQ(ents.size(), c.count());
        EXPECT_EQ(pos.size(), c.count());
        EXPECT_TRUE(std::equal(ents.begin(), ents.end(), c.entities().begin(), c.entities().end()));
        if (c.has<Velocity>()) {
            EXPECT_EQ(vel.size(), c.count());
            ++with_v;
        } else {
            EXPECT_TRUE(vel.empty()) << "an absent optional term gives an empty span";
        }
        for (std::size_t i = 0; i < c.count(); ++i) {
            EXPECT_EQ(pos[i], z.w.get<Position>(ents[i]));
            if (!vel.empty()) {
                EXPECT_EQ(vel[i], z.w.get<Velocity>(ents[i]));
            }
            pos[i].x = 100;  // written through the span
        }
        rows += c.count();
        order.insert(order.end(), ents.begin(), ents.end());
    });
    EXPECT_EQ(chunks, 4u);  // P, PV, PVF, PH (PF is empty, PE/PVE excluded)
    EXPECT_EQ(with_v, 2u);
    EXPECT_EQ(rows, q.count());
    EXPECT_EQ(order, visit(q));
    for (ts::Entity e : order) EXPECT_EQ(z.w.get<Position>(e).x, 100.0f);
    for (ts::Entity e : z.pe) EXPECT_NE(z.w.get<Position>(e).x, 100.0f);
}

TEST(Query, ChunksRangeExposesColumnsAndMembership) {
    Zoo z;
    auto q = z.w.query<const Position&>().with<Velocity>();
    std::size_t chunks = 0, rows = 0, frozen_chunks = 0;
    for (ts::Chunk& c : q.chunks()) {
        ++chunks;
        ASSERT_GT(c.count(), 0u);
        std::span<const ts::Entity> ents = c.entities();
        std::span<const Position> pos = c.column<const Position>();
        std::span<Velocity> vel = c.column<Velocity>();
        ASSERT_EQ(ents.size(), c.count());
        ASSERT_EQ(pos.size(), c.count());
        ASSERT_EQ(vel.size(), c.count());
        EXPECT_TRUE(c.has<Position>());
        EXPECT_TRUE(c.has<Velocity>());
        EXPECT_FALSE(c.has<Health>());
        EXPECT_TRUE(c.column<Health>().empty()) << "absent component: empty column";
        if (c.has<Frozen>()) {
            ++frozen_chunks;
            EXPECT_TRUE(c.column<Frozen>().empty()) << "a tag has no column";
        }
        for (std::size_t i = 0; i < c.count(); ++i) {
            EXPECT_EQ(pos[i], z.w.get<Position>(ents[i]));
            vel[i].dy = 42;  // written through the column
        }
        rows += c.count();
    }
    EXPECT_EQ(chunks, 3u);  // PV, PVF, PVE
    EXPECT_EQ(frozen_chunks, 1u);
    EXPECT_EQ(rows, 9u);
    for (ts::Entity e : z.pv) EXPECT_EQ(z.w.get<Velocity>(e).dy, 42.0f);
    for (ts::Entity e : z.v) EXPECT_EQ(z.w.get<Velocity>(e).dy, 0.0f);  // no Position
}

// =============================================================================================
// Change ticks
// =============================================================================================

TEST(Query, MutableTermStampsTheRunsTickWhenTracked) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{}, Velocity{});
    const ts::Entity b = w.spawn(Position{});    // not matched by the Velocity query
    EXPECT_EQ(w.changed_tick<Position>(a), 1u);  // tracking on
    w.advance_tick();
    w.advance_tick();  // 3
    auto writer = w.query<Position&, const Velocity&>();
    writer.each([](Position& p, const Velocity&) { p.x += 1; });
    EXPECT_EQ(w.changed_tick<Position>(a), 3u);
    EXPECT_EQ(w.changed_tick<Position>(b), 1u) << "unmatched rows keep their tick";
    EXPECT_EQ(w.changed_tick<Velocity>(a), 3u)
        << "(tracking of Velocity starts now, stamped with the current tick)";
    w.advance_tick();  // 4
    auto reader = w.query<const Position&, const Velocity&>();
    reader.each([](const Position&, const Velocity&) {});
    EXPECT_EQ(w.changed_tick<Position>(a), 3u) << "a const term never stamps";
    EXPECT_EQ(w.changed_tick<Velocity>(a), 3u);
    w.advance_tick();  // 5
    writer.each_chunk([](ts::Chunk&, std::span<Position>, std::span<const Velocity>) {});
    EXPECT_EQ(w.changed_tick<Position>(a), 5u) << "each_chunk stamps T& terms";
    EXPECT_EQ(w.changed_tick<Velocity>(a), 3u);
    w.advance_tick();  // 6
    for (ts::Chunk& c : writer.chunks()) (void)c;
    EXPECT_EQ(w.changed_tick<Position>(a), 6u) << "chunks() stamps T& terms";
    w.advance_tick();  // 7
    for (ts::Chunk& c : reader.chunks()) (void)c;
    reader.each_chunk([](ts::Chunk&, std::span<const Position>, std::span<const Velocity>) {});
    EXPECT_EQ(w.changed_tick<Position>(a), 6u);
    EXPECT_EQ(w.tick(), 7u) << "no change filter: runs do not advance the tick";
}

TEST(Query, MutableTermDoesNotTurnTrackingOn) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{});
    w.query<Position&>().each([](Position& p) { p.x = 1; });
    EXPECT_FALSE(w.storage().tracked(ts::component_id<Position>()));
    w.advance_tick();
    // Tracking starts lazily: existing rows get the current tick.
    EXPECT_EQ(w.changed_tick<Position>(a), 2u);
}

namespace {
/// Runs a `const Position&` query and returns the entities it visited.
template <class Q>
Entities run(Q& q) {
    return visit(q);
}
}  // namespace

TEST(Query, ChangedSeesEveryRowFirstThenEachWriteExactlyOnce) {
    ts::World w;
    Entities e;
    for (int i = 0; i < 6; ++i) e.push_back(w.spawn(Position{float(i), 0}));
    w.add(e[2], Velocity{});
    auto q = w.query<const Position&>().changed<Position>();

    // First run: every row. The run advances the tick by one at its end.
    const std::uint64_t t0 = w.tick();
    EXPECT_EQ(as_set(run(q)), as_set(e));
    EXPECT_EQ(w.tick(), t0 + 1);
    EXPECT_TRUE(run(q).empty());
    EXPECT_EQ(w.tick(), t0 + 2) << "even a run that visits nothing advances the tick";

    // set, in the same frame as the previous run (no advance_tick in between).
    w.set(e[0], Position{10, 0});
    EXPECT_EQ(run(q), (Entities{e[0]}));
    EXPECT_TRUE(run(q).empty());

    // get_mut.
    w.get_mut<Position>(e[1]).x = 11;
    EXPECT_EQ(run(q), (Entities{e[1]}));
    EXPECT_TRUE(run(q).empty());

    // Another query's T& term (only e[2] has Velocity).
    w.query<Position&, const Velocity&>().each([](Position& p, const Velocity&) { p.y = 1; });
    EXPECT_EQ(run(q), (Entities{e[2]}));
    EXPECT_TRUE(run(q).empty());

    // add of an existing component replaces it and marks it changed.
    w.add(e[3], Position{13, 0});
    EXPECT_EQ(run(q), (Entities{e[3]}));
    EXPECT_TRUE(run(q).empty());

    // Moving an entity to another archetype does not change its Position.
    w.add(e[4], Velocity{});
    w.add<Frozen>(e[5]);
    w.remove<Frozen>(e[5]);
    EXPECT_TRUE(run(q).empty());

    // A const term and try_get do not mark anything.
    w.query<const Position&>().each([](const Position&) {});
    (void)w.try_get<Position>(e[0]);
    (void)w.get<Position>(e[0]);
    EXPECT_TRUE(run(q).empty());

    // Writes spread over several frames are all seen, once.
    w.set(e[5], Position{});
    w.advance_tick();
    w.advance_tick();
    w.get_mut<Position>(e[4]);
    w.advance_tick();
    w.set(e[5], Position{1, 1});
    EXPECT_EQ(as_set(run(q)), as_set(Entities{e[4], e[5]}));
    EXPECT_TRUE(run(q).empty());
    w.advance_tick();
    EXPECT_TRUE(run(q).empty());

    // A new entity is changed (and added) when spawned.
    const ts::Entity n = w.spawn(Position{}, Health{});
    EXPECT_EQ(run(q), (Entities{n}));
    EXPECT_TRUE(run(q).empty());

    // Values seen are the written ones.
    w.set(e[0], Position{77, 0});
    std::vector<float> xs;
    q.each([&](const Position& p) { xs.push_back(p.x); });
    EXPECT_EQ(xs, (std::vector<float>{77}));
}

TEST(Query, ChangedQueryDoesNotSeeItsOwnWrites) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{});
    const ts::Entity b = w.spawn(Position{});
    auto q = w.query<Position&>().changed<Position>();
    std::size_t n = 0;
    q.each([&](Position& p) {
        p.x += 1;
        ++n;
    });
    EXPECT_EQ(n, 2u);
    n = 0;
    q.each([&](Position&) { ++n; });
    EXPECT_EQ(n, 0u) << "the writes of a run are not seen by that query's next run";
    w.set(b, Position{5, 5});
    Entities seen;
    q.each([&](ts::Entity e, Position&) { seen.push_back(e); });
    EXPECT_EQ(seen, (Entities{b}));
    (void)a;
}

TEST(Query, SeveralChangedQueriesEachSeeAWriteOnce) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{});
    const ts::Entity b = w.spawn(Position{});
    auto q1 = w.query<const Position&>().changed<Position>();
    auto q2 = w.query<ts::Entity>().changed<Position>();
    EXPECT_EQ(run(q1).size(), 2u);
    EXPECT_EQ(run(q2).size(), 2u);
    w.set(a, Position{1, 0});
    EXPECT_EQ(run(q1), (Entities{a}));
    w.set(b, Position{1, 0});
    EXPECT_EQ(run(q2), (Entities{a, b}));
    EXPECT_EQ(run(q1), (Entities{b}));
    EXPECT_TRUE(run(q1).empty());
    EXPECT_TRUE(run(q2).empty());
}

TEST(Query, ChangedFilterBuiltBeforeAnyRowExists) {
    ts::World w;
    auto q = w.query<const Position&>().changed<Position>();
    EXPECT_TRUE(run(q).empty());
    const ts::Entity a = w.spawn(Position{});
    const ts::Entity b = w.spawn(Position{}, Velocity{});
    EXPECT_EQ(run(q), (Entities{a, b}));
    EXPECT_TRUE(run(q).empty());
    w.set(b, Position{2, 2});
    EXPECT_EQ(run(q), (Entities{b}));
}

TEST(Query, ChangedFilterImpliesTheComponent) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{}, Velocity{});
    w.spawn(Velocity{});  // no Position: nothing to change
    auto q = w.query<const Velocity&>().changed<Position>();
    EXPECT_EQ(run(q), (Entities{a}));
    EXPECT_EQ(q.count(), 1u);
}

TEST(Query, AddedSeesNewComponentsOnce) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{});
    const ts::Entity v = w.spawn(Velocity{});
    auto q = w.query<ts::Entity>().added<Position>();
    EXPECT_EQ(run(q), (Entities{a}));
    EXPECT_TRUE(run(q).empty());
    // Writes are not additions.
    w.set(a, Position{1, 1});
    w.get_mut<Position>(a);
    w.add(a, Position{2, 2});  // replace
    EXPECT_TRUE(run(q).empty());
    // An archetype move keeps the added tick.
    w.add<Frozen>(a);
    EXPECT_TRUE(run(q).empty());
    // Adding to an existing entity, and spawning with it.
    w.add(v, Position{});
    const ts::Entity n = w.spawn(Position{}, Health{});
    EXPECT_EQ(as_set(run(q)), as_set(Entities{v, n}));
    EXPECT_TRUE(run(q).empty());
    // Remove then add again is a new addition.
    w.remove<Position>(a);
    w.advance_tick();
    w.add<Position>(a);
    EXPECT_EQ(run(q), (Entities{a}));
    EXPECT_TRUE(run(q).empty());
}

TEST(Query, ChangedFilterOnALargeTableSeesExactlyTheScatteredWrites) {
    // Thousands of rows, so the filter works over many blocks of rows; every way a row's
    // changed tick moves: a write, a swap-removal filling a hole, a move to another table, a
    // batch spawn, a write to a whole table.
    ts::World w;
    Entities es;
    for (int i = 0; i < 5000; ++i) es.push_back(w.spawn(Position{float(i), 0}));
    (void)w.changed_tick<Position>(es[0]);  // tracking on: every row stamped now
    std::uint64_t since = w.tick();         // what is written after this call is newer
    (void)w.advance_tick();
    auto changed = [&] {
        auto q = w.query<ts::Entity>().changed_since<Position>(since);
        return as_set(visit(q));
    };
    EXPECT_TRUE(changed().empty());
    std::set<ts::Entity> want;
    for (const std::size_t i : {0, 1, 15, 16, 17, 2047, 4095, 4999}) {
        w.get_mut<Position>(es[i]).y = 1;
        want.insert(es[i]);
    }
    EXPECT_EQ(changed(), want) << "writes";
    w.despawn(es[1]);  // the last row (es[4999], changed) fills its hole
    w.despawn(es[2]);  // the new last row (es[4998], unchanged) fills this one
    want.erase(es[1]);
    EXPECT_EQ(changed(), want) << "despawns";
    w.add(es[15], Velocity{});   // a changed row moves to another table
    w.add(es[100], Velocity{});  // an unchanged one too
    EXPECT_EQ(changed(), want) << "table moves";
    for (const ts::Entity e : w.spawn_many(40, [](std::size_t, Position&) {})) want.insert(e);
    EXPECT_EQ(changed(), want) << "spawn_many";
    since = w.tick();
    (void)w.advance_tick();
    EXPECT_TRUE(changed().empty());
    w.query<Position&>().each([](Position&) {});
    EXPECT_EQ(changed().size(), w.count()) << "a T& term marks every row it visits";
}

TEST(Query, ChangedSinceAndAddedSinceAreStrictAndDoNotAdvanceTheTick) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{});  // tick 1
    const ts::Entity b = w.spawn(Position{});
    // Tracking is lazy: turn it on now, or building the first filter would stamp every
    // existing row with the tick current at that moment.
    EXPECT_EQ(w.changed_tick<Position>(a), 1u);
    EXPECT_EQ(w.advance_tick(), 2u);
    w.set(a, Position{1, 0});                  // changed at 2
    const ts::Entity c = w.spawn(Position{});  // added at 2
    EXPECT_EQ(w.advance_tick(), 3u);

    auto since0 = w.query<ts::Entity>().changed_since<Position>(0);
    auto since1 = w.query<ts::Entity>().changed_since<Position>(1);
    auto since2 = w.query<ts::Entity>().changed_since<Position>(2);
    EXPECT_EQ(as_set(run(since0)), as_set(Entities{a, b, c}));
    EXPECT_EQ(as_set(run(since1)), as_set(Entities{a, c}));
    EXPECT_TRUE(run(since2).empty()) << "strict >";
    EXPECT_EQ(as_set(run(since1)), as_set(Entities{a, c})) << "not 'since the last run'";
    EXPECT_EQ(w.tick(), 3u) << "explicit-tick filters do not advance the tick";

    auto added0 = w.query<ts::Entity>().added_since<Position>(0);
    auto added1 = w.query<ts::Entity>().added_since<Position>(1);
    auto added2 = w.query<ts::Entity>().added_since<Position>(2);
    EXPECT_EQ(as_set(run(added0)), as_set(Entities{a, b, c}));
    EXPECT_EQ(run(added1), (Entities{c}));
    EXPECT_TRUE(run(added2).empty()) << "strict >";
    EXPECT_EQ(run(added1), (Entities{c}));
    EXPECT_EQ(w.tick(), 3u);
    // A later write at tick 3 shows up for since2.
    w.get_mut<Position>(b);
    EXPECT_EQ(run(since2), (Entities{b}));
    EXPECT_EQ(w.tick(), 3u);
}

// =============================================================================================
// World::each
// =============================================================================================

TEST(Query, WorldEachRunsAOneOffQueryDeducedFromTheLambda) {
    Zoo z;
    ts::World& w = z.w;
    std::size_t n = 0;
    w.each([&](Position& p, const Velocity& v) {
        p.x += v.dx;
        ++n;
    });
    EXPECT_EQ(n, 9u);
    for (std::size_t i = 0; i < z.pve.size(); ++i) {
        EXPECT_EQ(w.get<Position>(z.pve[i]).x, float(i) + 3.0f);  // Velocity{3, 0}
    }
    for (std::size_t i = 0; i < z.p.size(); ++i) EXPECT_EQ(w.get<Position>(z.p[i]).x, float(i));

    Entities seen;
    w.each([&](ts::Entity e, const Health& h) {
        EXPECT_EQ(h, w.get<Health>(e));
        seen.push_back(e);
    });
    EXPECT_EQ(seen, z.ph);

    std::size_t with_v = 0, total = 0;
    w.each([&](ts::Entity e, const Position&, const Velocity* v) {
        EXPECT_EQ(v == nullptr, !w.has<Velocity>(e));
        if (v != nullptr) ++with_v;
        ++total;
    });
    EXPECT_EQ(with_v, 9u);
    EXPECT_EQ(total, 21u);

    // A tag parameter filters like a term.
    std::size_t frozen = 0;
    w.each([&](const Frozen&) { ++frozen; });
    EXPECT_EQ(frozen, 9u);

    // World::each stamps T& terms like a query does.
    (void)w.changed_tick<Health>(z.ph[0]);
    w.advance_tick();
    w.each([](Health& h) { h.hp += 1; });
    EXPECT_EQ(w.changed_tick<Health>(z.ph[0]), w.tick());
    EXPECT_EQ(w.get<Health>(z.ph[2]).hp, 3);
}

// =============================================================================================
// QuerySpec + collect_chunks
// =============================================================================================

TEST(Query, QuerySpecBuilderAndAggregateCollectTheRightChunks) {
    Zoo z;
    ts::World& w = z.w;
    for (ts::Entity e : z.pf) w.despawn(e);  // PF is now empty: never collected
    const ts::QuerySpec built =
        ts::QuerySpec().with<Position>().without<Enemy>().any_of<Velocity, Frozen>();
    const ts::QuerySpec aggregate{.all = {ts::component_id<Position>()},
                                  .any = {ts::component_id<Velocity>(), ts::component_id<Frozen>()},
                                  .none = {ts::component_id<Enemy>()}};
    const Entities expected = brute(w, [&](ts::Entity e) {
        return w.has<Position>(e) && !w.has<Enemy>(e) && (w.has<Velocity>(e) || w.has<Frozen>(e));
    });
    ASSERT_EQ(expected.size(), 6u);  // PV, PVF

    std::vector<ts::Chunk> out;
    w.collect_chunks(ts::QuerySpec().with<Health>(), out);  // something else first
    ASSERT_EQ(out.size(), 1u);
    w.collect_chunks(built, out);
    EXPECT_EQ(out.size(), 2u) << "out is cleared on each call";
    EXPECT_EQ(chunk_entities(out), expected);
    for (const ts::Chunk& c : out) {
        EXPECT_GT(c.count(), 0u);
        EXPECT_TRUE(c.has<Position>());
        EXPECT_FALSE(c.has<Enemy>());
        EXPECT_EQ(c.column<const Position>().size(), c.count());
    }
    w.collect_chunks(aggregate, out);
    EXPECT_EQ(chunk_entities(out), expected);

    // Only `none`, only `any`, and an empty spec (every non-empty archetype).
    w.collect_chunks(ts::QuerySpec{.all = {}, .any = {}, .none = {ts::component_id<Position>()}},
                     out);
    EXPECT_EQ(chunk_entities(out), brute(w, [&](ts::Entity e) { return !w.has<Position>(e); }));
    w.collect_chunks(ts::QuerySpec().any_of<Health, Enemy>(), out);
    EXPECT_EQ(chunk_entities(out),
              brute(w, [&](ts::Entity e) { return w.has<Health>(e) || w.has<Enemy>(e); }));
    w.collect_chunks(ts::QuerySpec{}, out);
    EXPECT_EQ(chunk_entities(out), w.entities());

    // A spec that matches nothing clears out.
    w.collect_chunks(ts::QuerySpec().with<Name>(), out);
    EXPECT_TRUE(out.empty());

    // New archetypes are seen by the next call.
    const ts::Entity n = w.spawn(Name{"x"}, Position{}, Velocity{});
    w.collect_chunks(built, out);
    EXPECT_EQ(chunk_entities(out).back(), n);

    // Writes through a collected chunk's column are visible.
    w.collect_chunks(ts::QuerySpec().with<Health>(), out);
    ASSERT_EQ(out.size(), 1u);
    out[0].column<Health>()[1].hp = 99;
    EXPECT_EQ(w.get<Health>(out[0].entities()[1]).hp, 99);
}

TEST(Query, QuerySpecMatchesArchetypes) {
    Zoo z;
    const ts::QuerySpec spec = ts::QuerySpec().with<Position>().without<Frozen>();
    std::vector<ts::Chunk> out;
    z.w.collect_chunks(ts::QuerySpec{}, out);
    for (const ts::Chunk& c : out) {
        EXPECT_EQ(spec.matches(c.archetype()), c.has<Position>() && !c.has<Frozen>());
    }
    EXPECT_EQ(z.w.query<const Position&>().without<Frozen>().spec().none,
              (std::vector<ts::ComponentId>{ts::component_id<Frozen>()}));
}

TEST(Query, CollectChunksAllocatesNothingAfterWarmUp) {
    CountingResource mr;
    ts::World w(&mr);
    for (int i = 0; i < 100; ++i) {
        const ts::Entity e = w.spawn(Position{float(i), 0});
        if (i % 2 == 0) w.add(e, Velocity{});
        if (i % 3 == 0) w.add<Frozen>(e);
        if (i % 5 == 0) w.add<Enemy>(e);
    }
    const ts::QuerySpec built =
        ts::QuerySpec().with<Position>().without<Frozen>().any_of<Velocity, Enemy>();
    const ts::QuerySpec aggregate{.all = {ts::component_id<Position>()},
                                  .any = {ts::component_id<Velocity>(), ts::component_id<Enemy>()},
                                  .none = {ts::component_id<Frozen>()}};
    std::vector<ts::Chunk> out;
    w.collect_chunks(built, out);  // warm-up: out grows to the number of matches
    w.collect_chunks(aggregate, out);
    const std::size_t expected = out.size();
    ASSERT_GT(expected, 0u);

    const std::size_t resource_before = mr.allocations;
    const std::size_t global_before = tessera::test::global_news;
    std::size_t rows = 0;
    for (int i = 0; i < 1000; ++i) {
        w.collect_chunks(i % 2 == 0 ? built : aggregate, out);
        for (const ts::Chunk& c : out) rows += c.count();
    }
    const std::size_t resource_allocs = mr.allocations - resource_before;
    const std::size_t global_allocs = tessera::test::global_news - global_before;
    EXPECT_EQ(resource_allocs, 0u);
    EXPECT_EQ(global_allocs, 0u);
    EXPECT_EQ(out.size(), expected);
    EXPECT_EQ(rows, 1000 * chunk_entities(out).size());
}

TEST(Query, EachEachChunkChunksAndCountAllocateNothingAfterWarmUp) {
    CountingResource mr;
    ts::World w(&mr);
    for (int i = 0; i < 200; ++i) {
        const ts::Entity e = w.spawn(Position{float(i), 0}, Velocity{1, 1});
        if (i % 3 == 0) w.add(e, Health{i});
        if (i % 7 == 0) w.add<Frozen>(e);
    }
    auto movers = w.query<Position&, const Velocity&, const Health*>().without<Frozen>();
    auto changed = w.query<const Position&>().changed<Position>();
    // Warm-up: the first runs match the archetypes (and turn tracking on for `changed`).
    movers.each([](Position&, const Velocity&, const Health*) {});
    movers.each_chunk(
        [](ts::Chunk&, std::span<Position>, std::span<const Velocity>, std::span<const Health>) {});
    changed.each([](const Position&) {});
    (void)movers.count();
    for (ts::Chunk& c : movers.chunks()) (void)c;

    const std::size_t resource_before = mr.allocations;
    const std::size_t global_before = tessera::test::global_news;
    float sum = 0;
    std::size_t changed_rows = 0, counted = 0;
    for (int i = 0; i < 1000; ++i) {
        movers.each([](ts::Entity, Position& p, const Velocity& v, const Health* h) {
            p.x += v.dx + (h != nullptr ? 1.0f : 0.0f);
        });
        movers.each_chunk([&](ts::Chunk&, std::span<Position> p, std::span<const Velocity>,
                              std::span<const Health>) { sum += p[0].x; });
        for (ts::Chunk& c : movers.chunks()) sum += c.column<const Position>()[0].y;
        changed.each([&](const Position&) { ++changed_rows; });
        counted += movers.count();
        w.advance_tick();
    }
    const std::size_t resource_allocs = mr.allocations - resource_before;
    const std::size_t global_allocs = tessera::test::global_news - global_before;
    EXPECT_EQ(resource_allocs, 0u);
    EXPECT_EQ(global_allocs, 0u);
    EXPECT_GT(sum, 0.0f);
    EXPECT_EQ(counted, 1000 * movers.count());
    EXPECT_EQ(changed_rows, 1000 * movers.count()) << "each iteration rewrites every mover";
}

// =============================================================================================
// World move
// =============================================================================================

TEST(Query, QuerySurvivesAWorldMove) {
    auto a = std::make_unique<ts::World>();
    const ts::Entity e1 = a->spawn(Position{1, 0}, Velocity{1, 0});
    const ts::Entity e2 = a->spawn(Position{2, 0});
    auto q = a->query<Position&>().without<Frozen>();
    auto changed = a->query<const Position&>().changed<Position>();
    EXPECT_EQ(visit(q), (Entities{e1, e2}));
    EXPECT_EQ(visit(changed).size(), 2u);

    ts::World b(std::move(*a));
    a.reset();  // the moved-from world is gone; the query refers to b's storage
    EXPECT_EQ(visit(q), (Entities{e1, e2}));
    q.each([](Position& p) { p.y = 5; });
    EXPECT_EQ(b.get<Position>(e1).y, 5.0f);
    // New archetypes in b are matched incrementally.
    const ts::Entity e3 = b.spawn(Position{3, 0}, Health{});
    const ts::Entity e4 = b.spawn(Position{4, 0}, Frozen{});
    EXPECT_EQ(visit(q), (Entities{e1, e2, e3}));
    // Change bookkeeping carries over too: q's writes and the new entities are seen once.
    EXPECT_EQ(visit(changed), (Entities{e1, e2, e3, e4}));
    EXPECT_TRUE(visit(changed).empty());
    // Move assignment: the storage moves again, and the queries follow it.
    ts::World c;
    c = std::move(b);
    c.set(e2, Position{});
    EXPECT_EQ(visit(changed), (Entities{e2}));
    EXPECT_EQ(visit(q), (Entities{e1, e2, e3}));
    EXPECT_EQ(c.get<Position>(e3).y, 0.0f);
}

// A query keeps each matched table's columns between runs: they must follow the tables' growth
// (their base pointers move), optional terms absent from a table, and a restore that replaces
// every table.
TEST(Query, KeptColumnsFollowGrowthAbsenceAndRestore) {
    ts::World w;
    const ts::Entity first = w.spawn(Position{1, 0}, Velocity{2, 0});
    w.spawn(Position{5, 0});  // a table without Velocity: the optional term is null there
    auto q = w.query<Position&, const Velocity*>();
    auto sum = [&] {
        float total = 0;
        q.each([&](Position& p, const Velocity* v) { total += p.x + (v != nullptr ? v->dx : 0); });
        return total;
    };
    EXPECT_EQ(sum(), 8.0f);
    const ts::Snapshot snap = w.snapshot();
    for (int i = 0; i < 5000; ++i) w.spawn(Position{1, 0}, Velocity{1, 0});  // tables grow
    EXPECT_EQ(sum(), 8.0f + 5000 * 2.0f);
    q.each_chunk([](ts::Chunk& c, std::span<Position> p, std::span<const Velocity> v) {
        EXPECT_EQ(p.size(), c.count());
        EXPECT_TRUE(v.empty() || v.size() == c.count());
    });
    w.restore(snap);  // new tables: the query matches them again
    EXPECT_EQ(sum(), 8.0f);
    w.get_mut<Position>(first).x = 10;
    EXPECT_EQ(sum(), 17.0f);
}

// =============================================================================================
// Randomized model test: queries against a brute-force filter over world.entities()
// =============================================================================================

namespace {

struct MA {
    int v = 0;
};
struct MB {
    double v = 0;
};
struct MC {
    std::string s;
};
struct alignas(32) MD {
    float v[5] = {};
};
struct MTag1 {};
struct MTag2 {};

using ModelTypes = std::tuple<MA, MB, MC, MD, MTag1, MTag2>;
constexpr std::size_t model_type_count = std::tuple_size_v<ModelTypes>;

enum class Role { ignore, with, without, any };
using Roles = std::array<Role, model_type_count>;

template <std::size_t I>
using ModelType = std::tuple_element_t<I, ModelTypes>;

template <std::size_t... I>
bool has_type(const ts::World& w, ts::Entity e, std::size_t k, std::index_sequence<I...>) {
    bool r = false;
    ((k == I ? void(r = w.has<ModelType<I>>(e)) : void()), ...);
    return r;
}
bool has_type(const ts::World& w, ts::Entity e, std::size_t k) {
    return has_type(w, e, k, std::make_index_sequence<model_type_count>{});
}

template <std::size_t... I>
void add_type(ts::World& w, ts::Entity e, std::size_t k, int value, std::index_sequence<I...>) {
    (
        [&] {
            if (k != I) return;
            using T = ModelType<I>;
            if constexpr (std::is_same_v<T, MA>)
                w.add(e, MA{value});
            else if constexpr (std::is_same_v<T, MB>)
                w.add(e, MB{double(value)});
            else if constexpr (std::is_same_v<T, MC>)
                w.add(e, MC{std::string(40, char('a' + value % 26))});
            else if constexpr (std::is_same_v<T, MD>)
                w.add(e, MD{{float(value)}});
            else
                w.add<T>(e);
        }(),
        ...);
}

template <std::size_t... I>
void remove_type(ts::World& w, ts::Entity e, std::size_t k, std::index_sequence<I...>) {
    ((k == I ? void(w.remove<ModelType<I>>(e)) : void()), ...);
}

/// Applies `roles` to a typed query through its builder members.
template <class Q, std::size_t... I>
void apply_roles(Q& q, const Roles& roles, std::index_sequence<I...>) {
    (
        [&] {
            using T = ModelType<I>;
            switch (roles[I]) {
                case Role::with: q.template with<T>(); break;
                case Role::without: q.template without<T>(); break;
                case Role::any: q.template any<T>(); break;
                case Role::ignore: break;
            }
        }(),
        ...);
}

ts::QuerySpec spec_of(const Roles& roles) {
    const std::array<ts::ComponentId, model_type_count> ids = {
        ts::component_id<MA>(), ts::component_id<MB>(),    ts::component_id<MC>(),
        ts::component_id<MD>(), ts::component_id<MTag1>(), ts::component_id<MTag2>()};
    ts::QuerySpec spec;
    for (std::size_t k = 0; k < model_type_count; ++k) {
        if (roles[k] == Role::with) spec.all.push_back(ids[k]);
        if (roles[k] == Role::without) spec.none.push_back(ids[k]);
        if (roles[k] == Role::any) spec.any.push_back(ids[k]);
    }
    return spec;
}

bool model_matches(const ts::World& w, ts::Entity e, const Roles& roles, bool require_a) {
    if (require_a && !w.has<MA>(e)) return false;
    bool any_seen = false, any_hit = false;
    for (std::size_t k = 0; k < model_type_count; ++k) {
        const bool h = has_type(w, e, k);
        switch (roles[k]) {
            case Role::with:
                if (!h) return false;
                break;
            case Role::without:
                if (h) return false;
                break;
            case Role::any:
                any_seen = true;
                any_hit = any_hit || h;
                break;
            case Role::ignore: break;
        }
    }
    return !any_seen || any_hit;
}

std::string describe(const Roles& roles) {
    static const char* const names[] = {"MA", "MB", "MC", "MD", "MTag1", "MTag2"};
    static const char* const role_names[] = {"", "with", "without", "any"};
    std::string s;
    for (std::size_t k = 0; k < model_type_count; ++k) {
        if (roles[k] == Role::ignore) continue;
        s += std::string(role_names[int(roles[k])]) + "<" + names[k] + "> ";
    }
    return s.empty() ? "(no filter)" : s;
}

/// One random query in three typed forms plus its spec.
struct ModelQuery {
    Roles roles;
    ts::Query<ts::Entity> plain;    // filters only
    ts::Query<const MA*> optional;  // optional term + filters
    ts::Query<const MA&> required;  // required term + filters
    ts::QuerySpec spec;
};

Roles random_roles(std::mt19937& rng) {
    Roles roles{};
    std::uniform_int_distribution<int> pick(0, 9);
    for (Role& r : roles) {
        const int x = pick(rng);
        r = x < 5 ? Role::ignore : x < 7 ? Role::with : x < 9 ? Role::without : Role::any;
    }
    return roles;
}

ModelQuery make_query(ts::World& w, const Roles& roles) {
    ModelQuery m{roles, w.query<ts::Entity>(), w.query<const MA*>(), w.query<const MA&>(),
                 spec_of(roles)};
    apply_roles(m.plain, roles, std::make_index_sequence<model_type_count>{});
    apply_roles(m.optional, roles, std::make_index_sequence<model_type_count>{});
    apply_roles(m.required, roles, std::make_index_sequence<model_type_count>{});
    return m;
}

void check_query(ts::World& w, ModelQuery& m) {
    SCOPED_TRACE(describe(m.roles));
    const Entities expected =
        brute(w, [&](ts::Entity e) { return model_matches(w, e, m.roles, false); });
    const Entities expected_a =
        brute(w, [&](ts::Entity e) { return model_matches(w, e, m.roles, true); });

    // each: same entities, in the documented order.
    EXPECT_EQ(visit(m.plain), expected);
    EXPECT_EQ(m.plain.count(), expected.size());

    Entities seen;
    m.optional.each([&](ts::Entity e, const MA* a) {
        seen.push_back(e);
        const MA* stored = w.try_get<MA>(e);
        EXPECT_EQ(a, stored);
    });
    EXPECT_EQ(seen, expected);

    seen.clear();
    m.required.each([&](ts::Entity e, const MA& a) {
        seen.push_back(e);
        EXPECT_EQ(a.v, w.get<MA>(e).v);
    });
    EXPECT_EQ(seen, expected_a);
    EXPECT_EQ(m.required.count(), expected_a.size());

    // chunks(), each_chunk and collect_chunks agree.
    seen.clear();
    for (ts::Chunk& c : m.plain.chunks()) {
        EXPECT_GT(c.count(), 0u);
        seen.insert(seen.end(), c.entities().begin(), c.entities().end());
    }
    EXPECT_EQ(seen, expected);
    seen.clear();
    m.optional.each_chunk([&](ts::Chunk& c, std::span<const MA> a) {
        EXPECT_EQ(a.size(), c.has<MA>() ? c.count() : 0u);
        seen.insert(seen.end(), c.entities().begin(), c.entities().end());
    });
    EXPECT_EQ(seen, expected);
    std::vector<ts::Chunk> out;
    w.collect_chunks(m.spec, out);
    EXPECT_EQ(chunk_entities(out), expected);
}

}  // namespace

TEST(QueryModel, RandomWorldsAndQueriesMatchABruteForceFilter) {
    for (std::uint32_t seed = 1; seed <= 30; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937 rng(seed);
        ts::World w;
        std::vector<ModelQuery> queries;
        // Queries built on the empty world: they see every archetype incrementally.
        for (int i = 0; i < 6; ++i) queries.push_back(make_query(w, random_roles(rng)));
        Entities live;
        std::uniform_int_distribution<int> op(0, 99);
        std::uniform_int_distribution<std::size_t> type(0, model_type_count - 1);
        for (int round = 0; round < 8; ++round) {
            for (int step = 0; step < 60; ++step) {
                const int o = op(rng);
                if (o < 25 || live.empty()) {
                    const ts::Entity e = w.spawn();
                    for (std::size_t k = 0; k < model_type_count; ++k) {
                        if (rng() % 3 == 0)
                            add_type(w, e, k, int(rng() % 1000),
                                     std::make_index_sequence<model_type_count>{});
                    }
                    live.push_back(e);
                } else {
                    const std::size_t i = rng() % live.size();
                    const ts::Entity e = live[i];
                    if (o < 60) {
                        add_type(w, e, type(rng), int(rng() % 1000),
                                 std::make_index_sequence<model_type_count>{});
                    } else if (o < 88) {
                        remove_type(w, e, type(rng), std::make_index_sequence<model_type_count>{});
                    } else {
                        EXPECT_TRUE(w.despawn(e));
                        live[i] = live.back();
                        live.pop_back();
                    }
                }
            }
            ASSERT_EQ(w.count(), live.size());
            // Queries built mid-way match the archetypes that already exist.
            queries.push_back(make_query(w, random_roles(rng)));
            for (ModelQuery& m : queries) check_query(w, m);
            if (HasFailure()) return;
        }
    }
}

TEST(Query, ChunksOfATemporaryQuery) {
    Zoo z;
    std::size_t rows = 0;
    for (ts::Chunk& c : z.w.query<const Health&>().chunks()) {
        EXPECT_EQ(c.column<const Health>().size(), c.count());
        rows += c.count();
    }
    EXPECT_EQ(rows, 3u);
}

using tessera::test::load_at_tick;

TEST(Query, ChangeFilterRunAtMaxTickIsLimitExceededBeforeItRuns) {
    ts::World w;
    load_at_tick(w, ts::World::max_tick - 1);
    w.advance_tick();  // to the top
    w.spawn(Position{1, 2});
    auto changed = w.query<const Position&>().changed<Position>();
    int calls = 0;
    try {
        changed.each([&](const Position&) { ++calls; });
        ADD_FAILURE() << "the run would have advanced the tick past World::max_tick";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::limit_exceeded);
    }
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(w.tick(), ts::World::max_tick);
    // A query without a since-last-run filter doesn't advance the tick: it runs.
    w.query<Position&>().each([&](Position& p) {
        p.x = 3;
        ++calls;
    });
    EXPECT_EQ(calls, 1);
}

// issue 20, item 8: a Query could not be default-constructed, so a class could not hold one as
// a member to assign later.
namespace {
struct Movement {
    ts::Query<Position&, const Velocity&> movers;  // empty until the world exists
};

template <class F>
ts::errc empty_query_error(F&& f) {
    try {
        f();
    } catch (const ts::Error& e) {
        return e.code();
    }
    ADD_FAILURE() << "no tessera::Error thrown";
    return ts::errc::not_alive;
}
}  // namespace

TEST(Query, DefaultConstructedQueryIsEmptyUntilAssigned) {
    static_assert(std::is_nothrow_default_constructible_v<ts::Query<Position&, const Velocity&>>);
    Movement m;
    EXPECT_FALSE(m.movers);
    int visited = 0;
    m.movers.each([&](Position&, const Velocity&) { ++visited; });
    m.movers.each([&](ts::Entity, Position&, const Velocity&) { ++visited; });
    m.movers.par_each([&](Position&, const Velocity&) { ++visited; });
    m.movers.each_chunk(
        [&](ts::Chunk&, std::span<Position>, std::span<const Velocity>) { ++visited; });
    for (ts::Chunk& c : m.movers.chunks()) visited += static_cast<int>(c.count());
    EXPECT_EQ(visited, 0);
    EXPECT_EQ(m.movers.count(), 0u);
    m.movers.without<Frozen>();  // only records the id
    // What needs a world is refused.
    EXPECT_EQ(empty_query_error([&] { m.movers.changed<Position>(); }), ts::errc::invalid_argument);
    EXPECT_EQ(empty_query_error([&] { m.movers.added<Position>(); }), ts::errc::invalid_argument);
    EXPECT_EQ(empty_query_error([&] { (void)m.movers.on_enter([](ts::World&, ts::Entity) {}); }),
              ts::errc::invalid_argument);

    // Assigned, it is the world's query, allocating from the world's memory resource.
    CountingResource mr;
    ts::World w(&mr);
    const ts::Entity a = w.spawn(Position{1, 0}, Velocity{1, 2});
    (void)w.spawn(Position{5, 0}, Velocity{1, 2}, Frozen{});
    m.movers = w.query<Position&, const Velocity&>().without<Frozen>();
    EXPECT_TRUE(m.movers);
    EXPECT_EQ(m.movers.count(), 1u);
    m.movers.each([](Position& p, const Velocity& v) { p.x += v.dx; });
    EXPECT_EQ(w.get<Position>(a).x, 2.0f);
    std::pmr::memory_resource* const previous =
        std::pmr::set_default_resource(std::pmr::null_memory_resource());
    std::size_t matched = 0;
    try {
        // New archetypes grow the query's match list: from the world's resource (the default
        // one would throw bad_alloc now).
        const ts::Entity b = w.spawn(Position{}, Velocity{}, Health{});
        const ts::Entity c = w.spawn(Position{}, Velocity{}, Name{});
        (void)b;
        (void)c;
        matched = m.movers.count();
    } catch (...) {
        std::pmr::set_default_resource(previous);
        throw;
    }
    std::pmr::set_default_resource(previous);
    EXPECT_EQ(matched, 3u);
    // Assigned an empty query again, it matches nothing.
    m.movers = {};
    EXPECT_FALSE(m.movers);
    EXPECT_EQ(m.movers.count(), 0u);
}

// A query matches against the tables of its rarest required component: among many archetypes,
// its first run, its later runs (tables made since) and a run after restore see exactly the
// tables a scan of every archetype would.
TEST(Query, MatchingAmongManyArchetypesFindsExactlyTheMatchingTables) {
    ts::World w;
    std::vector<ts::ComponentId> bits;
    for (int b = 0; b < 9; ++b) bits.push_back(w.component("QueryBit" + std::to_string(b)));
    const auto spawn_in = [&](int combo, bool moving) {
        const ts::Entity e = moving ? w.spawn(Position{1, 2}, Velocity{1, 0}) : w.spawn(Position{});
        for (int b = 0; b < 9; ++b) {
            if ((combo >> b & 1) != 0) w.add(e, bits[static_cast<std::size_t>(b)]);
        }
        return e;
    };
    Entities want;
    for (int combo = 0; combo < 400; ++combo) {
        const ts::Entity e = spawn_in(combo, combo % 37 == 0);
        if (combo % 37 == 0) want.push_back(e);
    }
    EXPECT_GT(w.archetype_count(), 400u);
    auto q = w.query<ts::Entity, Position&, const Velocity&>();
    const auto sorted = [](Entities es) {
        std::sort(es.begin(), es.end());
        return es;
    };
    EXPECT_EQ(sorted(visit(q)), sorted(want));
    const ts::Snapshot snap = w.snapshot();
    const Entities before = want;
    // Tables made after the first run, with and without Velocity.
    for (int combo = 400; combo < 512; ++combo) {
        const ts::Entity e = spawn_in(combo, combo % 5 == 0);
        if (combo % 5 == 0) want.push_back(e);
    }
    EXPECT_EQ(sorted(visit(q)), sorted(want));
    // A component no table had when the query was made: its tables appear as they are made.
    auto healthy = w.query<ts::Entity, const Health&, const Position&>();
    EXPECT_TRUE(visit(healthy).empty());
    Entities healthy_want;
    for (int combo = 0; combo < 512; combo += 64) {
        const ts::Entity e = spawn_in(combo, false);
        w.add(e, Health{combo});
        healthy_want.push_back(e);
    }
    EXPECT_EQ(sorted(visit(healthy)), sorted(healthy_want));
    w.restore(snap);
    EXPECT_EQ(sorted(visit(q)), sorted(before));
}
