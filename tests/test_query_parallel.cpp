// Query::par_each: rows split across oneTBB workers (query.hpp). Run under TSan by `make tsan`.
#include <tessera/tessera.hpp>

#include "common/counting_resource.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
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
