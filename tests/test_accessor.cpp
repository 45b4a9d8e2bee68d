// accessor.hpp: Accessor<T> reads and writes like World::get / try_get / get_mut / try_get_mut,
// across tables, with the same errors; writes mark changed; a stale accessor aborts where
// assertions are on.
#include <tessera/accessor.hpp>
#include <tessera/query.hpp>
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ts = tessera;

namespace {
struct Pos {
    float x = 0;
};
struct Vel {
    float v = 0;
};
struct Name {
    std::string s;
};
struct Tag {};
}  // namespace

TEST(Accessor, ReadsEveryTableLikeGetAndTryGet) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 20; ++i) {
        // Four tables, all with Pos.
        if (i % 4 == 0) es.push_back(w.spawn(Pos{float(i)}));
        if (i % 4 == 1) es.push_back(w.spawn(Pos{float(i)}, Vel{}));
        if (i % 4 == 2) es.push_back(w.spawn(Pos{float(i)}, Tag{}));
        if (i % 4 == 3) es.push_back(w.spawn(Name{"n"}, Pos{float(i)}));
    }
    const ts::Entity bare = w.spawn(Vel{1});
    const ts::Entity dead = w.spawn(Pos{99});
    w.despawn(dead);
    const ts::Accessor<Pos> pos = w.accessor<Pos>();
    for (std::size_t i = 0; i < es.size(); ++i) {
        ASSERT_NE(pos.try_get(es[i]), nullptr);
        EXPECT_EQ(pos.try_get(es[i]), w.try_get<Pos>(es[i]));
        EXPECT_EQ(pos.get(es[i]).x, float(i));
        EXPECT_TRUE(pos.has(es[i]));
    }
    EXPECT_EQ(pos.try_get(bare), nullptr);
    EXPECT_FALSE(pos.has(bare));
    EXPECT_EQ(pos.try_get(dead), nullptr);
    EXPECT_EQ(pos.try_get(ts::Entity::null()), nullptr);
    EXPECT_EQ(pos.try_get(ts::Entity{1u << 30, 1}), nullptr) << "an index past the end";
    // A free slot's generation can match a forged handle: it still finds nothing.
    EXPECT_EQ(pos.try_get(ts::Entity{dead.index, dead.generation + 1}), nullptr);
}

TEST(Accessor, ErrorsNameTheCallTheEntityAndTheComponent) {
    ts::World w;
    const ts::Entity bare = w.spawn(Vel{1});
    const ts::Entity dead = w.spawn(Pos{1});
    w.despawn(dead);
    const auto pos = w.accessor<Pos>();
    const auto expect = [](ts::errc code, const std::string& op, auto&& call) {
        try {
            (void)call();
            ADD_FAILURE() << "no error from " << op;
        } catch (const ts::Error& e) {
            EXPECT_EQ(e.code(), code) << e.what();
            EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("Pos"), std::string::npos) << e.what();
        }
    };
    expect(ts::errc::missing_component, "Accessor::get", [&] { return pos.get(bare).x; });
    expect(ts::errc::not_alive, "Accessor::get", [&] { return pos.get(dead).x; });
    expect(ts::errc::missing_component, "Accessor::get_mut", [&] { return pos.get_mut(bare).x; });
    expect(ts::errc::not_alive, "Accessor::get_mut", [&] { return pos.get_mut(dead).x; });
    const ts::Accessor<Pos> none;
    EXPECT_EQ(none.try_get(bare), nullptr);
    EXPECT_EQ(none.try_get_mut(bare), nullptr);
    expect(ts::errc::not_alive, "Accessor::get", [&] { return none.get(bare).x; });
}

TEST(Accessor, WritesMarkExactlyTheRowsWritten) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 8; ++i) es.push_back(w.spawn(Pos{float(i)}));
    auto changed = w.query<ts::Entity, const Pos&>().changed<Pos>();
    changed.each([](ts::Entity, const Pos&) {});  // the first run sees every row
    const auto pos = w.accessor<Pos>();
    (void)pos.get(es[1]);  // a read marks nothing
    pos.get_mut(es[2]).x = 20;
    pos.try_get_mut(es[5])->x = 50;
    std::vector<ts::Entity> seen;
    changed.each([&](ts::Entity e, const Pos&) { seen.push_back(e); });
    EXPECT_EQ(seen, (std::vector<ts::Entity>{es[2], es[5]}));
    EXPECT_EQ(w.get<Pos>(es[2]).x, 20);
    EXPECT_EQ(w.get<Pos>(es[5]).x, 50);
    EXPECT_EQ(w.changed_tick<Pos>(es[2]), w.changed_tick<Pos>(es[5]));
}

TEST(Accessor, ANewAccessorSeesTheWorldAfterAStructuralChange) {
    ts::World w;
    const ts::Entity a = w.spawn(Pos{1});
    const auto before = w.accessor<Pos>();
    EXPECT_EQ(before.get(a).x, 1);
    w.add(a, Vel{2});  // a moves to a new table
    const ts::Entity b = w.spawn(Pos{3}, Name{"b"});
    const auto after = w.accessor<Pos>();
    EXPECT_EQ(after.get(a).x, 1);
    EXPECT_EQ(after.get(b).x, 3);
}

#if TESSERA_ASSERTIONS
TEST(AccessorDeathTest, UseAfterAChangeThatMovedItsTablesAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            ts::World w;
            const ts::Entity a = w.spawn(Pos{1});
            const auto pos = w.accessor<Pos>();
            for (int i = 0; i < 100; ++i) (void)w.spawn(Pos{float(i)});  // the index grows
            (void)pos.try_get(a);
        },
        "Accessor used after a structural change");
}
#endif
