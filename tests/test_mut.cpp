// Mut<T> and MutColumn<T> (mut.hpp): rows are marked changed only when written through them,
// in each, par_each, each_chunk, chunks() and system Views. Run under TSan by `make tsan`.
#include <tessera/tessera.hpp>

#include <gtest/gtest.h>

#include <tbb/task_arena.h>

#include <chrono>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace ts = tessera;

namespace {
struct Hp {
    int v = 0;
};
struct Armor {
    int v = 0;
};
struct Gate {
    int v = 0;
};
}  // namespace

template <>
struct tessera::component_traits<Gate> {
    static constexpr bool enableable = true;
};

namespace {

std::vector<ts::Entity> spawn_hp(ts::World& w, int n) {
    std::vector<ts::Entity> es;
    for (int i = 0; i < n; ++i) es.push_back(w.spawn(Hp{i}));
    return es;
}

// The entities whose Hp changed after `tick`.
std::set<ts::Entity> changed_after(ts::World& w, std::uint64_t tick) {
    std::set<ts::Entity> out;
    w.query<ts::Entity, const Hp&>().each([&](ts::Entity e, const Hp&) {
        if (w.changed_tick<Hp>(e) > tick) out.insert(e);
    });
    return out;
}

TEST(Mut, OnlyWrittenRowsAreChanged) {
    ts::World w;
    const auto es = spawn_hp(w, 5);
    (void)w.changed_tick<Hp>(es[0]);  // tracking on: every row stamped now
    const std::uint64_t before = w.tick();
    w.advance_tick();
    int read_sum = 0;
    w.query<ts::Mut<Hp>>().each([&](ts::Mut<Hp> hp) {
        read_sum += hp->v + (*hp).v + hp.get().v;  // reads mark nothing
        if (hp->v == 3) hp.write().v = 30;
    });
    EXPECT_EQ(read_sum, 3 * (0 + 1 + 2 + 3 + 4));
    EXPECT_EQ(w.get<Hp>(es[3]).v, 30);
    EXPECT_EQ(changed_after(w, before), (std::set<ts::Entity>{es[3]}));
    EXPECT_EQ(w.changed_tick<Hp>(es[3]), w.tick());
}

TEST(Mut, RefTermStillStampsEveryRowVisited) {
    ts::World w;
    const auto es = spawn_hp(w, 5);
    (void)w.changed_tick<Hp>(es[0]);
    const std::uint64_t before = w.tick();
    w.advance_tick();
    w.query<Hp&>().each([](Hp& hp) {
        if (hp.v == 3) hp.v = 30;
    });
    EXPECT_EQ(changed_after(w, before).size(), 5u);
}

TEST(Mut, SetAssignsAndMarks) {
    ts::World w;
    const auto es = spawn_hp(w, 3);
    auto changed = w.query<ts::Entity, const Hp&>().changed<Hp>();
    changed.each([](ts::Entity, const Hp&) {});  // first run: everything; now up to date
    w.query<ts::Entity, ts::Mut<Hp>>().each([&](ts::Entity e, ts::Mut<Hp> hp) {
        if (e == es[1]) hp.set(Hp{7});
    });
    std::vector<ts::Entity> seen;
    changed.each([&](ts::Entity e, const Hp&) { seen.push_back(e); });
    EXPECT_EQ(seen, std::vector<ts::Entity>{es[1]});
    EXPECT_EQ(w.get<Hp>(es[1]).v, 7);
}

TEST(Mut, WritesWorkWhileUntrackedAndTrackingStartsLazily) {
    ts::World w;
    const auto es = spawn_hp(w, 4);
    w.query<ts::Mut<Hp>>().each([](ts::Mut<Hp> hp) { hp.write().v += 100; });
    EXPECT_EQ(w.get<Hp>(es[2]).v, 102);
    // The first tick query turns tracking on and stamps every row (the lazy default).
    EXPECT_EQ(w.changed_tick<Hp>(es[0]), w.tick());
}

TEST(Mut, WorldEachDeducesTheTerm) {
    ts::World w;
    const auto es = spawn_hp(w, 4);
    (void)w.changed_tick<Hp>(es[0]);
    const std::uint64_t before = w.tick();
    w.advance_tick();
    w.each([&](ts::Entity e, ts::Mut<Hp> hp) {
        if (e == es[0] || e == es[2]) ++hp.write().v;
    });
    EXPECT_EQ(changed_after(w, before), (std::set<ts::Entity>{es[0], es[2]}));
}

TEST(Mut, DisabledRowsAreSkippedAndFiltersApply) {
    ts::World w;
    std::vector<ts::Entity> es;
    for (int i = 0; i < 40; ++i) es.push_back(w.spawn(Hp{i}, Gate{}, Armor{i % 2}));
    w.enable<Gate>(es[4], false);
    (void)w.changed_tick<Hp>(es[0]);
    (void)w.changed_tick<Armor>(es[0]);
    std::uint64_t before = w.tick();
    w.advance_tick();
    // Gated (Gate is enableable): the per-row path.
    int visited = 0;
    w.query<ts::Mut<Hp>, const Gate&>().each([&](ts::Mut<Hp> hp, const Gate&) {
        ++visited;
        if (hp->v % 2 == 0) hp.write().v += 1000;
    });
    EXPECT_EQ(visited, 39);
    std::set<ts::Entity> want;
    for (int i = 0; i < 40; i += 2) {
        if (i != 4) want.insert(es[static_cast<std::size_t>(i)]);
    }
    EXPECT_EQ(changed_after(w, before), want);
    // Filtered (a change filter on another type): the per-row path too.
    const std::uint64_t mid = w.tick();
    w.advance_tick();
    w.get_mut<Armor>(es[5]).v = 9;
    w.get_mut<Armor>(es[6]).v = 9;
    before = w.tick();
    w.advance_tick();
    visited = 0;
    w.query<ts::Mut<Hp>, const Armor&>().changed_since<Armor>(mid).each(
        [&](ts::Mut<Hp> hp, const Armor&) {
            ++visited;
            if (visited == 1) hp.write().v = -5;
        });
    EXPECT_EQ(visited, 2);
    EXPECT_EQ(changed_after(w, before), (std::set<ts::Entity>{es[5]}));
}

TEST(Mut, ParEachMarksExactlyTheWrittenRows) {
    ts::World w;
    const auto es = spawn_hp(w, 5000);
    (void)w.changed_tick<Hp>(es[0]);
    const std::uint64_t before = w.tick();
    w.advance_tick();
    tbb::task_arena arena(4);
    arena.execute([&] {
        w.query<ts::Mut<Hp>>().par_each([](ts::Mut<Hp> hp) {
            if (hp->v % 7 == 0) hp.write().v = -1;
        });
    });
    std::set<ts::Entity> want;
    for (std::size_t i = 0; i < es.size(); i += 7) want.insert(es[i]);
    EXPECT_EQ(changed_after(w, before), want);
}

TEST(Mut, ChunkLoopsGetAMutColumn) {
    ts::World w;
    const auto es = spawn_hp(w, 10);
    (void)w.changed_tick<Hp>(es[0]);
    std::uint64_t before = w.tick();
    w.advance_tick();
    w.query<ts::Mut<Hp>>().each_chunk([](ts::Chunk&, ts::MutColumn<Hp> hp) {
        ASSERT_EQ(hp.size(), 10u);
        EXPECT_EQ(hp.values()[9].v, 9);
        EXPECT_EQ(hp.get(8).v, 8);
        hp.write(1).v = 11;
        hp[2].set(Hp{12});
    });
    EXPECT_EQ(changed_after(w, before), (std::set<ts::Entity>{es[1], es[2]}));
    before = w.tick();
    w.advance_tick();
    for (ts::Chunk& c : w.query<const Hp&>().chunks()) {
        const ts::MutColumn<Hp> hp = c.mut_column<Hp>();
        EXPECT_TRUE(c.mut_column<Armor>().empty());
        hp.write(7).v = 70;
    }
    EXPECT_EQ(changed_after(w, before), (std::set<ts::Entity>{es[7]}));
    EXPECT_EQ(w.get<Hp>(es[7]).v, 70);
}

TEST(Mut, SystemViewsSeeExactlyTheWrittenRowsAndDeclareAWrite) {
    ts::World w;
    const auto es = spawn_hp(w, 30);
    std::vector<std::vector<ts::Entity>> frames;
    ts::Schedule s(2);
    s.add("damage", [&](ts::View<ts::Entity, ts::Mut<Hp>> v) {
        v.each([&](ts::Entity e, ts::Mut<Hp> hp) {
            if (e.index % 10 == frames.size() % 10) hp.write().v -= 1;
        });
    });
    s.add("watch", [&](ts::View<ts::Entity, const Hp&, ts::Changed<Hp>> v) {
         std::vector<ts::Entity> seen;
         v.each([&](ts::Entity e, const Hp&) { seen.push_back(e); });
         frames.push_back(seen);
     }).after("damage");
    for (int f = 0; f < 4; ++f) s.run(w);
    ASSERT_EQ(frames.size(), 4u);
    EXPECT_EQ(frames[0].size(), es.size());  // the first run sees every row
    for (std::size_t f = 1; f < frames.size(); ++f) {
        std::vector<ts::Entity> want;
        for (const ts::Entity e : es) {
            if (e.index % 10 == f % 10) want.push_back(e);
        }
        EXPECT_EQ(frames[f], want) << "frame " << f;
    }
    // Mut<Hp> is a write: a reader of Hp can't share its stage.
    ts::Schedule t(2);
    t.add("w", [](ts::View<ts::Mut<Hp>>) {});
    t.add("r", [](ts::View<const Hp&>) {});
    EXPECT_EQ(t.stage_count(), 2u);
}

// A World& system with declared access runs beside others with its own tick; par_each's
// workers must stamp with it too (the tick is taken on the calling thread), on Mut<T>'s path
// and on the per-row path of a gated T& loop alike.
TEST(Mut, ParEachInASharedWorldSystemStampsTheSystemsTick) {
    ts::World w;
    std::vector<ts::Entity> es = spawn_hp(w, 20000);
    for (int i = 0; i < 20000; ++i) es.push_back(w.spawn(Hp{i}, Gate{}));
    (void)w.changed_tick<Hp>(es[0]);
    ts::Schedule s(2);
    s.set_parallel_threshold(std::chrono::nanoseconds(0));
    s.add("other", [](ts::World&) {}).reads<Armor>();  // first: "mark" gets the later tick
    s.add("mark", [&](ts::World& world) {
         world.query<ts::Mut<Hp>>().without<Gate>().par_each(
             [](ts::Mut<Hp> hp) { hp.write().v = 1; });
         world.query<Hp&, const Gate&>().par_each([](Hp& hp, const Gate&) { hp.v = 2; });
         world.get_mut<Hp>(es[0]).v = 3;  // on the calling thread: the system's tick
     }).writes<Hp>();
    EXPECT_EQ(s.stage_count(), 1u);
    s.run(w);
    const std::uint64_t t = w.changed_tick<Hp>(es[0]);
    for (const ts::Entity e : es) ASSERT_EQ(w.changed_tick<Hp>(e), t) << e.index;
}

// Model-based: random writes through Mut<Hp> in every loop kind, on several seeds and worker
// counts, against a reference of which rows were written. Disabled Gate rows are not visited
// by each / par_each / Views; chunk loops visit every row.
TEST(MutModel, ChangedSeesExactlyTheRowsWritten) {
    for (const unsigned seed : {1u, 2u, 3u, 4u}) {
        for (const int workers : {1, 2, 4}) {
            SCOPED_TRACE(testing::Message() << "seed " << seed << ", workers " << workers);
            std::mt19937 rng(seed);
            ts::World w;
            std::vector<ts::Entity> es;
            for (int kind = 0; kind < 3; ++kind) {
                const int n = std::uniform_int_distribution<int>(1, 400)(rng);
                for (int i = 0; i < n; ++i) {
                    if (kind == 0) es.push_back(w.spawn(Hp{}));
                    if (kind == 1) es.push_back(w.spawn(Hp{}, Armor{}));
                    if (kind == 2) es.push_back(w.spawn(Hp{}, Gate{}));
                }
            }
            std::vector<std::uint8_t> write(es.size() + 1, 0);  // by entity index
            std::vector<std::uint8_t> gated(es.size() + 1, 0);  // Gate disabled
            auto changed = w.query<ts::Entity, const Hp&>().changed<Hp>();
            changed.each([](ts::Entity, const Hp&) {});
            tbb::task_arena arena(workers);
            ts::Schedule schedule(static_cast<std::size_t>(workers));
            schedule.add("write", [&](ts::View<ts::Entity, ts::Mut<Hp>, const Gate*> v) {
                v.par_each([&](ts::Entity e, ts::Mut<Hp> hp, const Gate*) {
                    if (write[e.index] != 0) ++hp.write().v;
                });
            });
            auto mq = w.query<ts::Entity, ts::Mut<Hp>, const Gate*>();
            for (int frame = 0; frame < 12; ++frame) {
                for (std::size_t i = 0; i < es.size(); ++i) {
                    write[es[i].index] = rng() % 5 == 0 ? 1 : 0;
                    if (w.has<Gate>(es[i]) && rng() % 4 == 0) {
                        gated[es[i].index] ^= 1u;
                        w.enable<Gate>(es[i], gated[es[i].index] == 0);
                    }
                }
                const int mode = static_cast<int>(rng() % 5);
                const bool chunked = mode == 2 || mode == 3;
                std::set<ts::Entity> want;
                for (const ts::Entity e : es) {
                    if (write[e.index] != 0 && (chunked || gated[e.index] == 0)) want.insert(e);
                }
                auto body = [&](ts::Entity e, ts::Mut<Hp> hp, const Gate*) {
                    (void)hp->v;  // a read marks nothing
                    if (write[e.index] != 0) ++hp.write().v;
                };
                if (mode == 0) mq.each(body);
                if (mode == 1) arena.execute([&] { mq.par_each(body); });
                if (mode == 2) {
                    mq.each_chunk([&](ts::Chunk& c, std::span<const ts::Entity> ents,
                                      ts::MutColumn<Hp> hp, std::span<const Gate>) {
                        ASSERT_EQ(hp.size(), c.count());
                        for (std::size_t r = 0; r < ents.size(); ++r) {
                            if (write[ents[r].index] != 0) ++hp.write(r).v;
                        }
                    });
                }
                if (mode == 3) {
                    for (ts::Chunk& c : mq.chunks()) {
                        const ts::MutColumn<Hp> hp = c.mut_column<Hp>();
                        for (std::size_t r = 0; r < c.count(); ++r) {
                            if (write[c.entities()[r].index] != 0) ++hp[r].write().v;
                        }
                    }
                }
                if (mode == 4) schedule.run(w);
                std::set<ts::Entity> seen;
                changed.each([&](ts::Entity e, const Hp&) { seen.insert(e); });
                ASSERT_EQ(seen, want) << "frame " << frame << ", mode " << mode;
            }
        }
    }
}

}  // namespace
