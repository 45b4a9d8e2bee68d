// transform.hpp: LocalTransform, WorldTransform and propagate_transforms. One test per rule,
// then a randomized forest of 100,000 entities checked against a plain recursive reference
// (local changes, re-parenting and cascading despawns between rounds), a 10,000-deep chain,
// order independence, observers, and the no-allocation steady state.
#include <tessera/relation.hpp>
#include <tessera/tessera.hpp>
#include <tessera/transform.hpp>

#include <nlohmann/json.hpp>

#include "common/tick.hpp"

#include <gtest/gtest.h>

#include <glm/gtc/matrix_transform.hpp>
#include <glm/mat4x4.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory_resource>
#include <random>
#include <set>
#include <vector>

#include "common/counting_resource.hpp"
#include "common/global_new_counter.hpp"

namespace ts = tessera;

namespace {

glm::mat4 translation(float x, float y, float z) {
    return glm::translate(glm::mat4(1.0f), glm::vec3(x, y, z));
}

bool same_bits(const glm::mat4& a, const glm::mat4& b) {
    return std::memcmp(&a, &b, sizeof(glm::mat4)) == 0;
}

bool near(const glm::mat4& a, const glm::mat4& b, float tolerance = 1e-4f) {
    for (int c = 0; c < 4; ++c) {
        for (int r = 0; r < 4; ++r) {
            const float x = a[c][r];
            const float y = b[c][r];
            if (std::fabs(x - y) > tolerance * (1.0f + std::fabs(y))) return false;
        }
    }
    return true;
}

glm::mat4 world_of(ts::World& w, ts::Entity e) {
    return w.get<ts::WorldTransform>(e).matrix;
}

/// The entities a `changed<WorldTransform>` query visits.
std::set<ts::Entity> changed_worlds(ts::Query<const ts::WorldTransform&>& q) {
    std::set<ts::Entity> out;
    q.each([&](ts::Entity e, const ts::WorldTransform&) { out.insert(e); });
    return out;
}

// ------------------------------------------------------------------------------- the rules

TEST(Transform, ComponentsDefaultToIdentityAndCompareByValue) {
    EXPECT_EQ(ts::LocalTransform{}.matrix, glm::mat4(1.0f));
    EXPECT_EQ(ts::WorldTransform{}.matrix, glm::mat4(1.0f));
    EXPECT_EQ(ts::LocalTransform{}, ts::LocalTransform{glm::mat4(1.0f)});
    EXPECT_FALSE(ts::LocalTransform{} == ts::LocalTransform{translation(1, 0, 0)});
    EXPECT_EQ(ts::WorldTransform{translation(0, 2, 0)}, ts::WorldTransform{translation(0, 2, 0)});
}

/// The rules hold whichever way a call chooses to work: each runs in the three modes.
class TransformRule : public ::testing::TestWithParam<ts::detail::PropagationMode> {
protected:
    void SetUp() override { ts::detail::set_propagation_mode(w, GetParam()); }
    ts::World w;
};

TEST_P(TransformRule, RootWorldIsItsLocalAndWorldTransformIsAdded) {
    const ts::Entity e = w.spawn(ts::LocalTransform{translation(1, 2, 3)});
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    ASSERT_TRUE(w.has<ts::WorldTransform>(e));
    EXPECT_EQ(world_of(w, e), translation(1, 2, 3));
    EXPECT_EQ(ts::propagate_transforms(w), 0u);  // nothing changed: nothing written
}

TEST_P(TransformRule, ChildWorldIsParentWorldTimesLocal) {
    const ts::Entity root = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity child = w.spawn(ts::LocalTransform{translation(0, 2, 0)});
    w.relate(child, ts::ChildOf{}, root);
    EXPECT_EQ(ts::propagate_transforms(w), 2u);  // both WorldTransforms written
    EXPECT_EQ(ts::propagate_transforms(w), 0u);  // unchanged values are not rewritten
    EXPECT_TRUE(near(world_of(w, root), translation(1, 0, 0)));
    EXPECT_TRUE(near(world_of(w, child), translation(1, 2, 0)));
    // parent * local, not local * parent: a rotated parent rotates the child's offset.
    const glm::mat4 turn = glm::rotate(glm::mat4(1.0f), glm::radians(90.0f), glm::vec3(0, 0, 1));
    w.set(root, ts::LocalTransform{turn});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, child), turn * translation(0, 2, 0)));
    const glm::vec4 origin = world_of(w, child) * glm::vec4(0, 0, 0, 1);
    EXPECT_NEAR(origin.x, -2.0f, 1e-5f);
    EXPECT_NEAR(origin.y, 0.0f, 1e-5f);
}

TEST_P(TransformRule, AddedWorldTransformCountsEvenWhenItsValueIsTheDefault) {
    const ts::Entity e = w.spawn(ts::LocalTransform{});  // identity: the default WorldTransform
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_EQ(w.added_tick<ts::WorldTransform>(e), w.changed_tick<ts::WorldTransform>(e));
    // Present from the start with the right value: not written, not counted.
    const ts::Entity f =
        w.spawn(ts::LocalTransform{translation(1, 0, 0)}, ts::WorldTransform{translation(1, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 0u);
    EXPECT_EQ(world_of(w, f), translation(1, 0, 0));
}

TEST_P(TransformRule, ParentWithoutLocalPassesItsParentsWorldThrough) {
    const ts::Entity top = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity middle = w.spawn();  // a group node: no transform of its own
    const ts::Entity leaf = w.spawn(ts::LocalTransform{translation(0, 0, 5)});
    w.relate(middle, ts::ChildOf{}, top);
    w.relate(leaf, ts::ChildOf{}, middle);
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_FALSE(w.has<ts::WorldTransform>(middle));  // no LocalTransform: no WorldTransform
    EXPECT_TRUE(near(world_of(w, leaf), translation(1, 0, 5)));
}

TEST_P(TransformRule, EntityWithNeitherParentNorLocalIsIdentityForItsChildren) {
    const ts::Entity holder = w.spawn();
    const ts::Entity leaf = w.spawn(ts::LocalTransform{translation(3, 0, 0)});
    w.relate(leaf, ts::ChildOf{}, holder);
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_EQ(world_of(w, leaf), translation(3, 0, 0));
    EXPECT_FALSE(w.has<ts::WorldTransform>(holder));
}

TEST_P(TransformRule, FirstChildOfTargetIsTheTransformParent) {
    const ts::Entity a = w.spawn(ts::LocalTransform{translation(10, 0, 0)});
    const ts::Entity b = w.spawn(ts::LocalTransform{translation(0, 20, 0)});
    const ts::Entity c = w.spawn(ts::LocalTransform{translation(0, 0, 1)});
    w.relate(c, ts::ChildOf{}, a);
    w.relate(c, ts::ChildOf{}, b);  // a second parent: not the transform parent
    EXPECT_EQ(ts::propagate_transforms(w), 3u);
    EXPECT_TRUE(near(world_of(w, c), translation(10, 0, 1)));
    // Moving the second parent does not move c.
    w.set(b, ts::LocalTransform{translation(0, 30, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_TRUE(near(world_of(w, c), translation(10, 0, 1)));
    // Without a, b becomes the first parent.
    w.unrelate<ts::ChildOf>(c, a);
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_TRUE(near(world_of(w, c), translation(0, 30, 1)));
}

TEST_P(TransformRule, OnlyChangedValuesAreWrittenAndStamped) {
    const ts::Entity root = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity a = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    const ts::Entity b = w.spawn(ts::LocalTransform{translation(0, 0, 1)});
    w.relate(a, ts::ChildOf{}, root);
    w.relate(b, ts::ChildOf{}, root);
    auto moved = w.query<const ts::WorldTransform&>().changed<ts::WorldTransform>();
    EXPECT_EQ(ts::propagate_transforms(w), 3u);
    EXPECT_EQ(changed_worlds(moved), (std::set<ts::Entity>{root, a, b}));

    w.set(a, ts::LocalTransform{translation(0, 2, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_EQ(changed_worlds(moved), (std::set<ts::Entity>{a}));

    // Rewriting a local with the same value marks it changed, but the world matrix is the same:
    // nothing is written and no WorldTransform tick moves.
    const std::uint64_t before = w.changed_tick<ts::WorldTransform>(b);
    w.set(root, ts::LocalTransform{translation(1, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 0u);
    EXPECT_EQ(w.changed_tick<ts::WorldTransform>(b), before);
    EXPECT_TRUE(changed_worlds(moved).empty());

    // A parent's change rewrites its whole subtree.
    w.set(root, ts::LocalTransform{translation(5, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 3u);
    EXPECT_EQ(changed_worlds(moved), (std::set<ts::Entity>{root, a, b}));
    EXPECT_TRUE(near(world_of(w, b), translation(5, 0, 1)));
}

TEST_P(TransformRule, WriteRightAfterACallIsSeenByTheNextCall) {
    const ts::Entity e = w.spawn(ts::LocalTransform{});
    ts::propagate_transforms(w);
    // Same frame, no advance_tick by the caller: the call advanced the tick itself.
    w.get_mut<ts::LocalTransform>(e).matrix = translation(4, 0, 0);
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_EQ(world_of(w, e), translation(4, 0, 0));
    EXPECT_EQ(ts::propagate_transforms(w), 0u);
    // A query's T& term stamps a whole table: everything in it is recomputed.
    w.query<ts::LocalTransform&>().each([](ts::LocalTransform& l) { l.matrix[3][1] = 1.0f; });
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_EQ(world_of(w, e), translation(4, 1, 0));
}

TEST_P(TransformRule, WorldTransformWrittenBySomeoneElseIsRecomputed) {
    const ts::Entity parent = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity child = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    w.relate(child, ts::ChildOf{}, parent);
    ts::propagate_transforms(w);
    w.set(parent, ts::WorldTransform{translation(100, 0, 0)});
    w.set(child, ts::WorldTransform{translation(7, 7, 7)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_EQ(world_of(w, parent), translation(1, 0, 0));
    EXPECT_TRUE(near(world_of(w, child), translation(1, 1, 0)));
    // A removed WorldTransform comes back.
    w.remove<ts::WorldTransform>(child);
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_TRUE(near(world_of(w, child), translation(1, 1, 0)));
}

TEST_P(TransformRule, EqualValuesAreNotRewrittenWhateverWroteThemBefore) {
    // A binary tree spawned parents first, so every row comes after its parent's.
    std::vector<ts::Entity> e;
    for (int i = 0; i < 63; ++i) {
        e.push_back(w.spawn(ts::LocalTransform{translation(static_cast<float>(i), 1, 0)}));
        if (i > 0) w.relate(e[i], ts::ChildOf{}, e[(i - 1) / 2]);
    }
    ts::propagate_transforms(w);
    ts::propagate_transforms(w);
    auto moved = w.query<const ts::WorldTransform&>().changed<ts::WorldTransform>();
    changed_worlds(moved);
    // Rewrites every local with its own value: a full pass in the automatic mode, which must
    // write nothing.
    auto rewrite_all = [&] {
        for (const ts::Entity x : e) w.set(x, ts::LocalTransform{w.get<ts::LocalTransform>(x)});
        return ts::propagate_transforms(w);
    };
    EXPECT_EQ(rewrite_all(), 0u);
    // After a leaf moved alone (incremental in the automatic mode).
    w.set(e[62], ts::LocalTransform{translation(9, 9, 9)});
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_EQ(changed_worlds(moved), (std::set<ts::Entity>{e[62]}));
    EXPECT_EQ(rewrite_all(), 0u);
    EXPECT_TRUE(changed_worlds(moved).empty());
    // After someone else set a WorldTransform to the value the next call computes.
    w.set(e[61], ts::LocalTransform{translation(3, 3, 3)});
    const glm::mat4 next = world_of(w, e[30]) * translation(3, 3, 3);
    w.set(e[61], ts::WorldTransform{next});
    changed_worlds(moved);
    EXPECT_EQ(rewrite_all(), 0u);
    EXPECT_TRUE(same_bits(world_of(w, e[61]), next));
    EXPECT_TRUE(changed_worlds(moved).empty());
    // The same through a query's WorldTransform& term (which stamps the whole table).
    w.set(e[60], ts::LocalTransform{translation(4, 4, 4)});
    const glm::mat4 next2 = world_of(w, e[29]) * translation(4, 4, 4);
    w.query<ts::WorldTransform&>().each([&](ts::Entity x, ts::WorldTransform& wt) {
        if (x == e[60]) wt.matrix = next2;
    });
    changed_worlds(moved);
    EXPECT_EQ(rewrite_all(), 0u);
    EXPECT_TRUE(same_bits(world_of(w, e[60]), next2));
    EXPECT_TRUE(changed_worlds(moved).empty());
    // After a leaf moved in a pass that an observer of WorldTransform writes watched.
    {
        int seen = 0;
        ts::Observer watch = w.on_set<ts::WorldTransform>(
            [&](ts::World&, ts::Entity, ts::WorldTransform&) { ++seen; });
        w.set(e[59], ts::LocalTransform{translation(5, 5, 5)});
        EXPECT_EQ(rewrite_all(), 1u);
        EXPECT_EQ(seen, 1);
    }
    changed_worlds(moved);
    EXPECT_EQ(rewrite_all(), 0u);
    EXPECT_TRUE(changed_worlds(moved).empty());
}

TEST_P(TransformRule, RemovedLocalTransformMovesTheChildren) {
    const ts::Entity top = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity mid = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    const ts::Entity leaf = w.spawn(ts::LocalTransform{translation(0, 0, 1)});
    w.relate(mid, ts::ChildOf{}, top);
    w.relate(leaf, ts::ChildOf{}, mid);
    ts::propagate_transforms(w);
    EXPECT_TRUE(near(world_of(w, leaf), translation(1, 1, 1)));
    w.remove<ts::LocalTransform>(mid);  // mid now passes top's world through
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_TRUE(near(world_of(w, leaf), translation(1, 0, 1)));
    EXPECT_EQ(ts::propagate_transforms(w), 0u);
    // A stale WorldTransform on mid is left alone (documented).
    EXPECT_TRUE(w.has<ts::WorldTransform>(mid));
    // And back.
    w.add(mid, ts::LocalTransform{translation(0, 3, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, leaf), translation(1, 3, 1)));
}

TEST_P(TransformRule, AddedLocalOnAGroupNodeMovesItsChildren) {
    const ts::Entity group = w.spawn();
    const ts::Entity leaf = w.spawn(ts::LocalTransform{translation(0, 0, 1)});
    w.relate(leaf, ts::ChildOf{}, group);
    ts::propagate_transforms(w);
    w.add(group, ts::LocalTransform{translation(2, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);  // group's added WorldTransform, leaf moved
    EXPECT_TRUE(near(world_of(w, leaf), translation(2, 0, 1)));
}

TEST_P(TransformRule, ReparentingMovesTheSubtree) {
    const ts::Entity left = w.spawn(ts::LocalTransform{translation(-10, 0, 0)});
    const ts::Entity right = w.spawn(ts::LocalTransform{translation(10, 0, 0)});
    const ts::Entity arm = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    const ts::Entity hand = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    w.relate(arm, ts::ChildOf{}, left);
    w.relate(hand, ts::ChildOf{}, arm);
    ts::propagate_transforms(w);
    EXPECT_TRUE(near(world_of(w, hand), translation(-10, 2, 0)));
    w.unrelate<ts::ChildOf>(arm, left);
    w.relate(arm, ts::ChildOf{}, right);
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, hand), translation(10, 2, 0)));
    // Unparented: a root again.
    w.unrelate<ts::ChildOf>(arm);
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, hand), translation(0, 2, 0)));
}

TEST_P(TransformRule, ReparentingPastTheHierarchyLogLimitIsStillSeen) {
    // More re-parentings than the hierarchy log keeps (65,536) between two calls: the log is
    // dropped and the next call recomputes everything.
    const ts::Entity left = w.spawn(ts::LocalTransform{translation(-10, 0, 0)});
    const ts::Entity right = w.spawn(ts::LocalTransform{translation(10, 0, 0)});
    const ts::Entity arm = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    w.relate(arm, ts::ChildOf{}, left);
    ts::propagate_transforms(w);
    for (int i = 0; i < 40001; ++i) {  // ends under `right`
        w.unrelate<ts::ChildOf>(arm, i % 2 == 0 ? left : right);
        w.relate(arm, ts::ChildOf{}, i % 2 == 0 ? right : left);
    }
    EXPECT_TRUE(ts::detail::hierarchy_overflowed(w.storage()));
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_TRUE(near(world_of(w, arm), translation(10, 1, 0)));
    EXPECT_FALSE(ts::detail::hierarchy_overflowed(w.storage()));
}

TEST_P(TransformRule, DespawnedFirstParentHandsOverToTheNext) {
    const ts::Entity a = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity b = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    const ts::Entity c = w.spawn(ts::LocalTransform{translation(0, 0, 1)});
    const ts::Entity only_a = w.spawn(ts::LocalTransform{});
    w.relate(c, ts::ChildOf{}, a);
    w.relate(c, ts::ChildOf{}, b);
    w.relate(only_a, ts::ChildOf{}, a);
    ts::propagate_transforms(w);
    w.despawn(a);  // only_a cascades; c keeps b
    EXPECT_FALSE(w.is_alive(only_a));
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_TRUE(near(world_of(w, c), translation(0, 1, 1)));
}

// ------------------------------------------------- the cached plan (rows and columns move)

struct Moved {};  // a tag: adding or removing it moves an entity to another table

TEST_P(TransformRule, ParentMovedToAnotherTableStillMovesItsChildren) {
    const ts::Entity root = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity child = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    w.relate(child, ts::ChildOf{}, root);
    ts::propagate_transforms(w);
    w.add<Moved>(root);  // root's matrices now live in another table
    EXPECT_EQ(ts::propagate_transforms(w), 0u);
    w.set(root, ts::LocalTransform{translation(2, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, child), translation(2, 1, 0)));
    // Moved and changed in the same frame, and back.
    w.remove<Moved>(root);
    w.set(root, ts::LocalTransform{translation(3, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, child), translation(3, 1, 0)));
}

TEST_P(TransformRule, TwoEntitiesSwappingTablesAreSeen) {
    // Every table keeps its size and its columns: only which entity sits in which row changed.
    const ts::Entity a = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity b = w.spawn(ts::LocalTransform{translation(2, 0, 0)});
    const ts::Entity a_child = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    const ts::Entity b_child = w.spawn(ts::LocalTransform{translation(0, 2, 0)});
    w.add<Moved>(b);
    w.relate(a_child, ts::ChildOf{}, a);
    w.relate(b_child, ts::ChildOf{}, b);
    ts::propagate_transforms(w);
    w.add<Moved>(a);
    w.remove<Moved>(b);
    EXPECT_EQ(ts::propagate_transforms(w), 0u);
    w.set(a, ts::LocalTransform{translation(5, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, a_child), translation(5, 1, 0)));
    EXPECT_TRUE(near(world_of(w, b_child), translation(2, 2, 0)));
    w.set(b, ts::LocalTransform{translation(6, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, b_child), translation(6, 2, 0)));
}

TEST_P(TransformRule, DespawnThatMovesTheLastRowIsSeen) {
    const ts::Entity doomed = w.spawn(ts::LocalTransform{translation(9, 0, 0)});
    const ts::Entity root = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity child = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    w.relate(child, ts::ChildOf{}, root);
    ts::propagate_transforms(w);
    w.despawn(doomed);  // root (the last root row) moves into doomed's row
    EXPECT_EQ(ts::propagate_transforms(w), 0u);
    w.set(root, ts::LocalTransform{translation(4, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, child), translation(4, 1, 0)));
}

TEST_P(TransformRule, EntityReusingADespawnedOnesRowIsSeen) {
    // Same table, same size, same row and entity index: only the generation differs.
    const ts::Entity parent = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity old = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    ts::propagate_transforms(w);
    w.despawn(old);
    const ts::Entity fresh = w.spawn(ts::LocalTransform{translation(0, 2, 0)});
    ASSERT_EQ(fresh.index, old.index);
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    w.relate(fresh, ts::ChildOf{}, parent);
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_TRUE(near(world_of(w, fresh), translation(1, 2, 0)));
    w.set(parent, ts::LocalTransform{translation(3, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    EXPECT_TRUE(near(world_of(w, fresh), translation(3, 2, 0)));
}

TEST_P(TransformRule, TablesGrowingBetweenCallsAreSeen) {
    const ts::Entity root = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    std::vector<ts::Entity> children;
    for (int i = 0; i < 4; ++i) {
        children.push_back(w.spawn(ts::LocalTransform{translation(0, 1, 0)}));
        w.relate(children.back(), ts::ChildOf{}, root);
    }
    ts::propagate_transforms(w);
    // Many more rows in both tables: their columns are reallocated.
    for (int i = 0; i < 1000; ++i) {
        w.spawn(ts::LocalTransform{translation(0, 0, 1)}, ts::WorldTransform{translation(0, 0, 1)});
        children.push_back(w.spawn(ts::LocalTransform{translation(0, 1, 0)}));
        w.relate(children.back(), ts::ChildOf{}, root);
    }
    EXPECT_EQ(ts::propagate_transforms(w), 1000u);  // the new children's added WorldTransforms
    w.set(root, ts::LocalTransform{translation(2, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), children.size() + 1);
    for (const ts::Entity c : children) ASSERT_TRUE(near(world_of(w, c), translation(2, 1, 0)));
}

TEST_P(TransformRule, RemovingLocalAndWorldFromAParentMovesItsChildren) {
    const ts::Entity top = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity mid = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    const ts::Entity leaf = w.spawn(ts::LocalTransform{translation(0, 0, 1)});
    w.relate(mid, ts::ChildOf{}, top);
    w.relate(leaf, ts::ChildOf{}, mid);
    ts::propagate_transforms(w);
    w.remove<ts::LocalTransform, ts::WorldTransform>(mid);
    EXPECT_EQ(ts::propagate_transforms(w), 1u);
    EXPECT_TRUE(near(world_of(w, leaf), translation(1, 0, 1)));
}

TEST_P(TransformRule, ObserversOfWorldTransformSeeEveryWrite) {
    std::vector<ts::Entity> seen;
    ts::Observer obs = w.on_set<ts::WorldTransform>(
        [&](ts::World&, ts::Entity e, ts::WorldTransform&) { seen.push_back(e); });
    const ts::Entity root = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity child = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    w.relate(child, ts::ChildOf{}, root);
    ts::propagate_transforms(w);
    seen.clear();
    w.set(root, ts::LocalTransform{translation(2, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 2u);
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, (std::vector<ts::Entity>{root, child}));
    EXPECT_TRUE(near(world_of(w, child), translation(2, 1, 0)));
}

TEST_P(TransformRule, CalledWhileIteratingQueuesTheAdditions) {
    const ts::Entity root = w.spawn(ts::LocalTransform{translation(1, 0, 0)});
    const ts::Entity child = w.spawn(ts::LocalTransform{translation(0, 1, 0)});
    w.relate(child, ts::ChildOf{}, root);
    w.query<const ts::LocalTransform&>().each([&](const ts::LocalTransform&) {
        if (!w.has<ts::WorldTransform>(root)) {
            EXPECT_EQ(ts::propagate_transforms(w), 0u);
        }
    });
    ASSERT_TRUE(w.has<ts::WorldTransform>(child));  // added when the iteration ended
    ts::propagate_transforms(w);
    EXPECT_TRUE(near(world_of(w, child), translation(1, 1, 0)));
}

// ---------------------------------------------------------------------------- deep chains

TEST_P(TransformRule, TenThousandDeepChainNeedsNoRecursion) {
    constexpr int depth = 10'000;
    std::vector<ts::Entity> chain;
    for (int i = 0; i < depth; ++i)
        chain.push_back(w.spawn(ts::LocalTransform{translation(1, 0, 0)}));
    // Related leaf first, so the first entity of the ChildOf table is the deepest one: the full
    // pass has to walk all the way up before computing anything.
    for (int i = depth - 1; i > 0; --i) w.relate(chain[i], ts::ChildOf{}, chain[i - 1]);
    EXPECT_EQ(ts::propagate_transforms(w), static_cast<std::size_t>(depth));
    for (int i : {0, 1, 99, 5'000, depth - 1}) {
        EXPECT_EQ(world_of(w, chain[i])[3][0], static_cast<float>(i + 1)) << i;
    }
    // Incremental: a change at the top walks down the whole chain.
    w.set(chain[0], ts::LocalTransform{translation(2, 0, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), static_cast<std::size_t>(depth));
    EXPECT_EQ(world_of(w, chain[depth - 1])[3][0], static_cast<float>(depth + 1));
    // A change deep down walks up (through clean ancestors) and down the rest.
    w.set(chain[depth - 3], ts::LocalTransform{translation(0, 1, 0)});
    EXPECT_EQ(ts::propagate_transforms(w), 3u);
    const glm::mat4 last = world_of(w, chain[depth - 1]);
    EXPECT_EQ(last[3][0], static_cast<float>(depth));
    EXPECT_EQ(last[3][1], 1.0f);
}

INSTANTIATE_TEST_SUITE_P(Modes, TransformRule,
                         ::testing::Values(ts::detail::PropagationMode::automatic,
                                           ts::detail::PropagationMode::full,
                                           ts::detail::PropagationMode::incremental),
                         [](const ::testing::TestParamInfo<ts::detail::PropagationMode>& info) {
                             switch (info.param) {
                                 case ts::detail::PropagationMode::full: return "full";
                                 case ts::detail::PropagationMode::incremental:
                                     return "incremental";
                                 default: return "automatic";
                             }
                         });

// ------------------------------------------------------------------ the reference forest

/// A model of the hierarchy (parents in relate order, optional local matrix) and its
/// straightforward recursive world matrices.
struct Model {
    std::vector<std::vector<int>> parents;  // ChildOf targets, relate order
    std::vector<bool> alive;
    std::vector<bool> has_local;
    std::vector<glm::mat4> local;

    int first_parent(int n) const { return parents[n].empty() ? -1 : parents[n][0]; }
    bool is_ancestor(int a, int n) const {  // a is n or above n (first parents or any)
        std::vector<int> todo{n};
        while (!todo.empty()) {
            const int x = todo.back();
            todo.pop_back();
            if (x == a) return true;
            for (int p : parents[x]) todo.push_back(p);
        }
        return false;
    }
    glm::mat4 world(int n) const {
        const int p = first_parent(n);
        const glm::mat4 base = p < 0 ? glm::mat4(1.0f) : world(p);
        return has_local[n] ? base * local[n] : base;
    }
    std::vector<glm::mat4> worlds() const {
        // Memoised recursion over the model (depth <= 64 by construction).
        std::vector<glm::mat4> out(parents.size());
        std::vector<char> done(parents.size(), 0);
        std::function<const glm::mat4&(int)> get = [&](int n) -> const glm::mat4& {
            if (!done[n]) {
                const int p = first_parent(n);
                const glm::mat4 base = p < 0 ? glm::mat4(1.0f) : get(p);
                out[n] = has_local[n] ? base * local[n] : base;
                done[n] = 1;
            }
            return out[n];
        };
        for (std::size_t n = 0; n < parents.size(); ++n) {
            if (alive[n]) get(static_cast<int>(n));
        }
        return out;
    }
    int depth(int n) const {
        int d = 0;
        for (int p = first_parent(n); p >= 0; p = first_parent(p)) ++d;
        return d;
    }
};

glm::mat4 random_local(std::mt19937& rng) {
    std::uniform_real_distribution<float> angle(-3.1f, 3.1f);
    std::uniform_real_distribution<float> offset(-2.0f, 2.0f);
    std::uniform_real_distribution<float> scale(0.95f, 1.05f);
    glm::mat4 m = translation(offset(rng), offset(rng), offset(rng));
    m = glm::rotate(m, angle(rng), glm::normalize(glm::vec3(offset(rng), offset(rng), 1.0f)));
    return glm::scale(m, glm::vec3(scale(rng)));
}

/// Builds a random forest of `n` nodes (depth < 64 along first parents, some nodes without a
/// local transform, a few with a second parent) into `m`.
void random_forest(Model& m, int n, std::mt19937& rng) {
    m.parents.assign(n, {});
    m.alive.assign(n, true);
    m.has_local.assign(n, true);
    m.local.assign(n, glm::mat4(1.0f));
    std::vector<int> depth(n, 0);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int i = 0; i < n; ++i) {
        m.local[i] = random_local(rng);
        m.has_local[i] = u(rng) >= 0.1f;
        if (i == 0 || u(rng) < 0.01f) continue;  // a root
        // Mostly a recent node (long chains), otherwise any earlier one.
        int p = u(rng) < 0.6f ? std::max(0, i - 1 - static_cast<int>(rng() % 8))
                              : static_cast<int>(rng() % static_cast<unsigned>(i));
        if (depth[p] >= 63) continue;
        m.parents[i].push_back(p);
        depth[i] = depth[p] + 1;
        if (u(rng) < 0.02f) {  // a second (non-transform) parent, earlier: never a cycle
            const int q = static_cast<int>(rng() % static_cast<unsigned>(i));
            if (q != p) m.parents[i].push_back(q);
        }
    }
}

/// The world built from `m`, spawning nodes in `order`; `split` spreads them over archetypes
/// with extra tags. Returns the node -> entity map.
template <int K>
struct Tag {};

std::vector<ts::Entity> build(ts::World& w, const Model& m, const std::vector<int>& order,
                              bool split) {
    std::vector<ts::Entity> ent(m.parents.size());
    for (const int n : order) {
        ts::Entity e = m.has_local[n] ? w.spawn(ts::LocalTransform{m.local[n]}) : w.spawn();
        if (split) {
            switch (n % 3) {
                case 0: w.add<Tag<0>>(e); break;
                case 1: w.add<Tag<1>>(e); break;
                default: break;
            }
        }
        ent[n] = e;
    }
    for (const int n : order) {
        for (const int p : m.parents[n]) w.relate(ent[n], ts::ChildOf{}, ent[p]);
    }
    return ent;
}

/// Checks every live node with a local transform against the model; returns the number of
/// mismatches (reported through gtest for the first few).
int check_against(ts::World& w, const Model& m, const std::vector<ts::Entity>& ent,
                  const std::vector<glm::mat4>& expected) {
    int bad = 0;
    for (std::size_t n = 0; n < ent.size(); ++n) {
        if (!m.alive[n]) {
            EXPECT_FALSE(w.is_alive(ent[n])) << "node " << n;
            continue;
        }
        if (!m.has_local[n]) continue;
        const ts::WorldTransform* wt = w.try_get<ts::WorldTransform>(ent[n]);
        if (wt == nullptr || !near(wt->matrix, expected[n])) {
            if (++bad <= 5) ADD_FAILURE() << "node " << n << " has a wrong world matrix";
        }
    }
    return bad;
}

/// Builds a random forest of `n` nodes in `w`, checks a first call, then runs `rounds` rounds
/// of local changes, re-parenting, `despawns` cascading despawns and `spawns` new nodes (which
/// reuse the freed entity indices), checking the values, the changed ticks and the returned
/// count after each. `parents_first`: spawned parents before children in one archetype (as
/// games often do; the rows start in a topological order) and the first half of the rounds
/// only change local values (so the rows stay in that order), else shuffled over three.
void random_rounds(ts::World& w, int n, int rounds, unsigned seed, int despawns, int spawns,
                   bool parents_first = false) {
    std::mt19937 rng(seed);
    Model m;
    random_forest(m, n, rng);
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    if (!parents_first) std::shuffle(order.begin(), order.end(), rng);
    std::vector<ts::Entity> ent = build(w, m, order, !parents_first);

    std::size_t with_local = 0;
    for (int i = 0; i < n; ++i) with_local += m.has_local[i] ? 1 : 0;
    std::vector<glm::mat4> expected = m.worlds();
    EXPECT_EQ(ts::propagate_transforms(w), with_local);
    ASSERT_EQ(check_against(w, m, ent, expected), 0);
    int max_depth = 0;
    for (int i = 0; i < n; ++i) max_depth = std::max(max_depth, m.depth(i));
    EXPECT_GE(max_depth, n >= 50'000 ? 40 : 10);  // the forest really is deep

    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int round = 0; round < rounds; ++round) {
        const std::vector<bool> had_local = m.has_local;
        n = static_cast<int>(m.parents.size());
        const bool structural = !parents_first || round >= rounds / 2;
        // Local changes: 1% new values, 0.1% rewritten with the same value, 0.1% removed and
        // 0.1% added.
        for (int i = 0; i < n; ++i) {
            if (!m.alive[i]) continue;
            const float r = u(rng);
            if (r < 0.01f && m.has_local[i]) {
                m.local[i] = random_local(rng);
                w.set(ent[i], ts::LocalTransform{m.local[i]});
            } else if (r < 0.011f && m.has_local[i]) {
                w.set(ent[i], ts::LocalTransform{m.local[i]});
            } else if (!structural) {
                continue;
            } else if (r < 0.012f && m.has_local[i]) {
                m.has_local[i] = false;
                w.remove<ts::LocalTransform>(ent[i]);
            } else if (r < 0.013f && !m.has_local[i]) {
                m.has_local[i] = true;
                m.local[i] = random_local(rng);
                w.add(ent[i], ts::LocalTransform{m.local[i]});
            }
        }
        // Re-parenting: 0.5% of the nodes move under another node (not their descendant),
        // keeping depth <= 64.
        for (int k = 0; structural && k < n / 200; ++k) {
            const int c = static_cast<int>(rng() % n);
            const int p = static_cast<int>(rng() % n);
            if (!m.alive[c] || !m.alive[p] || m.is_ancestor(c, p)) continue;
            if (m.depth(p) + 1 + 8 > 64) continue;  // keep it shallow enough (subtrees are short)
            if (std::find(m.parents[c].begin(), m.parents[c].end(), p) != m.parents[c].end())
                continue;
            if (!m.parents[c].empty()) {
                const int old = m.parents[c][0];
                m.parents[c].erase(m.parents[c].begin());
                EXPECT_TRUE(w.unrelate<ts::ChildOf>(ent[c], ent[old]));
            }
            // Becomes the first parent only when c had a single one.
            m.parents[c].push_back(p);
            w.relate(ent[c], ts::ChildOf{}, ent[p]);
        }
        // Despawns: 0.05% of the nodes, cascading to children left without a parent.
        std::vector<std::vector<int>> children(n);
        for (int i = 0; i < n; ++i) {
            if (!m.alive[i]) continue;
            for (int p : m.parents[i]) children[p].push_back(i);
        }
        for (int k = 0; structural && k < despawns; ++k) {
            const int d = static_cast<int>(rng() % n);
            if (!m.alive[d]) continue;
            w.despawn(ent[d]);
            std::vector<int> todo{d};
            while (!todo.empty()) {
                const int x = todo.back();
                todo.pop_back();
                if (!m.alive[x]) continue;
                m.alive[x] = false;
                m.parents[x].clear();
                for (int c : children[x]) {
                    auto& ps = m.parents[c];
                    const auto it = std::find(ps.begin(), ps.end(), x);
                    if (it == ps.end() || !m.alive[c]) continue;
                    ps.erase(it);
                    if (ps.empty()) todo.push_back(c);
                }
            }
        }

        // New nodes, most with a local transform, under a random live node (or roots).
        for (int k = 0; structural && k < spawns; ++k) {
            const int i = static_cast<int>(m.parents.size());
            m.parents.emplace_back();
            m.alive.push_back(true);
            m.has_local.push_back(u(rng) >= 0.1f);
            m.local.push_back(random_local(rng));
            ent.push_back(m.has_local[i] ? w.spawn(ts::LocalTransform{m.local[i]}) : w.spawn());
            const int p = static_cast<int>(rng() % static_cast<unsigned>(i));
            if (u(rng) < 0.9f && m.alive[p] && m.depth(p) < 60) {
                m.parents[i].push_back(p);
                w.relate(ent[i], ts::ChildOf{}, ent[p]);
            }
        }
        n = static_cast<int>(m.parents.size());

        const std::vector<glm::mat4> before = expected;
        expected = m.worlds();
        // The WorldTransforms that must be written: live nodes with a local whose expected
        // matrix changed; for nodes that had no local before, those whose (stale or missing)
        // WorldTransform differs from the expected matrix.
        std::set<ts::Entity> must;
        for (int i = 0; i < n; ++i) {
            if (!m.alive[i] || !m.has_local[i]) continue;
            bool changed = false;
            if (i < static_cast<int>(had_local.size()) && had_local[i]) {
                changed = !same_bits(before[i], expected[i]);
            } else {
                const ts::WorldTransform* stale = w.try_get<ts::WorldTransform>(ent[i]);
                changed = stale == nullptr || !same_bits(stale->matrix, expected[i]);
            }
            if (changed) must.insert(ent[i]);
        }
        const std::uint64_t tick = w.tick();
        const std::size_t written = ts::propagate_transforms(w);
        ASSERT_EQ(check_against(w, m, ent, expected), 0) << "round " << round;
        std::set<ts::Entity> stamped;
        for (int i = 0; i < n; ++i) {
            if (m.alive[i] && w.has<ts::WorldTransform>(ent[i]) &&
                w.changed_tick<ts::WorldTransform>(ent[i]) >= tick) {
                stamped.insert(ent[i]);
            }
        }
        EXPECT_EQ(stamped, must) << "round " << round;
        EXPECT_EQ(written, must.size()) << "round " << round;
        EXPECT_EQ(ts::propagate_transforms(w), 0u) << "round " << round;
    }
}

TEST(Transform, RandomForestMatchesTheRecursiveReference) {
    ts::World w;
    random_rounds(w, 100'000, 4, 20240611, 50, 50);
}

TEST_P(TransformRule, SmallRandomForestMatchesTheRecursiveReference) {
    random_rounds(w, 5'000, 8, 1234, 40, 60);
}

TEST_P(TransformRule, SmallForestSpawnedParentsFirstMatchesTheRecursiveReference) {
    random_rounds(w, 5'000, 8, 4321, 5, 20, true);
}

TEST(Transform, ResultDoesNotDependOnSpawnOrderOrArchetypes) {
    constexpr int n = 3'000;
    std::mt19937 rng(7);
    Model m;
    random_forest(m, n, rng);
    std::vector<int> forward(n);
    for (int i = 0; i < n; ++i) forward[i] = i;
    std::vector<int> backward(forward.rbegin(), forward.rend());
    std::vector<int> shuffled = forward;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);

    std::vector<glm::mat4> reference;
    int variant = 0;
    for (const auto* order : {&forward, &backward, &shuffled}) {
        for (const bool split : {false, true}) {
            ts::World w;
            const std::vector<ts::Entity> ent = build(w, m, *order, split);
            ts::propagate_transforms(w);
            std::vector<glm::mat4> got(n, glm::mat4(0.0f));
            for (int i = 0; i < n; ++i) {
                if (m.has_local[i]) got[i] = world_of(w, ent[i]);
            }
            if (reference.empty()) {
                reference = got;
                EXPECT_EQ(check_against(w, m, ent, m.worlds()), 0);
            } else {
                for (int i = 0; i < n; ++i) {
                    ASSERT_TRUE(same_bits(got[i], reference[i]))
                        << "node " << i << ", variant " << variant;
                }
            }
            ++variant;
        }
    }
}

// -------------------------------------------------------------------------- allocations

TEST(Transform, SteadyStateAllocatesNothing) {
    ts::test::CountingResource counting;
    ts::World w(&counting);
    std::mt19937 rng(99);
    Model m;
    random_forest(m, 20'000, rng);
    std::vector<int> order(m.parents.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    const std::vector<ts::Entity> ent = build(w, m, order, false);
    std::vector<int> some;  // 1% of the nodes with a local
    for (std::size_t i = 0; i < order.size(); ++i) {
        if (m.has_local[i] && i % 100 == 0) some.push_back(static_cast<int>(i));
    }

    int frames = 0;
    auto frame = [&](int, bool everything) {
        // The writes happen outside the measured call; values alternate, so every frame moves
        // the entities it touches.
        const float x = static_cast<float>(++frames % 2);
        if (everything) {
            w.query<ts::LocalTransform&>().each([&](ts::LocalTransform& l) { l.matrix[3][2] = x; });
        } else {
            for (const int i : some) w.get_mut<ts::LocalTransform>(ent[i]).matrix[3][2] = x;
        }
        const std::size_t resource_before = counting.allocations;
        const std::size_t news_before = ts::test::global_news;
        const std::size_t written = ts::propagate_transforms(w);
        EXPECT_GT(written, 0u);
        return std::pair{counting.allocations - resource_before,
                         ts::test::global_news - news_before};
    };
    // Warm-up: the first call adds WorldTransforms and sizes the scratch; a few more frames of
    // each kind grow the stacks to their working size.
    ts::propagate_transforms(w);
    for (int k = 0; k < 4; ++k) {
        frame(k, true);
        frame(k, false);
    }
    for (int k = 0; k < 10; ++k) {
        EXPECT_EQ(frame(k, false), (std::pair<std::size_t, std::size_t>{0, 0})) << "1% frame " << k;
        EXPECT_EQ(frame(k, true), (std::pair<std::size_t, std::size_t>{0, 0}))
            << "full frame " << k;
        const std::size_t before = counting.allocations;
        EXPECT_EQ(ts::propagate_transforms(w), 0u);  // unchanged frame
        EXPECT_EQ(counting.allocations, before);
    }
    // A re-parent between frames: the relation change may allocate, the propagation does not.
    const ts::Entity leaf = ent[order.size() - 1];
    const ts::Entity other = ent[1];
    for (int k = 0; k < 6; ++k) {
        const ts::Entity old = w.parent(leaf);
        if (old) w.unrelate<ts::ChildOf>(leaf, old);
        w.relate(leaf, ts::ChildOf{}, k % 2 == 0 ? other : ent[0]);
        const std::size_t before = counting.allocations;
        const std::size_t news = ts::test::global_news;
        ts::propagate_transforms(w);
        if (k >= 2) {
            EXPECT_EQ(counting.allocations, before) << "re-parent frame " << k;
            EXPECT_EQ(ts::test::global_news, news) << "re-parent frame " << k;
        }
    }
}

}  // namespace

using tessera::test::load_at_tick;

TEST(Transform, PropagateAtMaxTickIsLimitExceededAndChangesNothing) {
    ts::World w;
    load_at_tick(w, ts::World::max_tick - 1);
    w.advance_tick();  // to the top
    const ts::Entity e = w.spawn(ts::LocalTransform{});
    try {
        (void)ts::propagate_transforms(w);
        ADD_FAILURE() << "the call would have advanced the tick past World::max_tick";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::limit_exceeded);
    }
    EXPECT_FALSE(w.has<ts::WorldTransform>(e));
    EXPECT_EQ(w.tick(), ts::World::max_tick);
}

// From the workers of a par_each it is refused (it writes every row and the world's plan), and
// nothing changes: the world is neither deferring nor parallel afterwards.
TEST(Transform, PropagateFromParEachWorkersIsRefused) {
    ts::World w;
    for (int i = 0; i < 64; ++i) w.spawn(ts::LocalTransform{});
    std::atomic<int> refused{0};
    w.query<ts::Entity, const ts::LocalTransform&>().par_each(
        [&](ts::Entity, const ts::LocalTransform&) {
            try {
                (void)ts::propagate_transforms(w);
            } catch (const ts::Error& err) {
                if (err.code() == ts::errc::invalid_argument) refused.fetch_add(1);
            }
        });
    EXPECT_EQ(refused.load(), 64);
    EXPECT_FALSE(w.deferring());
    EXPECT_EQ(w.query<const ts::WorldTransform&>().count(), 0u);
    EXPECT_EQ(ts::propagate_transforms(w), 64u);
}
