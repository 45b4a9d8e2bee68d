// Fault injection: every allocation a World operation makes is failed in turn, and the
// operation must then throw std::bad_alloc and leave the world exactly as it was (the strong
// exception guarantee of docs/design.md, "Principles" 5). Afterwards the same operation must
// succeed and give the same world as a run that never failed. All world storage, metadata included,
// comes from the world's memory resource, so destroying the world returns every byte. A
// replicator's delta and ack are swept over both its world's allocations and its own (global
// operator new, failed through common/global_new_counter.hpp): a retry makes the same message.
#include <tessera/net.hpp>
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <memory_resource>
#include <new>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

// ---------------------------------------------------------------------------------------------
// Global operator new counter, to prove that world operations on trivially copyable components
// allocate nothing outside the world's resource.
#include "common/failing_resource.hpp"
#include "common/global_new_counter.hpp"

namespace {

// A memory resource that forwards to new_delete_resource(), counts, and fails on demand.
using FailingResource = tessera::test::FaultResource;

// ---------------------------------------------------------------------------------------------
// Components.
struct A {
    std::int32_t v = 0;
    bool operator==(const A&) const = default;
};
struct B {
    float x = 0, y = 0;
    bool operator==(const B&) const = default;
};
struct Label {
    std::string s;
    bool operator==(const Label&) const = default;
};
struct Tag {};
struct Late {
    std::int64_t v = 0;
};
/// A relation with heap-owning data.
struct Rope {
    std::string s;
};
struct alignas(64) Wide {
    double v[3] = {};
};

/// Counts live instances; detects destroying an instance twice.
struct Counted {
    static inline long live = 0;
    static inline long double_destroyed = 0;
    static constexpr std::uint32_t kAlive = 0xA11FE5u;
    static constexpr std::uint32_t kDead = 0xDEADu;

    int v = 0;
    std::uint32_t magic = kAlive;

    Counted() { ++live; }
    explicit Counted(int value) : v(value) { ++live; }
    Counted(const Counted& o) : v(o.v) { ++live; }
    Counted(Counted&& o) noexcept : v(o.v) { ++live; }
    Counted& operator=(const Counted& o) {
        v = o.v;
        return *this;
    }
    Counted& operator=(Counted&& o) noexcept {
        v = o.v;
        return *this;
    }
    ~Counted() {
        if (magic != kAlive) ++double_destroyed;
        magic = kDead;
        --live;
    }
    bool operator==(const Counted& o) const { return v == o.v; }
};

}  // namespace

// Field metadata, so that save/load and to_json/from_json can run in the script.
TESSERA_REFLECT(A, v)
TESSERA_REFLECT(B, x, y)
TESSERA_REFLECT(Label, s)
TESSERA_REFLECT(Late, v)
TESSERA_REFLECT(Rope, s)
TESSERA_REFLECT(Wide, v)
TESSERA_REFLECT(Counted, v)

namespace {

std::string long_text(int i) {
    return "a label long enough to live on the heap, number " + std::to_string(i);
}

// ---------------------------------------------------------------------------------------------
// The script: a sequence of operations, each of which may refer to entities made before it.
struct Ctx {
    std::vector<tessera::Entity> e;      // entities from single spawns, in order
    std::vector<tessera::Entity> many;   // entities from spawn_many, in order
    std::vector<tessera::Entity> many2;  // entities from later spawn_many calls, in order
    std::vector<tessera::Entity> many3;  // entities from spawn_many calls made while observed
    bool tracked_a = false;              // tick arrays known to exist
    bool tracked_counted = false;
    /// Observers subscribed by the script (shared by copies of the context).
    std::vector<std::shared_ptr<tessera::Observer>> observers;
};

struct Step {
    const char* name;
    std::function<void(tessera::World&, Ctx&)> run;
    /// The step's changes are applied by a flush (a loop's end, spawn_many's return): a failure
    /// there leaves the failing call and the ones after it queued, each call whole, and the next
    /// flush completes the step.
    bool flushes = false;
    /// False for set-up steps made of several calls (no single guarantee to check): the
    /// sweep runs them but fails none of their allocations.
    bool swept = true;
};

/// Runs `call` once from inside a query loop, so that its structural changes are deferred and
/// applied when the loop ends.
void in_loop(tessera::World& w, const std::function<void()>& call) {
    bool done = false;
    w.query<const A&>().each([&](const A&) {
        if (!done) {
            done = true;
            call();
        }
    });
}

/// Applies whatever the world still has queued.
void flush(tessera::World& w) {
    w.each_entity([](tessera::Entity) {});
}

std::vector<Step> script() {
    using tessera::World;
    std::vector<Step> s;
    s.push_back({"spawn()", [](World& w, Ctx& c) { c.e.push_back(w.spawn()); }});  // e0
    s.push_back({"spawn(A, B)", [](World& w, Ctx& c) {
                     c.e.push_back(w.spawn(A{1}, B{2, 3}));
                 }});  // e1
    s.push_back({"spawn(Label, Counted)", [](World& w, Ctx& c) {
                     c.e.push_back(w.spawn(Label{long_text(2)}, Counted{3}));
                 }});  // e2
    s.push_back({"spawn_many(1000, A, Counted)", [](World& w, Ctx& c) {
                     auto span = w.spawn_many(1000, [](std::size_t i, A& a, Counted& k) {
                         a.v = static_cast<std::int32_t>(i);
                         k.v = static_cast<int>(i) * 2;
                     });
                     c.many.insert(c.many.end(), span.begin(), span.end());
                 }});
    s.push_back({"add(e0, A) new archetype", [](World& w, Ctx& c) { w.add(c.e[0], A{10}); }});
    s.push_back({"add(e1, Label) archetype move",
                 [](World& w, Ctx& c) { w.add(c.e[1], Label{long_text(11)}); }});
    s.push_back({"add(e1, A) replace", [](World& w, Ctx& c) { w.add(c.e[1], A{11}); }});
    s.push_back({"add(e0, B, Label) several", [](World& w, Ctx& c) {
                     w.add(c.e[0], B{5, 6}, Label{long_text(12)});
                 }});
    s.push_back({"add<Tag>(e2)", [](World& w, Ctx& c) { w.add<Tag>(c.e[2]); }});
    s.push_back(
        {"spawn_many(600, Label, Counted, Tag) grows a table of strings", [](World& w, Ctx& c) {
             auto span = w.spawn_many(600, [](std::size_t i, Label& l, Counted& k, Tag&) {
                 l.s = long_text(static_cast<int>(i) + 100);
                 k.v = static_cast<int>(i) + 100;
             });
             c.many2.insert(c.many2.end(), span.begin(), span.end());
         }});
    s.push_back({"add(many[7], Label) big source table",
                 [](World& w, Ctx& c) { w.add(c.many[7], Label{long_text(7)}); }});
    s.push_back({"remove<A>(e1)", [](World& w, Ctx& c) { EXPECT_TRUE(w.remove<A>(c.e[1])); }});
    s.push_back({"remove<A, B>(e0)", [](World& w, Ctx& c) { (void)w.remove<A, B>(c.e[0]); }});
    s.push_back({"changed_tick<A> activates tracking", [](World& w, Ctx& c) {
                     EXPECT_EQ(static_cast<std::uint64_t>(w.changed_tick<A>(c.many[3])), 1u);
                     c.tracked_a = true;
                 }});
    s.push_back({"advance_tick", [](World& w, Ctx&) { w.advance_tick(); }});
    s.push_back({"set_if_changed(many[5], A) tracked",
                 [](World& w, Ctx& c) { w.set_if_changed(c.many[5], A{999}); }});
    s.push_back({"set_if_changed(e2, Counted) activates tracking", [](World& w, Ctx& c) {
                     w.set_if_changed(c.e[2], Counted{30});
                     c.tracked_counted = true;
                 }});
    s.push_back({"set(many[9], A)", [](World& w, Ctx& c) { w.set(c.many[9], A{-9}); }});
    s.push_back({"add(e2, Counted) replace", [](World& w, Ctx& c) { w.add(c.e[2], Counted{77}); }});
    s.push_back({"spawn(Counted, A, Tag) tracked types", [](World& w, Ctx& c) {
                     c.e.push_back(w.spawn(Counted{4}, A{5}, Tag{}));  // e3
                 }});
    s.push_back({"spawn_many(1500, A, Counted) grows a tracked table", [](World& w, Ctx& c) {
                     auto span = w.spawn_many(1500, [](std::size_t i, A& a, Counted& k) {
                         a.v = static_cast<std::int32_t>(i) + 10000;
                         k.v = static_cast<int>(i) + 10000;
                     });
                     c.many2.insert(c.many2.end(), span.begin(), span.end());
                 }});
    s.push_back(
        {"add<Counted>(e0) value-initialised", [](World& w, Ctx& c) { w.add<Counted>(c.e[0]); }});
    s.push_back({"despawn(many2[3]) Label row",
                 [](World& w, Ctx& c) { EXPECT_TRUE(w.despawn(c.many2[3])); }});
    s.push_back({"spawn(Wide)", [](World& w, Ctx& c) {
                     c.e.push_back(w.spawn(Wide{{1, 2, 3}}));
                 }});  // e4
    s.push_back({"despawn(e1)", [](World& w, Ctx& c) { EXPECT_TRUE(w.despawn(c.e[1])); }});
    s.push_back({"despawn(many[0])", [](World& w, Ctx& c) { EXPECT_TRUE(w.despawn(c.many[0])); }});
    s.push_back(
        {"spawn() reuses an index", [](World& w, Ctx& c) { c.e.push_back(w.spawn()); }});  // e5
    s.push_back({"register_component<Late>", [](World& w, Ctx&) { w.register_component<Late>(); }});
    s.push_back({"add(e0, Late)", [](World& w, Ctx& c) { w.add(c.e[0], Late{42}); }});
    s.push_back(
        {"add(e5, Counted, A) tracked", [](World& w, Ctx& c) { w.add(c.e[5], Counted{8}, A{8}); }});
    s.push_back({"add(e2, Label, A) replace and new",
                 [](World& w, Ctx& c) { w.add(c.e[2], Label{long_text(21)}, A{21}); }});
    s.push_back({"spawn_many(2000, A, B) existing archetype", [](World& w, Ctx& c) {
                     auto span = w.spawn_many(2000, [](std::size_t i, A& a, B& b) {
                         a.v = static_cast<std::int32_t>(i) + 5000;
                         b = B{static_cast<float>(i), 1};
                     });
                     c.many.insert(c.many.end(), span.begin(), span.end());
                 }});
    s.push_back({"add(many[1500], Wide) 64-aligned column", [](World& w, Ctx& c) {
                     w.add(c.many[1500], Wide{{4, 5, 6}});
                 }});
    s.push_back(
        {"remove<Counted>(e2)", [](World& w, Ctx& c) { EXPECT_TRUE(w.remove<Counted>(c.e[2])); }});
    s.push_back({"get_mut<Counted>(many[2])",
                 [](World& w, Ctx& c) { w.get_mut<Counted>(c.many[2]).v = 123; }});
    s.push_back({"despawn(many[500]) Counted row",
                 [](World& w, Ctx& c) { EXPECT_TRUE(w.despawn(c.many[500])); }});
    s.push_back({"add(e3, Label) tracked source",
                 [](World& w, Ctx& c) { w.add(c.e[3], Label{long_text(3)}); }});
    s.push_back({"remove<Label, B>(e0) one absent",
                 [](World& w, Ctx& c) { EXPECT_TRUE((w.remove<Label, B>(c.e[0]))); }});
    s.push_back({"added_tick<Counted>(e3)", [](World& w, Ctx& c) {
                     EXPECT_EQ(static_cast<std::uint64_t>(w.added_tick<Counted>(c.e[3])), 2u);
                 }});
    // Relations: each relate / unrelate / despawn is one operation with the strong guarantee.
    s.push_back({"relate(e3, ChildOf, e0) first",
                 [](World& w, Ctx& c) { w.relate(c.e[3], tessera::ChildOf{}, c.e[0]); }});
    s.push_back({"relate(e3, ChildOf, e5) second parent",
                 [](World& w, Ctx& c) { w.relate(c.e[3], tessera::ChildOf{}, c.e[5]); }});
    s.push_back({"relate(e2, Rope, e4) heap data",
                 [](World& w, Ctx& c) { w.relate(c.e[2], Rope{long_text(40)}, c.e[4]); }});
    s.push_back({"relate(e2, Rope, e0) replaces the data",
                 [](World& w, Ctx& c) { w.relate(c.e[2], Rope{long_text(41)}, c.e[0]); }});
    s.push_back({"relate(many[10], ChildOf, e4)",
                 [](World& w, Ctx& c) { w.relate(c.many[10], tessera::ChildOf{}, c.e[4]); }});
    s.push_back({"relate(many[11], ChildOf, many[10])",
                 [](World& w, Ctx& c) { w.relate(c.many[11], tessera::ChildOf{}, c.many[10]); }});
    s.push_back({"relate(many[12], Rope, many[10])",
                 [](World& w, Ctx& c) { w.relate(c.many[12], Rope{long_text(42)}, c.many[10]); }});
    s.push_back({"unrelate<ChildOf>(e3, e0) one of two", [](World& w, Ctx& c) {
                     EXPECT_TRUE(w.unrelate<tessera::ChildOf>(c.e[3], c.e[0]));
                 }});
    s.push_back({"unrelate<Rope>(e2, e0) keeps e4",
                 [](World& w, Ctx& c) { EXPECT_TRUE(w.unrelate<Rope>(c.e[2], c.e[0])); }});
    s.push_back({"despawn(e4) cascades; survivors lose their last target",
                 [](World& w, Ctx& c) { EXPECT_TRUE(w.despawn(c.e[4])); }});
    s.push_back({"unrelate<ChildOf>(e3) all",
                 [](World& w, Ctx& c) { EXPECT_EQ(w.unrelate<tessera::ChildOf>(c.e[3]), 1u); }});
    // Whole-world copies: a failed copy leaves the world and leaks nothing; a restore is all or
    // nothing.
    s.push_back({"clone", [](World& w, Ctx&) {
                     const World copy = w.clone();
                     EXPECT_EQ(copy.count(), w.count());
                 }});
    s.push_back({"snapshot then restore", [](World& w, Ctx&) {
                     const tessera::Snapshot snap = w.snapshot();
                     w.restore(snap);
                 }});
    s.push_back({"save then load into another world", [](World& w, Ctx&) {
                     const std::vector<std::byte> bytes = tessera::save(w);
                     World other(w.memory_resource());
                     tessera::load(bytes, other);
                     EXPECT_EQ(tessera::state_hash(other), tessera::state_hash(w));
                 }});
    s.push_back({"to_json then from_json into another world", [](World& w, Ctx&) {
                     const nlohmann::json j = tessera::to_json(w);
                     World other(w.memory_resource());
                     tessera::from_json(j, other);
                     EXPECT_EQ(tessera::state_hash(other), tessera::state_hash(w));
                 }});
    return s;
}

/// The script of calls that change several components or entities at once, observed, deferred
/// and buffered, after a short prefix (kept apart from script() so that each failure point
/// replays a few steps, not the whole of it).
std::vector<Step> batch_script() {
    using tessera::World;
    std::vector<Step> s;
    s.push_back({"spawn()", [](World& w, Ctx& c) { c.e.push_back(w.spawn()); }});  // e0
    s.push_back({"spawn(A, B)", [](World& w, Ctx& c) { c.e.push_back(w.spawn(A{1}, B{2, 3})); }});
    s.push_back({"spawn_many(100, A, Counted)", [](World& w, Ctx& c) {
                     auto span = w.spawn_many(100, [](std::size_t i, A& a, Counted& k) {
                         a.v = static_cast<std::int32_t>(i);
                         k.v = static_cast<int>(i);
                     });
                     c.many.insert(c.many.end(), span.begin(), span.end());
                 }});
    s.push_back({"despawn(many[3]) and (many[9]): a free list", [](World& w, Ctx& c) {
                     EXPECT_TRUE(w.despawn(c.many[3]));
                     EXPECT_TRUE(w.despawn(c.many[9]));
                 }});
    s.push_back({"despawn(span of many[10..40), one twice, one dead)", [](World& w, Ctx& c) {
                     std::vector<tessera::Entity> doomed(c.many.begin() + 10, c.many.begin() + 40);
                     doomed.push_back(c.many[12]);
                     doomed.push_back(c.many[3]);  // dead
                     EXPECT_EQ(w.despawn(std::span<const tessera::Entity>(doomed)), 30u);
                 }});
    s.push_back({"changed_tick<Counted> activates tracking", [](World& w, Ctx& c) {
                     (void)w.changed_tick<Counted>(c.many[0]);
                     c.tracked_counted = true;
                 }});
    // Observed, deferred and buffered forms, and spawn_many whose init changes the world: each
    // call is one archetype move, all of it or none of it, and a failed spawn leaves the entity
    // index (generations, free list) as it was.
    s.push_back({"observers on add<A>, add<Label>, spawn", [](World& w, Ctx& c) {
                     auto count = std::make_shared<long>(0);
                     c.observers.push_back(std::make_shared<tessera::Observer>(
                         w.on_add<A>([count](World&, tessera::Entity) { ++*count; })));
                     c.observers.push_back(std::make_shared<tessera::Observer>(
                         w.on_add<Label>([count](World&, tessera::Entity) { ++*count; })));
                     c.observers.push_back(std::make_shared<tessera::Observer>(
                         w.on_spawn([count](World&, tessera::Entity) { ++*count; })));
                 }});
    s.push_back({"spawn_many(300, A, Label) observed", [](World& w, Ctx& c) {
                     auto span = w.spawn_many(300, [](std::size_t i, A& a, Label& l) {
                         a.v = static_cast<std::int32_t>(i) + 300;
                         l.s = long_text(static_cast<int>(i) + 300);
                     });
                     c.many3.insert(c.many3.end(), span.begin(), span.end());
                 }});
    s.push_back({"add(many3[0], B, Counted) observed several", [](World& w, Ctx& c) {
                     w.add(c.many3[0], B{7, 8}, Counted{70});
                 }});
    s.push_back({"remove<A, Label>(many3[1]) observed",
                 [](World& w, Ctx& c) { EXPECT_TRUE((w.remove<A, Label>(c.many3[1]))); }});
    s.push_back(
        {"deferred add(many3[2], B, Label, Counted) replaces and adds",
         [](World& w, Ctx& c) {
             in_loop(w, [&] { w.add(c.many3[2], B{1, 1}, Label{long_text(2)}, Counted{2}); });
         },
         true});
    s.push_back(
        {"deferred spawn(A, Label, Counted)",
         [](World& w, Ctx& c) {
             in_loop(w, [&] { c.e.push_back(w.spawn(A{60}, Label{long_text(60)}, Counted{60})); });
         },
         true});
    s.push_back(
        {"deferred remove<A, Label>(many3[3])",
         [](World& w, Ctx& c) { in_loop(w, [&] { (void)w.remove<A, Label>(c.many3[3]); }); },
         true});
    s.push_back({"deferred despawn(span of many3[40..60), many[50] twice)",
                 [](World& w, Ctx& c) {
                     in_loop(w, [&] {
                         std::vector<tessera::Entity> doomed(c.many3.begin() + 40,
                                                             c.many3.begin() + 60);
                         doomed.push_back(c.many[50]);
                         doomed.push_back(c.many[50]);
                         EXPECT_EQ(w.despawn(std::span<const tessera::Entity>(doomed)), 21u);
                     });
                 },
                 true});
    s.push_back({"despawn(span of many3[60..80)) observed", [](World& w, Ctx& c) {
                     std::vector<tessera::Entity> doomed(c.many3.begin() + 60,
                                                         c.many3.begin() + 80);
                     EXPECT_EQ(w.despawn(std::span<const tessera::Entity>(doomed)), 20u);
                 }});
    s.push_back({"deferred despawn(many3[4]) and spawn()",
                 [](World& w, Ctx& c) {
                     in_loop(w, [&] {
                         (void)w.despawn(c.many3[4]);
                         c.e.push_back(w.spawn());
                     });
                 },
                 true});
    s.push_back({"buffered add(many3[5], B, Label, Counted)", [](World& w, Ctx& c) {
                     tessera::CommandBuffer cb(w.memory_resource());
                     cb.add(c.many3[5], B{5, 5}, Label{long_text(55)}, Counted{55});
                     cb.apply(w);
                 }});
    s.push_back(
        {"buffered spawn(A, B, Label, Counted)", [](World& w, Ctx& c) {
             tessera::CommandBuffer cb(w.memory_resource());
             const tessera::Entity p = cb.spawn(A{61}, B{6, 1}, Label{long_text(61)}, Counted{61});
             cb.apply(w);
             c.e.push_back(cb.resolved(p));
         }});
    s.push_back({"buffered remove<B, Counted>(many3[0])", [](World& w, Ctx& c) {
                     tessera::CommandBuffer cb(w.memory_resource());
                     cb.remove<B, Counted>(c.many3[0]);
                     cb.apply(w);
                 }});
    s.push_back(
        {"spawn_many(200, A, Counted) whose init spawns, despawns and adds", [](World& w, Ctx& c) {
             const tessera::Entity victim = c.many3[7];
             const tessera::Entity grows = c.many3[8];
             auto span = w.spawn_many(200, [&](std::size_t i, A& a, Counted& k) {
                 a.v = static_cast<std::int32_t>(i) + 700;
                 k.v = static_cast<int>(i) + 700;
                 if (i % 50 == 0) (void)w.spawn(Label{long_text(static_cast<int>(i))});
                 if (i == 10) (void)w.despawn(victim);
                 if (i == 20) w.add(grows, B{2, 0}, Counted{20});
             });
             c.many3.insert(c.many3.end(), span.begin(), span.end());
         }});  // all or nothing, what init queued included
    s.push_back({"deferred spawn_many(50, A, Label)",
                 [](World& w, Ctx& c) {
                     in_loop(w, [&] {
                         auto span = w.spawn_many(50, [](std::size_t i, A& a, Label& l) {
                             a.v = static_cast<std::int32_t>(i) + 900;
                             l.s = long_text(static_cast<int>(i) + 900);
                         });
                         c.many3.insert(c.many3.end(), span.begin(), span.end());
                     });
                 },
                 true});
    s.push_back({"despawn_all(query<const A&, const Label&>()) observed", [](World& w, Ctx&) {
                     auto q = w.query<const A&, const Label&>();
                     const std::size_t n = q.count();
                     EXPECT_EQ(w.despawn_all(q), n);
                 }});
    s.push_back({"unsubscribe the observers", [](World&, Ctx& c) { c.observers.clear(); }});
    s.push_back({"despawn_all(query<const A&>().without<Label>())", [](World& w, Ctx&) {
                     auto q = w.query<const A&>().without<Label>();
                     const std::size_t n = q.count();
                     EXPECT_EQ(w.despawn_all(q), n);
                 }});
    return s;
}

/// Bulk despawns and unrelates over relations, and despawns queued in every kind of queue, of
/// entities that are relation sources, targets and ChildOf parents: each call is planned whole
/// (strong guarantee), and a queued despawn leaves its queue only once it took effect.
/// `observed` subscribes despawn, remove, unrelate and query observers first.
std::vector<Step> relation_batch_script(bool observed) {
    using tessera::ChildOf;
    using tessera::Entity;
    using tessera::World;
    using Span = std::span<const Entity>;
    std::vector<Step> s;
    s.push_back({"set-up: hierarchies, ropes and plain entities",
                 [](World& w, Ctx& c) {
                     for (int i = 0; i < 34; ++i) c.e.push_back(w.spawn(A{i}));
                     for (int i = 1; i <= 4; ++i) w.relate(c.e[i], ChildOf{}, c.e[0]);
                     w.relate(c.e[5], ChildOf{}, c.e[1]);  // e5: a grandchild of e0
                     w.relate(c.e[2], ChildOf{}, c.e[6]);  // e2: two parents
                     for (int i = 8; i <= 10; ++i) w.relate(c.e[i], Rope{long_text(i)}, c.e[7]);
                     w.relate(c.e[11], Rope{long_text(11)}, c.e[7]);
                     w.relate(c.e[11], Rope{}, c.e[8]);
                     w.relate(c.e[11], Rope{}, c.e[9]);
                     for (int i = 12; i <= 15; ++i) w.add(c.e[i], Counted{i}, Label{long_text(i)});
                     w.relate(c.e[17], ChildOf{}, c.e[16]);
                     w.relate(c.e[18], Rope{long_text(18)}, c.e[19]);
                     w.relate(c.e[21], ChildOf{}, c.e[20]);
                     w.relate(c.e[22], Rope{long_text(22)}, c.e[23]);
                     w.relate(c.e[25], ChildOf{}, c.e[24]);
                     w.relate(c.e[26], Rope{long_text(26)}, c.e[27]);
                     for (int i = 28; i < 32; ++i) w.add(c.e[i], Late{i});
                     for (int i = 30; i < 32; ++i) w.relate(c.e[i], ChildOf{}, c.e[i - 2]);
                     for (int i = 32; i < 34; ++i) w.relate(c.e[i], ChildOf{}, c.e[i - 4]);
                 },
                 false, false});
    if (observed) {
        s.push_back({"set-up: despawn, remove, unrelate and query observers",
                     [](World& w, Ctx& c) {
                         auto n = std::make_shared<long>(0);
                         auto keep = [&c](tessera::Observer o) {
                             c.observers.push_back(
                                 std::make_shared<tessera::Observer>(std::move(o)));
                         };
                         keep(w.on_despawn([n](World&, Entity) { ++*n; }));
                         keep(w.on_remove<A>([n](World&, Entity) { ++*n; }));
                         keep(w.on_unrelate<Rope>([n](World&, Entity, Entity) { ++*n; }));
                         keep(w.query<const Late&>().on_exit([n](World&, Entity) { ++*n; }));
                     },
                     false, false});
    }
    s.push_back({"despawn({e1, e5, e12}): e5 dies by e1's cascade first", [](World& w, Ctx& c) {
                     const std::vector<Entity> v{c.e[1], c.e[5], c.e[12]};
                     EXPECT_EQ(w.despawn(Span(v)), 3u);
                 }});
    s.push_back({"despawn(children(e0)): the span is the world's own list", [](World& w, Ctx& c) {
                     EXPECT_EQ(w.despawn(w.children(c.e[0])), 3u);
                     EXPECT_TRUE(w.children(c.e[0]).empty());
                 }});
    s.push_back({"unrelate<Rope>(e11, {e9, e8, e9})", [](World& w, Ctx& c) {
                     const std::vector<Entity> v{c.e[9], c.e[8], c.e[9]};
                     EXPECT_EQ(w.unrelate<Rope>(c.e[11], Span(v)), 2u);
                 }});
    s.push_back({"unrelate<Rope>(e11, targets<Rope>(e11)): its own list", [](World& w, Ctx& c) {
                     EXPECT_EQ(w.unrelate<Rope>(c.e[11], w.targets<Rope>(c.e[11])), 1u);
                     EXPECT_FALSE(w.has_relation<Rope>(c.e[11]));
                 }});
    s.push_back({"despawn(sources<Rope>(e7))", [](World& w, Ctx& c) {
                     EXPECT_EQ(w.despawn(w.sources<Rope>(c.e[7])), 3u);
                     EXPECT_TRUE(w.sources<Rope>(c.e[7]).empty());
                 }});
    s.push_back({"despawn_all(query<const Late&>()): 4 match, 2 more cascade", [](World& w, Ctx&) {
                     auto q = w.query<const Late&>();
                     EXPECT_EQ(w.despawn_all(q), 4u);
                     EXPECT_EQ(q.count(), 0u);
                 }});
    // Queued despawns: a bad_alloc while one applies leaves it and the rest queued.
    s.push_back({"buffered despawns of a parent, a rope target and its source",
                 [](World& w, Ctx& c) {
                     tessera::CommandBuffer cb(w.memory_resource());
                     cb.despawn(c.e[16]);
                     cb.despawn(c.e[19]);
                     cb.despawn(c.e[18]);
                     try {
                         cb.apply(w);
                     } catch (const std::bad_alloc&) {
                         EXPECT_NE(cb.size(), 0u) << "the failed command left the buffer";
                         cb.apply(w);  // resumes: the failure was a single one
                         throw;
                     }
                 },
                 true});
    s.push_back({"defer_end of despawns of a parent, a rope target and its source",
                 [](World& w, Ctx& c) {
                     // One call queues them (all or none), so that only defer_end can leave
                     // part of the block applied.
                     const std::vector<Entity> v{c.e[20], c.e[23], c.e[22]};
                     w.defer_begin();
                     try {
                         EXPECT_EQ(w.despawn(Span(v)), 3u);
                     } catch (...) {
                         w.defer_end();  // nothing queued
                         throw;
                     }
                     w.defer_end();
                 },
                 true});
    s.push_back({"a loop's end applies despawns of a parent and a rope target",
                 [](World& w, Ctx& c) {
                     const std::vector<Entity> v{c.e[24], c.e[27]};
                     in_loop(w, [&] { EXPECT_EQ(w.despawn(Span(v)), 2u); });
                 },
                 true});
    s.push_back({"despawn(everything) with relations", [](World& w, Ctx&) {
                     const std::vector<Entity> all = w.entities();
                     EXPECT_EQ(w.despawn(Span(all)), all.size());
                     EXPECT_EQ(w.count(), 0u);
                 }});
    return s;
}

// ---------------------------------------------------------------------------------------------
// A comparable picture of the whole world state.
struct Snapshot {
    std::size_t count = 0;
    std::uint64_t tick = 0;
    std::size_t archetypes = 0;
    std::unordered_map<std::uint64_t, std::string> rows;  // entity bits -> encoded components
    std::vector<tessera::Entity> next;  // the ids the next spawns get (generations, free list)
};

bool same(const Snapshot& a, const Snapshot& b) {
    return a.count == b.count && a.tick == b.tick && a.rows == b.rows && a.next == b.next;
}

std::string encode(tessera::World& w, tessera::Entity e, const Ctx& c) {
    std::ostringstream os;
    if (const A* a = w.try_get<A>(e)) {
        os << "A=" << a->v << ';';
        if (c.tracked_a) {
            os << "A@" << static_cast<std::uint64_t>(w.added_tick<A>(e)) << '/'
               << static_cast<std::uint64_t>(w.changed_tick<A>(e)) << ';';
        }
    }
    if (const B* b = w.try_get<B>(e)) os << "B=" << b->x << ',' << b->y << ';';
    if (const Label* l = w.try_get<Label>(e)) os << "Label=" << l->s << ';';
    if (const Counted* k = w.try_get<Counted>(e)) {
        os << "Counted=" << k->v << (k->magic == Counted::kAlive ? "" : "(destroyed!)") << ';';
        if (c.tracked_counted) {
            os << "Counted@" << static_cast<std::uint64_t>(w.added_tick<Counted>(e)) << '/'
               << static_cast<std::uint64_t>(w.changed_tick<Counted>(e)) << ';';
        }
    }
    if (const Late* l = w.try_get<Late>(e)) os << "Late=" << l->v << ';';
    if (const Wide* x = w.try_get<Wide>(e)) {
        os << "Wide=" << x->v[0] << ',' << x->v[1] << ',' << x->v[2] << ';';
        if (reinterpret_cast<std::uintptr_t>(x) % 64 != 0) os << "(misaligned!)";
    }
    if (w.has<Tag>(e)) os << "Tag;";
    for (const tessera::Entity t : w.parents(e)) os << "parent=" << t << ';';
    for (const tessera::Entity t : w.children(e)) os << "child=" << t << ';';
    for (const tessera::Entity t : w.targets<Rope>(e)) os << "rope->" << t << ';';
    for (const tessera::Entity t : w.sources<Rope>(e)) os << "rope<-" << t << ';';
    if (const Rope* r = w.relation<Rope>(e)) os << "Rope=" << r->s << ';';
    if (w.has<tessera::ChildOf>(e) != !w.parents(e).empty()) os << "(ChildOf disagrees)";
    if (w.has<A>(e) != (w.try_get<A>(e) != nullptr)) os << "(has<A> disagrees with try_get)";
    return os.str();
}

/// The ids the next `n` spawns of `w` will get: the free list from its head, then fresh indices.
/// Read from the entity index rather than by spawning in a clone (the same ids, tested in
/// test_world_batches.cpp), since the sweep takes thousands of snapshots.
std::vector<tessera::Entity> next_spawns(const tessera::World& w, int n) {
    const tessera::detail::Storage& st = w.storage();
    std::vector<tessera::Entity> out;
    std::uint32_t head = st.free_head();
    std::uint32_t fresh = st.record_count();
    for (int i = 0; i < n; ++i) {
        if (head != tessera::detail::no_index) {
            out.push_back(tessera::Entity{head, st.records()[head].generation});
            head = st.records()[head].row;
        } else {
            out.push_back(tessera::Entity{fresh++, 1});
        }
    }
    return out;
}

/// `settled`: no spawn is still queued (queued spawns are alive but in no table yet, so
/// entities() does not list them).
Snapshot snapshot(tessera::World& w, const Ctx& c, bool settled = true) {
    Snapshot s;
    s.count = static_cast<std::size_t>(w.count());
    s.tick = static_cast<std::uint64_t>(w.tick());
    s.archetypes = static_cast<std::size_t>(w.archetype_count());
    for (const tessera::Entity& e : w.entities()) {
        EXPECT_TRUE(w.is_alive(e));
        s.rows[e.to_bits()] = encode(w, e, c);
    }
    if (settled) {
        EXPECT_EQ(s.rows.size(), s.count) << "entities() has duplicates or disagrees with count()";
    }
    s.next = next_spawns(w, 3);
    return s;
}

/// Compares two snapshots; archetypes may only grow (failed ops may leave empty archetypes).
void expect_same(const Snapshot& expected, const Snapshot& actual, const std::string& what) {
    EXPECT_EQ(expected.count, actual.count) << what;
    EXPECT_EQ(expected.tick, actual.tick) << what;
    EXPECT_GE(actual.archetypes, expected.archetypes) << what;
    EXPECT_EQ(expected.next, actual.next) << what << ": the ids of the next spawns differ";
    EXPECT_EQ(expected.rows.size(), actual.rows.size()) << what;
    std::size_t reported = 0;
    for (const auto& [bits, enc] : expected.rows) {
        auto it = actual.rows.find(bits);
        if (it == actual.rows.end()) {
            ADD_FAILURE() << what << ": entity " << tessera::Entity::from_bits(bits) << " (" << enc
                          << ") is missing";
        } else if (it->second != enc) {
            ADD_FAILURE() << what << ": entity " << tessera::Entity::from_bits(bits) << " is\n  "
                          << it->second << "\nexpected\n  " << enc;
        } else {
            continue;
        }
        if (++reported == 5) return;
    }
    for (const auto& [bits, enc] : actual.rows) {
        if (!expected.rows.contains(bits)) {
            ADD_FAILURE() << what << ": unexpected entity " << tessera::Entity::from_bits(bits)
                          << " (" << enc << ")";
            if (++reported == 5) return;
        }
    }
}

void run_prefix(tessera::World& w, Ctx& c, const std::vector<Step>& steps, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) steps[i].run(w, c);
}

constexpr std::size_t kMaxK = 100000;

/// Fails every allocation of every step of `steps` in turn (each on a fresh world that ran the
/// steps before it) and checks the rollback, then the retry.
void sweep(const std::vector<Step>& steps) {
    std::size_t total_faults = 0;
    for (std::size_t i = 0; i < steps.size(); ++i) {
        if (!steps[i].swept) continue;
        const std::string op = steps[i].name;
        // What the world looks like after the step when nothing fails.
        Snapshot reference;
        {
            FailingResource res;
            {
                tessera::World w(&res);
                Ctx c;
                run_prefix(w, c, steps, i + 1);
                reference = snapshot(w, c);
            }
            EXPECT_EQ(res.bytes_outstanding(), 0u) << "after " << op;
        }
        ASSERT_EQ(Counted::live, 0) << "after a clean run up to " << op;

        for (std::size_t k = 1; k <= kMaxK; ++k) {
            const std::string what = op + ", allocation #" + std::to_string(k) + " failing";
            bool done = false;
            FailingResource res;
            {
                tessera::World w(&res);
                Ctx c;
                run_prefix(w, c, steps, i);
                const Ctx ctx_before = c;
                const Snapshot before = snapshot(w, c);
                const long counted_before = Counted::live;

                res.arm(k);
                bool threw = false;
                try {
                    steps[i].run(w, c);
                } catch (const std::bad_alloc&) {
                    threw = true;
                } catch (const std::exception& ex) {
                    ADD_FAILURE() << what << ": threw " << ex.what()
                                  << " instead of std::bad_alloc";
                    threw = true;
                }
                const bool fired = res.fired();
                res.disarm();

                if (!fired) {
                    // The step needs fewer than k allocations: it succeeded; check the result.
                    EXPECT_FALSE(threw) << what;
                    expect_same(reference, snapshot(w, c), what + " (succeeded)");
                    done = true;
                } else {
                    ++total_faults;
                    EXPECT_TRUE(threw) << what << ": the failure was swallowed";
                    c = ctx_before;
                    if (!steps[i].flushes) {  // else values may still be queued, owned
                        EXPECT_EQ(Counted::live, counted_before)
                            << what << ": Counted instances leaked or lost";
                    }
                    const Snapshot after = snapshot(w, c, !steps[i].flushes);
                    if (steps[i].flushes && !same(before, after)) {
                        // The step's own call took effect and a flush failed: the rest stayed
                        // queued, each call whole, and the next flush applies it.
                        EXPECT_NE(after.count, before.count) << what << ": half a call applied";
                        flush(w);
                        expect_same(reference, snapshot(w, c), what + " (resumed)");
                    } else {
                        expect_same(before, after, what + " (state after the failure)");
                        if (steps[i].flushes) flush(w);  // a whole call may have stayed queued
                        if (!steps[i].flushes || !same(reference, snapshot(w, c))) {
                            // The world keeps working: the same step now succeeds and gives the
                            // clean result.
                            steps[i].run(w, c);
                            expect_same(reference, snapshot(w, c), what + " (retried)");
                        }
                    }
                }
                EXPECT_EQ(res.bad_deallocations(), 0u) << what;
            }
            EXPECT_EQ(res.bytes_outstanding(), 0u) << what << ": the destroyed world leaked";
            EXPECT_EQ(res.blocks_outstanding(), 0u) << what;
            EXPECT_EQ(Counted::live, 0) << what << ": Counted instances leaked";
            EXPECT_EQ(Counted::double_destroyed, 0) << what;
            if (::testing::Test::HasFailure()) {
                ADD_FAILURE() << "stopping at step " << i << " (" << op << "), k = " << k;
                return;
            }
            if (done) break;
            ASSERT_LT(k, kMaxK) << op << " never stopped failing";
        }
    }
    // The script must actually exercise failures (the world allocates from the resource).
    EXPECT_GT(total_faults, steps.size());
}

TEST(FaultInjection, EveryAllocationFailureRollsBackEveryOperation) {
    sweep(script());
}

TEST(FaultInjection, EveryAllocationFailureRollsBackEveryBatchDeferredOrBuffered) {
    sweep(batch_script());
}

TEST(FaultInjection, BulkAndQueuedDespawnsOverRelationsChangeNothingOrComplete) {
    sweep(relation_batch_script(false));
}

TEST(FaultInjection, ObservedBulkAndQueuedDespawnsOverRelationsChangeNothingOrComplete) {
    sweep(relation_batch_script(true));
}

TEST(FaultInjection, ConstructionFailureLeaksNothing) {
    for (std::size_t k = 1; k <= 1000; ++k) {
        FailingResource res;
        res.arm(k);
        bool built = false;
        try {
            tessera::World w(&res);
            built = true;
            res.disarm();
            const tessera::Entity e = w.spawn(A{1});
            EXPECT_EQ(w.get<A>(e).v, 1);
        } catch (const std::bad_alloc&) {
            EXPECT_FALSE(built) << "k = " << k;
        }
        EXPECT_EQ(res.bytes_outstanding(), 0u) << "k = " << k;
        if (built || ::testing::Test::HasFailure()) break;
    }
}

TEST(FaultInjection, DestroyedWorldReturnsEveryByte) {
    FailingResource res;
    {
        tessera::World w(&res);
        auto span = w.spawn_many(5000, [](std::size_t i, A& a, Label& l, Counted& k) {
            a.v = static_cast<std::int32_t>(i);
            l.s = long_text(static_cast<int>(i));
            k.v = static_cast<int>(i);
        });
        const std::vector<tessera::Entity> ents(span.begin(), span.end());
        for (std::size_t i = 0; i < ents.size(); i += 3) w.add(ents[i], B{1, 2});
        for (std::size_t i = 0; i < ents.size(); i += 5) (void)w.remove<Label>(ents[i]);
        for (std::size_t i = 0; i < ents.size(); i += 7) w.add<Tag>(ents[i]);
        for (std::size_t i = 0; i < ents.size(); i += 11) (void)w.despawn(ents[i]);
        (void)w.changed_tick<A>(ents[1]);
        w.register_component<Late>();
        EXPECT_GT(res.allocations(), 0u);
        EXPECT_GT(res.bytes_outstanding(), 5000 * (sizeof(A) + sizeof(Label) + sizeof(Counted)))
            << "component columns should come from the world's resource";
    }
    EXPECT_EQ(res.bytes_outstanding(), 0u);
    EXPECT_EQ(res.blocks_outstanding(), 0u);
    EXPECT_EQ(res.allocations(), res.deallocations());
    EXPECT_EQ(Counted::live, 0);
    EXPECT_EQ(Counted::double_destroyed, 0);
}

// ---------------------------------------------------------------------------------------------
// Replication (net.hpp): a failed Replicator::delta or ack leaves the replicator able to make
// the message a run that never failed makes. The server world's allocations (its resource:
// the row logs, tables) and the replicator's own (global operator new: the message, its
// scratch, a new table) fail in turn.

/// A server with two clients (one whitelisted) whose next message holds every kind of change:
/// spawns, despawns, adds, removes, a new table, changed values (logged and scanned), and,
/// with `restored`, a restore (the replicator lists every row again).
struct NetServer {
    tessera::World w;
    tessera::net::Replicator rep;
    tessera::net::ClientId all, listed;
    std::vector<tessera::Entity> es;
    explicit NetServer(std::pmr::memory_resource* res, bool restored)
        : w(res), rep(w, {.max_lag = 100}) {
        rep.replicate<A, B, Label, Tag>();
        all = rep.connect();
        listed = rep.connect();
        rep.set_visibility(listed, tessera::net::Visibility::whitelist);
        for (int i = 0; i < 300; ++i) {
            es.push_back(i % 2 == 0 ? w.spawn(A{i}, B{1, 2}) : w.spawn(A{i}, Label{long_text(i)}));
            if (i % 3 == 0) rep.show(listed, es.back());
        }
        (void)rep.delta(all);  // the full states, acknowledged
        rep.ack(all, w.tick() - 1);
        (void)rep.delta(listed);
        rep.ack(listed, w.tick() - 1);
        std::optional<tessera::Snapshot> snap;
        if (restored) snap = w.snapshot();
        for (std::size_t i = 0; i < es.size(); i += 7) w.set(es[i], A{-1});
        for (std::size_t i = 1; i < es.size(); i += 30) w.get_mut<Label>(es[i]).s += "x";
        w.despawn(es[4]);
        w.add<Tag>(es[6]);
        (void)w.remove<B>(es[8]);
        w.add(es[10], Late{1});  // a new table
        (void)w.spawn(A{1000}, B{3, 3}, Label{long_text(1000)});
        if (restored) {
            w.restore(*snap);
            w.set(es[3], A{-2});
        }
    }
};

void sweep_replicator(bool global, bool restored) {
    std::vector<std::byte> want_all, want_listed, want_next;
    {
        FailingResource res;
        NetServer n(&res, restored);
        want_all = n.rep.delta(n.all);
        want_listed = n.rep.delta(n.listed);
        n.rep.ack(n.all, n.w.tick() - 2);
        n.w.set(n.es[2], A{77});
        want_next = n.rep.delta(n.all);
    }
    std::size_t faults = 0;
    for (std::size_t k = 1;; ++k) {
        FailingResource res;
        NetServer n(&res, restored);
        const std::string what = std::string(global ? "global new" : "world resource") +
                                 (restored ? ", restored" : "") + ", k = " + std::to_string(k);
        const auto arm = [&] {
            if (global)
                tessera::test::fail_global_new_at = tessera::test::global_news + k;
            else
                res.arm(k);
        };
        const auto disarm = [&] {
            tessera::test::fail_global_new_at = 0;
            res.disarm();
        };
        bool failed = false;
        // Each call with the fault armed, then again without it: the retry's message is the
        // clean run's.
        const auto call = [&](auto&& f) {
            arm();
            try {
                f();
                disarm();
                return true;
            } catch (const std::bad_alloc&) {
                disarm();
                failed = true;
                ++faults;
                return false;
            }
        };
        std::vector<std::byte> got;
        if (!call([&] { got = n.rep.delta(n.all); })) got = n.rep.delta(n.all);
        EXPECT_EQ(got, want_all) << what << ": delta(all)";
        if (!call([&] { got = n.rep.delta(n.listed); })) got = n.rep.delta(n.listed);
        EXPECT_EQ(got, want_listed) << what << ": delta(listed)";
        if (!call([&] { n.rep.ack(n.all, n.w.tick() - 2); })) n.rep.ack(n.all, n.w.tick() - 2);
        n.w.set(n.es[2], A{77});
        if (!call([&] { got = n.rep.delta(n.all); })) got = n.rep.delta(n.all);
        EXPECT_EQ(got, want_next) << what << ": the delta after the ack";
        if (::testing::Test::HasFailure() || !failed) break;
        ASSERT_LT(k, 100000u) << what << ": never stopped failing";
    }
    // A delta allocates from the world only to list rows again after a restore.
    if (global || restored) {
        EXPECT_GT(faults, 0u) << (global ? "global new" : "world resource");
    }
}

TEST(FaultInjection, AFailedReplicatorDeltaOrAckMakesTheSameMessageAgain) {
    sweep_replicator(true, false);
    sweep_replicator(false, false);
    sweep_replicator(true, true);
    sweep_replicator(false, true);
}

// Mirror::apply: a full state and then a delta with every kind of change (spawns, despawns,
// adds, removes, written values, a heap-owning value) applied to a client world whose
// allocations (its resource: tables, queue) or the mirror's own (global new: the mapping, the
// decoder, reflected values written in place) fail in turn. A failure of the mirror's own
// changes nothing the client can see (the mirrored entities, their replicated values, the
// mirror's size); no failure moves the mirror's tick; and applying the message again gives
// the world of a run that never failed: nothing lost, nothing twice.

/// What a client sees of its mirrored entities: by server entity, the replicated values.
struct Mirrored {
    std::optional<A> a;
    std::optional<B> b;
    std::optional<Label> label;
    bool tag = false;
    bool operator==(const Mirrored&) const = default;
};
using ClientView = std::map<std::uint64_t, Mirrored>;

ClientView client_view(tessera::World& w) {
    ClientView view;
    w.query<tessera::Entity, const tessera::net::Replica&>().each(
        [&](tessera::Entity e, const tessera::net::Replica& r) {
            Mirrored& m = view[r.remote.to_bits()];
            if (const A* a = w.try_get<A>(e)) m.a = *a;
            if (const B* b = w.try_get<B>(e)) m.b = *b;
            if (const Label* l = w.try_get<Label>(e)) m.label = *l;
            m.tag = w.has<Tag>(e);
        });
    return view;
}

/// A full state, then a delta holding every kind of change, from a server a clean mirror
/// acknowledges.
std::vector<std::vector<std::byte>> mirror_messages() {
    tessera::World w;
    tessera::net::Replicator rep(w);
    rep.replicate<A, B, Label, Tag>();
    const tessera::net::ClientId c = rep.connect();
    tessera::World client;
    tessera::net::Mirror clean(client);
    std::vector<tessera::Entity> es;
    for (int i = 0; i < 200; ++i)
        es.push_back(i % 2 == 0 ? w.spawn(A{i}, B{1, 2}) : w.spawn(A{i}, Label{long_text(i)}));
    std::vector<std::vector<std::byte>> out;
    out.push_back(rep.delta(c));
    rep.ack(c, clean.apply(out.back()));
    for (std::size_t i = 0; i < es.size(); i += 7) w.set(es[i], A{-1});
    for (std::size_t i = 1; i < es.size(); i += 30) w.get_mut<Label>(es[i]).s += "x";
    for (std::size_t i = 4; i < es.size(); i += 50) w.despawn(es[i]);
    w.add<Tag>(es[6]);
    (void)w.remove<B>(es[8]);
    w.add(es[9], B{5, 5});
    w.add<Tag>(es[10]);  // two adds to one entity: one move to a table no one had
    w.add(es[10], Label{long_text(10)});
    (void)w.remove<A>(es[14]);  // two removes and an add to one entity
    (void)w.remove<B>(es[14]);
    w.add<Tag>(es[14]);
    for (int i = 0; i < 20; ++i) (void)w.spawn(A{1000 + i}, Label{long_text(1000 + i)}, Tag{});
    out.push_back(rep.delta(c));
    return out;
}

void sweep_mirror(bool global) {
    const std::vector<std::vector<std::byte>> messages = mirror_messages();
    std::vector<ClientView> want;
    std::vector<std::uint64_t> ticks;
    {
        tessera::World client;
        tessera::net::Mirror m(client);
        for (const std::vector<std::byte>& msg : messages) {
            ticks.push_back(m.apply(msg));
            want.push_back(client_view(client));
        }
    }
    std::size_t faults = 0;
    for (std::size_t k = 1;; ++k) {
        FailingResource res;
        tessera::World client(&res);
        tessera::net::Mirror m(client);
        const std::string what =
            std::string(global ? "global new" : "world resource") + ", k = " + std::to_string(k);
        bool failed = false;
        for (std::size_t i = 0; i < messages.size(); ++i) {
            bool this_failed = false;
            const ClientView before = client_view(client);
            const std::size_t size = m.size();
            const std::uint64_t tick = m.tick();
            if (global)
                tessera::test::fail_global_new_at = tessera::test::global_news + k;
            else
                res.arm(k);
            try {
                EXPECT_EQ(m.apply(messages[i]), ticks[i]) << what;
            } catch (const std::bad_alloc&) {
                this_failed = failed = true;
                ++faults;
            }
            tessera::test::fail_global_new_at = 0;
            res.disarm();
            if (this_failed) {
                // Every allocation, the mirror's and the client world's (its tables, rows and
                // sparse entries for the whole batch), comes before anything changes.
                EXPECT_EQ(client_view(client), before) << what << ": message " << i;
                EXPECT_EQ(m.size(), size) << what << ": message " << i;
                EXPECT_EQ(m.tick(), tick) << what << ": message " << i;
                EXPECT_EQ(m.apply(messages[i]), ticks[i]) << what << ": the retry";
            }
            EXPECT_EQ(client_view(client), want[i]) << what << ": message " << i;
            EXPECT_EQ(m.size(), want[i].size()) << what << ": message " << i;
        }
        if (::testing::Test::HasFailure() || !failed) break;
        ASSERT_LT(k, 100000u) << what << ": never stopped failing";
    }
    EXPECT_GT(faults, 0u) << (global ? "global new" : "world resource");
}

TEST(FaultInjection, AFailedMirrorApplyChangesNothingAndTheRetryConverges) {
    sweep_mirror(true);
    sweep_mirror(false);
}

TEST(FaultInjection, WorldOperationsAllocateOnlyFromTheResource) {
    FailingResource res;
    tessera::World w(&res);
    // Warm up: the process-wide component registry may allocate on a type's first use.
    (void)w.spawn(A{1}, B{2, 3});
    w.register_component<Tag>();
    w.register_component<Wide>();

    std::vector<tessera::Entity> ents;
    ents.reserve(4000);
    const std::size_t reserved = tessera::test::global_news;
    for (int i = 0; i < 3000; ++i) ents.push_back(w.spawn(A{i}, B{1, 2}));
    for (std::size_t i = 0; i < ents.size(); i += 2) w.add(ents[i], Wide{{1, 2, 3}});
    for (std::size_t i = 0; i < ents.size(); i += 3) w.add<Tag>(ents[i]);
    for (std::size_t i = 0; i < ents.size(); i += 4) (void)w.remove<B>(ents[i]);
    (void)w.changed_tick<A>(ents[10]);
    w.advance_tick();
    w.set(ents[11], A{5});
    for (std::size_t i = 0; i < ents.size(); i += 5) (void)w.despawn(ents[i]);
    for (int i = 0; i < 500; ++i) ents.push_back(w.spawn(A{i}, B{1, 2}));
    const std::size_t after = tessera::test::global_news;
    EXPECT_EQ(after - reserved, 0u) << "World operations allocated with global operator new";
}

}  // namespace
