// relation.hpp: relate/unrelate, targets, reverse lookup, the ChildOf hierarchy, cascading
// despawn, relation observers, deferral, queries and errors.
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include "common/error_of.hpp"

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ts = tessera;
using tessera::test::error_of;

namespace {

struct Joint {
    int v = 0;
    bool operator==(const Joint&) const = default;
};
struct Likes {};
struct Hp {
    int v = 0;
};
struct Label {
    std::string text;
};

std::vector<ts::Entity> list(std::span<const ts::Entity> s) {
    return {s.begin(), s.end()};
}

TEST(Relation, RelateAddsDataAndTargets) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn(), c = w.spawn();
    w.relate(a, Joint{7}, b);
    EXPECT_TRUE(w.related<Joint>(a, b));
    EXPECT_FALSE(w.related<Joint>(b, a));
    EXPECT_TRUE(w.has<Joint>(a));
    EXPECT_TRUE(w.has<ts::Targets<Joint>>(a));
    ASSERT_NE(w.relation<Joint>(a), nullptr);
    EXPECT_EQ(w.relation<Joint>(a)->v, 7);
    EXPECT_EQ(list(w.targets<Joint>(a)), std::vector<ts::Entity>{b});
    // A second target: appended, the one value replaced (moecs).
    w.relate(a, Joint{9}, c);
    EXPECT_EQ(list(w.targets<Joint>(a)), (std::vector<ts::Entity>{b, c}));
    EXPECT_EQ(w.relation<Joint>(a)->v, 9);
    // An existing target: only the data changes.
    w.relate(a, Joint{11}, b);
    EXPECT_EQ(list(w.targets<Joint>(a)), (std::vector<ts::Entity>{b, c}));
    EXPECT_EQ(w.relation<Joint>(a)->v, 11);
    EXPECT_EQ(w.relation<Joint>(b), nullptr);
}

TEST(Relation, DataIsWritableAndMarkedChanged) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.relate(a, Joint{1}, b);
    const std::uint64_t before = w.changed_tick<Joint>(a);
    w.advance_tick();
    w.relation<Joint>(a)->v = 5;
    EXPECT_EQ(w.get<Joint>(a).v, 5);
    EXPECT_GT(w.changed_tick<Joint>(a), before);
    const ts::World& cw = w;
    EXPECT_EQ(cw.relation<Joint>(a)->v, 5);
}

TEST(Relation, TagRelationsAndDefaultData) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.relate<Likes>(a, b);
    EXPECT_TRUE(w.related<Likes>(a, b));
    EXPECT_NE(w.relation<Likes>(a), nullptr);  // a stand-in: tags have no storage
    EXPECT_EQ(w.relation<Likes>(b), nullptr);
    w.relate<Joint>(a, b);
    EXPECT_EQ(w.relation<Joint>(a)->v, 0);
}

TEST(Relation, UnrelateOneKeepsOrderAndRemovesTheLast) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn(), c = w.spawn(), d = w.spawn();
    w.relate(a, Joint{1}, b);
    w.relate(a, Joint{1}, c);
    w.relate(a, Joint{1}, d);
    EXPECT_TRUE(w.unrelate<Joint>(a, c));
    EXPECT_FALSE(w.unrelate<Joint>(a, c));
    EXPECT_EQ(list(w.targets<Joint>(a)), (std::vector<ts::Entity>{b, d}));
    EXPECT_TRUE(w.unrelate<Joint>(a, b));
    EXPECT_TRUE(w.unrelate<Joint>(a, d));
    EXPECT_FALSE(w.has<Joint>(a));
    EXPECT_FALSE(w.has<ts::Targets<Joint>>(a));
    EXPECT_TRUE(w.targets<Joint>(a).empty());
    EXPECT_EQ(w.relation<Joint>(a), nullptr);
    EXPECT_FALSE(w.unrelate<Likes>(a, b));  // a type never related: nothing to do
}

TEST(Relation, UnrelateAll) {
    ts::World w;
    const ts::Entity a = w.spawn(Hp{3}), b = w.spawn(), c = w.spawn();
    w.relate(a, Joint{1}, b);
    w.relate(a, Joint{1}, c);
    EXPECT_EQ(w.unrelate<Joint>(a), 2u);
    EXPECT_EQ(w.unrelate<Joint>(a), 0u);
    EXPECT_FALSE(w.has<Joint>(a));
    EXPECT_EQ(w.get<Hp>(a).v, 3);  // the other components stay
    EXPECT_TRUE(w.sources<Joint>(b).empty());
}

TEST(Relation, SourcesAreTheReverseLookupInRelateOrder) {
    ts::World w;
    const ts::Entity t = w.spawn(), a = w.spawn(), b = w.spawn(), c = w.spawn();
    w.relate(b, Joint{}, t);
    w.relate(a, Joint{}, t);
    w.relate(c, Joint{}, t);
    EXPECT_EQ(list(w.sources<Joint>(t)), (std::vector<ts::Entity>{b, a, c}));
    w.unrelate<Joint>(a, t);
    EXPECT_EQ(list(w.sources<Joint>(t)), (std::vector<ts::Entity>{b, c}));
    EXPECT_TRUE(w.sources<Likes>(t).empty());
    EXPECT_TRUE(w.sources<Joint>(ts::Entity::null()).empty());
}

TEST(Relation, TargetsAndSourcesOfDeadOrNullAreEmpty) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.relate(a, Joint{}, b);
    w.despawn(b);
    EXPECT_TRUE(w.targets<Joint>(a).empty());
    EXPECT_TRUE(w.sources<Joint>(b).empty());
    EXPECT_FALSE(w.related<Joint>(ts::Entity::null(), a));
    EXPECT_EQ(w.parent(ts::Entity::null()), ts::Entity::null());
}

TEST(Relation, HierarchyShorthands) {
    ts::World w;
    const ts::Entity p = w.spawn(), q = w.spawn(), c = w.spawn(), d = w.spawn();
    w.relate(c, ts::ChildOf{}, p);
    w.relate(d, ts::ChildOf{}, p);
    w.relate(c, ts::ChildOf{}, q);
    EXPECT_EQ(list(w.children(p)), (std::vector<ts::Entity>{c, d}));
    EXPECT_EQ(list(w.children(q)), std::vector<ts::Entity>{c});
    EXPECT_EQ(list(w.parents(c)), (std::vector<ts::Entity>{p, q}));
    EXPECT_EQ(w.parent(c), p);
    EXPECT_EQ(w.parent(p), ts::Entity::null());
    EXPECT_TRUE(w.children(c).empty());
}

TEST(Relation, DespawningATargetRemovesRelationsPointingAtIt) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn(), t1 = w.spawn(), t2 = w.spawn();
    w.relate(a, Joint{1}, t1);
    w.relate(a, Joint{1}, t2);
    w.relate(b, Joint{2}, t1);
    EXPECT_TRUE(w.despawn(t1));
    EXPECT_TRUE(w.is_alive(a));
    EXPECT_TRUE(w.is_alive(b));  // custom relations never cascade
    EXPECT_EQ(list(w.targets<Joint>(a)), std::vector<ts::Entity>{t2});
    EXPECT_FALSE(w.has<Joint>(b));  // lost its last target: the relation is gone
    EXPECT_FALSE(w.has<ts::Targets<Joint>>(b));
    EXPECT_EQ(list(w.sources<Joint>(t2)), std::vector<ts::Entity>{a});
}

TEST(Relation, DespawningASourceRemovesItFromItsTargetsSources) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn(), t = w.spawn();
    w.relate(a, Joint{}, t);
    w.relate(b, Joint{}, t);
    w.despawn(a);
    EXPECT_EQ(list(w.sources<Joint>(t)), std::vector<ts::Entity>{b});
    // A reused index starts without relations.
    const ts::Entity fresh = w.spawn();
    EXPECT_EQ(fresh.index, a.index);
    EXPECT_TRUE(w.targets<Joint>(fresh).empty());
    EXPECT_TRUE(w.sources<Joint>(fresh).empty());
}

TEST(Relation, ParentDespawnCascadesToOrphansOnly) {
    ts::World w;
    const ts::Entity p = w.spawn(), other = w.spawn();
    const ts::Entity only = w.spawn(), shared = w.spawn(), grandchild = w.spawn();
    w.relate(only, ts::ChildOf{}, p);
    w.relate(shared, ts::ChildOf{}, p);
    w.relate(shared, ts::ChildOf{}, other);
    w.relate(grandchild, ts::ChildOf{}, only);
    w.despawn(p);
    EXPECT_FALSE(w.is_alive(only));
    EXPECT_FALSE(w.is_alive(grandchild));
    EXPECT_TRUE(w.is_alive(shared));
    EXPECT_EQ(list(w.parents(shared)), std::vector<ts::Entity>{other});
    EXPECT_EQ(w.count(), 2u);
}

TEST(Relation, ChildWhoseParentsAllDieInOneCascadeDies) {
    ts::World w;
    const ts::Entity root = w.spawn(), mid = w.spawn(), leaf = w.spawn();
    w.relate(mid, ts::ChildOf{}, root);
    w.relate(leaf, ts::ChildOf{}, root);
    w.relate(leaf, ts::ChildOf{}, mid);  // both parents go with root
    w.despawn(root);
    EXPECT_EQ(w.count(), 0u);
}

TEST(Relation, PermanentChildrenSurviveTheCascade) {
    ts::World w;
    const ts::Entity p = w.spawn();
    const ts::Entity keep = w.spawn_permanent();
    const ts::Entity below = w.spawn();
    w.relate(keep, ts::ChildOf{}, p);
    w.relate(below, ts::ChildOf{}, keep);
    w.despawn(p);
    EXPECT_TRUE(w.is_alive(keep));
    EXPECT_TRUE(w.is_alive(below));
    EXPECT_EQ(w.parent(keep), ts::Entity::null());
    EXPECT_FALSE(w.has<ts::ChildOf>(keep));
}

TEST(Relation, DeepChainCascadesWithoutRecursion) {
    ts::World w;
    std::vector<ts::Entity> chain{w.spawn()};
    for (int i = 0; i < 20000; ++i) {
        const ts::Entity c = w.spawn(Hp{i});
        w.relate(c, ts::ChildOf{}, chain.back());
        chain.push_back(c);
    }
    w.despawn(chain.front());
    EXPECT_EQ(w.count(), 0u);
}

TEST(Relation, CycleIsRefusedAndChangesNothing) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn(), c = w.spawn();
    w.relate(b, ts::ChildOf{}, a);
    w.relate(c, ts::ChildOf{}, b);
    EXPECT_EQ(error_of([&] { w.relate(a, ts::ChildOf{}, c); }), ts::errc::hierarchy_cycle);
    EXPECT_EQ(error_of([&] { w.relate(a, ts::ChildOf{}, a); }), ts::errc::hierarchy_cycle);
    EXPECT_FALSE(w.has<ts::ChildOf>(a));
    EXPECT_TRUE(w.children(c).empty());
    // Through a second parent too.
    const ts::Entity d = w.spawn();
    w.relate(c, ts::ChildOf{}, d);
    EXPECT_EQ(error_of([&] { w.relate(d, ts::ChildOf{}, c); }), ts::errc::hierarchy_cycle);
    EXPECT_EQ(list(w.parents(c)), (std::vector<ts::Entity>{b, d}));
    // Custom relations may form loops.
    w.relate(a, Joint{}, c);
    w.relate(c, Joint{}, a);
    w.relate(a, Joint{}, a);
    EXPECT_TRUE(w.related<Joint>(a, a));
}

TEST(Relation, CycleMessageNamesTheEntities) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.relate(b, ts::ChildOf{}, a);
    try {
        w.relate(a, ts::ChildOf{}, b);
        FAIL();
    } catch (const ts::Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("ChildOf"), std::string::npos) << msg;
        std::ostringstream ea, eb;
        ea << a;
        eb << b;
        EXPECT_NE(msg.find(ea.str()), std::string::npos) << msg;
        EXPECT_NE(msg.find(eb.str()), std::string::npos) << msg;
    }
}

TEST(Relation, DeadEntitiesAreNotAlive) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.despawn(b);
    EXPECT_EQ(error_of([&] { w.relate(a, Joint{}, b); }), ts::errc::not_alive);
    EXPECT_EQ(error_of([&] { w.relate(b, Joint{}, a); }), ts::errc::not_alive);
    EXPECT_EQ(error_of([&] { w.unrelate<Joint>(b, a); }), ts::errc::not_alive);
    EXPECT_EQ(error_of([&] { w.unrelate<Joint>(b); }), ts::errc::not_alive);
    EXPECT_FALSE(w.has<Joint>(a));
}

TEST(Relation, RelationComponentsAreKeptByRelateOnly) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.relate(a, Joint{1}, b);
    EXPECT_EQ(error_of([&] { w.add(b, Joint{2}); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.remove<Joint>(a); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.remove<ts::Targets<Joint>>(a); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.spawn(Joint{3}); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.spawn(Hp{1}, Joint{3}); }), ts::errc::invalid_argument);
    ts::CommandBuffer cmds;
    cmds.add(b, Joint{4});
    EXPECT_EQ(error_of([&] { cmds.apply(w); }), ts::errc::invalid_argument);
    EXPECT_EQ(cmds.size(), 1u);  // the failing command stays
    EXPECT_FALSE(w.has<Joint>(b));
    EXPECT_TRUE(w.related<Joint>(a, b));
    // Writing the data is fine.
    w.set(a, Joint{5});
    EXPECT_EQ(w.relation<Joint>(a)->v, 5);
}

// issue 20, item 3: ChildOf was refused as a plain component only once the world had relations,
// so a first add/spawn of it made it plain there and disabled the hierarchy for good.
TEST(Relation, ChildOfIsNeverAPlainComponent) {
    const auto refuses_and_keeps_working = [](ts::World& w) {
        const ts::Entity e = w.spawn(Hp{1});
        const std::size_t archetypes = w.archetype_count();
        const std::size_t alive = w.count();
        EXPECT_EQ(error_of([&] { w.add(e, ts::ChildOf{}); }), ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { w.add<ts::ChildOf>(e); }), ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { w.add(e, Hp{2}, ts::ChildOf{}); }), ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { (void)w.remove<ts::ChildOf>(e); }), ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { (void)w.spawn(ts::ChildOf{}); }), ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { (void)w.spawn(Hp{3}, ts::ChildOf{}); }),
                  ts::errc::invalid_argument);
        EXPECT_EQ(error_of([&] { (void)w.spawn_many(2, [](std::size_t, Hp&, ts::ChildOf&) {}); }),
                  ts::errc::invalid_argument);
        w.query<const Hp&>().each([&](const Hp&) {  // deferred
            EXPECT_EQ(error_of([&] { w.add(e, ts::ChildOf{}); }), ts::errc::invalid_argument);
            EXPECT_EQ(error_of([&] { (void)w.spawn(ts::ChildOf{}); }), ts::errc::invalid_argument);
        });
        ts::CommandBuffer cmds;
        cmds.add(e, ts::ChildOf{});
        EXPECT_EQ(error_of([&] { cmds.apply(w); }), ts::errc::invalid_argument);
        EXPECT_EQ(cmds.size(), 1u);  // the failing command stays
        cmds.clear();
        (void)cmds.spawn(Hp{4}, ts::ChildOf{});
        EXPECT_EQ(error_of([&] { cmds.apply(w); }), ts::errc::invalid_argument);
        cmds.clear();
        EXPECT_EQ(w.count(), alive);
        EXPECT_EQ(w.archetype_count(), archetypes);
        EXPECT_FALSE(w.has<ts::ChildOf>(e));
        // The hierarchy works.
        const ts::Entity p = w.spawn();
        w.relate(e, ts::ChildOf{}, p);
        EXPECT_EQ(w.parent(e), p);
        EXPECT_EQ(list(w.children(p)), std::vector<ts::Entity>{e});
        EXPECT_EQ(error_of([&] { (void)w.remove<ts::ChildOf>(e); }), ts::errc::invalid_argument);
        EXPECT_EQ(w.parent(e), p);
    };
    ts::World fresh;  // no relation yet
    refuses_and_keeps_working(fresh);
    ts::World other;  // another relation in use, ChildOf not yet
    other.relate(other.spawn(), Joint{1}, other.spawn());
    refuses_and_keeps_working(other);
    ts::World observed;  // observers in the world: the observed path
    auto o = observed.on_add<Hp>([](ts::World&, ts::Entity, Hp&) {});
    refuses_and_keeps_working(observed);
}

TEST(Relation, APlainComponentCannotBecomeARelation) {
    ts::World w;
    const ts::Entity a = w.spawn(Hp{1}), b = w.spawn();
    EXPECT_EQ(error_of([&] { w.relate(a, Hp{2}, b); }), ts::errc::invalid_argument);
    EXPECT_EQ(w.get<Hp>(a).v, 1);
}

TEST(Relation, QueriesRequireExcludeAndIterateRelations) {
    ts::World w;
    const ts::Entity root = w.spawn(Hp{0}), c1 = w.spawn(Hp{1}), c2 = w.spawn(Hp{2});
    const ts::Entity t = w.spawn();
    w.relate(c1, ts::ChildOf{}, root);
    w.relate(c2, ts::ChildOf{}, root);
    w.relate(c2, Joint{5}, t);
    EXPECT_EQ(w.query<const Hp&>().with<ts::ChildOf>().count(), 2u);
    EXPECT_EQ(w.query<const Hp&>().without<ts::ChildOf>().count(), 1u);
    EXPECT_EQ(w.query<const Hp&>().with<Joint>().count(), 1u);
    int seen = 0;
    w.query<ts::Entity, const Joint&, const ts::Targets<Joint>&>().each(
        [&](ts::Entity e, const Joint& j, const ts::Targets<Joint>& targets) {
            EXPECT_EQ(e, c2);
            EXPECT_EQ(j.v, 5);
            ASSERT_EQ(targets.size(), 1u);
            EXPECT_EQ(targets[0], t);
            EXPECT_EQ(targets.front(), t);
            for (const ts::Entity x : targets) EXPECT_EQ(x, t);
            ++seen;
        });
    EXPECT_EQ(seen, 1);
    w.each([&](const Hp&, const ts::Targets<ts::ChildOf>& parents) {
        EXPECT_EQ(parents.front(), root);
        ++seen;
    });
    EXPECT_EQ(seen, 3);
}

TEST(Relation, ChangesInsideLoopsAreDeferred) {
    ts::World w;
    const ts::Entity p = w.spawn(Hp{0}), c = w.spawn(Hp{1});
    w.query<ts::Entity, const Hp&>().each([&](ts::Entity e, const Hp&) {
        if (e == c) {
            w.relate(c, ts::ChildOf{}, p);
            EXPECT_FALSE(w.related<ts::ChildOf>(c, p));  // queued
        }
    });
    EXPECT_EQ(w.parent(c), p);
    w.query<ts::Entity, const Hp&>().each([&](ts::Entity e, const Hp&) {
        if (e == c) {
            EXPECT_TRUE(w.unrelate<ts::ChildOf>(c, p));
        }
        EXPECT_EQ(w.parent(c), p);
    });
    EXPECT_EQ(w.parent(c), ts::Entity::null());
}

TEST(Relation, DeferredCycleIsDroppedAndReportedAfterTheRest) {
    ts::World w;
    const ts::Entity a = w.spawn(Hp{0}), b = w.spawn(Hp{1}), x = w.spawn();
    w.relate(b, ts::ChildOf{}, a);
    auto loop = w.query<ts::Entity, const Hp&>();
    EXPECT_EQ(error_of([&] {
                  loop.each([&](ts::Entity e, const Hp&) {
                      if (e != a) return;
                      w.relate(a, ts::ChildOf{}, b);  // closes a loop at the flush
                      w.relate(x, Joint{3}, a);       // still applied
                  });
              }),
              ts::errc::hierarchy_cycle);
    EXPECT_FALSE(w.has<ts::ChildOf>(a));
    EXPECT_TRUE(w.related<Joint>(x, a));
    EXPECT_TRUE(w.storage().deferred().empty());
}

TEST(Relation, CommandBufferRelatesPlaceholders) {
    ts::World w;
    const ts::Entity p = w.spawn();
    ts::CommandBuffer cmds;
    const ts::Entity c = cmds.spawn(Hp{1});
    const ts::Entity j = cmds.spawn();
    cmds.relate(c, ts::ChildOf{}, p);
    cmds.relate(j, Joint{4}, c);
    EXPECT_EQ(cmds.apply(w), 5u);  // two places, one add, two relates
    const ts::Entity rc = cmds.resolved(c), rj = cmds.resolved(j);
    EXPECT_EQ(w.parent(rc), p);
    EXPECT_EQ(w.relation<Joint>(rj)->v, 4);
    cmds.unrelate<Joint>(rj, rc);
    cmds.unrelate<ts::ChildOf>(rc);
    EXPECT_EQ(cmds.apply(w), 2u);
    EXPECT_FALSE(w.has<Joint>(rj));
    EXPECT_EQ(w.parent(rc), ts::Entity::null());
}

TEST(Relation, CommandBufferDeadTargets) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    ts::CommandBuffer cmds;
    cmds.relate(a, Joint{1}, b);
    w.despawn(b);
    EXPECT_EQ(error_of([&] { cmds.apply(w); }), ts::errc::not_alive);
    EXPECT_EQ(cmds.apply(w, ts::on_dead::skip), 0u);
    EXPECT_EQ(cmds.skipped(), 1u);
    EXPECT_EQ(cmds.size(), 0u);
}

TEST(Relation, CommandBufferCycleIsDropped) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.relate(b, ts::ChildOf{}, a);
    ts::CommandBuffer cmds;
    cmds.relate(a, ts::ChildOf{}, b);
    cmds.relate(a, Joint{2}, b);
    EXPECT_EQ(error_of([&] { cmds.apply(w); }), ts::errc::hierarchy_cycle);
    EXPECT_EQ(cmds.size(), 1u);  // the cycle is gone, the rest stays
    EXPECT_EQ(cmds.apply(w), 1u);
    EXPECT_TRUE(w.related<Joint>(a, b));
}

TEST(Relation, HeapOwningRelationData) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn(), c = w.spawn();
    w.relate(a, Label{std::string(100, 'x')}, b);
    w.relate(a, Label{"second"}, c);
    EXPECT_EQ(w.relation<Label>(a)->text, "second");
    w.query<const Hp*>().each([&](const Hp*) {});
    w.despawn(c);
    EXPECT_EQ(w.relation<Label>(a)->text, "second");
    w.despawn(b);
    EXPECT_EQ(w.relation<Label>(a), nullptr);
}

TEST(Relation, ManyTargetsSpillToTheHeap) {
    ts::World w;
    const ts::Entity a = w.spawn();
    std::vector<ts::Entity> ts_;
    for (int i = 0; i < 100; ++i) {
        ts_.push_back(w.spawn());
        w.relate(a, Joint{i}, ts_.back());
    }
    EXPECT_EQ(list(w.targets<Joint>(a)), ts_);
    for (int i = 0; i < 100; i += 2) w.despawn(ts_[static_cast<std::size_t>(i)]);
    EXPECT_EQ(w.targets<Joint>(a).size(), 50u);
    EXPECT_EQ(w.targets<Joint>(a).front(), ts_[1]);
}

// ------------------------------------------------------------------------------ observers

struct Log {
    std::vector<std::string> lines;
    void add(const std::string& what, ts::Entity a, ts::Entity b = ts::Entity::null()) {
        std::ostringstream os;
        os << what << ' ' << a.index;
        if (b) os << "->" << b.index;
        lines.push_back(os.str());
    }
};

TEST(RelationObserver, RelateAndUnrelateFireWithTheData) {
    ts::World w;
    Log log;
    ts::Observer on = w.on_relate<Joint>([&](ts::World&, ts::Entity e, ts::Entity t, Joint& j) {
        log.add("relate" + std::to_string(j.v), e, t);
    });
    ts::Observer off =
        w.on_unrelate<Joint>([&](ts::World& world, ts::Entity e, ts::Entity t, Joint& j) {
            EXPECT_TRUE(world.related<Joint>(e, t));  // before the removal
            log.add("unrelate" + std::to_string(j.v), e, t);
        });
    const ts::Entity a = w.spawn(), b = w.spawn(), c = w.spawn();
    w.relate(a, Joint{1}, b);
    w.relate(a, Joint{2}, c);
    w.relate(a, Joint{3}, c);  // present: no event
    w.unrelate<Joint>(a, b);
    w.unrelate<Joint>(a);
    EXPECT_EQ(log.lines, (std::vector<std::string>{"relate1 0->1", "relate2 0->2", "unrelate3 0->1",
                                                   "unrelate3 0->2"}));
}

TEST(RelationObserver, FirstRelateIsAnAddAndEnter) {
    ts::World w;
    Log log;
    auto with_parent = w.query<ts::Entity>().with<ts::ChildOf>();
    ts::Observer o1 = w.on_add<ts::ChildOf>([&](ts::World&, ts::Entity e) { log.add("add", e); });
    ts::Observer o2 = with_parent.on_enter([&](ts::World&, ts::Entity e) { log.add("enter", e); });
    ts::Observer o3 = with_parent.on_exit([&](ts::World&, ts::Entity e) { log.add("exit", e); });
    ts::Observer o4 = w.on_relate<ts::ChildOf>(
        [&](ts::World&, ts::Entity e, ts::Entity t) { log.add("relate", e, t); });
    ts::Observer o5 =
        w.on_remove<ts::ChildOf>([&](ts::World&, ts::Entity e) { log.add("remove", e); });
    ts::Observer o6 = w.on_unrelate<ts::ChildOf>(
        [&](ts::World&, ts::Entity e, ts::Entity t) { log.add("unrelate", e, t); });
    const ts::Entity p = w.spawn(), c = w.spawn();
    w.relate(c, ts::ChildOf{}, p);
    w.unrelate<ts::ChildOf>(c, p);
    EXPECT_EQ(log.lines, (std::vector<std::string>{"add 1", "enter 1", "relate 1->0",
                                                   "unrelate 1->0", "remove 1", "exit 1"}));
}

TEST(RelationObserver, DespawnOrder) {
    ts::World w;
    Log log;
    ts::Observer a = w.on_despawn([&](ts::World&, ts::Entity e) { log.add("despawn", e); });
    ts::Observer b = w.on_unrelate<ts::ChildOf>(
        [&](ts::World&, ts::Entity e, ts::Entity t) { log.add("unrelate", e, t); });
    ts::Observer c =
        w.on_remove<ts::ChildOf>([&](ts::World&, ts::Entity e) { log.add("remove", e); });
    const ts::Entity root = w.spawn(), other = w.spawn(), kid = w.spawn(), shared = w.spawn();
    w.relate(kid, ts::ChildOf{}, root);
    w.relate(shared, ts::ChildOf{}, root);
    w.relate(shared, ts::ChildOf{}, other);
    w.despawn(root);
    // Root first: its events, then the relations pointing at it go (both ends alive), then the
    // children it takes along, breadth first.
    EXPECT_EQ(log.lines, (std::vector<std::string>{"despawn 0", "unrelate 2->0", "unrelate 3->0",
                                                   "despawn 2", "remove 2"}));
}

TEST(RelationObserver, ReactionsAreDeferredAndApplied) {
    ts::World w;
    const ts::Entity p = w.spawn();
    ts::Observer o = w.on_relate<ts::ChildOf>([&](ts::World& world, ts::Entity e, ts::Entity) {
        world.add(e, Hp{42});  // structural: deferred, applied before relate returns
    });
    const ts::Entity c = w.spawn();
    w.relate(c, ts::ChildOf{}, p);
    EXPECT_EQ(w.get<Hp>(c).v, 42);
}

TEST(RelationObserver, PerTypeSwitch) {
    ts::World w;
    int n = 0;
    ts::Observer o = w.on_relate<Joint>([&](ts::World&, ts::Entity, ts::Entity) { ++n; });
    w.observers().enable<Joint>(ts::Event::relate, false);
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.relate(a, Joint{}, b);
    EXPECT_EQ(n, 0);
    w.observers().enable<Joint>(ts::Event::relate, true);
    w.relate(b, Joint{}, a);
    EXPECT_EQ(n, 1);
}

TEST(RelationObserver, ThrowingObserverLeavesTheChangeDone) {
    ts::World w;
    ts::Observer o = w.on_unrelate<Joint>(
        [&](ts::World&, ts::Entity, ts::Entity) { throw std::runtime_error("boom"); });
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.relate(a, Joint{}, b);
    EXPECT_THROW(w.despawn(b), std::runtime_error);
    EXPECT_FALSE(w.is_alive(b));
    EXPECT_FALSE(w.has<Joint>(a));
}

}  // namespace

namespace {

void attach(ts::View<ts::Entity, const Hp&, ts::Without<ts::ChildOf>> orphans,
            ts::Res<ts::Entity> root, ts::Commands cmds) {
    orphans.each([&](ts::Entity e, const Hp&) {
        if (e != *root) cmds.relate(e, ts::ChildOf{}, *root);
    });
}

TEST(RelationSystem, SystemsFilterIterateAndRelateThroughCommands) {
    ts::World w;
    const ts::Entity root = w.spawn(Hp{0});
    w.insert_resource(root);
    for (int i = 1; i <= 3; ++i) w.spawn(Hp{i});
    std::size_t with_parent = 0;
    ts::Schedule s;
    s.add("attach", attach);
    s.add("count", [&](ts::View<const ts::Targets<ts::ChildOf>&, ts::With<Hp>> kids) {
         with_parent = 0;
         kids.each([&](const ts::Targets<ts::ChildOf>& parents) {
             EXPECT_EQ(parents.front(), root);
             ++with_parent;
         });
     }).after("attach");
    s.run(w);
    EXPECT_EQ(w.children(root).size(), 3u);
    EXPECT_EQ(with_parent, 0u);  // the commands apply at the phase's sync point
    s.run(w);
    EXPECT_EQ(with_parent, 3u);
}

}  // namespace

// ------------------------------------------------------------ several targets and lookups

TEST(Relation, SeveralTargetsInOneCallAndTheLookupsOfMoecs) {
    ts::World w;
    const ts::Entity e1 = w.spawn();
    const ts::Entity e2 = w.spawn();
    const ts::Entity e3 = w.spawn();
    const ts::Entity e4 = w.spawn();
    const std::vector<ts::Entity> three{e2, e3, e4};
    w.relate(e1, Joint{7}, three);
    EXPECT_EQ(w.targets<Joint>(e1).size(), 3u);
    EXPECT_EQ(w.relation_count<Joint>(e1), 3u);
    EXPECT_EQ(w.relation<Joint>(e1)->v, 7);
    EXPECT_TRUE(w.related<Joint>(e1, three));
    EXPECT_TRUE(w.has_relation<Joint>(e1));
    EXPECT_FALSE(w.has_relation<Likes>(e1));
    EXPECT_FALSE(w.has_relation(e2)) << "e2 is a target, not a source";
    EXPECT_TRUE(w.has_relation(e1));
    w.relate<Likes>(e1, e3);
    EXPECT_TRUE(w.related(e1, e3)) << "by any type";
    EXPECT_FALSE(w.related(e2, e1));
    EXPECT_EQ(w.relation_count(e1, e3), 2u) << "Joint and Likes";
    EXPECT_EQ(w.relation_count(e1, e2), 1u);
    const std::vector<ts::Entity> two{e2, e4};
    EXPECT_EQ(w.unrelate<Joint>(e1, two), 2u);
    EXPECT_EQ(w.unrelate<Joint>(e1, two), 0u);
    EXPECT_FALSE(w.related<Joint>(e1, three));
    EXPECT_TRUE(w.related<Joint>(e1, std::vector<ts::Entity>{e3}));
    EXPECT_EQ(w.relation_count<Joint>(e1), 1u);

    // The hierarchy: first child and parents.
    const std::vector<ts::Entity> parents{e1, e2};
    w.relate(e4, ts::ChildOf{}, parents);
    EXPECT_EQ(w.child(e1), e4);
    EXPECT_EQ(w.child(e3), ts::Entity::null());
    EXPECT_EQ(w.parents(e4).size(), 2u);
    EXPECT_TRUE(w.related(e4, e2));
    EXPECT_EQ(w.relation_count<ts::ChildOf>(e4), 2u);
}

TEST(Relation, SeveralTargetsAllOrNothing) {
    ts::World w;
    const ts::Entity root = w.spawn();
    const ts::Entity mid = w.spawn();
    const ts::Entity leaf = w.spawn();
    const ts::Entity other = w.spawn();
    w.relate(mid, ts::ChildOf{}, root);
    w.relate(leaf, ts::ChildOf{}, mid);
    const ts::Entity dead = w.spawn();
    w.despawn(dead);
    // A dead target: nothing is related.
    const std::vector<ts::Entity> with_dead{other, dead};
    EXPECT_EQ(error_of([&] { w.relate(root, Joint{1}, with_dead); }), ts::errc::not_alive);
    EXPECT_FALSE(w.has_relation<Joint>(root));
    // A cycle on the second target: the first is not related either.
    const std::vector<ts::Entity> cycle{other, leaf};
    EXPECT_EQ(error_of([&] { w.relate(root, ts::ChildOf{}, cycle); }), ts::errc::hierarchy_cycle);
    EXPECT_FALSE(w.related<ts::ChildOf>(root, other));
    EXPECT_TRUE(w.children(other).empty());
    EXPECT_EQ(w.parent(mid), root);
}

// ---------------------------------------------------------------------------------------------
// relate with several targets (one call).

namespace {

/// What observers of `Joint` (add, set, relate, remove) and of entering Targets<Joint> see.
struct JointLog {
    std::vector<std::string> lines;
    std::vector<ts::Observer> observers;
    explicit JointLog(ts::World& w) {
        observers.push_back(w.on_add<Joint>([this](ts::World& world, ts::Entity e) {
            lines.push_back("add Joint, " + std::to_string(world.targets<Joint>(e).size()) +
                            " targets");
        }));
        observers.push_back(w.on_set<Joint>([this](ts::World&, ts::Entity, Joint& j) {
            lines.push_back("set " + std::to_string(j.v));
        }));
        observers.push_back(
            w.on_relate<Joint>([this](ts::World&, ts::Entity e, ts::Entity t, Joint& j) {
                std::ostringstream os;
                os << "relate " << e << " -> " << t << " data " << j.v;
                lines.push_back(os.str());
            }));
    }
};

std::vector<ts::Entity> entity_order(ts::World& w) {
    std::vector<ts::Entity> out;
    w.each_entity([&](ts::Entity e) { out.push_back(e); });
    return out;
}

}  // namespace

TEST(RelateSeveral, AddsEachNewTargetOnceInOrderAndKeepsTheData) {
    ts::World w;
    const ts::Entity a = w.spawn(Hp{1}), b = w.spawn(), c = w.spawn(), d = w.spawn();
    w.relate(a, Joint{1}, c);
    const std::vector<ts::Entity> targets{b, c, b, d};
    w.relate(a, Joint{5}, std::span<const ts::Entity>(targets));
    EXPECT_EQ(list(w.targets<Joint>(a)), (std::vector<ts::Entity>{c, b, d}));
    EXPECT_EQ(w.relation<Joint>(a)->v, 5);
    for (const ts::Entity t : {b, c, d}) EXPECT_EQ(list(w.sources<Joint>(t)), std::vector{a});
    EXPECT_EQ(w.get<Hp>(a).v, 1);
}

TEST(RelateSeveral, ObserversSeeWhatOneRelatePerTargetGives) {
    // The same calls one target at a time and in one call give the same events (the data of
    // each call's copy; `add` once, for the first target).
    for (const bool related_before : {false, true}) {
        std::vector<std::string> logs[2];
        for (int one_call = 0; one_call < 2; ++one_call) {
            ts::World w;
            const ts::Entity a = w.spawn(), b = w.spawn(), c = w.spawn(), d = w.spawn();
            if (related_before) w.relate(a, Joint{1}, c);
            JointLog log(w);
            const std::vector<ts::Entity> targets{b, c, b, d};
            if (one_call != 0) {
                w.relate(a, Joint{7}, std::span<const ts::Entity>(targets));
            } else {
                for (const ts::Entity t : targets) w.relate(a, Joint{7}, t);
            }
            logs[one_call] = log.lines;
        }
        // Observers run once every target is in place: only the count of targets an `add`
        // observer reads may differ.
        for (std::string& line : logs[1]) {
            if (line.rfind("add Joint", 0) == 0) line = "add Joint";
        }
        for (std::string& line : logs[0]) {
            if (line.rfind("add Joint", 0) == 0) line = "add Joint";
        }
        EXPECT_EQ(logs[1], logs[0]) << "related before: " << related_before;
        EXPECT_FALSE(logs[1].empty());
    }
}

TEST(RelateSeveral, ACycleToAnyTargetChangesNothingRowOrderIncluded) {
    ts::World w;
    const ts::Entity root = w.spawn(Hp{0});
    const ts::Entity other = w.spawn(Hp{1});
    const ts::Entity kid = w.spawn(Hp{2});
    const ts::Entity last = w.spawn(Hp{3});  // fills the hole if `root` left its table
    w.relate<ts::ChildOf>(kid, root);
    const std::vector<ts::Entity> before = entity_order(w);
    const std::vector<ts::Entity> targets{other, kid};  // `kid` descends from `root`
    EXPECT_EQ(
        error_of([&] { w.relate(root, ts::ChildOf{}, std::span<const ts::Entity>(targets)); }),
        ts::errc::hierarchy_cycle);
    EXPECT_TRUE(w.parents(root).empty());
    EXPECT_TRUE(w.children(other).empty());
    EXPECT_FALSE(w.has<ts::ChildOf>(root));
    EXPECT_EQ(entity_order(w), before);
    EXPECT_EQ(w.get<Hp>(last).v, 3);
}

TEST(RelateSeveral, WhileDeferringQueuesOneRelatePerTarget) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn(), c = w.spawn();
    w.defer_begin();
    const std::vector<ts::Entity> targets{b, c};
    w.relate(a, Joint{3}, std::span<const ts::Entity>(targets));
    EXPECT_TRUE(w.targets<Joint>(a).empty());
    w.defer_end();
    EXPECT_EQ(list(w.targets<Joint>(a)), (std::vector<ts::Entity>{b, c}));
    EXPECT_EQ(w.relation<Joint>(a)->v, 3);
}
