#include <tessera/component.hpp>
#include <tessera/dynamic.hpp>
#include <tessera/error.hpp>
#include <tessera/query.hpp>
#include <tessera/world.hpp>

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ts = tessera;

namespace comp_test {
struct Position {
    float x, y;
};
struct Marker {};
struct alignas(64) Aligned {
    double v[2];
};
struct Heap {
    std::string s;
};
struct Switchable {
    int v;
};
struct Untracked {
    int v;
};
struct NoEq {
    int v;
};
}  // namespace comp_test

template <>
struct ts::component_traits<comp_test::Switchable> {
    static constexpr bool enableable = true;
};
template <>
struct ts::component_traits<comp_test::Untracked> {
    static constexpr bool track_changes = false;
};

namespace comp_test {
struct Eager {
    int v = 0;
};
struct Lazy {
    int v = 0;
};
}  // namespace comp_test

template <>
struct ts::component_traits<comp_test::Eager> {
    static constexpr bool eager_tracking = true;
};

using namespace comp_test;

TEST(Component, IdsAreStableDistinctAndIgnoreCvRef) {
    const ts::ComponentId p = ts::component_id<Position>();
    EXPECT_TRUE(p.valid());
    EXPECT_EQ(p, ts::component_id<Position>());
    EXPECT_EQ(p, ts::component_id<const Position&>());
    EXPECT_NE(p, ts::component_id<Marker>());
    EXPECT_FALSE(ts::ComponentId{}.valid());
    EXPECT_GE(ts::component_id_count(), 2u);
}

TEST(Component, InfoRecordsLayoutHooksAndName) {
    const ts::ComponentInfo& p = ts::component_info<Position>();
    EXPECT_EQ(p.id, ts::component_id<Position>());
    EXPECT_EQ(p.size, sizeof(Position));
    EXPECT_EQ(p.alignment, alignof(Position));
    EXPECT_TRUE(p.trivially_relocatable);
    EXPECT_EQ(p.relocate, nullptr);  // memcpy
    EXPECT_EQ(p.destroy, nullptr);
    EXPECT_NE(p.name.find("Position"), std::string_view::npos);

    const ts::ComponentInfo& m = ts::component_info<Marker>();
    EXPECT_TRUE(m.is_tag());
    EXPECT_EQ(m.size, 0u);

    EXPECT_EQ(ts::component_info<Aligned>().alignment, 64u);

    const ts::ComponentInfo& h = ts::component_info<Heap>();
    EXPECT_FALSE(h.trivially_relocatable);
    ASSERT_NE(h.relocate, nullptr);
    ASSERT_NE(h.destroy, nullptr);
    alignas(Heap) unsigned char a[sizeof(Heap)], b[sizeof(Heap)];
    ::new (a) Heap{std::string(100, 'x')};
    h.relocate(b, a, 1);
    EXPECT_EQ(reinterpret_cast<Heap*>(b)->s, std::string(100, 'x'));
    h.destroy(b, 1);

    EXPECT_EQ(ts::component_info<NoEq>().equal, nullptr);
}

TEST(Component, TraitsAreReadByDetectionWithDefaults) {
    EXPECT_TRUE(ts::component_info<Switchable>().enableable);
    EXPECT_TRUE(ts::component_info<Switchable>().track_changes);
    EXPECT_FALSE(ts::component_info<Untracked>().track_changes);
    EXPECT_FALSE(ts::component_info<Untracked>().enableable);
    EXPECT_FALSE(ts::component_info<Position>().enableable);
    EXPECT_TRUE(ts::component_info<Position>().track_changes);
}

namespace {
struct Label {
    int a;
};
}  // namespace

static ts::ComponentId local_label_one() {
    struct Label {
        double a, b;
    };
    return ts::component_id<Label>();
}
static ts::ComponentId local_label_two() {
    struct Label {
        char c;
    };
    return ts::component_id<Label>();
}

TEST(Component, TypesWithoutLinkageNeverShareAnId) {
    const ts::ComponentId anon = ts::component_id<Label>();
    EXPECT_NE(anon, local_label_one());
    EXPECT_NE(local_label_one(), local_label_two());
    EXPECT_EQ(local_label_one(), local_label_one());
    EXPECT_EQ(ts::component_info(local_label_one()).size, 2 * sizeof(double));
}

TEST(Component, SameNameDifferentLayoutIsTypeConflict) {
    // Two shared objects disagreeing on a struct of one name reach the registry like this.
    ts::ComponentInfo info;
    info.size = 3;  // Position is 8 bytes
    info.alignment = 1;
    const std::string_view name = ts::component_info<Position>().name;
    const ts::detail::TypeDescriptor clash{name, &typeid(Position), info};
    try {
        (void)ts::detail::register_type(clash);
        FAIL() << "expected type_conflict";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::type_conflict);
        EXPECT_NE(std::string(e.what()).find("Position"), std::string::npos);
    }
    // Same name and layout: the same id (how two libraries agree).
    info.size = sizeof(Position);
    info.alignment = alignof(Position);
    EXPECT_EQ(ts::detail::register_type({name, &typeid(Position), info}),
              ts::component_id<Position>());
}

template <int N>
struct Many {
    int v;
};

TEST(Component, RegistrationIsThreadSafe) {
    std::vector<ts::ComponentId> a(64), b(64);
    auto run = [](std::vector<ts::ComponentId>& out) {
        [&]<int... I>(std::integer_sequence<int, I...>) {
            ((out[I] = ts::component_id<Many<I>>()), ...);
        }
        (std::make_integer_sequence<int, 64>{});
    };
    std::thread t1(run, std::ref(a));
    std::thread t2(run, std::ref(b));
    t1.join();
    t2.join();
    EXPECT_EQ(a, b);
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(ts::component_info(a[i]).id, a[i]);
        for (std::size_t j = 0; j < i; ++j) EXPECT_NE(a[i], a[j]);
    }
}

TEST(Component, EagerTrackingKeepsTicksFromTheFirstRow) {
    EXPECT_TRUE(ts::component_info(ts::component_id<Eager>()).eager_tracking);
    EXPECT_FALSE(ts::component_info(ts::component_id<Lazy>()).eager_tracking);
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 5; ++i) es.push_back(w.spawn(Eager{i}, Lazy{i}));  // tick 1
    // cinder's scan: record the tick, advance, write one row, scan for changes since then.
    const std::uint64_t mark = w.tick();
    w.advance_tick();
    w.get_mut<Eager>(es[2]).v = 20;
    w.get_mut<Lazy>(es[2]).v = 20;
    std::vector<ts::Entity> eager;
    w.query<ts::Entity, const Eager&>().changed_since<Eager>(mark).each(
        [&](ts::Entity e, const Eager&) { eager.push_back(e); });
    EXPECT_EQ(eager, std::vector<ts::Entity>{es[2]}) << "only the row written";
    std::size_t lazy = 0;
    w.query<const Lazy&>().changed_since<Lazy>(mark).each([&](const Lazy&) { ++lazy; });
    EXPECT_EQ(lazy, 5u) << "lazy tracking starts at the first read: every row then";
    EXPECT_EQ(w.added_tick<Eager>(es[0]), 1u) << "spawned at tick 1";
    EXPECT_EQ(w.changed_tick<Eager>(es[0]), 1u);
    // Runtime components take the option too; it must be the same in every definition.
    const ts::ComponentId rt = w.component("EagerRt", {{"x", ts::Field::f32}},
                                           ts::ComponentOptions{.eager_tracking = true});
    EXPECT_TRUE(ts::component_info(rt).eager_tracking);
    EXPECT_THROW(w.component("EagerRt", {{"x", ts::Field::f32}}), ts::Error);
    EXPECT_THROW(w.component("EagerTag", {}, ts::ComponentOptions{.eager_tracking = true}),
                 ts::Error);
}
