// prefab: instances of a prefab (prefab.hpp) against spawns of the same components.
//
// prefab_many: N entities with Position, Velocity and Data copied from one template, into a
// fresh world. raw: three vectors filled by copies, reserved once; spawn_many: spawn_many of
// the three components set from the template; tessera: instantiate_many of a prefab with them.
// Target: tessera at most 1.5x spawn_many per entity.
//
// prefab_tree: N / 4 trees, each a root (Position, Velocity) with three children (Data),
// made one call at a time. raw: one push_back per entity into two vectors; spawn: one spawn of
// the root's components per tree (the yardstick of the target); tessera: instantiate of a
// prefab with three child prefabs. Items are trees. Target: tessera at most 4x spawn.
#include "common.hpp"

#include <tessera/prefab.hpp>
#include <tessera/tessera.hpp>

namespace tessera_bench {
namespace {

void prefab_many_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    const Position p0{1, 2};
    const Velocity v0{3, 4};
    const Data d0{5};
    for (auto _ : state) {
        AlignedVector<Position> pos;
        AlignedVector<Velocity> vel;
        AlignedVector<Data> data;
        Stopwatch watch;
        pos.reserve(n);
        vel.reserve(n);
        data.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            pos.push_back(p0);
            vel.push_back(v0);
            data.push_back(d0);
        }
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(vel.data());
        benchmark::DoNotOptimize(data.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
    }
    set_items(state, n);
}

void prefab_many_spawn_many(benchmark::State& state) {
    const std::size_t n = entity_count();
    const Position p0{1, 2};
    const Velocity v0{3, 4};
    const Data d0{5};
    for (auto _ : state) {
        tessera::World world;
        Stopwatch watch;
        const auto made = world.spawn_many(n, [&](std::size_t, Position& p, Velocity& v, Data& d) {
            p = p0;
            v = v0;
            d = d0;
        });
        benchmark::DoNotOptimize(made.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (world.count() != n) {
            state.SkipWithError("prefab_many/spawn_many: wrong count");
            break;
        }
    }
    set_items(state, n);
}

void prefab_many_tessera(benchmark::State& state) {
    const std::size_t n = entity_count();
    for (auto _ : state) {
        tessera::World world;
        const tessera::Entity orc = world.prefab(Position{1, 2}, Velocity{3, 4}, Data{5});
        Stopwatch watch;
        const auto made = world.instantiate_many(orc, n);
        benchmark::DoNotOptimize(made.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (world.count() != n + 1 || world.get<Velocity>(made.back()).dy != 4.0f) {
            state.SkipWithError("prefab_many/tessera: wrong count or values");
            break;
        }
    }
    set_items(state, n);
}

void prefab_tree_raw(benchmark::State& state) {
    const std::size_t trees = entity_count() / 4;
    for (auto _ : state) {
        AlignedVector<Position> pos;
        AlignedVector<Data> data;
        Stopwatch watch;
        for (std::size_t i = 0; i < trees; ++i) {
            pos.push_back(Position{1, 2});
            for (int k = 0; k < 3; ++k) data.push_back(Data{static_cast<float>(k)});
        }
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(data.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
    }
    set_items(state, trees);
}

void prefab_tree_spawn(benchmark::State& state) {
    const std::size_t trees = entity_count() / 4;
    for (auto _ : state) {
        tessera::World world;
        tessera::Entity last{};
        Stopwatch watch;
        for (std::size_t i = 0; i < trees; ++i) last = world.spawn(Position{1, 2}, Velocity{3, 4});
        benchmark::DoNotOptimize(last);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
    }
    set_items(state, trees);
}

void prefab_tree_tessera(benchmark::State& state) {
    const std::size_t trees = entity_count() / 4;
    for (auto _ : state) {
        tessera::World world;
        const tessera::Entity orc = world.prefab(Position{1, 2}, Velocity{3, 4});
        for (int k = 0; k < 3; ++k)
            world.relate(world.prefab(Data{static_cast<float>(k)}), tessera::ChildOf{}, orc);
        tessera::Entity last{};
        Stopwatch watch;
        for (std::size_t i = 0; i < trees; ++i) last = world.instantiate(orc);
        benchmark::DoNotOptimize(last);
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (world.count() != 4 * trees + 4 || world.children(last).size() != 3) {
            state.SkipWithError("prefab_tree/tessera: wrong count or children");
            break;
        }
    }
    set_items(state, trees);
}

BENCHMARK(prefab_many_raw)->Name("prefab_many/raw")->Apply(setup_heavy);
BENCHMARK(prefab_many_spawn_many)->Name("prefab_many/spawn_many")->Apply(setup_heavy);
BENCHMARK(prefab_many_tessera)->Name("prefab_many/tessera")->Apply(setup_heavy);
BENCHMARK(prefab_tree_raw)->Name("prefab_tree/raw")->Apply(setup_heavy);
BENCHMARK(prefab_tree_spawn)->Name("prefab_tree/spawn")->Apply(setup_heavy);
BENCHMARK(prefab_tree_tessera)->Name("prefab_tree/tessera")->Apply(setup_heavy);

}  // namespace
}  // namespace tessera_bench
