// create_batch: spawn_many(N, init) into a fresh world, writing Position{i, 0} and
// Velocity{1, 1}. Raw baseline: two vectors, assign(N, value).
#include "common.hpp"

#include <tessera/tessera.hpp>

#include <span>

namespace tessera_bench {
namespace {

void create_batch_raw(benchmark::State& state) {
    bool checked = false;
    for (auto _ : state) {
        AlignedVector<Position> pos;
        AlignedVector<Velocity> vel;
        Stopwatch watch;
        pos.assign(kN, Position{0.0f, 0.0f});
        vel.assign(kN, Velocity{1.0f, 1.0f});
        benchmark::DoNotOptimize(pos.data());
        benchmark::DoNotOptimize(vel.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (pos.size() != kN || vel.size() != kN || vel[kN - 1].dx != 1.0f) {
                state.SkipWithError("create_batch/raw: wrong contents");
                break;
            }
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
}

void create_batch_tessera(benchmark::State& state) {
    bool checked = false;
    for (auto _ : state) {
        tessera::World world;  // constructed and destroyed outside the timed region
        Stopwatch watch;
        std::span<const tessera::Entity> spawned =
            world.spawn_many(kN, [](std::size_t i, Position& p, Velocity& v) {
                p = Position{static_cast<float>(i), 0.0f};
                v = Velocity{1.0f, 1.0f};
            });
        benchmark::DoNotOptimize(spawned.data());
        benchmark::ClobberMemory();
        state.SetIterationTime(watch.seconds());
        if (!checked) {
            checked = true;
            if (spawned.size() != kN || world.count() != kN ||
                world.get<Position>(spawned[kN - 1]).x != float(kN - 1) ||
                world.get<Velocity>(spawned[0]).dx != 1.0f) {
                state.SkipWithError("create_batch/tessera: wrong count or values");
                break;
            }
        }
    }
    state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(kN));
}

BENCHMARK(create_batch_raw)->Name("create_batch/raw")->Apply(setup_heavy);
BENCHMARK(create_batch_tessera)->Name("create_batch/tessera")->Apply(setup_heavy);

}  // namespace
}  // namespace tessera_bench
