// Structural changes beside add_remove (issue 19's scenarios, as the outside suite measured
// them); 10,000 entities unless --tessera-n gives a sweep count.
//
// add_one: entities with five 4-byte components (C1..C5) get one more (X); item = one add. Only
// the adds are timed (a stopwatch, manual time); the removes that restore the world between
// iterations are not. Raw baseline: a presence flag and a value per entity (a floor).
//
// remove_add: entities with A, B and C; remove B from each, then add it back; item = one
// remove+add pair. Raw baseline: a presence flag per entity cleared and set (a floor).
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <span>
#include <vector>

namespace tessera_bench {
namespace {

struct C1 {
    float v;
};
struct C2 {
    float v;
};
struct C3 {
    float v;
};
struct C4 {
    float v;
};
struct C5 {
    float v;
};
struct X {
    float v;
};
struct C {
    float v;
};

void add_one_raw(benchmark::State& state) {
    const std::size_t n = entity_count(kAddRemoveN);
    AlignedVector<X> values(n, X{0.0f});
    AlignedVector<std::uint8_t> has(n, 0);
    for (auto _ : state) {
        const Stopwatch watch;
        for (std::size_t i = 0; i < n; ++i) {
            values[i] = X{1.0f};
            has[i] = 1;
        }
        benchmark::DoNotOptimize(values.data());
        benchmark::DoNotOptimize(has.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        for (std::size_t i = 0; i < n; ++i) has[i] = 0;
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

void add_one_tessera(benchmark::State& state) {
    const std::size_t n = entity_count(kAddRemoveN);
    tessera::World world;
    const std::span<const tessera::Entity> spawned =
        world.spawn_many(n, [](std::size_t, C1&, C2&, C3&, C4&, C5&) {});
    const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    for (auto _ : state) {
        const Stopwatch watch;
        for (const tessera::Entity e : handles) world.add(e, X{1.0f});
        state.SetIterationTime(watch.seconds());
        for (const tessera::Entity e : handles) world.remove<X>(e);
    }
    for (const tessera::Entity e : handles) {
        if (world.has<X>(e) || !world.has<C1, C5>(e)) {
            state.SkipWithError("add_one/tessera: X left after remove, or C1/C5 lost");
            break;
        }
    }
    set_items(state, n);
}

void remove_add_raw(benchmark::State& state) {
    const std::size_t n = entity_count(kAddRemoveN);
    AlignedVector<std::uint8_t> has_b(n, 1);
    for (auto _ : state) {
        for (std::size_t i = 0; i < n; ++i) has_b[i] = 0;
        benchmark::DoNotOptimize(has_b.data());
        benchmark::ClobberMemory();
        for (std::size_t i = 0; i < n; ++i) has_b[i] = 1;
        benchmark::DoNotOptimize(has_b.data());
        benchmark::ClobberMemory();
    }
    set_items(state, n);
}

void remove_add_tessera(benchmark::State& state) {
    const std::size_t n = entity_count(kAddRemoveN);
    tessera::World world;
    const std::span<const tessera::Entity> spawned =
        world.spawn_many(n, [](std::size_t i, A& a, B& b, C& c) {
            a.v = static_cast<float>(i);
            b.v = 1.0f;
            c.v = 2.0f;
        });
    const std::vector<tessera::Entity> handles(spawned.begin(), spawned.end());
    for (auto _ : state) {
        std::size_t removed = 0;
        for (const tessera::Entity e : handles) removed += world.remove<B>(e) ? 1 : 0;
        benchmark::DoNotOptimize(removed);
        for (const tessera::Entity e : handles) world.add(e, B{1.0f});
    }
    for (const tessera::Entity e : handles) {
        if (!world.has<A, B, C>(e)) {
            state.SkipWithError("remove_add/tessera: a component is missing");
            break;
        }
    }
    set_items(state, n);
}

BENCHMARK(add_one_raw)->Name("add_one/raw")->Apply(steady_manual);
BENCHMARK(add_one_tessera)->Name("add_one/tessera")->Apply(steady_manual);
BENCHMARK(remove_add_raw)->Name("remove_add/raw")->Apply(steady);
BENCHMARK(remove_add_tessera)->Name("remove_add/tessera")->Apply(steady);

}  // namespace
}  // namespace tessera_bench
