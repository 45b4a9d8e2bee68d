#include <tessera/accessor.hpp>
#include <tessera/observer.hpp>
#include <tessera/query.hpp>
#include <tessera/serialize.hpp>
#include <tessera/world.hpp>

#include <nlohmann/json.hpp>

#include "common/counting_resource.hpp"
#include "common/emplace_types.hpp"

#include "common/tick.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ts = tessera;
using ts::test::CountingResource;
using ts::test::Tracked;

namespace {
struct Position {
    float x = 0, y = 0;
    bool operator==(const Position&) const = default;
};
struct Velocity {
    float dx = 0, dy = 0;
    bool operator==(const Velocity&) const = default;
};
struct Frozen {};
struct Enemy {};
struct Name {
    std::string s;
};
struct Owned {
    std::unique_ptr<int> p;
};
struct alignas(64) Wide {
    double v[3] = {};
};
struct ThrowingCopy {
    int v = 0;
    ThrowingCopy() = default;
    explicit ThrowingCopy(int x) : v(x) {}
    ThrowingCopy(const ThrowingCopy&) { throw std::runtime_error("copy"); }
    ThrowingCopy(ThrowingCopy&&) noexcept = default;
};
}  // namespace

TEST(World, SpawnWithoutComponentsIsAliveAndCounted) {
    ts::World w;
    EXPECT_EQ(w.count(), 0u);
    const ts::Entity e = w.spawn();
    EXPECT_TRUE(w.is_alive(e));
    EXPECT_EQ(w.count(), 1u);
    EXPECT_FALSE(w.has<Position>(e));
    EXPECT_EQ(w.archetype_count(), 1u);  // the empty archetype only
}

TEST(World, NewIndicesStartAtGenerationOne) {
    ts::World w;
    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn();
    EXPECT_EQ(a.generation, 1u);
    EXPECT_NE(a.index, b.index);
}

TEST(World, DespawnFreesIndexAndBumpsGeneration) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 2});
    EXPECT_TRUE(w.despawn(a));
    EXPECT_FALSE(w.is_alive(a));
    EXPECT_FALSE(w.despawn(a));  // already dead: false, no throw
    const ts::Entity b = w.spawn();
    EXPECT_EQ(b.index, a.index);
    EXPECT_EQ(b.generation, a.generation + 1);
    EXPECT_FALSE(w.is_alive(a));  // the stale handle stays dead after reuse
    EXPECT_FALSE(w.has<Position>(a));
    EXPECT_TRUE(w.is_alive(b));
}

TEST(World, NullForeignAndForgedHandlesAreNotAlive) {
    ts::World w;
    const ts::Entity a = w.spawn();
    EXPECT_FALSE(w.is_alive(ts::Entity::null()));
    EXPECT_FALSE(w.is_alive(ts::Entity{a.index + 100, 1}));
    EXPECT_FALSE(w.despawn(ts::Entity::null()));
    w.despawn(a);
    // The generation the slot will get next is not alive before it is issued.
    EXPECT_FALSE(w.is_alive(ts::Entity{a.index, a.generation + 1}));
    EXPECT_EQ(w.try_get<Position>(ts::Entity{a.index, a.generation + 1}), nullptr);
}

TEST(World, SpawnWithComponentsPlacesThemInOneArchetype) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2}, Velocity{3, 4});
    EXPECT_EQ(w.get<Position>(e), (Position{1, 2}));
    EXPECT_EQ(w.get<Velocity>(e), (Velocity{3, 4}));
    EXPECT_EQ(w.archetype_count(), 2u);  // empty + {Position, Velocity}: no intermediate table
    w.spawn(Velocity{}, Position{});     // any order: same archetype
    EXPECT_EQ(w.archetype_count(), 2u);
}

TEST(World, SpawnCopiesLvaluesAndMovesRvalues) {
    ts::World w;
    Name n{"lvalue"};
    const ts::Entity a = w.spawn(n);
    EXPECT_EQ(n.s, "lvalue");
    EXPECT_EQ(w.get<Name>(a).s, "lvalue");
    Name m{std::string(64, 'm')};
    const ts::Entity b = w.spawn(std::move(m));
    EXPECT_EQ(w.get<Name>(b).s, std::string(64, 'm'));
}

TEST(World, SpawnManyInitialisesEveryRowAndReturnsContiguousEntities) {
    ts::World w;
    const auto span = w.spawn_many(1000, [](std::size_t i, Position& p, Velocity& v) {
        p = {float(i), 0};
        v = {1, float(i)};
    });
    ASSERT_EQ(span.size(), 1000u);
    const std::vector<ts::Entity> ents(span.begin(), span.end());
    EXPECT_EQ(w.count(), 1000u);
    for (std::size_t i = 0; i < ents.size(); ++i) {
        EXPECT_EQ(w.get<Position>(ents[i]).x, float(i));
        EXPECT_EQ(w.get<Velocity>(ents[i]).dy, float(i));
    }
    EXPECT_EQ(w.entities(), ents);  // the span is the table's entity column
}

TEST(World, SpawnManyReusesFreedIndicesAndSupportsTags) {
    ts::World w;
    std::vector<ts::Entity> first;
    for (int i = 0; i < 10; ++i) first.push_back(w.spawn());
    for (ts::Entity e : first) w.despawn(e);
    const auto span = w.spawn_many(20, [](std::size_t, Frozen&, Position& p) { p.x = 7; });
    EXPECT_EQ(span.size(), 20u);
    for (ts::Entity e : span) {
        EXPECT_TRUE(w.has<Frozen>(e));
        EXPECT_EQ(w.get<Position>(e).x, 7);
    }
    for (ts::Entity e : first) EXPECT_FALSE(w.is_alive(e));
}

TEST(World, SpawnManyRollsBackWhenInitThrows) {
    Tracked::live = 0;
    ts::World w;
    const ts::Entity keep = w.spawn(Tracked{5});
    EXPECT_THROW(w.spawn_many(100,
                              [](std::size_t i, Tracked& t) {
                                  t.value = int(i);
                                  if (i == 50) throw std::runtime_error("init");
                              }),
                 std::runtime_error);
    EXPECT_EQ(w.count(), 1u);
    EXPECT_EQ(Tracked::live, 1);
    EXPECT_EQ(w.get<Tracked>(keep).value, 5);
    EXPECT_EQ(w.spawn_many(3, [](std::size_t, Tracked&) {}).size(), 3u);
}

TEST(World, AddNewComponentMovesRowAndKeepsValues) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    const ts::Entity other = w.spawn(Position{9, 9});
    w.add(e, Velocity{3, 4});
    EXPECT_EQ(w.get<Position>(e), (Position{1, 2}));
    EXPECT_EQ(w.get<Velocity>(e), (Velocity{3, 4}));
    EXPECT_EQ(w.get<Position>(other), (Position{9, 9}));  // the row swapped into the hole
    EXPECT_EQ(w.count(), 2u);
}

TEST(World, AddReplacesAnExistingValue) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    const std::size_t archetypes = w.archetype_count();
    w.add(e, Position{5, 6});
    EXPECT_EQ(w.get<Position>(e), (Position{5, 6}));
    EXPECT_EQ(w.archetype_count(), archetypes);
}

TEST(World, AddSeveralAtOnceMakesOneMove) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 1});
    w.add(e, Velocity{2, 2}, Name{"n"}, Position{3, 3});
    EXPECT_EQ(w.get<Position>(e), (Position{3, 3}));
    EXPECT_EQ(w.get<Velocity>(e), (Velocity{2, 2}));
    EXPECT_EQ(w.get<Name>(e).s, "n");
    EXPECT_EQ(w.archetype_count(), 3u);  // empty, {P}, {P,V,Name}: no intermediate
}

TEST(World, TagsAreAddedRemovedAndTested) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{});
    w.add<Frozen>(e);
    w.add(e, Enemy{});
    EXPECT_TRUE((w.has<Frozen, Enemy, Position>(e)));
    EXPECT_NO_THROW((void)w.get<Frozen>(e));
    EXPECT_EQ(w.try_get<Frozen>(e), nullptr);  // tags have no address
    EXPECT_TRUE(w.remove<Frozen>(e));
    EXPECT_FALSE(w.has<Frozen>(e));
    EXPECT_TRUE(w.has<Enemy>(e));
}

namespace {
template <std::size_t N>
struct Bytes {
    unsigned char b[N];
};
struct Early {  // its id comes before the Bytes types': its column is first in every table
    int v = 0;
};

template <std::size_t N>
Bytes<N> pattern(std::size_t entity) {
    Bytes<N> v{};
    for (std::size_t i = 0; i < N; ++i)
        v.b[i] = static_cast<unsigned char>(entity * 31 + i * 7 + N);
    return v;
}

template <std::size_t... N>
bool holds_patterns(const ts::World& w, ts::Entity e, std::size_t k) {
    return ((std::memcmp(w.get<Bytes<N>>(e).b, pattern<N>(k).b, N) == 0) && ...);
}
}  // namespace

TEST(World, RowMovesKeepValuesOfEverySize) {
    // Adds and removes move rows with inline copies chosen by size; every size and position
    // of the moved column (first, middle, last, a tag) must keep every byte, both for the
    // moved entity and for the last row that fills its hole.
    (void)ts::component_id<Early>();
    ts::World w;
    constexpr std::size_t n = 40;
    std::vector<ts::Entity> es;
    for (std::size_t k = 0; k < n; ++k) {
        es.push_back(w.spawn(pattern<1>(k), pattern<2>(k), pattern<3>(k), pattern<5>(k),
                             pattern<8>(k), pattern<12>(k), pattern<16>(k), pattern<17>(k),
                             pattern<40>(k)));
    }
    const auto check = [&](const char* phase) {
        for (std::size_t k = 0; k < n; ++k) {
            ASSERT_TRUE((holds_patterns<1, 2, 3, 5, 8, 12, 16, 17, 40>(w, es[k], k)))
                << phase << ", entity " << k;
        }
    };
    for (int round = 0; round < 3; ++round) {
        // Front to back, back to front, odd then even: holes in the middle and at the end.
        std::vector<std::size_t> order(n);
        for (std::size_t k = 0; k < n; ++k) {
            order[k] = round == 0   ? k
                       : round == 1 ? n - 1 - k
                                    : (k < n / 2 ? 2 * k + 1 : 2 * (k - n / 2));
        }
        for (const std::size_t k : order) w.add(es[k], Early{static_cast<int>(k)});
        check("after adding a first column");
        for (const std::size_t k : order) w.add(es[k], Bytes<7>{});
        for (const std::size_t k : order) w.add<Frozen>(es[k]);
        check("after adding a last column and a tag");
        for (const std::size_t k : order) EXPECT_TRUE(w.remove<Early>(es[k]));
        check("after removing the first column");
        for (const std::size_t k : order) EXPECT_TRUE(w.remove<Frozen>(es[k]));
        for (const std::size_t k : order) EXPECT_TRUE(w.remove<Bytes<7>>(es[k]));
        check("after removing the tag and the last column");
        for (const std::size_t k : order) EXPECT_TRUE(w.remove<Bytes<5>>(es[k]));
        for (const std::size_t k : order) w.add(es[k], pattern<5>(k));
        check("after removing and adding back a middle column");
    }
    for (std::size_t k = 0; k < n; ++k) EXPECT_FALSE(w.has<Early>(es[k]));
}

TEST(World, TagsCostNoColumnBytes) {
    CountingResource with_tag_mr, without_mr;
    {
        ts::World with_tag(&with_tag_mr), without(&without_mr);
        with_tag.spawn_many(10000, [](std::size_t, Position&, Frozen&, Enemy&) {});
        without.spawn_many(10000, [](std::size_t, Position&) {});
        // Same table bytes: the tags only add metadata, per component id the process has
        // registered below the largest of its own (4 bytes in the archetype's id table, 48 in
        // the world's per-component records) plus each tag's own records: under 4 KiB, where
        // one byte per row would be 10,000.
        EXPECT_LT(with_tag_mr.outstanding, without_mr.outstanding + 4096);
    }
}

TEST(World, RemoveReturnsWhetherAnythingWasRemoved) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 1}, Velocity{2, 2}, Name{"x"});
    EXPECT_FALSE(w.remove<Frozen>(e));
    EXPECT_TRUE((w.remove<Velocity, Frozen>(e)));
    EXPECT_FALSE(w.has<Velocity>(e));
    EXPECT_EQ(w.get<Name>(e).s, "x");
    EXPECT_TRUE((w.remove<Position, Name>(e)));
    EXPECT_TRUE(w.is_alive(e));
    EXPECT_FALSE(w.has<Position>(e));
}

TEST(World, GetSeveralReturnsATupleOfCopies) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2}, Velocity{3, 4});
    auto [p, v] = w.get<Position, Velocity>(e);
    p.x = 100;
    EXPECT_EQ(v, (Velocity{3, 4}));
    EXPECT_EQ(w.get<Position>(e).x, 1);
}

TEST(World, TryGetIsNullForDeadOrAbsent) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    ASSERT_NE(w.try_get<Position>(e), nullptr);
    EXPECT_EQ(w.try_get<Position>(e)->y, 2);
    EXPECT_EQ(w.try_get<Velocity>(e), nullptr);
    w.despawn(e);
    EXPECT_EQ(w.try_get<Position>(e), nullptr);
    EXPECT_EQ(w.try_get<Position>(ts::Entity::null()), nullptr);
}

namespace {
struct SeenByNoWorld {  // used only below, so no world there ever ensured it
    int v = 0;
};
struct LaterTag {};
}  // namespace

// Every way the typed read path can find nothing, for try_get (null) and get (the error):
// a type the world has never seen, a type the entity's table lacks, a table created after the
// type's column list was last grown, a forged handle matching a free slot's generation, and an
// index past the entity index.
TEST(World, ReadsByHandleFindNothingWhereNothingIs) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    const auto code = [&](auto read) -> std::optional<ts::errc> {
        try {
            read();
        } catch (const ts::Error& err) {
            return err.code();
        }
        return std::nullopt;  // nothing thrown
    };
    EXPECT_EQ(w.try_get<SeenByNoWorld>(e), nullptr);
    EXPECT_EQ(code([&] { (void)w.get<SeenByNoWorld>(e); }), ts::errc::missing_component);
    EXPECT_EQ(w.try_get<Velocity>(e), nullptr);
    const ts::Entity moving = w.spawn(Velocity{3, 4});
    EXPECT_EQ(w.get<Velocity>(moving).dy, 4);
    // A table made after Velocity's column list, without Velocity.
    const ts::Entity later = w.spawn(Position{5, 6}, LaterTag{});
    EXPECT_EQ(w.try_get<Velocity>(later), nullptr);
    EXPECT_EQ(code([&] { (void)w.get<Velocity>(later); }), ts::errc::missing_component);
    EXPECT_EQ(w.get<Position>(later).y, 6);
    w.despawn(e);
    const ts::Entity forged{e.index, e.generation + 1};  // the free slot's generation
    EXPECT_FALSE(w.is_alive(forged));
    EXPECT_EQ(w.try_get<Position>(forged), nullptr);
    EXPECT_EQ(code([&] { (void)w.get<Position>(forged); }), ts::errc::not_alive);
    const ts::Entity beyond{1u << 20, 1};
    EXPECT_EQ(w.try_get<Position>(beyond), nullptr);
    EXPECT_EQ(code([&] { (void)w.get<Position>(beyond); }), ts::errc::not_alive);
    EXPECT_EQ(w.accessor<Position>().try_get(forged), nullptr);
}

TEST(World, GetMutAndSetWriteInPlace) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2}, Name{"a"});
    w.get_mut<Position>(e).x = 10;
    EXPECT_EQ(w.get<Position>(e).x, 10);
    w.set(e, Name{"b"});
    EXPECT_EQ(w.get<Name>(e).s, "b");
    const Name lvalue{"c"};
    w.set(e, lvalue);
    EXPECT_EQ(w.get<Name>(e).s, "c");
}

TEST(World, TryGetMutWritesInPlaceAndMarksChangedOrIsNull) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    const ts::Entity bare = w.spawn();
    (void)w.changed_tick<Position>(e);  // tracking on: writes are stamped from here
    const std::uint64_t before = w.changed_tick<Position>(e);
    w.advance_tick();
    Position* p = w.try_get_mut<Position>(e);
    ASSERT_NE(p, nullptr);
    p->x = 7;
    EXPECT_EQ(w.get<Position>(e).x, 7);
    EXPECT_GT(w.changed_tick<Position>(e), before);
    EXPECT_EQ(w.changed_tick<Position>(e), w.tick());
    EXPECT_EQ(w.try_get_mut<Position>(bare), nullptr);  // lacks it
    EXPECT_EQ(w.try_get_mut<Velocity>(e), nullptr);     // a type it never had
    w.despawn(e);
    EXPECT_EQ(w.try_get_mut<Position>(e), nullptr);             // dead
    EXPECT_EQ(w.try_get_mut<Position>(ts::Entity{}), nullptr);  // null handle
}

TEST(World, ChangeTicksStartLazilyAtTheCurrentTick) {
    ts::World w;
    EXPECT_EQ(w.tick(), 1u);
    const ts::Entity e = w.spawn(Position{1, 2});
    EXPECT_EQ(w.advance_tick(), 2u);
    EXPECT_EQ(w.advance_tick(), 3u);
    // First read turns tracking on: existing rows are stamped with the current tick.
    EXPECT_EQ(w.changed_tick<Position>(e), 3u);
    EXPECT_EQ(w.added_tick<Position>(e), 3u);
    w.advance_tick();
    w.set(e, Position{5, 5});
    EXPECT_EQ(w.changed_tick<Position>(e), 4u);
    EXPECT_EQ(w.added_tick<Position>(e), 3u);
    w.advance_tick();
    (void)w.get_mut<Position>(e);
    EXPECT_EQ(w.changed_tick<Position>(e), 5u);
    w.advance_tick();
    w.add(e, Position{6, 6});  // replace marks changed, not added
    EXPECT_EQ(w.changed_tick<Position>(e), 6u);
    EXPECT_EQ(w.added_tick<Position>(e), 3u);
    (void)w.get<Position>(e);
    (void)w.try_get<Position>(e);
    EXPECT_EQ(w.changed_tick<Position>(e), 6u);  // reads stamp nothing
}

TEST(World, TicksTravelWithValuesAcrossArchetypeMoves) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    const ts::Entity f = w.spawn(Position{3, 4});
    (void)w.changed_tick<Position>(e);  // tracking on at tick 1
    w.advance_tick();
    w.set(e, Position{0, 0});  // changed at 2
    w.advance_tick();
    w.add(e, Velocity{});  // moves e at tick 3
    EXPECT_EQ(w.changed_tick<Position>(e), 2u);
    EXPECT_EQ(w.added_tick<Position>(e), 1u);
    EXPECT_EQ(w.changed_tick<Velocity>(e), 3u);  // tracking starts now: stamped with tick 3
    w.advance_tick();
    w.remove<Velocity>(e);
    EXPECT_EQ(w.changed_tick<Position>(e), 2u);
    EXPECT_EQ(w.changed_tick<Position>(f), 1u);
    w.advance_tick();
    const ts::Entity g = w.spawn(Position{});  // a new row is stamped added+changed
    EXPECT_EQ(w.added_tick<Position>(g), 5u);
    EXPECT_EQ(w.changed_tick<Position>(g), 5u);
    const auto many = w.spawn_many(3, [](std::size_t, Position&) {});
    EXPECT_EQ(w.added_tick<Position>(many[2]), 5u);
}

TEST(World, SetIfChangedWritesOnlyDifferentValues) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    w.advance_tick();
    EXPECT_FALSE(w.set_if_changed(e, Position{1, 2}));
    EXPECT_EQ(w.changed_tick<Position>(e), 2u);  // tracking started at tick 2, no write
    w.advance_tick();
    EXPECT_FALSE(w.set_if_changed(e, Position{1, 2}));
    EXPECT_EQ(w.changed_tick<Position>(e), 2u);
    EXPECT_TRUE(w.set_if_changed(e, Position{1, 3}));
    EXPECT_EQ(w.changed_tick<Position>(e), 3u);
    EXPECT_EQ(w.get<Position>(e).y, 3);
}

TEST(World, HeapOwningComponentsAreMovedAndDestroyedExactlyOnce) {
    Tracked::live = 0;
    {
        ts::World w;
        std::vector<ts::Entity> es;
        for (int i = 0; i < 300; ++i)
            es.push_back(w.spawn(Tracked{i}, Name{std::string(40, 'a' + i % 26)}));
        for (int i = 0; i < 300; i += 3) w.add(es[i], Position{});  // moves
        for (int i = 0; i < 300; i += 5) w.despawn(es[i]);
        for (int i = 1; i < 300; i += 7) {
            if (w.is_alive(es[i])) w.remove<Name>(es[i]);
        }
        for (int i = 0; i < 300; ++i) {
            if (!w.is_alive(es[i])) continue;
            EXPECT_EQ(w.get<Tracked>(es[i]).value, i);
            if (w.has<Name>(es[i])) {
                EXPECT_EQ(w.get<Name>(es[i]).s, std::string(40, 'a' + i % 26));
            }
        }
        int alive = 0;
        for (ts::Entity e : es) alive += w.is_alive(e) ? 1 : 0;
        EXPECT_EQ(Tracked::live, alive);
        const ts::Entity o = w.spawn(Owned{std::make_unique<int>(7)});
        w.add(o, Position{});
        EXPECT_EQ(*w.try_get<Owned>(o)->p, 7);
    }
    EXPECT_EQ(Tracked::live, 0);
}

TEST(World, OverAlignedComponentsAreStoredAligned) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 100; ++i) es.push_back(w.spawn(Position{}, Wide{{double(i), 0, 0}}));
    w.add(es[3], Velocity{});
    for (int i = 0; i < 100; ++i) {
        const Wide* p = w.try_get<Wide>(es[i]);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, 0u);
        EXPECT_EQ(p->v[0], double(i));
    }
}

TEST(World, FailedCopyChangesNothing) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 1});
    const ThrowingCopy value(3);
    const std::size_t archetypes = w.archetype_count();
    EXPECT_THROW(w.add(e, value), std::runtime_error);
    EXPECT_FALSE(w.has<ThrowingCopy>(e));
    EXPECT_EQ(w.archetype_count(), archetypes);
    EXPECT_THROW(w.spawn(Position{}, value), std::runtime_error);
    EXPECT_EQ(w.count(), 1u);
    w.add(e, ThrowingCopy(4));
    EXPECT_THROW(w.set(e, value), std::runtime_error);
    EXPECT_EQ(w.get_mut<ThrowingCopy>(e).v, 4);
}

TEST(World, EntitiesListsEveryLiveEntityOnce) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 50; ++i) es.push_back(i % 2 ? w.spawn(Position{}) : w.spawn());
    for (int i = 0; i < 50; i += 4) w.despawn(es[i]);
    std::vector<ts::Entity> listed = w.entities();
    std::vector<ts::Entity> expected;
    for (ts::Entity e : es) {
        if (w.is_alive(e)) expected.push_back(e);
    }
    std::sort(listed.begin(), listed.end());
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(listed, expected);
}

TEST(World, RegisterComponentIsOptionalAndIdempotent) {
    ts::World w;
    const ts::ComponentId id = w.register_component<Position>();
    EXPECT_EQ(id, ts::component_id<Position>());
    EXPECT_EQ(w.register_component<Position>(), id);
    EXPECT_EQ(w.archetype_count(), 1u);
}

TEST(World, AllStorageComesFromTheWorldsResource) {
    CountingResource mr;
    {
        // Anything the world allocated elsewhere would hit this resource and throw.
        std::pmr::memory_resource* previous =
            std::pmr::set_default_resource(std::pmr::null_memory_resource());
        {
            ts::World w(&mr);
            const auto span = w.spawn_many(1000, [](std::size_t, Position&, Name&) {});
            const ts::Entity e = span[0];
            w.add(e, Velocity{});
            w.add<Frozen>(e);
            (void)w.changed_tick<Position>(e);
            w.remove<Position, Frozen>(e);
            w.despawn(span[1]);
            EXPECT_GT(mr.allocations, 0u);
        }
        std::pmr::set_default_resource(previous);
    }
    EXPECT_EQ(mr.outstanding, 0u);
    EXPECT_EQ(mr.allocations, mr.deallocations);
}

TEST(World, MoveKeepsEntitiesAndValues) {
    ts::World a;
    const ts::Entity e = a.spawn(Position{1, 2}, Name{"moved"});
    ts::World b(std::move(a));
    EXPECT_EQ(b.get<Name>(e).s, "moved");
    ts::World c;
    c.spawn();
    c = std::move(b);
    EXPECT_EQ(c.count(), 1u);
    EXPECT_EQ(c.get<Position>(e), (Position{1, 2}));
}

TEST(World, WorldsAreIndependent) {
    ts::World a, b;
    const ts::Entity ea = a.spawn(Position{1, 1});
    EXPECT_FALSE(b.is_alive(ea));
    EXPECT_EQ(b.count(), 0u);
    const ts::Entity eb = b.spawn(Position{2, 2});
    EXPECT_EQ(ea, eb);  // same handle value, different worlds
    EXPECT_EQ(a.get<Position>(ea).x, 1);
    EXPECT_EQ(b.get<Position>(eb).x, 2);
}

using tessera::test::load_at_tick;

TEST(World, AdvanceTickAtMaxTickIsLimitExceededAndNeverWraps) {
    ts::World w;
    load_at_tick(w, ts::World::max_tick - 1);
    EXPECT_EQ(w.advance_tick(), ts::World::max_tick);
    try {
        w.advance_tick();
        ADD_FAILURE() << "the tick advanced past World::max_tick";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::limit_exceeded);
    }
    EXPECT_EQ(w.tick(), ts::World::max_tick) << "a failed advance changes nothing";
    const ts::Entity e = w.spawn(Position{1, 2});
    EXPECT_EQ(w.changed_tick<Position>(e), ts::World::max_tick) << "the world keeps working";
}

// ----------------------------------------------------------------------------------- emplace

using tessera::test::Picky;
using tessera::test::Pinned;

TEST(World, EmplaceBuildsTheValueInItsTableSlot) {
    ts::World w;
    const ts::Entity a = w.spawn(Position{1, 2});
    const ts::Entity b = w.spawn(Position{3, 4});
    Pinned::moves = 0;
    w.emplace<Pinned>(a, 7);  // a new table (the edge is made now)
    w.emplace<Pinned>(b, 8);  // along the cached edge
    EXPECT_EQ(Pinned::moves, 0) << "the value was moved in";
    EXPECT_EQ(w.get<Position>(b).x, 3);
    for (const ts::Entity e : {a, b}) {
        const Pinned* p = w.try_get<Pinned>(e);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->self, p);
    }
    EXPECT_EQ(w.try_get<Pinned>(a)->v, 7);
    EXPECT_EQ(w.try_get<Pinned>(b)->v, 8);
    // Replacing: in the same slot, marked changed.
    (void)w.changed_tick<Pinned>(a);
    w.advance_tick();
    w.emplace<Pinned>(a, 9);
    EXPECT_EQ(Pinned::moves, 0);
    EXPECT_EQ(w.try_get<Pinned>(a)->v, 9);
    EXPECT_EQ(w.try_get<Pinned>(a)->self, w.try_get<Pinned>(a));
    EXPECT_EQ(w.changed_tick<Pinned>(a), w.tick());
    // Tags and plain values.
    w.emplace<Frozen>(a);
    EXPECT_TRUE(w.has<Frozen>(a));
    w.emplace<Name>(b, "zzz");
    EXPECT_EQ(w.get<Name>(b).s, "zzz");
}

TEST(World, EmplaceWhoseConstructorThrowsChangesNothing) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    const std::size_t tables = w.archetype_count();
    EXPECT_THROW(w.emplace<Picky>(e, -1), std::invalid_argument);
    EXPECT_FALSE(w.has<Picky>(e));
    EXPECT_EQ(w.get<Position>(e).x, 1);
    w.emplace<Picky>(e, 5);
    EXPECT_EQ(w.get<Picky>(e).v, 5);
    EXPECT_THROW(w.emplace<Picky>(e, -2), std::invalid_argument);
    EXPECT_EQ(w.get<Picky>(e).v, 5) << "a failed replace keeps the old value";
    EXPECT_GE(w.archetype_count(), tables);
}

TEST(World, EmplaceDeferredObservedAndOnTheDead) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2});
    w.each([&](const Position&) { w.emplace<Pinned>(e, 4); });
    ASSERT_TRUE(w.has<Pinned>(e)) << "applied when the loop ended";
    EXPECT_EQ(w.try_get<Pinned>(e)->v, 4);
    EXPECT_EQ(w.try_get<Pinned>(e)->self, w.try_get<Pinned>(e)) << "its move fixed it up";
    int seen = 0;
    ts::Observer o = w.on_add<Name>(
        [&](ts::World& world, ts::Entity x) { seen += world.get<Name>(x).s == "ob" ? 1 : 0; });
    w.emplace<Name>(e, "ob");
    EXPECT_EQ(seen, 1);
    w.despawn(e);
    try {
        w.emplace<Pinned>(e, 1);
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::not_alive);
        EXPECT_NE(std::string(err.what()).find("World::emplace"), std::string::npos) << err.what();
    }
    try {
        w.emplace<Name>(e, "dead and observed");
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::not_alive);
        EXPECT_NE(std::string(err.what()).find("World::emplace"), std::string::npos) << err.what();
    }
}

// -------------------------------------------------------------------- archetypes and reserve

TEST(World, ArchetypesDescribeEveryTable) {
    ts::World w;
    const std::vector<ts::ArchetypeInfo> fresh = w.archetypes();
    ASSERT_EQ(fresh.size(), 1u);
    EXPECT_EQ(fresh[0].index, 0u);
    EXPECT_TRUE(fresh[0].components.empty());
    (void)w.spawn(Position{1, 2}, Velocity{});
    (void)w.spawn(Position{3, 4}, Velocity{});
    (void)w.spawn(Name{"n"}, Frozen{});
    const std::vector<ts::ArchetypeInfo> all = w.archetypes();
    ASSERT_EQ(all.size(), w.archetype_count());
    ASSERT_EQ(all.size(), 3u);
    for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].index, i);
    EXPECT_EQ(all[1].size, 2u);
    EXPECT_GE(all[1].capacity, 2u);
    EXPECT_EQ(all[1].bytes_per_row, sizeof(ts::Entity) + sizeof(Position) + sizeof(Velocity));
    std::vector<ts::ComponentId> pv{ts::component_id<Position>(), ts::component_id<Velocity>()};
    std::sort(pv.begin(), pv.end());
    EXPECT_TRUE(
        std::equal(all[1].components.begin(), all[1].components.end(), pv.begin(), pv.end()));
    EXPECT_EQ(all[2].components.size(), 2u) << "tags are listed";
    EXPECT_EQ(all[2].bytes_per_row, sizeof(ts::Entity) + sizeof(Name)) << "tags take no bytes";
    // The same set in any order is the same archetype; a new set is created, empty.
    EXPECT_EQ((w.archetype<Velocity, Position>().index), 1u);
    const ts::ArchetypeInfo made = w.archetype<Position, Enemy>();
    EXPECT_EQ(made.index, 3u);
    EXPECT_EQ(made.size, 0u);
    EXPECT_EQ(w.archetype<>().index, 0u);
    const ts::Entity in_pv = w.spawn(Position{}, Velocity{});
    EXPECT_EQ(w.archetype_of(in_pv).index, 1u);
    EXPECT_EQ(w.archetype_of(w.spawn()).index, 0u);
    w.despawn(in_pv);
    EXPECT_THROW((void)w.archetype_of(in_pv), ts::Error);
    // Change ticks show in the row size once tracked.
    const ts::Entity e = w.spawn(Position{5, 6}, Velocity{});
    (void)w.changed_tick<Position>(e);
    EXPECT_EQ(w.archetypes()[1].bytes_per_row,
              sizeof(ts::Entity) + sizeof(Position) + sizeof(Velocity) + 16);
}

TEST(World, ReserveGrowsOneTableOnceSoSpawningAllocatesNothing) {
    ts::test::CountingResource res;
    ts::World w(&res);
    w.reserve<Position, Velocity>(1000);
    EXPECT_GE((w.archetype<Position, Velocity>().capacity), 1000u);
    EXPECT_EQ((w.archetype<Position, Velocity>().size), 0u);
    const std::size_t before = res.allocations;
    for (int i = 0; i < 1000; ++i) (void)w.spawn(Position{float(i), 0}, Velocity{});
    EXPECT_EQ(res.allocations, before) << "the table or the entity index grew again";
    w.reserve<Position, Velocity>(10);  // already larger: nothing
    EXPECT_EQ(res.allocations, before);
    bool once = false;
    w.each([&](const Position&) {
        if (std::exchange(once, true)) return;
        try {
            w.reserve<Position>(5000);
            ADD_FAILURE() << "no error";
        } catch (const ts::Error& e) {
            EXPECT_EQ(e.code(), ts::errc::invalid_argument);
            EXPECT_NE(std::string(e.what()).find("World::reserve"), std::string::npos);
        }
    });
}

// ------------------------------------------------------------------------------ bunch calls

TEST(World, SetAndGetMutOfSeveralComponentsAtOnce) {
    ts::World w;
    const ts::Entity e = w.spawn(Position{1, 2}, Velocity{3, 4}, Name{"a"});
    const ts::Entity bare = w.spawn(Position{0, 0});
    (void)w.changed_tick<Velocity>(e);
    w.advance_tick();
    w.set(e, Position{5, 6}, Velocity{7, 8}, Name{"b"});
    EXPECT_EQ(w.get<Position>(e).x, 5);
    EXPECT_EQ(w.get<Velocity>(e).dx, 7);
    EXPECT_EQ(w.get<Name>(e).s, "b");
    EXPECT_EQ(w.changed_tick<Velocity>(e), w.tick());
    const Name lvalue{"c"};
    w.set(e, lvalue, Position{9, 9});  // a copy and a move
    EXPECT_EQ(w.get<Name>(e).s, "c");
    // One missing: nothing is written.
    try {
        w.set(bare, Position{1, 1}, Velocity{1, 1});
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::missing_component);
        EXPECT_NE(std::string(err.what()).find("Velocity"), std::string::npos) << err.what();
    }
    EXPECT_EQ(w.get<Position>(bare).x, 0) << "nothing is written when one is missing";

    auto [p, v] = w.get_mut<Position, Velocity>(e);
    p.x = 10;
    v.dy = 11;
    EXPECT_EQ(w.get<Position>(e).x, 10);
    EXPECT_EQ(w.get<Velocity>(e).dy, 11);
    w.advance_tick();
    (void)w.get_mut<Position, Velocity>(e);
    EXPECT_EQ(w.changed_tick<Velocity>(e), w.tick());
    EXPECT_THROW((void)(w.get_mut<Position, Velocity>(bare)), ts::Error);
    (void)w.changed_tick<Position>(bare);
    const std::uint64_t before = w.changed_tick<Position>(bare);
    w.advance_tick();
    EXPECT_THROW((void)(w.get_mut<Position, Velocity>(bare)), ts::Error);
    EXPECT_EQ(w.changed_tick<Position>(bare), before) << "marked before the error";
    w.despawn(e);
    try {
        (void)w.get_mut<Position, Velocity>(e);
        ADD_FAILURE() << "no error";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::not_alive);
        EXPECT_NE(std::string(err.what()).find("World::get_mut"), std::string::npos);
    }
}

// A table is found by its set of components in O(1) among thousands (a hash index, kept by
// clone and restore): a two-component add and remove reuse the tables they made the first
// time, in the world, in its clone and after a restore.
TEST(World, MultiComponentMovesReuseTheirTablesAmongManyArchetypes) {
    ts::World w;
    std::vector<ts::ComponentId> bits;
    for (int b = 0; b < 10; ++b) bits.push_back(w.component("WorldBit" + std::to_string(b)));
    std::vector<ts::Entity> es;
    for (int combo = 0; combo < 1000; ++combo) {
        const ts::Entity e = w.spawn(Position{static_cast<float>(combo), 0});
        for (int b = 0; b < 10; ++b) {
            if ((combo >> b & 1) != 0) w.add(e, bits[static_cast<std::size_t>(b)]);
        }
        es.push_back(e);
    }
    const ts::Entity e = es[517];
    w.add(e, Velocity{1, 1}, Frozen{});
    ASSERT_TRUE((w.remove<Velocity, Frozen>(e)));
    const std::size_t tables = w.archetype_count();
    const ts::Snapshot snap = w.snapshot();
    for (int round = 0; round < 3; ++round) {
        w.add(e, Velocity{1, 1}, Frozen{});
        EXPECT_TRUE(w.has<Velocity>(e) && w.has<Frozen>(e) && w.has(e, bits[0]));
        ASSERT_TRUE((w.remove<Velocity, Frozen>(e)));
    }
    EXPECT_EQ(w.archetype_count(), tables);
    ts::World copy = w.clone();
    copy.add(e, Velocity{2, 2}, Frozen{});
    EXPECT_EQ(copy.archetype_count(), tables);
    EXPECT_EQ(copy.get<Velocity>(e), (Velocity{2, 2}));
    w.restore(snap);
    w.add(es[3], Velocity{3, 3}, Frozen{});  // bits 0 and 1: a table nobody had
    EXPECT_EQ(w.archetype_count(), tables + 1);
    w.add(e, Velocity{1, 1}, Frozen{});
    EXPECT_EQ(w.archetype_count(), tables + 1);
    EXPECT_EQ(w.get<Position>(e).x, 517.0f);
}
