// Query::par_each: rows split across oneTBB workers (query.hpp). Run under TSan by `make tsan`.
#include <tessera/tessera.hpp>

#include "common/counting_resource.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ts = tessera;

namespace {
struct Position {
    float x = 0, y = 0;
    bool operator==(const Position&) const = default;
};
struct Velocity {
    float dx = 0, dy = 0;
};
struct Tag {};
struct Ai {
    int level = 0;
};
}  // namespace

template <>
struct tessera::component_traits<Ai> {
    static constexpr bool enableable = true;
};

namespace {
// A world with several tables of different sizes, some tiny, so ranges cross table boundaries.
void populate(ts::World& w) {
    w.spawn_many(20000, [](std::size_t i, Position& p, Velocity& v) {
        p = {float(i), 0};
        v = {1, float(i % 7)};
    });
    for (int i = 0; i < 37; ++i) w.spawn(Position{float(i), 1}, Velocity{2, 2}, Tag{});
    w.spawn_many(3, [](std::size_t, Position& p, Velocity& v, Ai& ai) {
        p = {5, 5};
        v = {3, 3};
        ai.level = 1;
    });
    w.spawn_many(500, [](std::size_t i, Position& p) { p = {float(i), 9}; });
}
}  // namespace

TEST(QueryParallel, ParEachGivesTheSameWorldAsEach) {
    ts::World serial, parallel;
    populate(serial);
    populate(parallel);
    const auto step = [](Position& p, const Velocity& v) {
        p.x += v.dx * 0.5f;
        p.y += v.dy * 0.25f;
    };
    auto qs = serial.query<Position&, const Velocity&>();
    auto qp = parallel.query<Position&, const Velocity&>();
    for (int frame = 0; frame < 5; ++frame) {
        qs.each(step);
        qp.par_each(step);
    }
    const std::vector<ts::Entity> es = serial.entities();
    ASSERT_EQ(es, parallel.entities());
    for (ts::Entity e : es) EXPECT_EQ(serial.get<Position>(e), parallel.get<Position>(e));
}

TEST(QueryParallel, VisitsEveryMatchingRowExactlyOnce) {
    ts::World w;
    populate(w);
    std::mutex m;
    std::multiset<std::uint64_t> seen;
    w.query<ts::Entity, const Position&>().without<Tag>().par_each(
        [&](ts::Entity e, const Position&) {
            std::lock_guard lock(m);
            seen.insert(e.to_bits());
        });
    std::multiset<std::uint64_t> expected;
    w.query<ts::Entity, const Position&>().without<Tag>().each(
        [&](ts::Entity e, const Position&) { expected.insert(e.to_bits()); });
    EXPECT_EQ(seen, expected);
    EXPECT_EQ(seen.size(), 20000u + 3u + 500u);
}

TEST(QueryParallel, RespectsEnableFlagsFiltersAndStamps) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 1000; ++i) es.push_back(w.spawn(Position{}, Ai{i}));
    for (int i = 0; i < 1000; i += 4) w.enable<Ai>(es[i], false);
    std::atomic<int> visited{0};
    w.query<const Ai&, Position&>().par_each([&](const Ai&, Position& p) {
        p.x = 1;
        visited.fetch_add(1, std::memory_order_relaxed);
    });
    EXPECT_EQ(visited.load(), 750);
    for (int i = 0; i < 1000; ++i) EXPECT_EQ(w.get<Position>(es[i]).x, i % 4 ? 1.0f : 0.0f);

    auto changed = w.query<const Position&>().changed<Position>();
    changed.par_each([](const Position&) {});  // first run: everything
    w.set(es[10], Position{7, 7});
    std::atomic<int> n{0};
    changed.par_each([&](const Position& p) {
        EXPECT_EQ(p.x, 7);
        n.fetch_add(1);
    });
    EXPECT_EQ(n.load(), 1);
    // A T& term stamps the rows it visits, disabled rows excepted.
    const std::uint64_t t = w.tick();
    w.query<const Ai&, Position&>().par_each([](const Ai&, Position&) {});
    EXPECT_EQ(w.changed_tick<Position>(es[1]), t);
    EXPECT_LT(w.changed_tick<Position>(es[0]), t);
}

TEST(QueryParallel, StructuralChangesFromWorkersAreRefused) {
    ts::World w;
    populate(w);
    const std::size_t before = w.count();
    auto q = w.query<ts::Entity, const Position&>();
    EXPECT_THROW(q.par_each([&](ts::Entity e, const Position&) { w.despawn(e); }), ts::Error);
    EXPECT_THROW(q.par_each([&](ts::Entity e, const Position&) { w.add(e, Tag{}); }), ts::Error);
    EXPECT_EQ(w.count(), before);
    // The world is usable afterwards, and structural calls work again.
    const ts::Entity e = w.spawn(Position{});
    EXPECT_TRUE(w.has<Position>(e));
}

// Reading or writing change ticks of an untracked component turns tracking on, which changes
// every table: refused on workers, allowed once tracking is on.
TEST(QueryParallel, TurningOnChangeTrackingFromWorkersIsRefused) {
    ts::World w;
    populate(w);
    auto q = w.query<ts::Entity, const Position&>();
    try {
        q.par_each([&](ts::Entity e, const Position&) { (void)w.changed_tick<Position>(e); });
        FAIL() << "no error";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("Position"), std::string::npos) << e.what();
    }
    EXPECT_THROW(q.par_each([&](ts::Entity e, const Position& p) {
        (void)w.set_if_changed(e, Position{p.x + 1, p.y});
    }),
                 ts::Error);
    std::size_t n = 0;
    q.each([&](ts::Entity, const Position&) { ++n; });
    ASSERT_GT(n, 0u);
    const ts::Entity first = [&] {
        ts::Entity f;
        q.each([&](ts::Entity e, const Position&) { f = e; });
        return f;
    }();
    (void)w.changed_tick<Position>(first);  // tracking on, on the world's thread
    std::atomic<std::size_t> read{0};
    q.par_each([&](ts::Entity e, const Position&) {
        (void)w.changed_tick<Position>(e);
        ++read;
    });
    EXPECT_EQ(read.load(), n);
}

TEST(QueryParallel, ExceptionsPropagateToTheCaller) {
    ts::World w;
    populate(w);
    auto q = w.query<const Position&>();
    EXPECT_THROW(q.par_each([](const Position& p) {
        if (p.x == 1234) throw std::runtime_error("boom");
    }),
                 std::runtime_error);
    std::size_t n = 0;
    q.each([&](const Position&) { ++n; });  // not left deferring or parallel
    EXPECT_EQ(n, w.count());
}

TEST(QueryParallel, SteadyStateAllocatesNothingFromTheWorld) {
    ts::test::CountingResource mr;
    ts::World w(&mr);
    populate(w);
    auto q = w.query<Position&, const Velocity&>();
    q.par_each([](Position&, const Velocity&) {});  // warm-up: matching, scratch
    const std::size_t before = mr.allocations;
    for (int frame = 0; frame < 100; ++frame) {
        q.par_each([](Position& p, const Velocity& v) { p.x += v.dx; });
    }
    // oneTBB's scheduler keeps its own task storage; the world and the query take nothing.
    EXPECT_EQ(mr.allocations, before);
}

namespace {
struct Extra {
    int v = 0;
};
struct Link {};
struct Note {
    int n = 0;
};
struct Ping {
    int n = 0;
};

// What a refused call must leave as it was: the entities, their values and components, the
// archetypes, the tick, the resources, the event queues, the observers and the strings.
struct Fingerprint {
    std::vector<ts::Entity> entities;
    std::uint64_t hash = 0;
    std::size_t archetypes = 0;
    std::uint64_t tick = 0;
    bool note = false, ping_queue = false, observed = false;
    std::vector<bool> switches;  // every kind's, and Extra's set switch
    std::size_t strings = 0;
    float position_sum = 0;
    int extra_sum = 0;
    bool operator==(const Fingerprint&) const = default;
};

Fingerprint fingerprint(ts::World& w) {
    Fingerprint f;
    f.entities = w.entities();
    f.hash = ts::state_hash(w);
    f.archetypes = w.archetype_count();
    f.tick = w.tick();
    f.note = w.has_resource<Note>();
    f.ping_queue = w.has_resource<ts::Events<Ping>>();
    const ts::Observers obs = w.observers();
    for (const ts::Event k : {ts::Event::add, ts::Event::remove, ts::Event::set}) {
        f.observed = f.observed || obs.has<Position>(k) || obs.has<Extra>(k);
    }
    f.observed = f.observed || obs.has(ts::Event::spawn) || obs.has(ts::Event::despawn) ||
                 obs.has<Link>(ts::Event::relate) || obs.has<Link>(ts::Event::unrelate);
    for (const ts::Event k : {ts::Event::add, ts::Event::remove, ts::Event::set, ts::Event::spawn,
                              ts::Event::despawn, ts::Event::relate, ts::Event::unrelate}) {
        f.switches.push_back(obs.is_enabled(k));
    }
    f.switches.push_back(obs.is_enabled<Extra>(ts::Event::set));
    f.strings = std::as_const(w).strings().size();
    w.query<const Position&>().each([&](const Position& p) { f.position_sum += p.x + p.y; });
    w.query<const Extra&>().each([&](const Extra& x) { f.extra_sum += x.v; });
    return f;
}

struct WorkerCall {
    const char* op;  // the call the error names
    std::function<void(ts::World&, ts::Entity)> call;
};
}  // namespace

// Issue 34 item 5: every World member that changes what the world shares (its entities and
// tables, its deferral state, registrations, resources, events, observers, the tick) throws
// invalid_argument on the workers of a par_each and changes nothing; afterwards the world is
// neither deferring nor parallel, and structural changes apply at once. Each case runs with
// several workers calling at once, alone and inside a defer_begin of the world's thread (where
// a worker's defer_end would otherwise close the outer level).
TEST(QueryParallel, EveryWorldChangeFromWorkersIsRefusedAndChangesNothing) {
    ts::World w;
    w.spawn_many(4000, [](std::size_t i, Position& p) { p = {float(i), 1}; });
    const ts::ComponentId label = w.component("Label", {{"text", ts::Field::str}});
    const ts::Entity anchor = w.spawn(Position{-1, -1}, Extra{1});
    w.add(anchor, label);
    w.set_field(anchor, label, "text", std::string_view("before"));
    const ts::Entity target = w.spawn(Extra{2});
    w.relate<Link>(anchor, target);
    w.insert_resource(Note{7});
    auto extras = w.query<Extra&>();
    const ts::Snapshot snap = w.snapshot();
    std::atomic<int> extra_sets{0};
    const ts::Observer watch =
        w.on_set<Extra>([&](ts::World&, ts::Entity) { extra_sets.fetch_add(1); });
    ts::Observer resettable = w.on_despawn([](ts::World&, ts::Entity) {});
    ts::Observer spare = w.on_spawn([](ts::World&, ts::Entity) {});
    ts::Observers switches = w.observers();  // taken on the world's thread

    const std::vector<WorkerCall> calls = {
        {"World::spawn", [](ts::World& x, ts::Entity) { (void)x.spawn(); }},
        {"World::spawn", [](ts::World& x, ts::Entity) { (void)x.spawn(Position{}, Extra{}); }},
        {"World::spawn_many",
         [](ts::World& x, ts::Entity) { x.spawn_many(2, [](std::size_t, Extra&) {}); }},
        {"World::spawn_permanent",
         [](ts::World& x, ts::Entity) { (void)x.spawn_permanent(Extra{}); }},
        {"World::despawn", [](ts::World& x, ts::Entity e) { x.despawn(e); }},
        {"World::despawn",
         [](ts::World& x, ts::Entity e) { x.despawn(std::span<const ts::Entity>(&e, 1)); }},
        {"World::despawn_all", [&](ts::World& x, ts::Entity) { x.despawn_all(extras); }},
        {"World::add", [](ts::World& x, ts::Entity e) { x.add(e, Extra{3}); }},
        {"World::add", [](ts::World& x, ts::Entity e) { x.add<Extra>(e); }},
        {"World::add", [](ts::World& x, ts::Entity e) { x.emplace<Extra>(e, 4); }},
        {"World::add", [&](ts::World& x, ts::Entity e) { x.add(e, label); }},
        {"World::remove", [](ts::World& x, ts::Entity e) { x.remove<Position>(e); }},
        {"World::remove", [&](ts::World& x, ts::Entity) { x.remove(anchor, label); }},
        {"World::relate", [&](ts::World& x, ts::Entity e) { x.relate<Link>(e, target); }},
        {"World::relate",
         [&](ts::World& x, ts::Entity e) {
             x.relate(e, Link{}, std::span<const ts::Entity>(&target, 1));
         }},
        {"World::unrelate", [&](ts::World& x, ts::Entity) { x.unrelate<Link>(anchor, target); }},
        {"World::unrelate", [&](ts::World& x, ts::Entity) { x.unrelate<Link>(anchor); }},
        {"World::unrelate",
         [&](ts::World& x, ts::Entity) {
             x.unrelate<Link>(anchor, std::span<const ts::Entity>(&target, 1));
         }},
        {"World::defer_begin", [](ts::World& x, ts::Entity) { x.defer_begin(); }},
        {"World::defer_end", [](ts::World& x, ts::Entity) { x.defer_end(); }},
        {"World::defer_begin", [](ts::World& x, ts::Entity) { ts::Deferral scope(x); }},
        {"World::flush", [](ts::World& x, ts::Entity) { (void)x.flush(); }},
        {"World::archetype",
         [](ts::World& x, ts::Entity) { (void)x.archetype<Position, Extra, Velocity>(); }},
        {"World::reserve", [](ts::World& x, ts::Entity) { x.reserve<Velocity, Extra>(8); }},
        {"World::register_component",
         [](ts::World& x, ts::Entity) { (void)x.register_component<Velocity>(); }},
        {"World::component", [](ts::World& x, ts::Entity) { (void)x.component("WorkerMade", {}); }},
        {"World::query", [](ts::World& x, ts::Entity) { (void)x.query<const Velocity&>(); }},
        {"World::each", [](ts::World& x, ts::Entity) { x.each([](const Velocity&) {}); }},
        {"World::query_dynamic",
         [&](ts::World& x, ts::Entity) { (void)x.query_dynamic(ts::QuerySpec{{label}}); }},
        {"World::accessor", [](ts::World& x, ts::Entity) { (void)x.accessor<Velocity>(); }},
        {"World::strings", [](ts::World& x, ts::Entity) { (void)x.strings(); }},
        {"World::set_field",
         [&](ts::World& x, ts::Entity) {
             x.set_field(anchor, label, "text", std::string_view("from a worker"));
         }},
        {"World::restore", [&](ts::World& x, ts::Entity) { x.restore(snap); }},
        {"World::advance_tick", [](ts::World& x, ts::Entity) { (void)x.advance_tick(); }},
        {"World::insert_resource", [](ts::World& x, ts::Entity) { x.insert_resource(Note{9}); }},
        {"World::remove_resource",
         [](ts::World& x, ts::Entity) { (void)x.remove_resource<Note>(); }},
        {"World::events", [](ts::World& x, ts::Entity) { (void)x.events<Ping>(); }},
        {"World::send_event", [](ts::World& x, ts::Entity) { x.send_event(Ping{1}); }},
        {"World::update_events", [](ts::World& x, ts::Entity) { x.update_events(); }},
        {"World::on_add",
         [](ts::World& x, ts::Entity) { (void)x.on_add<Position>([](ts::World&, ts::Entity) {}); }},
        {"World::on_remove",
         [](ts::World& x, ts::Entity) {
             (void)x.on_remove<Position>([](ts::World&, ts::Entity) {});
         }},
        {"World::on_set",
         [](ts::World& x, ts::Entity) { (void)x.on_set<Position>([](ts::World&, ts::Entity) {}); }},
        {"World::on_add",
         [](ts::World& x, ts::Entity) {
             (void)x.on_add<Position, Extra>([](ts::World&, ts::Entity) {});
         }},
        {"World::on_remove",
         [](ts::World& x,
            ts::Entity) { (void)x.on_remove<Position, Extra>([](ts::World&, ts::Entity) {}); }},
        {"World::on_set",
         [](ts::World& x,
            ts::Entity) { (void)x.on_set<Position, Extra>([](ts::World&, ts::Entity) {}); }},
        {"World::on_spawn",
         [](ts::World& x, ts::Entity) { (void)x.on_spawn([](ts::World&, ts::Entity) {}); }},
        {"World::on_despawn",
         [](ts::World& x, ts::Entity) { (void)x.on_despawn([](ts::World&, ts::Entity) {}); }},
        {"World::on_relate",
         [](ts::World& x,
            ts::Entity) { (void)x.on_relate<Link>([](ts::World&, ts::Entity, ts::Entity) {}); }},
        {"World::on_unrelate",
         [](ts::World& x,
            ts::Entity) { (void)x.on_unrelate<Link>([](ts::World&, ts::Entity, ts::Entity) {}); }},
        {"Query::on_enter",
         [&](ts::World&, ts::Entity) { (void)extras.on_enter([](ts::World&, ts::Entity) {}); }},
        {"World::observers", [](ts::World& x, ts::Entity) { (void)x.observers(); }},
        // The observers' switches and handles, taken before the loop (issue 34's last part).
        {"Observers::enable",
         [&](ts::World&, ts::Entity) { switches.enable(ts::Event::despawn, false); }},
        {"Observers::enable",
         [&](ts::World&, ts::Entity) { switches.enable<Extra>(ts::Event::set, false); }},
        {"Observers::clear",
         [&](ts::World&, ts::Entity) { (void)switches.clear<Extra>(ts::Event::set); }},
        {"Observers::clear",
         [&](ts::World&, ts::Entity) { (void)switches.clear(ts::Event::despawn); }},
        {"Observer::reset", [&](ts::World&, ts::Entity) { resettable.reset(); }},
        {"Observer::reset",
         [&](ts::World&, ts::Entity) { resettable = std::move(spare); }},  // move assignment
        // Writes that would fire observers on workers.
        {"World::set", [&](ts::World& x, ts::Entity) { x.set(anchor, Extra{9}); }},
        {"World::modified", [&](ts::World& x, ts::Entity) { x.modified<Extra>(anchor); }},
    };

    auto rows = w.query<ts::Entity, const Position&>();
    const Fingerprint before = fingerprint(w);
    for (const WorkerCall& c : calls) {
        for (const bool enclosed : {false, true}) {
            SCOPED_TRACE(std::string(c.op) + (enclosed ? " inside defer_begin" : ""));
            if (enclosed) w.defer_begin();
            std::atomic<std::size_t> refused{0}, other{0};
            std::atomic<bool> named{true};
            rows.par_each([&](ts::Entity e, const Position&) {
                try {
                    c.call(w, e);
                    other.fetch_add(1);
                } catch (const ts::Error& err) {
                    if (err.code() != ts::errc::invalid_argument) other.fetch_add(1);
                    if (std::string(err.what()).find(c.op) == std::string::npos) named = false;
                    refused.fetch_add(1);
                }
            });
            if (enclosed) {
                EXPECT_TRUE(w.deferring());  // the worker's defer_end closed nothing
                w.defer_end();
            }
            EXPECT_EQ(refused.load(), before.entities.size() - 1);  // all but target
            EXPECT_EQ(other.load(), 0u);
            EXPECT_TRUE(named.load());
            EXPECT_FALSE(w.deferring());
            EXPECT_TRUE(fingerprint(w) == before);
        }
    }
    EXPECT_EQ(w.get_field<std::string_view>(anchor, label, "text"), "before");
    EXPECT_EQ(extra_sets.load(), 0);
    EXPECT_TRUE(resettable.active());
    EXPECT_TRUE(spare.active());
    EXPECT_TRUE(watch.active());
    // On the world's thread the same calls work.
    switches.enable(ts::Event::despawn, false);
    EXPECT_FALSE(switches.is_enabled(ts::Event::despawn));
    resettable.reset();
    EXPECT_FALSE(resettable.active());
    // Structural changes apply at once again (nothing left deferring or parallel).
    const ts::Entity e = w.spawn(Position{});
    EXPECT_TRUE(w.has<Position>(e));
    w.add(e, Extra{5});
    EXPECT_EQ(w.get<Extra>(e).v, 5);
    w.defer_begin();
    w.remove<Extra>(e);
    EXPECT_TRUE(w.has<Extra>(e));
    w.defer_end();
    EXPECT_FALSE(w.has<Extra>(e));
}

// What workers may call: value reads and writes of their own row, lookups, and loops over
// other queries (which neither defer the world nor end its parallel mode).
TEST(QueryParallel, WorkersMayReadWriteTheirRowsAndRunNestedLoops) {
    ts::World w;
    w.spawn_many(3000, [](std::size_t i, Position& p, Extra& x) {
        p = {float(i), 0};
        x.v = int(i);
    });
    w.insert_resource(Note{3});
    auto rows = w.query<ts::Entity, Position&>();
    auto extras = w.query<const Extra&>();
    auto small = w.query<const Extra&>();
    (void)w.changed_tick<Position>(w.entities().front());  // tracking on, on the world's thread
    std::atomic<std::size_t> nested{0};
    std::mutex nested_loop;
    rows.par_each([&](ts::Entity e, Position&) {
        w.get_mut<Position>(e).y = 1;
        w.set(e, Position{w.get<Position>(e).x, 2});
        if (Extra* x = w.try_get_mut<Extra>(e)) x->v += w.resource<Note>().n;
        w.modified<Position>(e);
        (void)w.set_if_changed(e, Position{w.get<Position>(e).x, 3});
        (void)w.changed_tick<Position>(e);
        if (e.index % 500 == 0) {
            // A nested loop: legal, and a structural call inside it is still refused. A query
            // object is not thread-safe: one worker at a time runs this one.
            const std::lock_guard lock(nested_loop);
            std::size_t n = 0;
            extras.each([&](const Extra&) { ++n; });
            EXPECT_EQ(n, 3000u);
            EXPECT_THROW(w.each_entity([&](ts::Entity) { w.spawn(); }), ts::Error);
            nested.fetch_add(1);
        }
    });
    EXPECT_GT(nested.load(), 0u);
    EXPECT_FALSE(w.deferring());
    EXPECT_EQ(w.count(), 3000u);
    small.each([](const Extra& x) { EXPECT_GE(x.v, 3); });
    w.query<const Position&>().each([](const Position& p) { EXPECT_EQ(p.y, 3); });
    // A nested par_each doesn't end the outer loop's parallel mode: the outer rows after it
    // are still refused structural changes.
    std::atomic<std::size_t> refused{0};
    rows.par_each([&](ts::Entity e, Position&) {
        if (e.index == 0) extras.par_each([](const Extra&) {});
        try {
            w.add(e, Velocity{});
        } catch (const ts::Error&) {
            refused.fetch_add(1);
        }
    });
    EXPECT_EQ(refused.load(), 3000u);
    EXPECT_FALSE(w.deferring());
    const ts::Entity e = w.spawn(Position{});
    EXPECT_TRUE(w.has<Position>(e));
}
