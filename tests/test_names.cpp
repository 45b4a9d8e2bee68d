// names.hpp: set_name, name, lookup; uniqueness among ChildOf siblings; lifetime; clones.
#include <tessera/names.hpp>
#include <tessera/serialize.hpp>
#include <tessera/tessera.hpp>

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "common/error_of.hpp"

#include <map>
#include <random>
#include <string>
#include <vector>

namespace ts = tessera;
using tessera::test::error_of;

namespace {

TEST(Names, SetNameAndRead) {
    ts::World w;
    const ts::Entity e = w.spawn();
    EXPECT_EQ(w.name(e), "");
    w.set_name(e, "door");
    EXPECT_EQ(w.name(e), "door");
    EXPECT_EQ(w.lookup("door"), e);
    EXPECT_EQ(w.lookup("window"), ts::Entity::null());
    EXPECT_EQ(w.lookup(""), ts::Entity::null());
}

TEST(Names, LookupFollowsChildOfFromTheRoots) {
    ts::World w;
    const ts::Entity level = w.spawn(), room = w.spawn(), door = w.spawn();
    w.relate(room, ts::ChildOf{}, level);
    w.relate(door, ts::ChildOf{}, room);
    w.set_name(level, "level");
    w.set_name(room, "room1");
    w.set_name(door, "door");
    EXPECT_EQ(w.lookup("level/room1/door"), door);
    EXPECT_EQ(w.lookup("level/room1"), room);
    EXPECT_EQ(w.lookup("room1"), ts::Entity::null());  // not a root
    EXPECT_EQ(w.lookup("level/door"), ts::Entity::null());
    EXPECT_EQ(w.lookup("level/room1/door/"), ts::Entity::null());
}

TEST(Names, SameNameUnderDifferentParentsIsFine) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn(), x = w.spawn(), y = w.spawn();
    w.set_name(a, "a");
    w.set_name(b, "b");
    w.relate(x, ts::ChildOf{}, a);
    w.relate(y, ts::ChildOf{}, b);
    w.set_name(x, "door");
    w.set_name(y, "door");
    EXPECT_EQ(w.lookup("a/door"), x);
    EXPECT_EQ(w.lookup("b/door"), y);
}

TEST(Names, DuplicateAmongSiblingsIsInvalidArgument) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.set_name(a, "x");
    w.set_name(b, "y");
    EXPECT_EQ(error_of([&] { w.set_name(b, "x"); }), ts::errc::invalid_argument);
    EXPECT_EQ(w.name(b), "y");
    EXPECT_EQ(w.lookup("x"), a);
    EXPECT_EQ(w.lookup("y"), b);
    w.set_name(a, "x");  // its own name again: nothing to do
    EXPECT_EQ(w.lookup("x"), a);
}

TEST(Names, BadNamesAreInvalidArgument) {
    ts::World w;
    const ts::Entity e = w.spawn();
    EXPECT_EQ(error_of([&] { w.set_name(e, ""); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_name(e, "a/b"); }), ts::errc::invalid_argument);
    EXPECT_EQ(error_of([&] { w.set_name(e, "\xff\xfe"); }), ts::errc::invalid_argument);
    EXPECT_EQ(w.name(e), "");
}

TEST(Names, DeadEntityIsNotAlive) {
    ts::World w;
    const ts::Entity e = w.spawn();
    w.despawn(e);
    EXPECT_EQ(error_of([&] { w.set_name(e, "x"); }), ts::errc::not_alive);
    EXPECT_EQ(w.name(e), "");
}

TEST(Names, DespawnFreesTheName) {
    ts::World w;
    const ts::Entity a = w.spawn();
    w.set_name(a, "x");
    w.despawn(a);
    EXPECT_EQ(w.lookup("x"), ts::Entity::null());
    const ts::Entity b = w.spawn();  // may reuse a's slot
    EXPECT_EQ(w.name(b), "");
    w.set_name(b, "x");
    EXPECT_EQ(w.lookup("x"), b);
}

TEST(Names, RenamingFreesTheOldName) {
    ts::World w;
    const ts::Entity a = w.spawn(), b = w.spawn();
    w.set_name(a, "x");
    w.set_name(a, "z");
    EXPECT_EQ(w.lookup("x"), ts::Entity::null());
    EXPECT_EQ(w.lookup("z"), a);
    w.set_name(b, "x");
    EXPECT_EQ(w.lookup("x"), b);
}

TEST(Names, ReparentingMovesThePath) {
    ts::World w;
    const ts::Entity p = w.spawn(), q = w.spawn(), c = w.spawn();
    w.set_name(p, "p");
    w.set_name(q, "q");
    w.set_name(c, "c");
    EXPECT_EQ(w.lookup("c"), c);
    w.relate(c, ts::ChildOf{}, p);
    EXPECT_EQ(w.lookup("c"), ts::Entity::null());
    EXPECT_EQ(w.lookup("p/c"), c);
    w.unrelate<ts::ChildOf>(c, p);
    EXPECT_EQ(w.lookup("c"), c);
    w.relate(c, ts::ChildOf{}, q);
    EXPECT_EQ(w.lookup("q/c"), c);
    w.despawn(q);  // cascades: c has no other parent
    EXPECT_EQ(w.lookup("q/c"), ts::Entity::null());
    EXPECT_FALSE(w.is_alive(c));
}

TEST(Names, ParentDespawnMovesSurvivorsToTheirNextParent) {
    ts::World w;
    const ts::Entity p = w.spawn(), q = w.spawn(), c = w.spawn();
    w.set_name(p, "p");
    w.set_name(q, "q");
    w.relate(c, ts::ChildOf{}, p);
    w.relate(c, ts::ChildOf{}, q);
    w.set_name(c, "c");
    EXPECT_EQ(w.lookup("p/c"), c);
    w.despawn(p);
    EXPECT_EQ(w.lookup("q/c"), c);
}

TEST(Names, ReparentOntoATakenNameIsRefused) {
    ts::World w;
    const ts::Entity p = w.spawn(), a = w.spawn(), b = w.spawn();
    w.relate(a, ts::ChildOf{}, p);
    w.set_name(a, "x");
    w.set_name(b, "x");  // a root: no clash with p's child
    EXPECT_EQ(error_of([&] { w.relate(b, ts::ChildOf{}, p); }), ts::errc::invalid_argument);
    EXPECT_FALSE(w.has_relation<ts::ChildOf>(b));
    EXPECT_EQ(w.lookup("x"), b);
}

TEST(Names, CloneKeepsNames) {
    ts::World w;
    const ts::Entity p = w.spawn(), c = w.spawn();
    w.relate(c, ts::ChildOf{}, p);
    w.set_name(p, "p");
    w.set_name(c, "c");
    ts::World k = w.clone();
    EXPECT_EQ(k.lookup("p/c"), c);
    EXPECT_EQ(k.name(p), "p");
    k.set_name(c, "d");  // independent of the original
    EXPECT_EQ(w.name(c), "c");
    EXPECT_EQ(k.lookup("p/d"), c);
}

TEST(Names, SnapshotsSaveAndLoadNames) {
    ts::World w;
    const ts::Entity p = w.spawn(), c = w.spawn();
    w.relate(c, ts::ChildOf{}, p);
    w.set_name(p, "p");
    w.set_name(c, "c");
    const std::uint64_t hash = ts::state_hash(w);
    {
        ts::World k;
        ts::load(ts::save(w), k);
        EXPECT_EQ(k.lookup("p/c"), c);
        EXPECT_EQ(ts::state_hash(k), hash);
    }
    {
        ts::World k;
        ts::from_json(ts::to_json(w), k);
        EXPECT_EQ(k.lookup("p/c"), c);
        EXPECT_EQ(k.name(p), "p");
        EXPECT_EQ(ts::state_hash(k), hash);
    }
    {
        const ts::Snapshot snap = w.snapshot();
        w.set_name(c, "renamed");
        w.restore(snap);
        EXPECT_EQ(w.lookup("p/c"), c);
        EXPECT_EQ(w.lookup("p/renamed"), ts::Entity::null());
    }
}

TEST(Names, NamesAreInTheStateHash) {
    ts::World a, b;
    const ts::Entity ea = a.spawn(), eb = b.spawn();
    EXPECT_EQ(ts::state_hash(a), ts::state_hash(b));
    a.set_name(ea, "x");
    EXPECT_NE(ts::state_hash(a), ts::state_hash(b));
    b.set_name(eb, "x");
    EXPECT_EQ(ts::state_hash(a), ts::state_hash(b));
}

TEST(Names, ManyNamesChurnAgainstAMap) {
    // A randomized run against a plain map of root names.
    ts::World w;
    std::mt19937 rng(7);
    std::map<std::string, ts::Entity> model;
    std::vector<ts::Entity> alive;
    for (int step = 0; step < 3000; ++step) {
        const int op = static_cast<int>(rng() % 3);
        if (op == 0 || alive.empty()) {
            alive.push_back(w.spawn());
        } else if (op == 1) {
            const std::size_t i = rng() % alive.size();
            const std::string n = "n" + std::to_string(rng() % 50);
            const auto it = model.find(n);
            const bool taken = it != model.end() && it->second != alive[i];
            if (taken) {
                EXPECT_EQ(error_of([&] { w.set_name(alive[i], n); }), ts::errc::invalid_argument);
            } else {
                for (auto m = model.begin(); m != model.end(); ++m) {
                    if (m->second == alive[i]) {
                        model.erase(m);
                        break;
                    }
                }
                w.set_name(alive[i], n);
                model[n] = alive[i];
            }
        } else {
            const std::size_t i = rng() % alive.size();
            for (auto m = model.begin(); m != model.end(); ++m) {
                if (m->second == alive[i]) {
                    model.erase(m);
                    break;
                }
            }
            w.despawn(alive[i]);
            alive.erase(alive.begin() + static_cast<std::ptrdiff_t>(i));
        }
        if (step % 100 == 0) {
            for (int k = 0; k < 50; ++k) {
                const std::string n = "n" + std::to_string(k);
                const auto it = model.find(n);
                EXPECT_EQ(w.lookup(n), it == model.end() ? ts::Entity::null() : it->second);
            }
        }
    }
}

}  // namespace
