// Enableable components and structural changes deferred during iteration (world.hpp,
// "Deferral"; query.hpp drives the iteration).
#include <tessera/tessera.hpp>

#include "common/counting_resource.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory_resource>
#include <new>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace ts = tessera;
using ts::test::Tracked;

namespace {
struct Position {
    float x = 0, y = 0;
    bool operator==(const Position&) const = default;
};
struct Name {
    std::string s;
};
struct Frozen {};
struct Ai {
    int level = 0;
};
struct Plain {
    int v = 0;
};
struct Toggle {};
}  // namespace

template <>
struct tessera::component_traits<Ai> {
    static constexpr bool enableable = true;
};
template <>
struct tessera::component_traits<Toggle> {
    static constexpr bool enableable = true;
};

// ------------------------------------------------------------------------------ enableable

TEST(WorldEnable, ComponentsStartEnabledAndToggleWithoutMoving) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 0}, Ai{1});
    const ts::Entity b = w.spawn(Position{2, 0}, Ai{2});
    const auto many = w.spawn_many(3, [](std::size_t i, Ai& ai) { ai.level = int(i); });
    EXPECT_TRUE(w.is_enabled<Ai>(a));
    EXPECT_TRUE(w.is_enabled<Ai>(many[2]));
    const std::size_t archetypes = w.archetype_count();
    const std::vector<ts::Entity> order = w.entities();
    w.enable<Ai>(a, false);
    EXPECT_FALSE(w.is_enabled<Ai>(a));
    EXPECT_TRUE(w.is_enabled<Ai>(b));
    EXPECT_TRUE(w.has<Ai>(a));         // still there
    EXPECT_EQ(w.get<Ai>(a).level, 1);  // value kept
    EXPECT_EQ(w.archetype_count(), archetypes);
    EXPECT_EQ(w.entities(), order);  // no row moved
    w.enable<Ai>(a);
    EXPECT_TRUE(w.is_enabled<Ai>(a));
}

TEST(WorldEnable, FlagTravelsWithTheRowAndNewComponentsStartEnabled) {
    ts::World w;
    const ts::Entity a = w.spawn(Ai{1});
    const ts::Entity b = w.spawn(Ai{2});
    w.enable<Ai>(a, false);
    w.add(a, Position{});  // moves a to another table
    EXPECT_FALSE(w.is_enabled<Ai>(a));
    w.despawn(b);  // nothing moves into a's old row that matters
    w.remove<Position>(a);
    EXPECT_FALSE(w.is_enabled<Ai>(a));
    const ts::Entity c = w.spawn(Position{});
    w.add(c, Ai{3});
    EXPECT_TRUE(w.is_enabled<Ai>(c));
    w.remove<Ai>(c);
    w.add(c, Ai{4});  // re-added: enabled again
    EXPECT_TRUE(w.is_enabled<Ai>(c));
}

TEST(WorldEnable, EachSkipsDisabledRowsChunksSeeTheFlags) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 10; ++i) es.push_back(w.spawn(Position{float(i), 0}, Ai{i}));
    for (int i = 0; i < 10; i += 3) w.enable<Ai>(es[i], false);
    std::set<int> seen;
    w.query<const Ai&>().each([&](const Ai& ai) { seen.insert(ai.level); });
    EXPECT_EQ(seen, (std::set<int>{1, 2, 4, 5, 7, 8}));
    // A `with` filter on an enableable component gates like a term (CozyECS's `all`); a query
    // that names Ai nowhere is not gated by it.
    int positions = 0;
    w.query<const Position&>().with<Ai>().each([&](const Position&) { ++positions; });
    EXPECT_EQ(positions, 6);
    positions = 0;
    w.query<const Position&>().each([&](const Position&) { ++positions; });
    EXPECT_EQ(positions, 10);
    EXPECT_EQ(w.query<const Ai&>().count(), 10u);  // count includes disabled rows
    std::size_t off = 0;
    for (ts::Chunk& c : w.query<const Ai&>().chunks()) {
        for (std::uint8_t f : c.enabled<Ai>()) off += f == 0 ? 1 : 0;
        EXPECT_THROW((void)c.enabled<Position>(), ts::Error);
    }
    EXPECT_EQ(off, 4u);
}

TEST(WorldEnable, WithFiltersGateParEachViewsAndDespawnAll) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 3000; ++i) es.push_back(w.spawn(Position{float(i), 0}, Ai{i}));
    for (int i = 0; i < 3000; i += 2) w.enable<Ai>(es[static_cast<std::size_t>(i)], false);
    std::atomic<int> n{0};
    w.query<const Position&>().with<Ai>().par_each([&](const Position& p) {
        EXPECT_EQ(static_cast<int>(p.x) % 2, 1);
        ++n;
    });
    EXPECT_EQ(n.load(), 1500);
    int seen = 0;
    ts::Schedule s(1);
    s.add("odd", [&](ts::View<const Position&, ts::With<Ai>> v) {
        v.each([&](const Position&) { ++seen; });
    });
    s.run(w);
    EXPECT_EQ(seen, 1500);
    auto q = w.query<const Position&>().with<Ai>();
    EXPECT_EQ(w.despawn_all(q), 1500u);  // what `each` would visit: the enabled rows
    EXPECT_EQ(w.count(), 1500u);
    EXPECT_FALSE(w.is_alive(es[1]));
    EXPECT_TRUE(w.is_alive(es[0]));
}

TEST(WorldEnable, TagsCanBeEnableable) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 6; ++i) es.push_back(w.spawn(Plain{i}, Toggle{}));
    const auto many = w.spawn_many(3, [](std::size_t i, Plain& p, Toggle&) { p.v = 10 + int(i); });
    EXPECT_TRUE(w.is_enabled<Toggle>(es[0]));
    EXPECT_TRUE(w.is_enabled<Toggle>(many[2]));
    const std::size_t archetypes = w.archetype_count();
    w.enable<Toggle>(es[1], false);
    w.enable<Toggle>(es[4], false);
    EXPECT_FALSE(w.is_enabled<Toggle>(es[1]));
    EXPECT_TRUE(w.has<Toggle>(es[1]));  // still there, no move
    EXPECT_EQ(w.archetype_count(), archetypes);
    auto values = [&](auto&& q) {
        std::set<int> out;
        q.each([&](const Plain& p, auto&&...) { out.insert(p.v); });
        return out;
    };
    const std::set<int> enabled{0, 2, 3, 5, 10, 11, 12};
    EXPECT_EQ(values(w.query<const Plain&, const Toggle&>()), enabled);  // a tag term gates
    EXPECT_EQ(values(w.query<const Plain&>().with<Toggle>()), enabled);  // so does `with`
    EXPECT_EQ(values(w.query<const Plain&, const Toggle*>()), enabled);
    for (ts::Chunk& c : w.query<const Plain&>().with<Toggle>().chunks()) {
        const auto flags = c.enabled<Toggle>();
        ASSERT_EQ(flags.size(), c.count());
        EXPECT_TRUE(c.column<Toggle>().empty());  // flags, no values
        std::size_t off = 0;
        for (const std::uint8_t f : flags) off += f == 0 ? 1 : 0;
        EXPECT_EQ(off, 2u);
    }
    // The flag travels with the row: moves, the row filling a despawn's hole, re-adds.
    w.add(es[1], Position{});
    EXPECT_FALSE(w.is_enabled<Toggle>(es[1]));
    w.despawn(es[0]);  // the last row (many[2]) fills row 0
    EXPECT_TRUE(w.is_enabled<Toggle>(many[2]));
    EXPECT_FALSE(w.is_enabled<Toggle>(es[4]));
    w.remove<Toggle>(es[4]);
    w.add<Toggle>(es[4]);
    EXPECT_TRUE(w.is_enabled<Toggle>(es[4]));  // re-added: enabled again
    ts::CommandBuffer cb;
    const ts::Entity fresh = w.spawn(Plain{99});
    cb.add<Toggle>(fresh);
    cb.apply(w);
    EXPECT_TRUE(w.is_enabled<Toggle>(fresh));
    // A copy keeps the flags.
    const ts::World copy = w.clone();
    EXPECT_FALSE(copy.is_enabled<Toggle>(es[1]));
    EXPECT_TRUE(copy.is_enabled<Toggle>(fresh));
}

TEST(WorldEnable, ErrorsNameTheCallAndChangeNothing) {
    ts::World w;
    const ts::Entity e = w.spawn(Plain{1}, Toggle{});
    const ts::Entity no_ai = w.spawn(Plain{2});
    try {
        w.enable<Plain>(e, false);
        FAIL();
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::not_enableable);
        EXPECT_NE(std::string(err.what()).find("Plain"), std::string::npos);
    }
    try {
        w.enable<Ai>(no_ai, false);
        FAIL();
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::missing_component);
    }
    w.despawn(e);
    try {
        (void)w.is_enabled<Ai>(e);
        FAIL();
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::not_alive);
    }
    EXPECT_EQ(w.get<Plain>(no_ai).v, 2);
}

// ------------------------------------------------------------------------------- deferral

TEST(WorldDeferral, DespawningEveryOtherEntityWhileIteratingVisitsEachRowOnce) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 1000; ++i) es.push_back(w.spawn(Position{float(i), 0}));
    std::vector<int> visits(1000, 0);
    w.query<ts::Entity, const Position&>().each([&](ts::Entity e, const Position& p) {
        ++visits[std::size_t(p.x)];
        if (int(p.x) % 2 == 0) {
            EXPECT_TRUE(w.despawn(e));
            EXPECT_TRUE(w.is_alive(e));  // alive and readable until the flush
            EXPECT_TRUE(w.despawn_pending(e));
            EXPECT_EQ(w.get<Position>(e).x, p.x);
            EXPECT_FALSE(w.despawn(e));  // already queued
        }
    });
    EXPECT_TRUE(std::all_of(visits.begin(), visits.end(), [](int v) { return v == 1; }));
    EXPECT_EQ(w.count(), 500u);
    for (int i = 0; i < 1000; ++i) {
        EXPECT_EQ(w.is_alive(es[i]), i % 2 == 1);
        EXPECT_FALSE(w.despawn_pending(es[i]));
    }
}

TEST(WorldDeferral, SpawnedEntitiesAreAliveButUnplacedUntilTheFlush) {
    ts::World w;
    for (int i = 0; i < 5; ++i) w.spawn(Position{float(i), 0});
    std::vector<ts::Entity> made;
    int visits = 0;
    w.query<Position&>().each([&](Position& p) {
        ++visits;
        const ts::Entity e = w.spawn(Position{p.x + 100, 0}, Name{"late"});
        EXPECT_TRUE(w.is_alive(e));
        EXPECT_FALSE(w.has<Position>(e));
        EXPECT_EQ(w.try_get<Position>(e), nullptr);
        made.push_back(e);
        made.push_back(w.spawn());
    });
    EXPECT_EQ(visits, 5);  // the new entities are not visited by the run that made them
    EXPECT_EQ(w.count(), 15u);
    for (std::size_t i = 0; i < made.size(); i += 2) {
        EXPECT_EQ(w.get<Name>(made[i]).s, "late");
        EXPECT_GE(w.get<Position>(made[i]).x, 100);
        EXPECT_TRUE(w.is_alive(made[i + 1]));
    }
    const std::vector<ts::Entity> listed = w.entities();
    EXPECT_EQ(listed.size(), 15u);  // placed entities are in their tables
}

TEST(WorldDeferral, AddAndRemoveApplyInOrderAndSkipDeadEntities) {
    Tracked::live = 0;
    {
        ts::World w;
        const ts::Entity a = w.spawn(Position{1, 0});
        const ts::Entity b = w.spawn(Position{2, 0});
        const ts::Entity c = w.spawn(Position{3, 0}, Frozen{});
        w.query<ts::Entity, const Position&>().each([&](ts::Entity e, const Position&) {
            if (e == a) {
                w.add(a, Name{"a"}, Tracked{7});
                w.add<Frozen>(a);
                w.remove<Frozen>(a);  // after the add: a ends without Frozen
                EXPECT_FALSE(w.has<Name>(a));
            }
            if (e == b) {
                w.add(b, Tracked{8});  // then b dies before the flush: the add is skipped
                w.despawn(b);
            }
            if (e == c) {
                EXPECT_TRUE(w.remove<Frozen>(c));
            }
        });
        EXPECT_EQ(w.get<Name>(a).s, "a");
        EXPECT_EQ(w.get<Tracked>(a).value, 7);
        EXPECT_FALSE(w.has<Frozen>(a));
        EXPECT_FALSE(w.is_alive(b));
        EXPECT_FALSE(w.has<Frozen>(c));
        EXPECT_EQ(Tracked::live, 1);  // b's queued value was destroyed, a's moved in
    }
    EXPECT_EQ(Tracked::live, 0);
}

TEST(WorldDeferral, AddOnADeadEntityStillThrowsImmediately) {
    ts::World w;
    const ts::Entity dead = w.spawn();
    w.despawn(dead);
    w.spawn(Position{});
    w.query<const Position&>().each([&](const Position&) {
        EXPECT_THROW(w.add(dead, Name{"x"}), ts::Error);
        EXPECT_THROW(w.remove<Name>(dead), ts::Error);
        EXPECT_FALSE(w.despawn(dead));
    });
}

TEST(WorldDeferral, NestedIterationFlushesAtTheOutermostEnd) {
    ts::World w;
    for (int i = 0; i < 3; ++i) w.spawn(Position{float(i), 0});
    auto outer = w.query<const Position&>();
    auto inner = w.query<ts::Entity, const Position&>();
    std::size_t count_inside = 0;
    outer.each([&](const Position&) {
        inner.each([&](ts::Entity e, const Position&) {
            if (!w.despawn_pending(e)) w.despawn(e);
        });
        count_inside = w.count();  // the inner loop ended, but the outer one still runs
    });
    EXPECT_EQ(count_inside, 3u);
    EXPECT_EQ(w.count(), 0u);
}

TEST(WorldDeferral, AChunkRangeDefersUntilItIsDestroyed) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 0});
    {
        auto q = w.query<const Position&>();
        auto range = q.chunks();
        for (ts::Chunk& c : range) {
            EXPECT_EQ(c.count(), 1u);
            w.despawn(a);
            w.spawn(Position{5, 5});
        }
        EXPECT_TRUE(w.is_alive(a));  // the range is still alive
    }
    EXPECT_FALSE(w.is_alive(a));
    EXPECT_EQ(w.count(), 1u);
}

TEST(WorldDeferral, AThrowingCallbackStillAppliesWhatWasQueued) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 0});
    w.spawn(Position{2, 0});
    auto q = w.query<ts::Entity, const Position&>();
    const auto stop = [&](ts::Entity e, const Position&) {
        w.despawn(e);
        throw std::runtime_error("stop");
    };
    EXPECT_THROW(q.each(stop), std::runtime_error);
    EXPECT_FALSE(w.is_alive(a));
    EXPECT_EQ(w.count(), 1u);
    // The world is not left deferring.
    const ts::Entity b = w.spawn(Position{3, 0});
    EXPECT_TRUE(w.has<Position>(b));
}

TEST(WorldDeferral, EachChunkDefersToo) {
    ts::World w;
    for (int i = 0; i < 4; ++i) w.spawn(Position{float(i), 0});
    w.query<const Position&>().each_chunk([&](ts::Chunk& c, std::span<const Position>) {
        for (ts::Entity e : c.entities()) w.add<Frozen>(e);
        EXPECT_EQ(c.count(), 4u);  // the table did not change under the loop
    });
    EXPECT_EQ(w.query<const Position&>().with<Frozen>().count(), 4u);
}

// ------------------------------------------------------------------------------ lifetimes

TEST(WorldLifetime, PermanentEntitiesCannotBeDespawned) {
    ts::World w;
    const ts::Entity d = w.spawn(Position{1, 1});
    const ts::Entity p = w.spawn_permanent(Position{2, 2}, Name{"keep"});
    const ts::Entity bare = w.spawn_permanent();
    EXPECT_TRUE(w.is_permanent(p));
    EXPECT_TRUE(w.is_permanent(bare));
    EXPECT_FALSE(w.is_permanent(d));
    try {
        w.despawn(p);
        FAIL();
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::permanent_entity);
        const std::string handle = std::to_string(p.index) + ":" + std::to_string(p.generation);
        EXPECT_NE(std::string(err.what()).find(handle), std::string::npos) << err.what();
    }
    EXPECT_TRUE(w.is_alive(p));
    EXPECT_EQ(w.get<Name>(p).s, "keep");
    // Also while iterating (the check is not deferred).
    w.query<const Position&>().each(
        [&](const Position&) { EXPECT_THROW(w.despawn(p), ts::Error); });
    EXPECT_TRUE(w.is_alive(p));
    // Components still come and go.
    w.remove<Name>(p);
    EXPECT_FALSE(w.has<Name>(p));
    EXPECT_TRUE(w.despawn(d));
}

TEST(WorldLifetime, EachEntityFiltersByLifetimeAndDefers) {
    ts::World w;
    std::vector<ts::Entity> dynamic, permanent;
    for (int i = 0; i < 6; ++i) {
        dynamic.push_back(i % 2 ? w.spawn(Position{}) : w.spawn());
        permanent.push_back(i % 2 ? w.spawn_permanent(Position{}) : w.spawn_permanent());
    }
    std::vector<ts::Entity> seen;
    w.each_entity([&](ts::Entity e) { seen.push_back(e); }, ts::Lifetime::permanent);
    std::sort(seen.begin(), seen.end());
    std::sort(permanent.begin(), permanent.end());
    EXPECT_EQ(seen, permanent);
    seen.clear();
    w.each_entity([&](ts::Entity e) { seen.push_back(e); }, ts::Lifetime::dynamic);
    std::sort(seen.begin(), seen.end());
    std::sort(dynamic.begin(), dynamic.end());
    EXPECT_EQ(seen, dynamic);
    std::size_t all = 0;
    w.each_entity([&](ts::Entity e) {
        ++all;
        if (!w.is_permanent(e)) w.despawn(e);  // deferred: the walk is not disturbed
    });
    EXPECT_EQ(all, 12u);
    EXPECT_EQ(w.count(), 6u);
}

// ------------------------------------------------------------- whole-chunk tick stamps

TEST(QueryStamp, ChunkStampsSurviveRowsMovingInAndOut) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 0});
    const ts::Entity b = w.spawn(Position{2, 0});
    const ts::Entity old = w.spawn(Position{3, 0}, Frozen{});
    (void)w.changed_tick<Position>(a);  // tracking on at tick 1
    w.advance_tick();                   // 2
    w.set(old, Position{3, 1});         // old: changed at 2
    w.advance_tick();                   // 3
    w.advance_tick();                   // 4
    w.query<Position&>().without<Frozen>().each([](Position& p) { p.y = 9; });  // stamps a, b at 4
    EXPECT_EQ(w.changed_tick<Position>(a), 4u);
    EXPECT_EQ(w.changed_tick<Position>(b), 4u);
    EXPECT_EQ(w.changed_tick<Position>(old), 2u);
    w.advance_tick();       // 5
    w.remove<Frozen>(old);  // an older row enters the stamped table
    EXPECT_EQ(w.changed_tick<Position>(old), 2u);
    EXPECT_EQ(w.changed_tick<Position>(a), 4u);
    EXPECT_EQ(w.changed_tick<Position>(b), 4u);
    w.add<Frozen>(a);  // a stamped row leaves: it keeps its tick
    EXPECT_EQ(w.changed_tick<Position>(a), 4u);
    w.despawn(old);  // the swap inside a table keeps ticks too
    EXPECT_EQ(w.changed_tick<Position>(b), 4u);
    // A change filter sees the chunk stamp like a per-row one.
    auto since = w.query<const Position&>().changed_since<Position>(3);
    std::size_t n = 0;
    since.each([&](const Position&) { ++n; });
    EXPECT_EQ(n, 2u);  // a and b
}

// ------------------------------------------------------------------------ deferral on demand

TEST(DeferOnDemand, DeferBeginQueuesUntilTheOutermostEnd) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 1});
    EXPECT_FALSE(w.deferring());
    w.defer_begin();
    EXPECT_TRUE(w.deferring());
    const ts::Entity b = w.spawn(Position{2, 2});
    EXPECT_TRUE(w.is_alive(b));
    EXPECT_FALSE(w.has<Position>(b)) << "components come at the flush";
    EXPECT_TRUE(w.despawn(a));
    EXPECT_TRUE(w.despawn_pending(a));
    EXPECT_TRUE(w.is_alive(a));
    w.defer_begin();  // nested
    w.add(b, Name{"b"});
    w.defer_end();
    EXPECT_FALSE(w.has<Name>(b)) << "an inner end applies nothing";
    EXPECT_FALSE(w.flush()) << "flush is a no-op while deferring";
    w.defer_end();
    EXPECT_FALSE(w.deferring());
    EXPECT_FALSE(w.is_alive(a));
    EXPECT_EQ(w.get<Position>(b).x, 2);
    EXPECT_EQ(w.get<Name>(b).s, "b");
    EXPECT_TRUE(w.flush()) << "nothing queued: applies nothing";
}

TEST(DeferOnDemand, LevelsNestWithLoopsEitherWay) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 1});
    // A loop inside a defer scope: its end applies nothing.
    w.defer_begin();
    w.query<const Position&>().each([&](const Position&) { w.add(a, Frozen{}); });
    EXPECT_FALSE(w.has<Frozen>(a));
    w.defer_end();
    EXPECT_TRUE(w.has<Frozen>(a));
    // A scope opened in a loop and closed after it: the loop's end applies nothing.
    w.query<const Position&>().each([&](const Position&) {
        w.defer_begin();
        (void)w.remove<Frozen>(a);
    });
    EXPECT_TRUE(w.has<Frozen>(a));
    w.defer_end();
    EXPECT_FALSE(w.has<Frozen>(a));
}

TEST(DeferOnDemand, AnUnmatchedEndIsAnErrorAndLeavesALoopAlone) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 1});
    try {
        w.defer_end();
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("World::defer_end"), std::string::npos);
    }
    w.query<const Position&>().each([&](const Position&) {
        EXPECT_THROW(w.defer_end(), ts::Error) << "a loop's level is not the caller's to end";
        w.add(a, Frozen{});
        EXPECT_TRUE(w.deferring());
        EXPECT_FALSE(w.has<Frozen>(a));
    });
    EXPECT_TRUE(w.has<Frozen>(a));
}

TEST(DeferOnDemand, DeferralScopeAppliesWhenClosedOrDestroyed) {
    ts::World w;
    ts::Entity b;
    {
        ts::Deferral scope(w);
        b = w.spawn(Name{"scoped"});
        EXPECT_FALSE(w.has<Name>(b));
    }
    EXPECT_EQ(w.get<Name>(b).s, "scoped");
    ts::Deferral scope(w);
    (void)w.despawn(b);
    EXPECT_TRUE(w.is_alive(b));
    scope.close();
    EXPECT_FALSE(w.is_alive(b));
    EXPECT_FALSE(w.deferring());
}

TEST(DeferOnDemand, FlushAppliesWhatAFailedFlushLeftQueued) {
    ts::test::FailingResource res;
    ts::World w(&res);
    const ts::Entity a = w.spawn(Position{1, 1});
    w.defer_begin();
    w.add(a, Name{"queued"});
    res.fail = true;  // the flush's move of a into a new table fails
    EXPECT_THROW(w.defer_end(), std::bad_alloc);
    res.fail = false;
    EXPECT_FALSE(w.deferring());
    EXPECT_FALSE(w.has<Name>(a)) << "still queued";
    EXPECT_TRUE(w.flush());
    EXPECT_EQ(w.get<Name>(a).s, "queued");
}

// ---- value writes after a queued add or remove of the same component (issue 34 item 10) ----

namespace {
struct Velocity {
    float dx = 0, dy = 0;
    bool operator==(const Velocity&) const = default;
};
bool same(const Position& a, const Position& b) {
    return a.x == b.x && a.y == b.y;
}

struct ValueWrite {
    const char* op;  // the call the error names
    std::function<void(ts::World&, ts::Entity)> write;
};

// Every call that writes `Position`'s value in place. `try_get_mut` and the accessor's
// `try_get_mut` can't throw: they answer null (the test turns that into the same error).
std::vector<ValueWrite> position_writes() {
    const auto refuse_null = [](const void* p) {
        if (p == nullptr) throw ts::Error(ts::errc::invalid_argument, "null");
    };
    return {
        {"World::set",
         [](ts::World& w, ts::Entity e) {
             w.set(e, Position{9, 9});
         }},
        {"World::set",
         [](ts::World& w, ts::Entity e) {
             w.set(e, Velocity{8, 8}, Position{9, 9});
         }},
        {"World::get_mut", [](ts::World& w, ts::Entity e) { w.get_mut<Position>(e).x = 9; }},
        {"World::get_mut",
         [](ts::World& w, ts::Entity e) { std::get<1>(w.get_mut<Velocity, Position>(e)).x = 9; }},
        {"null",
         [refuse_null](ts::World& w, ts::Entity e) { refuse_null(w.try_get_mut<Position>(e)); }},
        {"World::set_if_changed",
         [](ts::World& w, ts::Entity e) {
             (void)w.set_if_changed(e, Position{9, 9});
         }},
        {"World::modified", [](ts::World& w, ts::Entity e) { w.modified<Position>(e); }},
        {"Accessor::get_mut",
         [](ts::World& w, ts::Entity e) { w.accessor<Position>().get_mut(e).x = 9; }},
        {"null",
         [refuse_null](ts::World& w, ts::Entity e) {
             refuse_null(w.accessor<Position>().try_get_mut(e));
         }},
    };
}

void expect_refused(const ValueWrite& c, ts::World& w, ts::Entity e, const char* queued) {
    try {
        c.write(w, e);
        ADD_FAILURE() << c.op << ": no error";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::invalid_argument);
        const std::string what = err.what();
        EXPECT_NE(what.find(c.op), std::string::npos) << what;
        if (std::string_view(c.op) != "null") {
            EXPECT_NE(what.find("Position"), std::string::npos) << what;
            EXPECT_NE(what.find(queued), std::string::npos) << what;
            std::ostringstream entity;
            entity << e;
            EXPECT_NE(what.find(entity.str()), std::string::npos) << what;
        }
    }
}
}  // namespace

// Inside defer_begin, remove<Position>(e) then a write of e's Position: the write is refused at
// the call (a value written now would vanish when the remove applies), nothing is written or
// stamped, and the remove still applies. The same after a queued add that replaces Position.
TEST(WritesAfterQueuedChanges, EveryValueWriteAfterAQueuedRemoveOrAddIsRefused) {
    for (const ValueWrite& c : position_writes()) {
        for (const bool removed : {true, false}) {
            SCOPED_TRACE(std::string(c.op) + (removed ? " after remove" : " after add"));
            ts::World w;
            const ts::Entity e = w.spawn(Position{1, 2}, Velocity{3, 4});
            (void)w.changed_tick<Position>(e);
            w.advance_tick();
            const std::uint64_t stamped = w.changed_tick<Position>(e);
            int fired = 0;
            ts::Observer spy = w.on_set<Position>([&](ts::World&, ts::Entity) { ++fired; });
            w.defer_begin();
            if (removed)
                w.remove<Position>(e);
            else
                w.add(e, Position{5, 6});
            expect_refused(c, w, e, removed ? "queued remove" : "queued add");
            EXPECT_TRUE(same(w.get<Position>(e), {1, 2}));
            EXPECT_EQ(w.get<Velocity>(e), (Velocity{3, 4})) << "nothing of a refused set";
            EXPECT_EQ(w.changed_tick<Position>(e), stamped);
            EXPECT_EQ(fired, 0);
            w.defer_end();
            if (removed) {
                EXPECT_FALSE(w.has<Position>(e));
            } else {
                EXPECT_TRUE(same(w.get<Position>(e), {5, 6}));
                // Once the add applied, writes go through again.
                c.write(w, e);
            }
        }
    }
}

// Runtime components: set_field after a queued remove (by id) or add (by id).
TEST(WritesAfterQueuedChanges, SetFieldAfterAQueuedRemoveOrAddIsRefused) {
    ts::World w;
    const ts::ComponentId hp = w.component("Hp", {{"value", ts::Field::i32}});
    const ts::Entity e = w.spawn();
    for (const bool removed : {true, false}) {
        SCOPED_TRACE(removed ? "after remove" : "after add");
        if (!w.has(e, hp)) w.add(e, hp);
        w.set_field(e, hp, "value", 10);
        w.defer_begin();
        if (removed)
            w.remove(e, hp);
        else
            w.add(e, hp);
        try {
            w.set_field(e, hp, "value", 20);
            ADD_FAILURE() << "no error";
        } catch (const ts::Error& err) {
            EXPECT_EQ(err.code(), ts::errc::invalid_argument);
            EXPECT_NE(std::string(err.what()).find("Hp"), std::string::npos) << err.what();
        }
        EXPECT_EQ(w.get_field<int>(e, hp, "value"), 10);
        w.defer_end();
        EXPECT_EQ(w.has(e, hp), !removed);
        if (!removed) {
            EXPECT_EQ(w.get_field<int>(e, hp, "value"), 0) << "the add's value";
            w.set_field(e, hp, "value", 10);
        }
    }
}

// Structural calls after a queued remove are queued behind it: the later call in program order
// wins (add, emplace), and so does a later remove after an add.
TEST(WritesAfterQueuedChanges, LaterStructuralCallsWin) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 2});
    const ts::Entity b = w.spawn(Position{1, 2});
    const ts::Entity c = w.spawn(Position{1, 2});
    w.defer_begin();
    w.remove<Position>(a);
    w.add(a, Position{5, 6});
    w.remove<Position>(b);
    w.emplace<Position>(b, 7.0f, 8.0f);
    w.add(c, Position{5, 6});
    w.remove<Position>(c);
    w.defer_end();
    EXPECT_TRUE(same(w.get<Position>(a), {5, 6}));
    EXPECT_TRUE(same(w.get<Position>(b), {7, 8}));
    EXPECT_FALSE(w.has<Position>(c));
}

// Only the pair queued is concerned: other components of the entity, and the same component of
// other entities, are written as usual; after the flush everything is writable again.
TEST(WritesAfterQueuedChanges, OnlyTheQueuedPairIsRefused) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 2}, Velocity{});
    const ts::Entity b = w.spawn(Position{1, 2});
    w.defer_begin();
    w.remove<Position>(a);
    w.set(a, Velocity{1, 1});
    w.set(b, Position{3, 3});
    w.get_mut<Position>(b).x = 4;
    EXPECT_NE(w.try_get_mut<Position>(b), nullptr);
    EXPECT_EQ(w.try_get_mut<Position>(a), nullptr);
    w.defer_end();
    EXPECT_EQ(w.get<Velocity>(a), (Velocity{1, 1}));
    EXPECT_TRUE(same(w.get<Position>(b), {4, 3}));
    w.add(a, Position{});
    w.set(a, Position{6, 6});  // the queue is empty: nothing refused
    EXPECT_TRUE(same(w.get<Position>(a), {6, 6}));
}

// Every source of deferral: a query loop, an observer callback, spawn_many's init.
TEST(WritesAfterQueuedChanges, RefusedInLoopsObserversAndSpawnManyInit) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 2}, Velocity{});
    int refused = 0;
    w.each([&](ts::Entity e, Velocity&) {
        w.remove<Position>(e);
        EXPECT_THROW(w.set(e, Position{9, 9}), ts::Error);
        ++refused;
    });
    EXPECT_EQ(refused, 1);
    EXPECT_FALSE(w.has<Position>(a));

    const ts::Entity b = w.spawn(Position{1, 2});
    {
        ts::Observer obs = w.on_add<Velocity>([&](ts::World& world, ts::Entity e) {
            world.remove<Position>(e);
            EXPECT_THROW(world.get_mut<Position>(e), ts::Error);
            ++refused;
        });
        w.add(b, Velocity{});
    }
    EXPECT_EQ(refused, 2);
    EXPECT_FALSE(w.has<Position>(b));

    const ts::Entity c = w.spawn(Position{1, 2});
    w.spawn_many(1, [&](std::size_t, Velocity&) {
        w.remove<Position>(c);
        EXPECT_THROW(w.modified<Position>(c), ts::Error);
        ++refused;
    });
    EXPECT_EQ(refused, 3);
    EXPECT_FALSE(w.has<Position>(c));
}

// A failed call takes back what it queued: a remove queued before it still refuses writes,
// and writes of pairs only the failed call had queued go through.
TEST(WritesAfterQueuedChanges, TakenBackCommandsLeaveEarlierOnesInForce) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 2});
    const ts::Entity b = w.spawn(Position{1, 2});
    w.defer_begin();
    w.remove<Position>(a);
    EXPECT_THROW(w.spawn_many(1,
                              [&](std::size_t, Velocity&) {
                                  w.add(a, Position{3, 3});
                                  w.add(b, Position{3, 3});
                                  throw std::runtime_error("init fails");
                              }),
                 std::runtime_error);
    EXPECT_THROW(w.set(a, Position{9, 9}), ts::Error);
    w.set(b, Position{4, 4});
    w.defer_end();
    EXPECT_FALSE(w.has<Position>(a));
    EXPECT_TRUE(same(w.get<Position>(b), {4, 4}));
}

// A queued despawn: the entity stays alive and readable until the flush, and writes to it are
// allowed (nothing of it outlives the flush, so nothing written is silently kept or lost).
TEST(WritesAfterQueuedChanges, WritesToAnEntityQueuedForDespawnAreAllowed) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    w.defer_begin();
    w.despawn(e);
    w.set(e, Position{3, 3});
    EXPECT_TRUE(same(w.get<Position>(e), {3, 3}));
    w.defer_end();
    EXPECT_FALSE(w.is_alive(e));
}

// An add queued for a component the entity lacks: a write is a lookup error, as without the
// queued add (the value comes at the flush).
TEST(WritesAfterQueuedChanges, AWriteOfAComponentStillToComeIsMissingComponent) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    w.defer_begin();
    w.add(e, Velocity{1, 1});
    for (int way = 0; way < 2; ++way) {
        try {
            if (way == 0)
                w.set(e, Velocity{2, 2});
            else
                w.get_mut<Velocity>(e).dx = 2;
            ADD_FAILURE() << "no error";
        } catch (const ts::Error& err) {
            EXPECT_EQ(err.code(), ts::errc::missing_component) << err.what();
        }
    }
    EXPECT_EQ(w.try_get_mut<Velocity>(e), nullptr);
    w.defer_end();
    EXPECT_EQ(w.get<Velocity>(e), (Velocity{1, 1}));
}

namespace {
struct Rope {
    int strength = 0;
};
}  // namespace

// enable (typed and by id) after a queued remove of the same component: refused at the call (the
// flag would go with the component), nothing changes, and the remove applies. After a queued add
// of a component the entity has, the flag is kept by the add: enable goes through and stays.
TEST(WritesAfterQueuedChanges, EnableAfterAQueuedRemoveIsRefusedAfterAnAddItWins) {
    for (const bool by_id : {false, true}) {
        SCOPED_TRACE(by_id ? "by id" : "typed");
        ts::World w;
        const ts::Entity e = w.spawn(Ai{1}, Position{});
        const ts::Entity other = w.spawn(Ai{2});
        const auto enable = [&](ts::Entity x, bool on) {
            if (by_id)
                w.enable(x, ts::component_id<Ai>(), on);
            else
                w.enable<Ai>(x, on);
        };
        w.defer_begin();
        w.remove<Ai>(e);
        try {
            enable(e, false);
            ADD_FAILURE() << "no error";
        } catch (const ts::Error& err) {
            EXPECT_EQ(err.code(), ts::errc::invalid_argument);
            const std::string what = err.what();
            EXPECT_NE(what.find("World::enable"), std::string::npos) << what;
            EXPECT_NE(what.find("queued remove of"), std::string::npos) << what;
            EXPECT_NE(what.find("Ai"), std::string::npos) << what;
        }
        EXPECT_TRUE(w.is_enabled<Ai>(e));
        enable(other, false);  // another entity is not concerned
        w.defer_end();
        EXPECT_FALSE(w.has<Ai>(e));
        EXPECT_FALSE(w.is_enabled<Ai>(other));

        w.defer_begin();
        w.add(other, Ai{3});  // replaces the value; the flag stays
        enable(other, true);
        w.defer_end();
        EXPECT_TRUE(w.is_enabled<Ai>(other));
        EXPECT_EQ(w.get<Ai>(other).level, 3);
    }
}

// Relation data written after a queued unrelate (which may remove the data with the last
// target) or a queued relate (whose data replaces it) is refused at the call, through get_mut,
// set, try_get_mut and relation<R>(e); nothing is written; the queued commands apply.
TEST(WritesAfterQueuedChanges, RelationDataAfterAQueuedRelateOrUnrelateIsRefused) {
    const std::vector<std::function<void(ts::World&, ts::Entity)>> writes = {
        [](ts::World& w, ts::Entity e) { w.get_mut<Rope>(e).strength = 9; },
        [](ts::World& w, ts::Entity e) { w.set(e, Rope{9}); },
        [](ts::World& w, ts::Entity e) {
            if (w.try_get_mut<Rope>(e) == nullptr)
                throw ts::Error(ts::errc::invalid_argument, "null: queued relate or unrelate");
        },
        [](ts::World& w, ts::Entity e) { w.relation<Rope>(e)->strength = 9; },
    };
    enum Way { unrelate_one, unrelate_all, unrelate_span, relate_more };
    for (const Way way : {unrelate_one, unrelate_all, unrelate_span, relate_more}) {
        for (std::size_t k = 0; k < writes.size(); ++k) {
            SCOPED_TRACE("way " + std::to_string(way) + ", write " + std::to_string(k));
            ts::World w;
            const ts::Entity a = w.spawn(Position{});
            const ts::Entity t1 = w.spawn();
            const ts::Entity t2 = w.spawn();
            w.relate(a, Rope{1}, t1);
            const ts::Entity b = w.spawn();
            w.relate(b, Rope{5}, t1);
            w.defer_begin();
            if (way == unrelate_one) (void)w.unrelate<Rope>(a, t1);
            if (way == unrelate_all) (void)w.unrelate<Rope>(a);
            if (way == unrelate_span) {
                const ts::Entity ts_[] = {t1, t2};
                (void)w.unrelate<Rope>(a, std::span<const ts::Entity>(ts_));
            }
            if (way == relate_more) w.relate(a, Rope{7}, t2);
            try {
                writes[k](w, a);
                ADD_FAILURE() << "no error";
            } catch (const ts::Error& err) {
                EXPECT_EQ(err.code(), ts::errc::invalid_argument);
                const std::string what = err.what();
                if (what.rfind("null", 0) != 0) {
                    EXPECT_NE(what.find(way == relate_more ? "queued relate" : "queued unrelate"),
                              std::string::npos)
                        << what;
                }
            }
            EXPECT_EQ(w.get<Rope>(a).strength, 1);
            w.get_mut<Rope>(b).strength = 6;  // another source is not concerned
            w.defer_end();
            EXPECT_EQ(w.get<Rope>(b).strength, 6);
            if (way == relate_more) {
                EXPECT_EQ(w.get<Rope>(a).strength, 7);
                w.get_mut<Rope>(a).strength = 8;  // applied: writable again
                EXPECT_EQ(w.get<Rope>(a).strength, 8);
            } else {
                EXPECT_FALSE(w.has<Rope>(a));
            }
        }
    }
}
