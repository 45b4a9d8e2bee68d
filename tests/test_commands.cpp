#include <tessera/commands.hpp>
#include <tessera/query.hpp>

#include "common/counting_resource.hpp"
#include "common/emplace_types.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ts = tessera;
using ts::test::Tracked;

namespace {
struct Position {
    float x = 0, y = 0;
    bool operator==(const Position&) const = default;
};
struct Name {
    std::string s;
};
struct Frozen {};
struct alignas(64) Wide {
    double v[4] = {};
};
}  // namespace

TEST(CommandBuffer, RecordsWithoutTouchingTheWorldAndAppliesInOrder) {
    ts::World w;
    const ts::Entity existing = w.spawn(Position{1, 1});
    ts::CommandBuffer cmds;
    const ts::Entity p0 = cmds.spawn();
    const ts::Entity p1 = cmds.spawn(Position{2, 2}, Name{"p1"});
    EXPECT_TRUE(ts::CommandBuffer::is_placeholder(p0));
    EXPECT_FALSE(w.is_alive(p0));
    cmds.add(p0, Position{3, 3});
    cmds.add<Frozen>(p0);
    cmds.add(existing, Name{"late"});
    cmds.remove<Position>(existing);
    cmds.add(existing, Position{9, 9});  // after the remove: it ends with Position{9, 9}
    EXPECT_EQ(cmds.size(), 9u);
    EXPECT_EQ(w.count(), 1u);  // nothing happened yet

    EXPECT_EQ(cmds.apply(w), 9u);
    EXPECT_EQ(cmds.size(), 0u);
    EXPECT_EQ(cmds.skipped(), 0u);
    const ts::Entity r0 = cmds.resolved(p0);
    const ts::Entity r1 = cmds.resolved(p1);
    EXPECT_EQ(w.get<Position>(r0), (Position{3, 3}));
    EXPECT_TRUE(w.has<Frozen>(r0));
    EXPECT_EQ(w.get<Name>(r1).s, "p1");
    EXPECT_EQ(w.get<Position>(existing), (Position{9, 9}));
    EXPECT_EQ(w.get<Name>(existing).s, "late");
}

TEST(CommandBuffer, SkipsDespawnOfTheDeadAndRemoveOfTheAbsent) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{});
    const ts::Entity dead = w.spawn();
    w.despawn(dead);
    ts::CommandBuffer cmds;
    cmds.despawn(dead);
    cmds.remove<Name>(a);
    cmds.despawn(a);
    EXPECT_EQ(cmds.apply(w), 1u);
    EXPECT_EQ(cmds.skipped(), 2u);
    EXPECT_FALSE(w.is_alive(a));
}

TEST(CommandBuffer, AThrowingCommandLeavesItAndTheRestQueuedAndResumes) {
    Tracked::live = 0;
    {
        ts::World w;
        const ts::Entity dead = w.spawn();
        w.despawn(dead);
        ts::CommandBuffer cmds;
        const ts::Entity p = cmds.spawn(Position{1, 1});
        cmds.add(dead, Tracked{1});
        cmds.add(p, Tracked{2});
        try {
            cmds.apply(w);
            FAIL() << "expected not_alive";
        } catch (const ts::Error& e) {
            EXPECT_EQ(e.code(), ts::errc::not_alive);
        }
        // The spawn and its Position took effect and left; the failing add and the rest stay.
        EXPECT_EQ(cmds.size(), 2u);
        const ts::Entity r = cmds.resolved(p);
        EXPECT_TRUE(w.has<Position>(r));
        EXPECT_FALSE(w.has<Tracked>(r));
        EXPECT_EQ(Tracked::live, 2);  // both queued values still owned by the buffer
        // Resume with the skip policy: the dead add is skipped, p keeps its entity.
        EXPECT_EQ(cmds.apply(w, ts::on_dead::skip), 1u);
        EXPECT_EQ(cmds.skipped(), 1u);
        EXPECT_EQ(cmds.resolved(p), r);
        EXPECT_EQ(w.get<Tracked>(r).value, 2);
        EXPECT_EQ(Tracked::live, 1);
    }
    EXPECT_EQ(Tracked::live, 0);
}

TEST(CommandBuffer, ClearAndDestructionDestroyUnappliedValuesOnce) {
    Tracked::live = 0;
    {
        ts::CommandBuffer cmds;
        const ts::Entity p = cmds.spawn(Tracked{1});
        cmds.add(p, Name{std::string(100, 'x')});
        Tracked lvalue(5);
        cmds.add(p, lvalue);  // copied into the buffer
        EXPECT_EQ(Tracked::live, 3);
        cmds.clear();
        EXPECT_EQ(Tracked::live, 1);  // only the lvalue
        EXPECT_EQ(cmds.size(), 0u);
        cmds.spawn(Tracked{2}, Wide{});
        cmds.add(ts::Entity{0, 1}, Tracked{3});
        EXPECT_EQ(Tracked::live, 3);
    }
    EXPECT_EQ(Tracked::live, 0);
}

TEST(CommandBuffer, OnDeadSkipSkipsEveryCommandOfADeadEntity) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{});
    ts::CommandBuffer cmds;
    cmds.despawn(a);
    cmds.add(a, Name{"never"});
    cmds.remove<Position>(a);
    EXPECT_EQ(cmds.apply(w, ts::on_dead::skip), 1u);
    EXPECT_EQ(cmds.skipped(), 2u);
}

TEST(CommandBuffer, OverAlignedValuesAndPlaceholdersRestartAfterACompleteApply) {
    ts::World w;
    ts::CommandBuffer cmds;
    const ts::Entity p = cmds.spawn(Wide{{1, 2, 3, 4}});
    cmds.apply(w);
    const ts::Entity first = cmds.resolved(p);
    EXPECT_EQ(w.get<Wide>(first).v[3], 4);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(w.try_get<Wide>(first)) % 64, 0u);
    const ts::Entity q = cmds.spawn();  // a new batch: placeholder numbers start again
    EXPECT_EQ(q, p);
    EXPECT_THROW((void)cmds.resolved(q), ts::Error);  // not applied yet
    cmds.apply(w);
    EXPECT_NE(cmds.resolved(q), first);
    EXPECT_THROW((void)cmds.resolved(ts::Entity{0, 1}), ts::Error);  // not a placeholder
}

TEST(CommandBuffer, ApplyWhileTheWorldIteratesIsRefused) {
    ts::World w;
    w.spawn(Position{});
    ts::CommandBuffer cmds;
    cmds.spawn();
    w.query<const Position&>().each(
        [&](const Position&) { EXPECT_THROW(cmds.apply(w), ts::Error); });
    EXPECT_EQ(cmds.apply(w), 1u);
}

TEST(CommandBuffer, BuffersFilledOnThreadsAndAppliedInOrderAreDeterministic) {
    const auto run = [] {
        ts::World w;
        std::vector<ts::Entity> base;
        for (int i = 0; i < 400; ++i) base.push_back(w.spawn(Position{float(i), 0}));
        std::vector<ts::CommandBuffer> buffers(4);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&, t] {
                ts::CommandBuffer& b = buffers[std::size_t(t)];
                for (int i = t; i < 400; i += 4) {
                    if (i % 3 == 0)
                        b.despawn(base[std::size_t(i)]);
                    else
                        b.add(base[std::size_t(i)], Name{std::to_string(i)});
                    if (i % 5 == 0) b.spawn(Position{float(-i), float(t)});
                }
            });
        }
        for (std::thread& th : threads) th.join();
        for (ts::CommandBuffer& b : buffers) b.apply(w);
        std::vector<std::pair<std::uint64_t, std::string>> state;
        for (ts::Entity e : w.entities()) {
            const Name* n = w.try_get<Name>(e);
            state.emplace_back(e.to_bits(), (n ? n->s : "") + "|" +
                                                std::to_string(w.get<Position>(e).x) + "," +
                                                std::to_string(w.get<Position>(e).y));
        }
        return state;
    };
    const auto first = run();
    EXPECT_FALSE(first.empty());
    for (int i = 0; i < 5; ++i) EXPECT_EQ(run(), first);
}

TEST(CommandBuffer, UsesItsOwnMemoryResource) {
    ts::test::CountingResource mr;
    {
        ts::CommandBuffer cmds(&mr);
        cmds.spawn(Name{"x"}, Position{});
        EXPECT_GT(mr.allocations, 0u);
    }
    EXPECT_EQ(mr.outstanding, 0u);
}

using tessera::test::Picky;
using tessera::test::Pinned;

TEST(CommandBuffer, EmplaceBuildsInTheBufferAndMovesOnceWhenApplied) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 1});
    ts::CommandBuffer cmds;
    Pinned::moves = 0;
    cmds.emplace<Pinned>(e, 3);
    EXPECT_EQ(Pinned::moves, 0);
    const ts::Entity p = cmds.spawn();
    cmds.emplace<Name>(p, "qq");
    const ts::Entity other = w.spawn(Position{2, 2});
    EXPECT_THROW(cmds.emplace<Picky>(other, -1), std::invalid_argument);
    cmds.emplace<Picky>(other, 6);
    EXPECT_EQ(cmds.apply(w), 4u) << "the failed emplace recorded nothing";
    EXPECT_EQ(Pinned::moves, 1) << "once, from the buffer into the table";
    ASSERT_TRUE(w.has<Pinned>(e));
    EXPECT_EQ(w.try_get<Pinned>(e)->v, 3);
    EXPECT_EQ(w.try_get<Pinned>(e)->self, w.try_get<Pinned>(e));
    EXPECT_EQ(w.get<Picky>(other).v, 6);
    EXPECT_EQ(w.get<Name>(cmds.resolved(p)).s, "qq");
}
