// Tests for include/tessera/chunk.hpp: a Chunk's rows, typed and untyped columns, enable flags and
// change ticks by row. (The ways queries hand out chunks are tested in test_query.cpp.)
#include <tessera/chunk.hpp>
#include <tessera/query.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace ts = tessera;

namespace {

struct Position {
    float x = 0, y = 0;
    bool operator==(const Position&) const = default;
};
struct Velocity {
    float dx = 0, dy = 0;
};
struct Frozen {};
struct Ai {
    int state = 0;
};

}  // namespace

template <>
struct tessera::component_traits<Ai> {
    static constexpr bool enableable = true;
};

namespace {

/// The chunks `collect_chunks` gives for `spec`.
std::vector<ts::Chunk> chunks_of(ts::World& w, const ts::QuerySpec& spec) {
    std::vector<ts::Chunk> out;
    w.collect_chunks(spec, out);
    return out;
}

}  // namespace

TEST(Chunk, RowsAreTheTableInRowOrderWithOneColumnPerComponent) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 5; ++i)
        es.push_back(w.spawn(Position{float(i), 0}, Velocity{0, float(i)}, Frozen{}));
    const auto chunks = chunks_of(w, ts::QuerySpec().with<Position>());
    ASSERT_EQ(chunks.size(), 1u);
    const ts::Chunk& c = chunks[0];
    ASSERT_EQ(c.count(), 5u);
    EXPECT_EQ(std::vector<ts::Entity>(c.entities().begin(), c.entities().end()), es);
    const std::span<const Position> p = c.column<const Position>();
    const std::span<Velocity> v = c.column<Velocity>();
    ASSERT_EQ(p.size(), 5u);
    ASSERT_EQ(v.size(), 5u);
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(p[i].x, float(i)) << "row i belongs to entities()[i]";
        EXPECT_EQ(v[i].dy, float(i));
    }
    v[2].dx = 7;  // a column is the table's storage
    EXPECT_EQ(w.get<Velocity>(es[2]).dx, 7.0f);
    EXPECT_TRUE(c.has<Frozen>());
    EXPECT_TRUE(c.column<Frozen>().empty()) << "a tag has no column";
    EXPECT_FALSE(c.has<Ai>());
    EXPECT_TRUE(c.column<Ai>().empty()) << "an absent component gives an empty column";
    EXPECT_EQ(c.archetype().size, 5u);
}

TEST(Chunk, UntypedAccessByComponentId) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 2}, Frozen{});
    const ts::Entity b = w.spawn(Position{3, 4}, Frozen{});
    const ts::ComponentId pos = ts::component_id<Position>();
    const ts::ComponentId frozen = ts::component_id<Frozen>();
    const ts::ComponentId vel = ts::component_id<Velocity>();
    EXPECT_EQ(w.changed_tick<Position>(a), 1u);  // tracking on
    w.advance_tick();                            // 2
    const auto chunks = chunks_of(w, ts::QuerySpec().with<Position>());
    ASSERT_EQ(chunks.size(), 1u);
    const ts::Chunk& c = chunks[0];
    EXPECT_TRUE(c.has(pos));
    EXPECT_TRUE(c.has(frozen));
    EXPECT_FALSE(c.has(vel));
    std::byte* bytes = c.column_bytes(pos);
    ASSERT_NE(bytes, nullptr);
    Position second;
    std::memcpy(&second, bytes + ts::component_info(pos).size, sizeof second);
    EXPECT_EQ(second, (Position{3, 4}));
    EXPECT_EQ(c.column_bytes(frozen), nullptr) << "a tag has no column";
    EXPECT_EQ(c.column_bytes(vel), nullptr);
    EXPECT_EQ(c.enabled(pos), nullptr) << "not enableable: no flags";
    c.mark_changed(pos, 1);
    EXPECT_EQ(w.changed_tick<Position>(b), 2u);
    EXPECT_EQ(w.changed_tick<Position>(a), 1u) << "only the row marked";
    c.mark_changed(vel, 0);  // absent: nothing happens
}

TEST(Chunk, EnabledFlagsOfAnEnableableComponent) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{}, Ai{});
    const ts::Entity b = w.spawn(Position{}, Ai{});
    w.spawn(Position{});
    w.enable<Ai>(b, false);
    const auto chunks = chunks_of(w, ts::QuerySpec().with<Position>());
    ASSERT_EQ(chunks.size(), 2u);
    for (const ts::Chunk& c : chunks) {
        if (!c.has<Ai>()) {
            EXPECT_TRUE(c.enabled<Ai>().empty()) << "absent: no flags";
            continue;
        }
        const std::span<const std::uint8_t> on = c.enabled<Ai>();
        ASSERT_EQ(on.size(), 2u);
        ASSERT_EQ(c.entities()[0], a);
        EXPECT_EQ(on[0], 1);
        EXPECT_EQ(on[1], 0) << "chunks keep disabled rows and expose the flag";
        ASSERT_NE(c.enabled(ts::component_id<Ai>()), nullptr);
        EXPECT_EQ(c.enabled(ts::component_id<Ai>())[1], 0);
    }
}

TEST(Chunk, EnabledOfAComponentThatIsNotEnableableThrows) {
    ts::World w;
    w.spawn(Position{}, Frozen{});
    const auto chunks = chunks_of(w, ts::QuerySpec().with<Position>());
    ASSERT_EQ(chunks.size(), 1u);
    try {
        (void)chunks[0].enabled<Position>();
        FAIL() << "expected not_enableable";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::not_enableable);
    }
    try {
        (void)chunks[0].enabled<Frozen>();
        FAIL() << "expected not_enableable (a tag not declared enableable)";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::not_enableable);
    }
}

TEST(Chunk, DefaultConstructedChunkIsAssignable) {
    ts::World w;
    w.spawn(Position{5, 6});
    ts::Chunk c;
    const auto chunks = chunks_of(w, ts::QuerySpec().with<Position>());
    ASSERT_EQ(chunks.size(), 1u);
    c = chunks[0];
    EXPECT_EQ(c.count(), 1u);
    EXPECT_EQ(c.column<const Position>()[0], (Position{5, 6}));
}

TEST(Chunk, MarkChangedAndTickQueriesAreStrict) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{}, Velocity{});
    const ts::Entity b = w.spawn(Position{}, Velocity{});
    EXPECT_EQ(w.changed_tick<Position>(a), 1u);  // turns tracking on at tick 1
    w.advance_tick();
    w.advance_tick();  // tick 3
    auto q = w.query<const Position&>();
    for (ts::Chunk& c : q.chunks()) {
        ASSERT_EQ(c.count(), 2u);
        ASSERT_EQ(c.entities()[1], b);
        c.mark_changed<Position>(1);
        EXPECT_TRUE(c.changed_since<Position>(1, 2));
        EXPECT_FALSE(c.changed_since<Position>(1, 3)) << "strict >";
        EXPECT_FALSE(c.changed_since<Position>(0, 1));
        EXPECT_TRUE(c.changed_since<Position>(0, 0));
        EXPECT_TRUE(c.added_since<Position>(0, 0));
        EXPECT_FALSE(c.added_since<Position>(0, 1)) << "strict >";
        // Velocity: tracking is turned on by the call itself, stamping the current tick.
        EXPECT_TRUE(c.changed_since<Velocity>(0, 2));
        EXPECT_FALSE(c.changed_since<Velocity>(0, 3));
    }
    EXPECT_EQ(w.changed_tick<Position>(b), 3u);
    EXPECT_EQ(w.changed_tick<Position>(a), 1u) << "mark_changed stamps only its row";
    EXPECT_EQ(w.added_tick<Position>(b), 1u);
    EXPECT_EQ(w.tick(), 3u) << "chunk tick queries do not advance the tick";
}

#if TESSERA_ASSERTIONS
namespace {
struct DeathPos {
    float x = 0;
};
struct DeathVel {
    float v = 0;
};
}  // namespace

TEST(ChunkDeathTest, ReadingTicksOfATypeTheChunkLacksAborts) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_DEATH(
        {
            ts::World w;
            (void)w.spawn(DeathPos{1});
            for (ts::Chunk& c : w.query<const DeathPos&>().chunks())
                (void)c.changed_since<DeathVel>(0, 0);
        },
        "tessera: assertion failed");
}
#endif

TEST(Chunk, StrideStepsAColumnByBytes) {
    static_assert(ts::Chunk::stride<Position>() == sizeof(Position));
    static_assert(ts::Chunk::stride<Frozen>() == 0);
    struct alignas(16) Wide {
        float v[3];
    };
    static_assert(ts::Chunk::stride<Wide>() == 16);  // padded to its alignment
    ts::World w;
    for (int i = 0; i < 4; ++i) w.spawn(Position{float(i), float(-i)});
    const auto chunks = chunks_of(w, ts::QuerySpec().with<Position>());
    ASSERT_EQ(chunks.size(), 1u);
    const ts::ComponentId id = ts::component_id<Position>();
    EXPECT_EQ(ts::Chunk::stride(id), sizeof(Position));
    const std::byte* base = chunks[0].column_bytes(id);
    ASSERT_NE(base, nullptr);
    for (std::size_t row = 0; row < chunks[0].count(); ++row) {
        Position p;
        std::memcpy(&p, base + row * ts::Chunk::stride(id), sizeof p);
        EXPECT_EQ(p, (Position{float(row), -float(row)}));
    }
    EXPECT_EQ(ts::Chunk::stride(ts::component_id<Frozen>()), 0u);
    EXPECT_EQ(ts::Chunk::stride(ts::ComponentId{}), 0u);  // no component has it
}
