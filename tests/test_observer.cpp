// Observers (observer.hpp): events, their order, handles, switches, changes made by callbacks
// and exceptions from them.
#include <tessera/tessera.hpp>

#include "common/counting_resource.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ts = tessera;

namespace {
struct Health {
    int hp = 0;
    friend bool operator==(const Health&, const Health&) = default;
};
struct Armor {
    int value = 0;
};
struct Name {
    std::string s;
};
struct Frozen {};
struct Chain {
    int depth = 0;
};
struct Unrelated {
    int v = 0;
};

// Appends one line per callback, so tests compare whole sequences.
struct Log {
    std::vector<std::string> lines;
    void operator()(std::string s) { lines.push_back(std::move(s)); }
};

// The ids of `A` and `B` in ascending order, as names (the order spawn/despawn use).
template <class A, class B>
std::vector<std::string> by_id(const std::string& a, const std::string& b) {
    if (ts::component_id<A>() < ts::component_id<B>()) return {a, b};
    return {b, a};
}
}  // namespace

TEST(Observer, OnAddSeesTheValueInPlace) {
    ts::World world;
    int seen = -1;
    ts::Observer o = world.on_add<Health>([&](ts::World& w, ts::Entity e, Health& h) {
        seen = h.hp;
        EXPECT_EQ(w.get<Health>(e).hp, h.hp);
        EXPECT_EQ(&h, w.try_get<Health>(e));
    });
    const ts::Entity e = world.spawn();
    world.add(e, Health{7});
    EXPECT_EQ(seen, 7);
    seen = -1;
    world.add(e, Health{8});  // a replace is a set, not an add
    EXPECT_EQ(seen, -1);
    world.spawn(Health{9});
    EXPECT_EQ(seen, 9);
}

TEST(Observer, TagsFireAddAndRemoveLikeComponents) {
    ts::World world;
    Log log;
    ts::Observer a = world.on_add<Frozen>([&](ts::World&, ts::Entity) { log("add"); });
    ts::Observer b = world.on_add<Frozen>([&](ts::World&, ts::Entity, Frozen&) { log("add&"); });
    ts::Observer r = world.on_remove<Frozen>([&](ts::World& w, ts::Entity e) {
        EXPECT_TRUE(w.has<Frozen>(e));
        log("remove");
    });
    const ts::Entity e = world.spawn(Health{1});
    world.add<Frozen>(e);
    world.add<Frozen>(e);  // already there: no add (tags have no value to set)
    EXPECT_TRUE(world.remove<Frozen>(e));
    EXPECT_FALSE(world.remove<Frozen>(e));
    EXPECT_EQ(log.lines, (std::vector<std::string>{"add", "add&", "remove"}));
}

TEST(Observer, OnRemoveRunsBeforeTheValueGoes) {
    ts::World world;
    std::string seen;
    ts::Observer o = world.on_remove<Name>([&](ts::World& w, ts::Entity e, const Name& n) {
        seen = n.s;
        EXPECT_TRUE(w.has<Name>(e));
        EXPECT_EQ(w.get<Name>(e).s, n.s);
    });
    const ts::Entity e = world.spawn(Name{"kept"}, Health{1});
    EXPECT_TRUE(world.remove<Name>(e));
    EXPECT_EQ(seen, "kept");
    EXPECT_FALSE(world.has<Name>(e));
    EXPECT_TRUE(world.has<Health>(e));
}

TEST(Observer, OnSetFiresForEveryWriteButGetMut) {
    ts::World world;
    std::vector<int> seen;
    ts::Observer o =
        world.on_set<Health>([&](ts::World&, ts::Entity, Health& h) { seen.push_back(h.hp); });
    const ts::Entity e = world.spawn(Health{1});  // an add, not a set
    world.set(e, Health{2});
    world.add(e, Health{3});  // replace
    EXPECT_TRUE(world.set_if_changed(e, Health{4}));
    EXPECT_FALSE(world.set_if_changed(e, Health{4}));  // unchanged: no event
    world.get_mut<Health>(e).hp = 5;                   // not announced yet
    EXPECT_EQ(seen, (std::vector<int>{2, 3, 4}));
    world.modified<Health>(e);
    EXPECT_EQ(seen, (std::vector<int>{2, 3, 4, 5}));
}

TEST(Observer, SetIfChangedWithTheSameValueFiresNothing) {
    ts::World world;
    int calls = 0;
    ts::Observer o = world.on_set<Health>([&](ts::World&, ts::Entity) { ++calls; });
    const ts::Entity e = world.spawn(Health{1});
    EXPECT_FALSE(world.set_if_changed(e, Health{1}));
    EXPECT_EQ(calls, 0);
}

TEST(Observer, ModifiedChecksTheEntityAndComponent) {
    ts::World world;
    const ts::Entity e = world.spawn(Health{1});
    try {
        world.modified<Armor>(e);
        FAIL() << "expected missing_component";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::missing_component);
    }
    world.despawn(e);
    try {
        world.modified<Health>(e);
        FAIL() << "expected not_alive";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::not_alive);
    }
}

TEST(Observer, ModifiedMarksChanged) {
    ts::World world;
    const ts::Entity e = world.spawn(Health{1});
    const std::uint64_t before = world.changed_tick<Health>(e);
    world.advance_tick();
    world.modified<Health>(e);
    EXPECT_GT(world.changed_tick<Health>(e), before);
}

TEST(Observer, SpawnOrderIsSpawnThenAddsByIdThenEnter) {
    ts::World world;
    Log log;
    auto q = world.query<const Health&>();
    ts::Observer s = world.on_spawn([&](ts::World& w, ts::Entity e) {
        EXPECT_TRUE(w.has<Health>(e));  // components in place
        log("spawn");
    });
    ts::Observer h = world.on_add<Health>([&](ts::World&, ts::Entity) { log("add Health"); });
    ts::Observer a = world.on_add<Armor>([&](ts::World&, ts::Entity) { log("add Armor"); });
    ts::Observer en = q.on_enter([&](ts::World&, ts::Entity) { log("enter"); });
    world.spawn(Armor{1}, Health{2});
    std::vector<std::string> expected{"spawn"};
    for (const std::string& s : by_id<Health, Armor>("add Health", "add Armor"))
        expected.push_back(s);
    expected.push_back("enter");
    EXPECT_EQ(log.lines, expected);
}

TEST(Observer, QueryObserverAndEachAgreeOnEveryFilter) {
    // Query observers and `each` share one archetype matcher (query_spec.hpp): whatever the
    // mix of `all`, `none` and `any` terms, the entities that entered and have not exited are
    // the ones `each` visits.
    ts::World world;
    auto q = world.query<const Health&>().without<Frozen>().any<Armor, Chain>();
    std::vector<ts::Entity> inside;
    ts::Observer en = q.on_enter([&](ts::World&, ts::Entity e) { inside.push_back(e); });
    ts::Observer ex = q.on_exit([&](ts::World&, ts::Entity e) {
        inside.erase(std::find(inside.begin(), inside.end(), e));
    });
    // Every subset of five components: built one add at a time, and spawned whole.
    for (unsigned mask = 0; mask < 32; ++mask) {
        const ts::Entity e = world.spawn();
        if ((mask & 1u) != 0) world.add(e, Health{1});
        if ((mask & 2u) != 0) world.add(e, Armor{2});
        if ((mask & 4u) != 0) world.add(e, Frozen{});
        if ((mask & 8u) != 0) world.add(e, Chain{3});
        if ((mask & 16u) != 0) world.add(e, Name{"n"});
        if ((mask & 7u) == 3u) world.spawn(Health{4}, Armor{5}, Name{"m"});
        if ((mask & 7u) == 7u) world.spawn(Health{4}, Armor{5}, Frozen{});
    }
    std::vector<ts::Entity> visited;
    q.each([&](ts::Entity e, const Health&) { visited.push_back(e); });
    std::sort(inside.begin(), inside.end());
    std::sort(visited.begin(), visited.end());
    EXPECT_FALSE(visited.empty());
    EXPECT_EQ(inside, visited);
    // Removals move entities out of the set both ways.
    for (const ts::Entity e : std::vector<ts::Entity>(visited)) world.remove<Health>(e);
    EXPECT_TRUE(inside.empty());
}

TEST(Observer, DespawnOrderIsDespawnThenRemovesByIdThenExitThenDeath) {
    ts::World world;
    Log log;
    auto q = world.query<const Health&>();
    const ts::Entity e = world.spawn(Health{5}, Armor{6});
    ts::Observer d = world.on_despawn([&](ts::World& w, ts::Entity x) {
        EXPECT_EQ(w.get<Health>(x).hp, 5);
        EXPECT_EQ(w.get<Armor>(x).value, 6);
        log("despawn");
    });
    ts::Observer h = world.on_remove<Health>([&](ts::World& w, ts::Entity x, Health& v) {
        EXPECT_EQ(v.hp, 5);
        EXPECT_TRUE(w.has<Armor>(x));  // nothing is gone before the entity dies
        log("remove Health");
    });
    ts::Observer a = world.on_remove<Armor>([&](ts::World&, ts::Entity) { log("remove Armor"); });
    ts::Observer ex = q.on_exit([&](ts::World& w, ts::Entity x) {
        EXPECT_TRUE(w.is_alive(x));
        log("exit");
    });
    EXPECT_TRUE(world.despawn(e));
    EXPECT_FALSE(world.is_alive(e));
    std::vector<std::string> expected{"despawn"};
    for (const std::string& s : by_id<Health, Armor>("remove Health", "remove Armor"))
        expected.push_back(s);
    expected.push_back("exit");
    EXPECT_EQ(log.lines, expected);
    EXPECT_FALSE(world.despawn(e));  // dead: nothing fires
    EXPECT_EQ(log.lines.size(), expected.size());
}

TEST(Observer, AddAndRemoveFireComponentEventsThenExitThenEnter) {
    ts::World world;
    Log log;
    auto thawed = world.query<const Health&>().without<Frozen>();
    auto frozen = world.query<const Health&>().with<Frozen>();
    ts::Observer o1 = thawed.on_exit([&](ts::World&, ts::Entity) { log("exit thawed"); });
    ts::Observer o2 = thawed.on_enter([&](ts::World&, ts::Entity) { log("enter thawed"); });
    ts::Observer o3 = frozen.on_exit([&](ts::World&, ts::Entity) { log("exit frozen"); });
    ts::Observer o4 = frozen.on_enter([&](ts::World&, ts::Entity) { log("enter frozen"); });
    ts::Observer o5 = world.on_add<Frozen>([&](ts::World&, ts::Entity) { log("add Frozen"); });
    ts::Observer o6 =
        world.on_remove<Frozen>([&](ts::World&, ts::Entity) { log("remove Frozen"); });
    const ts::Entity e = world.spawn(Health{1});
    EXPECT_EQ(log.lines, (std::vector<std::string>{"enter thawed"}));
    log.lines.clear();
    world.add<Frozen>(e);
    EXPECT_EQ(log.lines, (std::vector<std::string>{"add Frozen", "exit thawed", "enter frozen"}));
    log.lines.clear();
    world.remove<Frozen>(e);
    EXPECT_EQ(log.lines,
              (std::vector<std::string>{"remove Frozen", "exit frozen", "enter thawed"}));
}

TEST(Observer, SeveralComponentsOfOneCallGoInAscendingId) {
    ts::World world;
    Log log;
    ts::Observer a = world.on_add<Health>([&](ts::World&, ts::Entity) { log("Health"); });
    ts::Observer b = world.on_add<Armor>([&](ts::World&, ts::Entity) { log("Armor"); });
    ts::Observer c = world.on_remove<Health>([&](ts::World&, ts::Entity) { log("-Health"); });
    ts::Observer d = world.on_remove<Armor>([&](ts::World&, ts::Entity) { log("-Armor"); });
    const ts::Entity e = world.spawn();
    world.add(e, Armor{1}, Health{1});
    EXPECT_EQ(log.lines, (by_id<Health, Armor>("Health", "Armor")));
    log.lines.clear();
    world.remove<Armor, Health>(e);
    EXPECT_EQ(log.lines, (by_id<Health, Armor>("-Health", "-Armor")));
}

TEST(Observer, AddOfNewAndPresentFiresAddThenSet) {
    ts::World world;
    Log log;
    ts::Observer a = world.on_add<Armor>([&](ts::World&, ts::Entity) { log("add Armor"); });
    ts::Observer s = world.on_set<Health>([&](ts::World&, ts::Entity) { log("set Health"); });
    const ts::Entity e = world.spawn(Health{1});
    world.add(e, Health{2}, Armor{3});
    EXPECT_EQ(log.lines, (std::vector<std::string>{"add Armor", "set Health"}));
}

TEST(Observer, SeveralObserversRunInRegistrationOrder) {
    ts::World world;
    Log log;
    std::vector<ts::Observer> handles;
    for (int i = 0; i < 5; ++i) {
        handles.push_back(world.on_add<Health>(
            [&log, i](ts::World&, ts::Entity) { log("o" + std::to_string(i)); }));
    }
    handles[2].reset();
    handles.push_back(world.on_add<Health>([&](ts::World&, ts::Entity) { log("late"); }));
    world.spawn(Health{1});
    EXPECT_EQ(log.lines, (std::vector<std::string>{"o0", "o1", "o3", "o4", "late"}));
}

TEST(Observer, HandleUnsubscribesOnDestructionResetAndMove) {
    ts::World world;
    int calls = 0;
    {
        ts::Observer o = world.on_spawn([&](ts::World&, ts::Entity) { ++calls; });
        EXPECT_TRUE(o.active());
        EXPECT_EQ(world.observers().count(), 1u);
        world.spawn();
    }
    world.spawn();
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(world.observers().count(), 0u);

    ts::Observer o = world.on_spawn([&](ts::World&, ts::Entity) { ++calls; });
    ts::Observer moved = std::move(o);
    EXPECT_FALSE(o.active());  // NOLINT(bugprone-use-after-move): moved-from is empty
    EXPECT_TRUE(moved.active());
    world.spawn();
    EXPECT_EQ(calls, 2);
    moved.reset();
    EXPECT_FALSE(moved.active());
    world.spawn();
    EXPECT_EQ(calls, 2);

    ts::Observer target = world.on_spawn([&](ts::World&, ts::Entity) { calls += 100; });
    target = world.on_spawn([&](ts::World&, ts::Entity) { calls += 10; });  // old one goes
    world.spawn();
    EXPECT_EQ(calls, 12);
}

TEST(Observer, HandleOutlivingItsWorldIsInert) {
    ts::Observer o;
    {
        ts::World world;
        o = world.on_spawn([](ts::World&, ts::Entity) {});
        EXPECT_TRUE(o.active());
    }
    EXPECT_FALSE(o.active());
    o.reset();  // no world: nothing to do, no crash (ASan checks)
}

TEST(Observer, CallbackMayResetItsOwnHandle) {
    ts::World world;
    int calls = 0;
    ts::Observer o;
    std::string payload(100, 'x');  // a capture with heap memory: freed after the call
    o = world.on_add<Health>([&, payload](ts::World&, ts::Entity) {
        ++calls;
        o.reset();
        EXPECT_EQ(payload.size(), 100u);  // still alive while it runs
    });
    world.spawn(Health{1});
    world.spawn(Health{2});
    EXPECT_EQ(calls, 1);
}

TEST(Observer, ObserverAddedDuringAnEventSeesTheNextOne) {
    ts::World world;
    int late_calls = 0;
    std::vector<ts::Observer> more;
    ts::Observer o = world.on_add<Health>([&](ts::World& w, ts::Entity) {
        if (more.empty()) {
            more.push_back(w.on_add<Health>([&](ts::World&, ts::Entity) { ++late_calls; }));
        }
    });
    world.spawn(Health{1});
    EXPECT_EQ(late_calls, 0);
    world.spawn(Health{2});
    EXPECT_EQ(late_calls, 1);
}

TEST(Observer, SwitchesPerKindAndPerType) {
    ts::World world;
    Log log;
    ts::Observer a = world.on_add<Health>([&](ts::World&, ts::Entity) { log("add Health"); });
    ts::Observer b = world.on_add<Armor>([&](ts::World&, ts::Entity) { log("add Armor"); });
    ts::Observer s = world.on_spawn([&](ts::World&, ts::Entity) { log("spawn"); });

    world.observers().enable(ts::Event::add, false);
    EXPECT_FALSE(world.observers().is_enabled(ts::Event::add));
    world.spawn(Health{1}, Armor{1});
    EXPECT_EQ(log.lines, (std::vector<std::string>{"spawn"}));
    log.lines.clear();

    world.observers().enable(ts::Event::add);
    world.observers().enable<Health>(ts::Event::add, false);
    EXPECT_FALSE(world.observers().is_enabled<Health>(ts::Event::add));
    EXPECT_TRUE(world.observers().is_enabled<Armor>(ts::Event::add));
    world.observers().enable(ts::Event::spawn, false);
    world.spawn(Health{1}, Armor{1});
    EXPECT_EQ(log.lines, (std::vector<std::string>{"add Armor"}));
    log.lines.clear();

    world.observers().enable<Health>(ts::Event::add, true);
    world.spawn(Health{1});
    EXPECT_EQ(log.lines, (std::vector<std::string>{"add Health"}));
}

TEST(Observer, SwitchesWorkBeforeAnyObserverExists) {
    ts::World world;
    world.observers().enable<Health>(ts::Event::remove, false);
    Log log;
    ts::Observer r = world.on_remove<Health>([&](ts::World&, ts::Entity) { log("remove"); });
    const ts::Entity e = world.spawn(Health{1});
    world.remove<Health>(e);
    EXPECT_TRUE(log.lines.empty());
}

TEST(Observer, PerTypeSwitchOfAnEntityEventIsInvalid) {
    ts::World world;
    try {
        world.observers().enable<Health>(ts::Event::spawn, false);
        FAIL() << "expected invalid_argument";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::invalid_argument);
        EXPECT_NE(std::string(err.what()).find("Health"), std::string::npos);
    }
}

TEST(Observer, QueryEnterSkipsEntitiesThatAlreadyMatch) {
    ts::World world;
    const ts::Entity before = world.spawn(Health{1});
    std::vector<ts::Entity> entered;
    ts::Observer o;
    {
        auto q = world.query<const Health&>();
        o = q.on_enter([&](ts::World&, ts::Entity e) { entered.push_back(e); });
    }  // the subscription does not need the Query object
    const ts::Entity after = world.spawn(Health{2});
    world.add(before, Armor{1});  // still matches: no enter
    EXPECT_EQ(entered, (std::vector<ts::Entity>{after}));
}

TEST(Observer, QueryObserversUseAnyAndWithout) {
    ts::World world;
    Log log;
    auto q = world.query<ts::Entity>().any<Health, Armor>().without<Frozen>();
    ts::Observer en = q.on_enter([&](ts::World&, ts::Entity) { log("enter"); });
    ts::Observer ex = q.on_exit([&](ts::World&, ts::Entity) { log("exit"); });
    const ts::Entity e = world.spawn();
    EXPECT_TRUE(log.lines.empty());
    world.add(e, Armor{1});
    world.add(e, Health{1});  // still matches
    world.add<Frozen>(e);
    world.remove<Frozen>(e);
    world.remove<Armor, Health>(e);
    EXPECT_EQ(log.lines, (std::vector<std::string>{"enter", "exit", "enter", "exit"}));
}

TEST(Observer, EmptySpawnEntersQueriesWithoutRequiredTerms) {
    ts::World world;
    int entered = 0;
    auto all = world.query<ts::Entity>().without<Frozen>();
    ts::Observer o = all.on_enter([&](ts::World&, ts::Entity) { ++entered; });
    world.spawn();
    EXPECT_EQ(entered, 1);
}

TEST(Observer, CallbackChangesAreAppliedBeforeTheCallReturns) {
    ts::World world;
    ts::Observer o = world.on_add<Health>([](ts::World& w, ts::Entity e, Health&) {
        w.add(e, Armor{10});
        EXPECT_FALSE(w.has<Armor>(e));  // deferred while the callback runs
        const ts::Entity child = w.spawn(Name{"child"});
        EXPECT_TRUE(w.is_alive(child));
        EXPECT_FALSE(w.has<Name>(child));
    });
    const ts::Entity e = world.spawn();
    world.add(e, Health{1});
    EXPECT_TRUE(world.has<Armor>(e));
    EXPECT_EQ(world.count(), 2u);
    EXPECT_EQ(world.query<const Name&>().count(), 1u);
}

TEST(Observer, CallbackChangesFireTheirOwnObservers) {
    ts::World world;
    Log log;
    ts::Observer a = world.on_add<Health>([&](ts::World& w, ts::Entity e) {
        log("add Health");
        w.add(e, Armor{1});
        w.add<Frozen>(e);
    });
    ts::Observer b = world.on_add<Armor>([&](ts::World&, ts::Entity) { log("add Armor"); });
    ts::Observer c = world.on_add<Frozen>([&](ts::World&, ts::Entity) { log("add Frozen"); });
    ts::Observer d = world.on_add<Health>([&](ts::World&, ts::Entity) { log("add Health 2"); });
    world.spawn(Health{1});
    // Every observer of the first event runs before the queued changes apply, in order.
    EXPECT_EQ(log.lines,
              (std::vector<std::string>{"add Health", "add Health 2", "add Armor", "add Frozen"}));
}

TEST(Observer, LongChainsOfReactionsDoNotRecurse) {
    ts::World world;
    constexpr int depth = 200000;  // far deeper than any stack would take recursively
    ts::Observer o = world.on_add<Chain>([](ts::World& w, ts::Entity, Chain& c) {
        if (c.depth < depth) w.spawn(Chain{c.depth + 1});
    });
    world.spawn(Chain{1});
    EXPECT_EQ(world.count(), static_cast<std::size_t>(depth));
}

TEST(Observer, ThrowingObserverLeavesTheAddAndSkipsTheRest) {
    ts::World world;
    Log log;
    ts::Observer a = world.on_add<Health>([&](ts::World& w, ts::Entity e) {
        w.add(e, Name{"queued before the throw"});
        throw std::runtime_error("boom");
    });
    ts::Observer b = world.on_add<Health>([&](ts::World&, ts::Entity) { log("second"); });
    const ts::Entity e = world.spawn();
    EXPECT_THROW(world.add(e, Health{1}), std::runtime_error);
    EXPECT_TRUE(world.has<Health>(e));
    EXPECT_TRUE(log.lines.empty());
    EXPECT_TRUE(world.has<Name>(e));  // changes queued before the throw still apply
}

TEST(Observer, ThrowingOnRemoveStillRemoves) {
    ts::World world;
    int exits = 0;
    auto q = world.query<const Health&>();
    ts::Observer x = q.on_exit([&](ts::World&, ts::Entity) { ++exits; });
    ts::Observer r =
        world.on_remove<Health>([](ts::World&, ts::Entity) { throw std::runtime_error("no"); });
    const ts::Entity e = world.spawn(Health{1});
    EXPECT_THROW(world.remove<Health>(e), std::runtime_error);
    EXPECT_FALSE(world.has<Health>(e));
    EXPECT_EQ(exits, 0);  // skipped: after the failing observer
}

TEST(Observer, ThrowingOnDespawnStillDespawns) {
    ts::World world;
    ts::Observer d =
        world.on_despawn([](ts::World&, ts::Entity) { throw std::runtime_error("no"); });
    const ts::Entity e = world.spawn(ts::test::Tracked{1});
    EXPECT_THROW(world.despawn(e), std::runtime_error);
    EXPECT_FALSE(world.is_alive(e));
    EXPECT_EQ(world.count(), 0u);
}

TEST(Observer, ThrowingOnSpawnKeepsTheEntity) {
    ts::World world;
    int adds = 0;
    ts::Observer s = world.on_spawn([](ts::World&, ts::Entity) { throw std::runtime_error("no"); });
    ts::Observer a = world.on_add<Health>([&](ts::World&, ts::Entity) { ++adds; });
    EXPECT_THROW(world.spawn(Health{1}), std::runtime_error);
    EXPECT_EQ(world.count(), 1u);
    EXPECT_EQ(adds, 0);
    EXPECT_EQ(world.query<const Health&>().count(), 1u);
}

TEST(Observer, ChangesDeferredByAQueryLoopFireAtItsEnd) {
    ts::World world;
    Log log;
    for (int i = 0; i < 3; ++i) world.spawn(Health{i});
    ts::Observer s = world.on_spawn([&](ts::World& w, ts::Entity e) {
        EXPECT_TRUE(w.has<Armor>(e));  // a deferred spawn fires once, complete
        log("spawn");
    });
    ts::Observer a = world.on_add<Armor>([&](ts::World&, ts::Entity) { log("add Armor"); });
    ts::Observer n = world.on_add<Name>([&](ts::World&, ts::Entity) { log("add Name"); });
    ts::Observer r = world.on_remove<Health>([&](ts::World&, ts::Entity) { log("remove"); });
    bool in_loop = true;
    world.query<const Health&>().each([&](ts::Entity e, const Health& h) {
        if (h.hp == 0) world.spawn(Armor{1}, Name{"n"});
        if (h.hp == 1) world.remove<Health>(e);
        EXPECT_TRUE(log.lines.empty() || !in_loop);
    });
    in_loop = false;
    std::vector<std::string> expected{"spawn"};
    for (const std::string& x : by_id<Armor, Name>("add Armor", "add Name")) expected.push_back(x);
    expected.push_back("remove");
    EXPECT_EQ(log.lines, expected);
}

TEST(Observer, CommandBufferApplyFiresObservers) {
    ts::World world;
    Log log;
    ts::Observer s = world.on_spawn(
        [&](ts::World& w, ts::Entity e) { log(w.has<Health>(e) ? "spawn with Health" : "spawn"); });
    ts::Observer a = world.on_add<Health>([&](ts::World&, ts::Entity) { log("add Health"); });
    ts::Observer r = world.on_remove<Health>([&](ts::World&, ts::Entity) { log("remove"); });
    ts::Observer d = world.on_despawn([&](ts::World&, ts::Entity) { log("despawn"); });
    ts::CommandBuffer cmds;
    const ts::Entity p = cmds.spawn(Health{1});
    cmds.remove<Health>(p);
    cmds.despawn(p);
    EXPECT_EQ(cmds.apply(world), 4u);
    EXPECT_EQ(log.lines,
              (std::vector<std::string>{"spawn with Health", "add Health", "remove", "despawn"}));
}

TEST(Observer, SpawnManyFiresPerEntityAndReturnsItsEntities) {
    ts::World world;
    std::vector<ts::Entity> spawned;
    ts::Observer s = world.on_spawn([&](ts::World& w, ts::Entity e) {
        spawned.push_back(e);
        w.add<Frozen>(e);  // moves the rows the span would have pointed into
    });
    const std::span<const ts::Entity> made =
        world.spawn_many(50, [](std::size_t i, Health& h) { h.hp = static_cast<int>(i); });
    ASSERT_EQ(made.size(), 50u);
    EXPECT_TRUE(std::equal(made.begin(), made.end(), spawned.begin(), spawned.end()));
    for (std::size_t i = 0; i < made.size(); ++i) {
        EXPECT_EQ(world.get<Health>(made[i]).hp, static_cast<int>(i));
        EXPECT_TRUE(world.has<Frozen>(made[i]));
    }
}

TEST(Observer, SpawnManyInsideALoopIsDeferred) {
    ts::World world;
    world.spawn(Health{1});
    std::vector<ts::Entity> made;
    world.query<const Health&>().each([&](const Health&) {
        const auto span = world.spawn_many(3, [](std::size_t, Armor& a) { a.value = 4; });
        made.assign(span.begin(), span.end());
        for (const ts::Entity e : made) EXPECT_FALSE(world.has<Armor>(e));
    });
    ASSERT_EQ(made.size(), 3u);
    for (const ts::Entity e : made) EXPECT_EQ(world.get<Armor>(e).value, 4);
}

TEST(Observer, UnrelatedObserverChangesNothing) {
    ts::World world;
    int calls = 0;
    ts::Observer o = world.on_add<Unrelated>([&](ts::World&, ts::Entity) { ++calls; });
    const ts::Entity e = world.spawn(Health{1});
    world.add(e, Armor{2});
    world.remove<Health>(e);
    world.set(e, Armor{3});
    world.despawn(e);
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(world.count(), 0u);
}

TEST(Observer, CallbacksGetTheMovedToWorld) {
    ts::World first;
    ts::World* seen = nullptr;
    ts::Observer o = first.on_spawn([&](ts::World& w, ts::Entity) { seen = &w; });
    ts::World second = std::move(first);
    second.spawn();
    EXPECT_EQ(seen, &second);
    EXPECT_TRUE(o.active());
}

TEST(Observer, CallbackMemoryComesFromTheWorldsResourceAndIsReturned) {
    ts::test::CountingResource mr;
    {
        ts::World world(&mr);
        const std::size_t before = mr.allocations;
        std::vector<ts::Observer> handles;
        std::string big(200, 'y');
        handles.push_back(world.on_add<Health>([big](ts::World&, ts::Entity) {}));
        handles.push_back(world.query<const Health&>().on_enter([](ts::World&, ts::Entity) {}));
        EXPECT_GT(mr.allocations, before);
        world.spawn(Health{1});
    }
    EXPECT_EQ(mr.outstanding, 0u);
}

TEST(Observer, ObserverSeesEntityInsideItsArchetypeDuringEachOfItsEvents) {
    // Reading the whole entity from inside every kind of callback is safe.
    ts::World world;
    int reads = 0;
    auto read = [&](ts::World& w, ts::Entity e) {
        if (const Health* h = w.try_get<Health>(e)) reads += h->hp >= 0 ? 1 : 0;
    };
    ts::Observer a = world.on_add<Armor>(read);
    ts::Observer b = world.on_remove<Armor>(read);
    ts::Observer c = world.on_set<Armor>(read);
    ts::Observer d = world.on_despawn(read);
    const ts::Entity e = world.spawn(Health{1});
    world.add(e, Armor{1});
    world.set(e, Armor{2});
    world.remove<Armor>(e);
    world.despawn(e);
    EXPECT_EQ(reads, 4);
}

TEST(Observer, ObservedWritesFromParEachAreRefused) {
    ts::World world;
    for (int i = 0; i < 100; ++i) world.spawn(Health{i}, Armor{i});
    ts::Observer o = world.on_set<Health>([](ts::World&, ts::Entity) {});
    auto q = world.query<ts::Entity, const Armor&>();
    try {
        q.par_each([&](ts::Entity e, const Armor& a) { world.set(e, Health{a.value + 1}); });
        FAIL() << "expected invalid_argument";
    } catch (const ts::Error& err) {
        EXPECT_EQ(err.code(), ts::errc::invalid_argument);
    }
    // Writes of unobserved components stay allowed.
    q.par_each([&](ts::Entity e, const Armor&) { world.set(e, Armor{7}); });
    EXPECT_EQ(world.get<Armor>(world.entities().front()).value, 7);
}

namespace {
// Used by one test only, after everything else: its id is past what a new world has recorded.
struct FirstSeenLate {
    int v = 0;
};
}  // namespace

TEST(Observer, ATypeTheWorldHasNotRecordedYetTakesThePlainPath) {
    // A world with observers looks up whether a change is observed; for a component id it has
    // never recorded (past its table of components) the answer is no, without reading past it
    // (an out-of-bounds read under ASan before).
    ts::World world;
    int adds = 0;
    ts::Observer counting = world.on_add<Health>([&](ts::World&, ts::Entity) { ++adds; });
    const ts::Entity e = world.spawn(Health{1});
    world.add(e, FirstSeenLate{2});
    EXPECT_TRUE(world.remove<FirstSeenLate>(e));
    world.add(e, FirstSeenLate{3});
    EXPECT_EQ(world.get<FirstSeenLate>(e).v, 3);
    EXPECT_EQ(adds, 1);
}

TEST(Observer, OneSubscriptionToSeveralTypes) {
    ts::World w;
    std::vector<std::string> seen;
    ts::Observer o = w.on_add<Health, Armor, Frozen>([&](ts::World&, ts::Entity, auto& value) {
        using T = std::remove_cvref_t<decltype(value)>;
        if constexpr (std::is_same_v<T, Health>)
            seen.push_back("health " + std::to_string(value.hp));
        if constexpr (std::is_same_v<T, Armor>)
            seen.push_back("armor " + std::to_string(value.value));
        if constexpr (std::is_same_v<T, Frozen>) seen.push_back("frozen");
    });
    const ts::Entity e = w.spawn(Health{3});
    w.add(e, Armor{4});
    w.add(e, Frozen{});
    w.add(e, Name{"not observed"});
    EXPECT_EQ(seen, (std::vector<std::string>{"health 3", "armor 4", "frozen"}));
    EXPECT_TRUE(o.active());
    EXPECT_EQ(w.observers().count(), 3u) << "one per type";
    int removed = 0;
    ts::Observer r = w.on_remove<Health, Armor>([&](ts::World&, ts::Entity) { ++removed; });
    int set = 0;
    ts::Observer s = w.on_set<Health, Armor>([&](ts::World&, ts::Entity) { ++set; });
    w.set(e, Health{5}, Armor{6});
    EXPECT_EQ(set, 2);
    w.despawn(e);
    EXPECT_EQ(removed, 2);
    o.reset();  // ends all three
    EXPECT_FALSE(o.active());
    (void)w.spawn(Health{1}, Armor{1});
    EXPECT_EQ(seen.size(), 3u);
    EXPECT_EQ(w.observers().count(), 4u);
}

TEST(Observer, HasAndClearByEventAndType) {
    ts::World w;
    ts::Observers obs = w.observers();
    EXPECT_FALSE(obs.has<Health>(ts::Event::add));
    int a = 0;
    int b = 0;
    ts::Observer o1 = w.on_add<Health>([&](ts::World&, ts::Entity) { ++a; });
    ts::Observer o2 = w.on_add<Health, Armor>([&](ts::World&, ts::Entity) { ++b; });
    ts::Observer o3 = w.on_spawn([&](ts::World&, ts::Entity) {});
    EXPECT_TRUE(obs.has<Health>(ts::Event::add));
    EXPECT_TRUE(obs.has<Armor>(ts::Event::add));
    EXPECT_FALSE(obs.has<Health>(ts::Event::remove));
    EXPECT_FALSE(obs.has<Name>(ts::Event::add)) << "a type never observed";
    EXPECT_TRUE(obs.has(ts::Event::spawn));
    EXPECT_FALSE(obs.has(ts::Event::despawn));
    obs.enable(ts::Event::add, false);
    EXPECT_TRUE(obs.has<Health>(ts::Event::add)) << "switches don't count";
    obs.enable(ts::Event::add, true);

    EXPECT_EQ(obs.clear<Health>(ts::Event::add), 2u);
    EXPECT_FALSE(obs.has<Health>(ts::Event::add));
    EXPECT_FALSE(o1.active());
    EXPECT_TRUE(o2.active()) << "still observes Armor";
    (void)w.spawn(Health{1}, Armor{1});
    EXPECT_EQ(a, 0);
    EXPECT_EQ(b, 1);
    EXPECT_EQ(obs.clear<Health>(ts::Event::add), 0u);
    EXPECT_EQ(obs.clear(ts::Event::spawn), 1u);
    EXPECT_FALSE(o3.active());
}
