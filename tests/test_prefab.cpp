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
    // The same with the tree's plan kept from that call, and a copy that throws below the
    // root (whose copies, made first, are destroyed).
    const ts::Entity elf = w.prefab(Label{"a label long enough for the heap, not inline"});
    w.relate(w.prefab(Throwing{6}), ts::ChildOf{}, elf);
    (void)w.instantiate(elf);
    const std::vector<ts::Entity> after = w.entities();
    Throwing::armed = true;
    EXPECT_THROW((void)w.instantiate(orc), std::runtime_error);
    EXPECT_THROW((void)w.instantiate_many(orc, 4), std::runtime_error);
    EXPECT_THROW((void)w.instantiate(elf), std::runtime_error);
    EXPECT_THROW((void)w.instantiate_many(elf, 4), std::runtime_error);
    Throwing::armed = false;
    EXPECT_EQ(w.entities(), after);
    EXPECT_EQ(w.sources<ts::IsA>(orc).size(), 1u);
    EXPECT_EQ(w.sources<ts::IsA>(sword).size(), 1u);
    EXPECT_EQ(w.sources<ts::IsA>(elf).size(), 1u);
    EXPECT_EQ(w.children(e).size(), 1u);
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

// ---------------------------------------------------------------------------------------------
// The plan a call without overrides keeps per prefab (src/prefab.cpp): every later call must
// see the prefab tree as it is then.

namespace {
struct Aura {  // a sparse component (traits below)
    int v = 0;
};
}  // namespace

template <>
struct tessera::component_traits<Aura> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};

namespace {

/// An instance tree in words: the test's components it has (with values), then its children
/// in brackets, in order.
std::string describe(const ts::World& w, ts::Entity e) {
    std::string out;
    const auto put = [&](const std::string& part) {
        if (!out.empty()) out += ' ';
        out += part;
    };
    if (const Health* h = w.try_get<Health>(e)) put("H" + std::to_string(h->v));
    if (const Speed* s = w.try_get<Speed>(e)) put("S" + std::to_string(s->v));
    if (const Sword* s = w.try_get<Sword>(e)) put("W" + std::to_string(s->dmg));
    if (const Label* l = w.try_get<Label>(e)) put("L" + l->text);
    if (const Aura* a = w.try_get<Aura>(e)) put("A" + std::to_string(a->v));
    if (w.has<Boss>(e)) put("Boss");
    std::string kids;
    for (const ts::Entity kid : w.children(e)) {
        if (!kids.empty()) kids += ", ";
        kids += describe(w, kid);
    }
    if (!kids.empty()) put("[" + kids + "]");
    return out;
}

TEST(Prefab, InstantiateSeesPrefabChangesMadeAfterEarlierCalls) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    const ts::Entity sword = w.prefab(Sword{7});
    w.relate(sword, ts::ChildOf{}, orc);
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H100 [W7]");
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H100 [W7]");
    // Values are read at each call.
    w.set(orc, Health{90});
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H90 [W7]");
    // The component sets of the prefab and of a child prefab.
    w.add(orc, Speed{2});
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H90 S2 [W7]");
    EXPECT_TRUE(w.remove<Health>(orc));
    EXPECT_EQ(describe(w, w.instantiate(orc)), "S2 [W7]");
    w.add(sword, Label{"edge"}, Boss{});
    EXPECT_EQ(describe(w, w.instantiate(orc)), "S2 [W7 Ledge Boss]");
    // Child prefabs added, at the top and below.
    const ts::Entity shield = w.prefab(Health{20});
    w.relate(shield, ts::ChildOf{}, orc);
    EXPECT_EQ(describe(w, w.instantiate(orc)), "S2 [W7 Ledge Boss, H20]");
    const ts::Entity gem = w.prefab(Label{"gem"});
    w.relate(gem, ts::ChildOf{}, sword);
    EXPECT_EQ(describe(w, w.instantiate(orc)), "S2 [W7 Ledge Boss [Lgem], H20]");
    // Child prefabs taken away: unrelated, despawned.
    EXPECT_TRUE(w.unrelate<ts::ChildOf>(shield, orc));
    EXPECT_EQ(describe(w, w.instantiate(orc)), "S2 [W7 Ledge Boss [Lgem]]");
    EXPECT_TRUE(w.despawn(gem));
    EXPECT_EQ(describe(w, w.instantiate(orc)), "S2 [W7 Ledge Boss]");
    // A child that is no longer a prefab is left out; a prefab again, it is back.
    EXPECT_TRUE(w.remove<ts::Prefab>(sword));
    EXPECT_EQ(describe(w, w.instantiate(orc)), "S2");
    w.add(sword, ts::Prefab{});
    EXPECT_EQ(describe(w, w.instantiate(orc)), "S2 [W7 Ledge Boss]");
    // The same through instantiate_many.
    w.relate(shield, ts::ChildOf{}, orc);
    for (const ts::Entity e : w.instantiate_many(orc, 3))
        EXPECT_EQ(describe(w, e), "S2 [W7 Ledge Boss, H20]");
    // The prefab itself stops being one.
    EXPECT_TRUE(w.remove<ts::Prefab>(orc));
    EXPECT_EQ(error_of([&] { (void)w.instantiate(orc); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { (void)w.instantiate_many(orc, 2); }), ts::errc::invalid_argument);
}

TEST(Prefab, InstantiateReadsThePrefabsCurrentRow) {
    ts::World w;
    const ts::Entity first = w.prefab(Health{1});
    const ts::Entity second = w.prefab(Health{2});
    EXPECT_EQ(describe(w, w.instantiate(second)), "H2");
    EXPECT_TRUE(w.despawn(first));  // the last row, `second`'s, fills the hole
    EXPECT_EQ(describe(w, w.instantiate(second)), "H2");
    for (const ts::Entity e : w.instantiate_many(second, 4)) EXPECT_EQ(describe(w, e), "H2");
}

TEST(Prefab, InstantiateSeesSparseComponentsAddedToPrefabsLater) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{1});
    const ts::Entity sword = w.prefab(Sword{3});
    w.relate(sword, ts::ChildOf{}, orc);
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H1 [W3]");
    w.add(sword, Aura{5});  // moves no prefab to another table
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H1 [W3 A5]");
    w.add(orc, Aura{4});
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H1 A4 [W3 A5]");
    EXPECT_TRUE(w.remove<Aura>(orc));
    EXPECT_TRUE(w.remove<Aura>(sword));
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H1 [W3]");
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H1 [W3]");
}

TEST(Prefab, APrefabInTheSlotOfADeadOneIsInstantiatedAsItself) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{1});
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H1");
    EXPECT_TRUE(w.despawn(orc));
    const ts::Entity elf = w.prefab(Speed{2});
    ASSERT_EQ(elf.index, orc.index);  // the freed slot, a new generation
    EXPECT_EQ(describe(w, w.instantiate(elf)), "S2");
    EXPECT_EQ(error_of([&] { (void)w.instantiate(orc); }), ts::errc::not_alive);
}

TEST(Prefab, ChildPrefabsSharingTablesAndParents) {
    ts::World w;
    // Two levels per table, not next to each other (W under W), and one prefab under two
    // parents (gem: instantiated under each).
    const ts::Entity orc = w.prefab(Health{100});
    const ts::Entity a = w.prefab(Sword{1});
    const ts::Entity b = w.prefab(Label{"b"});
    const ts::Entity c = w.prefab(Sword{3});
    const ts::Entity gem = w.prefab(Label{"gem"});
    w.relate(a, ts::ChildOf{}, orc);
    w.relate(b, ts::ChildOf{}, orc);
    w.relate(c, ts::ChildOf{}, a);
    w.relate(gem, ts::ChildOf{}, a);
    w.relate(gem, ts::ChildOf{}, b);
    const std::string tree = "H100 [W1 [W3, Lgem], Lb [Lgem]]";
    EXPECT_EQ(describe(w, w.instantiate(orc)), tree);
    EXPECT_EQ(describe(w, w.instantiate(orc)), tree);
    const std::vector<ts::Entity> made = [&] {
        const auto span = w.instantiate_many(orc, 3);
        return std::vector<ts::Entity>(span.begin(), span.end());
    }();
    ASSERT_EQ(made.size(), 3u);
    for (const ts::Entity e : made) EXPECT_EQ(describe(w, e), tree);
    EXPECT_EQ(w.sources<ts::IsA>(gem).size(), 2u * 5u);
    EXPECT_EQ(w.sources<ts::IsA>(c).size(), 5u);
    EXPECT_EQ(w.count(), 5u + 5u * 6u);
}

TEST(Prefab, ObserversSeeEveryCallsInstancesAsSpawns) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    w.relate(w.prefab(Sword{7}), ts::ChildOf{}, orc);
    (void)w.instantiate(orc);
    std::vector<ts::Entity> spawned;
    const ts::Observer o = w.on_spawn([&](ts::World& world, ts::Entity e) {
        spawned.push_back(e);
        EXPECT_TRUE(world.prefab_of(e));  // the whole tree is in place
    });
    const ts::Entity e = w.instantiate(orc);
    ASSERT_EQ(spawned.size(), 2u);
    EXPECT_EQ(spawned[0], e);
    EXPECT_EQ(spawned[1], w.children(e)[0]);
    spawned.clear();
    const auto roots = w.instantiate_many(orc, 3);
    ASSERT_EQ(roots.size(), 3u);
    ASSERT_EQ(spawned.size(), 6u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(spawned[i], roots[i]);
        EXPECT_EQ(w.parent(spawned[3 + i]), roots[i]);
    }
}

TEST(Prefab, RestoredAndClonedWorldsInstantiateTheirOwnPrefabTrees) {
    ts::World w;
    const ts::Entity orc = w.prefab(Health{100});
    w.relate(w.prefab(Sword{7}), ts::ChildOf{}, orc);
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H100 [W7]");
    const ts::Snapshot before = w.snapshot();
    w.relate(w.prefab(Health{20}), ts::ChildOf{}, orc);
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H100 [W7, H20]");
    ts::World copy = w.clone();
    w.restore(before);
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H100 [W7]");
    EXPECT_EQ(describe(copy, copy.instantiate(orc)), "H100 [W7, H20]");
    copy.add(orc, Speed{3});
    EXPECT_EQ(describe(copy, copy.instantiate(orc)), "H100 S3 [W7, H20]");
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H100 [W7]");
    // A snapshot of the later tree, restored over the earlier one.
    const ts::Snapshot later = copy.snapshot();
    w.restore(later);
    EXPECT_EQ(describe(w, w.instantiate(orc)), "H100 S3 [W7, H20]");
}

}  // namespace
