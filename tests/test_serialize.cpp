// serialize.hpp: clone, snapshot/restore, JSON and binary save/load, state_hash.
#include <tessera/tessera.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "common/error_of.hpp"

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ts = tessera;
using tessera::test::error_of;

namespace sz {
struct Pos {
    float x = 0, y = 0;
    friend bool operator==(const Pos&, const Pos&) = default;
};
struct Vel {
    float dx = 0, dy = 0;
};
struct Name {
    std::string value;
};
struct Link {
    std::int32_t strength = 0;
};
struct Ai {
    std::uint8_t mode = 0;
};
struct Opaque {
    int secret = 0;
};
struct NoCopy {
    std::unique_ptr<int> p;
};
struct Frozen {};
}  // namespace sz

TESSERA_REFLECT(sz::Pos, x, y)
TESSERA_REFLECT(sz::Vel, dx, dy)
TESSERA_REFLECT(sz::Name, value)
TESSERA_REFLECT(sz::Link, strength)
TESSERA_REFLECT(sz::Ai, mode)
template <>
struct tessera::component_traits<sz::Ai> {
    static constexpr bool enableable = true;
};

namespace {

// Every entity (in iteration order) with its components' observable state.
std::string dump(ts::World& w) {
    std::string out;
    w.each_entity([&](ts::Entity e) {
        out += std::to_string(e.index) + ":" + std::to_string(e.generation);
        if (const auto* p = w.try_get<sz::Pos>(e))
            out += " pos(" + std::to_string(p->x) + "," + std::to_string(p->y) + ")";
        if (const auto* v = w.try_get<sz::Vel>(e)) out += " vel(" + std::to_string(v->dx) + ")";
        if (const auto* n = w.try_get<sz::Name>(e)) out += " name(" + n->value + ")";
        if (w.has<sz::Ai>(e))
            out += " ai(" + std::to_string(w.get<sz::Ai>(e).mode) +
                   (w.is_enabled<sz::Ai>(e) ? ",on)" : ",off)");
        if (w.has<sz::Frozen>(e)) out += " frozen";
        for (const ts::Entity t : w.targets<sz::Link>(e))
            out += " link->" + std::to_string(t.index) + "(" +
                   std::to_string(w.relation<sz::Link>(e)->strength) + ")";
        for (const ts::Entity p : w.parents(e)) out += " childof->" + std::to_string(p.index);
        for (const ts::Entity s : w.sources<sz::Link>(e))
            out += " linked-by<-" + std::to_string(s.index);
        for (const ts::Entity c : w.children(e)) out += " child<-" + std::to_string(c.index);
        if (w.is_permanent(e)) out += " permanent";
        out += "\n";
    });
    return out;
}

// A world with holes in its entity index, several archetypes, strings, relations, flags.
void populate(ts::World& w) {
    std::vector<ts::Entity> es;
    for (int i = 0; i < 40; ++i) {
        ts::Entity e;
        switch (i % 4) {
            case 0: e = w.spawn(sz::Pos{float(i), float(-i)}); break;
            case 1: e = w.spawn(sz::Pos{float(i), 1}, sz::Vel{float(i) / 2, 0}); break;
            case 2: e = w.spawn(sz::Name{"unit " + std::to_string(i)}, sz::Frozen{}); break;
            default: e = w.spawn(sz::Ai{std::uint8_t(i)}); break;
        }
        es.push_back(e);
    }
    for (int i = 0; i < 40; i += 7) w.despawn(es[static_cast<std::size_t>(i)]);
    w.enable<sz::Ai>(es[3], false);
    w.relate(es[5], sz::Link{3}, es[9]);
    w.relate(es[5], sz::Link{4}, es[13]);
    w.relate(es[6], sz::Link{1}, es[9]);
    w.relate<ts::ChildOf>(es[10], es[11]);
    w.relate<ts::ChildOf>(es[12], es[11]);
    (void)w.spawn_permanent(sz::Pos{100, 100});
    (void)w.spawn();  // reuses a freed index
    w.strings().intern("orphan string");
}

}  // namespace

TEST(Clone, CopiesEverythingAndIteratesInTheSameOrder) {
    ts::World w;
    populate(w);
    ts::World c = w.clone();
    EXPECT_EQ(dump(c), dump(w));
    EXPECT_EQ(c.count(), w.count());
    EXPECT_EQ(c.entities(), w.entities());
    EXPECT_EQ(c.tick(), w.tick());
    EXPECT_EQ(c.archetype_count(), w.archetype_count());
    EXPECT_EQ(ts::state_hash(c), ts::state_hash(w));
    EXPECT_EQ(c.strings().find("orphan string"), w.strings().find("orphan string"));
    // The free list is the same: the next spawns take the same ids.
    EXPECT_EQ(c.spawn(), w.spawn());
    EXPECT_EQ(c.spawn(), w.spawn());
    // Independent: changing the clone leaves the original.
    const ts::Entity first = w.entities()[0];
    c.despawn(first);
    EXPECT_TRUE(w.is_alive(first));
}

TEST(Clone, NonCopyableComponentIsInvalidArgumentNamingIt) {
    ts::World w;
    w.spawn(sz::NoCopy{std::make_unique<int>(1)});
    try {
        (void)w.clone();
        FAIL() << "no throw";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("NoCopy"), std::string::npos) << e.what();
    }
    EXPECT_EQ(error_of([&] { (void)w.snapshot(); }), ts::errc::invalid_argument);
}

TEST(Snapshot, RestoreRollsBackKeepingIdsTicksAndOrder) {
    ts::World w;
    populate(w);
    const std::string before = dump(w);
    const std::uint64_t hash = ts::state_hash(w);
    const ts::Snapshot snap = w.snapshot();
    EXPECT_EQ(snap.count(), w.count());
    auto q = w.query<sz::Pos&>();
    std::vector<ts::Entity> order_before;
    w.query<ts::Entity, const sz::Pos&>().each(
        [&](ts::Entity e, const sz::Pos&) { order_before.push_back(e); });
    // Change a lot.
    q.each([](sz::Pos& p) { p.x += 1000; });
    for (const ts::Entity e : w.entities()) {
        if (w.has<sz::Vel>(e)) w.despawn(e);
    }
    w.spawn(sz::Name{"new"}, sz::Vel{});
    const std::uint64_t tick_before_restore = w.tick();
    w.restore(snap);
    EXPECT_EQ(dump(w), before);
    EXPECT_EQ(ts::state_hash(w), hash);
    EXPECT_GE(w.tick(), tick_before_restore);  // never goes back
    std::vector<ts::Entity> order_after;
    w.query<ts::Entity, const sz::Pos&>().each(
        [&](ts::Entity e, const sz::Pos&) { order_after.push_back(e); });
    EXPECT_EQ(order_after, order_before);
    // The cached query re-matched: it sees the restored values.
    float sum = 0;
    q.each([&](sz::Pos& p) { sum += p.x; });
    EXPECT_LT(sum, 1000.0f);
    // Restore again from the same snapshot.
    w.despawn(w.entities().back());
    w.restore(snap);
    EXPECT_EQ(dump(w), before);
}

TEST(Snapshot, RestoreFiresNoObserverAndKeepsThem) {
    ts::World w;
    populate(w);
    const ts::Snapshot snap = w.snapshot();
    int adds = 0;
    auto obs = w.on_add<sz::Pos>([&](ts::World&, ts::Entity, sz::Pos&) { ++adds; });
    w.spawn(sz::Pos{});
    EXPECT_EQ(adds, 1);
    w.restore(snap);
    EXPECT_EQ(adds, 1);
    w.spawn(sz::Pos{});
    EXPECT_EQ(adds, 2);  // the observer survived the restore
}

TEST(Snapshot, EmptySnapshotAndRestoreWhileIteratingAreInvalidArgument) {
    ts::World w;
    populate(w);
    const ts::Snapshot empty;
    EXPECT_EQ(error_of([&] { w.restore(empty); }), ts::errc::invalid_argument);
    const ts::Snapshot snap = w.snapshot();
    w.query<sz::Pos&>().each([&](sz::Pos&) {
        EXPECT_EQ(error_of([&] { w.restore(snap); }), ts::errc::invalid_argument);
    });
}

TEST(Json, RoundTripIsExact) {
    ts::World w;
    populate(w);
    const nlohmann::json j = ts::to_json(w);
    ts::World back;
    ts::from_json(j, back);
    EXPECT_EQ(dump(back), dump(w));
    EXPECT_EQ(back.entities(), w.entities());
    EXPECT_EQ(ts::state_hash(back), ts::state_hash(w));
    EXPECT_EQ(ts::to_json(back), j);
    // And through text.
    ts::World again;
    ts::from_json(nlohmann::json::parse(j.dump()), again);
    EXPECT_EQ(dump(again), dump(w));
    EXPECT_EQ(back.spawn(), w.spawn());
}

TEST(Binary, RoundTripIsExact) {
    ts::World w;
    populate(w);
    const std::vector<std::byte> bytes = ts::save(w);
    ts::World back;
    ts::load(bytes, back);
    EXPECT_EQ(dump(back), dump(w));
    EXPECT_EQ(back.entities(), w.entities());
    EXPECT_EQ(ts::state_hash(back), ts::state_hash(w));
    EXPECT_EQ(ts::save(back), bytes);
}

TEST(Snapshot, EveryCopyKeepsWhichRowsChangedSinceATick) {
    // Big enough for several blocks of rows; writes scattered, some in the same block.
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 1000; ++i) es.push_back(w.spawn(sz::Pos{float(i), 0}));
    (void)w.changed_tick<sz::Pos>(es[0]);  // tracking on: every row stamped now
    const std::uint64_t since = w.tick();  // what is written after this call is newer
    (void)w.advance_tick();
    std::set<ts::Entity> want;
    for (const std::size_t i : {0, 3, 5, 130, 511, 512, 998, 999}) {
        w.get_mut<sz::Pos>(es[i]).y = 1;
        want.insert(es[i]);
    }
    (void)w.advance_tick();
    auto changed = [&](ts::World& x) {
        std::set<ts::Entity> got;
        x.query<ts::Entity, const sz::Pos&>().changed_since<sz::Pos>(since).each(
            [&](ts::Entity e, const sz::Pos&) { got.insert(e); });
        return got;
    };
    ASSERT_EQ(changed(w), want);
    ts::World copy = w.clone();
    EXPECT_EQ(changed(copy), want) << "clone";
    ts::World bin;
    ts::load(ts::save(w), bin);
    EXPECT_EQ(changed(bin), want) << "binary save / load";
    ts::World json;
    ts::from_json(ts::to_json(w), json);
    EXPECT_EQ(changed(json), want) << "JSON";
    const ts::Snapshot snap = w.snapshot();
    w.query<sz::Pos&>().each([](sz::Pos&) {});  // marks every row changed
    w.restore(snap);
    EXPECT_EQ(changed(w), want) << "restore";
}

TEST(Binary, NonEmptyTargetAndGarbageAreInvalidArgumentLeavingTargetAsIs) {
    ts::World w;
    populate(w);
    const std::vector<std::byte> bytes = ts::save(w);
    ts::World busy;
    busy.spawn();
    EXPECT_EQ(error_of([&] { ts::load(bytes, busy); }), ts::errc::invalid_argument);
    EXPECT_EQ(busy.count(), 1u);
    for (std::size_t cut = 0; cut < bytes.size(); cut += 7) {
        ts::World t;
        EXPECT_EQ(error_of([&] { ts::load(std::span(bytes).first(cut), t); }),
                  ts::errc::invalid_argument);
        EXPECT_EQ(t.count(), 0u);
    }
}

TEST(Save, UnreflectedComponentIsInvalidArgumentNamingIt) {
    ts::World w;
    w.spawn(sz::Opaque{3});
    try {
        (void)ts::save(w);
        FAIL() << "no throw";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("Opaque"), std::string::npos) << e.what();
    }
    EXPECT_EQ(error_of([&] { (void)ts::to_json(w); }), ts::errc::invalid_argument);
}

TEST(Json, MismatchedFieldIsInvalidArgumentNamingComponentAndField) {
    ts::World w;
    w.spawn(sz::Pos{1, 2});
    nlohmann::json j = ts::to_json(w);
    for (auto& c : j["components"]) {
        if (c["name"] == "sz::Pos") c["fields"][1]["type"] = "i32";
    }
    ts::World back;
    try {
        ts::from_json(j, back);
        FAIL() << "no throw";
    } catch (const ts::Error& e) {
        EXPECT_EQ(e.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(e.what()).find("sz::Pos"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'y'"), std::string::npos) << e.what();
    }
    EXPECT_EQ(back.count(), 0u);
}

TEST(StateHash, IndependentOfHistory) {
    ts::World a, b;
    const ts::Entity a1 = a.spawn(sz::Pos{1, 2});
    const ts::Entity a2 = a.spawn(sz::Vel{3, 4});
    // b makes the same entities with other archetype and row orders.
    const ts::Entity b1 = b.spawn();
    const ts::Entity b2 = b.spawn(sz::Vel{3, 4});
    b.add(b1, sz::Pos{1, 2});
    ASSERT_EQ(a1, b1);
    ASSERT_EQ(a2, b2);
    EXPECT_EQ(ts::state_hash(a), ts::state_hash(b));
    b.set(b1, sz::Pos{1, 2.5f});
    EXPECT_NE(ts::state_hash(a), ts::state_hash(b));
    // str fields hash by content, not by id.
    ts::World c, d;
    const ts::ComponentId label = c.component("SzLabel", {{"text", ts::Field::str}});
    d.component("SzLabel", {{"text", ts::Field::str}});
    d.strings().intern("unrelated");
    const ts::Entity ce = c.spawn();
    const ts::Entity de = d.spawn();
    c.add(ce, label);
    d.add(de, label);
    c.set_field(ce, label, "text", "same");
    d.set_field(de, label, "text", "same");
    EXPECT_EQ(ts::state_hash(c), ts::state_hash(d));
}
