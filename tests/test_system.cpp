// System parameters (system.hpp): the access each parameter kind declares, what views, filters,
// resources, commands, events and dt give a system, and that access decides what may overlap.
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <typeindex>
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
struct Team {
    int id = 0;
};
struct Mass {
    float kg = 0;
};
struct Frozen {};
struct Score {
    int value = 0;
};
struct Dt {
    float value = 0;
};
struct Hit {
    int amount = 0;
};

// The access a function system deduces from `F`'s parameters.
template <class F>
ts::detail::Access access_of(F fn) {
    using S = typename ts::detail::function_system<F, ts::detail::callable_args_t<F>>::type;
    S system(std::move(fn));
    return system.access;
}

template <class... Ts>
std::vector<ts::ComponentId> ids() {
    std::vector<ts::ComponentId> v{ts::component_id<Ts>()...};
    std::sort(v.begin(), v.end());
    return v;
}

std::vector<ts::ComponentId> sorted(std::vector<ts::ComponentId> v) {
    std::sort(v.begin(), v.end());
    return v;
}

// (type, write) pairs of the resources an access names, sorted.
std::set<std::pair<std::type_index, bool>> resources(const ts::detail::Access& a) {
    std::set<std::pair<std::type_index, bool>> out;
    for (const auto& r : a.resources) out.insert({r.type, r.write});
    return out;
}

// The live entity whose Health is `hp` (null when none).
ts::Entity find_by_hp(const ts::World& world, int hp) {
    for (const ts::Entity e : world.entities()) {
        const Health* h = world.try_get<Health>(e);
        if (h != nullptr && h->hp == hp) return e;
    }
    return ts::Entity::null();
}

std::set<int> hps(const std::vector<Health>& v) {
    std::set<int> out;
    for (const Health& h : v) out.insert(h.hp);
    return out;
}

void free_function_system(ts::View<Health&> view, ts::ResMut<Score> score) {
    view.each([&](Health& h) {
        h.hp += 1;
        score->value += 1;
    });
}

struct FunctionObject {
    int* calls;
    void operator()(ts::Res<Dt>) const { ++*calls; }
};
}  // namespace

// ------------------------------------------------------------------------- access deduction

TEST(SystemAccess, ViewTermsWriteMutableAndReadConst) {
    const ts::detail::Access a =
        access_of([](ts::View<ts::Entity, Position&, const Velocity&, Health*, const Team*>) {});
    EXPECT_EQ(sorted(a.writes), (ids<Position, Health>()));
    EXPECT_EQ(sorted(a.reads), (ids<Velocity, Team>()));
    EXPECT_TRUE(a.resources.empty());
    EXPECT_FALSE(a.exclusive);
}

TEST(SystemAccess, WithWithoutAnyReadNothingAddedAndChangedRead) {
    const ts::detail::Access a =
        access_of([](ts::View<const Position&, ts::With<Frozen, Team>, ts::Without<Velocity>,
                              ts::Any<Health, Score>, ts::Added<Mass>, ts::Changed<Dt>>) {});
    EXPECT_TRUE(a.writes.empty());
    EXPECT_EQ(sorted(a.reads), (ids<Position, Mass, Dt>()));
    EXPECT_FALSE(a.exclusive);
}

TEST(SystemAccess, ResReadsResMutWritesEventReaderReadsTheQueue) {
    const ts::detail::Access a =
        access_of([](ts::Res<Score>, ts::ResMut<Dt>, ts::EventReader<Hit>) {});
    EXPECT_TRUE(a.reads.empty());
    EXPECT_TRUE(a.writes.empty());
    const std::set<std::pair<std::type_index, bool>> expected{
        {std::type_index(typeid(Score)), false},
        {std::type_index(typeid(Dt)), true},
        {std::type_index(typeid(ts::Events<Hit>)), false}};
    EXPECT_EQ(resources(a), expected);
    EXPECT_FALSE(a.exclusive);
}

TEST(SystemAccess, CommandsEventWriterAndDtDeclareNothing) {
    const ts::detail::Access a = access_of([](ts::Commands, ts::EventWriter<Hit>, float) {});
    EXPECT_TRUE(a.reads.empty());
    EXPECT_TRUE(a.writes.empty());
    EXPECT_TRUE(a.resources.empty());
    EXPECT_FALSE(a.exclusive);
}

TEST(SystemAccess, WorldReferenceIsExclusive) {
    EXPECT_TRUE(access_of([](ts::World&) {}).exclusive);
    const ts::detail::Access mixed =
        access_of([](ts::World&, ts::View<const Position&>, ts::Res<Score>, float) {});
    EXPECT_TRUE(mixed.exclusive);
    EXPECT_EQ(mixed.reads, (ids<Position>()));
    EXPECT_EQ(resources(mixed).size(), 1u);
}

TEST(SystemAccess, EveryCallableKindDeducesTheSameWay) {
    EXPECT_EQ(sorted(access_of(&free_function_system).writes), (ids<Health>()));
    EXPECT_EQ(resources(access_of(&free_function_system)),
              (std::set<std::pair<std::type_index, bool>>{{std::type_index(typeid(Score)), true}}));
    int calls = 0;
    EXPECT_EQ(resources(access_of(FunctionObject{&calls})),
              (std::set<std::pair<std::type_index, bool>>{{std::type_index(typeid(Dt)), false}}));
    int n = 0;
    const ts::detail::Access mut =
        access_of([n](ts::View<const Health&>) mutable { ++n; });  // a mutable lambda
    EXPECT_EQ(mut.reads, (ids<Health>()));
}

// Deduced access, seen from the schedule: systems that share a layer may run together.
TEST(SystemAccess, DeducedAccessDecidesTheLayers) {
    {
        ts::Schedule s;  // readers of the same data, filters on written data: one layer
        s.add("a", [](ts::View<const Position&>) {});
        s.add("b", [](ts::View<const Position&, const Velocity&>) {});
        s.add(
            "c",
            [](ts::View<Health&, ts::With<Position>, ts::Without<Velocity>, ts::Any<Team, Mass>>) {
            });
        s.add("d", [](ts::View<Team&, ts::With<Health>>) {});
        s.add("e", [](ts::Commands, ts::EventWriter<Hit>, float) {});
        s.add("f", [](ts::Commands, ts::EventWriter<Hit>, ts::EventReader<Hit>) {});
        s.add("g", [](ts::Res<Score>) {});
        s.add("h", [](ts::Res<Score>) {});
        EXPECT_EQ(s.stage_count(), 1u);
    }
    {
        ts::Schedule s;  // Changed<T> reads T: it waits for T's writer
        s.add("w", [](ts::View<Position&>) {});
        s.add("c", [](ts::View<const Velocity&, ts::Changed<Position>>) {});
        EXPECT_EQ(s.stage_count(), 2u);
    }
    {
        ts::Schedule s;  // Added<T> likewise
        s.add("w", [](ts::View<Position*>) {});
        s.add("c", [](ts::View<const Velocity&, ts::Added<Position>>) {});
        EXPECT_EQ(s.stage_count(), 2u);
    }
    {
        ts::Schedule s;  // an optional mutable term writes
        s.add("w", [](ts::View<const Velocity&, Position*>) {});
        s.add("r", [](ts::View<const Position*>) {});
        EXPECT_EQ(s.stage_count(), 2u);
    }
    {
        ts::Schedule s;  // ResMut writes the resource
        s.add("w", [](ts::ResMut<Score>) {});
        s.add("r", [](ts::Res<Score>) {});
        EXPECT_EQ(s.stage_count(), 2u);
    }
    {
        ts::Schedule s;  // World& is alone, even next to a system that declares nothing
        s.add("x", [](ts::World&) {});
        s.add("e", [](ts::Commands) {});
        EXPECT_EQ(s.stage_count(), 2u);
    }
}

// ------------------------------------------------------------------------------- overlap

namespace {
// Counts systems in flight; each waits (bounded) for a partner so that overlap is observable.
struct Overlap {
    std::atomic<int> in_flight{0};
    std::atomic<int> max_seen{0};
    void enter(std::chrono::milliseconds wait) {
        const int now = in_flight.fetch_add(1) + 1;
        int prev = max_seen.load();
        while (prev < now && !max_seen.compare_exchange_weak(prev, now)) {
        }
        const auto until = std::chrono::steady_clock::now() + wait;
        while (std::chrono::steady_clock::now() < until) {
            const int n = in_flight.load();
            int m = max_seen.load();
            while (m < n && !max_seen.compare_exchange_weak(m, n)) {
            }
            if (n >= 2) break;
            std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        in_flight.fetch_sub(1);
    }
};
}  // namespace

TEST(SystemParallel, ConflictingSystemsNeverOverlap) {
    ts::World world;
    world.spawn(Position{}, Velocity{});
    world.insert_resource(Score{});
    Overlap overlap;
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    const auto wait = std::chrono::milliseconds(2);
    s.add("write-a", [&](ts::View<Position&>) { overlap.enter(wait); });
    s.add("write-b", [&](ts::View<Position&>) { overlap.enter(wait); });
    s.add("read-c", [&](ts::View<const Position&>) { overlap.enter(wait); });
    s.add("res-mut", [&](ts::ResMut<Score>) { overlap.enter(wait); }).phase(ts::Phase::post_update);
    s.add("res", [&](ts::Res<Score>) { overlap.enter(wait); }).phase(ts::Phase::post_update);
    s.add("world", [&](ts::World&) { overlap.enter(wait); }).phase(ts::Phase::pre_update);
    s.add("other", [&](ts::View<Velocity&>) { overlap.enter(wait); }).phase(ts::Phase::pre_update);
    // Bystanders conflict with nobody, so every phase has parallel work and takes the parallel
    // executor (a phase that is one chain runs inline).
    for (const ts::Phase p : {ts::Phase::pre_update, ts::Phase::update, ts::Phase::post_update})
        s.add("bystander" + std::to_string(static_cast<int>(p)), [](ts::View<Mass&>) {}).phase(p);
    tbb::task_arena arena(4);
    for (int frame = 0; frame < 10; ++frame) s.run(world, arena);
    EXPECT_EQ(overlap.max_seen.load(), 1);
}

TEST(SystemParallel, NonConflictingSystemsOverlapOnTwoWorkers) {
    ts::World world;
    world.spawn(Position{}, Velocity{});
    world.insert_resource(Score{});
    Overlap overlap;
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    const auto wait = std::chrono::milliseconds(50);
    s.add("read-a", [&](ts::View<const Position&>, ts::Res<Score>) { overlap.enter(wait); });
    s.add("read-b",
          [&](ts::View<const Position&, Velocity&>, ts::Res<Score>) { overlap.enter(wait); });
    tbb::task_arena arena(2);
    // Overlap needs a second thread to pick the task up; give it a few frames.
    for (int frame = 0; frame < 20 && overlap.max_seen.load() < 2; ++frame) s.run(world, arena);
    EXPECT_EQ(overlap.max_seen.load(), 2);
}

// ------------------------------------------------------------------------------ callables

TEST(SystemCallables, FreeFunctionsLambdasAndFunctionObjectsRun) {
    ts::World world;
    const ts::Entity e = world.spawn(Health{0});
    world.insert_resource(Score{});
    world.insert_resource(Dt{});
    int object_calls = 0;
    int lambda_calls = 0;
    ts::Schedule s;
    s.add("free", free_function_system);
    s.add("pointer", &free_function_system);
    s.add("object", FunctionObject{&object_calls});
    s.add("lambda", [&lambda_calls, n = 0](ts::Res<Dt>) mutable { lambda_calls = ++n; });
    s.run(world);
    s.run(world);
    EXPECT_EQ(world.get<Health>(e).hp, 4);
    EXPECT_EQ(world.resource<Score>().value, 4);
    EXPECT_EQ(object_calls, 2);
    EXPECT_EQ(lambda_calls, 2);  // the mutable lambda keeps its state between runs
}

// ---------------------------------------------------------------------------------- views

TEST(SystemView, WithWithoutAndAnyFilterTheEntities) {
    ts::World world;
    world.spawn(Health{1}, Position{});
    world.spawn(Health{2}, Position{}, Frozen{});
    world.spawn(Health{3}, Velocity{});
    world.spawn(Health{4}, Team{});
    world.spawn(Health{5});
    std::vector<Health> with, without, any, all;
    ts::Schedule s;
    s.add("with", [&](ts::View<const Health&, ts::With<Position>> v) {
        v.each([&](const Health& h) { with.push_back(h); });
    });
    s.add("without", [&](ts::View<const Health&, ts::Without<Frozen, Team>> v) {
        v.each([&](const Health& h) { without.push_back(h); });
    });
    s.add("any", [&](ts::View<const Health&, ts::Any<Velocity, Team>> v) {
        v.each([&](const Health& h) { any.push_back(h); });
    });
    s.add("combined", [&](ts::View<const Health&, ts::With<Position>, ts::Without<Frozen>,
                                   ts::Any<Position, Team>>
                              v) { v.each([&](const Health& h) { all.push_back(h); }); });
    tbb::task_arena one(1);
    s.run(world, one);
    EXPECT_EQ(hps(with), (std::set<int>{1, 2}));
    EXPECT_EQ(hps(without), (std::set<int>{1, 3, 5}));
    EXPECT_EQ(hps(any), (std::set<int>{3, 4}));
    EXPECT_EQ(hps(all), (std::set<int>{1}));
}

TEST(SystemView, EntityTermsOptionalTermsChunksAndParEach) {
    ts::World world;
    const ts::Entity a = world.spawn(Position{1, 0}, Velocity{1, 1});
    const ts::Entity b = world.spawn(Position{2, 0});
    std::set<ts::Entity> seen;
    int with_velocity = 0;
    std::size_t chunk_rows = 0;
    ts::Schedule s;
    s.add("entities", [&](ts::View<ts::Entity, const Position&, const Velocity*> v) {
        v.each([&](ts::Entity e, const Position&, const Velocity* vel) {
            seen.insert(e);
            if (vel != nullptr) ++with_velocity;
        });
    });
    s.add("chunks", [&](ts::View<const Position&> v) {
        v.each_chunk([&](ts::Chunk&, std::span<const Position> p) { chunk_rows += p.size(); });
    });
    s.add("par", [](ts::View<Position&> v) {
         v.par_each([](Position& p) { p.y += 1; });
     }).phase(ts::Phase::post_update);
    s.run(world);
    EXPECT_EQ(seen, (std::set<ts::Entity>{a, b}));
    EXPECT_EQ(with_velocity, 1);
    EXPECT_EQ(chunk_rows, 2u);
    EXPECT_EQ(world.get<Position>(a).y, 1);
    EXPECT_EQ(world.get<Position>(b).y, 1);
}

TEST(SystemView, AddedSeesNewComponentsSinceTheSystemLastRan) {
    ts::World world;
    const ts::Entity a = world.spawn(Position{});
    std::vector<std::set<ts::Entity>> frames;
    ts::Schedule s;
    s.add("added", [&](ts::View<ts::Entity, ts::Added<Position>> v) {
        frames.emplace_back();
        v.each([&](ts::Entity e) { frames.back().insert(e); });
    });
    s.run(world);  // first run: every row
    const ts::Entity b = world.spawn(Position{});
    const ts::Entity c = world.spawn(Velocity{});
    world.add(c, Position{});
    world.set(a, Position{5, 5});  // a write, not an add
    s.run(world);
    s.run(world);
    ASSERT_EQ(frames.size(), 3u);
    EXPECT_EQ(frames[0], (std::set<ts::Entity>{a}));
    EXPECT_EQ(frames[1], (std::set<ts::Entity>{b, c}));
    EXPECT_TRUE(frames[2].empty());
}

TEST(SystemView, ChangedSeesWritesSinceTheSystemLastRan) {
    ts::World world;
    const ts::Entity a = world.spawn(Position{});
    const ts::Entity b = world.spawn(Position{});
    std::vector<std::set<ts::Entity>> frames;
    ts::Schedule s;
    s.add("changed", [&](ts::View<ts::Entity, const Position&, ts::Changed<Position>> v) {
        frames.emplace_back();
        v.each([&](ts::Entity e, const Position&) { frames.back().insert(e); });
    });
    s.run(world);
    world.set(b, Position{1, 1});
    s.run(world);
    s.run(world);
    world.get_mut<Position>(a).x = 3;
    const ts::Entity c = world.spawn(Position{});  // an add is a change too
    s.run(world);
    ASSERT_EQ(frames.size(), 4u);
    EXPECT_EQ(frames[0], (std::set<ts::Entity>{a, b}));
    EXPECT_EQ(frames[1], (std::set<ts::Entity>{b}));
    EXPECT_TRUE(frames[2].empty());
    EXPECT_EQ(frames[3], (std::set<ts::Entity>{a, c}));
}

TEST(SystemView, ASystemDoesNotSeeItsOwnWritesAsChanges) {
    ts::World world;
    world.spawn(Position{});
    world.spawn(Position{});
    std::vector<int> visited;
    ts::Schedule s;
    s.add("self", [&](ts::View<Position&, ts::Changed<Position>> v) {
        int n = 0;
        v.each([&](Position& p) {
            p.x += 1;
            ++n;
        });
        visited.push_back(n);
    });
    for (int frame = 0; frame < 3; ++frame) s.run(world);
    EXPECT_EQ(visited, (std::vector<int>{2, 0, 0}));
}

// ------------------------------------------------------------------------------ resources

TEST(SystemResources, ResReadsAndResMutWritesTheWorldsValue) {
    ts::World world;
    world.insert_resource(Dt{0.5f});
    world.insert_resource(Score{10});
    float seen = 0;
    ts::Schedule s;
    s.add("read", [&](ts::Res<Dt> dt) {
        seen = dt->value;
        EXPECT_EQ((*dt).value, dt.get().value);
    });
    s.add("write", [](ts::ResMut<Score> score) {
        score->value += 1;
        (*score).value *= 2;
    });
    s.run(world);
    EXPECT_EQ(seen, 0.5f);
    EXPECT_EQ(world.resource<Score>().value, 22);
    world.resource<Dt>().value = 0.25f;
    s.run(world);
    EXPECT_EQ(seen, 0.25f);
    EXPECT_EQ(world.resource<Score>().value, 46);
}

TEST(SystemResources, DtIsTheValueGivenToRun) {
    ts::World world;
    std::vector<float> seen;
    ts::Schedule s;
    s.add("dt", [&](float dt) { seen.push_back(dt); });
    s.add("dt-times-ten", [&](ts::Commands, float dt) {
         seen.push_back(dt * 10);
     }).after("dt");  // conflict-free: order it for a stable log
    tbb::task_arena arena(2);
    s.run(world, 0.5f);
    s.run(world);
    s.run(world, arena, 0.25f);
    EXPECT_EQ(seen, (std::vector<float>{0.5f, 5.0f, 0.0f, 0.0f, 0.25f, 2.5f}));
}

// ------------------------------------------------------------------------------- commands

TEST(SystemCommands, AppliedAtThePhasesSyncPointNotInsideThePhase) {
    ts::World world;
    const ts::Entity old = world.spawn(Health{1});
    std::vector<std::size_t> counts;
    ts::Schedule s;
    s.add("spawn", [&](ts::Commands cmds, ts::View<const Health&> v) {
        counts.push_back(v.count());
        EXPECT_TRUE(ts::CommandBuffer::is_placeholder(cmds.spawn(Health{2}, Position{})));
        cmds.spawn(Health{3});
        cmds.despawn(old);
    });
    s.add("same-phase", [&](ts::View<const Health&> v) {
         counts.push_back(v.count());
     }).after("spawn");
    s.add("next-phase", [&](ts::View<const Health&> v) {
         counts.push_back(v.count());
     }).phase(ts::Phase::post_update);
    tbb::task_arena one(1);
    s.run(world, one);
    EXPECT_EQ(counts, (std::vector<std::size_t>{1, 1, 2}));  // -1 old, +2 new after the sync
    EXPECT_FALSE(world.is_alive(old));
    const ts::Entity spawned = find_by_hp(world, 2);
    ASSERT_TRUE(world.is_alive(spawned));
    EXPECT_EQ(world.get<Health>(spawned).hp, 2);
    EXPECT_TRUE(world.has<Position>(spawned));
}

TEST(SystemCommands, AddRemoveAndPlaceholdersApply) {
    ts::World world;
    const ts::Entity e = world.spawn(Health{1}, Frozen{});
    ts::Schedule s;
    s.add("edit", [&](ts::Commands cmds) {
        cmds.add(e, Position{3, 4});
        cmds.add<Team>(e);
        cmds.remove<Frozen>(e);
        const ts::Entity child = cmds.spawn(Health{7});
        cmds.add(child, Velocity{1, 2});  // a placeholder works in the system's later commands
        EXPECT_EQ(world.count(), 1u);     // recorded, not applied
    });
    s.run(world);
    EXPECT_EQ(world.get<Position>(e).y, 4);
    EXPECT_TRUE(world.has<Team>(e));
    EXPECT_FALSE(world.has<Frozen>(e));
    const ts::Entity child = find_by_hp(world, 7);
    ASSERT_TRUE(world.is_alive(child));
    EXPECT_EQ(world.get<Health>(child).hp, 7);
    EXPECT_EQ(world.get<Velocity>(child).dy, 2);
}

// --------------------------------------------------------------------------------- events

TEST(SystemEvents, ReadersSeeEventsFromTheNextPhaseOn) {
    ts::World world;
    std::vector<std::string> log;
    int frame = 0;
    auto reader = [&](const char* who) {
        return [&log, &frame, who](ts::EventReader<Hit> hits) {
            for (const Hit& h : hits.read())
                log.push_back(std::string(who) + "@" + std::to_string(frame) + ":" +
                              std::to_string(h.amount));
        };
    };
    ts::Schedule s;
    s.add("pre", reader("pre")).phase(ts::Phase::pre_update);
    s.add("writer", [&](ts::EventWriter<Hit> w) { w.send(Hit{frame}); });
    s.add("same", reader("same")).after("writer");
    s.add("post", reader("post")).phase(ts::Phase::post_update);
    tbb::task_arena one(1);
    for (frame = 1; frame <= 3; ++frame) s.run(world, one);
    EXPECT_EQ(log, (std::vector<std::string>{"post@1:1", "pre@2:1", "same@2:1", "post@2:2",
                                             "pre@3:2", "same@3:2", "post@3:3"}));
}

TEST(SystemEvents, AReaderNeverSeesAnEventTwice) {
    ts::World world;
    std::vector<int> seen;
    std::size_t pending_before = 0;
    int frame = 0;
    ts::Schedule s;
    s.add("writer", [&](ts::EventWriter<Hit> w) {
        w.send(Hit{frame * 10});
        w.send(Hit{frame * 10 + 1});
    });
    s.add("reader", [&](ts::EventReader<Hit> r) {
        pending_before = r.size();
        EXPECT_EQ(r.empty(), pending_before == 0);
        for (const Hit& h : r.read()) seen.push_back(h.amount);
        EXPECT_TRUE(r.empty());
    });
    world.send_event(Hit{-1});  // sent before the schedule: seen by the first run
    for (frame = 1; frame <= 4; ++frame) s.run(world);
    EXPECT_EQ(seen, (std::vector<int>{-1, 10, 11, 20, 21, 30, 31}));
    EXPECT_EQ(pending_before, 2u);
}

TEST(SystemEvents, WritersPublishInRegistrationOrder) {
    ts::World world;
    std::vector<int> seen;
    ts::Schedule s;
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    s.add("first", [](ts::EventWriter<Hit> w) { w.send(Hit{1}); }).order(5);
    s.add("second", [](ts::EventWriter<Hit> w) {
        w.send(Hit{2});
        w.send(Hit{3});
    });
    s.add("reader", [&](ts::EventReader<Hit> r) {
         for (const Hit& h : r.read()) seen.push_back(h.amount);
     }).phase(ts::Phase::post_update);
    tbb::task_arena arena(2);
    s.run(world, arena);
    EXPECT_EQ(seen, (std::vector<int>{1, 2, 3}));
}
