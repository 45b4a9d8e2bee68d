// Every error of the World API: the errc code, a message that names the entity
// (`index:generation`) and the component type, and a failed call that changes nothing.
#include <tessera/tessera.hpp>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace errtest {

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
struct Frozen {};

// GCC spells Same<1> and Same<1u> identically ("errtest::Same<1>"): two different types that
// must still get two ids.
template <auto N>
struct Same {
    int v;
};

// Registered by "another library" with a different layout in the type_conflict test.
struct Plugin {
    int v;
};

}  // namespace errtest

namespace {

using errtest::Frozen;
using errtest::Health;
using errtest::Position;
using errtest::Velocity;
using tessera::errc;
using ::testing::HasSubstr;

static_assert(std::is_base_of_v<std::runtime_error, tessera::Error>);

using ComponentIdPair = std::pair<tessera::ComponentId, tessera::ComponentId>;

std::string id(tessera::Entity e) {
    return std::to_string(e.index) + ":" + std::to_string(e.generation);
}

/// The observable state of a small world: count, tick and every value of a few entities.
struct State {
    std::size_t count = 0;
    std::uint64_t tick = 0;
    std::vector<tessera::Entity> entities;
    std::vector<std::string> rows;
    bool operator==(const State&) const = default;
};

State capture(tessera::World& w) {
    State s;
    s.count = static_cast<std::size_t>(w.count());
    s.tick = static_cast<std::uint64_t>(w.tick());
    s.entities = w.entities();
    for (const tessera::Entity& e : s.entities) {
        std::string row = id(e) + " ";
        if (const Position* p = w.try_get<Position>(e))
            row += "P" + std::to_string(p->x) + "," + std::to_string(p->y);
        if (const Velocity* v = w.try_get<Velocity>(e))
            row += "V" + std::to_string(v->dx) + "," + std::to_string(v->dy);
        if (const Health* h = w.try_get<Health>(e)) row += "H" + std::to_string(h->hp);
        if (w.has<Frozen>(e)) row += "F";
        s.rows.push_back(row);
    }
    return s;
}

/// A world with a few entities, one dead handle (index reused, so the generations differ) and
/// one live entity without Position.
class WorldErrors : public ::testing::Test {
protected:
    void SetUp() override {
        for (int i = 0; i < 5; ++i) (void)world.spawn(Position{float(i), 0}, Velocity{1, float(i)});
        dead = world.spawn(Position{7, 7}, Health{70});
        ASSERT_TRUE(world.despawn(dead));
        live = world.spawn(Position{1, 2}, Health{10});  // likely reuses dead's index
        bare = world.spawn(Velocity{3, 4});
        ASSERT_FALSE(world.is_alive(dead));
        ASSERT_TRUE(world.is_alive(live));
        before = capture(world);
    }

    /// Runs f, which must throw tessera::Error with `code` and a message containing each of
    /// `needles`; then checks the world is unchanged.
    void expect_error(errc code, const std::vector<std::string>& needles,
                      const std::function<void()>& f) {
        try {
            f();
            ADD_FAILURE() << "expected tessera::Error with code " << static_cast<int>(code);
        } catch (const tessera::Error& err) {
            EXPECT_EQ(static_cast<int>(err.code()), static_cast<int>(code)) << err.what();
            const std::string msg = err.what();
            for (const std::string& n : needles) EXPECT_THAT(msg, HasSubstr(n));
        }
        expect_unchanged();
    }

    void expect_unchanged() {
        EXPECT_TRUE(capture(world) == before) << "a failed or no-op call changed the world";
    }

    tessera::World world;
    tessera::Entity dead{};
    tessera::Entity live{};
    tessera::Entity bare{};
    State before;
};

// -- get / get_mut / set ----------------------------------------------------------------------

TEST_F(WorldErrors, GetOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Position"}, [&] { (void)world.get<Position>(dead); });
}

TEST_F(WorldErrors, GetOnNullEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {"Position"},
                 [&] { (void)world.get<Position>(tessera::Entity::null()); });
}

TEST_F(WorldErrors, GetOnMissingComponentThrowsMissingComponent) {
    expect_error(errc::missing_component, {id(bare), "Position"},
                 [&] { (void)world.get<Position>(bare); });
}

TEST_F(WorldErrors, GetSeveralOnMissingComponentNamesTheMissingOne) {
    expect_error(errc::missing_component, {id(live), "Velocity"},
                 [&] { (void)world.get<Position, Velocity>(live); });
}

TEST_F(WorldErrors, GetSeveralOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead)}, [&] { (void)world.get<Position, Health>(dead); });
}

TEST_F(WorldErrors, GetMutOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Position"},
                 [&] { (void)world.get_mut<Position>(dead); });
}

TEST_F(WorldErrors, GetMutOnMissingComponentThrowsMissingComponent) {
    expect_error(errc::missing_component, {id(bare), "Position"},
                 [&] { (void)world.get_mut<Position>(bare); });
    EXPECT_FALSE(world.has<Position>(bare));
}

TEST_F(WorldErrors, SetOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Position"}, [&] { world.set(dead, Position{9, 9}); });
    EXPECT_EQ(world.get<Position>(live), (Position{1, 2}));  // the reused index is untouched
}

TEST_F(WorldErrors, SetOnMissingComponentThrowsMissingComponent) {
    expect_error(errc::missing_component, {id(bare), "Position"}, [&] {
        world.set(bare, Position{9, 9});
    });
    EXPECT_FALSE(world.has<Position>(bare));
}

TEST_F(WorldErrors, SetIfChangedOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Position"}, [&] {
        (void)world.set_if_changed(dead, Position{9, 9});
    });
}

TEST_F(WorldErrors, SetIfChangedOnMissingComponentThrowsMissingComponent) {
    expect_error(errc::missing_component, {id(bare), "Position"}, [&] {
        (void)world.set_if_changed(bare, Position{9, 9});
    });
    EXPECT_FALSE(world.has<Position>(bare));
}

// -- add / remove -----------------------------------------------------------------------------

TEST_F(WorldErrors, AddOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Velocity"}, [&] { world.add(dead, Velocity{5, 5}); });
    EXPECT_FALSE(world.has<Velocity>(live));
}

TEST_F(WorldErrors, AddSeveralOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead)}, [&] { world.add(dead, Velocity{5, 5}, Health{1}); });
}

TEST_F(WorldErrors, AddTagOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Frozen"}, [&] { world.add<Frozen>(dead); });
    EXPECT_FALSE(world.has<Frozen>(live));
}

TEST_F(WorldErrors, AddOnNullEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {"Velocity"}, [&] {
        world.add(tessera::Entity::null(), Velocity{5, 5});
    });
}

TEST_F(WorldErrors, RemoveOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Position"},
                 [&] { (void)world.remove<Position>(dead); });
    EXPECT_TRUE(world.has<Position>(live));
}

TEST_F(WorldErrors, RemoveSeveralOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead)}, [&] { (void)world.remove<Position, Health>(dead); });
}

TEST_F(WorldErrors, RemoveOfAbsentComponentReturnsFalseWithoutThrowing) {
    EXPECT_FALSE(world.remove<Position>(bare));
    EXPECT_FALSE(world.remove<Frozen>(bare));
    expect_unchanged();
}

// -- change ticks -----------------------------------------------------------------------------

TEST_F(WorldErrors, ChangedTickOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Position"},
                 [&] { (void)world.changed_tick<Position>(dead); });
}

TEST_F(WorldErrors, ChangedTickOnMissingComponentThrowsMissingComponent) {
    expect_error(errc::missing_component, {id(bare), "Position"},
                 [&] { (void)world.changed_tick<Position>(bare); });
}

TEST_F(WorldErrors, AddedTickOnDeadEntityThrowsNotAlive) {
    expect_error(errc::not_alive, {id(dead), "Health"},
                 [&] { (void)world.added_tick<Health>(dead); });
}

TEST_F(WorldErrors, AddedTickOnMissingComponentThrowsMissingComponent) {
    expect_error(errc::missing_component, {id(bare), "Health"},
                 [&] { (void)world.added_tick<Health>(bare); });
}

TEST_F(WorldErrors, TickErrorsOnceTrackingIsOn) {
    // The same errors after tick arrays exist for the type.
    EXPECT_EQ(static_cast<std::uint64_t>(world.changed_tick<Position>(live)), 1u);
    expect_error(errc::not_alive, {id(dead), "Position"},
                 [&] { (void)world.changed_tick<Position>(dead); });
    expect_error(errc::missing_component, {id(bare), "Position"},
                 [&] { (void)world.added_tick<Position>(bare); });
}

// -- calls that report instead of throwing ----------------------------------------------------

TEST_F(WorldErrors, DespawnOfDeadEntityReturnsFalse) {
    EXPECT_FALSE(world.despawn(dead));
    expect_unchanged();
    EXPECT_FALSE(world.despawn(tessera::Entity::null()));
    expect_unchanged();
}

TEST_F(WorldErrors, DespawnTwiceReturnsFalseTheSecondTime) {
    EXPECT_TRUE(world.despawn(bare));
    before = capture(world);
    EXPECT_FALSE(world.despawn(bare));
    expect_unchanged();
}

TEST_F(WorldErrors, HasOnDeadOrNullEntityIsFalse) {
    EXPECT_FALSE(world.has<Position>(dead));
    EXPECT_FALSE(world.has<Health>(dead));
    EXPECT_FALSE(world.has<Position>(tessera::Entity::null()));
    EXPECT_FALSE(world.has<Frozen>(tessera::Entity::null()));
    EXPECT_FALSE(world.is_alive(dead));
    EXPECT_FALSE(world.is_alive(tessera::Entity::null()));
    expect_unchanged();
}

TEST_F(WorldErrors, TryGetReturnsNullptrWhenDeadNullOrAbsent) {
    EXPECT_EQ(world.try_get<Position>(dead), nullptr);
    EXPECT_EQ(world.try_get<Position>(tessera::Entity::null()), nullptr);
    EXPECT_EQ(world.try_get<Position>(bare), nullptr);
    EXPECT_NE(world.try_get<Position>(live), nullptr);
    expect_unchanged();
}

TEST_F(WorldErrors, StaleHandleNeverReachesTheEntityThatReusedItsIndex) {
    if (live.index != dead.index) GTEST_SKIP() << "the index was not reused";
    EXPECT_NE(live.generation, dead.generation);
    expect_error(errc::not_alive, {id(dead)}, [&] { world.set(dead, Health{0}); });
    EXPECT_EQ(world.get<Health>(live).hp, 10);
}

// -- type_conflict ----------------------------------------------------------------------------

// Another shared library registered `Plugin` first, with a different layout: the registry holds
// its mangled name with another size. Simulated by registering that layout before any other
// static initialiser of this program runs (component types register during static init).
namespace {
struct RegisterOtherPluginLayout {
    RegisterOtherPluginLayout() {
        tessera::ComponentInfo other;
        other.size = 3;
        other.alignment = 1;
        (void)tessera::detail::register_type({"errtest::Plugin", &typeid(errtest::Plugin), other});
    }
};
[[gnu::init_priority(101)]] const RegisterOtherPluginLayout register_other_plugin_layout;
}  // namespace

// Typed reads made before a type's id is cached: a static initialiser that runs before every
// default-priority one (the cached ids among them) spawns with `EarlyValue` and reads it back.
// The reads' fast path looks the value up by the cached id, which is not set yet, and must then
// retry with the registry's id instead of reporting the value missing.
namespace {
struct EarlyValue {
    int v;
};
struct EarlyReads {
    int got = 0;
    int try_got = 0;
    bool has = false;
    bool absent_is_null = false;
    EarlyReads() {
        tessera::World w;
        const tessera::Entity e = w.spawn(EarlyValue{7});
        const tessera::Entity other = w.spawn();
        got = w.get<EarlyValue>(e).v;
        const EarlyValue* p = w.try_get<EarlyValue>(e);
        try_got = p == nullptr ? -1 : p->v;
        has = w.has<EarlyValue>(e);
        absent_is_null = w.try_get<EarlyValue>(other) == nullptr;
    }
};
[[gnu::init_priority(101)]] const EarlyReads early_reads;
}  // namespace

TEST(WorldTypedReads, ReadsBeforeTheCachedIdIsSetFindTheValue) {
    EXPECT_EQ(early_reads.got, 7);
    EXPECT_EQ(early_reads.try_got, 7);
    EXPECT_TRUE(early_reads.has);
    EXPECT_TRUE(early_reads.absent_is_null);
}

TEST(WorldTypeConflict, SameNameWithAnotherLayoutThrowsTypeConflict) {
    using errtest::Plugin;
    tessera::World world;
    const tessera::Entity e = world.spawn(Position{1, 2});
    const State before = capture(world);
    try {
        world.add(e, Plugin{8});
        ADD_FAILURE() << "expected type_conflict";
    } catch (const tessera::Error& err) {
        EXPECT_EQ(static_cast<int>(err.code()), static_cast<int>(errc::type_conflict))
            << err.what();
        EXPECT_THAT(std::string(err.what()), HasSubstr("Plugin"));
    }
    EXPECT_TRUE(capture(world) == before);
    try {
        (void)world.spawn(Plugin{9});
        ADD_FAILURE() << "expected type_conflict";
    } catch (const tessera::Error& err) {
        EXPECT_EQ(static_cast<int>(err.code()), static_cast<int>(errc::type_conflict))
            << err.what();
    }
    EXPECT_EQ(world.count(), 1u);
    EXPECT_TRUE(capture(world) == before);
}

TEST(WorldTypeConflict, DistinctTypesWithTheSameSpelledNameNeverShareAComponent) {
    // Same<1> (int parameter) and Same<1u> (unsigned parameter) are different C++ types with the
    // same size and alignment. Whatever their names look like, they must stay different
    // components (or be reported as a conflict), never silently alias each other.
    using First = errtest::Same<1>;
    using Second = errtest::Same<1u>;
    static_assert(!std::is_same_v<First, Second>);
    ComponentIdPair ids;
    try {
        ids = {tessera::component_id<First>(), tessera::component_id<Second>()};
    } catch (const tessera::Error& err) {
        EXPECT_EQ(static_cast<int>(err.code()), static_cast<int>(errc::type_conflict))
            << err.what();
        return;  // reported as a conflict: acceptable
    }
    EXPECT_FALSE(ids.first == ids.second) << "two different types share one component id";
    tessera::World world;
    const tessera::Entity e = world.spawn(Second{5});
    EXPECT_FALSE(world.has<First>(e));
    EXPECT_EQ(world.try_get<First>(e), nullptr);
}

TEST_F(WorldErrors, ErrorIsARuntimeErrorWithACode) {
    try {
        (void)world.get<Health>(bare);
        FAIL() << "no throw";
    } catch (const std::runtime_error& err) {
        const auto* e = dynamic_cast<const tessera::Error*>(&err);
        ASSERT_NE(e, nullptr);
        EXPECT_EQ(static_cast<int>(e->code()), static_cast<int>(errc::missing_component));
        EXPECT_THAT(std::string(err.what()), HasSubstr("Health"));
    }
}

}  // namespace

// ---- one structural change at a time (issue: two threads on one world went undetected) ----

#if TESSERA_ASSERTIONS
namespace {
namespace ts = tessera;

struct EntryHp {
    int hp = 0;
};
struct EntryPos {
    float x = 0;
};

/// Thread `t` spawns an EntryHp whose on_add observer holds it inside the structural call
/// until released; meanwhile the calling thread runs `second` on the same world.
template <class Second>
void while_another_thread_is_inside(Second&& second) {
    ts::World w;
    std::atomic<bool> inside{false};
    std::atomic<bool> release{false};
    ts::Observer hold = w.on_add<EntryHp>([&](ts::World&, ts::Entity) {
        inside = true;
        while (!release) std::this_thread::yield();
    });
    std::thread t([&] { (void)w.spawn(EntryHp{1}); });
    while (!inside) std::this_thread::yield();
    second(w);
    release = true;
    t.join();
}
}  // namespace

TEST(WorldEntryDeathTest, AStructuralCallWhileAnotherThreadIsInsideOneIsReported) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(while_another_thread_is_inside([](ts::World& w) { (void)w.spawn(EntryPos{}); }),
                 "two threads made structural changes to one world at once");
    EXPECT_DEATH(while_another_thread_is_inside([](ts::World& w) {
                     const ts::Entity e = w.spawn();  // refused before it is made
                     (void)e;
                 }),
                 "two threads made structural changes");
    EXPECT_DEATH(while_another_thread_is_inside([](ts::World& w) {
                     ts::CommandBuffer cb;
                     (void)cb.spawn(EntryPos{});
                     cb.apply(w);
                 }),
                 "two threads made structural changes");
}

TEST(WorldEntry, ReadsFromAnotherThreadAndOtherWorldsPass) {
    // Reads are not structural calls, and a second world is a different world.
    while_another_thread_is_inside([](ts::World& w) {
        EXPECT_EQ(w.count(), 1u);
        ts::World other;
        (void)other.spawn(EntryPos{2});
        EXPECT_EQ(other.count(), 1u);
    });
}

TEST(WorldEntry, NestedCallsFromTheSameThreadPass) {
    ts::World w;
    ts::Observer chain = w.on_add<EntryHp>([](ts::World& world, ts::Entity e) {
        world.add(e, EntryPos{3});  // inside the spawn's structural call, same thread
    });
    const ts::Entity e = w.spawn(EntryHp{1});
    EXPECT_TRUE(w.has<EntryPos>(e));
    // The check is released when the call ends: another thread may change the world now.
    std::thread t([&] { w.despawn(e); });
    t.join();
    EXPECT_FALSE(w.is_alive(e));
}
#endif
