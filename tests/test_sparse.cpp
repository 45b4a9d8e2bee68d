// Sparse components (component_traits<T>::storage = ts::storage_kind::sparse): storage outside
// the archetype tables, structural calls that split them off, reads and writes, despawn,
// deferral and commands, clone and snapshots, and a model-based randomized test against a
// std::map reference.
#include <tessera/prefab.hpp>
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error_of.hpp"
#include "common/failing_resource.hpp"

namespace sparse_test {
struct Pos {
    float x = 0, y = 0;
    friend bool operator==(const Pos&, const Pos&) = default;
};
struct Vel {
    float dx = 0, dy = 0;
};
struct Buff {
    std::int32_t power = 0;
    friend bool operator==(const Buff&, const Buff&) = default;
};
struct Name {
    std::string s;
    friend bool operator==(const Name&, const Name&) = default;
};
struct Marked {};
struct Stun {
    int turns = 0;
};
struct Untracked {
    int v = 0;
};
struct Big {
    alignas(128) double d[3] = {};
};
struct Rel {
    int w = 0;
};
// Required components across storage kinds: a sparse Aura requires the table Pos and the
// sparse Marked; a table Armor requires the sparse Shield.
struct Aura {
    int radius = 0;
};
struct Shield {
    int hp = 10;
};
struct Armor {
    int ac = 0;
};
}  // namespace sparse_test

// Field metadata: state_hash and the formats read values through it.
TESSERA_REFLECT(sparse_test::Pos, x, y)
TESSERA_REFLECT(sparse_test::Buff, power)
TESSERA_REFLECT(sparse_test::Name, s)
TESSERA_REFLECT(sparse_test::Stun, turns)

template <>
struct tessera::component_traits<sparse_test::Buff> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<sparse_test::Name> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<sparse_test::Marked> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<sparse_test::Stun> {
    static constexpr auto storage = tessera::storage_kind::sparse;
    static constexpr bool enableable = true;
};
template <>
struct tessera::component_traits<sparse_test::Untracked> {
    static constexpr auto storage = tessera::storage_kind::sparse;
    static constexpr bool track_changes = false;
};
template <>
struct tessera::component_traits<sparse_test::Big> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<sparse_test::Rel> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<sparse_test::Aura> {
    static constexpr auto storage = tessera::storage_kind::sparse;
    using required = tessera::type_list<sparse_test::Pos, sparse_test::Marked>;
};
template <>
struct tessera::component_traits<sparse_test::Shield> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<sparse_test::Armor> {
    using required = tessera::type_list<sparse_test::Shield>;
};

namespace sparse_test {
namespace ts = tessera;
using ts::test::error_of;

TEST(Sparse, TraitReachesTheRegistry) {
    EXPECT_TRUE(ts::component_info<Buff>().sparse);
    EXPECT_TRUE(ts::component_info<Marked>().sparse);
    EXPECT_FALSE(ts::component_info<Pos>().sparse);
}

TEST(Sparse, AddAndRemoveMoveNoRowAndMakeNoArchetype) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1, 2});
    const std::size_t archetypes = w.archetype_count();
    const auto info = w.archetype_of(e);
    w.add(e, Buff{7});
    EXPECT_EQ(w.archetype_count(), archetypes);
    EXPECT_EQ(w.archetype_of(e).index, info.index);
    EXPECT_TRUE(w.has<Buff>(e));
    EXPECT_TRUE((w.has<Pos, Buff>(e)));
    EXPECT_EQ(w.get<Buff>(e).power, 7);
    ASSERT_NE(w.try_get<Buff>(e), nullptr);
    EXPECT_EQ(w.try_get<Buff>(e)->power, 7);
    EXPECT_TRUE(w.remove<Buff>(e));
    EXPECT_FALSE(w.remove<Buff>(e));
    EXPECT_FALSE(w.has<Buff>(e));
    EXPECT_EQ(w.try_get<Buff>(e), nullptr);
    EXPECT_EQ(w.archetype_count(), archetypes);
    EXPECT_EQ(w.get<Pos>(e), (Pos{1, 2}));
}

TEST(Sparse, ReadsOfAbsentOrDeadThrowTheLookupErrors) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{});
    EXPECT_EQ(error_of([&] { (void)w.get<Buff>(e); }), ts::errc::missing_component);
    EXPECT_EQ(error_of([&] { w.set(e, Buff{1}); }), ts::errc::missing_component);
    EXPECT_EQ(error_of([&] { (void)w.get_mut<Buff>(e); }), ts::errc::missing_component);
    EXPECT_EQ(w.try_get_mut<Buff>(e), nullptr);
    w.add(e, Buff{1});
    w.despawn(e);
    EXPECT_FALSE(w.has<Buff>(e));
    EXPECT_EQ(w.try_get<Buff>(e), nullptr);
    EXPECT_EQ(error_of([&] { (void)w.get<Buff>(e); }), ts::errc::not_alive);
    EXPECT_EQ(error_of([&] { w.add(e, Buff{2}); }), ts::errc::not_alive);
    EXPECT_EQ(error_of([&] { (void)w.remove<Buff>(e); }), ts::errc::not_alive);
    EXPECT_FALSE(w.has<Buff>(ts::Entity::null()));
}

TEST(Sparse, DespawnErasesAndAReusedIndexStartsWithout) {
    ts::World w;
    const ts::Entity a = w.spawn(Buff{1}, Name{"a"});
    const ts::Entity b = w.spawn(Buff{2});
    EXPECT_TRUE(w.despawn(a));
    const ts::Entity c = w.spawn();
    EXPECT_EQ(c.index, a.index);
    EXPECT_FALSE(w.has<Buff>(c));
    EXPECT_FALSE(w.has<Name>(c));
    EXPECT_EQ(w.get<Buff>(b).power, 2);  // the swap-remove kept b findable
    const std::vector<ts::Entity> many = {b, c};
    w.add(c, Buff{3});
    EXPECT_EQ(w.despawn(std::span<const ts::Entity>(many)), 2u);
    EXPECT_EQ(w.count(), 0u);
    const ts::Entity d = w.spawn();
    EXPECT_FALSE(w.has<Buff>(d));
}

TEST(Sparse, AddReplacesAndMarksChanged) {
    ts::World w;
    const ts::Entity e = w.spawn();
    w.add(e, Buff{1});
    const std::uint64_t added = w.added_tick<Buff>(e);
    w.advance_tick();
    w.add(e, Buff{2});
    EXPECT_EQ(w.get<Buff>(e).power, 2);
    EXPECT_EQ(w.added_tick<Buff>(e), added);
    EXPECT_EQ(w.changed_tick<Buff>(e), w.tick());
    w.advance_tick();
    w.get_mut<Buff>(e).power = 3;
    EXPECT_EQ(w.changed_tick<Buff>(e), w.tick());
    w.advance_tick();
    w.set(e, Buff{4});
    EXPECT_EQ(w.changed_tick<Buff>(e), w.tick());
    w.advance_tick();
    EXPECT_FALSE(w.set_if_changed(e, Buff{4}));
    EXPECT_EQ(w.changed_tick<Buff>(e), w.tick() - 1);
    EXPECT_TRUE(w.set_if_changed(e, Buff{5}));
    EXPECT_EQ(w.changed_tick<Buff>(e), w.tick());
    w.advance_tick();
    ASSERT_NE(w.try_get_mut<Buff>(e), nullptr);
    EXPECT_EQ(w.changed_tick<Buff>(e), w.tick());
    w.advance_tick();
    w.modified<Buff>(e);
    EXPECT_EQ(w.changed_tick<Buff>(e), w.tick());
    EXPECT_EQ(w.get<Buff>(e).power, 5);
}

TEST(Sparse, MixedAddsAndSpawnsSplitTablePartFromSparsePart) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1, 1}, Buff{5}, Vel{2, 2}, Name{"x"});
    EXPECT_EQ(w.get<Pos>(e), (Pos{1, 1}));
    EXPECT_EQ(w.get<Buff>(e).power, 5);
    EXPECT_EQ(w.get<Name>(e).s, "x");
    EXPECT_EQ(w.archetype_of(e).index, (w.archetype<Pos, Vel>().index));
    const ts::Entity f = w.spawn(Pos{});
    w.add(f, Vel{1, 0}, Buff{1}, Marked{});
    EXPECT_TRUE((w.has<Pos, Vel, Buff, Marked>(f)));
    EXPECT_EQ(w.archetype_of(f).index, (w.archetype<Pos, Vel>().index));
    w.add(f, Buff{9}, Name{"f"});  // one replaced, one new
    EXPECT_EQ(w.get<Buff>(f).power, 9);
    EXPECT_EQ(w.get<Name>(f).s, "f");
    EXPECT_TRUE((w.remove<Vel, Buff>(f)));
    EXPECT_FALSE(w.has<Vel>(f));
    EXPECT_FALSE(w.has<Buff>(f));
    EXPECT_TRUE(w.has<Marked>(f));
    EXPECT_TRUE((w.remove<Buff, Marked>(f)));  // only the sparse one present
    EXPECT_FALSE((w.remove<Buff, Marked>(f)));
    const ts::Entity g = w.spawn(Buff{3});  // sparse only: the empty table
    EXPECT_EQ(w.archetype_of(g).index, w.archetype<>().index);
    EXPECT_EQ(w.get<Buff>(g).power, 3);
    auto [pos, buff] = w.get<Pos, Buff>(e);
    EXPECT_EQ(pos, (Pos{1, 1}));
    EXPECT_EQ(buff.power, 5);
    auto [pm, bm] = w.get_mut<Pos, Buff>(e);
    bm.power = 6;
    pm.x = 4;
    EXPECT_EQ(w.get<Buff>(e).power, 6);
    w.set(e, Pos{0, 0}, Buff{8});
    EXPECT_EQ(w.get<Buff>(e).power, 8);
    w.emplace<Name>(g, "g");
    EXPECT_EQ(w.get<Name>(g).s, "g");
}

TEST(Sparse, TagsAlignmentAndHeapValues) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 100; ++i) {
        const ts::Entity e = w.spawn();
        w.add<Marked>(e);
        w.add(e, Big{{double(i), 0, 0}});
        w.add(e, Name{std::string(40, char('a' + i % 26))});
        es.push_back(e);
    }
    for (int i = 0; i < 100; i += 3) w.remove<Name>(es[i]);
    for (int i = 0; i < 100; ++i) {
        EXPECT_TRUE(w.has<Marked>(es[i]));
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&w.get_mut<Big>(es[i])) % 128, 0u);
        EXPECT_EQ(w.get<Big>(es[i]).d[0], double(i));
        EXPECT_EQ(w.has<Name>(es[i]), i % 3 != 0);
        if (i % 3 != 0) {
            EXPECT_EQ(w.get<Name>(es[i]).s, std::string(40, char('a' + i % 26)));
        }
    }
    (void)w.get<Marked>(es[1]);
    EXPECT_EQ(w.try_get<Marked>(es[1]), nullptr);  // tags have no value
}

TEST(Sparse, EnableFlags) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{});
    w.add(e, Stun{2});
    EXPECT_TRUE(w.is_enabled<Stun>(e));
    w.enable<Stun>(e, false);
    EXPECT_FALSE(w.is_enabled<Stun>(e));
    EXPECT_TRUE(w.has<Stun>(e));
    const ts::Entity f = w.spawn(Stun{1});  // a later row: e's flag stays put
    w.remove<Stun>(w.spawn(Stun{3}));
    EXPECT_FALSE(w.is_enabled<Stun>(e));
    EXPECT_TRUE(w.is_enabled<Stun>(f));
    EXPECT_EQ(error_of([&] { w.enable<Buff>(e, false); }), ts::errc::not_enableable);
    EXPECT_EQ(error_of([&] { (void)w.is_enabled<Stun>(w.spawn()); }), ts::errc::missing_component);
}

TEST(Sparse, UntrackedTypesWorkWithoutTicks) {
    ts::World w;
    const ts::Entity e = w.spawn(Untracked{1});
    w.get_mut<Untracked>(e).v = 2;
    w.set(e, Untracked{3});
    EXPECT_EQ(w.get<Untracked>(e).v, 3);
}

TEST(Sparse, ARelationWithSparseDataIsRefused) {
    ts::World w;
    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn();
    EXPECT_EQ(error_of([&] { w.relate(a, Rel{1}, b); }), ts::errc::invalid_argument);
    EXPECT_FALSE(w.related<Rel>(a, b));
}

TEST(Sparse, DeferredAddsRemovesAndSpawnsApplyAtTheFlush) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{});
    w.defer_begin();
    w.add(e, Buff{4});
    const ts::Entity s = w.spawn(Buff{5}, Pos{3, 3});
    EXPECT_FALSE(w.has<Buff>(e));
    EXPECT_FALSE(w.has<Buff>(s));
    EXPECT_EQ(error_of([&] { w.set(s, Pos{}); }), ts::errc::missing_component);
    w.defer_end();
    EXPECT_EQ(w.get<Buff>(e).power, 4);
    EXPECT_EQ(w.get<Buff>(s).power, 5);
    EXPECT_EQ(w.get<Pos>(s), (Pos{3, 3}));
    {
        ts::Deferral d(w);
        w.remove<Buff>(e);
        w.despawn(s);
        EXPECT_TRUE(w.has<Buff>(e));
        // A write to a component with a queued remove would be lost: refused.
        EXPECT_EQ(error_of([&] { w.set(e, Buff{1}); }), ts::errc::invalid_argument);
    }
    EXPECT_FALSE(w.has<Buff>(e));
    EXPECT_FALSE(w.is_alive(s));
}

TEST(Sparse, CommandBuffersAddAndRemove) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{});
    ts::CommandBuffer cb;
    cb.add(e, Buff{2});
    cb.add(e, Name{"cb"});
    const ts::Entity p = cb.spawn(Buff{6}, Vel{});
    cb.apply(w);
    EXPECT_EQ(w.get<Buff>(e).power, 2);
    EXPECT_EQ(w.get<Name>(e).s, "cb");
    const ts::Entity spawned = cb.resolved(p);
    EXPECT_EQ(w.get<Buff>(spawned).power, 6);
    EXPECT_TRUE(w.has<Vel>(spawned));
    ts::CommandBuffer cb2;
    cb2.remove<Buff>(e);
    cb2.despawn(spawned);
    cb2.apply(w);
    EXPECT_FALSE(w.has<Buff>(e));
    EXPECT_EQ(w.get<Name>(e).s, "cb");
}

TEST(Sparse, CloneAndSnapshotsCopyTheSets) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{1, 1}, Buff{1}, Name{"e"});
    const ts::Entity f = w.spawn(Buff{2});
    w.add(f, Stun{1});
    w.enable<Stun>(f, false);
    ts::World c = w.clone();
    EXPECT_EQ(c.get<Buff>(e).power, 1);
    EXPECT_EQ(c.get<Name>(e).s, "e");
    EXPECT_EQ(c.get<Buff>(f).power, 2);
    EXPECT_FALSE(c.is_enabled<Stun>(f));
    EXPECT_EQ(c.changed_tick<Buff>(e), w.changed_tick<Buff>(e));
    const ts::Snapshot snap = w.snapshot();
    w.remove<Buff>(e);
    w.despawn(f);
    w.add(w.spawn(), Buff{9});
    w.restore(snap);
    EXPECT_EQ(w.get<Buff>(e).power, 1);
    EXPECT_EQ(w.get<Buff>(f).power, 2);
    EXPECT_FALSE(w.is_enabled<Stun>(f));
    EXPECT_EQ(w.count(), 2u);
}

// ---- queries ----

TEST(SparseQuery, VisitsOnlyEntitiesThatHaveTheSparseTerm) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 50; ++i) es.push_back(w.spawn(Pos{float(i), 0}));
    for (int i = 0; i < 50; i += 5) w.add(es[i], Buff{i});
    auto q = w.query<const Pos&, const Buff&>();
    std::set<std::uint32_t> seen;
    q.each([&](ts::Entity e, const Pos& p, const Buff& b) {
        EXPECT_EQ(int(p.x), b.power);
        seen.insert(e.index);
    });
    EXPECT_EQ(seen.size(), 10u);
    EXPECT_EQ(q.count(), 10u);
    // Only sparse: every table matches, the set drives.
    std::size_t n = 0;
    w.query<const Buff&>().each([&](const Buff&) { ++n; });
    EXPECT_EQ(n, 10u);
    // The table side is smaller: a Vel on two entities, one with a Buff.
    w.add(es[0], Vel{});
    w.add(es[1], Vel{});
    n = 0;
    w.query<const Vel&, const Buff&>().each([&](const Vel&, const Buff& b) {
        EXPECT_EQ(b.power, 0);
        ++n;
    });
    EXPECT_EQ(n, 1u);
}

TEST(SparseQuery, TermKindsWithAndWithout) {
    ts::World w;
    const ts::Entity a = w.spawn(Pos{1, 0}, Buff{1});
    const ts::Entity b = w.spawn(Pos{2, 0});
    const ts::Entity c = w.spawn(Pos{3, 0}, Buff{3}, Marked{});
    // Optional sparse terms.
    std::map<std::uint32_t, int> opt;
    w.query<const Pos&, const Buff*>().each([&](ts::Entity e, const Pos&, const Buff* bp) {
        opt[e.index] = bp == nullptr ? -1 : bp->power;
    });
    EXPECT_EQ(opt, (std::map<std::uint32_t, int>{{a.index, 1}, {b.index, -1}, {c.index, 3}}));
    // Writes through T&, T* and Mut<T>.
    w.query<Buff&>().each([](Buff& x) { x.power *= 10; });
    w.query<const Pos&, Buff*>().each([](const Pos&, Buff* x) {
        if (x != nullptr) x->power += 1;
    });
    w.query<ts::Mut<Buff>>().each([](ts::Mut<Buff> x) {
        if (x->power > 20) x.write().power += 1;
    });
    EXPECT_EQ(w.get<Buff>(a).power, 11);
    EXPECT_EQ(w.get<Buff>(c).power, 32);
    // with / without on sparse components, sparse tags as terms.
    std::vector<ts::Entity> got;
    w.query<const Pos&>().with<Marked>().each([&](ts::Entity e, const Pos&) { got.push_back(e); });
    EXPECT_EQ(got, std::vector<ts::Entity>{c});
    got.clear();
    w.query<const Pos&>().without<Buff>().each([&](ts::Entity e, const Pos&) { got.push_back(e); });
    EXPECT_EQ(got, std::vector<ts::Entity>{b});
    got.clear();
    w.query<const Marked&>().each([&](ts::Entity e, const Marked&) { got.push_back(e); });
    EXPECT_EQ(got, std::vector<ts::Entity>{c});
    got.clear();
    w.query<const Pos&, const Marked*>().each([&](ts::Entity e, const Pos&, const Marked* m) {
        if (m != nullptr) got.push_back(e);
    });
    EXPECT_EQ(got, std::vector<ts::Entity>{c});
    got.clear();
    w.each([&](ts::Entity e, const Buff&) { got.push_back(e); });
    EXPECT_EQ(got.size(), 2u);
}

TEST(SparseQuery, ChangeFiltersAndStamps) {
    ts::World w;
    const ts::Entity a = w.spawn(Pos{}, Buff{1});
    const ts::Entity b = w.spawn(Pos{}, Buff{2});
    auto changed = w.query<const Buff&>().changed<Buff>();
    auto added = w.query<const Pos&>().added<Buff>();
    std::size_t n = 0;
    changed.each([&](const Buff&) { ++n; });
    EXPECT_EQ(n, 2u);  // the first run sees every row
    n = 0;
    changed.each([&](const Buff&) { ++n; });
    EXPECT_EQ(n, 0u);
    w.get_mut<Buff>(b).power = 5;
    std::vector<ts::Entity> got;
    changed.each([&](ts::Entity e, const Buff&) { got.push_back(e); });
    EXPECT_EQ(got, std::vector<ts::Entity>{b});
    n = 0;
    added.each([&](const Pos&) { ++n; });
    EXPECT_EQ(n, 2u);
    const ts::Entity c = w.spawn(Pos{});
    w.add(c, Buff{3});
    got.clear();
    added.each([&](ts::Entity e, const Pos&) { got.push_back(e); });
    EXPECT_EQ(got, std::vector<ts::Entity>{c});
    // A T& term stamps the rows it visits; a const one does not.
    w.query<Buff&>().each([](Buff&) {});
    got.clear();
    changed.each([&](ts::Entity e, const Buff&) { got.push_back(e); });
    EXPECT_EQ(got.size(), 3u);
    w.query<const Buff&>().each([](const Buff&) {});
    n = 0;
    changed.each([&](const Buff&) { ++n; });
    EXPECT_EQ(n, 0u);
    // changed_since on a sparse component.
    const std::uint64_t t = w.tick();
    w.advance_tick();
    w.set(a, Buff{9});
    got.clear();
    w.query<const Pos&>().changed_since<Buff>(t).each(
        [&](ts::Entity e, const Pos&) { got.push_back(e); });
    EXPECT_EQ(got, std::vector<ts::Entity>{a});
}

// A T& walk over a whole set stamps it in O(1) (the set's floor); every reader sees the stamp,
// later writes rise above it, and a row added at an older tick (a schedule's system tick)
// reads its own tick.
TEST(SparseQuery, AWholeSetStampIsSeenByEveryReader) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 5; ++i) es.push_back(w.spawn(Buff{i}));
    w.advance_tick();
    w.advance_tick();
    const std::uint64_t t = w.tick();
    w.query<Buff&>().each([](Buff& b) { b.power += 1; });
    for (const ts::Entity e : es) {
        EXPECT_EQ(w.changed_tick<Buff>(e), t);
        EXPECT_EQ(w.changed_tick(e, ts::component_id<Buff>()), t);
        EXPECT_LT(w.added_tick<Buff>(e), t);
    }
    std::size_t n = 0;
    w.query<const Buff&>().changed_since<Buff>(t - 1).each([&](const Buff&) { ++n; });
    EXPECT_EQ(n, 5u);
    w.remove<Buff>(es[0]);  // a swap-remove keeps the others' ticks
    EXPECT_EQ(w.changed_tick<Buff>(es[4]), t);
    w.advance_tick();
    w.get_mut<Buff>(es[2]).power = 0;
    EXPECT_EQ(w.changed_tick<Buff>(es[2]), t + 1);
    EXPECT_EQ(w.changed_tick<Buff>(es[3]), t);
    // The formats write the ticks as read.
    ts::World loaded;
    ts::from_json(ts::to_json(w), loaded);
    EXPECT_EQ(loaded.changed_tick<Buff>(es[3]), t);
    EXPECT_EQ(loaded.changed_tick<Buff>(es[2]), t + 1);
    ts::World copy = w.clone();
    EXPECT_EQ(copy.changed_tick<Buff>(es[1]), t);
    // An add at an older tick than the stamp.
    w.storage().set_tick(t - 1);
    w.add(es[0], Buff{7});
    EXPECT_EQ(w.changed_tick<Buff>(es[0]), t - 1);
    EXPECT_EQ(w.changed_tick<Buff>(es[1]), t);
    w.storage().set_tick(t + 1);
}

TEST(SparseQuery, DisabledSparseComponentsAreSkipped) {
    ts::World w;
    const ts::Entity a = w.spawn(Pos{}, Stun{1});
    const ts::Entity b = w.spawn(Pos{}, Stun{2});
    w.enable<Stun>(a, false);
    std::vector<ts::Entity> got;
    w.query<const Stun&>().each([&](ts::Entity e, const Stun&) { got.push_back(e); });
    EXPECT_EQ(got, std::vector<ts::Entity>{b});
    got.clear();
    w.query<const Pos&>().with<Stun>().each([&](ts::Entity e, const Pos&) { got.push_back(e); });
    EXPECT_EQ(got, std::vector<ts::Entity>{b});
}

TEST(SparseQuery, StructuralChangesInTheLoopAreDeferred) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 10; ++i) es.push_back(w.spawn(Pos{}, Buff{i}));
    w.query<const Buff&>().each([&](ts::Entity e, const Buff& b) {
        if (b.power % 2 == 0) w.remove<Buff>(e);
        w.add(e, Name{"seen"});
    });
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ(w.has<Buff>(es[i]), i % 2 != 0);
        EXPECT_EQ(w.get<Name>(es[i]).s, "seen");
    }
    EXPECT_EQ(w.query<const Buff&>().count(), 5u);
    auto doomed = w.query<const Pos&, const Buff&>();
    EXPECT_EQ(w.despawn_all(doomed), 5u);
    EXPECT_EQ(w.count(), 5u);
}

TEST(SparseQuery, ParEachAndRefusedForms) {
    ts::World w;
    for (int i = 0; i < 100; ++i) w.spawn(Pos{}, Buff{i});
    std::atomic<int> sum{0};
    w.query<const Buff&>().par_each([&](const Buff& b) { sum += b.power; });
    EXPECT_EQ(sum.load(), 4950);
    auto q = w.query<const Pos&>().with<Buff>();
    EXPECT_EQ(error_of([&] { (void)q.chunks(); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { (void)q.on_enter([](ts::World&, ts::Entity) {}); }),
              ts::errc::invalid_argument);
}

TEST(SparseQuery, RandomQueriesMatchAReference) {
    std::mt19937 rng(5);
    ts::World w;
    std::map<ts::Entity, std::tuple<bool, std::optional<int>, bool>> ref;  // pos, buff, marked
    std::vector<ts::Entity> live;
    for (int step = 0; step < 3000; ++step) {
        const int op = std::uniform_int_distribution<int>(0, 6)(rng);
        if (live.empty() || op == 0) {
            const ts::Entity e = w.spawn();
            live.push_back(e);
            ref[e] = {false, std::nullopt, false};
            continue;
        }
        const ts::Entity e =
            live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng)];
        auto& [pos, buff, marked] = ref[e];
        switch (op) {
            case 1:
                w.add(e, Buff{step});
                buff = step;
                break;
            case 2:
                w.remove<Buff>(e);
                buff.reset();
                break;
            case 3:
                if (pos)
                    w.remove<Pos>(e);
                else
                    w.add(e, Pos{});
                pos = !pos;
                break;
            case 4:
                if (marked)
                    w.remove<Marked>(e);
                else
                    w.add<Marked>(e);
                marked = !marked;
                break;
            case 5:
                w.despawn(e);
                ref.erase(e);
                live.erase(std::find(live.begin(), live.end(), e));
                break;
            default: break;
        }
        if (step % 100 != 0) continue;
        std::map<ts::Entity, int> expect_pb, got_pb;
        std::set<ts::Entity> expect_m, got_m;
        for (const auto& [x, v] : ref) {
            if (std::get<0>(v) && std::get<1>(v)) expect_pb[x] = *std::get<1>(v);
            if (std::get<2>(v) && !std::get<1>(v)) expect_m.insert(x);
        }
        w.query<const Pos&, const Buff&>().each(
            [&](ts::Entity x, const Pos&, const Buff& b) { got_pb[x] = b.power; });
        w.query<const Marked&>().without<Buff>().each(
            [&](ts::Entity x, const Marked&) { got_m.insert(x); });
        ASSERT_EQ(got_pb, expect_pb);
        ASSERT_EQ(got_m, expect_m);
    }
}

// ---- observers ----

TEST(SparseObservers, AddSetRemoveFireAsForTableComponents) {
    ts::World w;
    std::vector<std::string> log;
    const auto note = [&](const char* what) {
        return [&log, what](ts::World& world, ts::Entity e) {
            log.push_back(std::string(what) + ":" + std::to_string(e.index));
            if (std::string(what) == "remove") {
                EXPECT_TRUE(world.has<Buff>(e));  // still readable
            }
        };
    };
    ts::Observer a = w.on_add<Buff>(note("add"));
    ts::Observer st = w.on_set<Buff>(note("set"));
    ts::Observer r = w.on_remove<Buff>(note("remove"));
    const ts::Entity e = w.spawn(Pos{});
    w.add(e, Buff{1});  // add
    w.add(e, Buff{2});  // replace: set
    w.set(e, Buff{3});  // set
    w.get_mut<Buff>(e).power = 4;
    w.modified<Buff>(e);             // set
    EXPECT_TRUE(w.remove<Buff>(e));  // remove
    EXPECT_FALSE(w.remove<Buff>(e));
    const ts::Entity f = w.spawn(Pos{}, Buff{5});  // add at spawn
    w.despawn(f);                                  // remove at despawn
    const ts::Entity g = w.spawn(Buff{6});
    const std::vector<ts::Entity> bulk = {g};
    w.despawn(std::span<const ts::Entity>(bulk));  // and at a bulk despawn
    const std::string ei = std::to_string(e.index), fi = std::to_string(f.index),
                      gi = std::to_string(g.index);
    EXPECT_EQ(log, (std::vector<std::string>{"add:" + ei, "set:" + ei, "set:" + ei, "set:" + ei,
                                             "remove:" + ei, "add:" + fi, "remove:" + fi,
                                             "add:" + gi, "remove:" + gi}));
    EXPECT_EQ(w.archetype_of(e).index, (w.archetype<Pos>().index));
}

TEST(SparseObservers, DeferredAndObservedPathsKeepTheValues) {
    ts::World w;
    int adds = 0;
    ts::Observer o = w.on_add<Name>([&](ts::World& world, ts::Entity e) {
        ++adds;
        EXPECT_EQ(world.get<Name>(e).s, "n");
        world.add(e, Buff{7});  // deferred until the callback returns
    });
    const ts::Entity e = w.spawn(Pos{}, Name{"n"});
    EXPECT_EQ(adds, 1);
    EXPECT_EQ(w.get<Buff>(e).power, 7);
    w.add(e, Vel{}, Name{"n"});  // replace: no add
    EXPECT_EQ(adds, 1);
    EXPECT_TRUE((w.remove<Vel, Name>(e)));
    EXPECT_FALSE(w.has<Name>(e));
    EXPECT_FALSE(w.has<Vel>(e));
    // A whole-table despawn_all of a table query still tells the sparse observers.
    int removed = 0;
    ts::Observer r = w.on_remove<Buff>([&](ts::World&, ts::Entity) { ++removed; });
    auto everyone = w.query<const Pos&>();
    EXPECT_EQ(w.despawn_all(everyone), 1u);
    EXPECT_EQ(removed, 1);
}

// ---- state_hash and the snapshot formats ----

TEST(SparseSerialization, StateHashSeesSparseValues) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{});
    const std::uint64_t before = ts::state_hash(w);
    w.add(e, Buff{1});
    const std::uint64_t with = ts::state_hash(w);
    EXPECT_NE(with, before);
    w.set(e, Buff{2});
    EXPECT_NE(ts::state_hash(w), with);
    w.set(e, Buff{1});
    EXPECT_EQ(ts::state_hash(w), with);
    EXPECT_EQ(ts::state_hash(w.clone()), with);
    w.remove<Buff>(e);
    EXPECT_EQ(ts::state_hash(w), before);
}

/// A world with sparse values of every kind the formats hold: flat (Buff), heap-owning (Name),
/// enableable (Stun, one disabled), a tag (Marked); rows in an order swap-removes made; ticks
/// from several frames; a dead entity and a reused index.
ts::World saved_world(std::vector<ts::Entity>& es) {
    ts::World w;
    for (int i = 0; i < 8; ++i) es.push_back(w.spawn(Pos{float(i), 1}));
    for (int i = 0; i < 8; ++i) w.add(es[i], Buff{10 + i});
    w.advance_tick();
    w.add(es[1], Name{"a name long enough to live on the heap"});
    w.add(es[6], Name{"short"});
    w.add(es[2], Stun{3});
    w.add(es[5], Stun{4});
    w.enable<Stun>(es[5], false);
    w.add(es[3], Marked{});
    w.remove<Buff>(es[0]);  // a swap-remove: the last row moves to 0
    w.despawn(es[4]);
    es.push_back(w.spawn(Buff{99}));  // index 4 again, another generation
    w.advance_tick();
    w.set(es[2], Buff{-1});
    return w;
}

/// Sparse values, ticks, flags and set order of `a` and `b` agree.
void expect_same_sparse(ts::World& a, ts::World& b, const std::vector<ts::Entity>& es) {
    EXPECT_EQ(ts::state_hash(a), ts::state_hash(b));
    EXPECT_EQ(a.tick(), b.tick());
    for (const ts::Entity e : es) {
        ASSERT_EQ(a.is_alive(e), b.is_alive(e));
        if (!a.is_alive(e)) continue;
        ASSERT_EQ(a.has<Buff>(e), b.has<Buff>(e)) << e;
        if (a.has<Buff>(e)) {
            EXPECT_EQ(a.get<Buff>(e), b.get<Buff>(e));
            EXPECT_EQ(a.added_tick<Buff>(e), b.added_tick<Buff>(e));
            EXPECT_EQ(a.changed_tick<Buff>(e), b.changed_tick<Buff>(e));
        }
        ASSERT_EQ(a.has<Name>(e), b.has<Name>(e));
        if (a.has<Name>(e)) {
            EXPECT_EQ(a.get<Name>(e), b.get<Name>(e));
        }
        ASSERT_EQ(a.has<Stun>(e), b.has<Stun>(e));
        if (a.has<Stun>(e)) {
            EXPECT_EQ(a.get<Stun>(e).turns, b.get<Stun>(e).turns);
            EXPECT_EQ(a.is_enabled<Stun>(e), b.is_enabled<Stun>(e));
        }
        EXPECT_EQ(a.has<Marked>(e), b.has<Marked>(e));
        EXPECT_EQ(a.has<Pos>(e), b.has<Pos>(e));
    }
    // The sets' row order: queries walk them alike.
    const auto order = [](ts::World& w) {
        std::vector<ts::Entity> out;
        w.query<const Buff&>().each([&](ts::Entity e, const Buff&) { out.push_back(e); });
        return out;
    };
    EXPECT_EQ(order(a), order(b));
}

TEST(SparseSerialization, BinaryAndJsonRoundTripSparseValues) {
    std::vector<ts::Entity> es;
    ts::World w = saved_world(es);
    ts::World from_binary;
    ts::load(ts::save(w), from_binary);
    expect_same_sparse(w, from_binary, es);
    const nlohmann::json j = ts::to_json(w);
    ASSERT_TRUE(j.contains("sparse"));
    EXPECT_EQ(j["sparse"].size(), 4u);  // Buff, Name, Stun, Marked
    ts::World from_json;
    ts::from_json(j, from_json);
    expect_same_sparse(w, from_json, es);
    EXPECT_EQ(ts::to_json(from_json), j);
    EXPECT_EQ(ts::save(from_binary), ts::save(w));
    // The loaded world goes on: adds, removes and queries as in the original.
    from_json.add(es[0], Buff{7});
    EXPECT_EQ(from_json.get<Buff>(es[0]).power, 7);
    EXPECT_TRUE(from_json.remove<Name>(es[1]));
    // A world without sparse values saves as before: no "sparse" key, binary version 1.
    ts::World plain;
    (void)plain.spawn(Pos{});
    const ts::Entity gone = plain.spawn(Pos{}, Buff{1});
    plain.remove<Buff>(gone);  // an empty set is as good as none
    EXPECT_FALSE(ts::to_json(plain).contains("sparse"));
    const std::vector<std::byte> bytes = ts::save(plain);
    ASSERT_GT(bytes.size(), 8u);
    EXPECT_EQ(static_cast<int>(bytes[4]), 1);
}

TEST(SparseSerialization, UntypedFieldReadsAndWritesReachTheSet) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{}, Buff{3});
    const ts::ComponentId id = ts::component_id<Buff>();
    EXPECT_EQ(ts::to_json(w, e, id), (nlohmann::json{{"power", 3}}));
    w.advance_tick();
    ts::set_fields(w, e, id, nlohmann::json{{"power", 8}});
    EXPECT_EQ(w.get<Buff>(e).power, 8);
    EXPECT_EQ(w.changed_tick<Buff>(e), w.tick());
    EXPECT_EQ(w.changed_tick(e, id), w.tick());
    EXPECT_EQ(error_of([&] { (void)ts::to_json(w, e, ts::component_id<Name>()); }),
              ts::errc::missing_component);
}

TEST(SparseSerialization, MalformedSparseSectionsAreRefusedAndChangeNothing) {
    std::vector<ts::Entity> es;
    ts::World w = saved_world(es);
    const nlohmann::json good = ts::to_json(w);
    std::size_t buff = 0;  // the Buff section
    for (std::size_t i = 0; i < good["sparse"].size(); ++i) {
        if (good["components"][good["sparse"][i]["component"].get<std::size_t>()]["name"]
                .get<std::string>()
                .find("Buff") != std::string::npos)
            buff = i;
    }
    const auto broken = [&](auto&& change) {
        nlohmann::json j = good;
        change(j["sparse"][buff], j);
        return j;
    };
    std::vector<nlohmann::json> bad = {
        broken([](nlohmann::json& s, nlohmann::json&) { s["component"] = 999; }),
        broken([](nlohmann::json& s, nlohmann::json&) { s["component"] = 0; }),  // Pos: a table's
        broken([](nlohmann::json& s, nlohmann::json&) { s["entities"].push_back(4000); }),
        broken([](nlohmann::json& s, nlohmann::json&) { s["entities"][1] = s["entities"][0]; }),
        broken([](nlohmann::json& s, nlohmann::json&) { s["values"].erase(0); }),
        broken([](nlohmann::json& s, nlohmann::json&) {
            s["values"][0] = {{"power", "x"}};
        }),
        broken([](nlohmann::json& s, nlohmann::json&) { s["ticks"] = nullptr; }),
        broken([](nlohmann::json& s, nlohmann::json&) { s.erase("entities"); }),
        broken([](nlohmann::json&, nlohmann::json& j) { j["sparse"].push_back(j["sparse"][0]); }),
        broken([](nlohmann::json&, nlohmann::json& j) { j["sparse"] = 3; }),
        // A sparse component listed in a table.
        broken([&](nlohmann::json& s, nlohmann::json& j) {
            j["archetypes"][1]["components"].push_back(s["component"]);
        }),
    };
    for (std::size_t i = 0; i < bad.size(); ++i) {
        ts::World target;
        const ts::Entity kept = target.spawn(Pos{});
        target.despawn(kept);  // empty, with history
        const std::uint64_t hash = ts::state_hash(target);
        EXPECT_EQ(error_of([&] { ts::from_json(bad[i], target); }), ts::errc::invalid_argument)
            << "case " << i;
        EXPECT_EQ(ts::state_hash(target), hash) << "case " << i;
        EXPECT_EQ(target.count(), 0u);
    }
    // Binary: every truncation of a version-2 file is refused, nothing changes.
    const std::vector<std::byte> bytes = ts::save(w);
    ASSERT_EQ(static_cast<int>(bytes[4]), 2);
    for (std::size_t cut = 8; cut < bytes.size(); cut += 7) {
        ts::World target;
        EXPECT_EQ(error_of([&] { ts::load(std::span(bytes).first(cut), target); }),
                  ts::errc::invalid_argument)
            << "cut " << cut;
        EXPECT_EQ(target.count(), 0u);
    }
}

// ---- strong guarantee: a failed allocation changes nothing ----

struct SparseState {
    std::vector<ts::Entity> entities;
    std::map<std::uint32_t, std::int32_t> buff;
    std::map<std::uint32_t, std::string> name;
    std::map<std::uint32_t, Pos> pos;
    bool operator==(const SparseState&) const = default;
};

SparseState state_of(ts::World& w) {
    SparseState s;
    s.entities = w.entities();
    for (const ts::Entity e : s.entities) {
        if (const Buff* b = w.try_get<Buff>(e)) s.buff[e.index] = b->power;
        if (const Name* n = w.try_get<Name>(e)) s.name[e.index] = n->s;
        if (const Pos* p = w.try_get<Pos>(e)) s.pos[e.index] = *p;
    }
    return s;
}

/// Fails the world's k-th allocation during `call`, for every k until it no longer fails; each
/// failure must leave the state as before, and the retry succeed. Returns the failures seen.
template <class Setup, class Call>
std::size_t sweep(Setup setup, Call call) {
    for (std::size_t k = 1; k < 200; ++k) {
        ts::test::FaultResource mr;
        bool fired = false;
        {
            ts::World w(&mr);
            std::vector<ts::Entity> es = setup(w);
            const SparseState before = state_of(w);
            mr.arm(k);
            try {
                call(w, es);
            } catch (const std::bad_alloc&) {
                fired = true;
            }
            mr.disarm();
            if (fired) {
                EXPECT_EQ(state_of(w), before) << "allocation " << k;
                call(w, es);  // the retry succeeds
            }
        }
        EXPECT_EQ(mr.bytes_outstanding(), 0u);
        if (!fired) return k - 1;
    }
    ADD_FAILURE() << "the call never stopped failing";
    return 0;
}

std::vector<ts::Entity> small_world(ts::World& w) {
    std::vector<ts::Entity> es;
    for (int i = 0; i < 40; ++i) es.push_back(w.spawn(Pos{float(i), 0}));
    for (int i = 0; i < 32; i += 2) w.add(es[i], Buff{i});  // 16 rows: the set is full
    return es;
}

TEST(SparseFaults, AddRemoveSpawnDespawnAreAllOrNothing) {
    // Each of these allocates (a set grows, a set or a table is made): some k fails.
    EXPECT_GT(sweep(small_world, [](ts::World& w, auto& es) { w.add(es[1], Buff{1}); }), 0u);
    EXPECT_GT(sweep(small_world, [](ts::World& w, auto& es) { w.add(es[1], Name{"n"}); }), 0u);
    EXPECT_GT(
        sweep(small_world, [](ts::World& w, auto& es) { w.add(es[3], Vel{}, Buff{3}, Name{"z"}); }),
        0u);
    EXPECT_GT(sweep(small_world, [](ts::World& w, auto&) { (void)w.spawn(Pos{}, Buff{5}); }), 0u);
    EXPECT_GT(
        sweep(small_world, [](ts::World& w, auto&) { (void)w.spawn(Vel{}, Buff{5}, Name{"s"}); }),
        0u);
    // These need no allocation here: they must simply work (and leave nothing behind).
    sweep(small_world, [](ts::World& w, auto& es) { (void)w.remove<Pos, Buff>(es[2]); });
    sweep(small_world, [](ts::World& w, auto& es) { w.despawn(es[4]); });
}

// ---- prefabs ----

TEST(SparsePrefab, InstancesCopyThePrefabsSparseComponents) {
    ts::World w;
    const ts::Entity p = w.prefab(Pos{1, 2}, Buff{7}, Name{"orc"}, Marked{});
    const auto table = w.archetype_of(p);
    const ts::Entity a = w.instantiate(p);
    EXPECT_EQ(w.get<Pos>(a), (Pos{1, 2}));
    EXPECT_EQ(w.get<Buff>(a).power, 7);
    EXPECT_EQ(w.get<Name>(a).s, "orc");  // copy-constructed (a heap value)
    EXPECT_TRUE(w.has<Marked>(a));
    EXPECT_NE(w.archetype_of(a).index, table.index);  // IsA, no Prefab
    EXPECT_EQ(w.added_tick<Buff>(a), w.tick());
    // Many instances, each its own copy; the prefab keeps its values.
    const auto span = w.instantiate_many(p, 5);
    const std::vector<ts::Entity> many(span.begin(), span.end());
    w.get_mut<Name>(many[2]).s = "boss";
    for (std::size_t i = 0; i < many.size(); ++i) {
        EXPECT_EQ(w.get<Buff>(many[i]).power, 7);
        EXPECT_EQ(w.get<Name>(many[i]).s, i == 2 ? "boss" : "orc");
        EXPECT_EQ(w.prefab_of(many[i]), p);
    }
    EXPECT_EQ(w.get<Name>(p).s, "orc");
    // Queries see the instances (not the prefab), through the sparse term.
    int n = 0;
    w.query<const Buff&>().each([&](ts::Entity e, const Buff& b) {
        EXPECT_NE(e, p);
        EXPECT_EQ(b.power, 7);
        ++n;
    });
    EXPECT_EQ(n, 6);
    w.despawn(a);
    EXPECT_TRUE(w.has<Buff>(p));
}

TEST(SparsePrefab, SparseOverridesReplaceOrAdd) {
    ts::World w;
    const ts::Entity p = w.prefab(Pos{1, 2}, Buff{7});
    const ts::Entity a = w.instantiate(p, Buff{9});        // replaces the copied one
    const ts::Entity b = w.instantiate(p, Name{"extra"});  // adds one the prefab lacks
    const ts::Entity c = w.instantiate(p, Pos{5, 5}, Marked{}, Buff{1});
    EXPECT_EQ(w.get<Buff>(a).power, 9);
    EXPECT_FALSE(w.has<Name>(a));
    EXPECT_EQ(w.get<Buff>(b).power, 7);
    EXPECT_EQ(w.get<Name>(b).s, "extra");
    EXPECT_EQ(w.get<Pos>(c), (Pos{5, 5}));
    EXPECT_TRUE(w.has<Marked>(c));
    EXPECT_EQ(w.get<Buff>(c).power, 1);
    EXPECT_FALSE(w.has<Name>(p));
    EXPECT_EQ(w.get<Buff>(p).power, 7);
}

TEST(SparsePrefab, ChildPrefabsDeferralAndObservers) {
    ts::World w;
    const ts::Entity orc = w.prefab(Pos{}, Buff{3});
    const ts::Entity sword = w.prefab(Vel{1, 1}, Name{"sword"}, Buff{4});
    w.relate(sword, ts::ChildOf{}, orc);
    std::vector<std::int32_t> added;
    const ts::Observer o = w.on_add<Buff>(
        [&](ts::World& world, ts::Entity e) { added.push_back(world.get<Buff>(e).power); });
    const auto roots = w.instantiate_many(orc, 2);
    const std::vector<ts::Entity> made(roots.begin(), roots.end());
    std::sort(added.begin(), added.end());
    EXPECT_EQ(added, (std::vector<std::int32_t>{3, 3, 4, 4}));
    int swords = 0;
    w.query<const Name&, const Vel&>().each([&](ts::Entity e, const Name& nm, const Vel&) {
        if (w.prefab_of(e) != sword) return;
        EXPECT_EQ(nm.s, "sword");
        EXPECT_EQ(w.get<Buff>(e).power, 4);
        ++swords;
    });
    EXPECT_EQ(swords, 2);
    // Deferred: queued, copied at the flush.
    added.clear();
    w.defer_begin();
    const ts::Entity d = w.instantiate(orc, Name{"late"});
    EXPECT_FALSE(w.has<Buff>(d));
    w.defer_end();
    EXPECT_EQ(w.get<Buff>(d).power, 3);
    EXPECT_EQ(w.get<Name>(d).s, "late");
    EXPECT_EQ(added.size(), 2u);  // the root and its sword
}

// ---- required components across storage kinds ----

TEST(SparseRequired, ASparseComponentBringsTableAndSparseRequirements) {
    ts::World w;
    const ts::Entity e = w.spawn(Vel{});
    w.add(e, Aura{3});  // brings Pos (a row move) and Marked (a set insert)
    EXPECT_EQ(w.get<Aura>(e).radius, 3);
    EXPECT_TRUE(w.has<Pos>(e));
    EXPECT_TRUE(w.has<Marked>(e));
    EXPECT_EQ(w.archetype_of(e).index, (w.archetype<Pos, Vel>().index));
    // What the entity has stays as it is.
    const ts::Entity f = w.spawn(Pos{4, 4});
    w.add(f, Aura{1});
    EXPECT_EQ(w.get<Pos>(f), (Pos{4, 4}));
    // Spawn, several at once, deferred, a command buffer and an instance bring them too.
    const ts::Entity g = w.spawn(Aura{2});
    EXPECT_TRUE(w.has<Pos>(g) && w.has<Marked>(g));
    const ts::Entity h = w.spawn(Vel{});
    w.add(h, Buff{1}, Aura{5});
    EXPECT_TRUE(w.has<Pos>(h) && w.has<Marked>(h) && w.has<Buff>(h));
    const ts::Entity d = w.spawn(Vel{});
    w.defer_begin();
    w.add(d, Aura{6});
    EXPECT_FALSE(w.has<Marked>(d));
    w.defer_end();
    EXPECT_TRUE(w.has<Pos>(d) && w.has<Marked>(d));
    ts::CommandBuffer cb;
    const ts::Entity c = w.spawn(Vel{});
    cb.add(c, Aura{7});
    cb.apply(w);
    EXPECT_TRUE(w.has<Pos>(c) && w.has<Marked>(c));
    const ts::Entity p = w.prefab(Vel{});
    const ts::Entity i = w.instantiate(p, Aura{8});
    EXPECT_TRUE(w.has<Pos>(i) && w.has<Marked>(i) && w.has<Vel>(i));
    EXPECT_FALSE(w.has<Marked>(p));
    // Removing the requirement later is allowed (required means brought, not kept).
    EXPECT_TRUE(w.remove<Marked>(e));
    EXPECT_TRUE(w.has<Aura>(e));
}

TEST(SparseRequired, ATableComponentBringsASparseOne) {
    ts::World w;
    const ts::Entity e = w.spawn(Pos{});
    w.add(e, Armor{2});
    EXPECT_EQ(w.get<Shield>(e).hp, 10);  // value-initialised
    EXPECT_EQ(w.archetype_of(e).index, (w.archetype<Pos, Armor>().index));
    const ts::Entity f = w.spawn(Shield{3});
    w.add(f, Armor{1});
    EXPECT_EQ(w.get<Shield>(f).hp, 3);  // kept: the entity had it in its set
    const ts::Entity g = w.spawn(Armor{4});
    EXPECT_EQ(w.get<Shield>(g).hp, 10);
    w.defer_begin();
    const ts::Entity h = w.spawn(Armor{5}, Shield{1});
    w.defer_end();
    EXPECT_EQ(w.get<Shield>(h).hp, 1);  // named by the call: not brought
    // A prefab with Shield: its instance overriding Armor keeps the copied Shield.
    const ts::Entity p = w.prefab(Shield{6});
    const ts::Entity i = w.instantiate(p, Armor{7});
    EXPECT_EQ(w.get<Shield>(i).hp, 6);
    EXPECT_EQ(w.get<Armor>(i).ac, 7);
    int n = 0;
    w.query<const Armor&, const Shield&>().each([&](const Armor&, const Shield&) { ++n; });
    EXPECT_EQ(n, 5);  // e, f, g, h, i
}

// ---- model-based: random operations against a reference ----

TEST(SparseModel, RandomOperationsMatchAReference) {
    std::mt19937 rng(37);
    ts::World w;
    std::map<ts::Entity, std::pair<std::optional<int>, std::optional<std::string>>> ref;
    std::map<ts::Entity, bool> has_pos;
    std::vector<ts::Entity> live;
    const auto pick = [&] {
        return live[std::uniform_int_distribution<std::size_t>(0, live.size() - 1)(rng)];
    };
    for (int step = 0; step < 20000; ++step) {
        const int op = std::uniform_int_distribution<int>(0, 9)(rng);
        if (live.empty() || op == 0) {
            const ts::Entity e = (step % 2 == 0) ? w.spawn(Buff{step}) : w.spawn(Pos{}, Name{"n"});
            live.push_back(e);
            ref[e] = step % 2 == 0
                         ? std::pair{std::optional<int>(step), std::optional<std::string>()}
                         : std::pair{std::optional<int>(), std::optional<std::string>("n")};
            has_pos[e] = step % 2 != 0;
            continue;
        }
        const ts::Entity e = pick();
        auto& [buff, name] = ref[e];
        switch (op) {
            case 1:
                w.add(e, Buff{step});
                buff = step;
                break;
            case 2:
                EXPECT_EQ(w.remove<Buff>(e), buff.has_value());
                buff.reset();
                break;
            case 3:
                w.add(e, Name{std::to_string(step)});
                name = std::to_string(step);
                break;
            case 4:
                EXPECT_EQ(w.remove<Name>(e), name.has_value());
                name.reset();
                break;
            case 5:
                w.despawn(e);
                ref.erase(e);
                has_pos.erase(e);
                live.erase(std::find(live.begin(), live.end(), e));
                break;
            case 6:
                if (has_pos[e])
                    w.remove<Pos>(e);
                else
                    w.add(e, Pos{});
                has_pos[e] = !has_pos[e];
                break;
            case 7:
                if (buff) {
                    w.get_mut<Buff>(e).power += 1;
                    *buff += 1;
                }
                break;
            case 8:
                w.add(e, Buff{-step}, Vel{});
                buff = -step;
                break;
            default: {
                const std::vector<ts::Entity> one = {e};
                w.despawn(std::span<const ts::Entity>(one));
                ref.erase(e);
                has_pos.erase(e);
                live.erase(std::find(live.begin(), live.end(), e));
            }
        }
        if (step % 500 == 0 || step == 19999) {
            ASSERT_EQ(w.count(), ref.size());
            for (const auto& [x, v] : ref) {
                ASSERT_EQ(w.has<Buff>(x), v.first.has_value());
                if (v.first) {
                    ASSERT_EQ(w.get<Buff>(x).power, *v.first);
                }
                ASSERT_EQ(w.has<Name>(x), v.second.has_value());
                if (v.second) {
                    ASSERT_EQ(w.get<Name>(x).s, *v.second);
                }
                ASSERT_EQ(w.has<Pos>(x), has_pos[x]);
            }
        }
    }
}

}  // namespace sparse_test
