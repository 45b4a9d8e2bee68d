// prefab.hpp: prefabs, instantiate, instantiate_many, prefab_of, IsA; queries skip prefabs.
#include <tessera/prefab.hpp>
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include "common/error_of.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace ts = tessera;
using tessera::test::error_of;

namespace {

struct Health {
    int v = 0;
};
struct Speed {
    int v = 0;
};
struct Sword {
    int dmg = 0;
};
struct Label {
    std::string text;
};
struct Boss {};
struct NoCopy {
    int v = 0;
    NoCopy() = default;
    NoCopy(NoCopy&&) noexcept = default;
    NoCopy(const NoCopy&) = delete;
};
struct Throwing {  // its copy throws once armed
    static inline bool armed = false;
    int v = 0;
    Throwing() = default;
    explicit Throwing(int x) : v(x) {}
    Throwing(Throwing&&) noexcept = default;
    Throwing(const Throwing& o) : v(o.v) {
        if (armed) throw std::runtime_error("copy");
    }
};

std::size_t count_of(ts::World& w, auto&& q) {
    std::size_t n = 0;
    q.each([&](ts::Entity) { ++n; });
    (void)w;
    return n;
}

TEST(Prefab, PrefabIsTaggedAndSkippedByQueries) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100}, Speed{2});
    const ts::Entity plain = w.spawn(Health{5});
    EXPECT_TRUE(w.has<ts::Prefab>(orc));
    EXPECT_EQ(w.get<Health>(orc).v, 100);
    std::vector<ts::Entity> seen;
    w.query<const Health&>().each([&](ts::Entity e, const Health&) { seen.push_back(e); });
    EXPECT_EQ(seen, std::vector<ts::Entity>{plain});
}

TEST(Prefab, QueriesThatNamePrefabSeeIt) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    w.spawn(Health{5});
    std::vector<ts::Entity> seen;
    w.query<const Health&>().with<ts::Prefab>().each(
        [&](ts::Entity e, const Health&) { seen.push_back(e); });
    EXPECT_EQ(seen, std::vector<ts::Entity>{orc});
    std::size_t optional = 0;
    w.query<const Health&, const ts::Prefab*>().each(
        [&](const Health&, const ts::Prefab*) { ++optional; });
    EXPECT_EQ(optional, 2u);
    ts::QuerySpec spec;
    spec.with<Health>();
    EXPECT_EQ(w.query_dynamic(spec).count(), 1u);
    spec.with<ts::Prefab>();
    EXPECT_EQ(w.query_dynamic(spec).count(), 1u);
}

TEST(Prefab, QueryObserversSkipPrefabs) {
    ts::World w;
    auto q = w.query<const Health&>();
    int entered = 0;
    const ts::Observer o = q.on_enter([&](ts::World&, ts::Entity) { ++entered; });
    w.prefab(Health{1});
    EXPECT_EQ(entered, 0);
    w.spawn(Health{1});
    EXPECT_EQ(entered, 1);
}

TEST(Prefab, InstantiateCopiesComponentsAndRelatesIsA) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100}, Speed{2}, Label{"orc"}, Boss{});
    const ts::Entity e = w.instantiate(orc);
    EXPECT_FALSE(w.has<ts::Prefab>(e));
    EXPECT_EQ(w.get<Health>(e).v, 100);
    EXPECT_EQ(w.get<Speed>(e).v, 2);
    EXPECT_EQ(w.get<Label>(e).text, "orc");
    EXPECT_TRUE(w.has<Boss>(e));
    EXPECT_EQ(w.prefab_of(e), orc);
    EXPECT_TRUE(w.related<ts::IsA>(e, orc));
    EXPECT_EQ(w.sources<ts::IsA>(orc).size(), 1u);
    EXPECT_EQ(w.prefab_of(orc), ts::Entity::null());
    // The copy is independent of its prefab.
    w.get_mut<Health>(e).v = 1;
    EXPECT_EQ(w.get<Health>(orc).v, 100);
    // One instance in the world's queries, the prefab not.
    std::size_t n = 0;
    w.query<const Health&>().each([&](const Health&) { ++n; });
    EXPECT_EQ(n, 1u);
}

TEST(Prefab, InstantiateOverridesReplaceAndAdd) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100}, Speed{2});
    const ts::Entity e = w.instantiate(orc, Speed{3}, Label{"fast"});
    EXPECT_EQ(w.get<Health>(e).v, 100);
    EXPECT_EQ(w.get<Speed>(e).v, 3);
    EXPECT_EQ(w.get<Label>(e).text, "fast");
    EXPECT_EQ(w.get<Speed>(orc).v, 2);
    EXPECT_FALSE(w.has<Label>(orc));
}

TEST(Prefab, ChildPrefabsAreInstantiatedAsChildren) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    const ts::Entity sword = w.prefab(Sword{7});
    const ts::Entity shield = w.prefab(Health{20});
    const ts::Entity gem = w.prefab(Label{"gem"});
    w.relate(sword, ts::ChildOf{}, orc);
    w.relate(shield, ts::ChildOf{}, orc);
    w.relate(gem, ts::ChildOf{}, sword);
    const ts::Entity e = w.instantiate(orc);
    ASSERT_EQ(w.children(e).size(), 2u);
    const ts::Entity s = w.children(e)[0];
    const ts::Entity h = w.children(e)[1];
    EXPECT_EQ(w.prefab_of(s), sword);
    EXPECT_EQ(w.prefab_of(h), shield);
    EXPECT_EQ(w.get<Sword>(s).dmg, 7);
    EXPECT_FALSE(w.has<ts::Prefab>(s));
    EXPECT_EQ(w.parent(s), e);
    ASSERT_EQ(w.children(s).size(), 1u);
    EXPECT_EQ(w.get<Label>(w.children(s)[0]).text, "gem");
    EXPECT_EQ(w.parents(e).size(), 0u);
    // The prefab tree is unchanged.
    EXPECT_EQ(w.children(orc).size(), 2u);
    EXPECT_EQ(w.count(), 4u + 4u);
    // Despawning the instance cascades to its children, not to the prefabs.
    w.despawn(e);
    EXPECT_EQ(w.count(), 4u);
    EXPECT_TRUE(w.is_alive(gem));
}

TEST(Prefab, InstantiateOfAChildPrefabDropsItsParent) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    const ts::Entity sword = w.prefab(Sword{7});
    w.relate(sword, ts::ChildOf{}, orc);
    const ts::Entity e = w.instantiate(sword);
    EXPECT_EQ(w.parent(e), ts::Entity::null());
    EXPECT_EQ(w.prefab_of(e), sword);
}

TEST(Prefab, InstantiateManyMakesTreesInOrder) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100}, Speed{2});
    const ts::Entity sword = w.prefab(Sword{7});
    w.relate(sword, ts::ChildOf{}, orc);
    const std::vector<ts::Entity> made = [&] {
        const auto span = w.instantiate_many(orc, 50);
        return std::vector<ts::Entity>(span.begin(), span.end());
    }();
    ASSERT_EQ(made.size(), 50u);
    EXPECT_EQ(w.count(), 2u + 100u);
    for (const ts::Entity e : made) {
        EXPECT_EQ(w.get<Health>(e).v, 100);
        EXPECT_EQ(w.prefab_of(e), orc);
        ASSERT_EQ(w.children(e).size(), 1u);
        EXPECT_EQ(w.get<Sword>(w.children(e)[0]).dmg, 7);
        EXPECT_EQ(w.parent(w.children(e)[0]), e);
    }
    EXPECT_EQ(w.sources<ts::IsA>(orc).size(), 50u);
    EXPECT_EQ(w.sources<ts::IsA>(sword).size(), 50u);
    EXPECT_TRUE(w.instantiate_many(orc, 0).empty());
}

TEST(Prefab, InstantiateManyReusesFreedSlots) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{1});
    std::vector<ts::Entity> junk;
    for (int i = 0; i < 5; ++i) junk.push_back(w.spawn(Speed{i}));
    for (const ts::Entity e : junk) w.despawn(e);
    const auto made = w.instantiate_many(orc, 8);
    for (const ts::Entity e : made) {
        EXPECT_TRUE(w.is_alive(e));
        EXPECT_EQ(w.prefab_of(e), orc);
    }
}

TEST(Prefab, ObserversSeeInstancesAsSpawns) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    const ts::Entity sword = w.prefab(Sword{7});
    w.relate(sword, ts::ChildOf{}, orc);
    std::vector<ts::Entity> spawned;
    int health_added = 0;
    const ts::Observer a = w.on_spawn([&](ts::World& world, ts::Entity e) {
        spawned.push_back(e);
        EXPECT_TRUE(world.prefab_of(e));  // the whole tree is in place
    });
    const ts::Observer b = w.on_add<Health>([&](ts::World&, ts::Entity) { ++health_added; });
    const ts::Entity e = w.instantiate(orc);
    ASSERT_EQ(spawned.size(), 2u);
    EXPECT_EQ(spawned[0], e);
    EXPECT_EQ(health_added, 1);
}

TEST(Prefab, InstantiateDefersInsideALoop) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    const ts::Entity sword = w.prefab(Sword{7});
    w.relate(sword, ts::ChildOf{}, orc);
    w.spawn(Speed{1});
    ts::Entity made;
    w.query<const Speed&>().each([&](const Speed&) {
        made = w.instantiate(orc, Speed{9});
        EXPECT_TRUE(w.is_alive(made));
        EXPECT_FALSE(w.has<Health>(made));  // applied when the loop ends
    });
    EXPECT_EQ(w.get<Health>(made).v, 100);
    EXPECT_EQ(w.get<Speed>(made).v, 9);
    EXPECT_EQ(w.prefab_of(made), orc);
    ASSERT_EQ(w.children(made).size(), 1u);
    EXPECT_EQ(w.prefab_of(w.children(made)[0]), sword);
}

TEST(Prefab, InstantiateManyDefersInsideAnObserver) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    std::vector<ts::Entity> made;
    const ts::Observer o = w.on_add<Speed>([&](ts::World& world, ts::Entity) {
        const auto span = world.instantiate_many(orc, 3);
        made.assign(span.begin(), span.end());
    });
    w.spawn(Speed{1});
    ASSERT_EQ(made.size(), 3u);
    for (const ts::Entity e : made) EXPECT_EQ(w.get<Health>(e).v, 100);
}

TEST(Prefab, DeadPrefabIsNotAlive) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{1});
    w.despawn(orc);
    EXPECT_EQ(error_of([&] { w.instantiate(orc); }), ts::errc::not_alive);
    EXPECT_EQ(error_of([&] { (void)w.instantiate_many(orc, 2); }), ts::errc::not_alive);
    EXPECT_EQ(error_of([&] { w.instantiate(ts::Entity::null()); }), ts::errc::not_alive);
}

TEST(Prefab, NonPrefabIsInvalidArgument) {
    ts::World w;
    const ts::Entity plain = w.spawn(Health{1});
    EXPECT_EQ(error_of([&] { w.instantiate(plain); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { (void)w.instantiate_many(plain, 2); }), ts::errc::invalid_argument);
    EXPECT_EQ(w.count(), 1u);
}

TEST(Prefab, UncopyableComponentIsInvalidArgument) {
    ts::World w;
    const ts::Entity p = w.prefab(NoCopy{});
    EXPECT_EQ(error_of([&] { w.instantiate(p); }), ts::errc::invalid_argument);
    EXPECT_EQ(w.count(), 1u);
}

TEST(Prefab, NonPrefabChildOfPrefabIsRefused) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{1});
    const ts::Entity plain = w.spawn(Sword{});
    EXPECT_EQ(error_of([&] { w.relate(plain, ts::ChildOf{}, orc); }), ts::errc::invalid_argument);
    EXPECT_TRUE(w.children(orc).empty());
    EXPECT_FALSE(w.has_relation<ts::ChildOf>(plain));
}

TEST(Prefab, IsAIsKeptByInstantiate) {
    ts::World w;
    const ts::Entity e = w.spawn();
    EXPECT_EQ(error_of([&] { w.add(e, ts::IsA{}); }), ts::errc::invalid_argument);
}

TEST(Prefab, ThrowingCopyChangesNothing) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{1}, Throwing{4});
    const ts::Entity sword = w.prefab(Throwing{5}, Sword{});
    w.relate(sword, ts::ChildOf{}, orc);
    const std::vector<ts::Entity> before = w.entities();
    Throwing::armed = true;
    EXPECT_THROW(w.instantiate(orc, Label{"x"}), std::runtime_error);
    EXPECT_THROW((void)w.instantiate_many(orc, 4), std::runtime_error);
    Throwing::armed = false;
    EXPECT_EQ(w.entities(), before);
    EXPECT_EQ(w.sources<ts::IsA>(orc).size(), 0u);
    // The entity index is as before: the next instance gets the id a spawn would have.
    const ts::Entity probe = w.spawn();
    w.despawn(probe);
    const ts::Entity e = w.instantiate(orc);
    EXPECT_EQ(e.index, probe.index);
    EXPECT_EQ(e.generation, probe.generation + 1);
}

TEST(Prefab, SnapshotsAndCloneKeepPrefabs) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    const ts::Entity e = w.instantiate(orc);
    ts::World c = w.clone();
    EXPECT_TRUE(c.has<ts::Prefab>(orc));
    EXPECT_EQ(c.prefab_of(e), orc);
    EXPECT_EQ(ts::state_hash(c), ts::state_hash(w));
    const ts::Entity f = c.instantiate(orc);
    EXPECT_EQ(c.prefab_of(f), orc);
}

}  // namespace
