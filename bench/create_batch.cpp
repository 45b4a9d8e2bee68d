// create_batch: spawn_many(N, init) into a fresh world, writing Position{i, 0} and
// Velocity{1, 1}. Raw baseline: two vectors, assign(N, value).
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <span>

namespace tessera_bench {
namespace {

void create_batch_raw(benchmark::State& state) {
    const std::size_t n = entity_count();
    bool checked = false;
    for (auto _ : state) {
        AlignedVector<Position> pos;
        AlignedVector<Velocity> vel;
        Stopwatch watch;
        pos.assign(n, Position{0.0f, 0.0f});
        vel.assign(n, Velocity{1.0f, 1.0f});
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(vel.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (pos.size() != n || vel.size() != n || vel[n - 1].dx != 1.0f) {
                state.SkipWithError("create_batch/raw: wrong contents");
                break;
            }
        }
    }
    set_items(state, n);
}

void create_batch_tessera(benchmark::State& state) {
    const std::size_t n = entity_count();
    bool checked = false;
    for (auto _ : state) {
        tessera::World world;  // constructed and destroyed outside the timed region
        Stopwatch watch;
        std::span<const tessera::Entity> spawned =
            world.spawn_many(n, [](std::size_t i, Position& p, Velocity& v) {
                p = Position{static_cast<float>(i), 0.0f};
                v = Velocity{1.0f, 1.0f};
            });
        benchmark::DoNotOptimize(spawned.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (spawned.size() != n || world.count() != n ||
                world.get<Position>(spawned[n - 1]).x != float(n - 1) ||
                world.get<Velocity>(spawned[0]).dx != 1.0f) {
                state.SkipWithError("create_batch/tessera: wrong count or values");
                break;
            }
        }
    }
    set_items(state, n);
}

BENCHMARK(create_batch_raw)->Name("create_batch/raw")->Apply(setup_heavy);
BENCHMARK(create_batch_tessera)->Name("create_batch/tessera")->Apply(setup_heavy);

}  // namespace
}  // namespace tessera_bench
