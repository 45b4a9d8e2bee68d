// Tests for include/tessera/traverse.hpp (Up terms) and Query::cascade (query.hpp): what an Up
// term reads, which rows it skips, every iteration form, systems, the depth order and its
// cache, deep chains, and a randomized model test against a reference that walks parents by
// hand.
#include <tessera/traverse.hpp>

#include <tessera/query.hpp>
#include <tessera/relation.hpp>
#include <tessera/schedule.hpp>
#include <tessera/system.hpp>
#include <tessera/system_stats.hpp>

#include "common/counting_resource.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace ts = tessera;
using ts::test::CountingResource;

namespace {

struct Armor {
    int value = 0;
};
struct Local {
    int value = 0;
};
struct Total {
    int value = 0;
};
struct Marked {};
struct Toggle {
    int value = 0;
};

}  // namespace

template <>
struct tessera::component_traits<Toggle> {
    static constexpr bool enableable = true;
};

namespace {

using Entities = std::vector<ts::Entity>;

/// The nearest ancestor (first parents) of `e` with `T`, by hand; null when none.
template <class T>
ts::Entity nearest_with(const ts::World& w, ts::Entity e) {
    for (ts::Entity p = w.parent(e); p; p = w.parent(p)) {
        if (w.has<T>(p)) return p;
    }
    return ts::Entity::null();
}

/// Depth by hand: first-parent steps to a root.
std::size_t depth_of(const ts::World& w, ts::Entity e) {
    std::size_t d = 0;
    for (ts::Entity p = w.parent(e); p; p = w.parent(p)) ++d;
    return d;
}

TEST(Traverse, UpReadsTheNearestAncestorNotTheEntityItself) {
    ts::World w;
    const ts::Entity root = w.spawn(Armor{1}, Local{});
    const ts::Entity mid = w.spawn(Local{});  // no Armor: passes the search on
    const ts::Entity leaf = w.spawn(Armor{3}, Local{});
    const ts::Entity below = w.spawn(Local{});
    w.relate<ts::ChildOf>(mid, root);
    w.relate<ts::ChildOf>(leaf, mid);
    w.relate<ts::ChildOf>(below, leaf);

    std::map<ts::Entity, int> seen;
    std::set<ts::Entity> null_rows;
    w.query<const Local&, ts::Up<const Armor*>>().each(
        [&](ts::Entity e, const Local&, const Armor* a) {
            if (a == nullptr)
                null_rows.insert(e);
            else
                seen[e] = a->value;
        });
    EXPECT_EQ(null_rows, (std::set<ts::Entity>{root}));
    EXPECT_EQ(seen[mid], 1);
    EXPECT_EQ(seen[leaf], 1);  // its own Armor{3} does not count
    EXPECT_EQ(seen[below], 3);
}

TEST(Traverse, UpReferenceSkipsRowsWithoutSuchAnAncestor) {
    ts::World w;
    const ts::Entity root = w.spawn(Armor{7});
    const ts::Entity child = w.spawn(Local{1});
    const ts::Entity orphan = w.spawn(Local{2});
    const ts::Entity bare_parent = w.spawn(Local{3});
    const ts::Entity under_bare = w.spawn(Local{4});
    w.relate<ts::ChildOf>(child, root);
    w.relate<ts::ChildOf>(under_bare, bare_parent);

    Entities visited;
    w.query<const Local&, ts::Up<const Armor&>>().each(
        [&](ts::Entity e, const Local&, const Armor& a) {
            EXPECT_EQ(a.value, 7);
            visited.push_back(e);
        });
    EXPECT_EQ(visited, (Entities{child}));
    (void)orphan;

    // The entity's own T is not needed to match, and Up alone is a valid query.
    std::size_t n = 0;
    w.query<ts::Up<const Armor&>>().each([&](const Armor&) { ++n; });
    EXPECT_EQ(n, 1u);
}

TEST(Traverse, UpFollowsTheFirstParentOnly) {
    ts::World w;
    const ts::Entity first = w.spawn(Local{});
    const ts::Entity second = w.spawn(Armor{2});
    const ts::Entity child = w.spawn(Local{});
    w.relate<ts::ChildOf>(child, first);
    w.relate<ts::ChildOf>(child, second);
    ASSERT_EQ(w.parent(child), first);
    const Armor* got = w.try_get<Armor>(second);
    w.query<const Local&, ts::Up<const Armor*>>().each(
        [&](ts::Entity e, const Local&, const Armor* a) {
            if (e == child) got = a;
        });
    EXPECT_EQ(got, nullptr);  // first has no Armor and no parent: second is not searched
}

TEST(Traverse, UpOfATagTellsWhetherSomeAncestorHasIt) {
    ts::World w;
    const ts::Entity root = w.spawn();
    w.add<Marked>(root);
    const ts::Entity mid = w.spawn(Local{});
    const ts::Entity leaf = w.spawn(Local{});
    w.relate<ts::ChildOf>(mid, root);
    w.relate<ts::ChildOf>(leaf, mid);
    const ts::Entity outside = w.spawn(Local{});
    std::set<ts::Entity> marked;
    w.query<const Local&, ts::Up<const Marked*>>().each(
        [&](ts::Entity e, const Local&, const Marked* m) {
            if (m != nullptr) marked.insert(e);
        });
    EXPECT_EQ(marked, (std::set<ts::Entity>{mid, leaf}));
    (void)outside;
}

TEST(Traverse, UpSeesReparentingAndDespawnsBetweenRuns) {
    ts::World w;
    const ts::Entity a = w.spawn(Armor{1});
    const ts::Entity b = w.spawn(Armor{2});
    const ts::Entity child = w.spawn(Local{});
    w.relate<ts::ChildOf>(child, a);
    auto q = w.query<const Local&, ts::Up<const Armor*>>();
    int got = 0;
    const auto read = [&] {
        got = -1;
        q.each([&](const Local&, const Armor* p) { got = p == nullptr ? 0 : p->value; });
    };
    read();
    EXPECT_EQ(got, 1);
    w.unrelate<ts::ChildOf>(child, a);
    w.relate<ts::ChildOf>(child, b);
    read();
    EXPECT_EQ(got, 2);
    w.remove<Armor>(b);
    read();
    EXPECT_EQ(got, 0);
}

TEST(Traverse, EachChunkGivesAnUpColumn) {
    ts::World w;
    const ts::Entity root = w.spawn(Armor{5});
    Entities kids;
    for (int i = 0; i < 4; ++i) kids.push_back(w.spawn(Local{i}));
    for (std::size_t i = 0; i < 3; ++i) w.relate<ts::ChildOf>(kids[i], root);
    std::map<ts::Entity, const Armor*> got;
    w.query<const Local&, ts::Up<const Armor&>>().each_chunk(
        [&](ts::Chunk& c, std::span<const Local> locals, ts::UpColumn<Armor> up) {
            ASSERT_EQ(up.size(), locals.size());
            for (std::size_t i = 0; i < c.count(); ++i) got[c.entities()[i]] = up[i];
        });
    ASSERT_EQ(got.size(), 4u);  // a chunk has every row: the & form's skip is per-row loops'
    for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(got[kids[i]], w.try_get<Armor>(root));
    EXPECT_EQ(got[kids[3]], nullptr);
}

TEST(Traverse, ParEachMatchesEach) {
    ts::World w;
    std::mt19937 rng(7);
    Entities all;
    for (int i = 0; i < 3000; ++i) {
        const ts::Entity e = i % 5 == 0 ? w.spawn(Local{i}, Armor{i}) : w.spawn(Local{i});
        if (!all.empty() && rng() % 4 != 0) w.relate<ts::ChildOf>(e, all[rng() % all.size()]);
        all.push_back(e);
    }
    auto q = w.query<Total&, const Local&, ts::Up<const Armor&>>();
    for (const ts::Entity e : all) w.add(e, Total{-1});
    q.par_each([](Total& t, const Local& l, const Armor& a) { t.value = l.value + a.value; });
    for (const ts::Entity e : all) {
        const ts::Entity src = nearest_with<Armor>(w, e);
        const int expected = src ? w.get<Local>(e).value + w.get<Armor>(src).value : -1;
        ASSERT_EQ(w.get<Total>(e).value, expected);
    }
}

TEST(Traverse, DespawnAllSkipsRowsAnUpReferenceSkips) {
    ts::World w;
    const ts::Entity root = w.spawn(Armor{1});
    const ts::Entity child = w.spawn(Local{});
    const ts::Entity orphan = w.spawn(Local{});
    w.relate<ts::ChildOf>(child, root);
    auto q = w.query<const Local&, ts::Up<const Armor&>>();
    EXPECT_EQ(w.despawn_all(q), 1u);
    EXPECT_FALSE(w.is_alive(child));
    EXPECT_TRUE(w.is_alive(orphan));
    EXPECT_TRUE(w.is_alive(root));
}

TEST(Traverse, ASystemWithAnUpTermReadsTheComponent) {
    ts::World w;
    const ts::Entity root = w.spawn(Armor{4});
    const ts::Entity child = w.spawn(Local{}, Total{});
    w.relate<ts::ChildOf>(child, root);
    ts::Schedule schedule;
    schedule.add("inherit", [](ts::View<Total&, ts::Up<const Armor&>> v) {
        v.each([](Total& t, const Armor& a) { t.value = a.value; });
    });
    schedule.run(w);
    EXPECT_EQ(w.get<Total>(child).value, 4);
    const std::vector<ts::SystemStats> stats = schedule.stats();
    ASSERT_EQ(stats.size(), 1u);
    const std::string armor(ts::component_info(ts::component_id<Armor>()).name);
    EXPECT_NE(std::find(stats[0].reads.begin(), stats[0].reads.end(), armor), stats[0].reads.end());
    EXPECT_EQ(std::find(stats[0].writes.begin(), stats[0].writes.end(), armor),
              stats[0].writes.end());
}

TEST(Traverse, ACascadeViewVisitsParentsFirst) {
    ts::World w;
    const ts::Entity leaf = w.spawn(Local{1}, Total{});
    const ts::Entity mid = w.spawn(Local{1}, Total{});
    const ts::Entity root = w.spawn(Local{1}, Total{});
    w.relate<ts::ChildOf>(mid, root);
    w.relate<ts::ChildOf>(leaf, mid);
    ts::Schedule schedule;
    schedule.add("sum", [](ts::View<Total&, const Local&, ts::Up<const Total*>, ts::Cascade> v) {
        v.each([](Total& t, const Local& l, const Total* up) {
            t.value = l.value + (up == nullptr ? 0 : up->value);
        });
    });
    schedule.run(w);
    EXPECT_EQ(w.get<Total>(leaf).value, 3);
    EXPECT_EQ(w.get<Total>(root).value, 1);
}

// ---- cascade ------------------------------------------------------------------------------

/// Checks that `order` visits exactly `expected` (as a set), every entity after its first
/// parent when that parent is visited too, and depths never decrease.
void expect_depth_order(const ts::World& w, const Entities& order, std::set<ts::Entity> expected) {
    std::set<ts::Entity> seen;
    std::size_t last_depth = 0;
    for (const ts::Entity e : order) {
        ASSERT_TRUE(seen.insert(e).second) << "visited twice: " << e;
        const std::size_t d = depth_of(w, e);
        ASSERT_GE(d, last_depth) << e;
        last_depth = d;
        for (ts::Entity p = w.parent(e); p; p = w.parent(p)) {
            if (expected.count(p) != 0) {
                ASSERT_TRUE(seen.count(p) != 0) << p << " after " << e;
            }
        }
    }
    EXPECT_EQ(seen, expected);
}

TEST(Cascade, VisitsParentsBeforeChildrenRootsFirst) {
    ts::World w;
    // Children spawned before their parents: table order is the reverse of depth order.
    const ts::Entity c2 = w.spawn(Local{2});
    const ts::Entity c1 = w.spawn(Local{1});
    const ts::Entity root = w.spawn(Local{0});
    const ts::Entity loner = w.spawn(Local{9});
    w.relate<ts::ChildOf>(c1, root);
    w.relate<ts::ChildOf>(c2, c1);
    auto q = w.query<const Local&>();
    q.cascade();
    EXPECT_TRUE(q.cascading());
    Entities order;
    q.each([&](ts::Entity e, const Local&) { order.push_back(e); });
    // Depth 0 in table order (loner's and root's tables), then c1, then c2.
    ASSERT_EQ(order.size(), 4u);
    EXPECT_EQ(std::set<ts::Entity>(order.begin(), order.begin() + 2),
              (std::set<ts::Entity>{root, loner}));
    EXPECT_EQ(order[2], c1);
    EXPECT_EQ(order[3], c2);
}

TEST(Cascade, AChildReadsWhatItsParentWroteEarlierInTheRun) {
    ts::World w;
    const ts::Entity root = w.spawn(Local{1}, Total{});
    Entities chain{root};
    for (int i = 0; i < 5; ++i) {
        const ts::Entity e = w.spawn(Local{1}, Total{});
        chain.push_back(e);
    }
    // Relate deepest first, so rows sit in the wrong order for a plain loop.
    for (std::size_t i = chain.size() - 1; i > 0; --i)
        w.relate<ts::ChildOf>(chain[i], chain[i - 1]);
    auto q = w.query<Total&, const Local&, ts::Up<const Total*>>().cascade();
    q.each([](Total& t, const Local& l, const Total* up) {
        t.value = l.value + (up == nullptr ? 0 : up->value);
    });
    for (std::size_t i = 0; i < chain.size(); ++i)
        EXPECT_EQ(w.get<Total>(chain[i]).value, static_cast<int>(i + 1));
}

TEST(Cascade, OrderIsKeptWhileNothingChangesAndRebuiltAfterAChange) {
    CountingResource mr;
    ts::World w(&mr);
    Entities all;
    for (int i = 0; i < 100; ++i) {
        const ts::Entity e = w.spawn(Local{i});
        if (i > 0) w.relate<ts::ChildOf>(e, all[static_cast<std::size_t>(i) / 2]);
        all.push_back(e);
    }
    auto q = w.query<const Local&>().cascade();
    EXPECT_EQ(q.cascade_builds(), 0u);
    std::size_t n = 0;
    q.each([&](const Local&) { ++n; });
    EXPECT_EQ(q.cascade_builds(), 1u);
    const std::size_t before = mr.allocations;
    for (int i = 0; i < 50; ++i) q.each([&](const Local&) { ++n; });
    EXPECT_EQ(q.cascade_builds(), 1u);
    EXPECT_EQ(mr.allocations, before);  // a steady state allocates nothing
    EXPECT_EQ(n, 51u * 100u);

    // A write changes nothing structural: no rebuild.
    w.get_mut<Local>(all[3]).value = 42;
    q.each([](const Local&) {});
    EXPECT_EQ(q.cascade_builds(), 1u);

    // A re-parent: rebuilt, and the order follows it.
    w.unrelate<ts::ChildOf>(all[99]);
    w.relate<ts::ChildOf>(all[1], all[99]);
    Entities order;
    q.each([&](ts::Entity e, const Local&) { order.push_back(e); });
    EXPECT_EQ(q.cascade_builds(), 2u);
    expect_depth_order(w, order, std::set<ts::Entity>(all.begin(), all.end()));

    // A spawn into a matched table: rebuilt.
    const ts::Entity extra = w.spawn(Local{});
    all.push_back(extra);
    order.clear();
    q.each([&](ts::Entity e, const Local&) { order.push_back(e); });
    EXPECT_EQ(q.cascade_builds(), 3u);
    expect_depth_order(w, order, std::set<ts::Entity>(all.begin(), all.end()));
}

TEST(Cascade, ParEachRunsLevelByLevel) {
    ts::World w;
    std::mt19937 rng(11);
    Entities all;
    // Spawned in random order, related to random earlier ones: rows out of depth order.
    for (int i = 0; i < 4000; ++i) all.push_back(w.spawn(Local{1}, Total{}));
    std::shuffle(all.begin(), all.end(), rng);
    for (std::size_t i = 1; i < all.size(); ++i) {
        if (rng() % 8 != 0) w.relate<ts::ChildOf>(all[i], all[rng() % i]);
    }
    auto q = w.query<Total&, const Local&, ts::Up<const Total*>>().cascade();
    q.par_each([](Total& t, const Local& l, const Total* up) {
        t.value = l.value + (up == nullptr ? 0 : up->value);
    });
    for (const ts::Entity e : all)
        ASSERT_EQ(w.get<Total>(e).value, static_cast<int>(depth_of(w, e) + 1)) << e;
}

TEST(Cascade, ChunksVisitWholeTables) {
    ts::World w;
    const ts::Entity root = w.spawn(Local{});
    const ts::Entity child = w.spawn(Local{});
    w.relate<ts::ChildOf>(child, root);
    auto q = w.query<const Local&>().cascade();
    std::size_t rows = 0;
    for (ts::Chunk& c : q.chunks()) rows += c.count();
    EXPECT_EQ(rows, 2u);
    rows = 0;
    q.each_chunk([&](ts::Chunk& c, std::span<const Local>) { rows += c.count(); });
    EXPECT_EQ(rows, 2u);
}

TEST(Cascade, OnAnEmptyQueryThrows) {
    ts::Query<const Local&> q;
    try {
        q.cascade();
        FAIL() << "no throw";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
    }
}

TEST(Cascade, AChainTenThousandDeepHasNoDepthLimit) {
    // docs/limits.md: the hierarchy has no depth limit; Up and cascade walk it with loops.
    ts::World w;
    constexpr int depth = 10000;
    Entities chain;
    for (int i = 0; i < depth; ++i) chain.push_back(w.spawn(Local{1}, Total{}));
    w.add(chain.front(), Armor{5});
    // Related leaf first and spawned root first; then reversed rows: depth order is not row order.
    for (int i = depth - 1; i > 0; --i)
        w.relate<ts::ChildOf>(chain[static_cast<std::size_t>(i)],
                              chain[static_cast<std::size_t>(i) - 1]);
    auto q = w.query<Total&, const Local&, ts::Up<const Total*>>().cascade();
    q.each([](Total& t, const Local& l, const Total* up) {
        t.value = l.value + (up == nullptr ? 0 : up->value);
    });
    EXPECT_EQ(w.get<Total>(chain.back()).value, depth);
    int armor = 0;
    w.query<const Local&, ts::Up<const Armor&>>().each(
        [&](ts::Entity e, const Local&, const Armor& a) {
            if (e == chain.back()) armor = a.value;  // 9,999 steps up
        });
    EXPECT_EQ(armor, 5);
}

// ---- cascade with Up terms: rows grouped by first parent ---------------------------------------

/// The sum of the Locals on `e`'s path to its root (first parents), by hand.
int path_sum(const ts::World& w, ts::Entity e) {
    int sum = 0;
    for (ts::Entity p = e; p; p = w.parent(p)) sum += w.get<Local>(p).value;
    return sum;
}

/// Total = Local + the parent's Total of this run (null: none).
void add_parent(Total& t, const Local& l, const Total* up) {
    t.value = l.value + (up == nullptr ? 0 : up->value);
}

/// Checks every entity of `es` holds `path_sum` in its Total.
void expect_path_sums(const ts::World& w, const Entities& es) {
    for (const ts::Entity e : es) EXPECT_EQ(w.get<Total>(e).value, path_sum(w, e)) << e;
}

TEST(Cascade, UpRowsWhoseParentsAlternateReadTheirOwnParent) {
    ts::World w;
    // Two parents in different tables (one is Marked), children related alternately: no two
    // consecutive rows share a parent, and the parent's table changes from row to row.
    const ts::Entity a = w.spawn(Local{1}, Total{});
    const ts::Entity b = w.spawn(Local{100}, Total{}, Marked{});
    Entities all{a, b};
    Entities kids;
    for (int i = 0; i < 9; ++i) {
        const ts::Entity k = w.spawn(Local{10 + i}, Total{});
        w.relate<ts::ChildOf>(k, i % 2 == 0 ? a : b);
        kids.push_back(k);
        all.push_back(k);
    }
    // Grandchildren: three under one kid together, then one under each of the others.
    for (int i = 0; i < 3; ++i) {
        const ts::Entity g = w.spawn(Local{1000}, Total{});
        w.relate<ts::ChildOf>(g, kids[4]);
        all.push_back(g);
    }
    for (const ts::Entity k : kids) {
        const ts::Entity g = w.spawn(Local{2000}, Total{});
        w.relate<ts::ChildOf>(g, k);
        all.push_back(g);
    }
    auto q = w.query<Total&, const Local&, ts::Up<const Total*>>().cascade();
    q.each(add_parent);
    expect_path_sums(w, all);
    // Each row is passed its own first parent's Total, with the entity form too.
    std::size_t rows = 0;
    q.each([&](ts::Entity e, Total&, const Local&, const Total* up) {
        ++rows;
        const ts::Entity p = w.parent(e);
        EXPECT_EQ(up, p ? w.try_get<Total>(p) : nullptr) << e;
    });
    EXPECT_EQ(rows, all.size());
}

TEST(Cascade, UpReadsAncestorsOutsideTheMatchedTablesAndWalksUp) {
    ts::World w;
    // armored (Armor, no Local: outside the query's tables) -> bare (no Armor) -> kids; a
    // matched parent with Armor -> kids; a matched parent without Armor above -> kids; a tag
    // on an unmatched ancestor.
    const ts::Entity armored = w.spawn(Armor{5});
    w.add<Marked>(armored);
    const ts::Entity bare = w.spawn(Local{1}, Total{});
    w.relate<ts::ChildOf>(bare, armored);
    const ts::Entity matched = w.spawn(Local{1}, Total{}, Armor{7});
    const ts::Entity plain = w.spawn(Local{1}, Total{});
    Entities all{bare, matched, plain};
    for (int i = 0; i < 12; ++i) {
        const ts::Entity k = w.spawn(Local{1}, Total{});
        w.relate<ts::ChildOf>(k, i % 3 == 0 ? bare : i % 3 == 1 ? matched : plain);
        all.push_back(k);
    }
    std::size_t rows = 0;
    w.query<Total&, const Local&, ts::Up<const Armor*>>().cascade().each(
        [&](ts::Entity e, Total&, const Local&, const Armor* a) {
            ++rows;
            const ts::Entity src = nearest_with<Armor>(w, e);
            EXPECT_EQ(a, src ? w.try_get<Armor>(src) : nullptr) << e;
        });
    EXPECT_EQ(rows, all.size());
    std::set<ts::Entity> marked;
    w.query<const Local&, ts::Up<const Marked*>>().cascade().each(
        [&](ts::Entity e, const Local&, const Marked* m) {
            if (m != nullptr) marked.insert(e);
        });
    std::set<ts::Entity> want;
    for (const ts::Entity e : all)
        if (nearest_with<Marked>(w, e)) want.insert(e);
    EXPECT_EQ(marked, want);
}

TEST(Cascade, UpReferenceSkipsParentsWithoutAnAncestorAndStampsVisitedRowsOnly) {
    ts::World w;
    const ts::Entity armored = w.spawn(Local{1}, Total{}, Armor{3});
    const ts::Entity bare = w.spawn(Local{1}, Total{});
    Entities kids;
    for (int i = 0; i < 10; ++i) {
        const ts::Entity k = w.spawn(Local{1}, Total{});
        // Rows under either parent in runs of one to three.
        w.relate<ts::ChildOf>(k, (i == 0 || i == 3 || i == 4 || i == 8) ? armored : bare);
        kids.push_back(k);
    }
    auto changed = w.query<ts::Entity>().changed<Total>();
    changed.each([](ts::Entity) {});  // the first run sees every row
    Entities visited;
    w.query<Total&, const Local&, ts::Up<const Armor&>>().cascade().each(
        [&](ts::Entity e, Total& t, const Local&, const Armor& a) {
            t.value = a.value;
            visited.push_back(e);
        });
    const Entities want{kids[0], kids[3], kids[4], kids[8]};
    EXPECT_EQ(visited, want);  // one table, one depth: rows in table order
    Entities stamped;
    changed.each([&](ts::Entity e) { stamped.push_back(e); });
    EXPECT_EQ(std::set<ts::Entity>(stamped.begin(), stamped.end()),
              std::set<ts::Entity>(want.begin(), want.end()));
}

TEST(Cascade, UpGroupsFollowChangesBetweenRuns) {
    ts::World w;
    const ts::Entity a = w.spawn(Local{1}, Total{});
    const ts::Entity b = w.spawn(Local{100}, Total{});
    Entities all{a, b};
    Entities kids;
    for (int i = 0; i < 6; ++i) {
        const ts::Entity k = w.spawn(Local{10}, Total{});
        w.relate<ts::ChildOf>(k, i < 3 ? a : b);  // two groups of three
        kids.push_back(k);
        all.push_back(k);
    }
    auto q = w.query<Total&, const Local&, ts::Up<const Total*>>().cascade();
    q.each(add_parent);
    expect_path_sums(w, all);
    ASSERT_EQ(q.cascade_builds(), 1u);

    // A write to a parent: no rebuild, its children read the new value.
    w.get_mut<Local>(a).value = 2;
    q.each(add_parent);
    EXPECT_EQ(q.cascade_builds(), 1u);
    expect_path_sums(w, all);

    // The middle child of a's group changes its first parent and keeps its row and table.
    w.relate<ts::ChildOf>(kids[1], b);
    w.unrelate<ts::ChildOf>(kids[1], a);
    ASSERT_EQ(w.parent(kids[1]), b);
    q.each(add_parent);
    EXPECT_EQ(q.cascade_builds(), 2u);
    expect_path_sums(w, all);

    // A parent moves to another table (its row changes): rebuilt, read at its new row.
    w.add<Marked>(b);
    q.each(add_parent);
    EXPECT_EQ(q.cascade_builds(), 3u);
    expect_path_sums(w, all);

    // A parent leaves the query's tables: read through its record.
    w.remove<Local>(a);
    w.get_mut<Total>(a).value = 50;
    q.each(add_parent);
    for (std::size_t i = 0; i < kids.size(); ++i) {
        const int up = w.parent(kids[i]) == a ? 50 : path_sum(w, b);
        EXPECT_EQ(w.get<Total>(kids[i]).value, 10 + up) << i;
    }

    // A parent despawned: its children go with it; the rest still add up.
    w.despawn(b);
    q.each(add_parent);
    for (const ts::Entity k : kids) {
        if (w.is_alive(k)) {
            EXPECT_EQ(w.get<Total>(k).value, 60) << k;
        }
    }
}

TEST(Cascade, ParEachOfAnUpCascadeSplitsGroupsAcrossWorkers) {
    ts::World w;
    // Big groups (3,000 children of one root) and small ones (two grandchildren each), so the
    // workers' ranges begin inside groups.
    const ts::Entity root = w.spawn(Local{1}, Total{});
    Entities all{root};
    Entities kids;
    for (int i = 0; i < 3000; ++i) {
        const ts::Entity k = w.spawn(Local{i % 5}, Total{});
        w.relate<ts::ChildOf>(k, root);
        kids.push_back(k);
        all.push_back(k);
    }
    for (const ts::Entity k : kids) {
        for (int j = 0; j < 2; ++j) {
            const ts::Entity g = w.spawn(Local{j + 1}, Total{});
            w.relate<ts::ChildOf>(g, k);
            all.push_back(g);
        }
    }
    auto q = w.query<Total&, const Local&, ts::Up<const Total*>>().cascade();
    q.par_each(add_parent);
    expect_path_sums(w, all);
    w.get_mut<Local>(root).value = 7;
    q.par_each(add_parent);
    expect_path_sums(w, all);
}

TEST(Cascade, UpRowsOfTablesWithEnableFlagsSkipDisabledRows) {
    ts::World w;
    // Children in a table with Toggle (flags: the row path) and in one without (groups).
    const ts::Entity root = w.spawn(Local{1}, Total{});
    Entities toggled;
    Entities plain;
    for (int i = 0; i < 6; ++i) {
        const ts::Entity t = w.spawn(Local{10}, Total{}, Toggle{});
        w.relate<ts::ChildOf>(t, root);
        toggled.push_back(t);
        const ts::Entity p = w.spawn(Local{20}, Total{});
        w.relate<ts::ChildOf>(p, root);
        plain.push_back(p);
    }
    w.enable<Toggle>(toggled[2], false);
    auto q = w.query<Total&, const Local&, ts::Up<const Total*>, const Toggle*>().cascade();
    q.each([](Total& t, const Local& l, const Total* up, const Toggle*) {
        t.value = l.value + (up == nullptr ? 0 : up->value);
    });
    for (std::size_t i = 0; i < 6; ++i) {
        EXPECT_EQ(w.get<Total>(plain[i]).value, 21) << i;
        EXPECT_EQ(w.get<Total>(toggled[i]).value, i == 2 ? 0 : 11) << i;
    }
}

// ---- model-based randomized test ------------------------------------------------------------

TEST(TraverseModel, RandomHierarchiesMatchAReferenceWalk) {
    for (unsigned seed = 1; seed <= 6; ++seed) {
        std::mt19937 rng(seed);
        ts::World w;
        Entities live;
        auto up = w.query<const Local&, ts::Up<const Armor*>>();
        auto up_ref = w.query<ts::Up<const Armor&>>().cascade();
        auto cascade = w.query<const Local&>().cascade();
        auto cascade_up = w.query<Total&, const Local&, ts::Up<const Total*>>().cascade();
        for (int round = 0; round < 60; ++round) {
            // Random changes between runs.
            const int ops = 1 + static_cast<int>(rng() % 12);
            for (int k = 0; k < ops; ++k) {
                const unsigned op = rng() % 10;
                if (op < 3 || live.size() < 4) {
                    const ts::Entity e = rng() % 3 == 0
                                             ? w.spawn(Local{1}, Armor{int(rng() % 100)}, Total{})
                                             : w.spawn(Local{1}, Total{});
                    live.push_back(e);
                } else if (op < 6) {
                    const ts::Entity c = live[rng() % live.size()];
                    const ts::Entity p = live[rng() % live.size()];
                    try {
                        w.relate<ts::ChildOf>(c, p);
                    } catch (const ts::Error& e) {
                        ASSERT_EQ(e.code(), ts::errc::hierarchy_cycle);
                    }
                } else if (op < 7) {
                    w.unrelate<ts::ChildOf>(live[rng() % live.size()]);
                } else if (op < 8) {
                    const ts::Entity e = live[rng() % live.size()];
                    if (w.has<Armor>(e))
                        w.remove<Armor>(e);
                    else
                        w.add(e, Armor{int(rng() % 100)});
                } else if (op < 9) {
                    const ts::Entity e = live[rng() % live.size()];
                    if (w.has<Marked>(e))
                        w.remove<Marked>(e);
                    else
                        w.add<Marked>(e);  // moves rows between tables
                } else {
                    w.despawn(live[rng() % live.size()]);  // children cascade
                }
                live.erase(std::remove_if(live.begin(), live.end(),
                                          [&](ts::Entity e) { return !w.is_alive(e); }),
                           live.end());
            }
            if (round % 15 == 14) {
                // More first-parent changes than the ring of recent ones holds (256): the next
                // build forgets every depth instead of the changed subtrees.
                for (int k = 0; k < 300; ++k) {
                    const ts::Entity c = live[rng() % live.size()];
                    w.unrelate<ts::ChildOf>(c);
                    try {
                        w.relate<ts::ChildOf>(c, live[rng() % live.size()]);
                    } catch (const ts::Error& e) {
                        ASSERT_EQ(e.code(), ts::errc::hierarchy_cycle);
                    }
                }
            }
            // Up: every row against the reference walk.
            std::size_t rows = 0;
            up.each([&](ts::Entity e, const Local&, const Armor* a) {
                ++rows;
                const ts::Entity src = nearest_with<Armor>(w, e);
                ASSERT_EQ(a, src ? w.try_get<Armor>(src) : nullptr) << "seed " << seed << ' ' << e;
            });
            ASSERT_EQ(rows, live.size());
            std::set<ts::Entity> with_ancestor;
            for (const ts::Entity e : live)
                if (nearest_with<Armor>(w, e)) with_ancestor.insert(e);
            Entities order;
            up_ref.each([&](ts::Entity e, const Armor&) { order.push_back(e); });
            expect_depth_order(w, order, with_ancestor);
            // Cascade: the order property, and a sum down the hierarchy in one run.
            order.clear();
            cascade.each([&](ts::Entity e, const Local&) { order.push_back(e); });
            expect_depth_order(w, order, std::set<ts::Entity>(live.begin(), live.end()));
            const auto sum = [](Total& t, const Local& l, const Total* p) {
                t.value = l.value + (p == nullptr ? 0 : p->value);
            };
            if (round % 2 == 0)
                cascade_up.each(sum);
            else
                cascade_up.par_each(sum);
            for (const ts::Entity e : live)
                ASSERT_EQ(w.get<Total>(e).value, static_cast<int>(depth_of(w, e) + 1))
                    << "seed " << seed << " round " << round << ' ' << e;
            if (::testing::Test::HasFatalFailure()) return;
        }
    }
}

}  // namespace
