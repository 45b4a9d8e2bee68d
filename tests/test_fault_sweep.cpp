// The fault sweep: every public call that can allocate, run on a small world (plain, observed,
// related, both), with the world's allocations failing once at the k-th and from the k-th on,
// for every k until the call no longer reaches the fault. After each failure the whole state
// is compared with the one before the call: count(), state_hash, to_json (row order included;
// empty archetypes aside, which a failed call may leave) and the order of each_entity. Calls
// whose documented guarantee is weaker than strong are checked against that guarantee
// (CommandBuffer::apply, a deferral's flush, a schedule run). Then the fault is lifted, the call
// (or the flush it left pending) is retried and must give the world a run that never failed
// gives. Destroying the world must then return every byte.
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/failing_resource.hpp"

namespace {

using tessera::Entity;
using tessera::World;
using Mode = tessera::test::FaultResource::Mode;

// ---------------------------------------------------------------------------------------------
// Components.
struct A {
    std::int32_t v = 0;
};
struct B {
    float x = 0, y = 0;
};
struct Label {
    std::string s;
};
struct Tag {};
/// Counts live instances: a failed call may neither leak nor lose one.
struct Counted {
    static inline long live = 0;
    int v = 0;
    Counted() { ++live; }
    explicit Counted(int value) : v(value) { ++live; }
    Counted(const Counted& o) : v(o.v) { ++live; }
    Counted(Counted&& o) noexcept : v(o.v) { ++live; }
    Counted& operator=(const Counted&) = default;
    Counted& operator=(Counted&&) noexcept = default;
    ~Counted() { --live; }
};
/// Requires Label and Counted (component_traits below): its adds bring them along.
struct Needy {
    int v = 0;
};
/// A component that can't be copied (so no copy of the world can be made).
struct Solo {
    int v = 0;
    Solo() = default;
    explicit Solo(int value) : v(value) {}
    Solo(Solo&&) noexcept = default;
    Solo& operator=(Solo&&) noexcept = default;
    Solo(const Solo&) = delete;
    Solo& operator=(const Solo&) = delete;
};
/// A custom relation with heap-owning data, and a tag relation.
struct Rope {
    std::string s;
};
struct Likes {};
/// An event and a resource.
struct Ping {
    std::string s;
};
struct Config {
    std::string s;
};
/// Sparse components (storage_kind::sparse, traits below): one holding a Counted (so a failed
/// call may neither leak nor lose its values) and a tag.
struct Aura {
    Counted c;
    std::int32_t v = 0;
    Aura() = default;
    explicit Aura(std::int32_t value) : c(value), v(value) {}
};
struct Mark {};

}  // namespace

TESSERA_REFLECT(A, v)
TESSERA_REFLECT(B, x, y)
TESSERA_REFLECT(Label, s)
TESSERA_REFLECT(Counted, v)
TESSERA_REFLECT(Needy, v)
TESSERA_REFLECT(Rope, s)
TESSERA_REFLECT(Solo, v)
TESSERA_REFLECT(Aura, v)

namespace {

std::string text(int i) {
    return "a text long enough to live on the heap, number " + std::to_string(i);
}

/// Runs `call` once from inside a query loop over A, so that its structural changes are
/// queued and applied when the loop ends.
template <class F>
void once_in_loop(World& w, F&& call) {
    bool done = false;
    w.query<const A&>().each([&](const A&) {
        if (done) return;
        done = true;
        call();
    });
}

// ---------------------------------------------------------------------------------------------
// The world a row starts from, and what its call needs.
}  // namespace

template <>
struct tessera::component_traits<Needy> {
    using required = tessera::type_list<Label, Counted>;
};
template <>
struct tessera::component_traits<Aura> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};
template <>
struct tessera::component_traits<Mark> {
    static constexpr auto storage = tessera::storage_kind::sparse;
};

namespace {

struct Fix {
    std::vector<Entity> e;  // e[0..9], see setup()
    std::vector<Entity> many;
    Entity root, kid1, kid2, grand;  // the hierarchy of the related variants
    Entity prefab;                   // a prefab with a child prefab (prepare_prefab)
    tessera::ComponentId rt;         // a runtime component
    tessera::ComponentId named;      // a runtime component with a str field
    std::vector<tessera::Observer> observers;
    std::shared_ptr<void> query;  // keeps the observed query alive
    std::shared_ptr<long> fired = std::make_shared<long>(0);
    std::unique_ptr<tessera::CommandBuffer> cb;
    std::optional<tessera::Snapshot> snap;
    std::vector<std::byte> bytes;
    nlohmann::json json;
    std::unique_ptr<World> other;  // the target of a load
    World* target = nullptr;       // the world the row's call changes (default: the world)
    std::function<void()> arm;     // arms the fault, for rows that arm late
    std::function<void()> disarm;  // lifts it early (the harness still sees that it fired)
    std::unique_ptr<tessera::Schedule> schedule;
};

enum Variant : unsigned { kObserved = 1, kRelated = 2 };

/// A small world: a few tables (one tracked), heap-owning and counted values, a free list, a
/// runtime component; with observers on add/remove/spawn/despawn and a query observer; with a
/// ChildOf hierarchy (a child with two parents), a custom relation with data and a tag relation.
void setup(World& w, Fix& f, unsigned variant) {
    f.target = &w;
    f.rt = w.component("SweepHealth", {{"hp", tessera::Field::i32}});
    f.e.push_back(w.spawn(A{0}));                           // e0
    f.e.push_back(w.spawn(A{1}, B{1, 1}));                  // e1
    f.e.push_back(w.spawn(A{2}, B{2, 2}, Label{text(2)}));  // e2
    f.e.push_back(w.spawn(Label{text(3)}, Counted{3}));     // e3
    f.e.push_back(w.spawn(A{4}, Counted{4}, Tag{}));        // e4
    const Entity gone = w.spawn(A{-1});
    f.e.push_back(w.spawn(A{5}, B{5, 5}));                  // e5
    f.e.push_back(w.spawn());                               // e6
    f.e.push_back(w.spawn(A{7}, B{7, 7}));                  // e7
    f.e.push_back(w.spawn(Label{text(8)}, Counted{8}));     // e8
    f.e.push_back(w.spawn(A{9}, B{9, 9}, Label{text(9)}));  // e9
    (void)w.despawn(gone);                                  // a free list
    w.add(f.e[7], f.rt);
    f.named =
        w.component("SweepNamed", {{"name", tessera::Field::str}, {"n", tessera::Field::i32}});
    w.add(f.e[8], f.named);
    w.set_field(f.e[8], f.named, "name", std::string_view("first"));
    const auto span = w.spawn_many(6, [](std::size_t i, A& a, B& b) {
        a.v = 100 + static_cast<std::int32_t>(i);
        b = B{static_cast<float>(i), 0};
    });
    f.many.assign(span.begin(), span.end());
    (void)w.changed_tick<A>(f.e[1]);  // A is tracked: its ticks are part of the state
    w.advance_tick();
    w.set(f.e[5], A{55});
    w.send_event(Ping{text(1)});
    w.insert_resource(Config{text(2)});
    if ((variant & kRelated) != 0) {
        f.root = w.spawn(A{200});
        f.kid1 = w.spawn(A{201}, B{1, 2});
        f.kid2 = w.spawn(Label{text(202)});
        f.grand = w.spawn(A{203});
        w.relate<tessera::ChildOf>(f.kid1, f.root);
        w.relate<tessera::ChildOf>(f.kid2, f.root);
        w.relate<tessera::ChildOf>(f.grand, f.kid1);
        w.relate<tessera::ChildOf>(f.grand, f.kid2);  // two parents
        w.relate<tessera::ChildOf>(f.e[4], f.e[0]);
        w.relate(f.e[2], Rope{text(20)}, f.e[5]);
        w.relate(f.e[3], Rope{text(30)}, f.e[5]);
        w.relate(f.e[3], Rope{text(31)}, f.e[0]);
        w.relate<Likes>(f.e[0], f.e[1]);
        w.relate<Likes>(f.e[9], f.e[1]);
    }
    if ((variant & kObserved) != 0) {
        auto n = f.fired;
        auto count = [n](World&, Entity) { ++*n; };
        f.observers.push_back(w.on_add<A>(count));
        f.observers.push_back(w.on_remove<A>(count));
        f.observers.push_back(w.on_add<Label>(count));
        f.observers.push_back(w.on_remove<Label>(count));
        f.observers.push_back(w.on_add<Counted>(count));
        f.observers.push_back(w.on_spawn(count));
        f.observers.push_back(w.on_despawn(count));
        auto q = std::make_shared<decltype(w.query<const A&, const B&>())>(
            w.query<const A&, const B&>());
        f.observers.push_back(q->on_enter(count));
        f.observers.push_back(q->on_exit(count));
        f.query = q;
        if ((variant & kRelated) != 0) {
            f.observers.push_back(
                w.on_relate<tessera::ChildOf>([n](World&, Entity, Entity) { ++*n; }));
            f.observers.push_back(w.on_unrelate<Rope>([n](World&, Entity, Entity) { ++*n; }));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The state a call must leave as it was.
struct State {
    std::int64_t count = 0;
    std::uint64_t hash = 0;
    nlohmann::json json;
    std::vector<Entity> order;  // each_entity
    std::string extra;          // what the row adds (events, resources)
};

/// to_json without what a failed call may leave: empty archetypes (and the component list,
/// which names the components of those too; each table lists its components by name instead)
/// and relation kinds without pairs.
nlohmann::json normal(const nlohmann::json& j) {
    nlohmann::json out = j;
    out.erase("components");
    nlohmann::json tables = nlohmann::json::array();
    for (const nlohmann::json& a : j.at("archetypes")) {
        if (a.at("entities").empty()) continue;
        nlohmann::json t = a;
        nlohmann::json names = nlohmann::json::array();
        for (const nlohmann::json& c : a.at("components"))
            names.push_back(j.at("components").at(c.get<std::size_t>()));
        t["components"] = std::move(names);
        tables.push_back(std::move(t));
    }
    out["archetypes"] = std::move(tables);
    // Sparse sections name their component by index too.
    if (j.contains("sparse")) {
        for (nlohmann::json& section : out["sparse"])
            section["component"] =
                j.at("components").at(section.at("component").get<std::size_t>());
    }
    // Likewise a relation kind registered on the way, with no pair.
    nlohmann::json relations = nlohmann::json::array();
    for (const nlohmann::json& k : j.at("relations")) {
        if (!k.at("sources").empty()) relations.push_back(k);
    }
    out["relations"] = std::move(relations);
    return out;
}

using Extra = std::function<std::string(World&)>;

State capture(World& w, const Extra& extra) {
    State s;
    s.count = static_cast<std::int64_t>(w.count());
    s.hash = tessera::state_hash(w);
    s.json = normal(tessera::to_json(w));
    w.each_entity([&](Entity e) { s.order.push_back(e); });
    if (extra) s.extra = extra(w);
    return s;
}

std::string entities_text(const std::vector<Entity>& es) {
    std::ostringstream os;
    for (std::size_t i = 0; i < es.size() && i < 40; ++i) os << (i ? " " : "") << es[i];
    if (es.size() > 40) os << " ...";
    return os.str();
}

/// The first difference between two states, or empty.
std::string difference(const State& want, const State& got) {
    std::ostringstream os;
    if (want.count != got.count) {
        os << "count " << got.count << " vs " << want.count;
    } else if (want.json != got.json) {
        const nlohmann::json patch = nlohmann::json::diff(want.json, got.json);
        std::string first = patch.empty() ? "" : patch.front().dump();
        if (first.size() > 300) first = first.substr(0, 300) + "...";
        os << "to_json differs (" << patch.size() << " changes; first " << first << ")"
           << (want.hash == got.hash ? ", state_hash equal" : ", state_hash differs");
    } else if (want.hash != got.hash) {
        os << "state_hash differs";
    } else if (want.order != got.order) {
        os << "each_entity order [" << entities_text(got.order) << "] vs ["
           << entities_text(want.order) << "]";
    } else if (want.extra != got.extra) {
        os << "extra state '" << got.extra << "' vs '" << want.extra << "'";
    }
    return os.str();
}

// ---------------------------------------------------------------------------------------------
// The rows.
enum class Guarantee {
    strong,    ///< a failure changes nothing
    buffer,    ///< CommandBuffer::apply: the commands before the failing one took effect and
               ///< left the buffer; it and the rest stay; a later apply resumes
    flush,     ///< a failing flush leaves the failing call and the rest queued; the next flush
               ///< applies them all
    schedule,  ///< a failing run reports system_failed; the world stays consistent and usable
};

struct Row {
    std::string name;
    std::function<void(World&, Fix&)> op;
    Guarantee guarantee = Guarantee::strong;

    /// Runs before the state is captured, unarmed (takes a snapshot, makes the target world).
    std::function<void(World&, Fix&)> prepare;
    /// The op arms the fault itself (`Fix::arm`), after its unfailing prologue.
    bool late_arm = false;
    Extra extra;
    /// For Guarantee::buffer: records the first `limit` calls of the row into `f.cb`.
    std::function<void(World&, Fix&, std::size_t limit)> record;
};

/// Records the calls of a CommandBuffer row one at a time, up to a limit.
struct Limit {
    std::size_t limit;
    std::size_t n = 0;
    bool next() { return n++ < limit; }
};

void buffered_plain(World&, Fix& f, std::size_t limit) {
    f.cb = std::make_unique<tessera::CommandBuffer>(f.target->memory_resource());
    tessera::CommandBuffer& cb = *f.cb;
    Limit l{limit};
    Entity p = Entity::null();
    if (l.next()) p = cb.spawn(A{300}, Label{text(300)}, Counted{300});
    if (l.next()) cb.add(f.e[0], B{3, 0}, Label{text(301)});
    if (l.next()) cb.remove<B>(f.e[5]);
    if (l.next()) cb.despawn(f.e[6]);
    if (l.next()) cb.add(f.e[8], A{302});
    if (l.next()) cb.relate(p, Rope{text(303)}, f.e[7]);
    if (l.next()) cb.relate(f.e[9], tessera::ChildOf{}, f.e[7]);
    if (l.next()) cb.remove<Tag>(f.e[4]);
}

void buffered_remove_several(World&, Fix& f, std::size_t limit) {
    f.cb = std::make_unique<tessera::CommandBuffer>(f.target->memory_resource());
    tessera::CommandBuffer& cb = *f.cb;
    Limit l{limit};
    if (l.next()) cb.add(f.e[0], Label{text(320)});
    if (l.next()) cb.remove<Label, Counted>(f.e[3]);
    if (l.next()) cb.remove<A, B>(f.e[9]);
}

void buffered_despawn_related(World&, Fix& f, std::size_t limit) {
    f.cb = std::make_unique<tessera::CommandBuffer>(f.target->memory_resource());
    tessera::CommandBuffer& cb = *f.cb;
    Limit l{limit};
    if (l.next()) cb.add(f.e[1], Label{text(310)});
    if (l.next()) cb.despawn(f.e[0]);  // a ChildOf parent, a Rope and Likes target, a source
    if (l.next()) cb.despawn(f.e[5]);  // a Rope target
    if (l.next()) cb.despawn(f.root == Entity::null() ? f.e[9] : f.root);  // a hierarchy's root
    if (l.next()) cb.spawn(A{311});
}

/// A prefab with heap-owning and counted values and a child prefab (a row's prepare).
void prepare_prefab(World& w, Fix& f) {
    f.prefab = w.prefab(A{500}, Label{text(500)}, Counted{500});
    const Entity kid = w.prefab(B{5, 5}, Label{text(501)}, Counted{501});
    w.relate<tessera::ChildOf>(kid, f.prefab);
    w.relate<tessera::ChildOf>(w.prefab(Counted{502}), kid);
}

Row make(std::string name, std::function<void(World&, Fix&)> op,
         Guarantee guarantee = Guarantee::strong) {
    Row row;
    row.name = std::move(name);
    row.op = std::move(op);
    row.guarantee = guarantee;
    return row;
}

std::vector<Row> rows() {
    std::vector<Row> r;
    using tessera::ChildOf;
    // Single calls (the sweep's own check that strong calls stay strong).
    r.push_back(make("spawn(A, B, Label, Counted)", [](World& w, Fix&) {
        (void)w.spawn(A{400}, B{4, 0}, Label{text(400)}, Counted{400});
    }));
    r.push_back(make("add(e0, B, Label) several", [](World& w, Fix& f) {
        w.add(f.e[0], B{1, 0}, Label{text(401)});
    }));
    r.push_back(make("remove<A, B>(e1) several",
                     [](World& w, Fix& f) { EXPECT_TRUE((w.remove<A, B>(f.e[1]))); }));
    r.push_back(make("relate(e6, Rope, e7) first target",
                     [](World& w, Fix& f) { w.relate(f.e[6], Rope{text(402)}, f.e[7]); }));
    r.push_back(make("unrelate<Rope>(e3, e0)",
                     [](World& w, Fix& f) { (void)w.unrelate<Rope>(f.e[3], f.e[0]); }));
    r.push_back(make("despawn(e0)", [](World& w, Fix& f) { EXPECT_TRUE(w.despawn(f.e[0])); }));
    r.push_back(
        make("despawn(e6) no relation", [](World& w, Fix& f) { EXPECT_TRUE(w.despawn(f.e[6])); }));
    r.push_back(make("add(e0, runtime component)", [](World& w, Fix& f) { w.add(f.e[0], f.rt); }));
    // Required components: the ones brought along are made before the move, in the same move.
    r.push_back(make("spawn(Needy) brings Label, Counted",
                     [](World& w, Fix&) { (void)w.spawn(Needy{410}); }));
    r.push_back(make("add(e0, Needy) brings the missing requirements",
                     [](World& w, Fix& f) { w.add(f.e[0], Needy{411}); }));
    r.push_back(make("add(e1, Needy by id) brings the missing requirements",
                     [](World& w, Fix& f) { w.add(f.e[1], tessera::component_id<Needy>()); }));
    r.push_back(make("spawn_many(40, Needy&) brings them in every row", [](World& w, Fix&) {
        (void)w.spawn_many(40, [](std::size_t i, Needy& n) { n.v = static_cast<int>(i); });
    }));
    r.push_back(make("component(name, schema) defines a runtime component", [](World& w, Fix&) {
        (void)w.component("SweepDefined", {{"a", tessera::Field::f32}, {"b", tessera::Field::str}});
    }));
    r.push_back(make("changed_tick<B> turns tracking on",
                     [](World& w, Fix& f) { (void)w.changed_tick<B>(f.e[1]); }));
    r.push_back(make("reserve<A, B>(64)", [](World& w, Fix&) { w.reserve<A, B>(64); }));
    r.push_back(make("set_field(e8, str field) interns a new string", [](World& w, Fix& f) {
        w.set_field(f.e[8], f.named, "name", std::string_view("a second name, not interned yet"));
    }));
    // Bulk calls.
    r.push_back(make(
        "despawn(span)",
        [](World& w, Fix& f) {
            const std::vector<Entity> doomed{f.e[1], f.e[0],    f.e[5],
                                             f.e[0], f.many[2], Entity::null()};
            (void)w.despawn(std::span<const Entity>(doomed));
        },
        Guarantee::strong));
    r.push_back(make(
        "despawn_all(query<const A&>().without<Label>())",
        [](World& w, Fix&) {
            auto q = w.query<const A&>().without<Label>();
            (void)w.despawn_all(q);
        },
        Guarantee::strong));
    // A change filter and a written term: the matches are read without a run, so a failure
    // leaves the world tick and the rows' changed ticks as they were.
    r.push_back(make(
        "despawn_all(query<A&, const B&>().changed<A>()) filtered, written term",
        [](World& w, Fix&) {
            auto q = w.query<A&, const B&>().changed<A>();
            EXPECT_GE(w.despawn_all(q), 11u);
        },
        Guarantee::strong));
    r.push_back(make(
        "unrelate<Rope>(e3, span)",
        [](World& w, Fix& f) {
            const std::vector<Entity> t{f.e[0], f.e[5], f.e[1]};
            (void)w.unrelate<Rope>(f.e[3], std::span<const Entity>(t));
        },
        Guarantee::strong));
    r.push_back(make(
        "unrelate<ChildOf>(grand, span)",
        [](World& w, Fix& f) {
            const Entity g = f.grand == Entity::null() ? f.e[4] : f.grand;
            const std::vector<Entity> t{f.kid2, f.e[0], f.kid1};
            (void)w.unrelate<ChildOf>(g, std::span<const Entity>(t));
        },
        Guarantee::strong));
    r.push_back(make("relate(e1, Rope, span) new relation", [](World& w, Fix& f) {
        const std::vector<Entity> t{f.e[5], f.e[6], f.e[7]};
        w.relate(f.e[1], Rope{text(403)}, std::span<const Entity>(t));
    }));
    r.push_back(make("relate(e3, Rope, span) more targets", [](World& w, Fix& f) {
        const std::vector<Entity> t{f.e[6], f.e[5], f.e[7]};
        w.relate(f.e[3], Rope{text(404)}, std::span<const Entity>(t));
    }));
    r.push_back(make("relate(e9, ChildOf, span) hierarchy", [](World& w, Fix& f) {
        const std::vector<Entity> t{f.e[7], f.e[8], f.e[0]};
        w.relate(f.e[9], ChildOf{}, std::span<const Entity>(t));
    }));
    r.push_back(make("relate(e1, Likes, span) tag relation", [](World& w, Fix& f) {
        const std::vector<Entity> t{f.e[8], f.e[7]};
        w.relate(f.e[1], Likes{}, std::span<const Entity>(t));
    }));
    r.push_back(make("spawn_many(20, A, Label, Counted)", [](World& w, Fix&) {
        (void)w.spawn_many(20, [](std::size_t i, A& a, Label& l, Counted& k) {
            a.v = static_cast<std::int32_t>(i);
            l.s = text(static_cast<int>(i));
            k.v = static_cast<int>(i);
        });
    }));
    r.push_back(make("spawn_many(12, A, B) into a table with rows", [](World& w, Fix&) {
        (void)w.spawn_many(
            12, [](std::size_t i, A& a, B&) { a.v = 500 + static_cast<std::int32_t>(i); });
    }));
    r.push_back(make(
        "spawn_many(20, A, Counted) whose init spawns, adds, removes, despawns, relates",
        [](World& w, Fix& f) {
            (void)w.spawn_many(20, [&](std::size_t i, A& a, Counted& k) {
                a.v = 600 + static_cast<std::int32_t>(i);
                k.v = static_cast<int>(i);
                if (i % 8 == 0) (void)w.spawn(Label{text(static_cast<int>(i))});
                if (i == 3) w.add(f.e[5], Label{text(603)});
                if (i == 4) (void)w.remove<B>(f.e[1]);
                if (i == 5) (void)w.despawn(f.e[6]);
                if (i == 6) w.relate(f.e[8], Rope{text(606)}, f.e[7]);
                if (i == 7) {
                    (void)w.spawn_many(3, [](std::size_t j, B& b) { b.x = static_cast<float>(j); });
                }
            });
        }));
    // init only spawns: the call's rows and ids are taken back without a copy of the world,
    // also where none can be made (Solo), observed or not.
    r.push_back(make("spawn_many(12, A, Counted) whose init only spawns", [](World& w, Fix&) {
        (void)w.spawn_many(12, [&](std::size_t i, A& a, Counted& k) {
            a.v = 1000 + static_cast<std::int32_t>(i);
            k.v = static_cast<int>(i);
            if (i % 4 == 0) (void)w.spawn(Label{text(static_cast<int>(i))}, Counted{1});
            if (i == 5) (void)w.spawn();
            if (i == 7) {
                (void)w.spawn_many(3, [](std::size_t j, B& b) { b.x = static_cast<float>(j); });
            }
        });
    }));
    r.push_back(make("spawn_many(12, A, Solo) whose init only spawns; Solo can't be copied",
                     [](World& w, Fix&) {
                         (void)w.spawn_many(12, [&](std::size_t i, A& a, Solo& o) {
                             a.v = 1100 + static_cast<std::int32_t>(i);
                             o.v = static_cast<int>(i);
                             if (i % 4 == 1) (void)w.spawn(Label{text(static_cast<int>(i))});
                             if (i == 6) (void)w.spawn(Solo{6}, Counted{6});
                             if (i == 9) (void)w.spawn(A{9}, Solo{9});  // into the call's table
                         });
                     }));
    r.push_back(make(
        "spawn_many(8, A) whose init despawns a relation parent and target",
        [](World& w, Fix& f) {
            (void)w.spawn_many(8, [&](std::size_t i, A& a) {
                a.v = 700 + static_cast<std::int32_t>(i);
                if (i == 2) (void)w.despawn(f.e[0]);
            });
        },
        Guarantee::strong));
    // Commands.
    {
        Row row = make(
            "CommandBuffer::apply: spawn, add, remove, despawn, relate",
            [](World& w, Fix& f) { (void)f.cb->apply(w); }, Guarantee::buffer);
        row.record = buffered_plain;
        r.push_back(row);
    }
    {
        Row row = make(
            "CommandBuffer::apply: remove several", [](World& w, Fix& f) { (void)f.cb->apply(w); },
            Guarantee::buffer);
        row.record = buffered_remove_several;
        r.push_back(row);
    }
    {
        Row row = make(
            "CommandBuffer::apply: despawns of relation parents and targets",
            [](World& w, Fix& f) { (void)f.cb->apply(w); }, Guarantee::buffer);
        row.record = buffered_despawn_related;
        r.push_back(row);
    }
    {
        Row row = make(
            "defer_begin: spawn, add, remove, despawn, relate; defer_end",
            [](World& w, Fix& f) {
                w.defer_begin();
                (void)w.spawn(A{800}, Label{text(800)});
                w.add(f.e[0], B{8, 0}, Counted{800});
                (void)w.remove<Label>(f.e[2]);
                (void)w.despawn(f.e[6]);
                w.relate(f.e[8], Rope{text(801)}, f.e[7]);
                w.add(f.e[7], Tag{});
                f.arm();
                w.defer_end();
            },
            Guarantee::flush);
        row.late_arm = true;
        r.push_back(row);
    }
    {
        Row row = make(
            "defer_begin: remove several; defer_end",
            [](World& w, Fix& f) {
                w.defer_begin();
                (void)w.remove<Label, Counted>(f.e[3]);
                (void)w.spawn(A{805});
                f.arm();
                w.defer_end();
            },
            Guarantee::flush);
        row.late_arm = true;
        r.push_back(row);
    }
    {
        Row row = make(
            "defer_begin: despawn a relation parent and target; defer_end",
            [](World& w, Fix& f) {
                w.defer_begin();
                (void)w.despawn(f.e[0]);
                (void)w.despawn(f.e[5]);
                (void)w.spawn(A{810});
                f.arm();
                w.defer_end();
            },
            Guarantee::flush);
        row.late_arm = true;
        r.push_back(row);
    }
    {
        Row row = make(
            "query loop: spawn, add, remove, despawn; the loop's end flushes",
            [](World& w, Fix& f) {
                once_in_loop(w, [&] {
                    (void)w.spawn(A{820}, Counted{820});
                    w.add(f.e[1], Label{text(821)});
                    (void)w.remove<A>(f.e[4]);
                    (void)w.despawn(f.e[6]);
                    f.arm();
                });
            },
            Guarantee::flush);
        row.late_arm = true;
        r.push_back(row);
    }
    {
        Row row = make(
            "query loop: relate, unrelate, spawn_many; the loop's end flushes",
            [](World& w, Fix& f) {
                once_in_loop(w, [&] {
                    w.relate(f.e[8], Rope{text(830)}, f.e[7]);
                    (void)w.unrelate<Rope>(f.e[2], f.e[5]);
                    (void)w.spawn_many(4, [](std::size_t i, A& a, Label& l) {
                        a.v = 830 + static_cast<std::int32_t>(i);
                        l.s = text(830 + static_cast<int>(i));
                    });
                    f.arm();
                });
            },
            Guarantee::flush);
        row.late_arm = true;
        r.push_back(row);
    }
    {
        // The fault covers spawn_many only, not the flush at defer_end.
        Row row = make("spawn_many(6, A, Label) while the world defers", [](World& w, Fix& f) {
            w.defer_begin();
            f.arm();
            try {
                (void)w.spawn_many(6, [](std::size_t i, A& a, Label& l) {
                    a.v = 840 + static_cast<std::int32_t>(i);
                    l.s = text(840 + static_cast<int>(i));
                });
            } catch (...) {
                f.disarm();
                w.defer_end();  // nothing may be queued
                throw;
            }
            f.disarm();
            w.defer_end();
        });
        row.late_arm = true;
        r.push_back(row);
    }
    // Whole-world copies.
    r.push_back(make("snapshot", [](World& w, Fix& f) { f.snap = w.snapshot(); }));
    r.push_back(make("clone", [](World& w, Fix&) {
        const World copy = w.clone();
        EXPECT_EQ(copy.count(), w.count());
    }));
    {
        Row row = make("restore(snapshot)", [](World& w, Fix& f) { w.restore(*f.snap); });
        row.prepare = [](World& w, Fix& f) {
            f.snap = w.snapshot();
            (void)w.spawn(A{900}, Label{text(900)});
            (void)w.despawn(f.e[6]);
            w.add(f.e[0], Counted{900});
        };
        r.push_back(row);
    }
    {
        Row row = make("load into a world with other runtime definitions",
                       [](World&, Fix& f) { tessera::load(f.bytes, *f.other); });
        row.prepare = [](World& w, Fix& f) {
            f.bytes = tessera::save(w);
            f.other = std::make_unique<World>(w.memory_resource());
            (void)f.other->component("SweepOther", {{"z", tessera::Field::f64}});
            f.target = f.other.get();
        };
        r.push_back(row);
    }
    {
        Row row = make("from_json into a world with other runtime definitions",
                       [](World&, Fix& f) { tessera::from_json(f.json, *f.other); });
        row.prepare = [](World& w, Fix& f) {
            f.json = tessera::to_json(w);
            f.other = std::make_unique<World>(w.memory_resource());
            (void)f.other->component("SweepOther2", {{"z", tessera::Field::f64}});
            f.target = f.other.get();
        };
        r.push_back(row);
    }
    // Events and resources.
    const Extra events = [](World& w) {
        std::string s;
        tessera::EventCursor cursor;
        for (const Ping& p : w.events<Ping>().read(cursor)) s += p.s + ';';
        return s + std::to_string(w.events<Ping>().size());
    };
    {
        Row row =
            make("send_event(Ping) once", [](World& w, Fix&) { w.send_event(Ping{text(960)}); });
        row.extra = events;
        r.push_back(row);
    }
    {
        Row row = make("insert_resource(Config) replaces",
                       [](World& w, Fix&) { w.insert_resource(Config{text(970)}); });
        row.extra = [](World& w) { return w.resource<Config>().s; };
        r.push_back(row);
    }
    {
        Row row = make("insert_resource(Ping) new",
                       [](World& w, Fix&) { w.insert_resource(Ping{text(971)}); });
        row.extra = [](World& w) {
            return w.has_resource<Ping>() ? w.resource<Ping>().s : std::string("none");
        };
        r.push_back(row);
    }
    // A schedule run: systems write values and record commands.
    {
        Row row = make("Schedule::run: a writer, a spawner, an event sender",
                       [](World& w, Fix& f) { f.schedule->run(w); });
        row.guarantee = Guarantee::schedule;
        row.prepare = [](World&, Fix& f) {
            f.schedule = std::make_unique<tessera::Schedule>(1);
            f.schedule->add("write", [](tessera::View<A&> v) { v.each([](A& a) { a.v += 1; }); });
            f.schedule->add("spawn", [](tessera::Commands c) {
                (void)c.spawn(A{990}, Label{text(990)});
                (void)c.spawn(B{9, 9});
            });
            const Entity e0 = f.e[0];
            f.schedule->add("change", [e0](tessera::Commands c) { c.add(e0, Counted{991}); });
        };
        r.push_back(row);
    }
    // Prefabs and names (prefab.hpp, names.hpp).
    {
        Row row = make("instantiate(prefab, B{}) with child prefabs", [](World& w, Fix& f) {
            const Entity e = w.instantiate(f.prefab, B{6, 6});
            EXPECT_EQ(w.prefab_of(e), f.prefab);
            EXPECT_EQ(w.children(e).size(), 1u);
        });
        row.prepare = prepare_prefab;
        r.push_back(std::move(row));
    }
    {
        Row row = make("instantiate_many(prefab, 5) with child prefabs", [](World& w, Fix& f) {
            EXPECT_EQ(w.instantiate_many(f.prefab, 5).size(), 5u);
        });
        row.prepare = prepare_prefab;
        r.push_back(std::move(row));
    }
    // Without overrides a call plans the tree once and keeps the plan (src/prefab.cpp): the
    // first call makes it, later ones use it, or make it again when the tree changed.
    {
        Row row = make("instantiate(prefab) with child prefabs, first call", [](World& w, Fix& f) {
            const Entity e = w.instantiate(f.prefab);
            EXPECT_EQ(w.children(e).size(), 1u);
        });
        row.prepare = prepare_prefab;
        r.push_back(std::move(row));
    }
    const auto prepare_planned = [](World& w, Fix& f) {
        prepare_prefab(w, f);
        (void)w.instantiate(f.prefab);
    };
    {
        Row row = make("instantiate(prefab) with child prefabs, planned", [](World& w, Fix& f) {
            const Entity e = w.instantiate(f.prefab);
            EXPECT_EQ(w.children(e).size(), 1u);
        });
        row.prepare = prepare_planned;
        r.push_back(std::move(row));
    }
    {
        Row row =
            make("instantiate_many(prefab, 5) with child prefabs, planned", [](World& w, Fix& f) {
                const auto made = w.instantiate_many(f.prefab, 5);
                ASSERT_EQ(made.size(), 5u);
                EXPECT_EQ(w.children(made[4]).size(), 1u);
            });
        row.prepare = prepare_planned;
        r.push_back(std::move(row));
    }
    {
        Row row = make("instantiate_many(prefab, 5), planned before a child prefab was added",
                       [](World& w, Fix& f) {
                           const auto made = w.instantiate_many(f.prefab, 5);
                           ASSERT_EQ(made.size(), 5u);
                           EXPECT_EQ(w.children(made[4]).size(), 2u);
                       });
        row.prepare = [prepare_planned](World& w, Fix& f) {
            prepare_planned(w, f);
            w.relate<tessera::ChildOf>(w.prefab(A{503}, Counted{503}), f.prefab);
        };
        r.push_back(std::move(row));
    }
    // Sparse components (detail/sparse_set.hpp): the sets reserve before the row moves. Each
    // row starts with sets that hold values (16 Aura rows, a full set: the next insert grows it).
    const auto prepare_sparse = [](World& w, Fix& f) {
        for (int i = 0; i < 15; ++i) (void)w.spawn(A{700 + i}, Aura{700 + i});
        w.add(f.e[1], Aura{701}, Mark{});
        w.add(f.e[9], Mark{});
    };
    const auto sparse_row = [&](std::string name, std::function<void(World&, Fix&)> op) {
        Row row = make(std::move(name), std::move(op));
        row.prepare = prepare_sparse;
        r.push_back(std::move(row));
    };
    sparse_row("add(e0, Aura) sparse, the set grows",
               [](World& w, Fix& f) { w.add(f.e[0], Aura{600}); });
    sparse_row("add(e0, B, Aura, Mark) table and sparse", [](World& w, Fix& f) {
        w.add(f.e[0], B{6, 0}, Aura{601}, Mark{});
    });
    sparse_row("remove<A, Aura>(e1) table and sparse",
               [](World& w, Fix& f) { EXPECT_TRUE((w.remove<A, Aura>(f.e[1]))); });
    sparse_row("remove<Mark>(e9) sparse only",
               [](World& w, Fix& f) { EXPECT_TRUE(w.remove<Mark>(f.e[9])); });
    sparse_row("spawn(A, Label, Aura, Mark) table and sparse",
               [](World& w, Fix&) { (void)w.spawn(A{602}, Label{text(602)}, Aura{602}, Mark{}); });
    sparse_row("despawn(e1) with sparse components",
               [](World& w, Fix& f) { EXPECT_TRUE(w.despawn(f.e[1])); });
    {
        // Queued in a loop; the loop's end flush grows the set (the flush's guarantee: a
        // failure leaves the add queued, the next flush applies it).
        Row row = make(
            "query loop: add(e0, Aura), remove<Mark>(e9), spawn(A, Aura); the end flushes",
            [](World& w, Fix& f) {
                once_in_loop(w, [&] {
                    w.add(f.e[0], Aura{603});
                    (void)w.remove<Mark>(f.e[9]);
                    (void)w.spawn(A{608}, Aura{608});
                    f.arm();
                });
            },
            Guarantee::flush);
        row.late_arm = true;
        row.prepare = prepare_sparse;
        r.push_back(std::move(row));
    }
    {
        Row row = make("instantiate_many(prefab with sparse, 5)", [](World& w, Fix& f) {
            EXPECT_EQ(w.instantiate_many(f.prefab, 5).size(), 5u);
        });
        row.prepare = [prepare_sparse](World& w, Fix& f) {
            prepare_sparse(w, f);
            f.prefab = w.prefab(A{604}, Aura{604}, Mark{});
            const Entity kid = w.prefab(Label{text(605)}, Aura{605});
            w.relate<tessera::ChildOf>(kid, f.prefab);
        };
        r.push_back(std::move(row));
    }
    {
        Row row = make("instantiate(prefab with sparse, Aura override)", [](World& w, Fix& f) {
            (void)w.instantiate(f.prefab, Aura{606}, B{1, 1});
        });
        row.prepare = [prepare_sparse](World& w, Fix& f) {
            prepare_sparse(w, f);
            f.prefab = w.prefab(A{607}, Aura{607}, Mark{});
        };
        r.push_back(std::move(row));
    }
    {
        Row row = make("set_name(e1, a long name)",
                       [](World& w, Fix& f) { w.set_name(f.e[1], std::string(40, 'n')); });
        row.prepare = [](World& w, Fix& f) { w.set_name(f.e[0], "first"); };
        r.push_back(std::move(row));
    }
    return r;
}

const std::vector<Row>& all_rows() {
    static const std::vector<Row> r = rows();
    return r;
}

const char* mode_name(Mode m) {
    return m == Mode::once ? "once" : "from";
}

// ---------------------------------------------------------------------------------------------
// The sweep of one row on one variant.

/// What a run that never failed gives, and for a buffer row, the state after each prefix.
struct Reference {
    State before;  // after the setup and the row's preparation (the same in every run)
    State after;
    std::vector<State> prefix;      // buffer rows: the state after the first c calls
    std::vector<std::size_t> left;  // buffer rows: commands still queued then
    std::size_t recorded = 0;       // buffer rows: the calls recorded
    bool allocates = false;         // whether the call allocates from the world
};

Reference reference(const Row& row, unsigned variant) {
    Reference ref;
    tessera::test::FaultResource res;
    {
        World w(&res);
        Fix f;
        setup(w, f, variant);
        std::size_t allocations = 0;  // when the fault would be armed
        f.arm = [&] { allocations = res.allocations(); };
        f.disarm = [] {};
        if (row.prepare) row.prepare(w, f);
        if (row.record) row.record(w, f, 1000);
        ref.before = capture(*f.target, row.extra);
        if (!row.late_arm) f.arm();
        row.op(w, f);
        ref.allocates = res.allocations() != allocations;
        ref.after = capture(*f.target, row.extra);
    }
    if (row.record) {
        // The calls recorded: record with growing limits until the buffer stops growing.
        std::size_t total = 0;
        for (std::size_t c = 0;; ++c) {
            World w(&res);
            Fix f;
            setup(w, f, variant);
            row.record(w, f, c);
            const std::size_t size = f.cb->size();
            if (c > 0 && size == total) break;
            total = size;
            ref.recorded = c;
        }
        for (std::size_t c = 0; c <= ref.recorded; ++c) {
            World w(&res);
            Fix f;
            setup(w, f, variant);
            row.record(w, f, c);
            ref.left.push_back(total - f.cb->size());
            (void)f.cb->apply(w);
            ref.prefix.push_back(capture(w, row.extra));
        }
    }
    EXPECT_EQ(res.bytes_outstanding(), 0u) << row.name << ": a clean run leaked";
    return ref;
}

/// The k to try after `k`: every k at first, then fewer where the pattern repeats.
std::size_t next_k(std::size_t k) {
    return k < 32 ? k + 1 : k + k / 8;
}

/// Sweeps `row` on `variant` in `mode`; returns how many faults fired.
std::size_t sweep(const Row& row, unsigned variant, Mode mode, const Reference& ref) {
    std::size_t faults = 0;
    for (std::size_t k = 1;; k = next_k(k)) {
        const std::string what =
            row.name + " [" + mode_name(mode) + ", k=" + std::to_string(k) + "]";
        tessera::test::FaultResource res;
        bool done = false;
        {
            World w(&res);
            Fix f;
            setup(w, f, variant);
            f.arm = [&res, k, mode] { res.arm(k, mode); };
            f.disarm = [&res] { res.disarm(); };
            if (row.prepare) row.prepare(w, f);
            if (row.record) row.record(w, f, 1000);
            World& t = *f.target;
            const State& before = ref.before;
            const long counted = Counted::live;
            if (!row.late_arm) f.arm();
            bool threw = false;
            std::string other_error;
            try {
                row.op(w, f);
            } catch (const std::bad_alloc&) {
                threw = true;
            } catch (const tessera::Error& e) {
                threw = true;
                bool nested_bad_alloc = false;
                try {
                    std::rethrow_if_nested(e);
                } catch (const std::bad_alloc&) {
                    nested_bad_alloc = true;
                } catch (...) {
                }
                if (!(row.guarantee == Guarantee::schedule && nested_bad_alloc))
                    other_error = e.what();
            } catch (const std::exception& e) {
                threw = true;
                other_error = e.what();
            }
            const bool fired = res.fired();
            res.disarm();
            f.arm = [] {};  // the retry runs without the fault
            f.disarm = [] {};
            if (!other_error.empty()) {
                ADD_FAILURE() << what << ": threw '" << other_error << "' instead of bad_alloc";
                return faults;
            }
            if (!fired) {
                EXPECT_FALSE(threw) << what;
                const std::string d = difference(ref.after, capture(t, row.extra));
                EXPECT_EQ(d, "") << what << ", succeeded without a fault: " << d;
                done = true;
            } else {
                ++faults;
                if (!threw) {
                    // The fault fired and the call still succeeded (it took another way, or an
                    // observer's flush retried): the result must be the clean one.
                    const std::string d = difference(ref.after, capture(t, row.extra));
                    if (!d.empty()) {
                        ADD_FAILURE() << what << ": swallowed the failure and left " << d;
                        return faults;
                    }
                } else {
                    switch (row.guarantee) {
                        case Guarantee::strong: {
                            EXPECT_FALSE(t.deferring()) << what;
                            const std::string d = difference(before, capture(t, row.extra));
                            if (!d.empty()) {
                                ADD_FAILURE() << what << ": after the failure, " << d;
                                return faults;
                            }
                            if (Counted::live != counted) {
                                ADD_FAILURE() << what << ": Counted instances " << Counted::live
                                              << " vs " << counted;
                                return faults;
                            }
                            row.op(w, f);  // the retry
                            break;
                        }
                        case Guarantee::buffer: {
                            // The commands applied are a prefix of whole calls, and the state
                            // is the one that prefix gives.
                            const std::size_t left = f.cb->size();
                            std::size_t c = 0;
                            while (c < ref.left.size() && ref.left[c] != left) ++c;
                            if (c == ref.left.size()) {
                                ADD_FAILURE() << what << ": " << left
                                              << " commands left in the buffer: part of a call "
                                                 "was applied";
                                return faults;
                            }
                            const std::string d = difference(ref.prefix[c], capture(t, row.extra));
                            if (!d.empty()) {
                                const State now = capture(t, row.extra);
                                std::string like = "no prefix";
                                for (std::size_t p = 0; p < ref.prefix.size(); ++p) {
                                    if (difference(ref.prefix[p], now).empty())
                                        like = "the first " + std::to_string(p) + " calls";
                                }
                                ADD_FAILURE()
                                    << what << ": after the failure, " << left << " commands left ("
                                    << c << " calls applied), but the world is as after " << like
                                    << ": " << d;
                                return faults;
                            }
                            row.op(w, f);  // apply resumes
                            EXPECT_EQ(f.cb->size(), 0u) << what;
                            break;
                        }
                        case Guarantee::flush: {
                            if (t.deferring()) {
                                ADD_FAILURE() << what << ": the world still defers";
                                return faults;
                            }
                            EXPECT_TRUE(t.flush()) << what;  // applies what stayed queued
                            break;
                        }
                        case Guarantee::schedule: {
                            // Consistent and usable: count agrees with the iteration; the next
                            // run works.
                            const State now = capture(t, row.extra);
                            EXPECT_EQ(static_cast<std::size_t>(now.count), now.order.size())
                                << what;
                            row.op(w, f);
                            (void)capture(t, row.extra);
                            done = false;
                            break;
                        }
                    }
                    if (row.guarantee != Guarantee::schedule) {
                        const std::string d = difference(ref.after, capture(t, row.extra));
                        if (!d.empty()) {
                            ADD_FAILURE() << what << ": after the retry, " << d;
                            return faults;
                        }
                    }
                }
            }
            EXPECT_EQ(res.bad_deallocations(), 0u) << what;
        }
        if (res.bytes_outstanding() != 0 || Counted::live != 0) {
            ADD_FAILURE() << what << ": the destroyed world leaked " << res.bytes_outstanding()
                          << " bytes, " << Counted::live << " Counted";
            Counted::live = 0;
            return faults;
        }
        if (done) return faults;
        if (k > 100000) {
            ADD_FAILURE() << what << ": never stopped failing";
            return faults;
        }
    }
}

struct Param {
    std::size_t row;
    unsigned variant;
};

class FaultSweep : public ::testing::TestWithParam<Param> {};

TEST_P(FaultSweep, EveryFailureLeavesTheDocumentedStateAndTheRetrySucceeds) {
    const Row& row = all_rows()[GetParam().row];
    const unsigned variant = GetParam().variant;

    const Reference ref = reference(row, variant);
    std::size_t faults = 0;
    for (const Mode mode : {Mode::once, Mode::from}) {
        faults += sweep(row, variant, mode, ref);
        if (HasFailure()) return;
    }
    EXPECT_EQ(faults > 0, ref.allocates) << "faults injected: " << faults;
}

std::vector<Param> params() {
    std::vector<Param> out;
    for (std::size_t i = 0; i < all_rows().size(); ++i) {
        for (const unsigned v :
             {0u, unsigned{kObserved}, unsigned{kRelated}, unsigned{kObserved | kRelated}}) {
            out.push_back({i, v});
        }
    }
    return out;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
    std::string name;
    for (const char c : all_rows()[info.param.row].name) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            name += c;
        else if (!name.empty() && name.back() != '_')
            name += '_';
    }
    while (!name.empty() && name.back() == '_') name.pop_back();
    static const char* const variants[] = {"plain", "observed", "related", "observed_related"};
    return std::to_string(info.param.row) + "_" + name + "_" + variants[info.param.variant];
}

INSTANTIATE_TEST_SUITE_P(Rows, FaultSweep, ::testing::ValuesIn(params()), param_name);

}  // namespace

namespace {

// spawn_many is all or nothing also when applying what init queued throws something else: a
// queued ChildOf that would close a loop (the flush applies the rest, then reports it).
TEST(SpawnManyAllOrNothing, AQueuedCycleInInitPutsTheWorldBack) {
    tessera::test::FaultResource res;
    {
        World w(&res);
        const Entity parent = w.spawn(A{1});
        const Entity child = w.spawn(A{2});
        w.relate<tessera::ChildOf>(child, parent);
        const State before = capture(w, {});
        EXPECT_THROW((void)w.spawn_many(5,
                                        [&](std::size_t i, A& a) {
                                            a.v = static_cast<std::int32_t>(i);
                                            if (i == 1) (void)w.spawn(Label{text(1)});
                                            if (i == 2) w.relate<tessera::ChildOf>(parent, child);
                                            if (i == 3) w.add(parent, B{1, 2});
                                        }),
                     tessera::Error);
        EXPECT_EQ(difference(before, capture(w, {})), "");
        EXPECT_FALSE(w.deferring());
        // The world goes on: the same call without the loop succeeds.
        const auto made = w.spawn_many(5, [&](std::size_t i, A& a) {
            a.v = static_cast<std::int32_t>(i);
            if (i == 3) w.add(parent, B{1, 2});
        });
        EXPECT_EQ(made.size(), 5u);
        EXPECT_EQ(w.count(), before.count + 5);
        EXPECT_TRUE(w.has<B>(parent));
    }
    EXPECT_EQ(res.bytes_outstanding(), 0u);
}

}  // namespace

namespace {

struct Marker {};

/// A world for the spawn_many tests below, with what must live as long as it (observers).
using MakeWorld = std::function<std::shared_ptr<void>(World&)>;
using Op = std::function<void(World&)>;

/// The state after `setup`, then `settle` (default: nothing), in a world that never failed.
State clean(const MakeWorld& setup, const Op& settle) {
    tessera::test::FaultResource res;
    World w(&res);
    const auto keep = setup(w);
    if (settle) settle(w);
    return capture(w, {});
}

/// Runs `op` after `setup` with the world's allocations failing once at the k-th and from the
/// k-th on, for every k until `op` no longer reaches the fault. After each failure, `settle`
/// (default: nothing) runs unarmed and the state must be `clean(setup, settle)`: nothing of
/// the call remains. Then `op` is retried and must give a clean run's result.
void sweep_spawn_many(const MakeWorld& setup, const Op& op, const Op& settle = {}) {
    const State before = clean(setup, settle);
    const State after = clean(setup, [&](World& w) {
        if (settle) settle(w);
        op(w);
    });
    for (const Mode mode : {Mode::once, Mode::from}) {
        for (std::size_t k = 1;; k = next_k(k)) {
            SCOPED_TRACE(std::string(mode_name(mode)) + ", k=" + std::to_string(k));
            tessera::test::FaultResource res;
            bool fired = false;
            {
                World w(&res);
                const auto keep = setup(w);
                const long counted = Counted::live;
                res.arm(k, mode);
                bool threw = false;
                try {
                    op(w);
                } catch (const std::bad_alloc&) {
                    threw = true;
                }
                fired = res.fired();
                res.disarm();
                if (threw) {
                    ASSERT_FALSE(w.deferring());
                    if (settle) settle(w);
                    ASSERT_EQ(difference(before, capture(w, {})), "");
                    ASSERT_EQ(Counted::live, counted);
                    op(w);
                } else if (settle) {
                    settle(w);
                }
                ASSERT_EQ(difference(after, capture(w, {})), "");
            }
            ASSERT_EQ(res.bytes_outstanding(), 0u);
            if (!fired) break;
        }
    }
}

// Issue 34 item 3, in a world that can't be copied (Solo): init's spawns and the call's rows are
// taken back, also when observers of those spawns spawn more while they apply.
TEST(SpawnManyAllOrNothing, InitSpawnsInAWorldThatCantBeCopiedObserversSpawnToo) {
    const MakeWorld make_world = [](World& w) {
        (void)w.spawn(A{1}, Solo{1});
        const Entity gone = w.spawn(A{2});
        (void)w.spawn(Label{text(3)}, Counted{3});
        (void)w.despawn(gone);  // a free list
        auto keep = std::make_shared<std::vector<tessera::Observer>>();
        keep->push_back(w.on_add<Label>([](World& world, Entity) {
            (void)world.spawn(B{1, 1}, Counted{7});  // queued behind the rest
        }));
        keep->push_back(w.on_spawn([](World&, Entity) {}));
        return std::shared_ptr<void>(keep);
    };
    sweep_spawn_many(make_world, [](World& w) {
        (void)w.spawn_many(10, [&](std::size_t i, A& a, Solo& o) {
            a.v = static_cast<std::int32_t>(i);
            o.v = static_cast<int>(i);
            if (i % 3 == 0) (void)w.spawn(Label{text(static_cast<int>(i))}, Solo{2});
        });
    });
}

// Commands left queued by an earlier failed flush apply first (program order) and keep the
// flush's guarantee: after a failure, what is still queued applies at the next flush, and
// nothing of the spawn_many remains, copyable world or not.
TEST(SpawnManyAllOrNothing, CommandsLeftByAFailedFlushApplyFirstAndStay) {
    for (const bool copyable : {true, false}) {
        SCOPED_TRACE(copyable ? "copyable" : "with Solo");
        const MakeWorld make_world = [copyable](World& w) {
            const Entity a = w.spawn(A{1});
            const Entity b = w.spawn(A{2}, B{2, 2});
            if (!copyable) (void)w.spawn(Solo{1});
            tessera::Observer boom =
                w.on_add<Marker>([](World&, Entity) { throw std::runtime_error("boom"); });
            w.defer_begin();
            w.add(a, Marker{});
            w.add(b, Label{text(4)});
            (void)w.spawn(A{77}, Counted{77});
            (void)w.remove<B>(b);
            EXPECT_THROW(w.defer_end(), std::runtime_error);
            EXPECT_FALSE(w.deferring());
            return std::shared_ptr<void>();
        };
        const Op settle = [](World& w) { (void)w.flush(); };
        sweep_spawn_many(
            make_world,
            [](World& w) {
                (void)w.spawn_many(6, [&](std::size_t i, A& a) {
                    a.v = 300 + static_cast<std::int32_t>(i);
                    if (i % 2 == 0) (void)w.spawn(Label{text(static_cast<int>(i))});
                });
            },
            settle);
    }
}

}  // namespace
