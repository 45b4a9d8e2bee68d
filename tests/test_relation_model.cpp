// Model-based randomized test of relations (relation.hpp, docs/relations.md).
//
// A random sequence of relation calls (relate / unrelate / unrelate-all of the hierarchy relation
// ts::ChildOf and of a data-carrying relation Joint, despawns with their ChildOf cascade,
// spawn / spawn_permanent, add / remove of a plain component Hp, calls on dead and null handles)
// and of batches of such calls made inside a `query<const Hp&>().each(...)` (deferred, applied
// when the loop ends) is applied to a tessera::World and to a plain reference model: per entity
// an alive flag, a permanent flag, an optional Hp, and per relation type an optional
// {data, ordered targets}, plus per target the ordered list of its sources.
//
// The contract the model follows:
//  - relate(e, R{d}, t): the first target adds R and Targets<R>; a further target is appended
//    and replaces the data; a present target only replaces the data. not_alive for a dead e or
//    t; for ChildOf, hierarchy_cycle (nothing changed) when t == e or t descends from e.
//  - unrelate<R>(e, t) removes t (the others keep their order), false when absent; the relation
//    goes with its last target. unrelate<R>(e) removes all and returns how many. not_alive for
//    a dead e.
//  - sources<R>(t): the entities related to t, in the order they were related to it.
//  - despawn(x): D = {x} plus, repeatedly, every non-permanent entity whose ChildOf parents are
//    all in D. Every entity of D dies; every survivor loses its targets in D (and the relation
//    with the last one). Permanent entities are never cascaded (they lose the parent).
//  - on_relate<R> fires after a target is added, on_unrelate<R> before one is removed (by
//    unrelate or by a despawn of the source or the target), once per (source, target) pair.
//  - Deferral: inside `each` the calls are queued and applied in order when the loop ends (a
//    relate whose source or target died meanwhile is dropped); a queued ChildOf that would close
//    a loop is dropped, the rest applied, and the end of `each` throws hierarchy_cycle.
//  - Reactive mode: an on_relate<Joint> observer unrelates the pair again when the data is
//    x99 (mod 100): an observer's change is deferred and applied when its scope ends (at the
//    back of the queue when that is a flush).
//
// After every operation the whole observable state is compared with the model (alive set,
// permanence, Hp, targets/sources/children/parents/parent/related/relation/has for both
// relation types, query counts and the Targets<R> query terms), and the relation events the
// observers saw are compared with the model's: in exact order for operations that despawn
// nothing, as a multiset when a despawn happened (the order within a cascade is checked by the
// focused test DespawnEventsFollowTheDocumentedOrder). Each event also records what the
// callback could see: source and target alive, related(source, target), the stored data.
//
// Misuse is checked too: dead and null handles (not_alive, false), despawn of a permanent entity
// (permanent_entity), add/remove/spawn of a relation's components (invalid_argument), inside
// and outside the loop; a call that throws must change nothing.
//
// Focused tests at the end: 10,000-deep chains (cascade with no recursion; a second parent
// stops it), 20,000-child fan-outs (no quadratic cost), the deferred loop report, the documented
// despawn event order, heap-owning relation data (leaks / double frees under ASan), and relation
// types first used inside an observer callback while a change runs.
#include <tessera/relation.hpp>
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace rel_model {

struct Joint {
    int v = 0;
    bool operator==(const Joint&) const = default;
};
struct Hp {
    int v = 0;
    bool operator==(const Hp&) const = default;
};
/// Relation types first used inside an observer callback (focused tests only).
struct Late1 {
    int v = 0;
};
struct Late2 {
    int v = 0;
};
struct Late3 {};
/// A relation whose data owns heap memory (leaks show under ASan).
struct Label {
    std::string s;
};

}  // namespace rel_model

namespace {

namespace ts = tessera;
using rel_model::Hp;
using rel_model::Joint;
using rel_model::Label;
using rel_model::Late1;
using rel_model::Late2;
using rel_model::Late3;

enum : int { kChild = 0, kJoint = 1, kKinds = 2 };
constexpr const char* kKindName[kKinds] = {"ChildOf", "Joint"};

/// Calls f.template operator()<R>() for the relation type of kind k.
template <class F>
decltype(auto) with_kind(int k, F&& f) {
    if (k == kChild) return f.template operator()<ts::ChildOf>();
    return f.template operator()<Joint>();
}

std::string str(ts::Entity e) {
    std::ostringstream os;
    os << e;
    return os.str();
}

std::string str(std::span<const ts::Entity> s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i != 0) out += ' ';
        out += str(s[i]);
    }
    return out + "]";
}

std::string str(const std::optional<ts::errc>& e) {
    return e ? std::string(ts::to_string(*e)) : std::string("no error");
}

/// Runs f; returns the code of the ts::Error it threw, if any.
template <class F>
std::optional<ts::errc> error_of(F&& f) {
    try {
        f();
    } catch (const ts::Error& err) {
        return err.code();
    }
    return std::nullopt;
}

bool contains(const std::vector<ts::Entity>& v, ts::Entity e) {
    return std::find(v.begin(), v.end(), e) != v.end();
}

bool erase_one(std::vector<ts::Entity>& v, ts::Entity e) {
    auto it = std::find(v.begin(), v.end(), e);
    if (it == v.end()) return false;
    v.erase(it);
    return true;
}

// ---------------------------------------------------------------------------------------------
// Relation events.

/// One on_relate / on_unrelate callback, with what it could see of the world.
struct Ev {
    int kind = 0;
    bool relate = false;
    std::uint64_t src = 0;
    std::uint64_t tgt = 0;
    int data = 0;    // the R& the callback got (ChildOf: 0)
    int stored = 0;  // world.relation<R>(src): its value (ChildOf: 0), -1 when null
    bool src_alive = false;
    bool tgt_alive = false;
    bool related = false;  // world.related<R>(src, tgt)
    auto operator<=>(const Ev&) const = default;
};

std::string describe(const Ev& e) {
    std::ostringstream os;
    os << (e.relate ? "on_relate<" : "on_unrelate<") << kKindName[e.kind] << "> "
       << ts::Entity::from_bits(e.src) << " -> " << ts::Entity::from_bits(e.tgt);
    if (e.kind == kJoint) os << " data=" << e.data << " stored=" << e.stored;
    if (e.kind == kChild && e.stored != 0) os << " relation<ChildOf>=null";
    if (!e.src_alive) os << " [source dead]";
    if (!e.tgt_alive) os << " [target dead]";
    if (!e.related) os << " [not related]";
    return os.str();
}

// ---------------------------------------------------------------------------------------------
// What is observable of one entity, from the world or from the model.

struct KindView {
    bool has_data = false;     // has<R>
    bool has_targets = false;  // has<Targets<R>>
    bool relation = false;     // relation<R>(e) != nullptr
    int data = 0;              // Joint: relation<Joint>(e)->v
    std::vector<ts::Entity> targets;
    std::vector<ts::Entity> sources;
    bool operator==(const KindView&) const = default;
};

struct View {
    bool alive = false;
    bool permanent = false;
    int hp = -1;  // -1: no Hp
    std::array<KindView, kKinds> kinds;
    std::vector<ts::Entity> children;  // world.children
    std::vector<ts::Entity> parents;   // world.parents
    ts::Entity parent;                 // world.parent
    bool operator==(const View&) const = default;
};

std::string describe(const View& v) {
    std::ostringstream os;
    os << (v.alive ? "alive" : "dead") << (v.permanent ? " permanent" : "");
    if (v.hp >= 0) os << " Hp=" << v.hp;
    for (int k = 0; k < kKinds; ++k) {
        const KindView& kv = v.kinds[static_cast<std::size_t>(k)];
        os << "\n      " << kKindName[k] << ": has<R>=" << kv.has_data
           << " has<Targets>=" << kv.has_targets << " relation=" << (kv.relation ? "set" : "null");
        if (k == kJoint) os << " data=" << kv.data;
        os << " targets=" << str(kv.targets) << " sources=" << str(kv.sources);
    }
    os << "\n      children=" << str(v.children) << " parents=" << str(v.parents)
       << " parent=" << v.parent;
    return os.str();
}

// ---------------------------------------------------------------------------------------------

enum class Mode { plain, reactive };

constexpr std::size_t kLowPopulation = 30;
constexpr std::size_t kHighPopulation = 110;
constexpr std::size_t kMaxPermanent = 8;
constexpr std::size_t kDeadWindow = 64;
constexpr std::size_t kFullCheckEvery = 25;
constexpr std::size_t kOpHistory = 40;

class Harness {
public:
    Harness(std::uint64_t seed, Mode mode)
        : q_joint_(world_.query<const Joint&>().with<Joint>()),
          q_child_(world_.query<ts::Entity>().with<ts::ChildOf>()),
          q_no_child_(world_.query<ts::Entity>().without<ts::ChildOf>()),
          q_hp_joint_(world_.query<const Hp&>().with<Joint>().without<ts::ChildOf>()),
          q_joint_targets_(world_.query<ts::Entity, const ts::Targets<Joint>&>()),
          q_child_targets_(world_.query<ts::Entity, const ts::Targets<ts::ChildOf>&>()),
          rng_(seed),
          seed_(seed),
          mode_(mode) {
        observers_.push_back(
            world_.on_relate<Joint>([this](ts::World& w, ts::Entity s, ts::Entity t, Joint& d) {
                record(w, kJoint, true, s, t, d.v);
                if (mode_ == Mode::reactive && d.v % 100 == 99) {
                    w.unrelate<Joint>(s, t);  // deferred: applied when this callback's scope ends
                    ++reactions_;
                }
            }));
        observers_.push_back(
            world_.on_unrelate<Joint>([this](ts::World& w, ts::Entity s, ts::Entity t, Joint& d) {
                record(w, kJoint, false, s, t, d.v);
            }));
        // One of each callback form for the tag.
        observers_.push_back(
            world_.on_relate<ts::ChildOf>([this](ts::World& w, ts::Entity s, ts::Entity t) {
                record(w, kChild, true, s, t, 0);
            }));
        observers_.push_back(world_.on_unrelate<ts::ChildOf>(
            [this](ts::World& w, ts::Entity s, ts::Entity t, ts::ChildOf&) {
                record(w, kChild, false, s, t, 0);
            }));
    }

    void run(std::size_t steps) {
        for (step_ = 0; step_ < steps; ++step_) {
            despawned_this_step_ = false;
            one_op();
            if (!::testing::Test::HasFailure()) compare_events();
            if (!::testing::Test::HasFailure()) {
                EXPECT_TRUE(queue_.empty()) << "model queue not drained";
                check_state((step_ + 1) % kFullCheckEvery == 0);
            }
            if (::testing::Test::HasFailure()) {
                std::ostringstream os;
                os << std::hex << "seed 0x" << seed_ << std::dec << ", step " << step_
                   << (mode_ == Mode::reactive ? " (reactive)" : "") << "; the last operations:\n";
                for (const std::string& s : history_) os << "    " << s << '\n';
                ADD_FAILURE() << os.str();
                return;
            }
        }
        check_state(true);
        // The run was not vacuous.
        EXPECT_GT(stats_.relates[kChild], steps / 20);
        EXPECT_GT(stats_.relates[kJoint], steps / 20);
        EXPECT_GT(stats_.cycles, 5u) << "ChildOf loops refused";
        EXPECT_GT(stats_.deep_cycles, 5u) << "ChildOf loops through a descendant refused";
        EXPECT_GT(stats_.deferred_cycles, 0u) << "loops dropped at the end of each";
        EXPECT_GT(stats_.cascades, 5u) << "despawns that cascaded";
        EXPECT_GE(stats_.max_cascade, 4u);
        EXPECT_GT(stats_.spared_by_second_parent, 0u);
        EXPECT_GT(stats_.spared_permanent, 0u);
        EXPECT_GT(stats_.survivor_unlinks, 0u);
        EXPECT_GT(stats_.batches, 10u);
        EXPECT_GT(stats_.nested, 0u);
        EXPECT_GT(stats_.dropped_dead, 0u) << "queued relations dropped because an end died";
        EXPECT_GT(stats_.multi_parent, 0u);
        if (mode_ == Mode::reactive) {
            EXPECT_GT(reactions_, 0u);
        }
    }

private:
    // -- the model ----------------------------------------------------------------------------
    struct MRel {
        bool present = false;
        int data = 0;
        std::vector<ts::Entity> targets;
    };
    struct MEnt {
        ts::Entity e;
        bool permanent = false;
        std::optional<int> hp;
        std::array<MRel, kKinds> rel;
        std::array<std::vector<ts::Entity>, kKinds> sources;  // in relate order
        std::size_t live_pos = 0;
    };
    struct Cmd {
        enum Kind { relate, unrelate, unrelate_all, despawn, add_hp, remove_hp } kind;
        int k = 0;
        ts::Entity e;
        ts::Entity t;
        int data = 0;
    };
    struct Stats {
        std::array<std::size_t, kKinds> relates{};
        std::size_t cycles = 0;
        std::size_t deep_cycles = 0;  // not a relate to itself
        std::size_t deferred_cycles = 0;
        std::size_t cascades = 0;
        std::size_t max_cascade = 0;
        std::size_t spared_by_second_parent = 0;
        std::size_t spared_permanent = 0;
        std::size_t survivor_unlinks = 0;
        std::size_t batches = 0;
        std::size_t nested = 0;
        std::size_t dropped_dead = 0;
        std::size_t multi_parent = 0;
    };

    // -- randomness ---------------------------------------------------------------------------
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
    bool chance(std::size_t percent) { return below(100) < percent; }
    ts::Entity random_live() { return live_[below(live_.size())]; }
    ts::Entity random_dead() {
        if (dead_.empty() || chance(15)) return ts::Entity::null();
        return dead_[below(dead_.size())];
    }
    int random_data() {
        if (mode_ == Mode::reactive && chance(6)) return static_cast<int>(below(10)) * 100 + 99;
        return static_cast<int>(below(1000));
    }

    // -- model bookkeeping --------------------------------------------------------------------
    MEnt* find(ts::Entity e) {
        auto it = model_.find(e.to_bits());
        return it == model_.end() ? nullptr : &it->second;
    }
    bool alive(ts::Entity e) { return find(e) != nullptr; }
    MEnt& ent(ts::Entity e) {
        MEnt* m = find(e);
        if (m == nullptr) {
            ADD_FAILURE() << "model: " << e << " is not alive";
            static MEnt none;
            none = MEnt{};
            return none;
        }
        return *m;
    }

    void insert_model(ts::Entity e, bool permanent, std::optional<int> hp) {
        auto [it, inserted] = model_.try_emplace(e.to_bits());
        EXPECT_TRUE(inserted) << "spawn returned an entity that is already alive: " << e;
        it->second.e = e;
        it->second.permanent = permanent;
        permanents_ += permanent;
        it->second.hp = hp;
        it->second.live_pos = live_.size();
        live_.push_back(e);
        max_population_ = std::max(max_population_, live_.size());
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

    /// Whether `a` is `t` or one of its ancestors (following ChildOf targets).
    bool is_ancestor_or_self(ts::Entity a, ts::Entity t) {
        std::vector<ts::Entity> stack{t};
        std::unordered_set<std::uint64_t> seen{t.to_bits()};
        while (!stack.empty()) {
            const ts::Entity x = stack.back();
            stack.pop_back();
            if (x == a) return true;
            for (const ts::Entity p : ent(x).rel[kChild].targets) {
                if (seen.insert(p.to_bits()).second) stack.push_back(p);
            }
        }
        return false;
    }

    /// A random descendant of `e` (or `e` itself): a short random walk down the children.
    ts::Entity random_descendant(ts::Entity e) {
        ts::Entity x = e;
        const std::size_t depth = 1 + below(6);
        for (std::size_t i = 0; i < depth; ++i) {
            const std::vector<ts::Entity>& c = ent(x).sources[kChild];
            if (c.empty()) break;
            x = c[below(c.size())];
        }
        return x;
    }

    /// A root (no parent) with the most descendants among a few tries: large cascades.
    ts::Entity random_root() {
        ts::Entity best = random_live();
        std::size_t best_size = 0;
        for (int tries = 0; tries < 12; ++tries) {
            const ts::Entity e = random_live();
            if (!ent(e).rel[kChild].targets.empty() || ent(e).permanent) continue;
            std::vector<ts::Entity> stack{e};
            std::unordered_set<std::uint64_t> seen{e.to_bits()};
            while (!stack.empty()) {
                const ts::Entity x = stack.back();
                stack.pop_back();
                for (const ts::Entity c : ent(x).sources[kChild]) {
                    if (seen.insert(c.to_bits()).second) stack.push_back(c);
                }
            }
            if (seen.size() > best_size) {
                best = e;
                best_size = seen.size();
            }
        }
        return best;
    }

    /// An entity with children when there is one (to make despawns cascade), else any.
    ts::Entity random_parent() {
        for (int tries = 0; tries < 8; ++tries) {
            const ts::Entity e = random_live();
            if (!ent(e).sources[kChild].empty()) return e;
        }
        return random_live();
    }

    void expect_event(int k, bool relate, ts::Entity s, ts::Entity t, int data) {
        expected_.push_back(Ev{k, relate, s.to_bits(), t.to_bits(), data, data, true, true, true});
    }

    /// relate in the model; false (nothing changed) when a ChildOf would close a loop.
    bool m_relate(int k, ts::Entity e, ts::Entity t, int data) {
        if (k == kChild && is_ancestor_or_self(e, t)) return false;
        if (k == kChild) data = 0;
        MRel& r = ent(e).rel[static_cast<std::size_t>(k)];
        const bool had = r.present && contains(r.targets, t);
        if (!r.present) {
            r.present = true;
            r.targets.clear();
        }
        r.data = data;
        ever_related_[static_cast<std::size_t>(k)] = true;
        if (!had) {
            r.targets.push_back(t);
            if (k == kChild && r.targets.size() > 1) ++stats_.multi_parent;
            ent(t).sources[static_cast<std::size_t>(k)].push_back(e);
            expect_event(k, true, e, t, data);
            if (mode_ == Mode::reactive && k == kJoint && data % 100 == 99) {
                queue_.push_back(Cmd{Cmd::unrelate, kJoint, e, t, 0});
            }
        }
        ++stats_.relates[static_cast<std::size_t>(k)];
        return true;
    }

    bool m_unrelate(int k, ts::Entity e, ts::Entity t) {
        MRel& r = ent(e).rel[static_cast<std::size_t>(k)];
        if (!r.present || !contains(r.targets, t)) return false;
        expect_event(k, false, e, t, r.data);
        erase_one(r.targets, t);
        erase_one(ent(t).sources[static_cast<std::size_t>(k)], e);
        if (r.targets.empty()) r = MRel{};
        return true;
    }

    std::size_t m_unrelate_all(int k, ts::Entity e) {
        MRel& r = ent(e).rel[static_cast<std::size_t>(k)];
        if (!r.present) return 0;
        for (const ts::Entity t : r.targets) expect_event(k, false, e, t, r.data);
        for (const ts::Entity t : r.targets)
            erase_one(ent(t).sources[static_cast<std::size_t>(k)], e);
        const std::size_t n = r.targets.size();
        r = MRel{};
        return n;
    }

    /// despawn in the model (x alive and not permanent): the cascade, the events, the deaths.
    void m_despawn(ts::Entity x) {
        despawned_this_step_ = true;
        std::vector<ts::Entity> doomed{x};
        std::unordered_set<std::uint64_t> marked{x.to_bits()};
        auto is_marked = [&](ts::Entity e) { return marked.count(e.to_bits()) != 0; };
        for (std::size_t i = 0; i < doomed.size(); ++i) {
            for (const ts::Entity c : ent(doomed[i]).sources[kChild]) {
                if (is_marked(c)) continue;
                const MEnt& mc = ent(c);
                const bool orphan = std::all_of(mc.rel[kChild].targets.begin(),
                                                mc.rel[kChild].targets.end(), is_marked);
                if (!orphan) continue;
                if (mc.permanent) continue;
                marked.insert(c.to_bits());
                doomed.push_back(c);
            }
        }
        // Statistics: who was spared and why (against the final D).
        for (const ts::Entity d : doomed) {
            for (const ts::Entity c : ent(d).sources[kChild]) {
                if (is_marked(c)) continue;
                const MEnt& mc = ent(c);
                if (mc.permanent && std::all_of(mc.rel[kChild].targets.begin(),
                                                mc.rel[kChild].targets.end(), is_marked)) {
                    ++stats_.spared_permanent;
                } else {
                    ++stats_.spared_by_second_parent;
                }
            }
        }
        if (doomed.size() > 1) ++stats_.cascades;
        stats_.max_cascade = std::max(stats_.max_cascade, doomed.size());
        // Events: each doomed entity's own relations, and every survivor's relation to it.
        for (const ts::Entity d : doomed) {
            const MEnt& md = ent(d);
            for (int k = 0; k < kKinds; ++k) {
                const MRel& r = md.rel[static_cast<std::size_t>(k)];
                for (const ts::Entity t : r.targets) expect_event(k, false, d, t, r.data);
            }
        }
        for (const ts::Entity d : doomed) {
            for (int k = 0; k < kKinds; ++k) {
                for (const ts::Entity s : ent(d).sources[static_cast<std::size_t>(k)]) {
                    if (!is_marked(s)) {
                        expect_event(k, false, s, d, ent(s).rel[static_cast<std::size_t>(k)].data);
                        ++stats_.survivor_unlinks;
                    }
                }
            }
        }
        // Mechanics.
        for (const ts::Entity d : doomed) {
            for (int k = 0; k < kKinds; ++k) {
                const std::size_t ku = static_cast<std::size_t>(k);
                for (const ts::Entity s : ent(d).sources[ku]) {
                    if (is_marked(s)) continue;
                    MRel& r = ent(s).rel[ku];
                    erase_one(r.targets, d);
                    if (r.targets.empty()) r = MRel{};
                }
                for (const ts::Entity t : ent(d).rel[ku].targets) {
                    if (!is_marked(t)) erase_one(ent(t).sources[ku], d);
                }
            }
        }
        for (const ts::Entity d : doomed) erase_model(d);
    }

    /// Applies one queued command (the world's flush order); returns whether it was a ChildOf
    /// dropped for closing a loop.
    bool m_apply(const Cmd& c) {
        switch (c.kind) {
            case Cmd::relate:
                if (!alive(c.e) || !alive(c.t)) {
                    ++stats_.dropped_dead;
                    return false;
                }
                if (!m_relate(c.k, c.e, c.t, c.data)) {
                    ++stats_.deferred_cycles;
                    return true;
                }
                return false;
            case Cmd::unrelate:
                if (!alive(c.e) || (c.t && !alive(c.t))) return false;
                m_unrelate(c.k, c.e, c.t);
                return false;
            case Cmd::unrelate_all:
                if (alive(c.e)) m_unrelate_all(c.k, c.e);
                return false;
            case Cmd::despawn:
                if (alive(c.e)) m_despawn(c.e);
                return false;
            case Cmd::add_hp:
                if (alive(c.e)) ent(c.e).hp = c.data;
                return false;
            case Cmd::remove_hp:
                if (alive(c.e)) ent(c.e).hp.reset();
                return false;
        }
        return false;
    }

    /// Applies the model's queue (as the world does when the outermost deferring scope ends);
    /// returns whether a ChildOf was dropped for closing a loop.
    bool m_drain() {
        bool cycle = false;
        while (!queue_.empty()) {
            const Cmd c = queue_.front();
            queue_.pop_front();
            cycle = m_apply(c) || cycle;
        }
        return cycle;
    }

    // -- the world side -----------------------------------------------------------------------
    void record(ts::World& w, int k, bool relate, ts::Entity s, ts::Entity t, int data) {
        if (&w != &world_) ADD_FAILURE() << "a relation callback got another world";
        Ev ev{k, relate, s.to_bits(), t.to_bits(), data, -1, false, false, false};
        const ts::World& cw = w;
        if (k == kJoint) {
            if (const Joint* j = cw.relation<Joint>(s)) ev.stored = j->v;
            ev.related = cw.related<Joint>(s, t);
        } else {
            if (cw.relation<ts::ChildOf>(s) != nullptr) ev.stored = 0;
            ev.related = cw.related<ts::ChildOf>(s, t);
        }
        ev.src_alive = cw.is_alive(s);
        ev.tgt_alive = cw.is_alive(t);
        log_.push_back(ev);
    }

    void note(const std::string& s) {
        if (history_.size() == kOpHistory) history_.pop_front();
        history_.push_back(std::to_string(step_) + ": " + s);
    }

    // Not inlined: GCC 12 at -O2 then warns (wrongly) that a nullopt `want` is read.
    template <class F>
    [[gnu::noinline]] void expect_error(std::optional<ts::errc> want, const std::string& what,
                                        F&& f) {
        const std::optional<ts::errc> got = error_of(std::forward<F>(f));
        if (got != want)
            ADD_FAILURE() << what << ": expected " << str(want) << ", got " << str(got);
    }

    // -- operations ---------------------------------------------------------------------------
    void op_spawn(bool permanent) {
        const bool with_hp = chance(40);
        const int hp = static_cast<int>(below(100));
        ts::Entity e;
        if (permanent) {
            e = with_hp ? world_.spawn_permanent(Hp{hp}) : world_.spawn_permanent();
        } else {
            e = with_hp ? world_.spawn(Hp{hp}) : world_.spawn();
        }
        note(std::string(permanent ? "spawn_permanent" : "spawn") + (with_hp ? "(Hp)" : "") +
             " -> " + str(e));
        insert_model(e, permanent, with_hp ? std::optional<int>(hp) : std::nullopt);
        if (live_.size() > 1 && chance(60)) {
            // As the child of a random entity, preferably one that has a parent: deep trees.
            ts::Entity t = random_live();
            for (int tries = 0; tries < 6 && (t == e || ent(t).rel[kChild].targets.empty());
                 ++tries) {
                t = random_live();
            }
            op_relate(kChild, e, t, 0);
        }
    }

    void op_relate(int k, ts::Entity e, ts::Entity t, int data) {
        const bool cycle = k == kChild && is_ancestor_or_self(e, t);
        note(std::string("relate ") + kKindName[k] + " " + str(e) + " -> " + str(t) +
             (k == kJoint ? " data " + std::to_string(data) : "") +
             (cycle ? " (closes a loop)" : ""));
        expect_error(cycle ? std::optional(ts::errc::hierarchy_cycle) : std::nullopt, "relate",
                     [&] {
                         if (k == kChild)
                             world_.relate(e, ts::ChildOf{}, t);
                         else
                             world_.relate(e, Joint{data}, t);
                     });
        if (cycle) {
            ++stats_.cycles;
            if (e != t) ++stats_.deep_cycles;
        } else {
            m_relate(k, e, t, data);
            m_drain();
        }
    }

    void op_unrelate(int k, ts::Entity e, ts::Entity t) {
        note(std::string("unrelate<") + kKindName[k] + "> " + str(e) + " -> " + str(t));
        const bool got = with_kind(k, [&]<class R>() { return world_.unrelate<R>(e, t); });
        const bool want = m_unrelate(k, e, t);
        EXPECT_EQ(got, want) << "unrelate return value";
        m_drain();
    }

    void op_unrelate_all(int k, ts::Entity e) {
        note(std::string("unrelate<") + kKindName[k] + "> " + str(e) + " (all)");
        const std::size_t got = with_kind(k, [&]<class R>() { return world_.unrelate<R>(e); });
        const std::size_t want = m_unrelate_all(k, e);
        EXPECT_EQ(got, want) << "unrelate (all) return value";
        m_drain();
    }

    void op_despawn(ts::Entity e) {
        const bool permanent = ent(e).permanent;
        note("despawn " + str(e) + (permanent ? " (permanent)" : ""));
        if (permanent) {
            expect_error(ts::errc::permanent_entity, "despawn of a permanent entity",
                         [&] { world_.despawn(e); });
            return;
        }
        bool r = false;
        expect_error(std::nullopt, "despawn", [&] { r = world_.despawn(e); });
        EXPECT_TRUE(r) << "despawn of a live entity returned false";
        m_despawn(e);
        m_drain();
    }

    void op_hp(ts::Entity e) {
        MEnt& m = ent(e);
        if (m.hp) {
            note("remove<Hp> " + str(e));
            world_.remove<Hp>(e);
            m.hp.reset();
        } else {
            const int v = static_cast<int>(below(100));
            note("add Hp " + str(e));
            world_.add(e, Hp{v});
            m.hp = v;
        }
    }

    /// Calls with dead or null handles: not_alive, false, or nothing.
    void op_dead() {
        const ts::Entity d = random_dead();
        const ts::Entity l = random_live();
        const std::size_t which = below(12);
        note("dead-handle call #" + std::to_string(which) + " dead=" + str(d) + " live=" + str(l));
        const auto not_alive = std::optional(ts::errc::not_alive);
        switch (which) {
            case 0:
                expect_error(not_alive, "relate from a dead entity",
                             [&] { world_.relate(d, Joint{1}, l); });
                break;
            case 1:
                expect_error(not_alive, "relate ChildOf to a dead target",
                             [&] { world_.relate(l, ts::ChildOf{}, d); });
                break;
            case 2:
                expect_error(not_alive, "relate Joint to a dead target",
                             [&] { world_.relate(l, Joint{2}, d); });
                break;
            case 3:
                expect_error(not_alive, "unrelate from a dead entity",
                             [&] { (void)world_.unrelate<Joint>(d, l); });
                break;
            case 4:
                expect_error(not_alive, "unrelate all from a dead entity",
                             [&] { (void)world_.unrelate<ts::ChildOf>(d); });
                break;
            case 5: {
                bool r = true;
                expect_error(std::nullopt, "unrelate of a dead target",
                             [&] { r = world_.unrelate<Joint>(l, d); });
                EXPECT_FALSE(r) << "unrelate of a dead target returned true";
                break;
            }
            case 6: {
                bool r = true;
                expect_error(std::nullopt, "unrelate of a null target",
                             [&] { r = world_.unrelate<ts::ChildOf>(l, ts::Entity::null()); });
                EXPECT_FALSE(r) << "unrelate of the null target returned true";
                break;
            }
            case 7: {
                bool r = true;
                expect_error(std::nullopt, "despawn of a dead entity",
                             [&] { r = world_.despawn(d); });
                EXPECT_FALSE(r) << "despawn of a dead entity returned true";
                break;
            }
            default: misuse(which - 8, l); break;
        }
    }

    /// A relation's components are kept by relate/unrelate only: add, remove and spawn of them
    /// throw invalid_argument (once the type is a relation in this world) and change nothing.
    void misuse(std::size_t which, ts::Entity l) {
        const auto invalid = std::optional(ts::errc::invalid_argument);
        switch (which) {
            case 0:
                if (ever_related_[kJoint]) {
                    expect_error(invalid, "add of a relation's data",
                                 [&] { world_.add(l, Joint{1}); });
                }
                break;
            case 1:
                if (ever_related_[kJoint]) {
                    expect_error(invalid, "remove of a relation's data",
                                 [&] { world_.remove<Joint>(l); });
                }
                break;
            case 2:
                if (ever_related_[kChild]) {
                    expect_error(invalid, "add of ChildOf", [&] { world_.add(l, ts::ChildOf{}); });
                    expect_error(invalid, "remove of ChildOf",
                                 [&] { world_.remove<ts::ChildOf>(l); });
                }
                break;
            default:
                if (ever_related_[kJoint]) {
                    expect_error(invalid, "spawn with a relation's data",
                                 [&] { world_.spawn(Hp{1}, Joint{2}); });
                }
                break;
        }
    }

    /// A ChildOf relate: usually a child without parent under a random entity (trees), sometimes
    /// an extra parent, sometimes a target below the child (a loop, refused).
    void op_relate_child() {
        ts::Entity e = random_live();
        if (chance(80)) {
            for (int tries = 0; tries < 10 && !ent(e).rel[kChild].targets.empty(); ++tries) {
                e = random_live();
            }
        }
        ts::Entity t = random_live();
        if (chance(15)) {
            t = random_descendant(e);
        } else if (chance(60)) {  // under an entity that has a parent: deeper trees
            for (int tries = 0; tries < 6 && ent(t).rel[kChild].targets.empty(); ++tries) {
                t = random_live();
            }
        }
        op_relate(kChild, e, t, 0);
    }

    void op_relate_joint() {
        const ts::Entity e = random_live();
        ts::Entity t = random_live();
        const std::vector<ts::Entity>& ts_ = ent(e).rel[kJoint].targets;
        if (!ts_.empty() && chance(25)) t = ts_[below(ts_.size())];  // data replaced only
        op_relate(kJoint, e, t, random_data());
    }

    /// A target of e (so the unrelate finds something), or sometimes any entity.
    ts::Entity some_target(int k, ts::Entity e) {
        const std::vector<ts::Entity>& t = ent(e).rel[static_cast<std::size_t>(k)].targets;
        if (t.empty() || chance(20)) return random_live();
        return t[below(t.size())];
    }
    /// An entity with an R relation when there is one.
    ts::Entity some_source(int k) {
        for (int tries = 0; tries < 8; ++tries) {
            const ts::Entity e = random_live();
            if (ent(e).rel[static_cast<std::size_t>(k)].present) return e;
        }
        return random_live();
    }

    // -- a batch inside each ------------------------------------------------------------------
    void op_batch() {
        ++stats_.batches;
        std::size_t hp_count = 0;
        for (const ts::Entity e : live_) hp_count += ent(e).hp.has_value();
        if (hp_count == 0) {
            const ts::Entity e = random_live();
            note("add Hp " + str(e) + " (so the loop runs)");
            world_.add(e, Hp{7});
            ent(e).hp = 7;
            hp_count = 1;
        }
        const std::size_t n = 1 + below(12);
        note("each { " + std::to_string(n) + " calls:");
        std::size_t calls = 0;
        std::optional<ts::errc> flush_error;
        std::unordered_set<std::uint64_t> despawn_queued;
        try {
            world_.query<const Hp&>().each([&](const Hp&) {
                if (calls++ == 0) {
                    for (std::size_t i = 0; i < n && !::testing::Test::HasFailure(); ++i)
                        batch_call(despawn_queued);
                }
            });
        } catch (const ts::Error& err) {
            flush_error = err.code();
        }
        note("} end of each: " + str(flush_error));
        EXPECT_EQ(calls, hp_count) << "the loop visited another number of entities than had Hp";
        const bool cycle = m_drain();
        EXPECT_EQ(flush_error, cycle ? std::optional(ts::errc::hierarchy_cycle) : std::nullopt)
            << "what the end of each threw (a queued ChildOf loop is reported there)";
    }

    void batch_call(std::unordered_set<std::uint64_t>& despawn_queued) {
        const std::size_t roll = below(100);
        const ts::Entity e = random_live();
        if (roll < 3) {
            // A nested loop: its end applies nothing (the outermost one does).
            std::size_t with_child = 0;
            for (const ts::Entity x : live_) with_child += ent(x).rel[kChild].present;
            if (with_child == 0) return;
            const std::size_t n = 1 + below(3);
            note("  nested each { " + std::to_string(n) + " calls:");
            std::size_t rows = 0;
            expect_error(std::nullopt, "nested each", [&] {
                q_child_.each([&](ts::Entity) {
                    if (rows++ == 0) {
                        for (std::size_t i = 0; i < n && !::testing::Test::HasFailure(); ++i)
                            batch_call(despawn_queued);
                    }
                });
            });
            note("  } end of the nested each");
            EXPECT_EQ(rows, with_child) << "rows of the nested loop";
            ++stats_.nested;
        } else if (roll < 8) {
            const bool permanent = chance(15);
            const ts::Entity s = permanent ? world_.spawn_permanent() : world_.spawn();
            note(std::string("  ") + (permanent ? "spawn_permanent" : "spawn") + " -> " + str(s));
            EXPECT_TRUE(world_.is_alive(s)) << "a spawn inside each is alive at once";
            insert_model(s, permanent, std::nullopt);
        } else if (roll < 33) {
            // ChildOf; a target below the child sometimes (a loop at the flush, if still one
            // then), the child itself sometimes (refused at once).
            ts::Entity t = random_live();
            if (chance(25)) t = random_descendant(e);
            if (chance(5)) t = e;
            note("  relate ChildOf " + str(e) + " -> " + str(t));
            const bool self = e == t;
            expect_error(self ? std::optional(ts::errc::hierarchy_cycle) : std::nullopt,
                         "deferred relate ChildOf", [&] { world_.relate(e, ts::ChildOf{}, t); });
            if (!self) queue_.push_back(Cmd{Cmd::relate, kChild, e, t, 0});
        } else if (roll < 53) {
            ts::Entity t = random_live();
            const std::vector<ts::Entity>& ts_ = ent(e).rel[kJoint].targets;
            if (!ts_.empty() && chance(25)) t = ts_[below(ts_.size())];
            const int data = random_data();
            note("  relate Joint " + str(e) + " -> " + str(t) + " data " + std::to_string(data));
            expect_error(std::nullopt, "deferred relate Joint",
                         [&] { world_.relate(e, Joint{data}, t); });
            queue_.push_back(Cmd{Cmd::relate, kJoint, e, t, data});
        } else if (roll < 63) {
            const int k = static_cast<int>(below(kKinds));
            const ts::Entity s = some_source(k);
            const ts::Entity t = some_target(k, s);
            note(std::string("  unrelate<") + kKindName[k] + "> " + str(s) + " -> " + str(t));
            const bool got = with_kind(k, [&]<class R>() { return world_.unrelate<R>(s, t); });
            // The answer is about the world as it is (nothing applied yet).
            const MRel& r = ent(s).rel[static_cast<std::size_t>(k)];
            EXPECT_EQ(got, r.present && contains(r.targets, t)) << "deferred unrelate's result";
            queue_.push_back(Cmd{Cmd::unrelate, k, s, t, 0});
        } else if (roll < 68) {
            const int k = static_cast<int>(below(kKinds));
            const ts::Entity s = some_source(k);
            note(std::string("  unrelate<") + kKindName[k] + "> " + str(s) + " (all)");
            const std::size_t got = with_kind(k, [&]<class R>() { return world_.unrelate<R>(s); });
            EXPECT_EQ(got, ent(s).rel[static_cast<std::size_t>(k)].targets.size())
                << "deferred unrelate (all)'s result";
            queue_.push_back(Cmd{Cmd::unrelate_all, k, s, {}, 0});
        } else if (roll < 70) {
            const int k = static_cast<int>(below(kKinds));
            const ts::Entity s = some_source(k);
            note(std::string("  unrelate<") + kKindName[k] + "> " + str(s) + " -> null");
            const bool got =
                with_kind(k, [&]<class R>() { return world_.unrelate<R>(s, ts::Entity::null()); });
            EXPECT_FALSE(got) << "deferred unrelate of the null target returned true";
            queue_.push_back(Cmd{Cmd::unrelate, k, s, ts::Entity::null(), 0});
        } else if (roll < 77) {
            const ts::Entity d = chance(50) ? random_parent() : e;
            const bool permanent = ent(d).permanent;
            const bool pending = despawn_queued.count(d.to_bits()) != 0;
            note("  despawn " + str(d) + (permanent ? " (permanent)" : "") +
                 (pending ? " (already queued)" : ""));
            if (permanent) {
                expect_error(ts::errc::permanent_entity, "deferred despawn of a permanent entity",
                             [&] { world_.despawn(d); });
                return;
            }
            bool r = false;
            expect_error(std::nullopt, "deferred despawn", [&] { r = world_.despawn(d); });
            EXPECT_EQ(r, !pending) << "deferred despawn's result";
            EXPECT_TRUE(world_.is_alive(d)) << "despawned before the end of the loop";
            EXPECT_TRUE(world_.despawn_pending(d));
            if (!pending) {
                despawn_queued.insert(d.to_bits());
                queue_.push_back(Cmd{Cmd::despawn, 0, d, {}, 0});
            }
        } else if (roll < 90) {
            if (chance(50)) {
                const int v = static_cast<int>(below(100));
                note("  add Hp " + str(e));
                world_.add(e, Hp{v});
                queue_.push_back(Cmd{Cmd::add_hp, 0, e, {}, v});
            } else {
                note("  remove<Hp> " + str(e));
                world_.remove<Hp>(e);
                queue_.push_back(Cmd{Cmd::remove_hp, 0, e, {}, 0});
            }
        } else if (roll < 95) {
            // Dead handles are refused at once, inside the loop too.
            const ts::Entity d = random_dead();
            note("  relate with dead " + str(d) + " / misuse of " + str(e));
            if (chance(30)) {
                misuse(below(4), e);  // refused at once inside the loop too
            } else if (chance(50)) {
                expect_error(ts::errc::not_alive, "deferred relate to a dead target",
                             [&] { world_.relate(e, ts::ChildOf{}, d); });
            } else {
                expect_error(ts::errc::not_alive, "deferred relate from a dead entity",
                             [&] { world_.relate(d, Joint{3}, e); });
            }
        } else {
            // Relate to an entity whose despawn is queued: dropped at the flush (it died).
            ts::Entity t = e;
            if (!despawn_queued.empty()) {
                auto it = despawn_queued.begin();
                std::advance(it, static_cast<std::ptrdiff_t>(below(despawn_queued.size())));
                t = ts::Entity::from_bits(*it);
            }
            const ts::Entity s = random_live();
            note("  relate Joint " + str(s) + " -> " + str(t) + " (despawn-pending target)");
            expect_error(std::nullopt, "deferred relate Joint",
                         [&] { world_.relate(s, Joint{5}, t); });
            queue_.push_back(Cmd{Cmd::relate, kJoint, s, t, 5});
        }
    }

    void one_op() {
        const std::size_t pop = live_.size();
        if (pop < 8 || (pop < kLowPopulation && chance(50))) {
            op_spawn(permanents_ < kMaxPermanent && chance(6));
            return;
        }
        if (pop > kHighPopulation && chance(30)) {
            op_despawn(random_parent());
            return;
        }
        const std::size_t roll = below(100);
        if (roll < 7) {
            op_spawn(permanents_ < kMaxPermanent && chance(8));
        } else if (roll < 30) {
            op_relate_child();
        } else if (roll < 48) {
            op_relate_joint();
        } else if (roll < 57) {
            const int k = static_cast<int>(below(kKinds));
            const ts::Entity e = some_source(k);
            op_unrelate(k, e, some_target(k, e));
        } else if (roll < 61) {
            const int k = static_cast<int>(below(kKinds));
            op_unrelate_all(k, some_source(k));
        } else if (roll < 63) {
            op_despawn(random_root());
        } else if (roll < 68) {
            op_despawn(chance(60) ? random_parent() : random_live());
        } else if (roll < 79) {
            op_hp(random_live());
        } else if (roll < 84) {
            op_dead();
        } else {
            op_batch();
        }
    }

    // -- comparisons --------------------------------------------------------------------------
    void compare_events() {
        std::vector<Ev> got = log_;
        std::vector<Ev> want = expected_;
        const bool exact = !despawned_this_step_;
        if (!exact) {
            std::sort(got.begin(), got.end());
            std::sort(want.begin(), want.end());
        }
        if (got != want) {
            std::ostringstream os;
            std::size_t first = 0;
            while (first < got.size() && first < want.size() && got[first] == want[first]) ++first;
            os << "relation events differ from the model"
               << (exact ? " (in order)" : " (as multisets, sorted)") << " at record " << first
               << "\n  world (" << got.size() << "):\n";
            for (std::size_t i = 0; i < got.size(); ++i)
                os << (i == first ? "  > " : "    ") << describe(got[i]) << '\n';
            os << "  model (" << want.size() << "):\n";
            for (std::size_t i = 0; i < want.size(); ++i)
                os << (i == first ? "  > " : "    ") << describe(want[i]) << '\n';
            ADD_FAILURE() << os.str();
        }
        log_.clear();
        expected_.clear();
    }

    template <class R>
    KindView world_kind(ts::Entity e) const {
        const ts::World& w = world_;
        KindView kv;
        kv.has_data = w.has<R>(e);
        kv.has_targets = w.has<ts::Targets<R>>(e);
        const R* r = w.relation<R>(e);
        kv.relation = r != nullptr;
        if constexpr (!std::is_empty_v<R>) {
            if (r != nullptr) kv.data = r->v;
        }
        const std::span<const ts::Entity> t = w.targets<R>(e);
        kv.targets.assign(t.begin(), t.end());
        const std::span<const ts::Entity> s = w.sources<R>(e);
        kv.sources.assign(s.begin(), s.end());
        return kv;
    }

    View world_view(ts::Entity e) const {
        const ts::World& w = world_;
        View v;
        v.alive = w.is_alive(e);
        v.permanent = w.is_permanent(e);
        if (const Hp* hp = v.alive ? w.try_get<Hp>(e) : nullptr) v.hp = hp->v;
        v.kinds[kChild] = world_kind<ts::ChildOf>(e);
        v.kinds[kJoint] = world_kind<Joint>(e);
        const std::span<const ts::Entity> c = w.children(e);
        v.children.assign(c.begin(), c.end());
        const std::span<const ts::Entity> p = w.parents(e);
        v.parents.assign(p.begin(), p.end());
        v.parent = w.parent(e);
        return v;
    }

    View model_view(ts::Entity e) {
        View v;
        const MEnt* m = find(e);
        if (m == nullptr) return v;
        v.alive = true;
        v.permanent = m->permanent;
        if (m->hp) v.hp = *m->hp;
        for (int k = 0; k < kKinds; ++k) {
            const std::size_t ku = static_cast<std::size_t>(k);
            KindView& kv = v.kinds[ku];
            kv.has_data = kv.has_targets = kv.relation = m->rel[ku].present;
            kv.data = k == kJoint ? m->rel[ku].data : 0;
            kv.targets = m->rel[ku].targets;
            kv.sources = m->sources[ku];
        }
        v.children = m->sources[kChild];
        v.parents = m->rel[kChild].targets;
        v.parent = v.parents.empty() ? ts::Entity::null() : v.parents.front();
        return v;
    }

    void check_entity(ts::Entity e) {
        const View got = world_view(e);
        const View want = model_view(e);
        if (got != want) {
            ADD_FAILURE() << "entity " << e
                          << " differs from the model\n    world: " << describe(got)
                          << "\n    model: " << describe(want);
        }
    }

    void check_state(bool full) {
        ASSERT_EQ(world_.count(), model_.size()) << "live entity count";
        std::array<std::size_t, kKinds> with{};
        std::size_t hp_joint_no_child = 0;
        for (const ts::Entity e : live_) {
            check_entity(e);
            if (::testing::Test::HasFailure()) return;
            const MEnt& m = ent(e);
            for (int k = 0; k < kKinds; ++k)
                with[static_cast<std::size_t>(k)] += m.rel[static_cast<std::size_t>(k)].present;
            hp_joint_no_child += m.hp && m.rel[kJoint].present && !m.rel[kChild].present;
            // related<R>: every target, and a few others.
            for (int k = 0; k < kKinds; ++k) {
                with_kind(k, [&]<class R>() {
                    const MRel& r = m.rel[static_cast<std::size_t>(k)];
                    for (const ts::Entity t : r.targets) {
                        EXPECT_TRUE(world_.related<R>(e, t))
                            << kKindName[k] << " " << e << " -> " << t;
                    }
                    const ts::Entity x = random_live();
                    EXPECT_EQ(world_.related<R>(e, x), r.present && contains(r.targets, x))
                        << "related<" << kKindName[k] << ">(" << e << ", " << x << ")";
                });
            }
        }
        EXPECT_EQ(q_joint_.count(), with[kJoint]) << "query<const Joint&>().with<Joint>()";
        EXPECT_EQ(q_child_.count(), with[kChild]) << "query<Entity>().with<ChildOf>()";
        EXPECT_EQ(q_no_child_.count(), model_.size() - with[kChild])
            << "query<Entity>().without<ChildOf>()";
        EXPECT_EQ(q_hp_joint_.count(), hp_joint_no_child)
            << "query<const Hp&>().with<Joint>().without<ChildOf>()";
        // The Targets<R> query terms: one row per entity with the relation, its targets.
        check_targets_query<Joint>(q_joint_targets_, kJoint);
        check_targets_query<ts::ChildOf>(q_child_targets_, kChild);
        if (!full) return;
        // The live set.
        std::vector<ts::Entity> got = world_.entities();
        std::vector<ts::Entity> want = live_;
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        EXPECT_EQ(got, want) << "world.entities() differs from the model's live set";
        // Every pair, and the dead.
        for (const ts::Entity a : live_) {
            const MEnt& m = ent(a);
            for (const ts::Entity b : live_) {
                EXPECT_EQ(world_.related<ts::ChildOf>(a, b), contains(m.rel[kChild].targets, b))
                    << "related<ChildOf>(" << a << ", " << b << ")";
                EXPECT_EQ(world_.related<Joint>(a, b), contains(m.rel[kJoint].targets, b))
                    << "related<Joint>(" << a << ", " << b << ")";
            }
            if (::testing::Test::HasFailure()) return;
        }
        for (const ts::Entity d : dead_) {
            const View v = world_view(d);
            if (v != View{}) ADD_FAILURE() << "dead " << d << " is not empty: " << describe(v);
            EXPECT_FALSE(world_.related<Joint>(d, random_live())) << d;
        }
        for (const ts::Entity e : live_) {
            EXPECT_FALSE(world_.related<ts::ChildOf>(e, ts::Entity::null()));
            if (!dead_.empty()) {
                const ts::Entity d = dead_[below(dead_.size())];
                EXPECT_FALSE(world_.related<Joint>(e, d)) << e << " -> dead " << d;
            }
        }
    }

    template <class R, class Q>
    void check_targets_query(Q& q, int k) {
        std::size_t rows = 0;
        q.each([&](ts::Entity e, const ts::Targets<R>& t) {
            ++rows;
            const MEnt* m = find(e);
            if (m == nullptr) {
                ADD_FAILURE() << "query<Targets<" << kKindName[k] << ">> yields dead " << e;
                return;
            }
            const MRel& r = m->rel[static_cast<std::size_t>(k)];
            std::vector<ts::Entity> got(t.begin(), t.end());
            if (!r.present || got != r.targets) {
                ADD_FAILURE() << "query<Targets<" << kKindName[k] << ">> row " << e << ": "
                              << str(got) << ", model "
                              << (r.present ? str(r.targets) : "no relation");
            }
            EXPECT_EQ(t.size(), got.size());
            if (!t.empty()) {
                EXPECT_EQ(t.front(), got.front());
                EXPECT_EQ(t[t.size() - 1], got.back());
            }
        });
        std::size_t want = 0;
        for (const ts::Entity e : live_) want += ent(e).rel[static_cast<std::size_t>(k)].present;
        EXPECT_EQ(rows, want) << "rows of query<Entity, const Targets<" << kKindName[k] << ">&>";
    }

    // The world first: the queries and observers below must not outlive it.
    ts::World world_;
    ts::Query<const Joint&> q_joint_;
    ts::Query<ts::Entity> q_child_;
    ts::Query<ts::Entity> q_no_child_;
    ts::Query<const Hp&> q_hp_joint_;
    ts::Query<ts::Entity, const ts::Targets<Joint>&> q_joint_targets_;
    ts::Query<ts::Entity, const ts::Targets<ts::ChildOf>&> q_child_targets_;
    std::vector<ts::Observer> observers_;

    std::mt19937_64 rng_;
    std::uint64_t seed_;
    Mode mode_;
    std::size_t step_ = 0;
    bool despawned_this_step_ = false;
    std::deque<std::string> history_;

    std::unordered_map<std::uint64_t, MEnt> model_;
    std::vector<ts::Entity> live_;
    std::vector<ts::Entity> dead_;
    std::size_t dead_next_ = 0;
    std::deque<Cmd> queue_;

    std::vector<Ev> log_;       // what the world's callbacks saw
    std::vector<Ev> expected_;  // what the model says they should see
    std::size_t reactions_ = 0;
    std::size_t max_population_ = 0;
    std::size_t permanents_ = 0;
    std::array<bool, kKinds> ever_related_{};
    Stats stats_;
};

constexpr std::size_t kSteps = 4000;

TEST(RelationModel, MatchesReferenceSeed1) {
    Harness h(0x5EED0001u, Mode::plain);
    h.run(kSteps);
}

TEST(RelationModel, MatchesReferenceSeed2) {
    Harness h(0xC0FFEE1234ull, Mode::plain);
    h.run(kSteps);
}

TEST(RelationModel, MatchesReferenceSeed3) {
    Harness h(0x9E3779B97F4A7C15ull, Mode::plain);
    h.run(kSteps);
}

TEST(RelationModel, ReactiveObserverMatchesReferenceSeed1) {
    Harness h(0x5EED0002u, Mode::reactive);
    h.run(kSteps);
}

TEST(RelationModel, ReactiveObserverMatchesReferenceSeed2) {
    Harness h(0xBADC0DE5ull, Mode::reactive);
    h.run(kSteps);
}

// ---------------------------------------------------------------------------------------------
// Deep and wide hierarchies.

constexpr std::size_t kDeep = 10000;

/// chain[0] is the root; chain[i] is a child of chain[i - 1].
std::vector<ts::Entity> make_chain(ts::World& w, std::size_t n) {
    std::vector<ts::Entity> chain;
    chain.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        chain.push_back(w.spawn(Hp{static_cast<int>(i)}));
        if (i != 0) w.relate(chain[i], ts::ChildOf{}, chain[i - 1]);
    }
    return chain;
}

TEST(RelationModel, DeepChainDespawnedFromTheRootDiesWhole) {
    for (const bool observed : {false, true}) {
        SCOPED_TRACE(observed ? "with relation and despawn observers" : "without observers");
        ts::World w;
        const ts::Entity bystander = w.spawn(Hp{-1});
        const std::vector<ts::Entity> chain = make_chain(w, kDeep);
        w.relate(bystander, Joint{4}, chain[kDeep / 2]);  // a survivor pointing into the chain
        std::size_t unrelates = 0;
        std::size_t despawns = 0;
        std::vector<ts::Observer> obs;
        if (observed) {
            obs.push_back(w.on_unrelate<ts::ChildOf>(
                [&](ts::World&, ts::Entity, ts::Entity) { ++unrelates; }));
            obs.push_back(w.on_despawn([&](ts::World&, ts::Entity) { ++despawns; }));
        }
        EXPECT_TRUE(w.despawn(chain[0]));
        for (const ts::Entity e : chain) ASSERT_FALSE(w.is_alive(e)) << e;
        EXPECT_EQ(w.count(), 1u);
        EXPECT_TRUE(w.is_alive(bystander));
        EXPECT_FALSE(w.has<Joint>(bystander));
        EXPECT_TRUE(w.targets<Joint>(bystander).empty());
        if (observed) {
            EXPECT_EQ(unrelates, kDeep - 1) << "one on_unrelate per (child, parent) pair";
            EXPECT_EQ(despawns, kDeep);
        }
    }
}

TEST(RelationModel, DeepChainWithASecondParentSurvives) {
    ts::World w;
    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn();
    const std::vector<ts::Entity> chain = make_chain(w, kDeep);
    w.relate(chain[0], ts::ChildOf{}, a);
    w.relate(chain[0], ts::ChildOf{}, b);
    EXPECT_EQ(w.parent(chain[0]), a);
    EXPECT_TRUE(w.despawn(a));
    EXPECT_FALSE(w.is_alive(a));
    EXPECT_EQ(w.count(), kDeep + 1) << "only the despawned parent dies";
    for (const ts::Entity e : chain) ASSERT_TRUE(w.is_alive(e)) << e;
    ASSERT_EQ(w.parents(chain[0]).size(), 1u);
    EXPECT_EQ(w.parent(chain[0]), b);
    EXPECT_EQ(w.children(b).size(), 1u);
    EXPECT_EQ(w.parent(chain[kDeep - 1]), chain[kDeep - 2]);
    // Also a cycle check through the whole depth: the root can't become the leaf's child.
    const auto loop = error_of([&] { w.relate(b, ts::ChildOf{}, chain[kDeep - 1]); });
    EXPECT_EQ(loop, std::optional(ts::errc::hierarchy_cycle));
    EXPECT_TRUE(w.parents(b).empty());
    // Despawning the remaining parent takes the chain with it.
    EXPECT_TRUE(w.despawn(b));
    EXPECT_EQ(w.count(), 0u);
}

TEST(RelationModel, WideFanOutDespawnIsLinear) {
    constexpr std::size_t kWide = 20000;
    for (const bool observed : {false, true}) {
        SCOPED_TRACE(observed ? "with relation observers" : "without observers");
        ts::World w;
        const ts::Entity parent = w.spawn();
        const ts::Entity other = w.spawn();
        std::vector<ts::Entity> kids;
        kids.reserve(kWide);
        for (std::size_t i = 0; i < kWide; ++i) {
            kids.push_back(w.spawn(Hp{static_cast<int>(i)}));
            w.relate(kids.back(), ts::ChildOf{}, parent);
            if (i % 2 == 0) w.relate(kids.back(), Joint{1}, other);  // a relation out of the tree
            if (i % 3 == 0) w.relate(other, Joint{2}, kids.back());  // one into it, many targets
        }
        ASSERT_EQ(w.children(parent).size(), kWide);
        std::size_t unrelates = 0;
        std::vector<ts::Observer> obs;
        if (observed) {
            obs.push_back(w.on_unrelate<ts::ChildOf>(
                [&](ts::World&, ts::Entity, ts::Entity) { ++unrelates; }));
            obs.push_back(
                w.on_unrelate<Joint>([&](ts::World&, ts::Entity, ts::Entity) { ++unrelates; }));
        }
        EXPECT_TRUE(w.despawn(parent));
        EXPECT_EQ(w.count(), 1u);
        for (const ts::Entity e : kids) ASSERT_FALSE(w.is_alive(e)) << e;
        EXPECT_TRUE(w.is_alive(other));
        EXPECT_TRUE(w.sources<Joint>(other).empty());
        EXPECT_FALSE(w.has<Joint>(other)) << "other's Joint targets all died";
        if (observed) {
            EXPECT_EQ(unrelates, kWide + kWide / 2 + (kWide + 2) / 3);
        }
    }
}

// A parent of many children each with a second parent: every child survives and loses one
// parent; still linear.
TEST(RelationModel, WideFanOutWithSecondParentsSurvives) {
    constexpr std::size_t kWide = 20000;
    ts::World w;
    const ts::Entity p = w.spawn();
    const ts::Entity q = w.spawn();
    std::vector<ts::Entity> kids;
    for (std::size_t i = 0; i < kWide; ++i) {
        kids.push_back(w.spawn());
        w.relate(kids.back(), ts::ChildOf{}, p);
        w.relate(kids.back(), ts::ChildOf{}, q);
    }
    EXPECT_TRUE(w.despawn(p));
    EXPECT_EQ(w.count(), kWide + 1);
    for (const ts::Entity k : kids) {
        ASSERT_EQ(w.parents(k).size(), 1u);
        ASSERT_EQ(w.parent(k), q);
    }
    EXPECT_EQ(std::vector<ts::Entity>(w.children(q).begin(), w.children(q).end()), kids);
    EXPECT_TRUE(w.despawn(q));
    EXPECT_EQ(w.count(), 0u);
}

// ---------------------------------------------------------------------------------------------
// Focused checks of the documented behaviour.

// A deferred ChildOf that closes a loop is dropped, the rest of the queue is applied, and the end
// of each throws hierarchy_cycle.
TEST(RelationModel, DeferredLoopIsDroppedAndReportedAtTheEndOfEach) {
    ts::World w;
    const ts::Entity a = w.spawn(Hp{1});
    const ts::Entity b = w.spawn();
    const ts::Entity c = w.spawn();
    const auto err = error_of([&] {
        w.query<const Hp&>().each([&](const Hp&) {
            w.relate(b, ts::ChildOf{}, a);  // applied
            w.relate(a, ts::ChildOf{}, b);  // closes a loop once the first is applied: dropped
            w.relate(c, Joint{9}, a);       // applied
            w.relate(c, ts::ChildOf{}, b);  // applied
        });
    });
    EXPECT_EQ(err, std::optional(ts::errc::hierarchy_cycle));
    EXPECT_EQ(w.parent(b), a);
    EXPECT_TRUE(w.parents(a).empty());
    ASSERT_NE(w.relation<Joint>(c), nullptr);
    EXPECT_EQ(w.relation<Joint>(c)->v, 9);
    EXPECT_EQ(w.parent(c), b);
}

// Outside a loop, unrelate<R>(e, Entity::null()) removes nothing and returns false (null is
// never a target). Inside each it must do the same when the queue is applied.
// Actual (bug): the queued command uses a null target to mean "every target", so the deferred
// call returns true and, at the end of the loop, removes all of e's targets.
TEST(RelationModel, DeferredUnrelateOfNullTargetRemovesNothing) {
    ts::World w;
    const ts::Entity e = w.spawn(Hp{1});
    const ts::Entity p = w.spawn();
    const ts::Entity q = w.spawn();
    w.relate(e, Joint{3}, p);
    w.relate(e, Joint{4}, q);
    w.relate(e, ts::ChildOf{}, p);
    EXPECT_FALSE(w.unrelate<Joint>(e, ts::Entity::null()));
    EXPECT_FALSE(w.unrelate<ts::ChildOf>(e, ts::Entity::null()));
    ASSERT_EQ(w.targets<Joint>(e).size(), 2u);
    bool joint_result = true;
    bool child_result = true;
    w.query<const Hp&>().each([&](const Hp&) {
        joint_result = w.unrelate<Joint>(e, ts::Entity::null());
        child_result = w.unrelate<ts::ChildOf>(e, ts::Entity::null());
    });
    EXPECT_FALSE(joint_result);
    EXPECT_FALSE(child_result);
    EXPECT_EQ(w.targets<Joint>(e).size(), 2u) << "the deferred unrelate of null removed targets";
    EXPECT_EQ(w.parent(e), p);
}

// The despawn event order of relation.hpp's header comment: "each despawned entity fires
// on_despawn, on_unrelate for its own relations, on_remove per component, on_exit, then the
// relations pointing at it are removed (on_unrelate at each source) and it dies; cascaded
// children follow in breadth-first order." So for a survivor s with a Joint to x, s's
// on_unrelate comes after x's on_despawn; and a cascaded child's relation to its parent (a
// relation pointing at the parent) is removed while the parent is still alive, before the
// parent dies and before the child's own on_despawn.
TEST(RelationModel, DespawnEventsFollowTheDocumentedOrder) {
    ts::World w;
    const ts::Entity s = w.spawn();  // survivor
    const ts::Entity x = w.spawn();  // despawned
    const ts::Entity c = w.spawn();  // its child, cascaded
    w.relate(s, Joint{1}, x);
    w.relate(x, Joint{2}, s);
    w.relate(c, ts::ChildOf{}, x);
    std::vector<std::string> log;
    auto name = [&](ts::Entity e) { return e == s ? "s" : e == x ? "x" : e == c ? "c" : "?"; };
    std::vector<ts::Observer> obs;
    obs.push_back(w.on_despawn(
        [&](ts::World&, ts::Entity e) { log.push_back(std::string("despawn ") + name(e)); }));
    obs.push_back(w.on_unrelate<Joint>([&](ts::World& wr, ts::Entity a, ts::Entity b) {
        log.push_back(std::string("unrelate Joint ") + name(a) + "->" + name(b) +
                      (wr.is_alive(b) ? "" : " (target dead)"));
    }));
    obs.push_back(w.on_unrelate<ts::ChildOf>([&](ts::World& wr, ts::Entity a, ts::Entity b) {
        log.push_back(std::string("unrelate ChildOf ") + name(a) + "->" + name(b) +
                      (wr.is_alive(b) ? "" : " (target dead)"));
    }));
    w.despawn(x);
    const std::vector<std::string> want = {
        "despawn x",              // x: on_despawn
        "unrelate Joint x->s",    // x: its own relations
        "unrelate Joint s->x",    // the relations pointing at x (order among them unspecified:
        "unrelate ChildOf c->x",  //   checked as a set below)
        "despawn c",              // then x dies; its child follows
    };
    ASSERT_EQ(log.size(), want.size()) << ::testing::PrintToString(log);
    EXPECT_EQ(std::vector<std::string>(log.begin(), log.begin() + 2),
              std::vector<std::string>(want.begin(), want.begin() + 2))
        << "world: " << ::testing::PrintToString(log);
    std::vector<std::string> mid(log.begin() + 2, log.begin() + 4);
    std::sort(mid.begin(), mid.end());
    EXPECT_EQ(mid, (std::vector<std::string>{want[3], want[2]}))
        << "world: " << ::testing::PrintToString(log);
    EXPECT_EQ(log.back(), want.back()) << "world: " << ::testing::PrintToString(log);
}

// Every on_unrelate of a despawn sees both ends alive and still related (the relation is removed
// after its callback), whatever dies: checked on a cascade with a survivor, a permanent child
// and a second parent.
TEST(RelationModel, UnrelateCallbacksOfADespawnSeeBothEndsAlive) {
    ts::World w;
    const ts::Entity root = w.spawn();
    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn();
    const ts::Entity keep = w.spawn_permanent();
    const ts::Entity other = w.spawn();
    const ts::Entity two = w.spawn();
    w.relate(a, ts::ChildOf{}, root);
    w.relate(b, ts::ChildOf{}, a);
    w.relate(keep, ts::ChildOf{}, a);
    w.relate(two, ts::ChildOf{}, b);
    w.relate(two, ts::ChildOf{}, other);
    w.relate(other, Joint{5}, b);
    std::vector<std::string> bad;
    std::size_t calls = 0;
    auto check = [&](ts::World& wr, ts::Entity src, ts::Entity tgt, bool child) {
        ++calls;
        const bool rel = child ? wr.related<ts::ChildOf>(src, tgt) : wr.related<Joint>(src, tgt);
        if (!wr.is_alive(src) || !wr.is_alive(tgt) || !rel) {
            std::ostringstream os;
            os << (child ? "ChildOf " : "Joint ") << src << " -> " << tgt
               << (wr.is_alive(src) ? "" : " source dead")
               << (wr.is_alive(tgt) ? "" : " target dead") << (rel ? "" : " not related");
            bad.push_back(os.str());
        }
    };
    const ts::Observer o1 = w.on_unrelate<ts::ChildOf>(
        [&](ts::World& wr, ts::Entity s, ts::Entity t) { check(wr, s, t, true); });
    const ts::Observer o2 = w.on_unrelate<Joint>(
        [&](ts::World& wr, ts::Entity s, ts::Entity t) { check(wr, s, t, false); });
    w.despawn(root);
    EXPECT_FALSE(w.is_alive(a));
    EXPECT_FALSE(w.is_alive(b));
    EXPECT_TRUE(w.is_alive(keep));
    EXPECT_TRUE(w.parents(keep).empty());
    EXPECT_TRUE(w.is_alive(two));
    EXPECT_EQ(w.parent(two), other);
    EXPECT_FALSE(w.has<Joint>(other));
    EXPECT_EQ(calls, 5u);  // a->root, b->a, keep->a, two->b, other->b
    EXPECT_TRUE(bad.empty()) << ::testing::PrintToString(bad);
}

// A relation whose data owns memory: replaced, dropped from the queue (its target died), applied
// from the queue, removed, despawned, and left in place when the world goes. ASan's leak check
// and use-after-free detection do the checking; the values are checked here.
TEST(RelationModel, HeapOwningRelationDataIsNeitherLeakedNorDoubleFreed) {
    const std::string long_a(100, 'a');
    const std::string long_b(200, 'b');
    ts::World w;
    const ts::Entity e = w.spawn(Hp{1});
    const ts::Entity t1 = w.spawn();
    const ts::Entity t2 = w.spawn();
    const ts::Entity t3 = w.spawn();
    w.relate(e, Label{long_a}, t1);
    w.relate(e, Label{long_b}, t2);        // appended, data replaced
    w.relate(e, Label{long_a + "!"}, t1);  // present target: data replaced only
    ASSERT_NE(w.relation<Label>(e), nullptr);
    EXPECT_EQ(w.relation<Label>(e)->s, long_a + "!");
    w.query<const Hp&>().each([&](const Hp&) {
        w.despawn(t3);
        w.relate(e, Label{long_b + "?"}, t3);  // dropped: t3 dies first
        w.relate(t1, Label{long_a + "#"}, e);  // applied
    });
    EXPECT_FALSE(w.is_alive(t3));
    EXPECT_EQ(w.targets<Label>(e).size(), 2u);
    EXPECT_EQ(w.relation<Label>(e)->s, long_a + "!");
    ASSERT_NE(w.relation<Label>(t1), nullptr);
    EXPECT_EQ(w.relation<Label>(t1)->s, long_a + "#");
    const ts::Observer o = w.on_unrelate<Label>([&](ts::World&, ts::Entity, ts::Entity, Label& l) {
        EXPECT_FALSE(l.s.empty()) << "the data is readable in on_unrelate";
    });
    EXPECT_TRUE(w.unrelate<Label>(e, t2));
    w.despawn(t1);  // e loses its last Label target; t1's own Label goes with it
    EXPECT_FALSE(w.has<Label>(e));
    w.relate(t2, Label{long_b}, e);  // left in place when the world is destroyed
}

// An observer callback may relate by a relation type the world has not seen yet (the relate is
// deferred; the type is registered at once). That must not disturb the change that is running:
// here an on_unrelate during unrelate, and during a despawn (which walks every relation type).
TEST(RelationModel, NewRelationTypeFirstUsedInsideAnUnrelateCallback) {
    ts::World w;
    const ts::Entity a = w.spawn();
    const ts::Entity b = w.spawn();
    w.relate(a, Joint{1}, b);
    w.relate(a, ts::ChildOf{}, b);
    int stage = 0;
    const ts::Observer o = w.on_unrelate<Joint>([&](ts::World& x, ts::Entity s, ts::Entity t) {
        if (stage == 0) x.relate(s, Late1{7}, t);  // a third relation type
        ++stage;
    });
    EXPECT_TRUE(w.unrelate<Joint>(a, b));
    EXPECT_EQ(stage, 1);
    EXPECT_FALSE(w.has<Joint>(a));
    EXPECT_TRUE(w.sources<Joint>(b).empty());
    ASSERT_TRUE(w.related<Late1>(a, b));
    EXPECT_EQ(w.relation<Late1>(a)->v, 7);
    EXPECT_EQ(w.parent(a), b);
}

TEST(RelationModel, NewRelationTypesFirstUsedInsideDespawnCallbacks) {
    ts::World w;
    const ts::Entity keep = w.spawn();
    const ts::Entity root = w.spawn();
    const ts::Entity kid = w.spawn();
    const ts::Entity other = w.spawn();
    w.relate(kid, ts::ChildOf{}, root);
    w.relate(root, Joint{1}, other);
    w.relate(kid, Joint{2}, other);
    w.relate(keep, Joint{3}, root);
    std::size_t calls = 0;
    const ts::Observer o = w.on_unrelate<Joint>([&](ts::World& x, ts::Entity, ts::Entity) {
        // Each call registers another type while the despawn walks the relation types.
        if (calls == 0) x.relate(keep, Late2{1}, other);
        if (calls == 1) x.relate(other, Late3{}, keep);
        ++calls;
    });
    EXPECT_TRUE(w.despawn(root));
    EXPECT_EQ(calls, 3u);  // root -> other, kid -> other, keep -> root
    EXPECT_FALSE(w.is_alive(root));
    EXPECT_FALSE(w.is_alive(kid));
    EXPECT_FALSE(w.has<Joint>(keep));
    EXPECT_TRUE(w.sources<Joint>(other).empty());
    EXPECT_TRUE(w.related<Late2>(keep, other));
    EXPECT_TRUE(w.related<Late3>(other, keep));
    EXPECT_EQ(w.count(), 2u);
}

}  // namespace
