// Sparse components (component_traits<T>::storage = ts::storage_kind::sparse): storage outside
// the archetype tables, structural calls that split them off, reads and writes, despawn,
// deferral and commands, clone and snapshots, and a model-based randomized test against a
// std::map reference.
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
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
}  // namespace sparse_test

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
