// schedule: the Rust ecs_bench_suite schedule. 10,000 entities each of (A,B), (A,B,C),
// (A,B,C,D) and (A,B,C,E), all floats; one frame runs the suite's systems `ab` (swap A and B
// over every entity with both), `cd` (swap C and D) and `ce` (swap C and E), all in one phase.
// `ab` touches 40,000 entities, `cd` and `ce` 10,000 each; `cd` and `ce` both write C, so they
// run one after the other, and `ab` can run beside them. Item = one entity of the world (40,000
// per frame). In a size sweep (--tessera-n) each set holds a quarter of the sweep's count.
//
// Variants: `tessera` = `Schedule::run(world, arena)` on a `tbb::task_arena(1)` (every system
// inline on the calling thread); `tessera_par` = the same on a `tbb::task_arena(2)` with the
// schedule's default, automatic choice between inline and parallel phases (from measured
// phase times: docs/systems.md), judged by its speedup over `tessera` in the same run
// (docs/benchmarks.md); `tessera_par_always` = the same with the threshold at zero, so the phase
// always runs on both workers (what the parallel path gives, without the occasional inline
// run the automatic choice makes to keep measuring). Raw baseline: the same three swap loops
// over plain arrays, one table of arrays per entity set, single-threaded.
//
// Note on the ceiling: with 2 workers the best split is `ab` on one worker and `cd` then `ce` on
// the other, i.e. 40,000 against 20,000 entity swaps, so the speedup over 1 worker cannot
// exceed 1.5x for this schedule (per-entity costs being equal).
//
// Values: entity i of every set starts with A = i, B = i + 0.25, C = i + 0.5, D = i + 0.75,
// E = i + 0.125 (exact in float); each frame swaps, so after an even number of frames every
// value is back to its start and after an odd number the swapped pairs are exchanged. One
// untimed frame is checked before timing, and the values again after the timed frames.
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <tbb/task_arena.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace tessera_bench {
namespace {

struct C {
    float v;
};
struct D {
    float v;
};
struct E {
    float v;
};

/// Entities per set in the standard run.
inline constexpr std::size_t kSetN = 10'000;
inline constexpr std::size_t kSets = 4;  // (A,B), (A,B,C), (A,B,C,D), (A,B,C,E)
inline constexpr std::size_t kScheduleN = kSets * kSetN;

/// Entities per set: a quarter of the sweep's count in a size sweep (rounded down).
std::size_t set_count() {
    return entity_count(kScheduleN) / kSets;
}

/// One entity's values; components its set lacks stay at 0.
struct Values {
    float a, b, c, d, e;
    bool operator==(const Values&) const = default;
};

/// Entity `i` of set `set` (0..3) after `frames` frames.
Values expected(std::size_t set, std::size_t i, std::uint64_t frames) {
    const float f = static_cast<float>(i);
    Values v{f, f + 0.25f, set >= 1 ? f + 0.5f : 0.0f, set == 2 ? f + 0.75f : 0.0f,
             set == 3 ? f + 0.125f : 0.0f};
    if ((frames & 1) != 0) {
        std::swap(v.a, v.b);
        if (set == 2) std::swap(v.c, v.d);
        if (set == 3) std::swap(v.c, v.e);
    }
    return v;
}

/// The raw baseline's entity sets: one table of arrays each (absent columns empty).
struct RawSet {
    AlignedVector<A> a;
    AlignedVector<B> b;
    AlignedVector<C> c;
    AlignedVector<D> d;
    AlignedVector<E> e;
};

void schedule_raw(benchmark::State& state) {
    const std::size_t set_n = set_count();
    std::array<RawSet, kSets> sets;
    for (std::size_t s = 0; s < kSets; ++s) {
        RawSet& t = sets[s];
        for (std::size_t i = 0; i < set_n; ++i) {
            const Values v = expected(s, i, 0);
            t.a.push_back(A{v.a});
            t.b.push_back(B{v.b});
            if (s >= 1) t.c.push_back(C{v.c});
            if (s == 2) t.d.push_back(D{v.d});
            if (s == 3) t.e.push_back(E{v.e});
        }
    }
    auto check = [&](std::uint64_t frames) {
        for (std::size_t s = 0; s < kSets; ++s) {
            const RawSet& t = sets[s];
            for (std::size_t i = 0; i < set_n; ++i) {
                const Values got{t.a[i].v, t.b[i].v, s >= 1 ? t.c[i].v : 0.0f,
                                 s == 2 ? t.d[i].v : 0.0f, s == 3 ? t.e[i].v : 0.0f};
                if (got != expected(s, i, frames)) return false;
            }
        }
        return true;
    };
    auto frame = [&] {
        for (RawSet& t : sets) {  // ab
            A* const a = t.a.data();
            B* const b = t.b.data();
            for (std::size_t i = 0; i < set_n; ++i) std::swap(a[i].v, b[i].v);
        }
        {  // cd
            C* const c = sets[2].c.data();
            D* const d = sets[2].d.data();
            for (std::size_t i = 0; i < set_n; ++i) std::swap(c[i].v, d[i].v);
        }
        {  // ce
            C* const c = sets[3].c.data();
            E* const e = sets[3].e.data();
            for (std::size_t i = 0; i < set_n; ++i) std::swap(c[i].v, e[i].v);
        }
    };
    std::uint64_t frames = 0;
    frame();
    ++frames;
    if (!check(frames)) {
        state.SkipWithError("schedule/raw: wrong values after one frame");
        return;
    }
    for (auto _ : state) {
        frame();
        ++frames;
        for (RawSet& t : sets) {
            benchmark::DoNotOptimize(t.a.data());
            benchmark::DoNotOptimize(t.b.data());
            benchmark::DoNotOptimize(t.c.data());
            benchmark::DoNotOptimize(t.d.data());
            benchmark::DoNotOptimize(t.e.data());
        }
        benchmark::ClobberMemory();
    }
    if (!check(frames)) state.SkipWithError("schedule/raw: wrong values after the frames");
    set_items(state, kSets * set_n);
}

/// The tessera variants: the suite's schedule run on an arena of `workers` threads (the
/// automatic parallel choice); `always` sets the parallel threshold to zero (every phase with two
/// or more systems runs on the workers, however short).
void schedule_run(benchmark::State& state, int workers, bool always = false) {
    const std::size_t set_n = set_count();
    tessera::World world;
    std::array<std::vector<tessera::Entity>, kSets> handles;
    auto keep = [&](std::size_t s, std::span<const tessera::Entity> spawned) {
        handles[s].assign(spawned.begin(), spawned.end());
    };
    keep(0, world.spawn_many(set_n, [](std::size_t i, A& a, B& b) {
        const Values v = expected(0, i, 0);
        a.v = v.a;
        b.v = v.b;
    }));
    keep(1, world.spawn_many(set_n, [](std::size_t i, A& a, B& b, C& c) {
        const Values v = expected(1, i, 0);
        a.v = v.a;
        b.v = v.b;
        c.v = v.c;
    }));
    keep(2, world.spawn_many(set_n, [](std::size_t i, A& a, B& b, C& c, D& d) {
        const Values v = expected(2, i, 0);
        a.v = v.a;
        b.v = v.b;
        c.v = v.c;
        d.v = v.d;
    }));
    keep(3, world.spawn_many(set_n, [](std::size_t i, A& a, B& b, C& c, E& e) {
        const Values v = expected(3, i, 0);
        a.v = v.a;
        b.v = v.b;
        c.v = v.c;
        e.v = v.e;
    }));
    auto check = [&](std::uint64_t frames) {
        for (std::size_t s = 0; s < kSets; ++s) {
            for (std::size_t i = 0; i < set_n; ++i) {
                const tessera::Entity h = handles[s][i];
                const C* c = world.try_get<C>(h);
                const D* d = world.try_get<D>(h);
                const E* e = world.try_get<E>(h);
                const Values got{world.get<A>(h).v, world.get<B>(h).v, c ? c->v : 0.0f,
                                 d ? d->v : 0.0f, e ? e->v : 0.0f};
                if (got != expected(s, i, frames)) return false;
            }
        }
        return true;
    };

    tessera::Schedule schedule;
    schedule.add("ab",
                 [](tessera::View<A&, B&> q) { q.each([](A& a, B& b) { std::swap(a.v, b.v); }); });
    schedule.add("cd",
                 [](tessera::View<C&, D&> q) { q.each([](C& c, D& d) { std::swap(c.v, d.v); }); });
    schedule.add("ce",
                 [](tessera::View<C&, E&> q) { q.each([](C& c, E& e) { std::swap(c.v, e.v); }); });
    if (always) schedule.set_parallel_threshold(std::chrono::nanoseconds{0});
    tbb::task_arena arena(workers);

    std::uint64_t frames = 0;
    schedule.run(world, arena);
    ++frames;
    if (!check(frames)) {
        state.SkipWithError("schedule/tessera: wrong values after one frame");
        return;
    }
    for (auto _ : state) {
        schedule.run(world, arena);
        ++frames;
        benchmark::ClobberMemory();
    }
    if (!check(frames)) state.SkipWithError("schedule/tessera: wrong values after the frames");
    set_items(state, kSets * set_n);
}

void schedule_tessera(benchmark::State& state) {
    schedule_run(state, 1);
}
void schedule_tessera_par(benchmark::State& state) {
    schedule_run(state, 2);
}
void schedule_tessera_par_always(benchmark::State& state) {
    schedule_run(state, 2, true);
}

BENCHMARK(schedule_raw)->Name("schedule/raw")->Apply(steady)->Unit(benchmark::kMicrosecond);
BENCHMARK(schedule_tessera)->Name("schedule/tessera")->Apply(steady)->Unit(benchmark::kMicrosecond);
BENCHMARK(schedule_tessera_par)
    ->Name("schedule/tessera_par")
    ->Apply(steady)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(schedule_tessera_par_always)
    ->Name("schedule/tessera_par_always")
    ->Apply(steady)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tessera_bench
