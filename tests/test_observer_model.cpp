// Model-based randomized test of observers.
//
// A random sequence of structural changes and writes (spawn, spawn(components...), spawn_many,
// add, add<T>(e), remove, despawn, set, set_if_changed, get_mut + modified, enable<T>, ops on
// dead handles), of observer resets / re-subscriptions and switch toggles, and of deferred
// changes made inside a `Query::each`, is applied to a tessera::World and to a plain reference
// model (a map from entity to one optional value per type). Every observer callback appends a
// record {observer, entity, value seen, snapshot of the entity} to a log; the model computes
// the log the contract (observer.hpp, docs/observers-and-events.md) prescribes:
//
//  - one add call: on_add for the new components (ascending ComponentId), on_set for the
//    replaced ones (ascending id), then query on_exit, then on_enter;
//  - one remove call: on_remove per present component (ascending id, every value still in
//    place), then the removal, then on_exit, on_enter;
//  - spawn(components...): on_spawn, on_add per component (ascending id), on_enter;
//  - despawn: on_despawn, on_remove per component (ascending id), on_exit, all with the entity
//    still alive and readable, then it dies;
//  - set, set_if_changed when it writes, add of a present component and modified<T>: on_set;
//    get_mut alone fires nothing;
//  - several observers of one event run in registration order (a re-subscribed observer goes
//    last); switched-off kinds (globally or per kind and type) call nobody; on_enter never fires
//    for an entity that already matched when it was registered; query observers match by the
//    query's terms only (an optional term, a change filter and enable flags don't count).
//
// After every operation the produced log must equal the expected one exactly (order, values,
// snapshots); every kFullCheckEvery operations the whole world is compared with the model.
//
// Deferred changes. Inside `each` (and inside callbacks) structural calls are queued; the model
// keeps its own FIFO queue and applies it when the outermost deferring scope ends, each applied
// change firing its observers in turn, whose own structural changes go to the back of the same
// queue (breadth-first). Value writes (set) inside the loop fire at once. A queued multi-
// component add/remove is one call, so it fires like the immediate one (ascending id, one
// exit/enter): that is what kDeferredMultiComponentCalls controls, see its comment.
//
// Scenario "reactive": some observers also make structural changes and writes themselves
// (on_add<A> adds B, on_remove<B> spawns a marker entity, on_despawn despawns a linked entity,
// on_set<A> writes B at once, query enter/exit add/remove a tag, ...). The model runs the same
// reactions against its own state; entities spawned by callbacks are taken, in order, from the
// list of entities the world's callbacks returned (the model cannot predict entity ids).
#include <tessera/observer.hpp>
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <system_error>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace obs_model {

struct A {
    int v = 0;
    bool operator==(const A&) const = default;
};
struct B {
    int v = 0;
    bool operator==(const B&) const = default;
};
struct C {
    int v = 0;
    bool operator==(const C&) const = default;
};
struct E {  // enableable: its flag must not change what query observers see
    int v = 0;
    bool operator==(const E&) const = default;
};
struct S {  // a heap-owning payload (lengths on both sides of the small-string buffer)
    std::string s;
    bool operator==(const S&) const = default;
};
struct Link {  // reactive scenario: despawning the owner despawns the target
    tessera::Entity target{};
    bool operator==(const Link&) const = default;
};
struct TagX {
    bool operator==(const TagX&) const = default;
};
struct TagY {
    bool operator==(const TagY&) const = default;
};

}  // namespace obs_model

template <>
struct tessera::component_traits<obs_model::E> {
    static constexpr bool enableable = true;
};

namespace {

namespace ts = tessera;
using obs_model::A;
using obs_model::B;
using obs_model::C;
using obs_model::E;
using obs_model::Link;
using obs_model::S;
using obs_model::TagX;
using obs_model::TagY;

/// Whether the random operations include multi-component add/remove calls while the world
/// defers (inside `each` and inside callbacks). The contract treats such a call like the
/// immediate one (on_add/on_remove in ascending id, one exit/enter for the whole call); the
/// focused tests at the end of the file check it directly.
constexpr bool kDeferredMultiComponentCalls = true;

// ---------------------------------------------------------------------------------------------
// Types, values and their encoding.

using Types = std::tuple<A, B, C, E, S, Link, TagX, TagY>;
constexpr std::size_t kTypes = std::tuple_size_v<Types>;
constexpr std::size_t kValueTypes = 6;  // indices below this are not tags
enum : int { kA, kB, kC, kE, kS, kLink, kX, kY };
constexpr const char* kTypeNames[kTypes] = {"A", "B", "C", "E", "S", "Link", "TagX", "TagY"};
template <std::size_t I>
using TypeAt = std::tuple_element_t<I, Types>;
static_assert(std::is_empty_v<TypeAt<kX>> && std::is_empty_v<TypeAt<kY>> &&
              !std::is_empty_v<TypeAt<kValueTypes - 1>>);

/// Every component value is modelled by one integer (tags: 0; Link: the target's bits).
using Val = std::int64_t;
constexpr Val kAbsent = std::numeric_limits<Val>::min();
constexpr Val kUnreadable = kAbsent + 1;  // a world value that no model value encodes to
constexpr Val kNoValue = kAbsent + 2;     // entity and query events carry no value

template <class T>
T encode(Val v) {
    if constexpr (std::is_empty_v<T>) {
        return T{};
    } else if constexpr (std::is_same_v<T, S>) {
        if (v == 0) return S{};  // S{} (add<S>(e)) is value 0
        return S{std::string(static_cast<std::size_t>(v % 37), 'q') + '#' + std::to_string(v)};
    } else if constexpr (std::is_same_v<T, Link>) {
        return Link{ts::Entity::from_bits(static_cast<std::uint64_t>(v))};
    } else {
        return T{static_cast<int>(v)};
    }
}

template <class T>
Val decode(const T& t) {
    if constexpr (std::is_empty_v<T>) {
        return 0;
    } else if constexpr (std::is_same_v<T, S>) {
        if (t.s.empty()) return 0;
        const std::size_t hash = t.s.rfind('#');
        if (hash == std::string::npos) return kUnreadable;
        Val v = 0;
        const char* first = t.s.data() + hash + 1;
        const char* last = t.s.data() + t.s.size();
        const auto [end, ec] = std::from_chars(first, last, v);
        if (ec != std::errc{} || end != last || encode<S>(v).s != t.s) return kUnreadable;
        return v;
    } else if constexpr (std::is_same_v<T, Link>) {
        return static_cast<Val>(t.target.to_bits());
    } else {
        return t.v;
    }
}

constexpr std::uint32_t bit(int t) {
    return 1u << static_cast<unsigned>(t);
}

template <class F, std::size_t... I>
void dispatch_type(std::size_t i, F& f, std::index_sequence<I...>) {
    (void)((i == I ? (f.template operator()<I>(), true) : false) || ...);
}
/// Calls f.template operator()<I>() for the runtime type index i.
template <class F>
void with_type(std::size_t i, F&& f) {
    dispatch_type(i, f, std::make_index_sequence<kTypes>{});
}
template <class F>
void with_value_type(std::size_t i, F&& f) {
    dispatch_type(i, f, std::make_index_sequence<kValueTypes>{});
}

// Fixed combinations (type indices, deliberately not in id order) for spawn(a, b, ...),
// add(e, a, b, ...) and remove<A, B, ...>(e).
using Combos = std::tuple<
    std::index_sequence<kA, kB>, std::index_sequence<kS, kX>, std::index_sequence<kB, kA, kY>,
    std::index_sequence<kC, kE, kS>, std::index_sequence<kY, kX>, std::index_sequence<kLink, kA>,
    std::index_sequence<kE, kS, kB, kC>, std::index_sequence<kY, kS, kA, kLink, kC, kX, kE, kB>>;
constexpr std::size_t kCombos = std::tuple_size_v<Combos>;

template <class F, std::size_t... K>
void dispatch_combo(std::size_t i, F& f, std::index_sequence<K...>) {
    (void)((i == K ? (f(std::tuple_element_t<K, Combos>{}), true) : false) || ...);
}
/// Calls f(std::index_sequence<I...>{}) for the runtime combo index i.
template <class F>
void with_combo(std::size_t i, F&& f) {
    dispatch_combo(i, f, std::make_index_sequence<kCombos>{});
}

// ---------------------------------------------------------------------------------------------
// Log records.

/// What a callback saw of its entity: alive, and each component's value (kAbsent if missing).
struct Snap {
    bool alive = false;
    std::array<Val, kTypes> v{};
    bool operator==(const Snap&) const = default;
};

struct Rec {
    int slot = -1;
    std::uint64_t entity = 0;
    Val value = kNoValue;  // the T& the callback got, or the component read with get<T>(e)
    Snap snap;
    bool operator==(const Rec&) const = default;
};

// ---------------------------------------------------------------------------------------------
// Observers: a fixed table of "slots"; each can be subscribed (at some position of the
// registration order) or not.

/// Structural changes / writes made by a callback (reactive scenario).
enum class Rx : std::uint8_t {
    none,
    add_b_if_missing,  // on_add<A>: add(e, B{a + 1}) unless e has B
    spawn_marker,      // on_remove<B>: spawn(C{b}, TagX{})
    despawn_link,      // on_despawn: despawn(e's Link target)
    set_b_from_a,      // on_set<A>: set(e, B{2a}) at once when e has B (nested on_set<B>)
    tag_y_if_b5,       // on_set<B>: add(e, TagY{}) when b % 5 == 0
    add_tag_y,         // enter Q0: add(e, TagY{})
    remove_tag_y,      // exit Q0: remove<TagY>(e)
    despawn_self_c3,   // on_add<C>: despawn(e) when c > 0 and c % 3 == 0
    remove_s_adds_e,   // on_remove<S>: add(e, E{s}) (skipped when e is being despawned)
    add_s_adds_y_c,    // on_add<S>: add(e, TagY{}, C{s})
};

struct SlotDef {
    const char* name;
    ts::Event kind;
    int type;         // component events
    int query;        // enter / exit
    bool value_form;  // (World&, Entity, T&) rather than (World&, Entity)
    Rx rx;
};

using ts::Event;
constexpr SlotDef kPlainSlots[] = {
    {"on_add<A>#1", Event::add, kA, -1, true, Rx::none},
    {"on_add<A>#2", Event::add, kA, -1, false, Rx::none},
    {"on_add<B>", Event::add, kB, -1, true, Rx::none},
    {"on_add<S>", Event::add, kS, -1, true, Rx::none},
    {"on_add<TagX>", Event::add, kX, -1, true, Rx::none},
    {"on_add<TagY>", Event::add, kY, -1, false, Rx::none},
    {"on_remove<A>#1", Event::remove, kA, -1, true, Rx::none},
    {"on_remove<A>#2", Event::remove, kA, -1, false, Rx::none},
    {"on_remove<C>", Event::remove, kC, -1, true, Rx::none},
    {"on_remove<S>", Event::remove, kS, -1, true, Rx::none},
    {"on_remove<TagX>", Event::remove, kX, -1, false, Rx::none},
    {"on_remove<TagY>", Event::remove, kY, -1, true, Rx::none},
    {"on_remove<Link>", Event::remove, kLink, -1, true, Rx::none},
    {"on_set<A>", Event::set, kA, -1, true, Rx::none},
    {"on_set<B>#1", Event::set, kB, -1, true, Rx::none},
    {"on_set<B>#2", Event::set, kB, -1, false, Rx::none},
    {"on_set<S>", Event::set, kS, -1, true, Rx::none},
    {"on_set<E>", Event::set, kE, -1, true, Rx::none},
    {"on_spawn#1", Event::spawn, -1, -1, false, Rx::none},
    {"on_spawn#2", Event::spawn, -1, -1, false, Rx::none},
    {"on_despawn#1", Event::despawn, -1, -1, false, Rx::none},
    {"on_despawn#2", Event::despawn, -1, -1, false, Rx::none},
    {"Q0.on_enter#1", Event::enter, -1, 0, false, Rx::none},
    {"Q0.on_enter#2", Event::enter, -1, 0, false, Rx::none},
    {"Q0.on_exit", Event::exit, -1, 0, false, Rx::none},
    {"Q1.on_enter", Event::enter, -1, 1, false, Rx::none},
    {"Q1.on_exit", Event::exit, -1, 1, false, Rx::none},
    {"Q2.on_enter", Event::enter, -1, 2, false, Rx::none},
    {"Q2.on_exit", Event::exit, -1, 2, false, Rx::none},
    {"Q3.on_enter", Event::enter, -1, 3, false, Rx::none},
    {"Q3.on_exit", Event::exit, -1, 3, false, Rx::none},
};
constexpr SlotDef kReactiveSlots[] = {
    {"rx on_add<A>: add B", Event::add, kA, -1, true, Rx::add_b_if_missing},
    {"rx on_remove<B>: spawn marker", Event::remove, kB, -1, true, Rx::spawn_marker},
    {"rx on_despawn: despawn link", Event::despawn, -1, -1, false, Rx::despawn_link},
    {"rx on_set<A>: set B", Event::set, kA, -1, true, Rx::set_b_from_a},
    {"rx on_set<B>: add TagY", Event::set, kB, -1, false, Rx::tag_y_if_b5},
    {"rx Q0.on_enter: add TagY", Event::enter, -1, 0, false, Rx::add_tag_y},
    {"rx Q0.on_exit: remove TagY", Event::exit, -1, 0, false, Rx::remove_tag_y},
    {"rx on_add<C>: despawn self", Event::add, kC, -1, true, Rx::despawn_self_c3},
    {"rx on_remove<S>: add E", Event::remove, kS, -1, true, Rx::remove_s_adds_e},
    {"rx on_add<S>: add TagY, C", Event::add, kS, -1, true, Rx::add_s_adds_y_c},
};

/// The terms of the observed queries, as masks of type indices.
struct QDef {
    std::uint32_t all, none, any;
};
constexpr QDef kQueries[] = {
    {bit(kA) | bit(kX), 0, 0},        // Q0: query<const A&>().with<TagX>()
    {bit(kB), bit(kS), 0},            // Q1: query<const B&, const C*>().without<S>().changed<B>()
    {0, bit(kC), bit(kE) | bit(kY)},  // Q2: query<Entity>().any<E, TagY>().without<C>()
    {0, bit(kA) | bit(kB), 0},        // Q3: query<Entity>().without<A, B>() (empty matches)
};
bool matches(const QDef& q, std::uint32_t mask) {
    return (mask & q.all) == q.all && (mask & q.none) == 0 && (q.any == 0 || (mask & q.any) != 0);
}

constexpr std::size_t kKinds = 7;
constexpr Event kAllKinds[kKinds] = {Event::add,     Event::remove, Event::set, Event::spawn,
                                     Event::despawn, Event::enter,  Event::exit};
constexpr Event kTypedKinds[3] = {Event::add, Event::remove, Event::set};
constexpr std::size_t kind_index(Event k) {
    return static_cast<std::size_t>(k);
}
const char* kind_name(Event k) {
    constexpr const char* names[kKinds] = {"add",     "remove", "set", "spawn",
                                           "despawn", "enter",  "exit"};
    return names[kind_index(k)];
}

enum class Mode { plain, reactive };

constexpr std::size_t kFullCheckEvery = 100;
constexpr std::size_t kTargetPopulation = 150;
constexpr std::size_t kDeadWindow = 64;

// ---------------------------------------------------------------------------------------------

class Harness {
public:
    Harness(std::uint64_t seed, Mode mode)
        : q0_(world_.query<const A&>().with<TagX>()),
          q1_(world_.query<const B&, const C*>().without<S>().changed<B>()),
          q2_(world_.query<ts::Entity>().any<E, TagY>().without<C>()),
          q3_(world_.query<ts::Entity>().without<A, B>()),
          all_(world_.query<ts::Entity>()),
          rng_(seed),
          seed_(seed),
          mode_(mode) {
        // Ascending component id, as the contract orders several components of one call.
        std::array<std::pair<std::uint32_t, int>, kTypes> ids{};
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            ((ids[I] = {ts::component_id<TypeAt<I>>().value, static_cast<int>(I)}), ...);
        }
        (std::make_index_sequence<kTypes>{});
        std::sort(ids.begin(), ids.end());
        for (std::size_t i = 0; i < kTypes; ++i) by_id_[i] = ids[i].second;

        for (const SlotDef& d : kPlainSlots) slots_.push_back(Slot{d, 0, {}});
        if (mode_ == Mode::reactive) {
            for (const SlotDef& d : kReactiveSlots) slots_.push_back(Slot{d, 0, {}});
        }
        fired_.assign(slots_.size(), 0);
        on_.fill(true);
        // Subscribe in a shuffled order: registration order is what the model follows.
        std::vector<int> first(slots_.size());
        for (std::size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int>(i);
        std::shuffle(first.begin(), first.end(), rng_);
        for (const int i : first) subscribe(i);
    }

    void run(std::size_t steps) {
        for (step_ = 0; step_ < steps; ++step_) {
            one_op();
            if (!::testing::Test::HasFailure()) compare_logs();
            if (!::testing::Test::HasFailure()) {
                EXPECT_EQ(world_.count(), model_.size());
                EXPECT_TRUE(queue_.empty());
                EXPECT_EQ(depth_, 0);
            }
            if (!::testing::Test::HasFailure() && (step_ + 1) % kFullCheckEvery == 0) {
                op_ = "full check";
                check_full();
            }
            if (::testing::Test::HasFailure()) {
                ADD_FAILURE() << std::hex << "seed 0x" << seed_ << std::dec << ", step " << step_
                              << ", op " << op_;
                return;
            }
        }
        check_full();
        // The run was not vacuous: every observer fired, the population moved, the loop
        // deferred changes, callbacks' changes cascaded.
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            EXPECT_GT(fired_[i], 0u) << slots_[i].def.name << " never fired";
        }
        EXPECT_GT(max_population_, kTargetPopulation / 2);
        EXPECT_GT(deferred_flushes_, 0u);
        if (mode_ == Mode::reactive) {
            EXPECT_GT(callback_spawns_, 0u);
        }
    }

private:
    struct Slot {
        SlotDef def;
        std::uint64_t seq = 0;  // position in the registration order; 0 = not subscribed
        ts::Observer handle;
    };

    struct MEnt {
        ts::Entity e;
        std::array<Val, kTypes> v{};
        std::size_t live_pos = 0;
    };

    using Comps = std::vector<std::pair<int, Val>>;  // (type, value) in call order

    struct Cmd {
        enum Kind { spawn, add, remove, despawn } kind;
        ts::Entity e;
        Comps comps;             // spawn, add
        std::vector<int> types;  // remove
    };

    // -- randomness -------------------------------------------------------------------------
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
    bool chance(std::size_t percent) { return below(100) < percent; }

    template <std::size_t I>
    Val random_value() {
        if constexpr (I == kLink) {
            if (live_.empty() || chance(10)) return static_cast<Val>(ts::Entity::null().to_bits());
            return static_cast<Val>(random_live().to_bits());
        } else if constexpr (I >= kValueTypes) {
            return 0;
        } else {
            return static_cast<Val>(below(1000));
        }
    }

    // -- model bookkeeping ------------------------------------------------------------------
    MEnt* find(ts::Entity e) {
        auto it = model_.find(e.to_bits());
        return it == model_.end() ? nullptr : &it->second;
    }
    MEnt& ent(ts::Entity e) {
        MEnt* m = find(e);
        if (m == nullptr) {
            ADD_FAILURE() << "model: " << e << " is not alive";
            static MEnt none;
            none.v.fill(kAbsent);
            return none;
        }
        return *m;
    }
    static std::uint32_t mask_of(const MEnt& m) {
        std::uint32_t mask = 0;
        for (std::size_t t = 0; t < kTypes; ++t) {
            if (m.v[t] != kAbsent) mask |= bit(static_cast<int>(t));
        }
        return mask;
    }

    MEnt& insert_model(ts::Entity e) {
        auto [it, inserted] = model_.try_emplace(e.to_bits());
        EXPECT_TRUE(inserted) << "spawn returned an entity that is already alive: " << e;
        it->second.e = e;
        it->second.v.fill(kAbsent);
        it->second.live_pos = live_.size();
        live_.push_back(e);
        max_population_ = std::max(max_population_, live_.size());
        return it->second;
    }

    void erase_model(ts::Entity e) {
        auto it = model_.find(e.to_bits());
        if (it == model_.end()) {
            ADD_FAILURE() << "model: erasing dead " << e;
            return;
        }
        const std::size_t pos = it->second.live_pos;
        const ts::Entity moved = live_.back();
        live_[pos] = moved;
        model_[moved.to_bits()].live_pos = pos;
        live_.pop_back();
        model_.erase(it);
        if (dead_.size() < kDeadWindow) {
            dead_.push_back(e);
        } else {
            dead_[dead_next_] = e;
            dead_next_ = (dead_next_ + 1) % kDeadWindow;
        }
    }

    ts::Entity random_live() { return live_[below(live_.size())]; }
    ts::Entity random_dead() {
        if (dead_.empty() || chance(10)) return ts::Entity::null();
        return dead_[below(dead_.size())];
    }

    // -- the world side: subscriptions and callbacks ----------------------------------------
    template <class T>
    static Val read_world(ts::World& w, ts::Entity e) {
        if constexpr (std::is_empty_v<T>) {
            return w.has<T>(e) ? 0 : kAbsent;
        } else {
            return w.has<T>(e) ? decode(w.get<T>(e)) : kAbsent;
        }
    }

    Snap snap_world(ts::Entity e) {
        Snap s;
        s.alive = world_.is_alive(e);
        [&]<std::size_t... I>(std::index_sequence<I...>) {
            auto one = [&]<std::size_t J>() {
                using T = TypeAt<J>;
                if constexpr (std::is_empty_v<T>) {
                    s.v[J] = world_.has<T>(e) ? 0 : kAbsent;
                } else {
                    const T* p = world_.try_get<T>(e);
                    s.v[J] = p != nullptr ? decode(*p) : kAbsent;
                }
            };
            (one.template operator()<I>(), ...);
        }
        (std::make_index_sequence<kTypes>{});
        return s;
    }

    void event(ts::World& w, int slot, ts::Entity e, Val value) {
        if (&w != &world_) ADD_FAILURE() << "a callback got another world";
        log_.push_back(Rec{slot, e.to_bits(), value, snap_world(e)});
        ++fired_[static_cast<std::size_t>(slot)];
        const Rx rx = slots_[static_cast<std::size_t>(slot)].def.rx;
        if (rx != Rx::none) react_world(rx, e, value);
    }

    void react_world(Rx rx, ts::Entity e, Val value) {
        switch (rx) {
            case Rx::none: break;
            case Rx::add_b_if_missing:
                if (!world_.has<B>(e)) world_.add(e, B{static_cast<int>((value + 1) % 1000)});
                break;
            case Rx::spawn_marker:
                cb_spawned_.push_back(world_.spawn(C{static_cast<int>(value)}, TagX{}));
                break;
            case Rx::despawn_link:
                if (const Link* l = world_.try_get<Link>(e)) {
                    const ts::Entity target = l->target;
                    world_.despawn(target);
                }
                break;
            case Rx::set_b_from_a:
                // Refused (invalid_argument) while an add or remove of B on e is queued.
                if (world_.has<B>(e)) {
                    try {
                        world_.set(e, B{static_cast<int>(value * 2 % 1000)});
                    } catch (const ts::Error& error) {
                        if (error.code() != ts::errc::invalid_argument) throw;
                    }
                }
                break;
            case Rx::tag_y_if_b5:
                if (value % 5 == 0) world_.add(e, TagY{});
                break;
            case Rx::add_tag_y: world_.add(e, TagY{}); break;
            case Rx::remove_tag_y: world_.remove<TagY>(e); break;
            case Rx::despawn_self_c3:
                if (value > 0 && value % 3 == 0) world_.despawn(e);
                break;
            case Rx::remove_s_adds_e: world_.add(e, E{static_cast<int>(value % 1000)}); break;
            case Rx::add_s_adds_y_c:
                if constexpr (kDeferredMultiComponentCalls) {
                    world_.add(e, TagY{}, C{static_cast<int>(value % 1000)});
                } else {
                    world_.add(e, TagY{});
                    world_.add(e, C{static_cast<int>(value % 1000)});
                }
                break;
        }
    }

    template <class T, class F>
    ts::Observer on_kind(Event kind, F fn) {
        if (kind == Event::add) return world_.on_add<T>(std::move(fn));
        if (kind == Event::remove) return world_.on_remove<T>(std::move(fn));
        if constexpr (!std::is_empty_v<T>) {
            if (kind == Event::set) return world_.on_set<T>(std::move(fn));
        }
        ADD_FAILURE() << "bad slot kind";
        return {};
    }

    template <std::size_t I>
    ts::Observer typed_observer(int slot) {
        using T = TypeAt<I>;
        const SlotDef& d = slots_[static_cast<std::size_t>(slot)].def;
        if (d.value_form) {
            return on_kind<T>(d.kind, [this, slot](ts::World& w, ts::Entity e, T& v) {
                event(w, slot, e, decode(v));
            });
        }
        return on_kind<T>(d.kind, [this, slot](ts::World& w, ts::Entity e) {
            event(w, slot, e, read_world<T>(w, e));
        });
    }

    ts::Observer query_observer(int slot, int q, bool enter) {
        auto fn = [this, slot](ts::World& w, ts::Entity e) { event(w, slot, e, kNoValue); };
        switch (q) {
            case 0: return enter ? q0_.on_enter(fn) : q0_.on_exit(fn);
            case 1: return enter ? q1_.on_enter(fn) : q1_.on_exit(fn);
            case 2: return enter ? q2_.on_enter(fn) : q2_.on_exit(fn);
            default: return enter ? q3_.on_enter(fn) : q3_.on_exit(fn);
        }
    }

    ts::Observer make_observer(int slot) {
        const SlotDef& d = slots_[static_cast<std::size_t>(slot)].def;
        auto fn = [this, slot](ts::World& w, ts::Entity e) { event(w, slot, e, kNoValue); };
        switch (d.kind) {
            case Event::spawn: return world_.on_spawn(fn);
            case Event::despawn: return world_.on_despawn(fn);
            case Event::enter:
            case Event::exit: return query_observer(slot, d.query, d.kind == Event::enter);
            default: {
                ts::Observer o;
                with_type(static_cast<std::size_t>(d.type),
                          [&]<std::size_t I>() { o = typed_observer<I>(slot); });
                return o;
            }
        }
    }

    /// (Re-)subscribes a slot: it goes last in the registration order.
    void subscribe(int slot) {
        Slot& s = slots_[static_cast<std::size_t>(slot)];
        s.handle = make_observer(slot);  // the old subscription (if any) ends here
        std::erase(order_, slot);
        order_.push_back(slot);
        s.seq = next_seq_++;
    }

    // -- the model side: deferral, delivery, reactions --------------------------------------
    void begin() { ++depth_; }
    void end() {
        if (--depth_ == 0 && !queue_.empty()) drain();
    }
    /// The outermost deferring scope ended: apply the queue in order; changes made by the
    /// observers of an applied change go to its back.
    void drain() {
        ++depth_;
        ++deferred_flushes_;
        while (!queue_.empty()) {
            Cmd c = std::move(queue_.front());
            queue_.pop_front();
            apply(c);
        }
        --depth_;
    }

    void apply(const Cmd& c) {
        MEnt* m = find(c.e);
        if (m == nullptr) return;  // died before the flush: skipped
        switch (c.kind) {
            case Cmd::spawn:
                for (const auto& [t, v] : c.comps) m->v[static_cast<std::size_t>(t)] = v;
                spawn_events(c.e);
                break;
            case Cmd::add: do_add(c.e, c.comps); break;
            case Cmd::remove: do_remove(c.e, c.types); break;
            case Cmd::despawn: do_despawn(c.e); break;
        }
    }

    bool switched_on(Event kind, int type) const {
        if (!on_[kind_index(kind)]) return false;
        return type < 0 || kind_index(kind) > 2 ||
               !type_off_[kind_index(kind)][static_cast<std::size_t>(type)];
    }

    void expect(int slot, ts::Entity e, Val value) {
        MEnt* m = find(e);
        Snap s;
        if (m != nullptr) {
            s.alive = true;
            s.v = m->v;
        } else {
            s.v.fill(kAbsent);
        }
        expected_.push_back(Rec{slot, e.to_bits(), value, s});
        const Rx rx = slots_[static_cast<std::size_t>(slot)].def.rx;
        if (rx != Rx::none) react_model(rx, e, value);
    }

    void fire_typed(Event kind, int t, ts::Entity e) {
        if (!switched_on(kind, t)) return;
        const std::vector<int> order = order_;
        for (const int i : order) {
            const SlotDef& d = slots_[static_cast<std::size_t>(i)].def;
            if (d.kind != kind || d.type != t) continue;
            expect(i, e, ent(e).v[static_cast<std::size_t>(t)]);
        }
    }

    void fire_entity(Event kind, ts::Entity e) {
        if (!switched_on(kind, -1)) return;
        const std::vector<int> order = order_;
        for (const int i : order) {
            if (slots_[static_cast<std::size_t>(i)].def.kind == kind) expect(i, e, kNoValue);
        }
    }

    void fire_query(Event kind, ts::Entity e, std::optional<std::uint32_t> before,
                    std::optional<std::uint32_t> after) {
        if (!switched_on(kind, -1)) return;
        const std::vector<int> order = order_;
        for (const int i : order) {
            const SlotDef& d = slots_[static_cast<std::size_t>(i)].def;
            if (d.kind != kind) continue;
            const QDef& q = kQueries[d.query];
            const bool was = before && matches(q, *before);
            const bool is = after && matches(q, *after);
            if (kind == Event::enter ? (!was && is) : (was && !is)) expect(i, e, kNoValue);
        }
    }

    /// The type indices satisfying `pred`, in ascending component id.
    template <class Pred>
    std::vector<int> ascending(Pred&& pred) const {
        std::vector<int> out;
        for (const int t : by_id_) {
            if (pred(t)) out.push_back(t);
        }
        return out;
    }

    void spawn_events(ts::Entity e) {
        begin();
        fire_entity(Event::spawn, e);
        const MEnt& m = ent(e);
        for (const int t :
             ascending([&](int t) { return m.v[static_cast<std::size_t>(t)] != kAbsent; }))
            fire_typed(Event::add, t, e);
        fire_query(Event::enter, e, std::nullopt, mask_of(ent(e)));
        end();
    }

    void do_add(ts::Entity e, const Comps& comps) {
        MEnt& m = ent(e);
        const std::uint32_t before = mask_of(m);
        std::uint32_t added = 0;
        std::uint32_t replaced = 0;
        for (const auto& [t, v] : comps) {
            (m.v[static_cast<std::size_t>(t)] == kAbsent ? added : replaced) |= bit(t);
            m.v[static_cast<std::size_t>(t)] = v;
        }
        const std::uint32_t after = mask_of(m);
        begin();
        for (const int t : ascending([&](int t) { return (added & bit(t)) != 0; }))
            fire_typed(Event::add, t, e);
        for (const int t : ascending([&](int t) { return (replaced & bit(t)) != 0; }))
            fire_typed(Event::set, t, e);
        if (before != after) {
            fire_query(Event::exit, e, before, after);
            fire_query(Event::enter, e, before, after);
        }
        end();
    }

    bool do_remove(ts::Entity e, const std::vector<int>& types) {
        MEnt& m = ent(e);
        std::uint32_t gone = 0;
        for (const int t : types) {
            if (m.v[static_cast<std::size_t>(t)] != kAbsent) gone |= bit(t);
        }
        if (gone == 0) return false;
        begin();
        for (const int t : ascending([&](int t) { return (gone & bit(t)) != 0; }))
            fire_typed(Event::remove, t, e);
        MEnt& after_callbacks = ent(e);  // callbacks' structural changes are queued
        const std::uint32_t before = mask_of(after_callbacks);
        for (std::size_t t = 0; t < kTypes; ++t) {
            if ((gone & bit(static_cast<int>(t))) != 0) after_callbacks.v[t] = kAbsent;
        }
        const std::uint32_t after = mask_of(after_callbacks);
        fire_query(Event::exit, e, before, after);
        fire_query(Event::enter, e, before, after);
        end();
        return true;
    }

    void do_despawn(ts::Entity e) {
        begin();
        fire_entity(Event::despawn, e);
        const MEnt& m = ent(e);
        for (const int t :
             ascending([&](int t) { return m.v[static_cast<std::size_t>(t)] != kAbsent; }))
            fire_typed(Event::remove, t, e);
        fire_query(Event::exit, e, mask_of(ent(e)), std::nullopt);
        erase_model(e);
        end();
    }

    /// Whether an add or remove of type `t` on `e` is queued: a value write of it is refused
    /// then (invalid_argument), since the command would overwrite or drop it.
    bool change_queued(ts::Entity e, int t) const {
        return std::any_of(queue_.begin(), queue_.end(), [&](const Cmd& c) {
            if (c.e != e) return false;
            if (c.kind == Cmd::add) {
                return std::any_of(c.comps.begin(), c.comps.end(),
                                   [&](const auto& comp) { return comp.first == t; });
            }
            return c.kind == Cmd::remove &&
                   std::find(c.types.begin(), c.types.end(), t) != c.types.end();
        });
    }

    bool despawn_queued(ts::Entity e) const {
        return std::any_of(queue_.begin(), queue_.end(),
                           [&](const Cmd& c) { return c.kind == Cmd::despawn && c.e == e; });
    }

    // The model's forms of the public calls: queued while deferring, applied otherwise.
    void m_spawn(ts::Entity e, Comps comps) {
        MEnt& m = insert_model(e);
        if (depth_ > 0) {  // alive at once, components at the flush
            queue_.push_back(Cmd{Cmd::spawn, e, std::move(comps), {}});
            return;
        }
        for (const auto& [t, v] : comps) m.v[static_cast<std::size_t>(t)] = v;
        spawn_events(e);
    }
    void m_add(ts::Entity e, Comps comps) {
        if (depth_ > 0) {
            queue_.push_back(Cmd{Cmd::add, e, std::move(comps), {}});
            return;
        }
        do_add(e, comps);
    }
    void m_remove(ts::Entity e, std::vector<int> types) {
        if (depth_ > 0) {
            queue_.push_back(Cmd{Cmd::remove, e, {}, std::move(types)});
            return;
        }
        do_remove(e, types);
    }
    bool m_despawn(ts::Entity e) {
        if (find(e) == nullptr) return false;
        if (depth_ > 0) {
            if (despawn_queued(e)) return false;
            queue_.push_back(Cmd{Cmd::despawn, e, {}, {}});
            return true;
        }
        do_despawn(e);
        return true;
    }
    void m_set(ts::Entity e, int t, Val v) {
        ent(e).v[static_cast<std::size_t>(t)] = v;
        m_modified(e, t);
    }
    void m_modified(ts::Entity e, int t) {
        begin();
        fire_typed(Event::set, t, e);
        end();
    }

    ts::Entity take_callback_spawn() {
        if (cb_spawned_.empty()) {
            ADD_FAILURE() << "the model's callbacks spawn more entities than the world's";
            return ts::Entity::null();
        }
        const ts::Entity e = cb_spawned_.front();
        cb_spawned_.pop_front();
        ++callback_spawns_;
        return e;
    }

    void react_model(Rx rx, ts::Entity e, Val value) {
        const MEnt m = ent(e);  // a copy: the reactions below may insert entities
        switch (rx) {
            case Rx::none: break;
            case Rx::add_b_if_missing:
                if (m.v[kB] == kAbsent) m_add(e, {{kB, (value + 1) % 1000}});
                break;
            case Rx::spawn_marker: {
                const ts::Entity marker = take_callback_spawn();
                if (marker) m_spawn(marker, {{kC, value}, {kX, 0}});
                break;
            }
            case Rx::despawn_link:
                if (m.v[kLink] != kAbsent) {
                    m_despawn(ts::Entity::from_bits(static_cast<std::uint64_t>(m.v[kLink])));
                }
                break;
            case Rx::set_b_from_a:
                if (m.v[kB] != kAbsent && !change_queued(e, kB)) m_set(e, kB, value * 2 % 1000);
                break;
            case Rx::tag_y_if_b5:
                if (value % 5 == 0) m_add(e, {{kY, 0}});
                break;
            case Rx::add_tag_y: m_add(e, {{kY, 0}}); break;
            case Rx::remove_tag_y: m_remove(e, {kY}); break;
            case Rx::despawn_self_c3:
                if (value > 0 && value % 3 == 0) m_despawn(e);
                break;
            case Rx::remove_s_adds_e: m_add(e, {{kE, value % 1000}}); break;
            case Rx::add_s_adds_y_c:
                if constexpr (kDeferredMultiComponentCalls) {
                    m_add(e, {{kY, 0}, {kC, value % 1000}});
                } else {
                    m_add(e, {{kY, 0}});
                    m_add(e, {{kC, value % 1000}});
                }
                break;
        }
    }

    // -- error helper -----------------------------------------------------------------------
    template <class F>
    void expect_error(ts::errc code, F&& f) {
        try {
            f();
            ADD_FAILURE() << "expected tessera::Error (" << static_cast<int>(code) << ")";
        } catch (const ts::Error& err) {
            EXPECT_EQ(static_cast<int>(err.code()), static_cast<int>(code)) << err.what();
        }
    }

    // -- operations -------------------------------------------------------------------------
    void one_op() {
        if (live_.empty()) {
            spawn_op();
            return;
        }
        const std::size_t roll = below(1000);
        if (roll < 130) {
            const bool grow = live_.size() < kTargetPopulation;
            if (chance(grow ? 60 : 25)) {
                spawn_op();
            } else {
                despawn_op();
            }
            return;
        }
        if (roll < 160) {
            dead_handle_op();
            return;
        }
        if (roll < 190) {
            op_ = "switch";
            switch_op();
            return;
        }
        if (roll < 225) {
            op_ = "observer reset / re-subscribe";
            observer_op();
            return;
        }
        if (roll < 265) {
            op_ = "deferred ops inside each";
            each_op();
            return;
        }
        const ts::Entity e = random_live();
        if (roll < 390) {
            op_ = "add";
            with_type(below(kTypes), [&]<std::size_t I>() { add_one<I>(e); });
        } else if (roll < 420) {
            op_ = "add<T>(e)";
            with_type(below(kTypes), [&]<std::size_t I>() { add_default<I>(e); });
        } else if (roll < 500) {
            op_ = "add(e, a, b...)";
            with_combo(
                below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                    add_many<I...>(e);
                });
        } else if (roll < 610) {
            op_ = "remove";
            with_type(below(kTypes), [&]<std::size_t I>() { remove_one<I>(e); });
        } else if (roll < 670) {
            op_ = "remove<A, B...>";
            with_combo(
                below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                    remove_many<I...>(e);
                });
        } else if (roll < 780) {
            op_ = "set";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { set_one<I>(e); });
        } else if (roll < 860) {
            op_ = "set_if_changed";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { set_if_changed_one<I>(e); });
        } else if (roll < 950) {
            op_ = "get_mut (+ modified)";
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { get_mut_one<I>(e); });
        } else {
            op_ = "enable<E>";
            enable_op(e);
        }
    }

    void spawn_op() {
        const std::size_t roll = below(100);
        if (roll < 25) {
            op_ = "spawn()";
            const ts::Entity e = world_.spawn();
            EXPECT_TRUE(world_.is_alive(e));
            m_spawn(e, {});
        } else if (roll < 50) {
            op_ = "spawn(a)";
            with_type(below(kTypes), [&]<std::size_t I>() { spawn_with<I>(); });
        } else if (roll < 90) {
            op_ = "spawn(a, b...)";
            with_combo(
                below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                    spawn_with<I...>();
                });
        } else {
            op_ = "spawn_many(A, S)";
            spawn_many_op();
        }
    }

    /// The world values of `comps` (types I..., in that order).
    template <std::size_t... I, std::size_t... P>
    static std::tuple<TypeAt<I>...> make_values_at(const Comps& comps, std::index_sequence<P...>) {
        return std::tuple<TypeAt<I>...>{encode<TypeAt<I>>(comps[P].second)...};
    }
    template <std::size_t... I>
    static std::tuple<TypeAt<I>...> make_values(const Comps& comps) {
        return make_values_at<I...>(comps, std::make_index_sequence<sizeof...(I)>{});
    }

    template <std::size_t... I>
    void spawn_with() {
        const Comps comps{{static_cast<int>(I), random_value<I>()}...};
        auto values = make_values<I...>(comps);
        const ts::Entity e = world_.spawn(std::move(std::get<TypeAt<I>>(values))...);
        m_spawn(e, comps);
    }

    /// spawn_many with observers: one spawn per entity, their observers after all are made.
    void spawn_many_op() {
        const std::size_t n = 1 + below(8);
        std::vector<Val> a(n);
        std::vector<Val> s(n);
        for (std::size_t i = 0; i < n; ++i) {
            a[i] = random_value<kA>();
            s[i] = random_value<kS>();
        }
        const auto span = world_.spawn_many(n, [&](std::size_t i, A& x, S& y) {
            x = encode<A>(a[i]);
            y = encode<S>(s[i]);
        });
        ASSERT_EQ(span.size(), n);
        const std::vector<ts::Entity> made(span.begin(), span.end());
        begin();
        for (std::size_t i = 0; i < n; ++i) m_spawn(made[i], {{kA, a[i]}, {kS, s[i]}});
        end();
    }

    void despawn_op() {
        if (chance(85)) {
            op_ = "despawn(live)";
            const ts::Entity e = random_live();
            EXPECT_TRUE(world_.despawn(e));
            EXPECT_FALSE(world_.is_alive(e));
            m_despawn(e);
            EXPECT_FALSE(world_.despawn(e)) << "second despawn of " << e;
        } else {
            op_ = "despawn(dead or null)";
            EXPECT_FALSE(world_.despawn(random_dead()));
        }
    }

    /// Failing calls on a dead (or null) handle fire nothing.
    void dead_handle_op() {
        op_ = "op on dead handle";
        const ts::Entity e = random_dead();
        with_value_type(below(kValueTypes), [&]<std::size_t I>() {
            using T = TypeAt<I>;
            switch (below(5)) {
                case 0:
                    expect_error(ts::errc::not_alive, [&] { (void)world_.remove<T>(e); });
                    break;
                case 1:
                    expect_error(ts::errc::not_alive, [&] { world_.add(e, encode<T>(0)); });
                    break;
                case 2:
                    expect_error(ts::errc::not_alive, [&] { world_.set(e, encode<T>(0)); });
                    break;
                case 3: expect_error(ts::errc::not_alive, [&] { world_.modified<T>(e); }); break;
                default:
                    expect_error(ts::errc::not_alive, [&] { world_.add(e, encode<T>(0), TagX{}); });
                    break;
            }
        });
    }

    template <std::size_t I>
    void add_one(ts::Entity e) {
        const Val v = random_value<I>();
        world_.add(e, encode<TypeAt<I>>(v));
        m_add(e, {{static_cast<int>(I), v}});
    }

    template <std::size_t I>
    void add_default(ts::Entity e) {
        using T = TypeAt<I>;
        world_.add<T>(e);
        m_add(e, {{static_cast<int>(I), decode(T{})}});
    }

    template <std::size_t... I>
    void add_many(ts::Entity e) {
        const Comps comps{{static_cast<int>(I), random_value<I>()}...};
        auto values = make_values<I...>(comps);
        world_.add(e, std::move(std::get<TypeAt<I>>(values))...);
        m_add(e, comps);
    }

    template <std::size_t I>
    void remove_one(ts::Entity e) {
        const bool had = ent(e).v[I] != kAbsent;
        EXPECT_EQ(world_.remove<TypeAt<I>>(e), had);
        m_remove(e, {static_cast<int>(I)});
    }

    template <std::size_t... I>
    void remove_many(ts::Entity e) {
        const MEnt& m = ent(e);
        const bool any = ((m.v[I] != kAbsent) || ...);
        EXPECT_EQ(world_.remove<TypeAt<I>...>(e), any);
        m_remove(e, {static_cast<int>(I)...});
    }

    template <std::size_t I>
    void set_one(ts::Entity e) {
        using T = TypeAt<I>;
        const Val v = random_value<I>();
        if (ent(e).v[I] == kAbsent) {
            expect_error(ts::errc::missing_component, [&] { world_.set(e, encode<T>(v)); });
            return;
        }
        if (change_queued(e, static_cast<int>(I))) {
            expect_error(ts::errc::invalid_argument, [&] { world_.set(e, encode<T>(v)); });
            return;
        }
        world_.set(e, encode<T>(v));
        m_set(e, static_cast<int>(I), v);
    }

    template <std::size_t I>
    void set_if_changed_one(ts::Entity e) {
        using T = TypeAt<I>;
        const Val cur = ent(e).v[I];
        if (cur == kAbsent) {
            expect_error(ts::errc::missing_component,
                         [&] { (void)world_.set_if_changed(e, encode<T>(0)); });
            return;
        }
        const Val v = chance(50) ? cur : random_value<I>();
        if (change_queued(e, static_cast<int>(I))) {
            expect_error(ts::errc::invalid_argument,
                         [&] { (void)world_.set_if_changed(e, encode<T>(v)); });
            return;
        }
        EXPECT_EQ(world_.set_if_changed(e, encode<T>(v)), v != cur);
        if (v != cur) m_set(e, static_cast<int>(I), v);
    }

    template <std::size_t I>
    void get_mut_one(ts::Entity e) {
        using T = TypeAt<I>;
        if (ent(e).v[I] == kAbsent) {
            expect_error(ts::errc::missing_component, [&] { world_.modified<T>(e); });
            return;
        }
        const Val v = random_value<I>();
        if (change_queued(e, static_cast<int>(I))) {
            expect_error(ts::errc::invalid_argument, [&] { (void)world_.get_mut<T>(e); });
            expect_error(ts::errc::invalid_argument, [&] { world_.modified<T>(e); });
            return;
        }
        world_.get_mut<T>(e) = encode<T>(v);
        ent(e).v[I] = v;
        EXPECT_TRUE(log_.empty()) << "get_mut fired an observer";
        if (chance(75)) {
            world_.modified<T>(e);
            m_modified(e, static_cast<int>(I));
        }
    }

    /// Enable flags fire nothing and don't change what query observers see.
    void enable_op(ts::Entity e) {
        if (ent(e).v[kE] == kAbsent) {
            expect_error(ts::errc::missing_component, [&] { world_.enable<E>(e, false); });
            return;
        }
        const bool on = chance(40);
        world_.enable<E>(e, on);
        EXPECT_EQ(world_.is_enabled<E>(e), on);
    }

    void switch_op() {
        ts::Observers obs = world_.observers();
        const std::size_t roll = below(100);
        if (roll < 10) {
            for (const Event k : kAllKinds) obs.enable(k, true);
            on_.fill(true);
            for (const Event k : kTypedKinds) {
                for (std::size_t t = 0; t < kTypes; ++t) {
                    with_type(t, [&]<std::size_t I>() { obs.enable<TypeAt<I>>(k, true); });
                }
            }
            for (auto& row : type_off_) row.fill(false);
        } else if (roll < 45) {
            const Event k = kAllKinds[below(kKinds)];
            const bool on = !on_[kind_index(k)];
            obs.enable(k, on);
            on_[kind_index(k)] = on;
        } else {
            const Event k = kTypedKinds[below(3)];
            const std::size_t t = below(kTypes);
            const bool on = type_off_[kind_index(k)][t];
            with_type(t, [&]<std::size_t I>() { obs.enable<TypeAt<I>>(k, on); });
            type_off_[kind_index(k)][t] = !on;
        }
        check_switches();
    }

    void observer_op() {
        const int i = static_cast<int>(below(slots_.size()));
        Slot& s = slots_[static_cast<std::size_t>(i)];
        if (s.seq != 0 && chance(30)) {
            switch (below(3)) {
                case 0: s.handle.reset(); break;
                case 1: s.handle = ts::Observer{}; break;
                default: {
                    const ts::Observer dying = std::move(s.handle);
                    EXPECT_FALSE(s.handle.active());
                    break;
                }
            }
            std::erase(order_, i);
            s.seq = 0;
        } else {
            subscribe(i);  // new, or re-subscribed: last in the registration order either way
        }
        EXPECT_EQ(s.handle.active(), s.seq != 0) << s.def.name;
        EXPECT_EQ(world_.observers().count(), order_.size());
    }

    /// Random structural changes (and immediate writes) inside a query loop: the structural
    /// ones are queued and fire their observers when the loop ends, in queue order.
    void each_op() {
        bool done = false;
        all_.each([&](ts::Entity) {
            if (done) return;
            done = true;
            begin();  // the model defers from here to the end of the loop
            const std::size_t k = 1 + below(6);
            for (std::size_t j = 0; j < k && !::testing::Test::HasFailure(); ++j) deferred_op();
        });
        if (!done) return;
        end();
    }

    void deferred_op() {
        const std::size_t roll = below(100);
        if (roll < 7) {
            const ts::Entity e = world_.spawn();
            EXPECT_TRUE(world_.is_alive(e));
            m_spawn(e, {});
        } else if (roll < 10) {
            spawn_many_op();  // queued like single spawns
        } else if (roll < 25) {
            with_combo(
                below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                    const Comps comps{{static_cast<int>(I), random_value<I>()}...};
                    auto values = make_values<I...>(comps);
                    const ts::Entity e = world_.spawn(std::move(std::get<TypeAt<I>>(values))...);
                    EXPECT_TRUE(world_.is_alive(e));
                    EXPECT_FALSE((world_.has<TypeAt<I>>(e) || ...))
                        << "components before the flush";
                    m_spawn(e, comps);
                });
        } else if (roll < 45) {
            const ts::Entity e = random_live();
            with_type(below(kTypes), [&]<std::size_t I>() { add_one<I>(e); });
        } else if (roll < 60) {
            const ts::Entity e = random_live();
            with_type(below(kTypes), [&]<std::size_t I>() {
                (void)world_.remove<TypeAt<I>>(e);  // what it returns while queued: not checked
                m_remove(e, {static_cast<int>(I)});
            });
        } else if (roll < 70) {
            const ts::Entity e = random_live();
            if constexpr (kDeferredMultiComponentCalls) {
                if (chance(50)) {
                    with_combo(
                        below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                            add_many<I...>(e);
                        });
                } else {
                    with_combo(
                        below(kCombos), [&]<std::size_t... I>(std::index_sequence<I...>) {
                            (void)world_.remove<TypeAt<I>...>(e);
                            m_remove(e, {static_cast<int>(I)...});
                        });
                }
            } else {
                with_value_type(below(kValueTypes), [&]<std::size_t I>() { set_one<I>(e); });
            }
        } else if (roll < 85) {
            const ts::Entity e = random_live();
            const bool pending = despawn_queued(e);
            const bool r = world_.despawn(e);
            if (!pending) {
                EXPECT_TRUE(r);
            }
            EXPECT_TRUE(world_.is_alive(e)) << "despawned before the flush";
            EXPECT_TRUE(world_.despawn_pending(e));
            m_despawn(e);
        } else {
            const ts::Entity e = random_live();
            with_value_type(below(kValueTypes), [&]<std::size_t I>() { set_one<I>(e); });
        }
    }

    // -- comparisons ------------------------------------------------------------------------
    std::string describe(const Rec& r) const {
        std::ostringstream os;
        os << slots_[static_cast<std::size_t>(r.slot)].def.name << " "
           << ts::Entity::from_bits(r.entity);
        if (r.value != kNoValue) os << " value=" << show(r.value);
        os << " [" << (r.snap.alive ? "alive" : "dead");
        for (std::size_t t = 0; t < kTypes; ++t) {
            if (r.snap.v[t] != kAbsent) os << ' ' << kTypeNames[t] << '=' << show(r.snap.v[t]);
        }
        os << ']';
        return os.str();
    }
    static std::string show(Val v) {
        if (v == kAbsent) return "absent";
        if (v == kUnreadable) return "unreadable";
        return std::to_string(v);
    }

    void compare_logs() {
        if (log_ != expected_) {
            std::ostringstream os;
            std::size_t first = 0;
            while (first < log_.size() && first < expected_.size() &&
                   log_[first] == expected_[first]) {
                ++first;
            }
            os << "observer log differs from the model at record " << first << "\n  world ("
               << log_.size() << " records):\n";
            for (std::size_t i = 0; i < log_.size(); ++i) {
                os << (i == first ? "  > " : "    ") << i << ": " << describe(log_[i]) << '\n';
            }
            os << "  model (" << expected_.size() << " records):\n";
            for (std::size_t i = 0; i < expected_.size(); ++i) {
                os << (i == first ? "  > " : "    ") << i << ": " << describe(expected_[i]) << '\n';
            }
            ADD_FAILURE() << os.str();
        }
        EXPECT_TRUE(cb_spawned_.empty()) << "the world's callbacks spawned " << cb_spawned_.size()
                                         << " entities more than the model's";
        log_.clear();
        expected_.clear();
        cb_spawned_.clear();
    }

    void check_switches() {
        ts::Observers obs = world_.observers();
        for (const Event k : kAllKinds) {
            EXPECT_EQ(obs.is_enabled(k), on_[kind_index(k)]) << kind_name(k);
        }
        for (const Event k : kTypedKinds) {
            for (std::size_t t = 0; t < kTypes; ++t) {
                with_type(t, [&]<std::size_t I>() {
                    EXPECT_EQ(obs.is_enabled<TypeAt<I>>(k), switched_on(k, static_cast<int>(I)))
                        << kind_name(k) << " " << kTypeNames[I];
                });
            }
        }
    }

    void check_full() {
        ASSERT_EQ(world_.count(), model_.size());
        ASSERT_EQ(world_.entities().size(), model_.size());
        for (const auto& [bits, m] : model_) {
            const Snap s = snap_world(m.e);
            Snap want;
            want.alive = true;
            want.v = m.v;
            if (s != want) {
                ADD_FAILURE() << "world and model differ on " << m.e << ": world "
                              << describe(Rec{0, bits, kNoValue, s}) << ", model "
                              << describe(Rec{0, bits, kNoValue, want});
                return;
            }
        }
        for (const ts::Entity e : dead_) EXPECT_FALSE(world_.is_alive(e)) << e;
        // The query observers' terms agree with the queries themselves.
        std::array<std::size_t, 4> counts{};
        for (const auto& [bits, m] : model_) {
            for (std::size_t q = 0; q < counts.size(); ++q)
                counts[q] += matches(kQueries[q], mask_of(m));
        }
        EXPECT_EQ(q0_.count(), counts[0]);
        EXPECT_EQ(q1_.count(), counts[1]);
        EXPECT_EQ(q2_.count(), counts[2]);
        EXPECT_EQ(q3_.count(), counts[3]);
        EXPECT_EQ(all_.count(), model_.size());
        EXPECT_EQ(world_.observers().count(), order_.size());
        for (const Slot& s : slots_) EXPECT_EQ(s.handle.active(), s.seq != 0) << s.def.name;
        check_switches();
    }

    // The world first: the queries and observer handles below must not outlive it.
    ts::World world_;
    ts::Query<const A&> q0_;
    ts::Query<const B&, const C*> q1_;
    ts::Query<ts::Entity> q2_;
    ts::Query<ts::Entity> q3_;
    ts::Query<ts::Entity> all_;

    std::mt19937_64 rng_;
    std::uint64_t seed_;
    Mode mode_;
    std::size_t step_ = 0;
    const char* op_ = "";

    std::array<int, kTypes> by_id_{};  // type indices in ascending component id
    std::vector<Slot> slots_;
    std::vector<int> order_;  // subscribed slots in registration order
    std::uint64_t next_seq_ = 1;
    std::array<bool, kKinds> on_{};
    std::array<std::array<bool, kTypes>, 3> type_off_{};

    std::vector<Rec> log_;       // what the world's callbacks saw
    std::vector<Rec> expected_;  // what the model says they should see
    std::deque<ts::Entity> cb_spawned_;

    std::unordered_map<std::uint64_t, MEnt> model_;
    std::vector<ts::Entity> live_;
    std::vector<ts::Entity> dead_;
    std::size_t dead_next_ = 0;
    std::deque<Cmd> queue_;
    int depth_ = 0;

    std::vector<std::size_t> fired_;
    std::size_t max_population_ = 0;
    std::size_t deferred_flushes_ = 0;
    std::size_t callback_spawns_ = 0;
};

constexpr std::size_t kSteps = 20000;

TEST(ObserverModel, LogMatchesReferenceSeed1) {
    Harness h(0x5EED0001u, Mode::plain);
    h.run(kSteps);
}

TEST(ObserverModel, LogMatchesReferenceSeed2) {
    Harness h(0xC0FFEE1234ull, Mode::plain);
    h.run(kSteps);
}

TEST(ObserverModel, LogMatchesReferenceSeed3) {
    Harness h(0x9E3779B97F4A7C15ull, Mode::plain);
    h.run(kSteps);
}

TEST(ObserverModel, ReactiveObserversMatchReferenceSeed1) {
    Harness h(0x5EED0001u, Mode::reactive);
    h.run(kSteps);
}

TEST(ObserverModel, ReactiveObserversMatchReferenceSeed2) {
    Harness h(0xC0FFEE1234ull, Mode::reactive);
    h.run(kSteps);
}

TEST(ObserverModel, ReactiveObserversMatchReferenceSeed3) {
    Harness h(0x9E3779B97F4A7C15ull, Mode::reactive);
    h.run(kSteps);
}

// ---------------------------------------------------------------------------------------------
// Minimal reproductions of contract violations the model test found (disabled until fixed; the
// random tests avoid the calls concerned while kDeferredMultiComponentCalls is false).

/// What the observers of A and B and of two queries see, as text.
struct MultiLog {
    std::vector<std::string> lines;
    std::vector<ts::Observer> observers;

    void watch(ts::World& w) {
        auto line = [this](ts::World& world, ts::Entity e, const char* what) {
            lines.push_back(std::string(what) + (world.has<A>(e) ? " A" : "") +
                            (world.has<B>(e) ? " B" : ""));
        };
        observers.push_back(
            w.on_add<A>([line](ts::World& x, ts::Entity e) { line(x, e, "on_add<A>"); }));
        observers.push_back(
            w.on_add<B>([line](ts::World& x, ts::Entity e) { line(x, e, "on_add<B>"); }));
        observers.push_back(
            w.on_remove<A>([line](ts::World& x, ts::Entity e) { line(x, e, "on_remove<A>"); }));
        observers.push_back(
            w.on_remove<B>([line](ts::World& x, ts::Entity e) { line(x, e, "on_remove<B>"); }));
        // Matches an entity with A but not B: never, for one that gains or loses both at once.
        auto a_only = w.query<const A&>().without<B>();
        observers.push_back(
            a_only.on_enter([line](ts::World& x, ts::Entity e) { line(x, e, "enter A-only"); }));
        observers.push_back(
            a_only.on_exit([line](ts::World& x, ts::Entity e) { line(x, e, "exit A-only"); }));
        auto b_only = w.query<const B&>().without<A>();
        observers.push_back(
            b_only.on_enter([line](ts::World& x, ts::Entity e) { line(x, e, "enter B-only"); }));
        observers.push_back(
            b_only.on_exit([line](ts::World& x, ts::Entity e) { line(x, e, "exit B-only"); }));
    }
};

/// The contract's log of one add(e, A, B) / remove<A, B>(e) on an entity with neither / both:
/// the component events in ascending component id, each seeing the whole call's result (add) or
/// the values still all in place (remove), and no query event (the entity never matches
/// either query).
std::vector<std::string> expected_multi_log(bool add) {
    const bool a_first = ts::component_id<A>().value < ts::component_id<B>().value;
    const std::string first = a_first ? "A" : "B";
    const std::string second = a_first ? "B" : "A";
    const std::string kind = add ? "on_add<" : "on_remove<";
    return {kind + first + "> A B", kind + second + "> A B"};
}

// Call: world.add(e, B{}, A{}) inside query.each on an entity with no components.
// Expected (as the same add outside the loop): on_add<A>/on_add<B> in ascending component id,
// both seeing A and B, no enter/exit. Actual: the queued add is applied one component at a time
// in argument order, each with its own exit/enter pass (e.g. "on_add<B> B", "enter B-only",
// "on_add<A> A B", "exit B-only").
TEST(ObserverModel, DeferredMultiComponentAddFiresLikeOneAdd) {
    for (const bool deferred : {false, true}) {
        SCOPED_TRACE(deferred ? "add inside each" : "add outside a loop");
        ts::World w;
        MultiLog log;
        log.watch(w);
        const ts::Entity e = w.spawn();
        if (deferred) {
            w.query<ts::Entity>().each([&](ts::Entity x) {
                if (x == e) w.add(e, B{1}, A{2});
            });
        } else {
            w.add(e, B{1}, A{2});
        }
        EXPECT_EQ(log.lines, expected_multi_log(true));
    }
}

// Call: world.remove<B, A>(e) inside query.each on an entity with A and B.
// Expected (as outside the loop): on_remove<A>/on_remove<B> in ascending component id, both
// seeing A and B still in place, then the removal, no enter/exit. Actual: one removal per
// component in argument order: the second on_remove no longer sees the first component and an
// intermediate enter/exit fires (e.g. "on_remove<B> A B", "enter A-only", "on_remove<A> A",
// "exit A-only").
TEST(ObserverModel, DeferredMultiComponentRemoveFiresLikeOneRemove) {
    for (const bool deferred : {false, true}) {
        SCOPED_TRACE(deferred ? "remove inside each" : "remove outside a loop");
        ts::World w;
        const ts::Entity e = w.spawn(A{1}, B{2});
        MultiLog log;
        log.watch(w);
        if (deferred) {
            w.query<ts::Entity>().each([&](ts::Entity x) {
                if (x == e) w.remove<B, A>(e);
            });
        } else {
            w.remove<B, A>(e);
        }
        EXPECT_EQ(log.lines, expected_multi_log(false));
        EXPECT_FALSE(w.has<A>(e) || w.has<B>(e));
    }
}

// The same from an observer callback (its changes are deferred too): on_add<C> adds B and A in
// one call.
TEST(ObserverModel, MultiComponentAddFromACallbackFiresLikeOneAdd) {
    ts::World w;
    MultiLog log;
    log.watch(w);
    const ts::Observer o = w.on_add<C>([](ts::World& x, ts::Entity e) { x.add(e, B{1}, A{2}); });
    w.spawn(C{0});
    EXPECT_EQ(log.lines, expected_multi_log(true));
}

}  // namespace
