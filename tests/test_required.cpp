// Required components (component_traits<T>::required): every path that adds T brings along
// what T requires, value-initialised, in the same archetype move; what the entity has is kept.
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace required_test {

struct Mass {
    float kg = 1.0f;
};
struct Inertia {
    float value = 0.0f;
};
struct Label {
    std::string text = "unnamed";
};
struct Simulated {};  // a tag
struct Body {
    float x = 0;
};
struct Rigid {
    int flags = 0;
};
struct Plain {
    int v = 0;
};

}  // namespace required_test

// Body requires Mass and Simulated; Mass requires Inertia (transitively: Body brings all
// three); Rigid requires Body (and so everything Body requires) and Label.
template <>
struct tessera::component_traits<required_test::Body> {
    using required = tessera::type_list<required_test::Mass, required_test::Simulated>;
};
template <>
struct tessera::component_traits<required_test::Mass> {
    using required = tessera::type_list<required_test::Inertia>;
};
template <>
struct tessera::component_traits<required_test::Rigid> {
    using required = tessera::type_list<required_test::Body, required_test::Label>;
};

namespace required_test {
namespace {

using tessera::ComponentId;
using tessera::Entity;
using tessera::World;

bool has_body_set(const World& world, Entity e) {
    return world.has<Body, Mass, Inertia, Simulated>(e);
}

TEST(Required, TheRegistryRecordsTheTransitiveClosure) {
    const tessera::ComponentInfo& body = tessera::component_info<Body>();
    ASSERT_EQ(body.required_count, 3u);
    std::vector<ComponentId> ids(body.required, body.required + body.required_count);
    EXPECT_NE(std::find(ids.begin(), ids.end(), tessera::component_id<Mass>()), ids.end());
    EXPECT_NE(std::find(ids.begin(), ids.end(), tessera::component_id<Inertia>()), ids.end());
    EXPECT_NE(std::find(ids.begin(), ids.end(), tessera::component_id<Simulated>()), ids.end());
    EXPECT_EQ(tessera::component_info<Plain>().required_count, 0u);
    // Rigid: Body, Label and Body's three, each once.
    EXPECT_EQ(tessera::component_info<Rigid>().required_count, 5u);
}

TEST(Required, SpawnBringsThemValueInitialised) {
    World world;
    const Entity e = world.spawn(Body{3});
    ASSERT_TRUE(has_body_set(world, e));
    EXPECT_EQ(world.get<Body>(e).x, 3);
    EXPECT_EQ(world.get<Mass>(e).kg, 1.0f);
    EXPECT_EQ(world.get<Inertia>(e).value, 0.0f);
    const Entity r = world.spawn(Rigid{7});
    EXPECT_TRUE(world.has<Rigid>(r) && has_body_set(world, r) && world.has<Label>(r));
    EXPECT_EQ(world.get<Label>(r).text, "unnamed");
}

TEST(Required, ValuesGivenInTheCallWin) {
    World world;
    const Entity e = world.spawn(Body{}, Mass{5});
    EXPECT_EQ(world.get<Mass>(e).kg, 5.0f);
    EXPECT_TRUE(world.has<Inertia>(e));
    const Entity f = world.spawn();
    world.add(f, Body{}, Inertia{2});
    EXPECT_EQ(world.get<Inertia>(f).value, 2.0f);
    EXPECT_EQ(world.get<Mass>(f).kg, 1.0f);
}

TEST(Required, AddKeepsWhatTheEntityHas) {
    World world;
    const Entity e = world.spawn(Mass{9}, Plain{1});
    world.add(e, Body{2});
    ASSERT_TRUE(has_body_set(world, e));
    EXPECT_EQ(world.get<Mass>(e).kg, 9.0f);  // kept as it was
    EXPECT_EQ(world.get<Plain>(e).v, 1);
    // Replacing Body brings back a requirement removed meanwhile, and keeps the rest.
    world.get_mut<Inertia>(e).value = 4;
    world.remove<Mass>(e);
    EXPECT_TRUE(world.has<Body>(e));  // removing a requirement is allowed
    world.add(e, Body{3});
    EXPECT_EQ(world.get<Mass>(e).kg, 1.0f);
    EXPECT_EQ(world.get<Inertia>(e).value, 4.0f);
}

TEST(Required, OneArchetypeMoveObserversSeeEverything) {
    World world;
    int fired = 0;
    auto observer = world.on_add<Mass>([&](World& w, Entity e) {
        ++fired;
        EXPECT_TRUE(w.has<Body>(e));     // same move as Body
        EXPECT_TRUE(w.has<Inertia>(e));  // and the transitive requirement
    });
    const Entity e = world.spawn(Plain{});
    const std::size_t before = world.archetype_count();
    world.add(e, Body{});
    EXPECT_EQ(fired, 1);
    // Only the final archetype was made: no table for Plain+Body alone or Plain+Body+Mass.
    EXPECT_EQ(world.archetype_count(), before + 1);
    world.spawn(Body{});
    EXPECT_EQ(fired, 2);
}

TEST(Required, EmplaceAndDefaultAdd) {
    World world;
    const Entity e = world.spawn();
    world.emplace<Body>(e, 1.5f);
    EXPECT_TRUE(has_body_set(world, e));
    EXPECT_EQ(world.get<Body>(e).x, 1.5f);
    const Entity f = world.spawn();
    world.add<Rigid>(f);
    EXPECT_TRUE(has_body_set(world, f) && world.has<Label>(f));
}

TEST(Required, ByRuntimeId) {
    World world;
    const Entity e = world.spawn(Mass{8});
    world.add(e, tessera::component_id<Body>());
    EXPECT_TRUE(has_body_set(world, e));
    EXPECT_EQ(world.get<Mass>(e).kg, 8.0f);
}

TEST(Required, DeferredAddsResolveWhenTheyApply) {
    World world;
    const Entity a = world.spawn(Plain{1});
    const Entity b = world.spawn(Plain{2});
    world.defer_begin();
    world.add(a, Body{});
    world.add(b, Mass{6});  // queued before the Body below: b keeps this Mass
    world.add(b, Body{});
    const Entity c = world.spawn(Rigid{});
    EXPECT_FALSE(world.has<Body>(a));
    world.defer_end();
    EXPECT_TRUE(has_body_set(world, a));
    EXPECT_TRUE(has_body_set(world, b));
    EXPECT_EQ(world.get<Mass>(b).kg, 6.0f);
    EXPECT_TRUE(has_body_set(world, c) && world.has<Label>(c));
}

TEST(Required, PrefabsAndOverridesBringThem) {
    World world;
    const Entity p = world.prefab(Body{5});  // the prefab carries Mass, Inertia, Simulated
    ASSERT_TRUE(has_body_set(world, p));
    world.get_mut<Mass>(p).kg = 7;
    const Entity a = world.instantiate(p);
    ASSERT_TRUE(has_body_set(world, a));
    EXPECT_EQ(world.get<Mass>(a).kg, 7.0f);  // copied, not value-initialised
    // An override the prefab lacks brings what it requires and the prefab lacks; what the
    // prefab has is copied as it is.
    const Entity b = world.instantiate(p, Rigid{3});
    ASSERT_TRUE(has_body_set(world, b));
    ASSERT_TRUE(world.has<Label>(b));
    EXPECT_EQ(world.get<Label>(b).text, "unnamed");
    EXPECT_EQ(world.get<Mass>(b).kg, 7.0f);
    EXPECT_EQ(world.get<Body>(b).x, 5.0f);
    const Entity bare = world.prefab(Plain{1});
    world.defer_begin();
    const Entity c = world.instantiate(bare, Mass{2});
    world.defer_end();
    ASSERT_TRUE((world.has<Mass, Inertia, Plain>(c)));
    EXPECT_EQ(world.get<Mass>(c).kg, 2.0f);
    const Entity d = world.instantiate(bare, Mass{3});
    ASSERT_TRUE((world.has<Mass, Inertia, Plain>(d)));
    EXPECT_EQ(world.prefab_of(d), bare);
}

TEST(Required, InsideAQueryLoop) {
    World world;
    for (int i = 0; i < 4; ++i) world.spawn(Plain{i});
    auto q = world.query<const Plain&>();
    q.each([&](Entity e, const Plain&) { world.add(e, Body{}); });
    int n = 0;
    world.query<const Body&, const Mass&, const Inertia&>().each(
        [&](const Body&, const Mass&, const Inertia&) { ++n; });
    EXPECT_EQ(n, 4);
}

TEST(Required, CommandBuffers) {
    World world;
    const Entity e = world.spawn(Inertia{3});
    tessera::CommandBuffer commands;
    commands.add(e, Body{});
    const Entity placeholder = commands.spawn(Rigid{});
    const Entity by_id = world.spawn();
    commands.add(by_id, tessera::component_id<Body>());
    commands.apply(world);
    const Entity s = commands.resolved(placeholder);
    EXPECT_TRUE(has_body_set(world, by_id));
    EXPECT_TRUE(has_body_set(world, e));
    EXPECT_EQ(world.get<Inertia>(e).value, 3.0f);
    EXPECT_TRUE(has_body_set(world, s) && world.has<Label>(s));
}

TEST(Required, SpawnManyConstructsThemInEveryRow) {
    World world;
    const auto made = world.spawn_many(100, [](std::size_t i, Body& b) { b.x = float(i); });
    ASSERT_EQ(made.size(), 100u);
    for (std::size_t i = 0; i < made.size(); ++i) {
        ASSERT_TRUE(has_body_set(world, made[i]));
        EXPECT_EQ(world.get<Body>(made[i]).x, float(i));
        EXPECT_EQ(world.get<Mass>(made[i]).kg, 1.0f);
    }
    const auto labelled = world.spawn_many(3, [](std::size_t, Rigid&) {});
    for (const Entity e : labelled) EXPECT_EQ(world.get<Label>(e).text, "unnamed");
    // While deferring (inside a loop) too.
    world.defer_begin();
    const auto later = world.spawn_many(2, [](std::size_t, Body&) {});
    const std::vector<Entity> kept(later.begin(), later.end());
    world.defer_end();
    for (const Entity e : kept) EXPECT_TRUE(has_body_set(world, e));
}

TEST(Required, SnapshotsLoadExactlyWhatWasSaved) {
    World world;
    const Entity e = world.spawn(Body{});
    world.remove<Mass>(e);  // now Body without Mass: a state the load must keep
    const tessera::Snapshot snap = world.snapshot();
    World restored;
    restored.restore(snap);
    const Entity r = restored.entities().front();
    EXPECT_TRUE(restored.has<Body>(r));
    EXPECT_FALSE(restored.has<Mass>(r));
    const World copy = world.clone();
    EXPECT_FALSE(copy.has<Mass>(copy.entities().front()));
}

TEST(Required, AFailedAddChangesNothing) {
    World world;
    const Entity e = world.spawn(Plain{});
    const Entity dead = world.spawn();
    world.despawn(dead);
    EXPECT_THROW(world.add(dead, Body{}), tessera::Error);
    EXPECT_THROW(world.add(dead, tessera::component_id<Body>()), tessera::Error);
    EXPECT_TRUE(world.has<Plain>(e));
    EXPECT_FALSE(world.has<Mass>(e));
}

}  // namespace
}  // namespace required_test
